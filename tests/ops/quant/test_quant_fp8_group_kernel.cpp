// quant_fp8_group / dequant_fp8_group kernels (emulator backend; cuda when a GPU is present)
// against the reference backend. The kernels compute exactly (src/ops/quant/quant_math.h), so
// codes, scales and outputs must match bit for bit: no tie tolerance is needed, and the
// near-tie tests below build inputs whose quotients sit on or next to rounding midpoints.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "check/cuda_mem.h"
#include "ops/quant/launch_plan.h"
#include "ops/quant/kernel_test_util.h"
#include "support/poison.h"
#include "support/seed.h"
#include "tejas/quant.h"

using namespace tejas;
using namespace tejas::quanttest;

namespace {

constexpr int kGroup = 128;
constexpr int kMagSpread = 8;  // per-group magnitudes 2^-8 .. 2^8 (inside f16's range)

struct QuantCase {
  DType x, scales;
  std::vector<int64_t> shape;
  int group = kGroup;
  int64_t pad = 0;         // row padding (elements) of x, q and scales
  int64_t x_misalign = 0;  // bytes past a 128-byte boundary
  int64_t q_misalign = 0;
};

std::vector<int64_t> scale_shape(std::vector<int64_t> s, int64_t group) {
  s.back() /= group;
  return s;
}

void fill_grouped(PlacedTensor& x, check::Rng& rng, int64_t group) {
  const int64_t K = x.shape().back();
  double mag = 1;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if ((i % K) % group == 0) mag = std::ldexp(1.0, static_cast<int>(rng.randint(-kMagSpread, kMagSpread)));
    x.set(i, rng.normal() * mag);
  }
}

// Runs the case on `backend` and on the reference with the same x; codes and scales must agree.
void check_quant(const QuantCase& c, const PlacedTensor& x) {
  const auto ss = scale_shape(c.shape, c.group);
  PlacedTensor q(DType::e4m3, c.shape, c.pad, c.q_misalign), s(c.scales, ss, c.pad);
  PlacedTensor q_ref(DType::e4m3, c.shape), s_ref(c.scales, ss);
  TEJAS_ASSERT_OK(quant_fp8_group(backend_ctx(Backend::reference), x, q_ref, s_ref, c.group));
  TEJAS_ASSERT_OK(run_kernel({&x}, {&q, &s}, [&c](const ExecContext& ctx, const std::vector<TensorView>& v) {
    return quant_fp8_group(ctx, v[0], v[1], v[2], c.group);
  }));
  expect_same_bits(q, q_ref, "q");
  expect_same_bits(s, s_ref, "scales");
  EXPECT_TRUE(q.outside_untouched()) << "q: wrote outside its view";
  EXPECT_TRUE(s.outside_untouched()) << "scales: wrote outside its view";
}

void run_random(const QuantCase& c, check::Rng& rng) {
  SCOPED_TRACE(testing::Message() << dtype_name(c.x) << " -> scales " << dtype_name(c.scales) << " shape "
                                  << testing::PrintToString(c.shape) << " group " << c.group << " pad " << c.pad
                                  << " misalign x " << c.x_misalign << " q " << c.q_misalign);
  PlacedTensor x(c.x, c.shape, c.pad, c.x_misalign);
  fill_grouped(x, rng, c.group);
  check_quant(c, x);
}

}  // namespace

namespace {
void quant_random_shapes(check::Rng& rng) {
  for (DType xd : {DType::bf16, DType::f16, DType::f32}) {
    for (DType sd : {DType::f32, DType::ue8m0}) {
      run_random({xd, sd, {1, 128}}, rng);
      run_random({xd, sd, {3, 384}}, rng);
      run_random({xd, sd, {19, 1152}}, rng);
    }
  }
  run_random({DType::bf16, DType::f32, {1, 16384}}, rng);
  run_random({DType::f16, DType::ue8m0, {2, 16384}}, rng);
  run_random({DType::bf16, DType::ue8m0, {2, 3, 256}}, rng);
}
}  // namespace

TEST(QuantFp8GroupKernel, RandomShapesMatchReference) {
  TEJAS_SEEDED_TEST_RNG();
  quant_random_shapes(rng);
}

