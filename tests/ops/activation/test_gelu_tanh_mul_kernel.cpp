// gelu_tanh_mul's kernel on the emulator against the reference backend: shapes with tails,
// padded and misaligned rows, the far-negative tail (no cancellation, no overflow), non-finite
// inputs, the emulator's counters; the same cases on the GPU when there is one.
#include <gtest/gtest.h>

#include <limits>

#include "ops/activation/gated_kernel_cases.h"
#include "runtime/tune.h"

using namespace tejas;
using namespace tejas::acttest;

namespace {

const GatedCall kGelu = [](const ExecContext& ctx, const TensorView& x, const TensorView& out) {
  return gelu_tanh_mul(ctx, x, out);
};

TEST(GeluTanhMulKernel, MatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  for (DType dt : {DType::bf16, DType::f16, DType::f32})
    for (const KCase& k : kKernelCases) run_gated_case(rng, Which::gelu, dt, k, kGelu, 3.0);
}

// TEJAS_TUNE activation.steps=4 (the 4-step kernel of gelu_tanh_mul): every shape.
TEST(GeluTanhMulKernel, StepsVariantMatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  detail::Tune t;
  t.activation_steps = 4;
  run_gated_cases_tuned(rng, t, Which::gelu, {DType::bf16, DType::f16}, kGelu, 3.0);
}

// activation.fast_math (__expf and __fdividef in the sigmoid; 1, the default) and the accurate
// math it replaces on the 16-byte path (0).
TEST(GeluTanhMulKernel, FastAndAccurateMathMatchReference) {
  TEJAS_SEEDED_TEST_RNG();
  for (int fast_math : {1, 0}) {
    SCOPED_TRACE(::testing::Message() << "activation.fast_math=" << fast_math);
    EXPECT_EQ(run_math_cases(rng, fast_math, Which::gelu, kGelu, 3.0), fast_math ? 6 : 0);
  }
  fast_math_edge_cases(Which::gelu, kGelu);
}

// Gates where 1 + tanh(z) cancels and e^-2z overflows f32 (g < -10.1) while the result is still
// a normal bf16 / f32 number; the GPU too when present.
TEST(GeluTanhMulKernel, NegativeTailKeepsRelativeAccuracy) {
  const double gates[] = {-3.0, -5.0, -8.0, -9.5, -10.0, -10.2, -10.4, -11.0};
  constexpr int64_t F = 8;
  for (DType dt : {DType::bf16, DType::f32}) {
    check::HostTensor x(dt, {1, 2 * F}), out(dt, {1, F}), want(dt, {1, F});
    for (int64_t f = 0; f < F; ++f) {
      x.set({0, f}, gates[f]);
      x.set({0, F + f}, 1.0);
    }
    ASSERT_TRUE(gelu_tanh_mul(ctx_of(Backend::reference), x, want).ok());
    ASSERT_TRUE(gelu_tanh_mul(ctx_of(Backend::emulator), x, out).ok());
    EXPECT_TRUE(matches_reference(out.view(), want.view(), x.view(), Which::gelu)) << dtype_name(dt);
    EXPECT_LT(out.get({0, 5}), 0.0) << dtype_name(dt) << ": gelu(-10.2) ~ -1e-38 is not zero";
    cuda_matches_reference(kGelu, x, want, Which::gelu, {}, std::string(dtype_name(dt)));
  }
}

// On the emulator and the GPU when there is one, under each poison byte: the default 0xFF already
// reads as NaN.
TEST(GeluTanhMulKernel, NonFiniteAsReference) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN(), kInf = std::numeric_limits<double>::infinity();
  const double gates[] = {kNaN, 1.0, kInf, -kInf, -kInf, kInf, kInf, 1e30, -1e30, 0.0};
  const double ups[] = {1.0, kNaN, 2.0, 2.0, kInf, 0.0, -1.0, 1.0, 1.0, 3.0};
  constexpr int64_t F = 10;
  testsupport::for_each_poison([&] {
    for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
      check::HostTensor x(dt, {1, 2 * F}), out(dt, {1, F}), want(dt, {1, F});
      for (int64_t f = 0; f < F; ++f) {
        x.set({0, f}, gates[f]);
        x.set({0, F + f}, ups[f]);
      }
      ASSERT_TRUE(gelu_tanh_mul(ctx_of(Backend::reference), x, want).ok());
      ASSERT_TRUE(gelu_tanh_mul(ctx_of(Backend::emulator), x, out).ok());
      EXPECT_TRUE(matches_reference(out.view(), want.view(), x.view(), Which::gelu)) << dtype_name(dt);
      cuda_matches_reference(kGelu, x, want, Which::gelu, {}, std::string(dtype_name(dt)));
    }
  });
}

TEST(GeluTanhMulKernel, CudaMatchesReference) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  for (DType dt : {DType::bf16, DType::f16, DType::f32})
    for (const KCase& k : kKernelCases) run_gated_case_cuda(rng, dt, k, kGelu, Which::gelu, 3.0);
}

}  // namespace
