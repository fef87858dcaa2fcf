// quant_fp8_group / dequant_fp8_group (reference backend) against expectations computed in the
// test (quant_expect.h).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "ops/quant/quant_expect.h"
#include "support/seed.h"
#include "tejas/quant.h"

using namespace tejas;
using namespace tejas::quanttest;

namespace {

constexpr int kGroup = 128;
constexpr int kMagSpread = 8;  // per-group magnitudes 2^-8 .. 2^8 (inside f16's range)
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr long double kF32HalfUlpRel = 0x1p-24L;

ExecContext ref_ctx() {
  ExecContext ctx;
  ctx.backend = Backend::reference;
  return ctx;
}

// Normal values with a random power-of-two magnitude per group, so group amaxes differ.
void fill_grouped(HostTensor& x, check::Rng& rng, int64_t group) {
  const int64_t K = x.shape().back();
  double mag = 1;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if ((i % K) % group == 0) mag = std::ldexp(1.0, static_cast<int>(rng.randint(-kMagSpread, kMagSpread)));
    x.set_flat(i, rng.normal() * mag);
  }
}

std::vector<int64_t> scale_shape(std::vector<int64_t> shape, int64_t group) {
  shape.back() /= group;
  return shape;
}

// Quantizes x (already filled) and checks every code against the test's expectation.
void run_and_check(const HostTensor& x, DType scale_dtype, int group, int64_t pad = 0) {
  HostTensor q(DType::e4m3, x.shape(), pad), scales(scale_dtype, scale_shape(x.shape(), group), pad);
  TEJAS_ASSERT_OK(quant_fp8_group(ref_ctx(), x, q, scales, group));
  expect_matches(q, scales, expect_fp8_group(x, scale_dtype, group));
  expect_only_view_written(q, "q");
  expect_only_view_written(scales, "scales");
}

}  // namespace

TEST(QuantFp8Group, RandomInputsExactCodes) {
  TEJAS_SEEDED_TEST_RNG();
  for (DType xd : {DType::f32, DType::bf16, DType::f16}) {
    for (DType sd : {DType::f32, DType::ue8m0}) {
      SCOPED_TRACE(testing::Message() << "x " << dtype_name(xd) << " scales " << dtype_name(sd));
      HostTensor x(xd, {5, 2 * kGroup});
      fill_grouped(x, rng, kGroup);
      run_and_check(x, sd, kGroup);
    }
  }
}

TEST(QuantFp8Group, OtherGroupSizes) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t K = 192;
  for (int group : {1, 3, 16, 64, 192}) {
    SCOPED_TRACE(testing::Message() << "group " << group);
    HostTensor x(DType::f32, {3, K});
    fill_grouped(x, rng, group);
    run_and_check(x, group % 2 ? DType::f32 : DType::ue8m0, group);
  }
}

TEST(QuantFp8Group, HostileShapesAndStrides) {
  TEJAS_SEEDED_TEST_RNG();
  struct Shape {
    std::vector<int64_t> dims;
    int64_t pad;  // row padding of x, q and scales (non-contiguous rows)
  };
  const Shape shapes[] = {{{1, 128}, 0},    {{3, 4224}, 0},    {{1023, 128}, 0}, {{2, 3, 256}, 0},
                          {{3, 256}, 5},    {{7, 384}, 128},   {{2, 3, 128}, 1}};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(testing::Message() << "shape " << ::testing::PrintToString(s.dims) << " pad " << s.pad);
    HostTensor x(DType::bf16, s.dims, s.pad);
    fill_grouped(x, rng, kGroup);
    run_and_check(x, rng.randint(0, 1) ? DType::f32 : DType::ue8m0, kGroup, s.pad);
  }
}