namespace {
// Every group-size path; also run under each TEJAS_TUNE variant (TunedVariantsMatchReference).
void other_group_sizes(check::Rng& rng) {
  // 1 and 3: generic path (no 16-byte split); 4 (f32) and 8 (bf16): vectorized, one lane and
  // one chunk per group, 32 groups per warp (4 with bf16 x: generic); 16 .. 1024: vectorized with
  // 2 .. 32 lanes and up to 4 chunks; 192: 8 lanes x 3 chunks; 2048: too large for registers
  // (generic).
  for (int group : {1, 3, 4, 8, 16, 64, 192, 256, 1024, 2048}) {
    const int64_t K = group >= 1024 ? 2048 : 768;
    run_random({DType::bf16, group % 2 ? DType::f32 : DType::ue8m0, {3, K}, group}, rng);
    run_random({DType::f32, DType::f32, {2, K}, group}, rng);
  }
  // The one-lane plans of groups 8 (bf16) and 4 (f32): one 16-byte chunk per group.
  for (auto [xd, group] : {std::pair{DType::bf16, 8}, {DType::f32, 4}}) {
    PlacedTensor x(xd, {3, 768}), q(DType::e4m3, {3, 768}), s(DType::f32, {3, 768 / group});
    const quant_kernel::QuantConfig c =
        quant_kernel::quant_launch(
            quant_kernel::plan_quant(x, q, s, TensorView{}, group, quant_kernel::ScaleRule::fp8_f32), 0)
            .config;
    EXPECT_TRUE(c.vectorized && c.lanes_per_group == 1 && c.chunks == 1) << c.to_string();
  }
}
}  // namespace

TEST(QuantFp8GroupKernel, OtherGroupSizes) {
  TEJAS_SEEDED_TEST_RNG();
  other_group_sizes(rng);
}

void strided_and_misaligned(check::Rng& rng) {
  // Row padding that keeps 16-byte rows (8 bf16) and padding that breaks them (5).
  run_random({DType::bf16, DType::f32, {5, 256}, kGroup, 8}, rng);
  run_random({DType::bf16, DType::ue8m0, {5, 256}, kGroup, 5}, rng);
  run_random({DType::f32, DType::f32, {4, 384}, kGroup, 3}, rng);
  // Views starting 2 bytes (x) / 1 byte (q) past an aligned address: the generic path.
  run_random({DType::bf16, DType::f32, {3, 256}, kGroup, 0, 2, 0}, rng);
  run_random({DType::f16, DType::ue8m0, {3, 256}, kGroup, 0, 0, 1}, rng);
  run_random({DType::bf16, DType::f32, {2, 2, 128}, kGroup, 1, 2, 1}, rng);
}

TEST(QuantFp8GroupKernel, StridedAndMisalignedViews) {
  TEJAS_SEEDED_TEST_RNG();
  strided_and_misaligned(rng);
}

// As QuantMxKernel.LinearWalkOnlyWhereRowsLieEndToEnd, for the fp8 group rules (groups of 128 in
// 4 lanes x 4 chunks; f32 scales under version 6, ue8m0): the linear walk only where x's, q's and
// the scales' rows all lie end to end, or there is one row; the same codes either way.
TEST(QuantFp8GroupKernel, LinearWalkOnlyWhereRowsLieEndToEnd) {
  TEJAS_SEEDED_TEST_RNG();
  for (DType sd : {DType::f32, DType::ue8m0}) {
    SCOPED_TRACE(testing::Message() << "scales " << dtype_name(sd));
    for_each_walk_layout(5, [&](int padded, int64_t rows, int linear) {
      const std::vector<int64_t> shape{rows, 24 * kGroup};  // 5 rows: 2 blocks
      const auto ss = scale_shape(shape, kGroup);
      PlacedTensor x(DType::bf16, shape, padded == 0 ? 8 : 0);
      fill_grouped(x, rng, kGroup);
      PlacedTensor q(DType::e4m3, shape, padded == 1 ? 32 : 0), s(sd, ss, padded == 2 ? 4 : 0);
      PlacedTensor q_ref(DType::e4m3, shape), s_ref(sd, ss);
      const auto rule = sd == DType::f32 ? quant_kernel::ScaleRule::fp8_f32 : quant_kernel::ScaleRule::fp8_ue8m0;
      const quant_kernel::QuantLaunch l =
          quant_kernel::quant_launch(quant_kernel::plan_quant(x, q, s, TensorView{}, kGroup, rule), 0);
      ASSERT_TRUE(l.config.vectorized) << l.config.to_string();
      EXPECT_EQ(l.config.linear, walks_linearly(padded, rows, linear)) << l.config.to_string();
      TEJAS_ASSERT_OK(quant_fp8_group(backend_ctx(Backend::reference), x, q_ref, s_ref, kGroup));
      TEJAS_ASSERT_OK(quant_fp8_group(backend_ctx(Backend::emulator), x, q, s, kGroup));
      expect_same_bits(q, q_ref, "q");
      expect_same_bits(s, s_ref, "scales");
      EXPECT_TRUE(q.outside_untouched()) << "q: wrote outside its view";
      EXPECT_TRUE(s.outside_untouched()) << "scales: wrote outside its view";
    });
  }
}

