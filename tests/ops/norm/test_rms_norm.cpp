// rms_norm (reference backend) against independent long-double math, FP8 output, non-finite
// inputs and backend selection. Validation rules live in test_norm_validation.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "ops/norm/norm_math.h"
#include "support/op_snapshots.h"
#include "support/poison.h"
#include "support/seed.h"
#include "tejas/norm.h"

using namespace tejas;
using check::HostTensor;
using normtest::rms_row;
using normtest::row_of;

namespace {

constexpr double kEps = 1e-6;
constexpr int64_t kOneUlp = 1;  // the reference rounds once; long double vs double may straddle a tie
const check::Tolerance kOneRounding{0.0, 0.0, kOneUlp};

ExecContext reference_ctx() {
  ExecContext ctx;
  ctx.backend = Backend::reference;
  return ctx;
}

// x rows get magnitudes spread over 10^-3 .. 10^3 so the rms differs row to row.
void fill_rows(HostTensor& x, check::Rng& rng) {
  for (int64_t t = 0; t < x.shape()[0]; ++t) {
    const double row_scale = std::pow(10.0, rng.uniform(-3.0, 3.0));
    for (int64_t h = 0; h < x.shape()[1]; ++h) x.set({t, h}, rng.normal(0.0, row_scale));
  }
}

HostTensor expected_out(const HostTensor& x, const HostTensor& w, DType out_dtype) {
  HostTensor want(out_dtype, x.shape());
  for (int64_t t = 0; t < x.shape()[0]; ++t) {
    const auto y = rms_row(row_of(x, t), w, kEps);
    for (int64_t h = 0; h < x.shape()[1]; ++h) want.set({t, h}, static_cast<double>(y[static_cast<size_t>(h)]));
  }
  return want;
}

struct Shape {
  int64_t T, H, pad;
};
// T = 1, 3, 1023 (small H for the large T), H = 1, odd, 4104; padded token strides.
constexpr Shape kShapes[] = {{1, 1, 0}, {3, 7, 0}, {1023, 5, 3}, {2, 4104, 0}, {3, 33, 8}, {1, 4104, 5}};

struct DTypes {
  DType x, w;
};
constexpr DTypes kDTypes[] = {{DType::bf16, DType::bf16}, {DType::bf16, DType::f32}, {DType::f16, DType::f16},
                              {DType::f16, DType::f32},   {DType::f32, DType::f32}};

TEST(RmsNorm, MatchesLongDoubleMath) {
  TEJAS_SEEDED_TEST_RNG();
  for (const DTypes& d : kDTypes) {
    for (const Shape& s : kShapes) {
      SCOPED_TRACE(::testing::Message() << dtype_name(d.x) << " x, " << dtype_name(d.w) << " weight, T=" << s.T
                                        << " H=" << s.H << " pad=" << s.pad);
      HostTensor x(d.x, {s.T, s.H}, s.pad), w(d.w, {s.H}), out(d.x, {s.T, s.H}, s.pad);
      fill_rows(x, rng);
      check::fill_normal(w, rng, 1.0, 0.5);
      const auto x_before = optest::bits_of(x);
      TEJAS_ASSERT_OK(rms_norm(reference_ctx(), x, w, kEps, out));
      const auto r = check::compare(out, expected_out(x, w, d.x), kOneRounding);
      EXPECT_TRUE(r.ok) << r.message;
      EXPECT_TRUE(optest::unchanged(x, x_before)) << "x is an input";
      EXPECT_TRUE(out.padding_intact() && out.guards_intact());
    }
  }
}

TEST(RmsNorm, InPlaceMatchesOutOfPlace) {
  TEJAS_SEEDED_TEST_RNG();
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    HostTensor x(dt, {5, 96}, 4), w(DType::f32, {96}), out(dt, {5, 96}, 4);
    fill_rows(x, rng);
    check::fill_normal(w, rng, 1.0, 0.5);
    TEJAS_ASSERT_OK(rms_norm(reference_ctx(), x, w, kEps, out));
    TEJAS_ASSERT_OK(rms_norm(reference_ctx(), x, w, kEps, x));  // out is exactly x
    const auto r = check::compare_exact(x, out);
    EXPECT_TRUE(r.ok) << dtype_name(dt) << ": " << r.message;
  }
}

