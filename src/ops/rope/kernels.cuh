// The curated instantiations of rope_kernel, shared by both launchers: q's storage dtype x the
// vector widths of config.h's vec_candidate (16 bytes, 4 bytes, one element) x early head loads
// on / off (TEJAS_TUNE rope.early_loads, for the GPU A/B). Sixteen kernels.
#pragma once
#include "ops/rope/kernel.cuh"
#include "tejas/dtype.h"

namespace tejas::rotary {
inline namespace TEJAS_BUILD_NS {  // nvcc and emulator builds apart (device/prelude.h)

using KernelFn = void (*)(RopeParams);

template <class S, bool kEarly>
KernelFn kernel_for_vec(int vec) {
  constexpr int kElem = static_cast<int>(sizeof(typename S::Raw));
  constexpr int kWide = kMaxAccessBytes / kElem;
  constexpr int kCompact = kCompactAccessBytes / kElem;  // 1 for f32: the same kernel as one element
  if (vec == kWide) return rope_kernel<S, kWide, kEarly>;
  if constexpr (kCompact > 1)
    if (vec == kCompact) return rope_kernel<S, kCompact, kEarly>;
  if (vec == 1) return rope_kernel<S, 1, kEarly>;
  return nullptr;
}

// nullptr when no kernel is instantiated for (dtype, vec): a planner bug, reported as internal.
template <bool kEarly>
KernelFn kernel_for_dtype(DType dtype, int vec) {
  switch (dtype) {
    case DType::bf16: return kernel_for_vec<Bf16, kEarly>(vec);
    case DType::f16: return kernel_for_vec<F16, kEarly>(vec);
    case DType::f32: return kernel_for_vec<F32, kEarly>(vec);
    default: return nullptr;
  }
}
inline KernelFn select_kernel(DType dtype, int vec, bool early_loads) {
  return early_loads ? kernel_for_dtype<true>(dtype, vec) : kernel_for_dtype<false>(dtype, vec);
}

}  // inline namespace TEJAS_BUILD_NS
}  // namespace tejas::rotary