void non_collapsible_leading_dims(check::Rng& rng) {
  // x is a [2, 3, 128] slice of a [2, 4, 128] buffer: its rows do not share one stride.
  PlacedTensor big(DType::bf16, {2, 4, 128});
  fill_grouped(big, rng, kGroup);
  TensorView x = big.view();
  x.shape[1] = 3;
  PlacedTensor q(DType::e4m3, {2, 3, 128}), s(DType::f32, {2, 3, 1});
  PlacedTensor q_ref(DType::e4m3, {2, 3, 128}), s_ref(DType::f32, {2, 3, 1});
  TEJAS_ASSERT_OK(quant_fp8_group(backend_ctx(Backend::emulator), x, q, s));
  TEJAS_ASSERT_OK(quant_fp8_group(backend_ctx(Backend::reference), x, q_ref, s_ref));
  expect_same_bits(q, q_ref, "q");
  expect_same_bits(s, s_ref, "scales");
  EXPECT_EQ(detail::last_emulator_reports().size(), 2u);  // one launch per index of the outer dim
}

TEST(QuantFp8GroupKernel, NonCollapsibleLeadingDims) {
  TEJAS_SEEDED_TEST_RNG();
  non_collapsible_leading_dims(rng);
}

void non_finite_zero_and_huge(check::Rng& rng) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  for (DType xd : {DType::f32, DType::bf16}) {
    for (DType sd : {DType::f32, DType::ue8m0}) {
      for (int64_t misalign : {0, 4}) {  // vectorized and generic paths
        const QuantCase c{xd, sd, {3, 4 * kGroup}, kGroup, 0, misalign};
        PlacedTensor x(xd, c.shape, 0, misalign);
        fill_grouped(x, rng, kGroup);
        x.set(130, kNaN);                       // row 0, group 1
        x.set(3 * kGroup + 7, kInf);            // row 0, group 3: +-Inf saturate
        x.set(3 * kGroup + 9, -kInf);
        for (int64_t k = 0; k < kGroup; ++k) {  // row 1, group 0: zeros of both signs
          x.set(4 * kGroup + k, k % 2 ? -0.0 : 0.0);
          x.set(5 * kGroup + k, k % 3 ? 1e-12 : -3e-11);  // row 1, group 1: below kFp8MinAmax
          x.set(6 * kGroup + k, (k % 2 ? -3.3e38 : 1e38) * (k + 1) / kGroup);  // group 2: huge
        }
        x.set(7 * kGroup + 5, kNaN);  // row 1, group 3: NaN next to Inf
        x.set(7 * kGroup + 6, -kInf);
        if (xd == DType::bf16) x.set(6 * kGroup, 0.0);  // bf16 overflow to Inf is fine too
        // NaN scales (f32 NaN, ue8m0 0xFF) equal the default poison: finite poisons too.
        testsupport::for_each_poison([&] { check_quant(c, x); });
      }
    }
  }
}

TEST(QuantFp8GroupKernel, NonFiniteZeroAndHuge) {
  TEJAS_SEEDED_TEST_RNG();
  non_finite_zero_and_huge(rng);
}

