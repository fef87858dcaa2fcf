// silu_mul (reference backend), plain and clamped (gpt-oss), against long-double math; edges,
// non-finite values and backends. Validation rules: test_activation_validation.cpp.
#include <gtest/gtest.h>

#include <algorithm>
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

// silu(g) u = g u sigmoid(g), with sigmoid(g) = 1 / (1 + e^-g).
Expected silu_times(long double g, long double u) { return {g * u * (1.0L / (1.0L + std::exp(-g)))}; }

// gpt-oss: g = min(gate, limit), u = clamp(up, -limit, limit), out = g sigmoid(alpha g) (u + 1).
GatedFn clamped_swiglu(long double limit, long double alpha) {
  return [=](long double gate, long double up) {
    const long double g = std::min(gate, limit);
    const long double u = std::clamp(up, -limit, limit);
    return Expected{g * (u + 1.0L) / (1.0L + std::exp(-alpha * g))};
  };
}

TEST(SiluMul, MatchesLongDoubleMath) {
  TEJAS_SEEDED_TEST_RNG();
  expect_gated_reference(
      rng, 3.0, [](const HostTensor& x, const HostTensor& out) { return silu_mul(reference_ctx(), x, out); },
      silu_times);
}

TEST(SiluMul, ClampedMatchesLongDoubleMath) {
  TEJAS_SEEDED_TEST_RNG();
  struct Params {
    double limit, alpha;
  };
  for (const Params p : {Params{7.0, 1.702}, Params{3.5, 1.0}}) {
    SCOPED_TRACE(::testing::Message() << "limit=" << p.limit << " alpha=" << p.alpha);
    SiluMulOptions o;
    o.clamped = true;
    o.limit = p.limit;
    o.alpha = p.alpha;
    expect_gated_reference(  // gates ~ N(0, 2 limit): many values beyond +-limit
        rng, 2.0 * p.limit,
        [&o](const HostTensor& x, const HostTensor& out) { return silu_mul(reference_ctx(), x, out, o); },
        clamped_swiglu(p.limit, p.alpha));
  }
}

// Values at, just beyond and far beyond +-limit; the gate is clamped from above only.
TEST(SiluMul, ClampedEdges) {
  constexpr double kLimit = 7.0, kAlpha = 1.702;
  const double gates[] = {kLimit, 7.5, 1e4, -kLimit, -7.5, -1e4, 0.0};
  const double ups[] = {kLimit, 7.5, -7.5, 1e4, -1e4, -1.0, 0.0};
  constexpr int64_t F = 7;
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    HostTensor x(dt, {F, 2 * F}), out(dt, {F, F});
    for (int64_t t = 0; t < F; ++t)
      for (int64_t f = 0; f < F; ++f) {
        x.set({t, f}, gates[t]);
        x.set({t, F + f}, ups[f]);
      }
    SiluMulOptions o;
    o.clamped = true;
    TEJAS_ASSERT_OK(silu_mul(reference_ctx(), x, out, o));
    EXPECT_TRUE(within_one_rounding(out, expected_gated(x, clamped_swiglu(kLimit, kAlpha)))) << dtype_name(dt);
    // Everything above the limit behaves exactly like the limit ...
    for (int64_t f = 0; f < F; ++f) {
      EXPECT_EQ(out.get({1, f}), out.get({0, f})) << "gate 7.5 vs 7, f=" << f;
      EXPECT_EQ(out.get({2, f}), out.get({0, f})) << "gate 1e4 vs 7, f=" << f;
    }
    for (int64_t t = 0; t < F; ++t) {
      EXPECT_EQ(out.get({t, 1}), out.get({t, 0})) << "up 7.5 vs 7, t=" << t;
      EXPECT_EQ(out.get({t, 3}), out.get({t, 0})) << "up 1e4 vs 7, t=" << t;
      EXPECT_EQ(out.get({t, 5}), 0.0) << "up -1: u + 1 = 0, t=" << t;
      EXPECT_EQ(out.get({t, 4}), out.get({t, 2})) << "up -1e4 vs -7.5 (both -> -7), t=" << t;
    }
    // ... but a gate below -limit is not clamped: it keeps shrinking toward 0.
    EXPECT_LT(std::fabs(out.get({4, 6})), std::fabs(out.get({3, 6})));
    EXPECT_EQ(out.get({5, 6}), 0.0);
  }
}