TEST(RmsNorm, EpsKeepsZeroRowFinite) {
  HostTensor x(DType::f32, {1, 4}), w(DType::f32, {4}), out(DType::f32, {1, 4});
  for (int64_t h = 0; h < 4; ++h) {
    x.set({0, h}, 0.0);
    w.set({h}, 1.0);
  }
  TEJAS_ASSERT_OK(rms_norm(reference_ctx(), x, w, kEps, out));
  for (int64_t h = 0; h < 4; ++h) EXPECT_EQ(out.get({0, h}), 0.0);
}

// A NaN poisons its own row only; an Inf gives NaN at its position and zeros elsewhere in the row.
TEST(RmsNorm, NonFiniteStaysInItsRow) {
  TEJAS_SEEDED_TEST_RNG();
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    SCOPED_TRACE(dtype_name(dt));
    constexpr int64_t T = 4, H = 9, kNanRow = 1, kInfRow = 2, kInfCol = 3;
    HostTensor x(dt, {T, H}), w(dt, {H}), out(dt, {T, H});
    fill_rows(x, rng);
    check::fill_normal(w, rng, 1.0, 0.5);
    HostTensor want = expected_out(x, w, dt);  // before the non-finite values go in
    x.set({kNanRow, 5}, std::numeric_limits<double>::quiet_NaN());
    x.set({kInfRow, kInfCol}, -std::numeric_limits<double>::infinity());
    TEJAS_ASSERT_OK(rms_norm(reference_ctx(), x, w, kEps, out));
    for (int64_t h = 0; h < H; ++h) {
      EXPECT_TRUE(std::isnan(out.get({kNanRow, h}))) << "h=" << h;
      if (h == kInfCol) EXPECT_TRUE(std::isnan(out.get({kInfRow, h})));
      else EXPECT_EQ(out.get({kInfRow, h}), 0.0) << "h=" << h;
      for (int64_t t : {int64_t{0}, T - 1})  // the other rows are untouched by the non-finite ones
        EXPECT_LE(check::ulp_distance(dt, out.bits_flat(t * H + h), want.bits_flat(t * H + h)), kOneUlp)
            << "t=" << t << " h=" << h;
    }
  }
}

// ---- FP8 output ------------------------------------------------------------------------------

// Expected codes and (dynamic) scales, from the long-double math and the search encoder.
void expect_fp8(const HostTensor& x, const HostTensor& w, const HostTensor& out, const HostTensor& scale,
                bool dynamic) {
  HostTensor want(DType::e4m3, out.shape()), want_scale(DType::f32, scale.shape());
  for (int64_t t = 0; t < x.shape()[0]; ++t) {
    const auto y = rms_row(row_of(x, t), w, kEps);
    const float s = dynamic ? normtest::dynamic_scale(y) : static_cast<float>(scale.get({0}));
    if (dynamic) want_scale.set({t}, s);
    for (int64_t h = 0; h < x.shape()[1]; ++h)
      want.set_bits_flat(t * x.shape()[1] + h, optest::e4m3_code_by_search(y[static_cast<size_t>(h)] / s));
  }
  const auto r = check::compare_exact(out, want);
  EXPECT_TRUE(r.ok) << "codes: " << r.message;
  if (dynamic) {
    const auto rs = check::compare_exact(scale, want_scale);
    EXPECT_TRUE(rs.ok) << "scales: " << rs.message;
  }
}

Fp8Scale fp8(const HostTensor& scale, Fp8ScaleMode mode) {
  Fp8Scale s;
  s.scale = scale.view();
  s.mode = mode;
  return s;
}

