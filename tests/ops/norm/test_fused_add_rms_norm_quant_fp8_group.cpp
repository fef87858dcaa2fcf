// fused_add_rms_norm_quant_fp8_group, reference backend, against independent long-double math:
// the stored residual, f32 and ue8m0 group scales, e4m3 codes; non-finite groups; zero rows;
// column-major scales. Validation rules: test_norm_quant_validation.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "support/op_snapshots.h"
#include "ops/norm/quant_math.h"
#include "support/seed.h"
#include "tejas/norm.h"

using namespace tejas;
using namespace tejas::normtest;
using check::HostTensor;

namespace {

constexpr double kEps = 1e-6;

ExecContext reference_ctx() {
  ExecContext ctx;
  ctx.backend = Backend::reference;
  return ctx;
}

// The scale a group gets, from the long-double math: f32 rounding to nearest or ue8m0 rounding up.
long double expected_scale(long double amax, DType scale_dtype) {
  const long double raw = raw_scale(amax);
  if (std::isnan(raw)) return raw;
  return scale_dtype == DType::ue8m0 ? pow2_ceil(raw) : static_cast<long double>(static_cast<float>(raw));
}

// Scales and codes of every group against the math on the stored residual rows.
void expect_matches_math(const HostTensor& res_after, const HostTensor& w, const HostTensor& q, const TensorView& sv) {
  const int64_t T = q.shape()[0], H = q.shape()[1];
  for (int64_t t = 0; t < T; ++t) {
    const auto y = clamped_y(res_after, w, t, kEps);
    for (int64_t h0 = 0; h0 < H; h0 += kGroup) {
      const int64_t g = h0 / kGroup;
      const long double s = expected_scale(group_amax(y, h0), sv.dtype);
      const double got = scale_at(sv, t, g);
      if (std::isnan(s)) {
        EXPECT_TRUE(std::isnan(got)) << "scale [" << t << ", " << g << "]";
      } else {
        EXPECT_EQ(got, static_cast<double>(s)) << "scale [" << t << ", " << g << "]";
      }
      for (int64_t h = h0; h < h0 + kGroup; ++h) {
        const uint64_t code = q.bits_flat(t * H + h);
        if (std::isnan(s)) {
          ASSERT_TRUE(optest::e4m3_is_nan(code)) << "q [" << t << ", " << h << "]";
        } else {
          ASSERT_EQ(code, optest::e4m3_code_by_search(y[static_cast<size_t>(h)] / s)) << "q [" << t << ", " << h << "]";
        }
      }
    }
  }
}

// residual + x rounded once to residual's dtype (long double sum, then the HostTensor's rounding).
HostTensor expected_residual(const HostTensor& res, const HostTensor& x) {
  HostTensor want(res.dtype(), res.shape());
  for (int64_t t = 0; t < res.shape()[0]; ++t)
    for (int64_t h = 0; h < res.shape()[1]; ++h)
      want.set({t, h}, static_cast<double>(static_cast<long double>(res.get({t, h})) + x.get({t, h})));
  return want;
}

struct Combo {
  DType x, w, res, scales;
};
constexpr Combo kCombos[] = {{DType::bf16, DType::bf16, DType::bf16, DType::f32},
                             {DType::bf16, DType::f32, DType::f32, DType::ue8m0},
                             {DType::f16, DType::f16, DType::f32, DType::f32},
                             {DType::f32, DType::f32, DType::bf16, DType::ue8m0}};

TEST(FusedAddRmsNormQuantFp8Group, MatchesLongDoubleMath) {
  TEJAS_SEEDED_TEST_RNG();
  struct Shape {
    int64_t T, H, pad;
  };
  for (const Combo& c : kCombos) {
    for (const Shape& s : {Shape{1, 128, 0}, Shape{3, 384, 8}, Shape{2, 1024, 0}}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(c.x) << " x, " << dtype_name(c.res) << " residual, "
                                        << dtype_name(c.scales) << " scales, T=" << s.T << " H=" << s.H);
      HostTensor x(c.x, {s.T, s.H}, s.pad), res(c.res, {s.T, s.H}, s.pad), w(c.w, {s.H});
      HostTensor q(DType::e4m3, {s.T, s.H}, s.pad), scales(c.scales, {s.T, s.H / kGroup});
      check::fill_normal(x, rng, 0.0, 2.0);
      check::fill_normal(res, rng, 0.0, 2.0);
      check::fill_normal(w, rng, 1.0, 0.5);
      const HostTensor want_res = expected_residual(res, x);
      TEJAS_ASSERT_OK(fused_add_rms_norm_quant_fp8_group(reference_ctx(), x, res, w, kEps, q, scales));
      const auto r = check::compare_exact(res, want_res);
      EXPECT_TRUE(r.ok) << "residual: " << r.message;
      expect_matches_math(res, w, q, scales.view());
      EXPECT_TRUE(q.padding_intact() && q.guards_intact() && scales.guards_intact());
    }
  }
}

