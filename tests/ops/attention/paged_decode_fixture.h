// Builds random paged-decode problems (shuffled physical blocks, ragged lengths) and the
// naive long-double expectation, for test_paged_decode*.cpp.
#pragma once
#include <cstdint>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "check/host_tensor.h"
#include "ops/attention/naive_attention.h"
#include "tejas/attention.h"

namespace attn_test {

using tejas::DType;
using tejas::check::HostTensor;
using tejas::check::Rng;

struct DecodeCase {
  int64_t Q = 1, Hq = 4, Hkv = 1, D = 64, block_size = 16;
  std::vector<int32_t> seq_lens = {17, 40};
  DType q_dtype = DType::bf16, cache_dtype = DType::bf16;
  tejas::PagedDecodeParams params;
  bool with_sinks = false;
  double sink_mean = 0, sink_std = 1;
  bool with_lse = true;
  int64_t pad = 0;           // extra elements after each q/out head row (non-contiguous views)
  int64_t extra_blocks = 3;  // physical blocks no request uses
  double kv_std = 1;         // K/V magnitude (fp8 codes: before dividing by the scale)
};

struct DecodeProblem {
  DecodeCase c;
  int64_t B = 0, max_blocks = 0, num_blocks = 0;
  HostTensor q, k_cache, v_cache, block_table, seq_lens, sinks, out, lse;
  // owner[b][i]: the physical block holding request b's logical block i (the test's own
  // record; block_table only carries the blocks a request uses, -1 elsewhere).
  std::vector<std::vector<int64_t>> owner;

  tejas::Status run(const tejas::ExecContext& ctx = {}) const {
    return tejas::paged_decode_attention(ctx, q, k_cache, v_cache, block_table, seq_lens,
                                         c.with_sinks ? sinks.view() : tejas::TensorView{}, c.params, out,
                                         c.with_lse ? lse.view() : tejas::TensorView{});
  }
};

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline std::unique_ptr<DecodeProblem> make_problem(const DecodeCase& c, Rng& rng) {
  auto p = std::make_unique<DecodeProblem>();
  p->c = c;
  const int64_t B = static_cast<int64_t>(c.seq_lens.size());
  p->B = B;
  int64_t used = 0;
  for (int32_t L : c.seq_lens) {
    p->max_blocks = std::max(p->max_blocks, ceil_div(L, c.block_size));
    used += ceil_div(L, c.block_size);
  }
  p->max_blocks += 1;  // a trailing column no request reaches
  p->num_blocks = used + c.extra_blocks;
  p->q = HostTensor(c.q_dtype, {B, c.Q, c.Hq, c.D}, c.pad);
  p->out = HostTensor(c.q_dtype, {B, c.Q, c.Hq, c.D}, c.pad);
  p->lse = HostTensor(DType::f32, {B, c.Q, c.Hq});
  p->sinks = HostTensor(DType::f32, {c.Hq});
  p->k_cache = HostTensor(c.cache_dtype, {p->num_blocks, c.block_size, c.Hkv, c.D});
  p->v_cache = HostTensor(c.cache_dtype, {p->num_blocks, c.block_size, c.Hkv, c.D});
  p->block_table = HostTensor(DType::i32, {B, p->max_blocks});
  p->seq_lens = HostTensor(DType::i32, {B});

  fill_normal(p->q, rng);
  // fp8 codes carry value / scale, so that the dequantized values have magnitude kv_std.
  const bool fp8 = tejas::dtype_is_fp8(c.cache_dtype);
  fill_normal(p->k_cache, rng, 0, c.kv_std / (fp8 ? c.params.k_scale : 1.0f));
  fill_normal(p->v_cache, rng, 0, c.kv_std / (fp8 ? c.params.v_scale : 1.0f));
  fill_normal(p->sinks, rng, c.sink_mean, c.sink_std);

  // Physical blocks: a random permutation handed out in order.
  std::vector<int64_t> perm(static_cast<size_t>(p->num_blocks));
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[static_cast<size_t>(rng.randint(0, i - 1))]);
  size_t next = 0;
  p->owner.resize(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    const int64_t L = c.seq_lens[static_cast<size_t>(b)];
    p->seq_lens.set({b}, static_cast<double>(L));
    // Blocks wholly before every query's window are never read: leave -1 there.
    const int64_t first_pos = L - c.Q;
    const int64_t first_key = c.params.window_left < 0 ? 0 : std::max<int64_t>(0, first_pos - c.params.window_left);
    for (int64_t i = 0; i < p->max_blocks; ++i) {
      const bool holds_keys = i < ceil_div(L, c.block_size);
      const int64_t phys = holds_keys ? perm[next++] : -1;
      p->owner[static_cast<size_t>(b)].push_back(phys);
      const bool used = holds_keys && (i + 1) * c.block_size > first_key;
      p->block_table.set({b, i}, static_cast<double>(used ? phys : -1));
    }
  }
  return p;
}

