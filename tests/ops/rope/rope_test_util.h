// Shared by the rope tests: a cos/sin cache built in long double, backend contexts, views at odd
// offsets, the kernel tolerances and the emulator counters of the last call.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "check/cuda_mem.h"
#include "check/host_tensor.h"
#include "ops/common/emu_launch.h"
#include "ops/common/ref_numeric.h"
#include "ops/rope/plan.h"
#include "runtime/tune.h"
#include "support/device_guards.h"
#include "support/seed.h"
#include "tejas/context.h"
#include "tejas/rope.h"

namespace tejas::ropetest {

inline constexpr long double kRopeBase = 10000.0L;

// [max_pos, rotary_dim]: cos(p f_i) then sin(p f_i), f_i = base^(-2i / rotary_dim), row r for
// position p = r x pos_stride (a stride > 1 turns the lowest frequencies too, as far positions do:
// at 64 rows of stride 1 the last pairs of a 128-wide rotary turn by under 0.01 rad).
inline check::HostTensor make_cache(int64_t max_pos, int64_t rotary_dim, DType dtype, int64_t pos_stride = 1) {
  check::HostTensor cache(dtype, {max_pos, rotary_dim});
  const int64_t half = rotary_dim / 2;
  for (int64_t r = 0; r < max_pos; ++r)
    for (int64_t i = 0; i < half; ++i) {
      const long double angle = static_cast<long double>(r * pos_stride) * std::pow(kRopeBase, -2.0L * i / rotary_dim);
      cache.set({r, i}, static_cast<double>(std::cos(angle)));
      cache.set({r, half + i}, static_cast<double>(std::sin(angle)));
    }
  return cache;
}

inline ExecContext backend_ctx(Backend b) {
  ExecContext ctx;
  ctx.backend = b;
  return ctx;
}
inline ExecContext reference_ctx() { return backend_ctx(Backend::reference); }

// rope or mrope as `call(ctx, pos, q, k, cos_sin)` on kernel backend `b` (k's view empty without
// k heads): the host tensors on the emulator; on the GPU device mirrors of the four, q and k
// downloaded after, every mirror's device guards checked.
template <class Call>
void rotate_on(Backend b, check::HostTensor& pos, check::HostTensor& q, check::HostTensor& k, bool has_k,
               check::HostTensor& cos_sin, Call&& call) {
  if (b != Backend::cuda) {
    TEJAS_ASSERT_OK(call(backend_ctx(b), pos.view(), q.view(), has_k ? k.view() : TensorView{}, cos_sin.view()));
    return;
  }
  check::DeviceMirror dpos, dcache, dq, dk;
  TEJAS_ASSERT_OK(dpos.upload(pos));
  TEJAS_ASSERT_OK(dcache.upload(cos_sin));
  TEJAS_ASSERT_OK(dq.upload(q));
  TEJAS_ASSERT_OK(dk.upload(k));
  TEJAS_ASSERT_OK(call(backend_ctx(b), dpos.view(), dq.view(), has_k ? dk.view() : TensorView{}, dcache.view()));
  TEJAS_ASSERT_OK(check::device_synchronize());
  TEJAS_ASSERT_OK(dq.download(q));
  TEJAS_ASSERT_OK(dk.download(k));
  testsupport::expect_device_guards({{&dpos, "positions"}, {&dcache, "cos_sin"}, {&dq, "q"}, {&dk, "k"}});
}

// A rope-family tune: `heads` heads' loads in flight per thread (0: per op), the first step's
// heads staged through shared memory (cp.async) or not, the head prefetch into L2 on or off, on
// the one-token-per-thread kernels (rope.pipeline=0: the tests of the pipelined kernel set it),
// rope_kv_cache_write in one launch at every size (rope.kv_split=0: these tunes time the fused
// kernels, whose GPU cases reach 16 MiB); every other key at its default.
inline detail::Tune rope_tune(int heads, int stage, int head_prefetch = 0) {
  detail::Tune t;
  t.rope_heads = heads;
  t.rope_head_stage = stage;
  t.rope_head_prefetch = head_prefetch;
  t.rope_pipeline = 0;
  t.rope_kv_split = 0;
  return t;
}
// rope.heads=2 (half the head lanes; the per-op default of the rotating ops, staged).
inline detail::Tune two_heads() { return rope_tune(2, 1); }
// Unstaged, 1 or 2 heads: loaded after the position and cos/sin (1 head: the default before the
// H200's timing, docs/kernels/rope.md).
inline detail::Tune unstaged(int heads) { return rope_tune(heads, 0); }
// rope.head_prefetch=1, unstaged (as it was timed; staging copies the same head rows itself).
inline detail::Tune head_prefetch(int heads) { return rope_tune(heads, 0, 1); }
// rope.head_stage=1 with 1 or 2 heads in flight.
inline detail::Tune head_stage(int heads) { return rope_tune(heads, 1); }

// `run(backend)` under each tune in turn on the emulator, then under each on the GPU when there is
// one, `rng` (which `run` draws from) meanwhile drawing from testsupport::side_rng: afterwards it
// goes on where the emulator runs left it, so a seed gives the emulator the same inputs with or
// without a GPU.
template <class Run>
void run_tuned(check::Rng& rng, std::initializer_list<detail::Tune> tunes, Run&& run) {
  for (const detail::Tune& t : tunes) {
    const detail::ScopedTuneOverride override_tune(t);
    run(Backend::emulator);
  }
  if (!check::cuda_available()) return;
  const check::Rng emulator_rng = rng;
  rng = testsupport::side_rng(rng);
  for (const detail::Tune& t : tunes) {
    const detail::ScopedTuneOverride override_tune(t);
    run(Backend::cuda);
  }
  rng = emulator_rng;
}

// After an emulator call under rope.head_stage=1: when the plan staged (16-byte accesses), the
// rotary bytes of each thread's first step (its first column in its first heads: min(heads,
// head_lanes x the kernel's heads in flight) heads, min(rot_cols, col_threads) columns of 2 x pairs elements)
// went through cp.async exactly once - all of them unless heads or columns outnumber the lanes;
// otherwise none did. With rope.v_stage (caches): each token's first min(Hk x D / vec, group)
// v vectors too, every token's (a skipped one's included), once each.
// Returns whether it staged, so a test can insist that some of its cases did (counted in
// staged_cases()).
inline int& staged_cases() {
  static int n = 0;
  return n;
}
inline bool expect_head_stage_bytes(int64_t T, int64_t heads, int64_t rotary, DType dt) {
  const rotary::RopeLaunch l = rotary::last_launch();
  const bool staged = l.params.head_stage;
  const rotary::RopeConfig& c = l.config;
  const int64_t first_heads = std::min<int64_t>(heads, int64_t{c.head_lanes} * rotary::kernel_heads_in_flight(l));
  const int64_t cols = std::min(c.rot_cols, c.col_threads);
  EXPECT_EQ(int64_t{c.rot_cols} * 2 * c.pairs, rotary);
  const uint64_t bytes = detail::last_emulator_reports().at(0).counters.cp_async_bytes;
  const int64_t group = int64_t{c.col_threads} * c.head_lanes;
  const int64_t v_vectors = l.params.v_stage ? std::min(l.problem.Hk * (l.problem.D / c.vec), group) : 0;
  EXPECT_EQ(l.params.v_stage, staged && l.problem.kv_cache_elem_bytes > 0 && detail::tune().rope_v_stage != 0);
  EXPECT_EQ(bytes, staged ? static_cast<uint64_t>(T * (first_heads * cols * 2 * c.pairs + v_vectors * c.vec) *
                                                  dtype_bits(dt) / 8)
                          : 0u);
  if (staged) ++staged_cases();
  return staged;
}

// Kernel results against the reference (which rounds the float64 rotation once), pair by pair.
// The kernels compute a c - b s in f32: one rounded product, then one fused multiply-add (|c|,
// |s| <= 1), an absolute error E <= 2^-24 |b| + 2^-24 (|a| + |b|) <= 2^-23 (|a| + |b|) from the
// exact rotation. |a| + |b| <= sqrt 2 |(a, b)|, and the rotation keeps the pair's norm, so E is
// bounded from the reference's own output pair (its norm up by 2^-6 and one spacing of each
// element for the reference's rounding). 16-bit outputs: where E is under half a spacing of the
// result (a quarter of the spacing above it, which at a power of two is twice the one below),
// the f32 value and the exact one straddle at most one rounding boundary, so the output is
// within 1 ulp of the correctly rounded one; only where cancellation leaves a result near E
// (a pair's own inputs, not the tensor's largest) may it be off by E plus the two roundings (<= 2
// spacings). f32 outputs: E plus one spacing (the reference's rounding). Columns past the rotary
// ones are copied: bit for bit. NaN only where the reference has NaN; infinities exact.
inline double spacing(DType t, uint64_t bits) {
  const uint64_t sign = uint64_t{1} << (dtype_bits(t) - 1);
  const uint64_t mag = bits & (sign - 1);
  const double here = ref::decode(t, mag), up = ref::decode(t, mag + 1);
  return std::isfinite(up) ? up - here : here - ref::decode(t, mag - 1);
}

// style: the pairs (neox: i and i + rotary / 2; gptj: 2i and 2i + 1) within the first `rotary`
// elements of each head row (the last dimension).
inline check::CompareResult compare_rotated(const check::HostTensor& got, const check::HostTensor& want,
                                            RopeStyle style, int64_t rotary) {
  if (got.dtype() != want.dtype() || want.shape().empty()) {
    check::CompareResult r;
    r.ok = false;
    r.message = "dtype mismatch or no dimensions";
    return r;
  }
  const DType t = want.dtype();
  const int64_t D = want.shape().back(), half = rotary / 2;
  return check::compare_with(got, want, [&](int64_t i) {
    const int64_t col = i % D;
    const uint64_t gb = got.bits_flat(i), wb = want.bits_flat(i);
    if (col >= rotary) return gb == wb;
    const int64_t partner = i - col + (style == RopeStyle::neox ? (col < half ? col + half : col - half) : col ^ 1);
    const uint64_t pb = want.bits_flat(partner);
    const double w = want.get_flat(i), wp = want.get_flat(partner), u = spacing(t, wb);
    // Bound on |a| + |b|: sqrt 2 |(a, b)| from the output pair; a partner that overflowed (an
    // infinite rotation of finite inputs) leaves only |a| + |b| <= 2 x the largest finite value;
    // a NaN partner none (then 1 ulp).
    const uint64_t mag_bits = pb & ((uint64_t{1} << (dtype_bits(t) - 1)) - 1);
    const double pair_sum = std::isnan(wp)   ? 0.0
                            : std::isinf(wp) ? 2 * ref::decode(t, mag_bits - 1)
                                             : std::sqrt(2.0) * (std::hypot(w, wp) * (1 + 0x1p-6) + u + spacing(t, pb));
    const double e = 0x1p-23 * pair_sum, err = std::fabs(got.get_flat(i) - w);
    if (t == DType::f32) return err <= e + u;
    return check::ulp_distance(t, gb, wb) <= 1 || (e >= u / 4 && err <= e + 2 * u);
  });
}

// A HostTensor holding a copy of any host view's elements (for comparing views at odd offsets).
inline check::HostTensor gather(const TensorView& v) {
  std::vector<int64_t> shape(v.shape, v.shape + v.ndim);
  check::HostTensor out(v.dtype, shape);
  std::vector<int64_t> idx(static_cast<size_t>(v.ndim), 0);
  for (int64_t flat = 0; flat < out.numel(); ++flat) {
    int64_t rem = flat;
    for (int d = v.ndim - 1; d >= 0; --d) {
      idx[static_cast<size_t>(d)] = rem % v.shape[d];
      rem /= v.shape[d];
    }
    out.set_bits_flat(flat, ref::load_bits(v, idx.data()));
  }
  return out;
}

// A view of `shape` (row-major) whose data starts `offset_elems` elements into `buffer`.
inline TensorView view_at(check::HostTensor& buffer, int64_t offset_elems, std::initializer_list<int64_t> shape) {
  auto* base = static_cast<char*>(buffer.view().data) + offset_elems * dtype_bits(buffer.dtype()) / 8;
  return TensorView::contiguous(base, buffer.dtype(), shape);
}

}  // namespace tejas::ropetest
