// silu_mul's kernel (plain and gpt-oss clamped) on the emulator against the reference backend:
// shapes with tails, padded and misaligned rows, far-negative gates, non-finite inputs, the
// emulator's counters; the same cases on the GPU when there is one.
#include <gtest/gtest.h>

#include <cmath>

#include <limits>

#include "ops/activation/gated_kernel_cases.h"
#include "runtime/tune.h"

using namespace tejas;
using namespace tejas::acttest;

namespace {

GatedCall silu_call(const SiluMulOptions& o) {
  return [o](const ExecContext& ctx, const TensorView& x, const TensorView& out) { return silu_mul(ctx, x, out, o); };
}

SiluMulOptions clamped(double limit, double alpha) {
  SiluMulOptions o;
  o.clamped = true;
  o.limit = limit;
  o.alpha = alpha;
  return o;
}

TEST(SiluMulKernel, MatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  for (DType dt : {DType::bf16, DType::f16, DType::f32})
    for (const KCase& k : kKernelCases) run_gated_case(rng, Which::silu, dt, k, silu_call({}), 3.0);
}

// One column block (TEJAS_TUNE activation.max_grid_y=1): lanes loop over their rows' chunks, the
// path only rows longer than 65535 x 256 chunks take otherwise (F = 4100 and 16384 loop here).
TEST(SiluMulKernel, OneColumnBlockMatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  detail::Tune t;
  t.activation_max_grid_y = 1;
  run_gated_cases_tuned(rng, t, Which::silu, {DType::bf16, DType::f32}, silu_call({}), 3.0);
}

// TEJAS_TUNE activation.steps (2, 3, 4 chunks per lane, loads first; the 4-step kernel): every
// shape, alone and with one column block (each lane then loops over several rounds of steps).
TEST(SiluMulKernel, StepsVariantMatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  for (int steps : {2, 3, 4}) {
    for (int max_grid_y : {0, 1}) {
      SCOPED_TRACE(::testing::Message() << "activation.steps=" << steps << " max_grid_y=" << max_grid_y);
      detail::Tune t;
      t.activation_steps = steps;
      t.activation_max_grid_y = max_grid_y;
      run_gated_cases_tuned(rng, t, Which::silu, {DType::bf16, DType::f32}, silu_call({}), 3.0);
    }
  }
}

// activation.fast_math (__expf and __fdividef in the sigmoid; 1, the default) and the accurate
// math it replaces on the 16-byte path (0): plain and clamped silu.
TEST(SiluMulKernel, FastAndAccurateMathMatchReference) {
  TEJAS_SEEDED_TEST_RNG();
  const SiluMulOptions o = clamped(7.0, 1.702);
  for (int fast_math : {1, 0}) {
    SCOPED_TRACE(::testing::Message() << "activation.fast_math=" << fast_math);
    EXPECT_EQ(run_math_cases(rng, fast_math, Which::silu, silu_call({}), 3.0), fast_math ? 6 : 0);
    EXPECT_EQ(run_math_cases(rng, fast_math, Which::silu_clamped, silu_call(o), 2.0 * o.limit, o), fast_math ? 6 : 0);
  }
}

TEST(SiluMulKernel, FastMathEdgeCases) {
  fast_math_edge_cases(Which::silu, silu_call({}));
  const SiluMulOptions o = clamped(7.0, 1.702);
  fast_math_edge_cases(Which::silu_clamped, silu_call(o), o);
}

// Limits 7 and 3.5 are bf16 / f16 values, so the fast kernels clamp x's 16-bit words (min / max.NaN
// pairs); 6.9 is neither, so they clamp in f32 (act_math.cuh's clamp_pairs, config.cpp's
// with_limit_pair).
TEST(SiluMulKernel, ClampedMatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  for (const SiluMulOptions& o : {clamped(7.0, 1.702), clamped(3.5, 1.0), clamped(6.9, 1.702)})
    for (DType dt : {DType::bf16, DType::f16, DType::f32})
      for (const KCase& k : {kKernelCases[1], kKernelCases[2], kKernelCases[3], kKernelCases[7]})
        run_gated_case(rng, Which::silu_clamped, dt, k, silu_call(o), 2.0 * o.limit, o);
}

// Gates far below zero: the results are tiny but representable (down to f32 / bf16 subnormals)
// and must not flush to zero; e^-g overflows f32 there, so this pins the kernel's formula. With
// up = 1e30 the results are normal f32 numbers although e^g is an f32 subnormal (g < -87.3):
// they must keep f32's relative accuracy (an e^g computed as a subnormal f32 kept only 10-14
// bits, ~1e-4 relative error against a bound of ~2e-5 here). The GPU too when present (its
// __expf and subnormals), as in the two tests below.
TEST(SiluMulKernel, FarNegativeGatesKeepTinyResults) {
  const double gates[] = {-20.0, -80.0, -87.0, -90.0, -95.0, -100.0, -103.0, -110.0};
  constexpr int64_t F = 8;
  for (double up : {1.5, 1e30}) {
    for (DType dt : {DType::bf16, DType::f32}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(dt) << " up " << up);
      check::HostTensor x(dt, {1, 2 * F}), out(dt, {1, F}), want(dt, {1, F});
      for (int64_t f = 0; f < F; ++f) {
        x.set({0, f}, gates[f]);
        x.set({0, F + f}, up);
      }
      ASSERT_TRUE(silu_mul(ctx_of(Backend::reference), x, want).ok());
      ASSERT_TRUE(silu_mul(ctx_of(Backend::emulator), x, out).ok());
      EXPECT_TRUE(matches_reference(out.view(), want.view(), x.view(), Which::silu));
      EXPECT_LT(out.get({0, 3}), 0.0) << "silu(-90) * up is a normal f32 / bf16 number";
      cuda_matches_reference(silu_call({}), x, want, Which::silu, {}, std::string(dtype_name(dt)));
    }
  }
}