TEST(RmsNormFp8, DynamicCodesAndScalesExact) {
  TEJAS_SEEDED_TEST_RNG();
  for (const DTypes& d : kDTypes) {
    for (const Shape& s : {Shape{3, 257, 0}, Shape{1, 4104, 0}, Shape{1023, 3, 2}, Shape{2, 1, 0}}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(d.x) << " T=" << s.T << " H=" << s.H);
      HostTensor x(d.x, {s.T, s.H}, s.pad), w(d.w, {s.H}), out(DType::e4m3, {s.T, s.H}, s.pad), scale(DType::f32, {s.T});
      fill_rows(x, rng);
      check::fill_normal(w, rng, 1.0, 0.5);
      TEJAS_ASSERT_OK(rms_norm(reference_ctx(), x, w, kEps, out, fp8(scale, Fp8ScaleMode::dynamic_per_token)));
      expect_fp8(x, w, out, scale, /*dynamic=*/true);
      // Each row's largest |y| lands on +-448 (the scale is chosen for it).
      for (int64_t t = 0; t < s.T; ++t) {
        bool hit_max = false;
        for (int64_t h = 0; h < s.H; ++h) hit_max |= (out.bits_flat(t * s.H + h) & 0x7F) == optest::kE4m3MaxCode;
        EXPECT_TRUE(hit_max) << "row " << t;
      }
    }
  }
}

TEST(RmsNormFp8, StaticScaleSaturatesHugeValues) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr double kTinyScale = 1.0 / 1024;  // |y| ~ 1 -> |y / s| ~ 1000 > 448 for many elements
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    HostTensor x(dt, {4, 64}), w(DType::f32, {64}), out(DType::e4m3, {4, 64}), scale(DType::f32, {1});
    check::fill_normal(x, rng);
    check::fill_normal(w, rng, 1.0, 0.5);
    scale.set({0}, kTinyScale);
    TEJAS_ASSERT_OK(rms_norm(reference_ctx(), x, w, kEps, out, fp8(scale, Fp8ScaleMode::static_per_tensor)));
    expect_fp8(x, w, out, scale, /*dynamic=*/false);
    int saturated_pos = 0, saturated_neg = 0;
    for (int64_t i = 0; i < out.numel(); ++i) {
      saturated_pos += out.bits_flat(i) == optest::kE4m3MaxCode;
      saturated_neg += out.bits_flat(i) == (optest::kE4m3Sign | optest::kE4m3MaxCode);
    }
    EXPECT_GT(saturated_pos, 0);
    EXPECT_GT(saturated_neg, 0);
    EXPECT_EQ(scale.get({0}), kTinyScale) << "a static scale is an input";
  }
}

TEST(RmsNormFp8, AllZeroRowGetsFloorScaleAndZeroCodes) {
  HostTensor x(DType::bf16, {2, 16}), w(DType::bf16, {16}), out(DType::e4m3, {2, 16}), scale(DType::f32, {2});
  for (int64_t h = 0; h < 16; ++h) {
    x.set({0, h}, 0.0);
    x.set({1, h}, h - 8.0);
    w.set({h}, 1.0);
  }
  TEJAS_ASSERT_OK(rms_norm(reference_ctx(), x, w, kEps, out, fp8(scale, Fp8ScaleMode::dynamic_per_token)));
  EXPECT_EQ(scale.get({0}), static_cast<double>(static_cast<float>(1e-10 / 448.0)));
  for (int64_t h = 0; h < 16; ++h) EXPECT_EQ(out.bits_flat(h), 0u) << h;
  expect_fp8(x, w, out, scale, /*dynamic=*/true);
}

// Under each poison byte (tests/support/poison.h): the default 0xFF already reads as NaN.
TEST(RmsNormFp8, NanRowGetsNanScaleAndCodes) {
  TEJAS_SEEDED_TEST_RNG();
  HostTensor x(DType::f16, {3, 20}), w(DType::f16, {20});
  fill_rows(x, rng);
  check::fill_normal(w, rng, 1.0, 0.5);
  x.set({1, 7}, std::numeric_limits<double>::quiet_NaN());
  testsupport::for_each_poison([&] {
    HostTensor out(DType::e4m3, {3, 20}), scale(DType::f32, {3});
    TEJAS_ASSERT_OK(rms_norm(reference_ctx(), x, w, kEps, out, fp8(scale, Fp8ScaleMode::dynamic_per_token)));
    EXPECT_TRUE(std::isnan(scale.get({1})));
    for (int64_t h = 0; h < 20; ++h) EXPECT_TRUE(optest::e4m3_is_nan(out.bits_flat(20 + h))) << h;
    EXPECT_TRUE(std::isfinite(scale.get({0})) && std::isfinite(scale.get({2})));
    expect_fp8(x, w, out, scale, /*dynamic=*/true);  // rows 0 and 2 exact; row 1 NaN both sides
  });
}