TEST(FusedAddRmsNormQuantFp8Group, ColumnMajorScales) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t T = 3, H = 512, G = H / kGroup, kTPad = 4;
  HostTensor x(DType::bf16, {T, H}), res(DType::bf16, {T, H}), w(DType::bf16, {H}), q(DType::e4m3, {T, H});
  HostTensor store(DType::f32, {G, kTPad});  // [G, T_pad] memory, viewed as [T, G] with strides [1, T_pad]
  check::fill_normal(x, rng);
  check::fill_normal(res, rng);
  check::fill_normal(w, rng, 1.0, 0.5);
  TensorView sv = store.view();
  sv.shape[0] = T;
  sv.shape[1] = G;
  sv.stride[0] = 1;
  sv.stride[1] = kTPad;
  TEJAS_ASSERT_OK(fused_add_rms_norm_quant_fp8_group(reference_ctx(), x, res, w, kEps, q, sv));
  expect_matches_math(res, w, q, sv);
  for (int64_t g = 0; g < G; ++g) EXPECT_EQ(store.bits_flat(g * kTPad + T), 0xFFFFFFFFu) << "padding untouched";
}

// NaN anywhere in a row makes every group of it NaN; an infinite weight saturates its element to
// the group's largest code (y clamped to FLT_MAX); an all-zero row gets the floor scale.
TEST(FusedAddRmsNormQuantFp8Group, NonFiniteAndZeroRows) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t T = 3, H = 256, kNanRow = 0, kZeroRow = 2, kInfCol = 130;
  for (DType sd : {DType::f32, DType::ue8m0}) {
    SCOPED_TRACE(dtype_name(sd));
    HostTensor x(DType::bf16, {T, H}), res(DType::bf16, {T, H}), w(DType::f32, {H}), q(DType::e4m3, {T, H});
    HostTensor scales(sd, {T, H / kGroup});
    check::fill_normal(x, rng);
    check::fill_normal(res, rng);
    check::fill_normal(w, rng, 1.0, 0.5);
    x.set({kNanRow, 5}, std::numeric_limits<double>::quiet_NaN());
    w.set({kInfCol}, std::numeric_limits<double>::infinity());
    // The stored residual under the infinite weight must be nonzero (0 * Inf is NaN): random
    // bf16 draws are sometimes exact negatives of each other.
    x.set({1, kInfCol}, 1.0);
    res.set({1, kInfCol}, 0.5);
    for (int64_t h = 0; h < H; ++h) {
      x.set({kZeroRow, h}, 0.0);
      res.set({kZeroRow, h}, 0.0);
    }
    TEJAS_ASSERT_OK(fused_add_rms_norm_quant_fp8_group(reference_ctx(), x, res, w, kEps, q, scales));
    expect_matches_math(res, w, q, scales.view());
    for (int64_t g = 0; g < H / kGroup; ++g) EXPECT_TRUE(std::isnan(scale_at(scales.view(), kNanRow, g)));
    // FLT_MAX / f32(FLT_MAX / 448) = 448; FLT_MAX / 2^120 (ue8m0 rounds up) = 256 (code 0x78).
    constexpr uint64_t kCode256 = 0x78;
    const uint64_t want = sd == DType::f32 ? static_cast<uint64_t>(optest::kE4m3MaxCode) : kCode256;
    EXPECT_EQ(q.bits_flat(1 * H + kInfCol) & 0x7F, want);
    // Group 0 of the zero row: floor scale, zero codes (its group 1 holds 0 * Inf = NaN).
    for (int64_t h = 0; h < kGroup; ++h) EXPECT_EQ(q.bits_flat(kZeroRow * H + h) & 0x7F, 0u);
    EXPECT_TRUE(std::isnan(scale_at(scales.view(), kZeroRow, 1)));
  }
}

}  // namespace