TEST(QuantFp8Group, Ue8m0ScalesRoundUpSoNothingClips) {
  TEJAS_SEEDED_TEST_RNG();
  HostTensor x(DType::f32, {16, 2 * kGroup});
  fill_grouped(x, rng, kGroup);
  // Row 0, group 0: amax exactly 448 * 2^3 (scale exactly 2^3, |q| = 448 legitimately).
  x.set({0, 5}, -448.0 * 8);
  HostTensor q(DType::e4m3, x.shape()), scales(DType::ue8m0, {16, 2});
  TEJAS_ASSERT_OK(quant_fp8_group(ref_ctx(), x, q, scales, kGroup));
  expect_matches(q, scales, expect_fp8_group(x, DType::ue8m0, kGroup));
  EXPECT_EQ(scales.bits_flat(0), static_cast<uint64_t>(3 + kUe8m0Bias));
  for (int64_t r = 0; r < 16; ++r) {
    for (int64_t g = 0; g < 2; ++g) {
      const long double s = fp::decode(DType::ue8m0, scales.bits_flat(r * 2 + g));
      long double amax = 0;
      for (int64_t k = g * kGroup; k < (g + 1) * kGroup; ++k) {
        const long double u = std::fabs(x_value(x, r * 2 * kGroup + k)) / s;
        EXPECT_LE(u, kMaxE4m3) << "x / s would clip at [" << r << ", " << k << "]";
        amax = std::max(amax, u * s);
      }
      EXPECT_GE(s, amax / kMaxE4m3);      // rounded up ...
      EXPECT_LT(s, 2 * amax / kMaxE4m3);  // ... by less than a factor of two
    }
  }
}

TEST(QuantFp8Group, AllZeroGroupUsesMinAmax) {
  for (DType sd : {DType::f32, DType::ue8m0}) {
    HostTensor x(DType::f32, {2, kGroup}), q(DType::e4m3, {2, kGroup}), scales(sd, {2, 1});
    for (int64_t i = 0; i < x.numel(); ++i) x.set_flat(i, i < kGroup ? 0.0 : -0.0);
    TEJAS_ASSERT_OK(quant_fp8_group(ref_ctx(), x, q, scales, kGroup));
    const long double want_scale =
        sd == DType::f32 ? static_cast<float>(static_cast<long double>(kFp8MinAmax) / 448) : fp::pow2(-42);  // 2^-42 >= 1e-10/448 > 2^-43
    EXPECT_EQ(fp::decode(sd, scales.bits_flat(0)), want_scale);
    EXPECT_EQ(fp::decode(sd, scales.bits_flat(1)), want_scale);
    for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(q.bits_flat(i), i < kGroup ? 0x00u : 0x80u) << i;
  }
}

TEST(QuantFp8Group, NanGivesNanScaleAndInfSaturates) {
  TEJAS_SEEDED_TEST_RNG();
  for (DType sd : {DType::f32, DType::ue8m0}) {
    HostTensor x(DType::f32, {2, 3 * kGroup});
    fill_grouped(x, rng, kGroup);
    x.set({0, 130}, kNaN);   // row 0, group 1
    x.set({1, 10}, kInf);    // row 1, group 0
    x.set({1, 20}, -kInf);
    x.set({1, 300}, -kInf);  // row 1, group 2: alone
    HostTensor q(DType::e4m3, x.shape()), scales(sd, {2, 3});
    TEJAS_ASSERT_OK(quant_fp8_group(ref_ctx(), x, q, scales, kGroup));
    expect_matches(q, scales, expect_fp8_group(x, sd, kGroup));
    // The documented specifics, spelled out.
    EXPECT_TRUE(std::isnan(fp::decode(sd, scales.bits_flat(1))));
    for (int64_t k = kGroup; k < 2 * kGroup; ++k) EXPECT_EQ(q.bits_flat(k), kE4m3NaN);
    EXPECT_FALSE(std::isnan(fp::decode(sd, scales.bits_flat(0))));
    // +-Inf acts as +-FLT_MAX: 448 with an f32 scale, 2^128 / 2^120 rounded = 256 with ue8m0.
    const uint64_t inf_code = sd == DType::f32 ? 0x7E : 0x78;
    EXPECT_EQ(q.bits_flat(3 * kGroup + 10), inf_code);
    EXPECT_EQ(q.bits_flat(3 * kGroup + 20), inf_code | 0x80);
    const long double flt_max = std::numeric_limits<float>::max();
    const long double inf_scale = sd == DType::f32 ? static_cast<float>(flt_max / 448) : fp::pow2(120);
    EXPECT_EQ(fp::decode(sd, scales.bits_flat(3)), inf_scale);
    EXPECT_EQ(fp::decode(sd, scales.bits_flat(5)), inf_scale);

    HostTensor out(DType::f32, x.shape());
    TEJAS_ASSERT_OK(dequant_fp8_group(ref_ctx(), q, scales, out, kGroup));
    for (int64_t i = 0; i < out.numel(); ++i) {
      const bool nan_group = i >= kGroup && i < 2 * kGroup;
      EXPECT_EQ(std::isnan(out.get_flat(i)), nan_group) << i;
    }
    // The saturated code dequantizes to 448 * s, rounded to f32: that may overflow back to Inf.
    const long double back = 448 * fp::decode(sd, scales.bits_flat(3));
    EXPECT_EQ(fp::decode(DType::f32, out.bits_flat(3 * kGroup + 10)), static_cast<float>(back));
  }
}