// x / s within an ulp or two of e4m3 rounding midpoints: the exact-rounding branch.
void near_ties_round_exactly(check::Rng& rng) {
  constexpr int kRows = 24;
  const QuantCase c{DType::f32, DType::f32, {kRows, kGroup}};
  PlacedTensor x(DType::f32, c.shape);
  int64_t near = 0;
  for (int64_t r = 0; r < kRows; ++r) {
    const double amax = 448.0 * rng.uniform(1.0, 2.0) * std::ldexp(1.0, static_cast<int>(rng.randint(-20, 20)));
    const float s = static_cast<float>(static_cast<float>(amax) / 448.0);  // the kernel's scale
    x.set(r * kGroup, static_cast<float>(amax));
    for (int64_t k = 1; k < kGroup; ++k) {
      // A random e4m3 midpoint below 448: (2m + 1) / 2 steps of a random binade.
      const int e = static_cast<int>(rng.randint(-9, 7));
      const double step = std::ldexp(1.0, std::max(e, -6) - 3);
      const double lo = (e < -6 ? rng.randint(0, 6) : rng.randint(8, 14)) * step;
      const double mid = (lo + step / 2) * (rng.randint(0, 1) ? 1 : -1);
      float v = static_cast<float>(mid * s);
      for (int64_t j = rng.randint(-2, 2); j != 0; j += j > 0 ? -1 : 1)
        v = std::nextafter(v, j > 0 ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity());
      x.set(r * kGroup + k, v);
      near += std::fabs(static_cast<long double>(v) / s - mid) <= 0x1p-20L * std::fabs(mid);
    }
  }
  EXPECT_GT(near, kRows * kGroup / 2) << "the inputs should sit next to midpoints";
  check_quant(c, x);
}

TEST(QuantFp8GroupKernel, NearTiesRoundExactly) {
  TEJAS_SEEDED_TEST_RNG();
  near_ties_round_exactly(rng);
}

// Whether the long double q is an e4m3 rounding midpoint below 448 (q > 0), checked exactly:
// 448 x == m amax in long double (products of 11-bit significands).
bool ideal_tie(long double x, long double amax) {
  const long double q = 448.0L * x / amax;
  if (!(q > 0.0L) || q >= 448.0L) return false;
  const long double step = std::ldexp(1.0L, std::max(std::ilogb(q), -6) - 3);
  const long double m = (std::floor(q / step) + 0.5L) * step;
  return 448.0L * x == m * amax;
}

// 16-bit x whose ideal quotients q0 = 448 x / amax are exact e4m3 midpoints: version 6's hard
// case (quant_math.h: s = RN(amax / 448) moves them off the midpoint all one way per group; s
// exact leaves them ties). Each group's amax (random sign) has a significand that is a multiple
// of 7 (s exact) in every other group, not in the others, among those with at least 8 such x
// (found by enumerating x's significands over 13 binades below amax); every other element is one
// of them, either sign. bf16 and f16; the default (version 6) and, under
// TunedVariantsMatchReference, every variant.
void ideal_ties_round_exactly(check::Rng& rng) {
  for (DType xd : {DType::bf16, DType::f16}) {
    const int mb = xd == DType::bf16 ? 7 : 10;  // significand bits after the leading one
    constexpr int64_t kRows = 6, kGroupsPerRow = 4;
    const QuantCase c{xd, DType::f32, {kRows, kGroupsPerRow * kGroup}};
    PlacedTensor x(xd, c.shape);
    for (int64_t g = 0; g < kRows * kGroupsPerRow; ++g) {
      const int ea = static_cast<int>(rng.randint(-1, 10));  // f16: every x below stays normal
      long double amax = 0.0L;
      std::vector<long double> ties;
      while (ties.size() < 8) {
        const int am = static_cast<int>(rng.randint(1 << mb, (2 << mb) - 1));
        if ((am % 7 == 0) != (g % 2 == 0)) continue;
        amax = std::ldexp(static_cast<long double>(am), ea - mb);
        ties.clear();
        for (int d = 0; d <= 12; ++d)
          for (int xm = 1 << mb; xm < (2 << mb); ++xm) {
            const long double v = std::ldexp(static_cast<long double>(xm), ea - d - mb);
            if (v <= amax && ideal_tie(v, amax)) ties.push_back(v);
          }
      }
      x.set(g * kGroup, static_cast<double>(rng.randint(0, 1) ? amax : -amax));
      for (int64_t k = 1; k < kGroup; ++k) {
        const long double v = ties[static_cast<size_t>(rng.randint(0, static_cast<int64_t>(ties.size()) - 1))];
        x.set(g * kGroup + k, static_cast<double>(rng.randint(0, 1) ? v : -v));
      }
    }
    SCOPED_TRACE(dtype_name(xd));
    check_quant(c, x);
  }
}

