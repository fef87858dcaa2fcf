// paged_decode_attention and merge_attention_states(_n) cases: ragged sequence lengths (1, a
// partial last page, several pages), shuffled physical pages, GQA, speculative Q = 2, sliding
// window + soft cap + sinks, fp8 caches with scales, head dims 64/128/256; merges with parts
// whose lse is -inf.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>

#include "check/op_checks.h"
#include "check/tolerances.h"
#include "tejas/attention.h"

namespace tejas::check {
namespace {
constexpr int64_t kSparePages = 3;  // physical pages no request uses
constexpr double kLseStddev = 2.0;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

struct DecodeCase {
  DType q, kv;
  std::vector<int64_t> seq_lens;
  int64_t Q, Hq, Hkv, D, block;
  PagedDecodeParams params;
  bool sinks;
};

std::string join(const std::vector<int64_t>& v) {
  std::ostringstream os;
  for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
  return os.str();
}

Case decode_case(Rng& rng, const DecodeCase& d) {
  const int64_t B = static_cast<int64_t>(d.seq_lens.size());
  int64_t max_blocks = 1, used = 0;  // a table of at least one column, with no requests too
  for (int64_t L : d.seq_lens) {
    max_blocks = std::max(max_blocks, (L + d.block - 1) / d.block);
    used += (L + d.block - 1) / d.block;
  }
  const int64_t pages = used + kSparePages;
  std::ostringstream label;
  label << dtype_name(d.q) << " q, " << dtype_name(d.kv) << " cache, lens {" << join(d.seq_lens) << "} Q=" << d.Q
        << " Hq=" << d.Hq << " Hkv=" << d.Hkv << " D=" << d.D << " page " << d.block;
  if (d.params.window_left >= 0) label << " window " << d.params.window_left;
  if (d.params.logits_soft_cap > 0) label << " softcap";
  if (d.sinks) label << " sinks";
  Case c("paged_decode_attention", label.str());
  fill_normal(c.in("q", d.q, {B, d.Q, d.Hq, d.D}), rng);
  HostTensor& k = c.in("k_cache", d.kv, {pages, d.block, d.Hkv, d.D});
  HostTensor& v = c.in("v_cache", d.kv, {pages, d.block, d.Hkv, d.D});
  fill_normal(k, rng);
  fill_normal(v, rng);
  // Each request's pages are distinct physical pages in shuffled order; unused table slots
  // point at valid pages too.
  std::vector<int64_t> perm(static_cast<size_t>(pages));
  std::iota(perm.begin(), perm.end(), 0);
  for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[static_cast<size_t>(rng.randint(0, static_cast<int64_t>(i) - 1))]);
  HostTensor& table = c.in("block_table", DType::i32, {B, max_blocks});
  size_t next = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < max_blocks; ++j)
      table.set({b, j}, static_cast<double>(j * d.block < d.seq_lens[b] ? perm[next++] : perm[0]));
  HostTensor& lens = c.in("seq_lens", DType::i32, {B});
  for (int64_t b = 0; b < B; ++b) lens.set({b}, static_cast<double>(d.seq_lens[b]));
  if (d.sinks) fill_normal(c.in("sinks", DType::f32, {d.Hq}), rng);
  const double vmax = max_abs(v) * (dtype_is_fp8(d.kv) ? d.params.v_scale : 1.0);
  c.out("out", d.q, {B, d.Q, d.Hq, d.D}, attention_rule(vmax));
  c.out("lse", DType::f32, {B, d.Q, d.Hq}, lse_rule());
  const PagedDecodeParams p = d.params;
  c.set_call([p](const ExecContext& ctx, const Args& a) {
    return paged_decode_attention(ctx, a["q"], a["k_cache"], a["v_cache"], a["block_table"], a["seq_lens"], a["sinks"],
                                  p, a["out"], a["lse"]);
  });
  return c;
}

// lse values for merge inputs; `neg_inf_rows` lists (token) rows whose every head is -inf.
void fill_lse(HostTensor& lse, Rng& rng, const std::vector<int64_t>& neg_inf_tokens) {
  fill_normal(lse, rng, 0.0, kLseStddev);
  const auto& sh = lse.shape();
  const int64_t heads = sh.back(), tok_dim = static_cast<int64_t>(sh.size()) - 2;
  for (int64_t i = 0, n = lse.numel(); i < n; ++i) {
    const int64_t token = (i / heads) % sh[static_cast<size_t>(tok_dim)];
    if (std::find(neg_inf_tokens.begin(), neg_inf_tokens.end(), token) != neg_inf_tokens.end()) lse.set_flat(i, kNegInf);
  }
}

