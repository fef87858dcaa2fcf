// silu_mul_quant_fp8_group / silu_mul_quant_mx, reference backend, against the test's own
// long-double math (fused_expect.h): random inputs with zero / NaN / Inf groups, the clamped
// option, and the documented saturation of y beyond x's range. Kernels: *_kernel.cpp.
#include <gtest/gtest.h>

#include "ops/activation/fused_cases.h"
#include "ops/activation/kernel_test_util.h"
#include "support/poison.h"
#include "support/seed.h"

using namespace tejas;
using namespace tejas::fusedtest;
using tejas::acttest::ctx_of;

namespace {

class SiluMulQuantReference : public ::testing::TestWithParam<Kind> {};

TEST_P(SiluMulQuantReference, MatchesLongDoubleMath) {
  TEJAS_SEEDED_TEST_RNG();
  const Kind k = GetParam();
  for (DType dt : {DType::bf16, DType::f16})
    for (bool clamped : {false, true}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(dt) << (clamped ? " clamped" : ""));
      constexpr int64_t T = 3, F = 384;  // 3 groups of 128: the NaN group is there for every kind
      SiluMulOptions o;
      o.clamped = clamped;
      HostTensor x(dt, {T, 2 * F}), ts(DType::f32, {1});
      fill_fused(x, rng, F, 0, group_of(k), true, clamped ? 14.0 : 3.0);
      ts.set_flat(0, kTensorScale);
      // The NaN group's scale (f32 NaN, ue8m0 0xFF) reads as the default poison: finite ones too.
      testsupport::for_each_poison([&] {
        HostTensor q(q_dtype(k), {T, F}), s(scale_dtype(k), {T, F / group_of(k)});
        ASSERT_TRUE(call_fused(k, ctx_of(Backend::reference), x, q, s, ts, o).ok());
        expect_fused(k, y_of(x.view(), o), T, F, q.view(), s.view(), false, kTensorScale);
      });
    }
}

// f16: 300 * 300 = 90000 is beyond f16's 65504: y counts as 65504 (as an Inf input would in
// quant_fp8_group), so the group's largest code is the maximum and the scale is 65504 / 448.
TEST_P(SiluMulQuantReference, SaturatesBeyondXRange) {
  const Kind k = GetParam();
  const int64_t F = group_of(k);
  HostTensor x(DType::f16, {1, 2 * F}), q(q_dtype(k), {1, F}), s(scale_dtype(k), {1, 1}), ts(DType::f32, {1});
  for (int64_t f = 0; f < F; ++f) {
    x.set({0, f}, f == 0 ? 300.0 : 1.0);
    x.set({0, F + f}, f == 0 ? 300.0 : 1.0);
  }
  ts.set_flat(0, kTensorScale);
  for (Backend b : {Backend::reference, Backend::emulator}) {
    SCOPED_TRACE(backend_name(b));
    ASSERT_TRUE(call_fused(k, ctx_of(b), x, q, s, ts, {}).ok());
    expect_fused(k, y_of(x.view(), {}), 1, F, q.view(), s.view(), b == Backend::emulator, kTensorScale);
    // ue8m0 scales round up (65504 / 256 -> 255.9): no saturation there; the others reach the top code.
    if (k != Kind::fp8_ue8m0) {
      EXPECT_EQ(q.bits_flat(0), q_dtype(k) == DType::e4m3 ? 0x7Eu : 0x7u) << "the saturated value gets the top code";
    }
  }
  if (k == Kind::fp8_f32) {
    EXPECT_EQ(s.get_flat(0), static_cast<double>(static_cast<float>(65504.0 / 448.0)));
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, SiluMulQuantReference, ::testing::ValuesIn(kAllKinds), kind_test_name);

}  // namespace