TEST(QuantFp8GroupKernel, IdealTiesRoundExactly) {
  TEJAS_SEEDED_TEST_RNG();
  ideal_ties_round_exactly(rng);
  // The plan takes version 6 for 16-bit x with f32 scales (quant.tie_bias=1, the default).
  for (DType xd : {DType::bf16, DType::f16, DType::f32}) {
    PlacedTensor x(xd, {2, 256}), q(DType::e4m3, {2, 256}), s(DType::f32, {2, 2});
    const quant_kernel::QuantPlan plan =
        quant_kernel::plan_quant(x, q, s, TensorView{}, kGroup, quant_kernel::ScaleRule::fp8_f32);
    EXPECT_EQ(quant_kernel::quant_launch(plan, 0).config.tie_bias, xd != DType::f32) << dtype_name(xd);
  }
}

TEST(QuantFp8GroupKernel, CountersAtTheIdeal) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t M = 4, K = 1024;
  constexpr double kIdeal16B = 16.0, kIdeal2B = 2.0, kIdeal8B = 8.0;
  {  // vectorized: 16-byte loads of x, 8-byte stores of codes
    PlacedTensor x(DType::bf16, {M, K}), q(DType::e4m3, {M, K}), s(DType::f32, {M, K / kGroup});
    fill_grouped(x, rng, kGroup);
    TEJAS_ASSERT_OK(quant_fp8_group(backend_ctx(Backend::emulator), x, q, s));
    const emu::Counters& c = last_counters();
    EXPECT_EQ(c.sectors_per_load_request(), kIdeal16B);
    EXPECT_EQ(c.global_bytes_read_unique, static_cast<uint64_t>(x.bytes()));
    EXPECT_EQ(c.global_bytes_written_unique, static_cast<uint64_t>(q.bytes() + s.bytes()));
    EXPECT_EQ(c.global_load_sectors, static_cast<uint64_t>(x.bytes() / 32));
    EXPECT_EQ(c.bank_conflict_wavefronts(), 0u);
    // Code stores: 8 bytes per lane, 8 sectors per warp; plus one sector per scale store.
    const uint64_t code_stores = static_cast<uint64_t>(q.bytes() / 256);
    EXPECT_EQ(c.global_store_sectors, code_stores * static_cast<uint64_t>(kIdeal8B) + (c.global_store_requests - code_stores));
  }
  {  // generic (group too large for registers): 2-byte loads, two passes over L1
    constexpr int kBig = 2048;
    PlacedTensor x(DType::bf16, {2, kBig}), q(DType::e4m3, {2, kBig}), s(DType::ue8m0, {2, 1});
    fill_grouped(x, rng, kBig);
    TEJAS_ASSERT_OK(quant_fp8_group(backend_ctx(Backend::emulator), x, q, s, kBig));
    const emu::Counters& c = last_counters();
    EXPECT_EQ(c.sectors_per_load_request(), kIdeal2B);
    EXPECT_EQ(c.global_bytes_read_unique, static_cast<uint64_t>(x.bytes()));
    EXPECT_EQ(c.global_bytes_written_unique, static_cast<uint64_t>(q.bytes() + s.bytes()));
  }
}

// ---- dequant ------------------------------------------------------------------------------------

namespace {

struct DequantCase {
  DType scales, out;
  std::vector<int64_t> shape;
  int group = kGroup;
  int64_t pad = 0, out_misalign = 0, q_misalign = 0;
};

void fill_codes_and_scales(PlacedTensor& q, PlacedTensor& s, check::Rng& rng) {
  for (int64_t i = 0; i < q.numel(); ++i) q.set_bits(i, static_cast<uint64_t>(rng.randint(0, 0xFF)));
  for (int64_t i = 0; i < s.numel(); ++i) {
    if (s.dtype() == DType::f32) s.set(i, rng.uniform(0.5, 1.0) * std::ldexp(1.0, static_cast<int>(rng.randint(-30, 8))));
    else s.set_bits(i, static_cast<uint64_t>(rng.randint(90, 140)));
  }
}

void check_dequant(const DequantCase& c, const PlacedTensor& q, const PlacedTensor& s) {
  PlacedTensor out(c.out, c.shape, c.pad, c.out_misalign), out_ref(c.out, c.shape);
  TEJAS_ASSERT_OK(dequant_fp8_group(backend_ctx(Backend::reference), q, s, out_ref, c.group));
  TEJAS_ASSERT_OK(run_kernel({&q, &s}, {&out}, [&c](const ExecContext& ctx, const std::vector<TensorView>& v) {
    return dequant_fp8_group(ctx, v[0], v[1], v[2], c.group);
  }));
  expect_same_bits(out, out_ref, "out");
  EXPECT_TRUE(out.outside_untouched()) << "out: wrote outside its view";
}

void run_dequant(const DequantCase& c, check::Rng& rng) {
  SCOPED_TRACE(testing::Message() << "scales " << dtype_name(c.scales) << " -> " << dtype_name(c.out) << " shape "
                                  << testing::PrintToString(c.shape) << " group " << c.group << " pad " << c.pad
                                  << " misalign out " << c.out_misalign << " q " << c.q_misalign);
  PlacedTensor q(DType::e4m3, c.shape, c.pad, c.q_misalign), s(c.scales, scale_shape(c.shape, c.group), c.pad);
  fill_codes_and_scales(q, s, rng);
  check_dequant(c, q, s);
}

}  // namespace

