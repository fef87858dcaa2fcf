// The curated instantiations of rope_kernel, shared by both launchers: q's storage dtype x the
// vector widths of config.h's vec_candidate (16 bytes, 4 bytes, one element) x heads in flight
// per thread, 1 or 2 (TEJAS_TUNE rope.heads; per op by default, plan.cpp): sixteen kernels; and the
// rope.head_stage kernels, 16-byte widths x 1 or 2 heads: six more.
#pragma once
#include "ops/rope/kernel.cuh"
#include "tejas/dtype.h"

namespace tejas::rotary {
inline namespace TEJAS_BUILD_NS {  // nvcc and emulator builds apart (device/prelude.h)

using KernelFn = void (*)(RopeParams);

template <class S, int kHeads>
KernelFn kernel_for_vec(int vec, bool stage) {
  constexpr int kElem = static_cast<int>(sizeof(typename S::Raw));
  constexpr int kWide = kMaxAccessBytes / kElem;
  constexpr int kCompact = kCompactAccessBytes / kElem;  // 1 for f32: the same kernel as one element
  if (vec == kWide) return stage ? rope_kernel<S, kWide, kHeads, true> : rope_kernel<S, kWide, kHeads>;
  if (stage) return nullptr;  // staging kernels: 16-byte accesses only
  if constexpr (kCompact > 1)
    if (vec == kCompact) return rope_kernel<S, kCompact, kHeads>;
  if (vec == 1) return rope_kernel<S, 1, kHeads>;
  return nullptr;
}

// nullptr when no kernel is instantiated for (dtype, vec): a planner bug, reported as internal.
template <int kHeads>
KernelFn kernel_for_dtype(DType dtype, int vec, bool stage) {
  switch (dtype) {
    case DType::bf16: return kernel_for_vec<Bf16, kHeads>(vec, stage);
    case DType::f16: return kernel_for_vec<F16, kHeads>(vec, stage);
    case DType::f32: return kernel_for_vec<F32, kHeads>(vec, stage);
    default: return nullptr;
  }
}
// heads: RopeConfig::heads_in_flight (1 or 2; anything else: nullptr). stage: the rope.head_stage
// kernels (RopeParams::head_stage; 16-byte accesses).
inline KernelFn select_kernel(DType dtype, int vec, int heads, bool stage) {
  if (heads == 1) return kernel_for_dtype<1>(dtype, vec, stage);
  if (heads == kMaxHeadsInFlight) return kernel_for_dtype<kMaxHeadsInFlight>(dtype, vec, stage);
  return nullptr;
}

}  // inline namespace TEJAS_BUILD_NS
}  // namespace tejas::rotary
