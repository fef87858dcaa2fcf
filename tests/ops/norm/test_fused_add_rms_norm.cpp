// fused_add_rms_norm (reference backend): residual update rounded in residual's dtype, norm from
// the stored residual, in-place output, FP8 output. Validation rules: test_norm_validation.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "ops/norm/norm_math.h"
#include "support/op_snapshots.h"
#include "support/seed.h"
#include "tejas/norm.h"

using namespace tejas;
using check::HostTensor;
using normtest::rms_row;

namespace {

constexpr double kEps = 1e-5;
const check::Tolerance kOneRounding{0.0, 0.0, 1};  // one rounding; long double vs double may straddle a tie

ExecContext reference_ctx() {
  ExecContext ctx;
  ctx.backend = Backend::reference;
  return ctx;
}

// The residual after the update: x + residual in long double, rounded once to residual's dtype.
HostTensor expected_residual(const HostTensor& x, const HostTensor& residual) {
  HostTensor want(residual.dtype(), residual.shape());
  for (int64_t i = 0; i < x.numel(); ++i)
    want.set_flat(i, static_cast<double>(static_cast<long double>(x.get_flat(i)) + residual.get_flat(i)));
  return want;
}

HostTensor expected_out(const HostTensor& new_residual, const HostTensor& w, DType out_dtype) {
  HostTensor want(out_dtype, new_residual.shape());
  for (int64_t t = 0; t < new_residual.shape()[0]; ++t) {
    const auto y = rms_row(normtest::row_of(new_residual, t), w, kEps);
    for (int64_t h = 0; h < new_residual.shape()[1]; ++h) want.set({t, h}, static_cast<double>(y[static_cast<size_t>(h)]));
  }
  return want;
}

struct Combo {
  DType x, residual, w;
};
constexpr Combo kCombos[] = {{DType::bf16, DType::bf16, DType::bf16}, {DType::bf16, DType::f32, DType::f32},
                             {DType::f16, DType::f16, DType::f16},    {DType::f16, DType::f32, DType::f16},
                             {DType::f32, DType::f32, DType::f32},    {DType::f32, DType::bf16, DType::f32}};

struct Shape {
  int64_t T, H, pad;
};
constexpr Shape kShapes[] = {{1, 1, 0}, {3, 7, 2}, {1023, 5, 0}, {2, 4104, 3}, {3, 31, 0}};

TEST(FusedAddRmsNorm, MatchesLongDoubleMath) {
  TEJAS_SEEDED_TEST_RNG();
  for (const Combo& c : kCombos) {
    for (const Shape& s : kShapes) {
      SCOPED_TRACE(::testing::Message() << dtype_name(c.x) << " x, " << dtype_name(c.residual) << " residual, "
                                        << dtype_name(c.w) << " weight, T=" << s.T << " H=" << s.H);
      HostTensor x(c.x, {s.T, s.H}, s.pad), res(c.residual, {s.T, s.H}, s.pad), w(c.w, {s.H}),
          out(c.x, {s.T, s.H}, s.pad);
      check::fill_normal(x, rng);
      check::fill_normal(res, rng, 0.0, 4.0);
      check::fill_normal(w, rng, 1.0, 0.5);
      const HostTensor want_res = expected_residual(x, res);
      const auto x_before = optest::bits_of(x);
      TEJAS_ASSERT_OK(fused_add_rms_norm(reference_ctx(), x, res, w, kEps, out));
      const auto rr = check::compare_exact(res, want_res);  // one rounding of an exact f64 sum
      EXPECT_TRUE(rr.ok) << "residual: " << rr.message;
      const auto ro = check::compare(out, expected_out(want_res, w, c.x), kOneRounding);
      EXPECT_TRUE(ro.ok) << "out: " << ro.message;
      EXPECT_TRUE(optest::unchanged(x, x_before)) << "x is an input";
      EXPECT_TRUE(res.padding_intact() && out.padding_intact());
    }
  }
}

// bf16 residual 1.0 plus x = 3 * 2^-10 rounds back to 1.0 (bf16 spacing at 1 is 2^-7): the norm
// must see the stored 1.0, and the unrounded sum would give a visibly different f32 output.
TEST(FusedAddRmsNorm, NormUsesStoredRoundedResidual) {
  constexpr double kSmall = 3.0 / 1024;
  HostTensor x(DType::f32, {1, 2}), res(DType::bf16, {1, 2}), w(DType::f32, {2}), out(DType::f32, {1, 2});
  x.set({0, 0}, kSmall);
  x.set({0, 1}, 0.0);
  for (int64_t h = 0; h < 2; ++h) {
    res.set({0, h}, 1.0);
    w.set({h}, 1.0);
  }
  TEJAS_ASSERT_OK(fused_add_rms_norm(reference_ctx(), x, res, w, kEps, out));
  EXPECT_EQ(res.get({0, 0}), 1.0) << "1 + 3*2^-10 rounds to 1 in bf16";
  const double from_stored = static_cast<float>(1.0 / std::sqrt(1.0 + kEps));
  EXPECT_EQ(out.get({0, 0}), from_stored);
  EXPECT_EQ(out.get({0, 1}), from_stored);
  // The unrounded sum would have given a different first element:
  const double a = 1.0 + kSmall;
  const double from_unrounded = static_cast<float>(a / std::sqrt((a * a + 1.0) / 2 + kEps));
  EXPECT_GT(std::fabs(from_unrounded - from_stored), 1e-3);
}

// A residual update that overflows f16 stores Inf; the norm of that row follows the Inf rule.
TEST(FusedAddRmsNorm, OverflowingResidualIsStoredAsInf) {
  HostTensor x(DType::f16, {2, 3}), res(DType::f16, {2, 3}), w(DType::f16, {3}), out(DType::f16, {2, 3});
  for (int64_t h = 0; h < 3; ++h) {
    x.set({0, h}, h == 0 ? 60000.0 : 1.0);
    res.set({0, h}, h == 0 ? 60000.0 : 1.0);
    x.set({1, h}, 1.0);
    res.set({1, h}, 1.0);
    w.set({h}, 1.0);
  }
  TEJAS_ASSERT_OK(fused_add_rms_norm(reference_ctx(), x, res, w, kEps, out));
  EXPECT_EQ(res.get({0, 0}), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(out.get({0, 0})));
  EXPECT_EQ(out.get({0, 1}), 0.0);
  EXPECT_NEAR(out.get({1, 0}), 1.0, 1e-3);
}

TEST(FusedAddRmsNorm, NanStaysInItsRow) {
  TEJAS_SEEDED_TEST_RNG();
  HostTensor x(DType::bf16, {3, 10}), res(DType::bf16, {3, 10}), w(DType::bf16, {10}), out(DType::bf16, {3, 10});
  check::fill_normal(x, rng);
  check::fill_normal(res, rng);
  check::fill_normal(w, rng, 1.0, 0.5);
  x.set({1, 4}, std::numeric_limits<double>::quiet_NaN());
  const HostTensor want_res = expected_residual(x, res);
  TEJAS_ASSERT_OK(fused_add_rms_norm(reference_ctx(), x, res, w, kEps, out));
  for (int64_t h = 0; h < 10; ++h) EXPECT_TRUE(std::isnan(out.get({1, h}))) << h;
  EXPECT_TRUE(std::isnan(res.get({1, 4})));
  EXPECT_FALSE(std::isnan(res.get({1, 3})));
  // compare() requires NaN exactly where the expectation has NaN.
  const auto ro = check::compare(out, expected_out(want_res, w, DType::bf16), kOneRounding);
  EXPECT_TRUE(ro.ok) << ro.message;
}

TEST(FusedAddRmsNorm, InPlaceMatchesOutOfPlace) {
  TEJAS_SEEDED_TEST_RNG();
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    HostTensor x(dt, {4, 72}, 8), res1(DType::f32, {4, 72}), res2(DType::f32, {4, 72}), w(dt, {72}),
        out(dt, {4, 72}, 8);
    check::fill_normal(x, rng);
    check::fill_normal(res1, rng);
    res2.copy_from(res1);
    check::fill_normal(w, rng, 1.0, 0.5);
    TEJAS_ASSERT_OK(fused_add_rms_norm(reference_ctx(), x, res1, w, kEps, out));
    TEJAS_ASSERT_OK(fused_add_rms_norm(reference_ctx(), x, res2, w, kEps, x));  // out is exactly x
    EXPECT_TRUE(check::compare_exact(x, out).ok) << dtype_name(dt);
    EXPECT_TRUE(check::compare_exact(res2, res1).ok) << dtype_name(dt);
  }
}

