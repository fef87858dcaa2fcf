// The curated instantiations of rope_kernel, shared by both launchers: q's storage dtype x the
// vector widths of config.h's vec_candidate (16 bytes, 4 bytes, one element) x heads in flight
// per thread, 1 or 2 (TEJAS_TUNE rope.heads; per op by default, plan.cpp): sixteen kernels; the
// rope.head_stage kernels, 16-byte widths x 1 or 2 heads: six more; and kv_cache_write's
// loads-first kernels, bf16 and f16 x three widths: six; and the rope.pipeline kernels, ten, and
// kv_cache_write's two; and the wide step's (config.h's kPipeWideHeads), three; and
// rope_kv_cache_write's split k half (rope.kv_split), six, and its persistent form, two.
#pragma once
#include "ops/rope/kernel.cuh"
#include "ops/rope/plan.h"
#include "tejas/dtype.h"

namespace tejas::rotary {
inline namespace TEJAS_BUILD_NS {  // nvcc and emulator builds apart (device/prelude.h)

using KernelFn = void (*)(RopeParams);

template <class S, int kHeads>
KernelFn kernel_for_vec(int vec, bool stage, bool kv_first) {
  constexpr int kElem = static_cast<int>(sizeof(typename S::Raw));
  constexpr int kWide = kMaxAccessBytes / kElem;
  constexpr int kCompact = kCompactAccessBytes / kElem;  // 1 for f32: the same kernel as one element
  if (kv_first) {  // kv_cache_write's loads-first kernels: one per width (heads and staging n/a)
    if constexpr (kElem == 2) {  // kv_cache_write takes bf16 / f16 k and v only (validated)
      if (vec == kWide) return kv_write_kernel<S, kWide>;
      if (vec == kCompact) return kv_write_kernel<S, kCompact>;
      return vec == 1 ? kv_write_kernel<S, 1> : nullptr;
    }
    return nullptr;
  }
  if (vec == kWide) return stage ? rope_kernel<S, kWide, kHeads, true> : rope_kernel<S, kWide, kHeads>;
  if (stage) return nullptr;  // staging kernels: 16-byte accesses only
  if constexpr (kCompact > 1)
    if (vec == kCompact) return rope_kernel<S, kCompact, kHeads>;
  if (vec == 1) return rope_kernel<S, 1, kHeads>;
  return nullptr;
}

// nullptr when no kernel is instantiated for (dtype, vec): a planner bug, reported as internal.
template <int kHeads>
KernelFn kernel_for_dtype(DType dtype, int vec, bool stage, bool kv_first) {
  switch (dtype) {
    case DType::bf16: return kernel_for_vec<Bf16, kHeads>(vec, stage, kv_first);
    case DType::f16: return kernel_for_vec<F16, kHeads>(vec, stage, kv_first);
    case DType::f32: return kernel_for_vec<F32, kHeads>(vec, stage, kv_first);
    default: return nullptr;
  }
}
// heads: plan.h's kernel_heads_in_flight (1 or 2; anything else: nullptr). stage: the
// rope.head_stage kernels (RopeParams::head_stage; 16-byte accesses). kv_first: kv_cache_write's
// loads-first kernels (RopeParams::kv_loads_first).
inline KernelFn select_kernel(DType dtype, int vec, int heads, bool stage, bool kv_first) {
  if (heads == 1) return kernel_for_dtype<1>(dtype, vec, stage, kv_first);
  if (heads == kMaxHeadsInFlight) return kernel_for_dtype<kMaxHeadsInFlight>(dtype, vec, stage, kv_first);
  return nullptr;
}

// The rope.pipeline kernels (RopeLaunch::pipeline): 16-byte widths x 1 or 2 heads, six; with a
// KV cache (kv), bf16 and f16 only (rope_kv_cache_write's q dtypes), four.
template <int kHeads>
KernelFn pipe_kernel_for_dtype(DType dtype, bool kv) {
  switch (dtype) {
    case DType::bf16:
      return kv ? rope_pipe_kernel<Bf16, kMaxAccessBytes / 2, kHeads, true> : rope_pipe_kernel<Bf16, kMaxAccessBytes / 2, kHeads>;
    case DType::f16:
      return kv ? rope_pipe_kernel<F16, kMaxAccessBytes / 2, kHeads, true> : rope_pipe_kernel<F16, kMaxAccessBytes / 2, kHeads>;
    case DType::f32: return kv ? nullptr : rope_pipe_kernel<F32, kMaxAccessBytes / 4, kHeads>;
    default: return nullptr;
  }
}
// The wide step's (rope and mrope only: no caches), three.
inline KernelFn wide_pipe_kernel(DType dtype) {
  switch (dtype) {
    case DType::bf16: return rope_pipe_kernel<Bf16, kMaxAccessBytes / 2, kPipeWideHeads>;
    case DType::f16: return rope_pipe_kernel<F16, kMaxAccessBytes / 2, kPipeWideHeads>;
    case DType::f32: return rope_pipe_kernel<F32, kMaxAccessBytes / 4, kPipeWideHeads>;
    default: return nullptr;
  }
}
inline KernelFn select_pipe_kernel(DType dtype, int heads, bool kv) {
  if (heads == 1) return pipe_kernel_for_dtype<1>(dtype, kv);
  if (heads == kMaxHeadsInFlight) return pipe_kernel_for_dtype<kMaxHeadsInFlight>(dtype, kv);
  if (heads == kPipeWideHeads && !kv) return wide_pipe_kernel(dtype);
  return nullptr;
}
// kv_cache_write's pipelined kernel (rope.pipeline=3): bf16 and f16 (its k and v dtypes), two.
inline KernelFn select_kv_pipe_kernel(DType dtype) {
  switch (dtype) {
    case DType::bf16: return kv_pipe_kernel<Bf16, kMaxAccessBytes / 2>;
    case DType::f16: return kv_pipe_kernel<F16, kMaxAccessBytes / 2>;
    default: return nullptr;
  }
}
// rope_kv_cache_write's k half where the op is split (RopeLaunch::k_half): bf16 and f16 (the op's
// dtypes) x three widths, six.
template <class S>
KernelFn kv_rope_kernel_for_vec(int vec) {
  constexpr int kWide = kMaxAccessBytes / 2, kCompact = kCompactAccessBytes / 2;
  if (vec == kWide) return kv_rope_kernel<S, kWide>;
  if (vec == kCompact) return kv_rope_kernel<S, kCompact>;
  return vec == 1 ? kv_rope_kernel<S, 1> : nullptr;
}
inline KernelFn select_kv_rope_kernel(DType dtype, int vec) {
  switch (dtype) {
    case DType::bf16: return kv_rope_kernel_for_vec<Bf16>(vec);
    case DType::f16: return kv_rope_kernel_for_vec<F16>(vec);
    default: return nullptr;
  }
}
// Its persistent form (rope.kv_rope_pipe; 16-byte vectors), two.
inline KernelFn select_kv_rope_pipe_kernel(DType dtype) {
  switch (dtype) {
    case DType::bf16: return kv_rope_pipe_kernel<Bf16>;
    case DType::f16: return kv_rope_pipe_kernel<F16>;
    default: return nullptr;
  }
}
// The launch's kernel: the split's k half, the pipelined one, or select_kernel's.
inline KernelFn kernel_of(const RopeLaunch& l) {
  if (l.k_half) return l.pipeline ? select_kv_rope_pipe_kernel(l.dtype) : select_kv_rope_kernel(l.dtype, l.config.vec);
  if (l.pipeline && l.params.kv_loads_first) return select_kv_pipe_kernel(l.dtype);
  if (l.pipeline) return select_pipe_kernel(l.dtype, l.config.heads_in_flight, l.params.kv_kind != KvKind::none);
  return select_kernel(l.dtype, l.config.vec, kernel_heads_in_flight(l), l.params.head_stage, l.params.kv_loads_first);
}

}  // inline namespace TEJAS_BUILD_NS
}  // namespace tejas::rotary