TEST(QuantFp8Group, HugeMagnitudesSaturateCleanly) {
  for (DType xd : {DType::f32, DType::bf16}) {
    HostTensor x(xd, {1, kGroup}), q(DType::e4m3, {1, kGroup}), scales(DType::f32, {1, 1});
    for (int64_t k = 0; k < kGroup; ++k) x.set({0, k}, (k % 2 ? -3.3e38 : 1e38) * (k + 1) / kGroup);
    TEJAS_ASSERT_OK(quant_fp8_group(ref_ctx(), x, q, scales, kGroup));
    expect_matches(q, scales, expect_fp8_group(x, DType::f32, kGroup));
    EXPECT_TRUE(std::isfinite(scales.get_flat(0)));
    EXPECT_EQ(q.bits_flat(kGroup - 1), 0xFEu);  // the amax element: -448
  }
}

TEST(QuantFp8Group, RoundTripWithinHalfACodeStep) {
  TEJAS_SEEDED_TEST_RNG();
  for (DType sd : {DType::f32, DType::ue8m0}) {
    HostTensor x(DType::f32, {9, 3 * kGroup});
    fill_grouped(x, rng, kGroup);
    HostTensor q(DType::e4m3, x.shape()), scales(sd, {9, 3}), out(DType::f32, x.shape());
    TEJAS_ASSERT_OK(quant_fp8_group(ref_ctx(), x, q, scales, kGroup));
    TEJAS_ASSERT_OK(dequant_fp8_group(ref_ctx(), q, scales, out, kGroup));
    int64_t bad = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const long double s = fp::decode(sd, scales.bits_flat(i / kGroup));
      const long double xv = x_value(x, i), got = fp::decode(DType::f32, out.bits_flat(i));
      const long double bound = half_step(DType::e4m3, std::fabs(xv) / s) * s + kF32HalfUlpRel * std::fabs(got);
      if (!(std::fabs(got - xv) <= bound) && bad++ < 5)
        ADD_FAILURE() << "at " << i << ": x " << static_cast<double>(xv) << " round trip " << static_cast<double>(got)
                      << " bound " << static_cast<double>(bound);
    }
  }
}

TEST(QuantFp8Group, DequantExact) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t M = 4, K = 2 * kGroup;
  constexpr int64_t kUe8m0Lo = 120, kUe8m0Hi = 134;  // 2^-7 .. 2^7: products exact in f16 and bf16
  constexpr long double kBf16HalfUlpRel = 0x1p-8L;
  for (DType sd : {DType::f32, DType::ue8m0}) {
    for (DType od : {DType::f32, DType::bf16, DType::f16}) {
      if (sd == DType::f32 && od == DType::f16) continue;  // products may leave f16's range
      SCOPED_TRACE(testing::Message() << "scales " << dtype_name(sd) << " out " << dtype_name(od));
      HostTensor q(DType::e4m3, {M, K}, 3), scales(sd, {M, 2}), out(od, {M, K}, 2);
      for (int64_t i = 0; i < q.numel(); ++i) {
        uint64_t c = static_cast<uint64_t>(rng.randint(0, 0xFF));
        if ((c & 0x7F) == 0x7F) c ^= 1;  // finite codes only here
        q.set_bits_flat(i, c);
      }
      for (int64_t i = 0; i < scales.numel(); ++i) {
        if (sd == DType::f32) scales.set_flat(i, rng.uniform(1e-3, 2.0));
        else scales.set_bits_flat(i, static_cast<uint64_t>(rng.randint(kUe8m0Lo, kUe8m0Hi)));
      }
      TEJAS_ASSERT_OK(dequant_fp8_group(ref_ctx(), q, scales, out, kGroup));
      expect_only_view_written(out, "out");
      for (int64_t i = 0; i < out.numel(); ++i) {
        const long double want = fp::decode(DType::e4m3, q.bits_flat(i)) *
                                 fp::decode(sd, scales.bits_flat(i / kGroup));
        const long double got = fp::decode(od, out.bits_flat(i));
        if (od == DType::f32) {
          ASSERT_EQ(got, static_cast<float>(want)) << i;
        } else if (sd == DType::ue8m0) {
          ASSERT_EQ(got, want) << i;  // exact in bf16 and f16
        } else {
          ASSERT_LE(std::fabs(got - want), kBf16HalfUlpRel * std::fabs(want)) << i;
        }
      }
    }
  }
}

