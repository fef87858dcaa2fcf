// The curated kernel instantiations (storage dtype x code format x path) and the choice among
// them; included by launch.cu (nvcc) and launch_emu.cpp (emulator), so both backends run the
// same set. The vectorized quantization kernels are one per scale rule (the rule fixes the code
// format); the generic ones and dequantization take the rule / scale dtype at run time.
#pragma once
#include <cstdint>
#include <type_traits>
#include "ops/quant/kernel.cuh"
#include "ops/quant/launch_plan.h"
#include "tejas/dtype.h"
#include "tejas/status.h"

namespace tejas::quant_kernel {
inline namespace TEJAS_BUILD_NS {  // nvcc and emulator builds apart (device/prelude.h)

using QuantKernel = void (*)(QuantParams);
using DequantKernel = void (*)(DequantParams);

// Version 7's kernel (nvfp4 from 16-bit x): by storage type, and by dtype (nullptr for f32 x;
// launch.cu asks its occupancy before planning: the linear instance's, which answers for the row
// walk's too because both walks give the same CTAs per SM: on sm_90a 56 / 62 registers (bf16 /
// f16) linear and 62 / 64 by row, 4 CTAs, the launch bound; on sm_80 72 either way, 3 CTAs. A
// count that differed would cost only speed: the persistent grid is a grid-stride loop).
template <class X, bool kLinear = true>
QuantKernel clean_table_kernel() {
  return quant_vec_kernel<X, CodeFormat::e2m1, ScaleRule::nvfp4, true, false, true, kLinear>;
}
inline QuantKernel clean_table_kernel(DType x) {
  return x == DType::bf16 ? clean_table_kernel<Bf16>() : x == DType::f16 ? clean_table_kernel<F16>() : nullptr;
}

// kLinear: the config's linear (kernel.cuh's GroupWalk).
template <class X, bool kLinear>
QuantKernel quant_vec_kernel_for(CodeFormat f, ScaleRule rule, bool fast, bool tie_bias, bool clean) {
  using enum CodeFormat;
  constexpr bool L = kLinear;
  if constexpr (sizeof(typename X::Raw) == 2) {
    if (f == e2m1 && fast && clean && rule == ScaleRule::nvfp4) return clean_table_kernel<X, L>();
  }
  if (f == e2m1) {
    const bool nvfp4 = rule == ScaleRule::nvfp4;
    if (fast) return nvfp4 ? quant_vec_kernel<X, e2m1, ScaleRule::nvfp4, true, false, false, L>
                           : quant_vec_kernel<X, e2m1, ScaleRule::mx, true, false, false, L>;
    return nvfp4 ? quant_vec_kernel<X, e2m1, ScaleRule::nvfp4, false, false, false, L>
                 : quant_vec_kernel<X, e2m1, ScaleRule::mx, false, false, false, L>;
  }
  switch (rule) {
    case ScaleRule::fp8_f32:
      if constexpr (sizeof(typename X::Raw) == 2) {
        if (fast && tie_bias) return quant_vec_kernel<X, e4m3, ScaleRule::fp8_f32, true, true, false, L>;
      }
      return fast ? quant_vec_kernel<X, e4m3, ScaleRule::fp8_f32, true, false, false, L>
                  : quant_vec_kernel<X, e4m3, ScaleRule::fp8_f32, false, false, false, L>;
    case ScaleRule::fp8_ue8m0: return quant_vec_kernel<X, e4m3, ScaleRule::fp8_ue8m0, false, false, false, L>;
    default: return quant_vec_kernel<X, e4m3, ScaleRule::mx, false, false, false, L>;
  }
}

template <class X>
QuantKernel quant_kernel_for(CodeFormat f, ScaleRule rule, bool vectorized, bool fast, bool tie_bias, bool clean,
                             bool linear) {
  using enum CodeFormat;
  if (!vectorized) return f == e4m3 ? quant_generic_kernel<X, e4m3> : quant_generic_kernel<X, e2m1>;
  return linear ? quant_vec_kernel_for<X, true>(f, rule, fast, tie_bias, clean)
                : quant_vec_kernel_for<X, false>(f, rule, fast, tie_bias, clean);
}

// e2m1 pairs with the mx and nvfp4 rules, e4m3 with the other three (quant_launch_plan checks).
// fast (the config's fast_convert): version 5, for e2m1 codes and the fp8_f32 rule; tie_bias (the
// config's): version 6, for the fp8_f32 rule with 16-bit x; clean (the config's clean_table):
// version 7, for the nvfp4 rule with 16-bit x; linear (the config's): the group walk of rows laid
// end to end, for every vectorized kernel.
inline QuantKernel select_quant_kernel(DType x, CodeFormat f, ScaleRule rule, bool vectorized, bool fast,
                                       bool tie_bias, bool clean, bool linear) {
  switch (x) {
    case DType::bf16: return quant_kernel_for<Bf16>(f, rule, vectorized, fast, tie_bias, clean, linear);
    case DType::f16: return quant_kernel_for<F16>(f, rule, vectorized, fast, tie_bias, clean, linear);
    default: return quant_kernel_for<F32>(f, rule, vectorized, fast, tie_bias, clean, linear);
  }
}

template <class O, bool kLinear>
DequantKernel dequant_vec_kernel_for(CodeFormat f, bool packed, bool nvfp4) {
  constexpr bool L = kLinear;
  if (f == CodeFormat::e4m3) {
    if constexpr (sizeof(typename O::Raw) == 2) {
      if (packed) return dequant_vec_kernel<O, CodeFormat::e4m3, true, false, L>;
    }
    return dequant_vec_kernel<O, CodeFormat::e4m3, false, false, L>;
  }
  if constexpr (std::is_same_v<O, Bf16>) {
    if (packed && nvfp4) return dequant_vec_kernel<O, CodeFormat::e2m1, true, true, L>;
  }
  if constexpr (sizeof(typename O::Raw) == 2) {
    if (packed && !nvfp4) return dequant_vec_kernel<O, CodeFormat::e2m1, true, false, L>;
  }
  return dequant_vec_kernel<O, CodeFormat::e2m1, false, false, L>;
}

template <class O>
DequantKernel dequant_kernel_for(CodeFormat f, bool vectorized, bool packed, bool nvfp4, bool linear) {
  using enum CodeFormat;
  if (!vectorized) return f == e4m3 ? dequant_generic_kernel<O, e4m3> : dequant_generic_kernel<O, e2m1>;
  return linear ? dequant_vec_kernel_for<O, true>(f, packed, nvfp4)
                : dequant_vec_kernel_for<O, false>(f, packed, nvfp4);
}

// packed (the config's fast_convert) applies to 16-bit out with e2m1 codes and ue8m0 scales, to
// bf16 out with nvfp4's e4m3 scales (nvfp4), and to e4m3 codes (config.h: which outs and scales);
// linear (the config's) to every vectorized kernel.
inline DequantKernel select_dequant_kernel(DType out, CodeFormat f, bool vectorized, bool packed, bool nvfp4,
                                           bool linear) {
  switch (out) {
    case DType::bf16: return dequant_kernel_for<Bf16>(f, vectorized, packed, nvfp4, linear);
    case DType::f16: return dequant_kernel_for<F16>(f, vectorized, packed, nvfp4, linear);
    default: return dequant_kernel_for<F32>(f, vectorized, packed, nvfp4, linear);
  }
}

// Launch i of a plan, and the kernel its config picks: quant and dequant alike.
inline QuantLaunch launch_at(const QuantPlan& plan, int64_t i) { return quant_launch(plan, i); }
inline DequantLaunch launch_at(const DequantPlan& plan, int64_t i) { return dequant_launch(plan, i); }
inline QuantKernel kernel_of(const QuantPlan& plan, const QuantLaunch& l) {
  return select_quant_kernel(plan.t.data->dtype, plan.code, l.params.rule, l.config.vectorized, l.config.fast_convert,
                             l.config.tie_bias, l.config.clean_table, l.config.linear);
}
inline DequantKernel kernel_of(const DequantPlan& plan, const DequantLaunch& l) {
  return select_dequant_kernel(plan.t.data->dtype, plan.code, l.config.vectorized, l.config.fast_convert,
                               l.params.scale_kind == ScaleKind::e4m3, l.config.linear);
}

// The backends' launch loop: launch(kernel, l) for each of the plan's launches in order, up to
// the first error.
template <class Plan, class Launch>
Status for_each_launch(const Plan& plan, const Launch& launch) {
  for (int64_t i = 0; i < plan.num_launches; ++i) {
    const auto l = launch_at(plan, i);
    TEJAS_RETURN_IF_ERROR(launch(kernel_of(plan, l), l));
  }
  return Status::Ok();
}

}  // inline namespace TEJAS_BUILD_NS
}  // namespace tejas::quant_kernel