// Static scale: a NaN element makes y's whole row NaN (it enters the row's sum of squares), so
// every code of that row is NaN; the other row stays finite.
TEST(RmsNormFp8, StaticScaleNanElementMakesItsRowNan) {
  TEJAS_SEEDED_TEST_RNG();
  HostTensor x(DType::f32, {2, 8}), w(DType::f32, {8}), scale(DType::f32, {1});
  check::fill_normal(x, rng);
  check::fill_normal(w, rng, 1.0, 0.5);
  scale.set({0}, 0.01);
  x.set({0, 2}, std::numeric_limits<double>::quiet_NaN());
  testsupport::for_each_poison([&] {
    HostTensor out(DType::e4m3, {2, 8});
    TEJAS_ASSERT_OK(rms_norm(reference_ctx(), x, w, kEps, out, fp8(scale, Fp8ScaleMode::static_per_tensor)));
    for (int64_t h = 0; h < 8; ++h) EXPECT_TRUE(optest::e4m3_is_nan(out.bits_flat(h))) << "NaN row, h=" << h;
    for (int64_t h = 0; h < 8; ++h) EXPECT_FALSE(optest::e4m3_is_nan(out.bits_flat(8 + h))) << "clean row, h=" << h;
  });
}

// The static scale's value is a content check: the reference always makes it.
TEST(RmsNormFp8, StaticScaleMustBeFinitePositive) {
  for (double bad : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    SCOPED_TRACE(bad);
    HostTensor x(DType::bf16, {2, 8}), w(DType::bf16, {8}), out(DType::e4m3, {2, 8}), scale(DType::f32, {1});
    for (int64_t i = 0; i < 16; ++i) x.set_flat(i, 1.0);
    for (int64_t i = 0; i < 8; ++i) w.set_flat(i, 1.0);
    scale.set({0}, bad);
    const auto before = optest::bits_of(out);
    TEJAS_EXPECT_INVALID(rms_norm(reference_ctx(), x, w, kEps, out, fp8(scale, Fp8ScaleMode::static_per_tensor)),
                         "rms_norm: out_scale.scale: expected");
    EXPECT_TRUE(optest::unchanged(out, before));
  }
}

// ---- backends --------------------------------------------------------------------------------

TEST(RmsNormBackend, AutomaticPicksReferenceForHostTensors) {
  TEJAS_SEEDED_TEST_RNG();
  HostTensor x(DType::f32, {2, 8}), w(DType::f32, {8}), out(DType::f32, {2, 8});
  check::fill_normal(x, rng);
  check::fill_normal(w, rng);
  TEJAS_ASSERT_OK(rms_norm(ExecContext{}, x, w, kEps, out));
  const auto r = check::compare(out, expected_out(x, w, DType::f32), kOneRounding);
  EXPECT_TRUE(r.ok) << r.message;
}

// The emulator runs the kernel (test_rms_norm_kernel.cpp); host tensors cannot run on cuda, and
// that failure writes nothing.
TEST(RmsNormBackend, CudaRejectsHostTensorsAndWritesNothing) {
  TEJAS_SEEDED_TEST_RNG();
  HostTensor x(DType::f32, {2, 8}), w(DType::f32, {8}), out(DType::f32, {2, 8});
  check::fill_normal(x, rng);
  check::fill_normal(w, rng);
  ExecContext ctx;
  ctx.backend = Backend::emulator;
  TEJAS_ASSERT_OK(rms_norm(ctx, x, w, kEps, out));
  out.poison();
  ctx.backend = Backend::cuda;  // host tensors cannot run there
  TEJAS_EXPECT_INVALID(rms_norm(ctx, x, w, kEps, out), "rms_norm: x: expected a cuda tensor");
  for (int64_t i = 0; i < out.numel(); ++i) EXPECT_EQ(out.bits_flat(i), 0xFFFFFFFFu) << "poison must survive";
}

}  // namespace