namespace {
void dequant_random_shapes(check::Rng& rng) {
  for (DType sd : {DType::f32, DType::ue8m0}) {
    for (DType od : {DType::bf16, DType::f16, DType::f32}) {
      run_dequant({sd, od, {1, 128}}, rng);
      run_dequant({sd, od, {3, 384}}, rng);
      run_dequant({sd, od, {17, 640}}, rng);
    }
  }
  run_dequant({DType::f32, DType::bf16, {1, 16384}}, rng);
  run_dequant({DType::ue8m0, DType::f16, {2, 16384}}, rng);
  // 24 and 1536: group / vec (3, 192) not a power of two, through group_div's multiply and shift.
  // 8: one 16-byte bf16 vector per group; with f32 outputs, 4.
  for (int group : {1, 3, 4, 8, 24, 64, 1536}) run_dequant({DType::f32, DType::bf16, {2, 3072}, group}, rng);
  run_dequant({DType::f32, DType::f32, {2, 3072}, 4}, rng);
  for (auto [od, group] : {std::pair{DType::bf16, 8}, {DType::f32, 4}}) {  // vectorized, one vector per group
    PlacedTensor q(DType::e4m3, {2, 3072}), s(DType::f32, {2, 3072 / group}), out(od, {2, 3072});
    const quant_kernel::DequantConfig c =
        quant_kernel::dequant_launch(quant_kernel::plan_dequant(q, s, TensorView{}, out, group), 0).config;
    EXPECT_TRUE(c.vectorized) << dtype_name(od) << " group " << group;
  }
  run_dequant({DType::ue8m0, DType::f32, {4, 256}, kGroup, 4}, rng);
  run_dequant({DType::f32, DType::f16, {4, 256}, kGroup, 3, 2, 0}, rng);
  run_dequant({DType::f32, DType::bf16, {4, 256}, kGroup, 0, 0, 3}, rng);
}
}  // namespace

// Under each poison byte: the random codes include e4m3's NaN codes (0x7F, 0xFF), whose outputs
// the default 0xFF poison already reads as NaN.
TEST(DequantFp8GroupKernel, RandomShapesMatchReference) {
  TEJAS_SEEDED_TEST_RNG();
  testsupport::for_each_poison([&] { dequant_random_shapes(rng); });
}

void dequant_lone_hazards(check::Rng& rng);  // below

// Every variant's quant and dequant bodies (run_tuned_variants, kernel_test_util.h), on the
// emulator here and on the GPU in CudaTunedVariantsMatchReference.
void tuned_variants(check::Rng& rng) {
  const auto quant = [&] {
    quant_random_shapes(rng);
    other_group_sizes(rng);
    near_ties_round_exactly(rng);  // quant.fast_convert=0: near_midpoint's own tie handling
    ideal_ties_round_exactly(rng);  // quant.tie_bias=0: version 5 on them
  };
  run_tuned_variants(quant, [&] {
    dequant_random_shapes(rng);
    dequant_lone_hazards(rng);  // quant.fast_convert=0: mul_round_odd per output
  });
}

TEST(QuantFp8GroupKernel, TunedVariantsMatchReference) {
  TEJAS_SEEDED_TEST_RNG();
  tuned_variants(rng);
}

