// Inputs and calls for the fused silu_mul + quantization tests (reference and kernel).
#pragma once
#include <cstdint>
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "check/host_tensor.h"
#include "ops/activation/fused_expect.h"
#include "tejas/activation.h"

namespace tejas::fusedtest {

struct FCase {
  int64_t T, F;
  int64_t x_lead = 0, x_pad = 0;  // elements before / after each x row's view
  int64_t q_lead = 0, q_pad = 0;  // the same for q (even for e2m1)
  int64_t s_pad = 0;              // scales' row padding
};

// Random gate / up; row 0 also gets an all-zero group, and (when `specials`) a NaN group and an
// +Inf gate (y saturates to x's largest value) in later groups.
inline void fill_fused(HostTensor& xs, check::Rng& rng, int64_t F, int64_t lead, int group, bool specials,
                       double gate_sd) {
  const int64_t width = xs.shape()[1];
  for (int64_t i = 0; i < xs.numel(); ++i) xs.set_flat(i, rng.normal(0.0, (i % width) < lead + F ? gate_sd : 2.0));
  const int64_t groups = F / group;
  for (int64_t f = 0; f < group; ++f) xs.set({0, lead + f}, 0.0);
  if (specials && groups >= 3) {
    xs.set({0, lead + group + 1}, std::numeric_limits<double>::quiet_NaN());
    xs.set({0, lead + 2 * group + 3}, std::numeric_limits<double>::infinity());
  }
}

// Calls the op of `k` (tensor_scale used by nvfp4 only).
inline Status call_fused(Kind k, const ExecContext& ctx, const TensorView& x, const TensorView& q,
                         const TensorView& scales, const TensorView& tensor_scale, const SiluMulOptions& o) {
  if (k == Kind::fp8_f32 || k == Kind::fp8_ue8m0) return silu_mul_quant_fp8_group(ctx, x, q, scales, o);
  return silu_mul_quant_mx(ctx, k == Kind::nvfp4 ? MxFormat::nvfp4 : MxFormat::mxfp4, x, q, scales,
                           k == Kind::nvfp4 ? tensor_scale : TensorView{}, o);
}

inline const char* kind_name(Kind k) {
  switch (k) {
    case Kind::fp8_f32: return "fp8 f32 scales";
    case Kind::fp8_ue8m0: return "fp8 ue8m0 scales";
    case Kind::mxfp4: return "mxfp4";
    case Kind::nvfp4: return "nvfp4";
  }
  return "?";
}

inline std::string kind_test_name(const ::testing::TestParamInfo<Kind>& info) {
  static const char* const kNames[] = {"Fp8F32", "Fp8Ue8m0", "Mxfp4", "Nvfp4"};
  return kNames[static_cast<int>(info.param)];
}

inline constexpr Kind kAllKinds[] = {Kind::fp8_f32, Kind::fp8_ue8m0, Kind::mxfp4, Kind::nvfp4};
inline constexpr float kTensorScale = 0.0037f;  // ~ amax / (448 * 6) for these inputs

}  // namespace tejas::fusedtest