// The same for the clamped form (alpha 1.702: alpha g < -80 from g = -47) and gelu_tanh (its
// sigmoid argument 2z < -80 from g = -9.9), f32, with large ups so results stay normal.
TEST(SiluMulKernel, FarNegativeSigmoidArgumentsKeepRelativeAccuracy) {
  constexpr int64_t F = 6;
  const double clamped_gates[] = {-40.0, -47.5, -50.0, -55.0, -58.0, -60.0};
  const double gelu_gates[] = {-9.0, -9.9, -10.0, -10.2, -10.4, -10.6};
  SiluMulOptions o;
  o.clamped = true;
  o.limit = 1e30;  // the clamp keeps ups in range; a huge limit leaves them as they are
  for (int pass = 0; pass < 2; ++pass) {
    const bool gelu = pass == 1;
    SCOPED_TRACE(gelu ? "gelu_tanh_mul" : "clamped silu_mul");
    check::HostTensor x(DType::f32, {1, 2 * F}), out(DType::f32, {1, F}), want(DType::f32, {1, F});
    for (int64_t f = 0; f < F; ++f) {
      x.set({0, f}, gelu ? gelu_gates[f] : clamped_gates[f]);
      x.set({0, F + f}, 1e25);
    }
    if (gelu) {
      ASSERT_TRUE(gelu_tanh_mul(ctx_of(Backend::reference), x, want).ok());
      ASSERT_TRUE(gelu_tanh_mul(ctx_of(Backend::emulator), x, out).ok());
      EXPECT_TRUE(matches_reference(out.view(), want.view(), x.view(), Which::gelu));
      const GatedCall gelu_call = [](const ExecContext& ctx, const TensorView& in, const TensorView& o_) {
        return gelu_tanh_mul(ctx, in, o_);
      };
      cuda_matches_reference(gelu_call, x, want, Which::gelu, {}, "gelu_tanh_mul");
    } else {
      ASSERT_TRUE(silu_mul(ctx_of(Backend::reference), x, want, o).ok());
      ASSERT_TRUE(silu_mul(ctx_of(Backend::emulator), x, out, o).ok());
      EXPECT_TRUE(matches_reference(out.view(), want.view(), x.view(), Which::silu_clamped, o));
      cuda_matches_reference(silu_call(o), x, want, Which::silu_clamped, o, "clamped silu_mul");
    }
  }
}