// Products code * scale that f32 rounds onto a bf16 / f16 midpoint: rounding to odd first keeps
// the final rounding correct.
void dequant_double_rounding_hazards(check::Rng& rng) {
  constexpr int64_t kRows = 16;
  const uint8_t codes[] = {0x3C, 0x3E, 0x3A, 0x44, 0x4A, 0xBB};  // 1.5, 1.75, 1.25, 3, 5, -1.375
  for (DType od : {DType::bf16, DType::f16}) {
    const int mbits = od == DType::bf16 ? 7 : 10;
    PlacedTensor q(DType::e4m3, {kRows, kGroup}), s(DType::f32, {kRows, 1});
    for (int64_t r = 0; r < kRows; ++r) {
      const uint8_t code = codes[r % std::size(codes)];
      const double cv = ref::decode(DType::e4m3, code);
      // A midpoint of the output format: (1 + (2j + 1) / 2^(mbits + 1)) * 2^e.
      const double mid = (1 + (2.0 * static_cast<double>(rng.randint(0, (1 << mbits) - 1)) + 1) /
                                  std::ldexp(1.0, mbits + 1)) *
                         std::ldexp(1.0, static_cast<int>(rng.randint(-8, 8)));
      float sv = static_cast<float>(mid / std::fabs(cv));
      if (r % 3 == 1) sv = std::nextafter(sv, 0.0f);
      if (r % 3 == 2) sv = std::nextafter(sv, 1e30f);
      s.set(r, sv);
      for (int64_t k = 0; k < kGroup; ++k) q.set_bits(r * kGroup + k, code);
    }
    check_dequant({DType::f32, od, {kRows, kGroup}}, q, s);
  }
}

// One hazard among random codes: a vector with a single product on a bf16 / f16 midpoint (the
// packed path's per-vector fallback) beside vectors with none, at every position of the vector;
// for f16 also midpoints of its subnormal range (odd multiples of 2^-25, rows 4-7) and of its
// top binade, 32768-65520 (row 3).
void dequant_lone_hazards(check::Rng& rng) {
  constexpr int64_t kRows = 8;
  const uint8_t code = 0x3E;  // 1.75
  for (DType od : {DType::bf16, DType::f16}) {
    const int mbits = od == DType::bf16 ? 7 : 10;
    PlacedTensor q(DType::e4m3, {kRows, kGroup}), s(DType::f32, {kRows, 1});
    for (int64_t r = 0; r < kRows; ++r) {
      // A scale whose f32 product with 1.75 rounds onto a midpoint of the output format while
      // the exact product is off it (a scale next to mid / 1.75; retried until one is).
      float sv = 0.0f;
      for (int tries = 0; tries < 1000 && sv == 0.0f; ++tries) {
        double mid = (1 + (2.0 * static_cast<double>(rng.randint(0, (1 << mbits) - 1)) + 1) /
                              std::ldexp(1.0, mbits + 1)) *
                     std::ldexp(1.0, static_cast<int>(rng.randint(-8, 8)));
        if (od == DType::f16 && r >= 4) mid = (2.0 * static_cast<double>(rng.randint(0, 1023)) + 1) * 0x1p-25;
        if (od == DType::f16 && r == 3) mid = std::ldexp(mid, 15 - std::ilogb(mid));  // f16's top binade
        float c = std::nextafter(static_cast<float>(mid / 1.75), 0.0f);
        for (int n = 0; n < 3 && sv == 0.0f; ++n, c = std::nextafter(c, 1e30f)) {
          const double exact = 1.75 * static_cast<double>(c);
          if (static_cast<double>(static_cast<float>(exact)) == mid && exact != mid) sv = c;
        }
      }
      ASSERT_NE(sv, 0.0f) << "no hazard scale found";
      s.set(r, sv);
      for (int64_t k = 0; k < kGroup; ++k) q.set_bits(r * kGroup + k, static_cast<uint64_t>(rng.randint(0, 0x7E)));
      // The hazard code at position r of every other vector of 8 outputs.
      for (int64_t v = 0; v < kGroup / 8; v += 2) q.set_bits(r * kGroup + v * 8 + r, code);
    }
    check_dequant({DType::f32, od, {kRows, kGroup}}, q, s);
  }
}