// The naive expectation: each request's keys gathered into contiguous rows, explicit masks.
struct Expected {
  HostTensor out, lse;
};

inline Expected naive_expected(const DecodeProblem& p) {
  const DecodeCase& c = p.c;
  Expected e{HostTensor(c.q_dtype, {p.B, c.Q, c.Hq, c.D}), HostTensor(DType::f32, {p.B, c.Q, c.Hq})};
  const bool fp8 = tejas::dtype_is_fp8(c.cache_dtype);
  const Real ks = fp8 ? c.params.k_scale : 1.0f, vs = fp8 ? c.params.v_scale : 1.0f;
  const Real scale = c.params.softmax_scale != 0 ? Real(c.params.softmax_scale) : 1 / std::sqrt(Real(c.D));
  const int64_t ratio = c.Hq / c.Hkv;
  for (int64_t b = 0; b < p.B; ++b) {
    const int64_t L = c.seq_lens[static_cast<size_t>(b)];
    // keys[t][kvh], values[t][kvh]: rows for positions 0..L-1.
    std::vector<std::vector<Row>> keys(static_cast<size_t>(L)), values(static_cast<size_t>(L));
    for (int64_t t = 0; t < L; ++t) {
      const int64_t phys = p.owner[static_cast<size_t>(b)][static_cast<size_t>(t / c.block_size)];
      for (int64_t g = 0; g < c.Hkv; ++g) {
        Row kr(static_cast<size_t>(c.D)), vr(static_cast<size_t>(c.D));
        for (int64_t d = 0; d < c.D; ++d) {
          kr[static_cast<size_t>(d)] = p.k_cache.get({phys, t % c.block_size, g, d}) * ks;
          vr[static_cast<size_t>(d)] = p.v_cache.get({phys, t % c.block_size, g, d}) * vs;
        }
        keys[static_cast<size_t>(t)].push_back(kr);
        values[static_cast<size_t>(t)].push_back(vr);
      }
    }
    for (int64_t j = 0; j < c.Q; ++j) {
      const int64_t pos = L - c.Q + j;
      for (int64_t h = 0; h < c.Hq; ++h) {
        const size_t g = static_cast<size_t>(h / ratio);
        std::vector<Row> ks_vis, vs_vis;
        for (int64_t t = 0; t < L; ++t) {
          const bool causal = t <= pos;
          const bool in_window = c.params.window_left < 0 || pos - t <= c.params.window_left;
          if (causal && in_window) {
            ks_vis.push_back(keys[static_cast<size_t>(t)][g]);
            vs_vis.push_back(values[static_cast<size_t>(t)][g]);
          }
        }
        Row qr(static_cast<size_t>(c.D));
        for (int64_t d = 0; d < c.D; ++d) qr[static_cast<size_t>(d)] = p.q.get({b, j, h, d});
        const Logits lg{scale, Real(c.params.logits_soft_cap), c.with_sinks, Real(p.sinks.get({h}))};
        const State st = attend(qr, ks_vis, vs_vis, lg, static_cast<size_t>(c.D));
        for (int64_t d = 0; d < c.D; ++d)
          e.out.set({b, j, h, d}, static_cast<double>(st.out[static_cast<size_t>(d)]));
        e.lse.set({b, j, h}, static_cast<double>(st.lse));
      }
    }
  }
  return e;
}

// Runs the reference on the problem and checks out (and lse) against the naive math, plus
// guards and padding of the outputs.
inline void expect_matches_naive(const DecodeProblem& p) {
  const tejas::Status s = p.run();
  ASSERT_TRUE(s.ok()) << s.to_string();
  const Expected e = naive_expected(p);
  HostTensor got_out(p.c.q_dtype, {p.B, p.c.Q, p.c.Hq, p.c.D});
  got_out.copy_from(p.out);  // drops the padding so shapes compare
  const auto r = tejas::check::compare(got_out, e.out, once_rounded(e.out));
  EXPECT_TRUE(r.ok) << "out: " << r.message;
  if (p.c.with_lse) {
    const auto rl = tejas::check::compare(p.lse, e.lse, once_rounded(e.lse));
    EXPECT_TRUE(rl.ok) << "lse: " << rl.message;
  }
  EXPECT_TRUE(p.out.guards_intact() && p.out.padding_intact());
  EXPECT_TRUE(p.lse.guards_intact());
  if (!p.c.with_lse) {
    EXPECT_TRUE(untouched(p.lse));
  }
}

}  // namespace attn_test
