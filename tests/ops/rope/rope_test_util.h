// Shared by the rope tests: a cos/sin cache built in long double, backend contexts, views at odd
// offsets, the kernel tolerances and the emulator counters of the last call.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <vector>

#include "check/cuda_mem.h"
#include "check/host_tensor.h"
#include "ops/common/emu_launch.h"
#include "ops/rope/plan.h"
#include "ops/common/ref_numeric.h"
#include "runtime/tune.h"
#include "tejas/context.h"

namespace tejas::ropetest {

inline constexpr long double kRopeBase = 10000.0L;

// [max_pos, rotary_dim]: cos(p f_i) then sin(p f_i), f_i = base^(-2i / rotary_dim).
inline check::HostTensor make_cache(int64_t max_pos, int64_t rotary_dim, DType dtype) {
  check::HostTensor cache(dtype, {max_pos, rotary_dim});
  const int64_t half = rotary_dim / 2;
  for (int64_t p = 0; p < max_pos; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const long double angle = p * std::pow(kRopeBase, -2.0L * i / rotary_dim);
      cache.set({p, i}, static_cast<double>(std::cos(angle)));
      cache.set({p, half + i}, static_cast<double>(std::sin(angle)));
    }
  return cache;
}

inline ExecContext backend_ctx(Backend b) {
  ExecContext ctx;
  ctx.backend = b;
  return ctx;
}
inline ExecContext reference_ctx() { return backend_ctx(Backend::reference); }

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

// `run(backend)` under each tune in turn: on the emulator, then on the GPU when there is one.
template <class Run>
void run_tuned(std::initializer_list<detail::Tune> tunes, Run&& run) {
  for (const detail::Tune& t : tunes) {
    const detail::ScopedTuneOverride override_tune(t);
    run(Backend::emulator);
    if (check::cuda_available()) run(Backend::cuda);
  }
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

// Kernel results against the reference (which rounds the float64 rotation once):
// the kernels compute a*c - b*s in f32 with one fused multiply-add after one rounded product,
// an absolute error below 2^-23 (|a| + |b|) (|c|, |s| <= 1). Rounding that f32 value to bf16/f16
// lands at most one unit from the correctly rounded result unless cancellation makes the result
// smaller than that error, hence ulps = 1 or abs = 2^-23 * max(|a| + |b|). f32 outputs: the same
// absolute bound plus 2^-23 relative (the final rounding to f32 itself).
inline check::Tolerance kernel_tolerance(DType t, double max_pair_sum) {
  constexpr double kF32Eps = 0x1p-23;
  check::Tolerance tol;
  tol.abs = kF32Eps * max_pair_sum;
  if (t == DType::f32) tol.rel = kF32Eps;
  else tol.ulps = 1;
  return tol;
}

// Bounds |a| + |b| of any pair of x: 2 max |x|.
inline double max_pair_sum(const check::HostTensor& x) {
  double m = 0;
  for (int64_t i = 0; i < x.numel(); ++i)
    if (std::isfinite(x.get_flat(i))) m = std::fmax(m, std::fabs(x.get_flat(i)));
  return 2 * m;
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
