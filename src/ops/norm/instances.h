// The curated kernel instantiations and the table that picks one for a config. Included by
// launch.cu (nvcc) and launch_emu.cpp (emulator): each compiles the same list.
//   x bf16 / f16: vec 8, 4, 2, 1;  x f32: vec 4, 2, 1;  E 8 and 16.  (22 kernels)
//   norm_pipe_kernel (the norm.pipeline variant): x bf16 / f16, vec 8, E 8 and 16.  (4 kernels)
//   norm_kernel<.., true> (the norm.fp8_one_reduction variant): the same four.  (4 kernels)
//   norm_warp_pipe_kernel (the norm.warp_items variant): x bf16 / f16.  (2 kernels)
// vec < the widest only serves misaligned views (or an f32 weight / residual beside 16-bit x).
#pragma once
#include "ops/norm/kernel.cuh"

namespace tejas::norm {
inline namespace TEJAS_BUILD_NS {  // nvcc and emulator builds apart (device/prelude.h)

using NormKernel = void (*)(NormParams);

template <DType XT, int V>
NormKernel kernel_for_e(int e) {
  return e == kLargeE ? &norm_kernel<XT, V, kLargeE> : &norm_kernel<XT, V, kSmallE>;
}

template <DType XT>
NormKernel kernel_for_vec(int vec, int e) {
  switch (vec) {
    case 1: return kernel_for_e<XT, 1>(e);
    case 2: return kernel_for_e<XT, 2>(e);
    case 4: return kernel_for_e<XT, 4>(e);
    default: break;
  }
  if constexpr (kElemBytes<XT> * kMaxVec <= kMaxVecBytes) return kernel_for_e<XT, kMaxVec>(e);
  return nullptr;  // f32 x never gets vec 8 (32-byte vectors)
}

// nullptr when the combination is not instantiated (never for configs from choose_config).
inline NormKernel pick_kernel(DType x, int vec, int e) {
  switch (x) {
    case DType::bf16: return kernel_for_vec<DType::bf16>(vec, e);
    case DType::f16: return kernel_for_vec<DType::f16>(vec, e);
    case DType::f32: return kernel_for_vec<DType::f32>(vec, e);
    default: return nullptr;
  }
}

// The norm.pipeline kernel for an eligible config (config.h's pipeline_eligible); nullptr otherwise.
inline NormKernel pick_pipe_kernel(DType x, int vec, int e) {
  if (vec != kMaxVec) return nullptr;
  const bool large = e == kLargeE;
  switch (x) {
    case DType::bf16: return large ? &norm_pipe_kernel<DType::bf16, kMaxVec, kLargeE> : &norm_pipe_kernel<DType::bf16, kMaxVec, kSmallE>;
    case DType::f16: return large ? &norm_pipe_kernel<DType::f16, kMaxVec, kLargeE> : &norm_pipe_kernel<DType::f16, kMaxVec, kSmallE>;
    default: return nullptr;
  }
}

// The norm.fp8_one_reduction kernel (config.h's fp8_one_reduction_eligible); nullptr otherwise.
inline NormKernel pick_one_reduction_kernel(DType x, int vec, int e) {
  if (vec != kMaxVec) return nullptr;
  const bool large = e == kLargeE;
  switch (x) {
    case DType::bf16: return large ? &norm_kernel<DType::bf16, kMaxVec, kLargeE, true> : &norm_kernel<DType::bf16, kMaxVec, kSmallE, true>;
    case DType::f16: return large ? &norm_kernel<DType::f16, kMaxVec, kLargeE, true> : &norm_kernel<DType::f16, kMaxVec, kSmallE, true>;
    default: return nullptr;
  }
}

// The norm.warp_items kernel (config.h's warp_pipe_eligible); nullptr otherwise.
inline NormKernel pick_warp_pipe_kernel(DType x) {
  switch (x) {
    case DType::bf16: return &norm_warp_pipe_kernel<DType::bf16>;
    case DType::f16: return &norm_warp_pipe_kernel<DType::f16>;
    default: return nullptr;
  }
}

// The kernel a config runs.
inline NormKernel kernel_for(DType x, const NormConfig& c) {
  if (c.pipeline_stages > 0 && c.warp_per_row) return pick_warp_pipe_kernel(x);
  if (c.pipeline_stages > 0) return pick_pipe_kernel(x, c.vec, c.elems_per_thread);
  if (c.fp8_one_reduction) return pick_one_reduction_kernel(x, c.vec, c.elems_per_thread);
  return pick_kernel(x, c.vec, c.elems_per_thread);
}

}  // inline namespace TEJAS_BUILD_NS
}  // namespace tejas::norm