// Clamped with a tiny alpha: a = alpha g < -80 at gates near -1e8, and ups near FLT_MAX make the
// scaled product g e^(a + 64) up overflow although the result (~1e11) is finite: the kernel must
// scale back before multiplying by up there.
TEST(SiluMulKernel, FarNegativeArgumentsWithHugeUpDoNotOverflow) {
  constexpr int64_t F = 4;
  SiluMulOptions o;
  o.clamped = true;
  o.alpha = 1e-6;
  o.limit = 3.4e38;
  const double gates[] = {-8.05e7, -8.5e7, -9.0e7, -1.0e8};
  check::HostTensor x(DType::f32, {1, 2 * F}), out(DType::f32, {1, F}), want(DType::f32, {1, F});
  for (int64_t f = 0; f < F; ++f) {
    x.set({0, f}, gates[f]);
    x.set({0, F + f}, 3e38);
  }
  ASSERT_TRUE(silu_mul(ctx_of(Backend::reference), x, want, o).ok());
  ASSERT_TRUE(std::isfinite(want.get({0, 0}))) << "the reference result should be finite";
  ASSERT_TRUE(silu_mul(ctx_of(Backend::emulator), x, out, o).ok());
  EXPECT_TRUE(matches_reference(out.view(), want.view(), x.view(), Which::silu_clamped, o));
  cuda_matches_reference(silu_call(o), x, want, Which::silu_clamped, o, "f32");
}

// The header's non-finite cases, on the kernel (and the GPU when there is one): each against the
// reference element, under each poison byte (the default 0xFF already reads as NaN: an unwritten
// NaN element would pass).
TEST(SiluMulKernel, NonFiniteAsReference) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN(), kInf = std::numeric_limits<double>::infinity();
  const double gates[] = {kNaN, 1.0, kInf, -kInf, -kInf, kInf, 1e30, -1e30, 0.0, -0.0, -9.0, 9.0};
  const double ups[] = {1.0, kNaN, 2.0, 2.0, kInf, 0.0, 1.0, 1.0, kInf, 3.0, kNaN, -kNaN};
  constexpr int64_t kCases = 12;
  const detail::ScopedTuneOverride defaults(detail::Tune{});  // the fast math, whatever TEJAS_TUNE says
  // F = 10 takes the element-wide kernels; F = 16 the 16-byte ones, whose fast math clamps x's
  // 16-bit words by min / max.NaN (clamped SwiGLU at limit 7).
  testsupport::for_each_poison([&] {
    for (int64_t F : {int64_t{10}, int64_t{16}})
      for (const SiluMulOptions& o : {SiluMulOptions{}, clamped(7.0, 1.702)})
        for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
          check::HostTensor x(dt, {1, 2 * F}), out(dt, {1, F}), want(dt, {1, F});
          for (int64_t f = 0; f < F; ++f) {
            x.set({0, f}, f < kCases ? gates[f] : 0.5);
            x.set({0, F + f}, f < kCases ? ups[f] : 0.5);
          }
          ASSERT_TRUE(silu_mul(ctx_of(Backend::reference), x, want, o).ok());
          ASSERT_TRUE(silu_mul(ctx_of(Backend::emulator), x, out, o).ok());
          EXPECT_EQ(act::last_gated_config().fast_math, F == 16 && dt != DType::f32) << F;
          const Which which = o.clamped ? Which::silu_clamped : Which::silu;
          const std::string what =
              std::string(dtype_name(dt)) + (o.clamped ? " clamped" : "") + " F=" + std::to_string(F);
          EXPECT_TRUE(matches_reference(out.view(), want.view(), x.view(), which, o)) << what;
          cuda_matches_reference(silu_call(o), x, want, which, o, what);
        }
  });
}

TEST(SiluMulKernel, CudaMatchesReference) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  for (DType dt : {DType::bf16, DType::f16, DType::f32})
    for (const KCase& k : kKernelCases) run_gated_case_cuda(rng, dt, k, silu_call({}), Which::silu, 3.0);
  const SiluMulOptions o = clamped(7.0, 1.702);
  for (const KCase& k : kKernelCases) run_gated_case_cuda(rng, DType::bf16, k, silu_call(o), Which::silu_clamped, 14.0, o);
}

TEST(SiluMulKernel, CudaStepsVariantMatchesReference) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  detail::Tune t;
  t.activation_steps = 4;
  const detail::ScopedTuneOverride variant(t);
  for (DType dt : {DType::bf16, DType::f32})
    for (const KCase& k : kKernelCases) run_gated_case_cuda(rng, dt, k, silu_call({}), Which::silu, 3.0);
}

}  // namespace