TEST(SiluMul, ZeroAndLargeMagnitudes) {
  constexpr double kBig[] = {1e4, 6e4, 1e30};  // the largest each dtype holds comfortably
  const DType dts[] = {DType::bf16, DType::f16, DType::f32};
  for (int d = 0; d < 3; ++d) {
    const DType dt = dts[d];
    const double big = dt == DType::f16 ? kBig[1] : (dt == DType::f32 ? kBig[2] : kBig[0]);
    HostTensor x(dt, {3, 2}), out(dt, {3, 1});
    x.set({0, 0}, 0.0);
    x.set({0, 1}, 3.0);
    x.set({1, 0}, big);
    x.set({1, 1}, 1.0);
    x.set({2, 0}, -big);
    x.set({2, 1}, 1.0);
    TEJAS_ASSERT_OK(silu_mul(reference_ctx(), x, out));
    EXPECT_EQ(out.get({0, 0}), 0.0) << dtype_name(dt) << ": silu(0) = 0";
    EXPECT_EQ(out.get({1, 0}), x.get({1, 0})) << dtype_name(dt) << ": silu(big) = big";
    EXPECT_EQ(out.get({2, 0}), 0.0) << dtype_name(dt) << ": silu(-big) = -0";
  }
}

TEST(SiluMul, NonFiniteAsDocumented) {
  struct Case {
    double gate, up;
    bool clamped;
    double want;  // NaN means NaN is the documented result
  };
  constexpr double kLimit = 7.0;
  const double sig7 = 1.0 / (1.0 + std::exp(-1.702 * kLimit));
  const Case cases[] = {
      {kNaN, 1.0, false, kNaN},   {1.0, kNaN, false, kNaN},  {kInf, 2.0, false, kInf},
      {-kInf, 2.0, false, 0.0},   {-kInf, kInf, false, kNaN}, {kInf, 0.0, false, kNaN},
      {kNaN, 1.0, true, kNaN},    {1.0, kNaN, true, kNaN},   {kInf, 1.0, true, kLimit * sig7 * 2.0},
      {-kInf, 1.0, true, 0.0},    {1.0, kInf, true, (1.0 / (1.0 + std::exp(-1.702))) * (kLimit + 1.0)},
      {1.0, -kInf, true, (1.0 / (1.0 + std::exp(-1.702))) * (-kLimit + 1.0)},
  };
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(::testing::Message() << dtype_name(dt) << " gate=" << c.gate << " up=" << c.up
                                        << (c.clamped ? " clamped" : ""));
      HostTensor x(dt, {1, 2}), out(dt, {1, 1});
      x.set({0, 0}, c.gate);
      x.set({0, 1}, c.up);
      SiluMulOptions o;
      o.clamped = c.clamped;
      TEJAS_ASSERT_OK(silu_mul(reference_ctx(), x, out, o));
      if (std::isnan(c.want)) EXPECT_TRUE(std::isnan(out.get({0, 0})));
      else EXPECT_EQ(out.get({0, 0}), ref::round_to(dt, c.want));
    }
  }
}

// The emulator runs the kernel (its tests: test_silu_mul_kernel.cpp); host tensors on the cuda
// backend are rejected before anything is written; automatic picks the reference for host tensors.
TEST(SiluMulBackend, EmulatorRunsCudaRejectsHostTensors) {
  TEJAS_SEEDED_TEST_RNG();
  HostTensor x(DType::bf16, {2, 8}), out(DType::bf16, {2, 4});
  fill_gate_up(x, rng, 1.0);
  ExecContext ctx;
  ctx.backend = Backend::cuda;
  const auto before = optest::bits_of(out);
  TEJAS_EXPECT_INVALID(silu_mul(ctx, x, out), "silu_mul: x: expected a cuda tensor");
  EXPECT_TRUE(optest::unchanged(out, before));
  ctx.backend = Backend::emulator;
  TEJAS_ASSERT_OK(silu_mul(ctx, x, out));
  EXPECT_TRUE(within_one_rounding(out, expected_gated(x, silu_times)));
  out.poison();
  TEJAS_ASSERT_OK(silu_mul(ExecContext{}, x, out));  // automatic: host tensors -> reference
  EXPECT_TRUE(within_one_rounding(out, expected_gated(x, silu_times)));
}

}  // namespace