Case merge_case(Rng& rng, DType dt, int64_t N, int64_t H, int64_t D, bool out_lse) {
  Case c("merge_attention_states", cat(dtype_name(dt), " N=", N, " H=", H, " D=", D, out_lse ? " with lse" : ""));
  // Token 1: part a is empty; token 2: both parts are empty (out 0, lse -inf).
  fill_normal(c.in("v_a", dt, {N, H, D}), rng);
  fill_lse(c.in("lse_a", DType::f32, {N, H}), rng, {1, 2});
  HostTensor& vb = c.in("v_b", dt, {N, H, D});
  fill_normal(vb, rng);
  fill_lse(c.in("lse_b", DType::f32, {N, H}), rng, {2});
  c.out("out", dt, {N, H, D}, merge_rule(dt, 0x1p-20 * max_abs(vb)));
  if (out_lse) c.out("out_lse", DType::f32, {N, H}, lse_rule(/*inf_ok=*/true));
  c.set_call([](const ExecContext& ctx, const Args& a) {
    return merge_attention_states(ctx, a["v_a"], a["lse_a"], a["v_b"], a["lse_b"], a["out"], a["out_lse"]);
  });
  return c;
}

Case merge_n_case(Rng& rng, DType dt, int64_t S, int64_t N, int64_t H, int64_t D) {
  Case c("merge_attention_states_n", cat(dtype_name(dt), " S=", S, " N=", N, " H=", H, " D=", D));
  HostTensor& v = c.in("v_parts", dt, {S, N, H, D});
  fill_normal(v, rng);
  fill_lse(c.in("lse_parts", DType::f32, {S, N, H}), rng, {0});  // token 0: every part empty
  c.out("out", dt, {N, H, D}, merge_rule(dt, 0x1p-20 * max_abs(v)));
  c.out("out_lse", DType::f32, {N, H}, lse_rule(/*inf_ok=*/true));
  c.set_call([](const ExecContext& ctx, const Args& a) {
    return merge_attention_states_n(ctx, a["v_parts"], a["lse_parts"], a["out"], a["out_lse"]);
  });
  return c;
}
}  // namespace

std::vector<Case> paged_decode_cases(Rng& rng) {
  constexpr double kSoftCap = 30.0;
  constexpr int kWindow = 20;
  constexpr float kKScale = 0.05f, kVScale = 0.02f;
  std::vector<Case> v;
  v.push_back(decode_case(rng, {DType::bf16, DType::bf16, {1, 37, 100}, 1, 8, 2, 128, 16, {}, false}));
  PagedDecodeParams windowed;
  windowed.window_left = kWindow;
  windowed.logits_soft_cap = kSoftCap;
  v.push_back(decode_case(rng, {DType::bf16, DType::bf16, {2, 50, 77}, 2, 8, 1, 64, 32, windowed, true}));
  PagedDecodeParams fp8;
  fp8.k_scale = kKScale;
  fp8.v_scale = kVScale;
  v.push_back(decode_case(rng, {DType::f16, DType::e4m3, {17, 64}, 1, 4, 4, 128, 16, fp8, false}));
  v.push_back(decode_case(rng, {DType::f32, DType::bf16, {65, 3}, 1, 2, 1, 256, 64, {}, false}));
  v.push_back(decode_case(rng, {DType::bf16, DType::bf16, {}, 1, 8, 2, 128, 16, {}, true}));  // no requests
  return v;
}

std::vector<Case> merge_states_cases(Rng& rng) {
  std::vector<Case> v;
  v.push_back(merge_case(rng, DType::bf16, 5, 4, 64, true));
  v.push_back(merge_case(rng, DType::f32, 3, 2, 128, false));
  v.push_back(merge_case(rng, DType::bf16, 0, 4, 64, true));
  return v;
}

std::vector<Case> merge_states_n_cases(Rng& rng) {
  std::vector<Case> v;
  v.push_back(merge_n_case(rng, DType::bf16, 3, 4, 3, 64));
  v.push_back(merge_n_case(rng, DType::f16, 5, 2, 2, 128));
  v.push_back(merge_n_case(rng, DType::bf16, 3, 0, 4, 64));
  return v;
}

}  // namespace tejas::check
