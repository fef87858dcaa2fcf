// gelu_tanh_mul (reference backend) against the tanh definition in long double; zero, large
// magnitudes, non-finite values and backends. Validation rules: test_activation_validation.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/activation/activation_test_util.h"
#include "support/op_snapshots.h"
#include "support/seed.h"
#include "tejas/activation.h"

using namespace tejas;
using namespace tejas::acttest;
using check::HostTensor;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
// 1 + tanh(z) cancels for z << 0: long double's absolute error there is about 2^-63 per unit.
constexpr long double kTanhCancellation = 0x1p-62L;

// The header's definition, literally: 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))) * u.
Expected gelu_tanh_times(long double g, long double u) {
  const long double k = std::sqrt(2.0L / 3.14159265358979323846264338327950288L);
  const long double inner = k * (g + 0.044715L * g * g * g);
  return {0.5L * g * (1.0L + std::tanh(inner)) * u, std::fabs(g * u) * kTanhCancellation};
}

TEST(GeluTanhMul, MatchesLongDoubleMath) {
  TEJAS_SEEDED_TEST_RNG();
  expect_gated_reference(
      rng, 3.0, [](const HostTensor& x, const HostTensor& out) { return gelu_tanh_mul(reference_ctx(), x, out); },
      gelu_tanh_times);
}

// Moderately negative gates give tiny but representable f32 results; the reference must not
// flush them to zero (as a naive 1 + tanh in float64 would).
TEST(GeluTanhMul, SmallNegativeTailKeepsRelativeAccuracy) {
  HostTensor x(DType::f32, {1, 2}), out(DType::f32, {1, 1});
  constexpr double kGate = -9.0;  // result ~ 1e-31: far below float64's 1 + tanh resolution
  x.set({0, 0}, kGate);
  x.set({0, 1}, 1.0);
  TEJAS_ASSERT_OK(gelu_tanh_mul(reference_ctx(), x, out));
  // 1 + tanh(z) = 2 e^{2z} / (1 + e^{2z}) exactly; for z << 0 that is 2 e^{2z} to many digits.
  const long double z = std::sqrt(2.0L / 3.14159265358979323846L) * (kGate + 0.044715L * kGate * kGate * kGate);
  const long double want = 0.5L * kGate * 2.0L * std::exp(2.0L * z);
  EXPECT_LT(out.get({0, 0}), 0.0);
  EXPECT_NEAR(out.get({0, 0}), static_cast<double>(want), std::fabs(static_cast<double>(want)) * 1e-6);
}

TEST(GeluTanhMul, ZeroAndLargeMagnitudes) {
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    const double big = dt == DType::f16 ? 6e4 : (dt == DType::f32 ? 1e30 : 1e4);
    HostTensor x(dt, {3, 2}), out(dt, {3, 1});
    x.set({0, 0}, 0.0);
    x.set({0, 1}, 3.0);
    x.set({1, 0}, big);
    x.set({1, 1}, 1.0);
    x.set({2, 0}, -big);
    x.set({2, 1}, 1.0);
    TEJAS_ASSERT_OK(gelu_tanh_mul(reference_ctx(), x, out));
    EXPECT_EQ(out.get({0, 0}), 0.0) << dtype_name(dt) << ": gelu(0) = 0";
    EXPECT_EQ(out.get({1, 0}), x.get({1, 0})) << dtype_name(dt) << ": gelu(big) = big";
    EXPECT_EQ(out.get({2, 0}), 0.0) << dtype_name(dt) << ": gelu(-big) = -0";
  }
}

TEST(GeluTanhMul, NonFiniteAsDocumented) {
  struct Case {
    double gate, up, want;  // NaN means NaN is the documented result
  };
  const Case cases[] = {{kNaN, 1.0, kNaN}, {1.0, kNaN, kNaN}, {kInf, 2.0, kInf}, {-kInf, 2.0, 0.0},
                        {-kInf, kInf, kNaN}, {kInf, 0.0, kNaN}, {kInf, -1.0, -kInf}};
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(::testing::Message() << dtype_name(dt) << " gate=" << c.gate << " up=" << c.up);
      HostTensor x(dt, {1, 2}), out(dt, {1, 1});
      x.set({0, 0}, c.gate);
      x.set({0, 1}, c.up);
      TEJAS_ASSERT_OK(gelu_tanh_mul(reference_ctx(), x, out));
      if (std::isnan(c.want)) EXPECT_TRUE(std::isnan(out.get({0, 0})));
      else EXPECT_EQ(out.get({0, 0}), c.want);
    }
  }
}

// The emulator runs the kernel (its tests: test_gelu_tanh_mul_kernel.cpp); host tensors on the
// cuda backend are rejected before anything is written.
TEST(GeluTanhMulBackend, EmulatorRunsCudaRejectsHostTensors) {
  TEJAS_SEEDED_TEST_RNG();
  HostTensor x(DType::f16, {2, 6}), out(DType::f16, {2, 3});
  fill_gate_up(x, rng, 1.0);
  const auto before = optest::bits_of(out);
  ExecContext ctx;
  ctx.backend = Backend::cuda;
  TEJAS_EXPECT_INVALID(gelu_tanh_mul(ctx, x, out), "gelu_tanh_mul: x: expected a cuda tensor");
  EXPECT_TRUE(optest::unchanged(out, before));
  ctx.backend = Backend::emulator;
  TEJAS_ASSERT_OK(gelu_tanh_mul(ctx, x, out));
  EXPECT_TRUE(within_one_rounding(out, expected_gated(x, gelu_tanh_times)));
}

}  // namespace
