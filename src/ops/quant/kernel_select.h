// The curated kernel instantiations (storage dtype x code format x path) and the choice among
// them; included by launch.cu (nvcc) and launch_emu.cpp (emulator), so both backends run the
// same set. Scale rules and scale dtypes are runtime parameters (one branch per group).
#pragma once
#include <cstdint>
#include "ops/quant/kernel.cuh"
#include "ops/quant/launch_plan.h"
#include "tejas/dtype.h"
#include "tejas/status.h"

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

// Launch i of a plan, and the kernel its config picks: quant and dequant alike.
inline QuantLaunch launch_at(const QuantPlan& plan, int64_t i) { return quant_launch(plan, i); }
inline DequantLaunch launch_at(const DequantPlan& plan, int64_t i) { return dequant_launch(plan, i); }
inline QuantKernel kernel_of(const QuantPlan& plan, const QuantConfig& c) {
  return select_quant_kernel(plan.t.data->dtype, plan.code, c.vectorized);
}
inline DequantKernel kernel_of(const DequantPlan& plan, const DequantConfig& c) {
  return select_dequant_kernel(plan.t.data->dtype, plan.code, c.vectorized);
}

// The backends' launch loop: launch(kernel, l) for each of the plan's launches in order, up to
// the first error.
template <class Plan, class Launch>
Status for_each_launch(const Plan& plan, const Launch& launch) {
  for (int64_t i = 0; i < plan.num_launches; ++i) {
    const auto l = launch_at(plan, i);
    TEJAS_RETURN_IF_ERROR(launch(kernel_of(plan, l.config), l));
  }
  return Status::Ok();
}

}  // inline namespace TEJAS_BUILD_NS
}  // namespace tejas::quant_kernel