TEST(FusedAddRmsNormFp8, DynamicAndStaticCodesExact) {
  TEJAS_SEEDED_TEST_RNG();
  for (const Combo& c : kCombos) {
    for (bool dynamic : {true, false}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(c.x) << " x, " << dtype_name(c.residual)
                                        << (dynamic ? " dynamic" : " static"));
      constexpr int64_t T = 5, H = 130;
      constexpr double kStaticScale = 0.005;  // some |y / s| beyond 448: saturation included
      HostTensor x(c.x, {T, H}), res(c.residual, {T, H}), w(c.w, {H}), out(DType::e4m3, {T, H}),
          scale(DType::f32, {dynamic ? T : 1});
      check::fill_normal(x, rng);
      check::fill_normal(res, rng, 0.0, 3.0);
      check::fill_normal(w, rng, 1.0, 0.5);
      if (!dynamic) scale.set({0}, kStaticScale);
      const HostTensor want_res = expected_residual(x, res);
      Fp8Scale sc;
      sc.scale = scale.view();
      sc.mode = dynamic ? Fp8ScaleMode::dynamic_per_token : Fp8ScaleMode::static_per_tensor;
      TEJAS_ASSERT_OK(fused_add_rms_norm(reference_ctx(), x, res, w, kEps, out, sc));
      EXPECT_TRUE(check::compare_exact(res, want_res).ok);
      HostTensor want(DType::e4m3, {T, H});
      for (int64_t t = 0; t < T; ++t) {
        const auto y = rms_row(normtest::row_of(want_res, t), w, kEps);
        const float s = dynamic ? normtest::dynamic_scale(y) : static_cast<float>(kStaticScale);
        if (dynamic) {
          EXPECT_EQ(scale.get({t}), static_cast<double>(s)) << "row " << t;
        }
        for (int64_t h = 0; h < H; ++h)
          want.set_bits_flat(t * H + h, optest::e4m3_code_by_search(y[static_cast<size_t>(h)] / s));
      }
      const auto r = check::compare_exact(out, want);
      EXPECT_TRUE(r.ok) << r.message;
    }
  }
}

// Host tensors on the cuda backend: rejected, nothing written (the emulator runs the kernel:
// test_fused_add_rms_norm_kernel.cpp).
TEST(FusedAddRmsNormBackend, CudaRejectsHostTensorsAndWritesNothing) {
  TEJAS_SEEDED_TEST_RNG();
  HostTensor x(DType::f32, {2, 8}), res(DType::f32, {2, 8}), w(DType::f32, {8}), out(DType::f32, {2, 8});
  check::fill_normal(x, rng);
  check::fill_normal(res, rng);
  check::fill_normal(w, rng);
  const auto res_before = optest::bits_of(res), out_before = optest::bits_of(out);
  ExecContext ctx;
  ctx.backend = Backend::cuda;
  TEJAS_EXPECT_INVALID(fused_add_rms_norm(ctx, x, res, w, kEps, out), "fused_add_rms_norm: x: expected a cuda tensor");
  EXPECT_TRUE(optest::unchanged(res, res_before));
  EXPECT_TRUE(optest::unchanged(out, out_before));
}

}  // namespace
