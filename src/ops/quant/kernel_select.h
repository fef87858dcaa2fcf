// The curated kernel instantiations (storage dtype x code format x path) and the choice among
// them; included by launch.cu (nvcc) and launch_emu.cpp (emulator), so both backends run the
// same set. Scale rules and scale dtypes are runtime parameters (one branch per group).
#pragma once
#include "ops/quant/kernel.cuh"
#include "tejas/dtype.h"

namespace tejas::quant_kernel {
inline namespace TEJAS_BUILD_NS {  // nvcc and emulator builds apart (device/prelude.h)

using QuantKernel = void (*)(QuantParams);
using DequantKernel = void (*)(DequantParams);

template <class X>
QuantKernel quant_kernel_for(CodeFormat f, bool vectorized) {
  if (f == CodeFormat::e4m3)
    return vectorized ? quant_vec_kernel<X, CodeFormat::e4m3> : quant_generic_kernel<X, CodeFormat::e4m3>;
  return vectorized ? quant_vec_kernel<X, CodeFormat::e2m1> : quant_generic_kernel<X, CodeFormat::e2m1>;
}

inline QuantKernel select_quant_kernel(DType x, CodeFormat f, bool vectorized) {
  switch (x) {
    case DType::bf16: return quant_kernel_for<Bf16>(f, vectorized);
    case DType::f16: return quant_kernel_for<F16>(f, vectorized);
    default: return quant_kernel_for<F32>(f, vectorized);
  }
}

template <class O>
DequantKernel dequant_kernel_for(CodeFormat f, bool vectorized) {
  if (f == CodeFormat::e4m3)
    return vectorized ? dequant_vec_kernel<O, CodeFormat::e4m3> : dequant_generic_kernel<O, CodeFormat::e4m3>;
  return vectorized ? dequant_vec_kernel<O, CodeFormat::e2m1> : dequant_generic_kernel<O, CodeFormat::e2m1>;
}

inline DequantKernel select_dequant_kernel(DType out, CodeFormat f, bool vectorized) {
  switch (out) {
    case DType::bf16: return dequant_kernel_for<Bf16>(f, vectorized);
    case DType::f16: return dequant_kernel_for<F16>(f, vectorized);
    default: return dequant_kernel_for<F32>(f, vectorized);
  }
}

}  // inline namespace TEJAS_BUILD_NS
}  // namespace tejas::quant_kernel
