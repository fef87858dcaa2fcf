// silu_mul's kernel (plain and gpt-oss clamped) on the emulator against the reference backend:
// shapes with tails, padded and misaligned rows, far-negative gates, non-finite inputs, the
// emulator's counters; the same cases on the GPU when there is one.
#include <gtest/gtest.h>

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
  const detail::ScopedTuneOverride one_block(t);
  for (DType dt : {DType::bf16, DType::f32})
    for (const KCase& k : kKernelCases) run_gated_case(rng, Which::silu, dt, k, silu_call({}), 3.0);
}

TEST(SiluMulKernel, ClampedMatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  for (const SiluMulOptions& o : {clamped(7.0, 1.702), clamped(3.5, 1.0)})
    for (DType dt : {DType::bf16, DType::f32})
      for (const KCase& k : {kKernelCases[1], kKernelCases[2], kKernelCases[3], kKernelCases[7]})
        run_gated_case(rng, Which::silu_clamped, dt, k, silu_call(o), 2.0 * o.limit, o);
}

// Gates far below zero: the results are tiny but representable (down to f32 / bf16 subnormals)
// and must not flush to zero; e^-g overflows f32 there, so this pins the kernel's formula.
TEST(SiluMulKernel, FarNegativeGatesKeepTinyResults) {
  const double gates[] = {-20.0, -80.0, -87.0, -90.0, -95.0, -100.0, -103.0, -110.0};
  constexpr int64_t F = 8;
  for (DType dt : {DType::bf16, DType::f32}) {
    check::HostTensor x(dt, {1, 2 * F}), out(dt, {1, F}), want(dt, {1, F});
    for (int64_t f = 0; f < F; ++f) {
      x.set({0, f}, gates[f]);
      x.set({0, F + f}, 1.5);
    }
    ASSERT_TRUE(silu_mul(ctx_of(Backend::reference), x, want).ok());
    ASSERT_TRUE(silu_mul(ctx_of(Backend::emulator), x, out).ok());
    EXPECT_TRUE(matches_reference(out.view(), want.view(), x.view(), Which::silu)) << dtype_name(dt);
    EXPECT_LT(out.get({0, 3}), 0.0) << dtype_name(dt) << ": silu(-90) * 1.5 is a normal f32 / bf16 number";
  }
}

// The header's non-finite cases, on the kernel: each against the reference element.
TEST(SiluMulKernel, NonFiniteAsReference) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN(), kInf = std::numeric_limits<double>::infinity();
  const double gates[] = {kNaN, 1.0, kInf, -kInf, -kInf, kInf, 1e30, -1e30, 0.0, -0.0};
  const double ups[] = {1.0, kNaN, 2.0, 2.0, kInf, 0.0, 1.0, 1.0, kInf, 3.0};
  constexpr int64_t F = 10;
  for (const SiluMulOptions& o : {SiluMulOptions{}, clamped(7.0, 1.702)})
    for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
      check::HostTensor x(dt, {1, 2 * F}), out(dt, {1, F}), want(dt, {1, F});
      for (int64_t f = 0; f < F; ++f) {
        x.set({0, f}, gates[f]);
        x.set({0, F + f}, ups[f]);
      }
      ASSERT_TRUE(silu_mul(ctx_of(Backend::reference), x, want, o).ok());
      ASSERT_TRUE(silu_mul(ctx_of(Backend::emulator), x, out, o).ok());
      EXPECT_TRUE(matches_reference(out.view(), want.view(), x.view(),
                                    o.clamped ? Which::silu_clamped : Which::silu, o))
          << dtype_name(dt) << (o.clamped ? " clamped" : "");
    }
}

TEST(SiluMulKernel, CudaMatchesReference) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  for (DType dt : {DType::bf16, DType::f16, DType::f32})
    for (const KCase& k : kKernelCases) run_gated_case_cuda(rng, dt, k, silu_call({}), Which::silu, 3.0);
  const SiluMulOptions o = clamped(7.0, 1.702);
  for (const KCase& k : kKernelCases) run_gated_case_cuda(rng, DType::bf16, k, silu_call(o), Which::silu_clamped, 14.0, o);
}

}  // namespace