// Every code against scales at the edges: zero, the f32 subnormals, +-Inf and NaN scales, FLT_MAX
// (products overflow f32 and bf16), ue8m0 2^-127, 2^127 and its NaN code.
void dequant_special_scales(check::Rng& rng) {
  const float f32_scales[] = {0.0f,
                              std::numeric_limits<float>::denorm_min(),
                              1e-40f,
                              std::numeric_limits<float>::min(),
                              std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::max(),
                              1e36f,
                              static_cast<float>(rng.uniform(0.5, 1.0))};
  const uint8_t ue8m0_scales[] = {0, 1, 127, 200, 254, 0xFF};
  for (DType od : {DType::bf16, DType::f16, DType::f32}) {
    for (DType sd : {DType::f32, DType::ue8m0}) {
      const int64_t rows = sd == DType::f32 ? static_cast<int64_t>(std::size(f32_scales)) : std::size(ue8m0_scales);
      PlacedTensor q(DType::e4m3, {rows, 2 * kGroup}), s(sd, {rows, 2});
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t k = 0; k < 2 * kGroup; ++k) q.set_bits(r * 2 * kGroup + k, static_cast<uint64_t>((k + r) & 0xFF));
        for (int64_t g = 0; g < 2; ++g) {
          if (sd == DType::f32) s.set(r * 2 + g, g == 0 ? f32_scales[r] : -f32_scales[r]);
          else s.set_bits(r * 2 + g, ue8m0_scales[r]);
        }
      }
      SCOPED_TRACE(testing::Message() << dtype_name(sd) << " -> " << dtype_name(od));
      check_dequant({sd, od, {rows, 2 * kGroup}}, q, s);
    }
  }
}

TEST(DequantFp8GroupKernel, DoubleRoundingHazards) {
  TEJAS_SEEDED_TEST_RNG();
  dequant_double_rounding_hazards(rng);
  dequant_lone_hazards(rng);
}

// Under each poison byte: the NaN scales' and codes' outputs read as NaN under the default 0xFF
// whether written or not.
TEST(DequantFp8GroupKernel, SpecialScalesAndEveryCode) {
  TEJAS_SEEDED_TEST_RNG();
  testsupport::for_each_poison([&] { dequant_special_scales(rng); });
}

TEST(DequantFp8GroupKernel, CountersAtTheIdeal) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t M = 4, K = 1024;
  PlacedTensor q(DType::e4m3, {M, K}), s(DType::f32, {M, K / kGroup}), out(DType::bf16, {M, K});
  fill_codes_and_scales(q, s, rng);
  TEJAS_ASSERT_OK(dequant_fp8_group(backend_ctx(Backend::emulator), q, s, out));
  const emu::Counters& c = last_counters();
  EXPECT_EQ(c.sectors_per_store_request(), 16.0);  // 16-byte stores of out
  EXPECT_EQ(c.global_bytes_read_unique, static_cast<uint64_t>(q.bytes() + s.bytes()));
  EXPECT_EQ(c.global_bytes_written_unique, static_cast<uint64_t>(out.bytes()));
  // Code loads are 8 bytes per lane (8 sectors per warp); each warp's scale load touches one
  // sector (32 lanes x 8 outputs = 2 groups of 4-byte scales).
  const uint64_t warps = static_cast<uint64_t>(M * K / 8 / 32);
  EXPECT_EQ(c.global_load_sectors, static_cast<uint64_t>(q.bytes() / 32) + warps);
  EXPECT_EQ(c.bank_conflict_wavefronts(), 0u);
}

// Every emulator case above on the GPU (check helpers through run_kernel: whole buffers mirrored,
// misalignment kept, writes outside the views and past the buffers caught), and the launch
// variants of the A/Bs.
TEST(QuantFp8GroupKernel, CudaMatchesReference) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  const ScopedKernelBackend cuda(Backend::cuda);
  quant_random_shapes(rng);
  other_group_sizes(rng);
  strided_and_misaligned(rng);
  non_finite_zero_and_huge(rng);
  near_ties_round_exactly(rng);
  ideal_ties_round_exactly(rng);  // version 6's exact midpoints through the GPU's conversions
}

TEST(DequantFp8GroupKernel, CudaMatchesReference) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  const ScopedKernelBackend cuda(Backend::cuda);
  testsupport::for_each_poison([&] { dequant_random_shapes(rng); });
  dequant_double_rounding_hazards(rng);
  dequant_lone_hazards(rng);
  testsupport::for_each_poison([&] { dequant_special_scales(rng); });
}

TEST(QuantFp8GroupKernel, CudaTunedVariantsMatchReference) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  const ScopedKernelBackend cuda(Backend::cuda);
  tuned_variants(rng);
}