// M = 0 or K = 0: nothing to do, on every host backend (no launch on the kernel ones), for every
// quant op; nothing written.
TEST(QuantFp8Group, EmptyTensorsAreFine) {
  for (Backend b : {Backend::reference, Backend::emulator}) {
    SCOPED_TRACE(backend_name(b));
    ExecContext ctx;
    ctx.backend = b;
    HostTensor x(DType::f32, {0, kGroup}), q(DType::e4m3, {0, kGroup}), scales(DType::f32, {0, 1});
    TEJAS_ASSERT_OK(quant_fp8_group(ctx, x, q, scales, kGroup));
    TEJAS_ASSERT_OK(dequant_fp8_group(ctx, q, scales, x, kGroup));
    HostTensor x2(DType::f32, {3, 0}), q2(DType::e4m3, {3, 0}), s2(DType::f32, {3, 0});
    TEJAS_ASSERT_OK(quant_fp8_group(ctx, x2, q2, s2, kGroup));
    TEJAS_ASSERT_OK(dequant_fp8_group(ctx, q2, s2, x2, kGroup));
    for (MxFormat f : {MxFormat::mxfp8, MxFormat::mxfp4, MxFormat::nvfp4}) {
      SCOPED_TRACE(mx_format_name(f));
      const int64_t B = mx_block_size(f);
      const DType qd = f == MxFormat::mxfp8 ? DType::e4m3 : DType::e2m1;
      const DType sd = f == MxFormat::nvfp4 ? DType::e4m3 : DType::ue8m0;
      HostTensor ts(DType::f32, {1});
      ts.set_flat(0, 0.5);
      const TensorView tsv = f == MxFormat::nvfp4 ? ts.view() : TensorView{};
      HostTensor xm(DType::bf16, {0, B}), qm(qd, {0, B}), sm(sd, {0, 1});
      TEJAS_ASSERT_OK(quant_mx(ctx, f, xm, qm, sm, tsv));
      TEJAS_ASSERT_OK(dequant_mx(ctx, f, qm, sm, tsv, xm));
      HostTensor xk(DType::bf16, {2, 0}), qk(qd, {2, 0}), sk(sd, {2, 0});
      TEJAS_ASSERT_OK(quant_mx(ctx, f, xk, qk, sk, tsv));
      TEJAS_ASSERT_OK(dequant_mx(ctx, f, qk, sk, tsv, xk));
      EXPECT_TRUE(qk.guards_intact() && sk.guards_intact());
    }
    EXPECT_TRUE(q2.guards_intact() && s2.guards_intact());
  }
}

TEST(QuantFp8Group, AutomaticBackendRunsReferenceOnHost) {
  TEJAS_SEEDED_TEST_RNG();
  HostTensor x(DType::f32, {2, kGroup}), q(DType::e4m3, {2, kGroup}), scales(DType::f32, {2, 1});
  fill_grouped(x, rng, kGroup);
  TEJAS_ASSERT_OK(quant_fp8_group(ExecContext{}, x, q, scales));  // default group 128
  expect_matches(q, scales, expect_fp8_group(x, DType::f32, kGroup));
}
