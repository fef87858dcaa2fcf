// quant_mx / dequant_mx kernels (mxfp8, mxfp4, nvfp4; emulator backend, cuda when a GPU is
// present) against the reference backend, bit for bit (the kernels round exactly:
// src/ops/quant/quant_math.h).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "check/cuda_mem.h"
#include "device/clean_verdict.h"
#include "device/numeric/clean_multiplier.h"
#include "device/numeric/storage.h"
#include "ops/quant/kernel.cuh"
#include "ops/quant/launch_plan.h"
#include "ops/quant/kernel_test_util.h"
#include "support/poison.h"
#include "support/seed.h"
#include "tejas/quant.h"

using namespace tejas;
using namespace tejas::quanttest;

namespace {

constexpr int kMagSpread = 8;
constexpr double kNvfp4Range = 448.0 * 6.0;

DType code_dtype(MxFormat f) { return f == MxFormat::mxfp8 ? DType::e4m3 : DType::e2m1; }
DType scale_dtype(MxFormat f) { return f == MxFormat::nvfp4 ? DType::e4m3 : DType::ue8m0; }

struct MxCase {
  MxFormat f;
  DType x;
  std::vector<int64_t> shape;
  int64_t pad = 0, x_misalign = 0, q_misalign = 0;
};

std::vector<int64_t> scale_shape(std::vector<int64_t> s, MxFormat f) {
  s.back() /= mx_block_size(f);
  return s;
}

void fill_blocks(PlacedTensor& x, check::Rng& rng, int64_t block) {
  const int64_t K = x.shape().back();
  double mag = 1;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if ((i % K) % block == 0) mag = std::ldexp(1.0, static_cast<int>(rng.randint(-kMagSpread, kMagSpread)));
    x.set(i, rng.normal() * mag);
  }
}

double max_abs(const PlacedTensor& x) {
  double m = 0;
  for (int64_t i = 0; i < x.numel(); ++i)
    if (std::isfinite(x.value(i))) m = std::max(m, std::fabs(x.value(i)));
  return m;
}

void check_quant(const MxCase& c, const PlacedTensor& x, const PlacedTensor* ts) {
  const auto ss = scale_shape(c.shape, c.f);
  const DType qd = code_dtype(c.f), sd = scale_dtype(c.f);
  PlacedTensor q(qd, c.shape, c.pad, c.q_misalign), s(sd, ss, c.pad), q_ref(qd, c.shape), s_ref(sd, ss);
  const TensorView tsv = ts ? ts->view() : TensorView{};
  TEJAS_ASSERT_OK(quant_mx(backend_ctx(Backend::reference), c.f, x, q_ref, s_ref, tsv));
  TEJAS_ASSERT_OK(run_kernel({&x, ts}, {&q, &s}, [&c](const ExecContext& ctx, const std::vector<TensorView>& v) {
    return quant_mx(ctx, c.f, v[0], v[2], v[3], v[1]);
  }));
  expect_same_bits(q, q_ref, "q");
  expect_same_bits(s, s_ref, "scales");
  EXPECT_TRUE(q.outside_untouched()) << "q: wrote outside its view";
  EXPECT_TRUE(s.outside_untouched()) << "scales: wrote outside its view";
}

// tensor_scale as a caller would pick it (amax / (448 * 6)), times `ts_factor`.
void run_random(const MxCase& c, check::Rng& rng, double ts_factor = 1.0) {
  SCOPED_TRACE(testing::Message() << mx_format_name(c.f) << " " << dtype_name(c.x) << " shape "
                                  << testing::PrintToString(c.shape) << " pad " << c.pad << " misalign x "
                                  << c.x_misalign << " q " << c.q_misalign << " ts x" << ts_factor);
  PlacedTensor x(c.x, c.shape, c.pad, c.x_misalign);
  fill_blocks(x, rng, mx_block_size(c.f));
  PlacedTensor ts(DType::f32, {1});
  ts.set(0, static_cast<float>(max_abs(x) / kNvfp4Range * ts_factor));
  check_quant(c, x, c.f == MxFormat::nvfp4 ? &ts : nullptr);
}

constexpr MxFormat kFormats[] = {MxFormat::mxfp8, MxFormat::mxfp4, MxFormat::nvfp4};

}  // namespace

namespace {
void quant_random_shapes(check::Rng& rng) {
  for (MxFormat f : kFormats) {
    for (DType xd : {DType::bf16, DType::f16, DType::f32}) {
      run_random({f, xd, {1, 32}}, rng);
      run_random({f, xd, {3, 96}}, rng);
      run_random({f, xd, {21, 544}}, rng);
    }
    run_random({f, DType::bf16, {1, 16384}}, rng);
    run_random({f, DType::f16, {2, 16384}}, rng);
    run_random({f, DType::bf16, {2, 3, 64}}, rng);
  }
}
}  // namespace

// Under each poison byte: under the default 0xFF an unwritten fp4 nibble reads as -6 (e2m1 0xF),
// a valid code, and an unwritten ue8m0 scale as its NaN code.
TEST(QuantMxKernel, RandomShapesMatchReference) {
  TEJAS_SEEDED_TEST_RNG();
  testsupport::for_each_poison([&] { quant_random_shapes(rng); });
}

void strided_and_misaligned(check::Rng& rng) {
  for (MxFormat f : kFormats) {
    run_random({f, DType::bf16, {5, 128}, 8}, rng);     // padded, rows stay 16-byte aligned
    run_random({f, DType::bf16, {5, 128}, 2}, rng);     // padded, rows not aligned: generic
    run_random({f, DType::bf16, {3, 64}, 0, 2, 0}, rng);  // x starts 2 bytes off
    run_random({f, DType::f32, {3, 64}, 0, 0, 1}, rng);   // q starts 1 byte off
  }
}

TEST(QuantMxKernel, StridedAndMisalignedViews) {
  TEJAS_SEEDED_TEST_RNG();
  strided_and_misaligned(rng);
}

// The linear walk (kernel.cuh's GroupWalk<true>) only where x's, q's and the scales' rows all lie
// end to end, or there is one row: with any one of the three padded, the launch walks rows, and
// either way the codes and scales match the reference, nothing is written into the padding, and
// quant.linear=0 walks rows everywhere. A linear walk over a padded x reads the wrong elements; over
// padded codes or scales it writes into their padding.
TEST(QuantMxKernel, LinearWalkOnlyWhereRowsLieEndToEnd) {
  TEJAS_SEEDED_TEST_RNG();
  for (MxFormat f : kFormats) {
    SCOPED_TRACE(mx_format_name(f));
    const int64_t B = mx_block_size(f);
    const auto rule = f == MxFormat::nvfp4 ? quant_kernel::ScaleRule::nvfp4 : quant_kernel::ScaleRule::mx;
    for_each_walk_layout(7, [&](int padded, int64_t rows, int linear) {
      const std::vector<int64_t> shape{rows, 96 * B};  // 7 rows: 2-3 blocks
      const auto ss = scale_shape(shape, f);
      const DType qd = code_dtype(f), sd = scale_dtype(f);
      PlacedTensor x(DType::bf16, shape, padded == 0 ? 8 : 0);
      fill_blocks(x, rng, B);
      PlacedTensor ts(DType::f32, {1});
      ts.set(0, static_cast<float>(max_abs(x) / kNvfp4Range));
      const TensorView tsv = f == MxFormat::nvfp4 ? ts.view() : TensorView{};
      PlacedTensor q(qd, shape, padded == 1 ? 32 : 0), s(sd, ss, padded == 2 ? 4 : 0);
      PlacedTensor q_ref(qd, shape), s_ref(sd, ss);
      const quant_kernel::QuantLaunch l =
          quant_kernel::quant_launch(quant_kernel::plan_quant(x, q, s, tsv, B, rule), 0);
      ASSERT_TRUE(l.config.vectorized) << l.config.to_string();
      EXPECT_EQ(l.config.linear, walks_linearly(padded, rows, linear)) << l.config.to_string();
      TEJAS_ASSERT_OK(quant_mx(backend_ctx(Backend::reference), f, x, q_ref, s_ref, tsv));
      TEJAS_ASSERT_OK(quant_mx(backend_ctx(Backend::emulator), f, x, q, s, tsv));
      expect_same_bits(q, q_ref, "q");
      expect_same_bits(s, s_ref, "scales");
      EXPECT_TRUE(q.outside_untouched()) << "q: wrote outside its view";
      EXPECT_TRUE(s.outside_untouched()) << "scales: wrote outside its view";
    });
  }
}

// nvfp4 with tensor_scale too small (block scales saturate at 448) and too large (block scales
// underflow to 0: all-zero codes).
void nvfp4_tensor_scale_extremes(check::Rng& rng) {
  for (double factor : {1e-3, 0.37, 3.0, 1e4}) run_random({MxFormat::nvfp4, DType::bf16, {4, 128}}, rng, factor);
}

TEST(QuantMxKernel, Nvfp4TensorScaleExtremes) {
  TEJAS_SEEDED_TEST_RNG();
  nvfp4_tensor_scale_extremes(rng);
}

// tensor_scale at the ends of its range [2^-64, 2^64] (tejas/quant.h), x scaled with it so that
// block scales span e4m3's range: the reciprocals the kernel forms stay normal, codes exact.
void nvfp4_tensor_scale_at_range_ends(check::Rng& rng) {
  for (int e : {-64, 64}) {
    for (DType xd : {DType::bf16, DType::f32}) {
      SCOPED_TRACE(testing::Message() << "tensor_scale 2^" << e << " x " << dtype_name(xd));
      const MxCase c{MxFormat::nvfp4, xd, {3, 160}};
      PlacedTensor x(xd, c.shape);
      fill_blocks(x, rng, mx_block_size(c.f));
      const double ts_value = std::ldexp(1.0, e);
      const double k = ts_value * kNvfp4Range / max_abs(x);  // the largest block reaches 448 * 6
      for (int64_t i = 0; i < x.numel(); ++i) x.set(i, x.value(i) * k);
      PlacedTensor ts(DType::f32, {1});
      ts.set(0, ts_value);
      check_quant(c, x, &ts);
    }
  }
}

TEST(QuantMxKernel, Nvfp4TensorScaleAtRangeEnds) {
  TEJAS_SEEDED_TEST_RNG();
  nvfp4_tensor_scale_at_range_ends(rng);
}

void non_finite_zero_tiny_and_exponent_clamp(check::Rng& rng) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  for (MxFormat f : kFormats) {
    // f16 x stores the huge block as +-Inf and the tiny one as zeros: other blocks, the same rules.
    for (DType xd : {DType::f32, DType::bf16, DType::f16}) {
      for (int64_t misalign : {0, 4}) {
        const int64_t B = mx_block_size(f);
        const MxCase c{f, xd, {2, 6 * B}, 0, misalign};
        PlacedTensor x(xd, c.shape, 0, misalign);
        fill_blocks(x, rng, B);
        x.set(B + 3, kNaN);                    // row 0, block 1
        x.set(2 * B + 1, kInf);                // row 0, block 2
        x.set(2 * B + 2, -kInf);
        for (int64_t k = 0; k < B; ++k) {
          x.set(3 * B + k, k % 2 ? -0.0 : 0.0);                  // block 3: zeros
          x.set(4 * B + k, std::ldexp(k % 3 ? 1.0 : -1.5, -130 + static_cast<int>(k % 5)));  // block 4: clamp
          x.set(7 * B + k, (k % 2 ? -3e38 : 1e38) * (k + 1) / B);  // row 1, block 1: huge
        }
        x.set(8 * B, kNaN);  // row 1, block 2: NaN and Inf
        x.set(8 * B + 1, kInf);
        PlacedTensor ts(DType::f32, {1});
        ts.set(0, 0.01);
        // NaN blocks' ue8m0 scale 0xFF is the default poison, and e2m1's 0xF (-6) its nibble:
        // finite poisons too (the x and ts above keep the default; only outputs matter).
        testsupport::for_each_poison([&] { check_quant(c, x, f == MxFormat::nvfp4 ? &ts : nullptr); });
      }
    }
  }
}

TEST(QuantMxKernel, NonFiniteZeroTinyAndExponentClamp) {
  TEJAS_SEEDED_TEST_RNG();
  non_finite_zero_tiny_and_exponent_clamp(rng);
}

// mxfp4 from bf16 / f16 (the packed-pair path, quant.fast_convert=1, and the f32 path at 0): a
// row per amax binade of x's format, subnormals to its largest exponent, each block holding
// the e2m1 code values and midpoints at that block's scale (x * 2^-e on them) with both
// neighbouring 16-bit values, and random values; then rows of zeros, +-0, the format's extremes
// and non-finite values. Bit for bit against the reference, under both settings; the plan must
// pick the path the setting asks for.
void packed_fp4_quant_exponents_and_ties(check::Rng& rng) {
  const double points[] = {0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0};
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr int64_t B = 32;
  for (DType xd : {DType::bf16, DType::f16}) {
    const int lo = xd == DType::bf16 ? -133 : -24, hi = xd == DType::bf16 ? 127 : 15;
    const double max_finite = xd == DType::bf16 ? 3.3895313892515355e38 : 65504.0;
    const int64_t special = 4, rows = hi - lo + 1 + special;
    PlacedTensor x(xd, {rows, 2 * B});
    for (int64_t r = 0; r + special < rows; ++r) {
      const int k = lo + static_cast<int>(r);  // the block's amax lies in [2^k, 2^(k+1))
      const double e = std::ldexp(1.0, k - 2);   // the MX scale 2^(floor(log2 amax) - 2)
      for (int64_t j = 0; j < B; ++j) {
        const int64_t i = r * 2 * B + j;
        const double sign = j % 2 ? -1.0 : 1.0;
        x.set(i, sign * points[(j / 3) % 14] * e);
        // Every third element is the point itself; the others its 16-bit neighbours above / below.
        const uint64_t b = x.bits(i);
        if (j % 3 == 1 && (b & 0x7FFF) != 0) x.set_bits(i, b - 1);
        if (j % 3 == 2 && (b & 0x7FFF) < (xd == DType::bf16 ? 0x7F7Fu : 0x7BFFu)) x.set_bits(i, b + 1);
        x.set(r * 2 * B + B + j, rng.normal() * std::ldexp(1.0, k - 1));
      }
      x.set(r * 2 * B, std::min(std::ldexp(1.5, k), max_finite));  // the amax, in the binade
    }
    const int64_t s0 = (rows - special) * 2 * B;
    for (int64_t j = 0; j < 2 * B; ++j) {
      x.set(s0 + j, j % 2 ? -0.0 : 0.0);                                 // all zero
      x.set(s0 + 2 * B + j, (j % 2 ? -1.0 : 1.0) * max_finite * (j + 1) / (2 * B));  // the top
      x.set(s0 + 4 * B + j, (j % 2 ? -1.0 : 1.0) * std::ldexp(1.0, lo + static_cast<int>(j % 4)));  // the bottom
      x.set(s0 + 6 * B + j, rng.normal());
    }
    x.set(s0 + 6 * B + 1, kInf);
    x.set(s0 + 6 * B + 2, -kInf);
    x.set(s0 + 7 * B + 3, std::numeric_limits<double>::quiet_NaN());
    for (int packed : {1, 0}) {
      SCOPED_TRACE(testing::Message() << dtype_name(xd) << " quant.fast_convert=" << packed);
      detail::Tune t;
      t.quant_fast_convert = packed;
      const detail::ScopedTuneOverride variant(t);
      PlacedTensor q(DType::e2m1, {rows, 2 * B}), s(DType::ue8m0, {rows, 2});
      const quant_kernel::QuantPlan plan =
          quant_kernel::plan_quant(x, q, s, TensorView{}, B, quant_kernel::ScaleRule::mx);
      EXPECT_EQ(quant_kernel::quant_launch(plan, 0).config.fast_convert, packed == 1);
      check_quant({MxFormat::mxfp4, xd, {rows, 2 * B}}, x, nullptr);
    }
  }
}

TEST(QuantMxKernel, PackedFp4EveryExponentAndTie) {
  TEJAS_SEEDED_TEST_RNG();
  packed_fp4_quant_exponents_and_ties(rng);
}

// mxfp4 to bf16 / f16 (the packed-pair path and the f32 path): every ue8m0 scale code (0 .. 254
// and the NaN code 0xFF) with every e2m1 code, bit for bit against the reference: subnormal,
// overflowing and flushed outputs at the range ends, -0 for code 0x8.
void packed_fp4_dequant_every_scale_and_code() {
  constexpr int64_t B = 32, rows = 256;
  PlacedTensor q(DType::e2m1, {rows, B}), s(DType::ue8m0, {rows, 1});
  for (int64_t r = 0; r < rows; ++r) {
    s.set_bits(r, static_cast<uint64_t>(r));
    for (int64_t k = 0; k < B; ++k) q.set_bits(r * B + k, static_cast<uint64_t>((k + r) % 16));
  }
  for (DType od : {DType::bf16, DType::f16}) {
    PlacedTensor out_ref(od, {rows, B});
    TEJAS_ASSERT_OK(dequant_mx(backend_ctx(Backend::reference), MxFormat::mxfp4, q, s, TensorView{}, out_ref));
    for (int packed : {1, 0}) {
      SCOPED_TRACE(testing::Message() << dtype_name(od) << " quant.fast_convert=" << packed);
      detail::Tune t;
      t.quant_fast_convert = packed;
      const detail::ScopedTuneOverride variant(t);
      PlacedTensor out(od, {rows, B});
      const quant_kernel::DequantPlan plan = quant_kernel::plan_dequant(q, s, TensorView{}, out, B);
      EXPECT_EQ(quant_kernel::dequant_launch(plan, 0).config.fast_convert, packed == 1);
      TEJAS_ASSERT_OK(run_kernel({&q, &s}, {&out}, [](const ExecContext& ctx, const std::vector<TensorView>& v) {
        return dequant_mx(ctx, MxFormat::mxfp4, v[0], v[1], TensorView{}, v[2]);
      }));
      expect_same_bits(out, out_ref, "out");
    }
  }
}

TEST(DequantMxKernel, PackedFp4EveryScaleAndCode) { packed_fp4_dequant_every_scale_and_code(); }

// nvfp4 to bf16 where f32 rounds code * block_scale * tensor_scale onto a bf16 midpoint (the
// packed path's rare vectors, resolved by rounding to odd): per case, a random code and block
// scale (normal, subnormal and negative e4m3 codes) and a tensor scale found next to mid / (code *
// block_scale) for a random bf16 midpoint `mid` such that the f32 product lands on the midpoint
// without being it (searched over the 17 f32 values around the quotient; cases with none are
// skipped); that code sits at one position of each 8-output vector, both signs, among code 0
// elsewhere, so that the vector's test must find it at any position. Bit for bit against the
// reference, under both quant.fast_convert settings; the setting must pick its kernel (and f16
// out never the packed one).
void nvfp4_bf16_double_rounding_hazards(check::Rng& rng) {
  constexpr int64_t B = 16, K = 4 * B;  // 8 vectors of 8 outputs
  int hazards = 0;
  for (int packed : {1, 0}) {
    detail::Tune t;
    t.quant_fast_convert = packed;
    const detail::ScopedTuneOverride variant(t);
    for (int c = 0; c < 48; ++c) {
      const auto code = static_cast<uint64_t>(rng.randint(1, 7));  // e2m1 magnitude 0.5 .. 6
      uint64_t bs_code = static_cast<uint64_t>(rng.randint(0x01, 0xFE));
      if ((bs_code & 0x7F) == 0x7F || bs_code == 0x80) bs_code = 0x38;  // not NaN, not -0
      const double v = ref::decode(DType::e2m1, code) * ref::decode(DType::e4m3, bs_code);
      const double mid = (1 + (2.0 * static_cast<double>(rng.randint(0, 127)) + 1) / 256.0) *
                         std::ldexp(std::copysign(1.0, v), static_cast<int>(rng.randint(-20, 20)));
      const float base = static_cast<float>(mid / v);
      float ts = 0.0f;
      for (int d = -8; d <= 8 && ts == 0.0f; ++d) {
        float cand = base;
        for (int n = 0; n < std::abs(d); ++n) cand = std::nextafter(cand, d > 0 ? 1e30f : 0.0f);
        const float p = static_cast<float>(v) * cand;  // exact v (<= 6 bits) times an f32: one rounding
        const bool on_mid = (std::bit_cast<uint32_t>(p) & 0xFFFFu) == 0x8000u;
        if (on_mid && static_cast<double>(p) != v * static_cast<double>(cand)) ts = cand;
      }
      if (ts == 0.0f) continue;
      if (packed) ++hazards;
      SCOPED_TRACE(testing::Message() << "quant.fast_convert=" << packed << " code " << code << " block scale 0x"
                                      << std::hex << bs_code << std::dec << " ts " << ts);
      PlacedTensor q(DType::e2m1, {1, K}), s(DType::e4m3, {1, K / B}), tsv(DType::f32, {1});
      for (int64_t k = 0; k < K; ++k) {
        const int64_t vec = k / 8, at = c % 8;  // the hazard's position in each vector
        const uint64_t sign = vec % 2 ? 0x8u : 0u;
        q.set_bits(k, k % 8 == (at + vec) % 8 ? code | sign : 0u);
      }
      for (int64_t b = 0; b < K / B; ++b) s.set_bits(b, bs_code);
      tsv.set(0, ts);
      PlacedTensor out(DType::bf16, {1, K}), out_ref(DType::bf16, {1, K});
      EXPECT_EQ(quant_kernel::dequant_launch(quant_kernel::plan_dequant(q, s, tsv, out, B), 0).config.fast_convert,
                packed == 1);
      PlacedTensor out16(DType::f16, {1, K});
      EXPECT_FALSE(quant_kernel::dequant_launch(quant_kernel::plan_dequant(q, s, tsv, out16, B), 0).config.fast_convert);
      TEJAS_ASSERT_OK(dequant_mx(backend_ctx(Backend::reference), MxFormat::nvfp4, q, s, tsv, out_ref));
      TEJAS_ASSERT_OK(run_kernel({&q, &s, &tsv}, {&out}, [](const ExecContext& ctx, const std::vector<TensorView>& v) {
        return dequant_mx(ctx, MxFormat::nvfp4, v[0], v[1], v[2], v[3]);
      }));
      expect_same_bits(out, out_ref, "out");
    }
  }
  EXPECT_GE(hazards, 12) << "too few hazard cases found: the search construction no longer works";
}

TEST(DequantMxKernel, Nvfp4Bf16DoubleRoundingHazards) {
  TEJAS_SEEDED_TEST_RNG();
  nvfp4_bf16_double_rounding_hazards(rng);
}

// nvfp4: x / (block_scale * tensor_scale) next to e2m1 midpoints, and amax / (6 * ts) next to e4m3
// midpoints (the block scale's own rounding).
void nvfp4_near_ties_round_exactly(check::Rng& rng) {
  constexpr int64_t kRows = 16, B = 16;
  const double e2m1_mids[] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0};
  PlacedTensor x(DType::f32, {kRows, 4 * B}), ts(DType::f32, {1});
  const float tsv = static_cast<float>(rng.uniform(0.01, 0.1));
  ts.set(0, tsv);
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t b = 0; b < 4; ++b) {
      // A block scale code in the normal e4m3 range, then amax on (or next to) a block-scale midpoint.
      const uint64_t bs_code = static_cast<uint64_t>(rng.randint(0x20, 0x70));
      const double bs = ref::decode(DType::e4m3, bs_code);
      const double amax_mid = (bs + ref::decode(DType::e4m3, bs_code + 1)) / 2 * 6 * tsv;
      float amax = static_cast<float>(amax_mid);
      if (b % 2) amax = std::nextafter(amax, 0.0f);
      for (int64_t k = 0; k < B; ++k) {
        const double mid = e2m1_mids[rng.randint(0, 6)] * (rng.randint(0, 1) ? 1 : -1);
        float v = static_cast<float>(mid * bs * tsv);
        const int64_t j = rng.randint(-2, 2);
        for (int64_t n = 0; n < std::abs(j); ++n) v = std::nextafter(v, j > 0 ? 1e30f : -1e30f);
        x.set(r * 4 * B + b * B + k, k == 0 ? amax : v);
      }
    }
  }
  check_quant({MxFormat::nvfp4, DType::f32, {kRows, 4 * B}}, x, &ts);
}

TEST(QuantMxKernel, Nvfp4NearTiesRoundExactly) {
  TEJAS_SEEDED_TEST_RNG();
  nvfp4_near_ties_round_exactly(rng);
}

// Version 7 (quant.clean_table, the default; kernel.cuh's Nvfp4CleanTable): nvfp4 from bf16 /
// f16 on the emulator's persistent grid (kEmuResidentCtas CTAs, each building its table once
// and walking 4 or more warp steps). Every group holds its amax, chosen for a random block-scale
// code (all 126 reachable), and values at and 1-2 units of x's dtype beside the 16-bit values
// nearest to each e2m1 midpoint times its own divisor (the values a multiplier that is not clean
// writes wrong); every fourth group random normal data. Tensor scales: calibrated (amax /
// 2688), 1 (each divisor a block scale: those of 3 x 2^k have no clean multiplier, so a warp
// mixes both paths), and scales whose divisors take each candidate or none; c6's hard cases (amax
// at and beside the 16-bit value nearest to each block-scale midpoint times 6 ts) in a quarter of
// the groups, and special groups (NaN, +-Inf, all zero, x's largest values, block scale 0). Codes and scales bit for bit the reference's; the emulator's
// events: each CTA's 126 verdicts (as many clean as the host finds for the candidates the
// kernel can reach: its reciprocal is within 2 ulps) and its block-scale verdict, and the
// group-lanes that took a clean multiplier within the host's bounds (two lanes per group).
// quant.clean_table=0 runs version 5 on the same data with no event.
template <class S>
// pad: row padding (elements) of x, q and the scales: the row walk's instance of the kernel.
void nvfp4_clean_table(check::Rng& rng, DType xd, float tsv, int clean_table, int linear = 1, int64_t pad = 0) {
  SCOPED_TRACE(testing::Message() << dtype_name(xd) << " tensor scale " << tsv << " quant.clean_table=" << clean_table
                                  << " quant.linear=" << linear << " pad " << pad);
  detail::Tune t;
  t.quant_clean_table = clean_table;
  t.quant_linear = linear;
  const detail::ScopedTuneOverride variant(t);
  constexpr int64_t B = 16, kRows = 17, K = 4096;  // 4352 groups: 8.5 block steps of 512 on 2 CTAs
  PlacedTensor x(xd, {kRows, K}, pad), ts(DType::f32, {1});
  ts.set(0, tsv);
  const auto nearest = [&](double v) { return S::to_f32(S::from_f32(static_cast<float>(v))); };
  const double mids[] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0};
  const double big = S::kMaxFinite, inf = std::numeric_limits<double>::infinity();
  for (int64_t g = 0; g < kRows * K / B; ++g) {
    if (g % 4 == 3) {
      for (int64_t k = 0; k < B; ++k) x.set(g * B + k, rng.normal() * tsv * 300.0);
      continue;
    }
    if (g % 64 == 2) {  // special groups: NaN, +-Inf, all zero, x's largest values, tiny values
      const int64_t kind = (g / 64) % 5;
      for (int64_t k = 0; k < B; ++k) {
        const double r = rng.normal();
        const double v = kind == 0 ? (k == 5 ? std::numeric_limits<double>::quiet_NaN() : r)
                         : kind == 1 ? (k == 3 ? (g % 128 == 2 ? inf : -inf) : r)
                         : kind == 2 ? 0.0
                         : kind == 3 ? (k % 2 ? big : -big * 0.75)
                                     : r * tsv * 1e-4;  // block scale 0 where 6 ts x 2^-10 exceeds it
        x.set(g * B + k, v);
      }
      continue;
    }
    const uint64_t want = static_cast<uint64_t>(rng.randint(1, 0x7E));
    // amax on a block-scale code value, or (c6's hard cases) at and 1-2 units of x's dtype beside
    // the 16-bit value nearest to a block-scale midpoint times 6 ts.
    double amax = nearest(ref::decode(DType::e4m3, want) * 6.0 * tsv);
    if (g % 4 == 1 && want < 0x7E) {
      amax = nearest((ref::decode(DType::e4m3, want) + ref::decode(DType::e4m3, want + 1)) / 2 * 6.0 * tsv);
      PlacedTensor one(xd, {1});
      one.set(0, amax);
      one.set_bits(0, static_cast<uint64_t>(static_cast<int64_t>(one.bits(0)) + rng.randint(-2, 2)));
      amax = one.value(0);
    }
    if (!(amax > 0.0) || !std::isfinite(amax)) continue;  // 0 where the tensor scale leaves x's range
    const double bs = ref::decode(DType::e4m3, ref::encode(DType::e4m3, amax / (6.0 * static_cast<double>(tsv))));
    x.set(g * B, rng.randint(0, 1) ? amax : -amax);
    for (int64_t k = 1; k < B; ++k) {
      const double v = nearest(mids[rng.randint(0, 6)] * bs * tsv);
      x.set(g * B + k, v);
      const int64_t step = rng.randint(-2, 2);  // 1-2 units of S beside it, or on it
      if (step != 0 && std::fabs(v) < std::fabs(amax)) {
        uint64_t b = x.bits(g * B + k);
        b = static_cast<uint64_t>(static_cast<int64_t>(b) + step);
        if (std::fabs(S::to_f32(std::bit_cast<typename S::Raw>(static_cast<uint16_t>(b)))) < std::fabs(amax)) x.set_bits(g * B + k, b);
      }
      if (rng.randint(0, 1)) x.set(g * B + k, -x.value(g * B + k));
    }
  }
  const MxCase c{MxFormat::nvfp4, xd, {kRows, K}, pad};
  {  // the walk and the table planned as asked, on the resident CTAs the backend plans with (the
     // emulator's, or ScopedResidentCtas's, which the cuda launcher takes instead of its query)
    PlacedTensor q(DType::e2m1, c.shape, pad), s(DType::e4m3, scale_shape(c.shape, c.f), pad);
    quant_kernel::QuantPlan plan = quant_kernel::plan_quant(x, q, s, ts, B, quant_kernel::ScaleRule::nvfp4);
    plan.resident_ctas = quant_kernel::resident_ctas_or_override(quant_kernel::kEmuResidentCtas);
    const quant_kernel::QuantConfig planned = quant_kernel::quant_launch(plan, 0).config;
    EXPECT_EQ(planned.clean_table, clean_table == 1) << planned.to_string();
    EXPECT_EQ(planned.linear, linear == 1 && pad == 0) << planned.to_string();
  }
  check_quant(c, x, &ts);
  if (kernel_backend() != Backend::emulator) return;  // the events and counters are the emulator's
  // Random block-scale codes per group (the worst case for one shared table: a warp's 16 groups
  // at codes 32 apart share a bank): the table's copy per group slot keeps every read apart.
  EXPECT_EQ(last_counters().bank_conflict_wavefronts(), 0u);
  const auto& events = last_counters().events;
  const auto count = [&](const std::string& name) {
    const auto it = events.find(name);
    return it == events.end() ? uint64_t{0} : it->second;
  };
  const uint64_t ctas = static_cast<uint64_t>(quant_kernel::kEmuResidentCtas);
  if (clean_table == 0) {
    for (const auto& [name, n] : events) EXPECT_NE(name.rfind("nvfp4 clean table", 0), 0u) << name << " " << n;
    return;
  }
  // The host's verdicts for the candidates from reciprocals 0 and +-2 ulps off: stable or not.
  uint64_t surely = 0, maybe = 0;  // codes clean for every candidate set / for some
  bool code_clean[128] = {}, code_maybe[128] = {};
  code_clean[0] = code_maybe[0] = true;  // block scale 0: the table's 1 (codes replaced by +0)
  for (int b = 1; b <= 0x7E; ++b) {
    const auto [lo, hi] = cleantest::verdict_range<num::CodeFormat::e2m1, S>(num::e4m3_to_f32(static_cast<uint8_t>(b)), tsv);
    code_clean[b] = hi < num::kCleanCandidates;
    code_maybe[b] = lo < num::kCleanCandidates;
    surely += code_clean[b];
    maybe += code_maybe[b];
  }
  const uint64_t with = count("nvfp4 clean table: codes with a clean multiplier");
  EXPECT_GE(with, ctas * surely);
  EXPECT_LE(with, ctas * maybe);
  EXPECT_EQ(with + count("nvfp4 clean table: codes without"), ctas * 0x7E);
  const auto [lo6, hi6] = cleantest::verdict_range<num::CodeFormat::e4m3, S>(6.0f, tsv);
  uint64_t block_verdicts = 0;
  for (int j = 0; j <= num::kCleanCandidates; ++j) {
    const uint64_t n = count(quant_kernel::clean_table_event(j));
    block_verdicts += n;
    if (n > 0) {
      EXPECT_TRUE(j >= lo6 && j <= hi6) << "block scale verdict " << j;
    }
  }
  EXPECT_EQ(block_verdicts, ctas);
  // Group-lanes with a clean multiplier: two per non-NaN group whose scale code is clean.
  PlacedTensor q_ref(DType::e2m1, c.shape), s_ref(DType::e4m3, scale_shape(c.shape, c.f));
  TEJAS_ASSERT_OK(quant_mx(backend_ctx(Backend::reference), c.f, x, q_ref, s_ref, ts));
  uint64_t lanes_lo = 0, lanes_hi = 0;
  for (int64_t g = 0; g < s_ref.numel(); ++g) {
    const uint64_t code = s_ref.bits(g) & 0x7F;
    lanes_lo += 2 * code_clean[code];
    lanes_hi += 2 * code_maybe[code];
  }
  const uint64_t lanes = count("nvfp4 clean table: group-lanes quantized with a clean multiplier");
  EXPECT_GE(lanes, lanes_lo);
  EXPECT_LE(lanes, lanes_hi);
  EXPECT_GT(lanes, 0u);
  std::printf("  %s ts %g: %llu-%llu of 126 codes clean, block scale verdict %d-%d, %llu group-lanes clean\n",
              std::string(dtype_name(xd)).c_str(), static_cast<double>(tsv), static_cast<unsigned long long>(surely),
              static_cast<unsigned long long>(maybe), lo6, hi6, static_cast<unsigned long long>(lanes));
}

TEST(QuantMxKernel, Nvfp4CleanTableMatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  const float calibrated = static_cast<float>(std::ldexp(rng.uniform(1.0, 2.0), static_cast<int>(rng.randint(-4, 6))) / kNvfp4Range);
  // Verdicts (host, both dtypes): calibrated - every code and the block scale the first
  // candidate; 1 - 14 codes none; 0.05 - 30 codes and the block scale the second; 0.02 - 14 codes
  // the third; 5 / 64 - the block scale none (its per-group exact form); 0x1.e66666p-5 - the
  // block scale the third.
  for (const float tsv : {calibrated, 1.0f, 0.05f, 0.02f, 0.078125f, 0x1.e66666p-5f}) {
    nvfp4_clean_table<num::Bf16>(rng, DType::bf16, tsv, 1);
    nvfp4_clean_table<num::F16>(rng, DType::f16, tsv, 1);
  }
  nvfp4_clean_table<num::Bf16>(rng, DType::bf16, calibrated, 0);
  // The table's kernel on the row walk too: padded rows, and quant.linear=0.
  nvfp4_clean_table<num::Bf16>(rng, DType::bf16, calibrated, 1, 1, 16);
  nvfp4_clean_table<num::F16>(rng, DType::f16, 0.05f, 1, 1, 16);
  nvfp4_clean_table<num::Bf16>(rng, DType::bf16, 0.02f, 1, 0);
  // Planned only where each CTA has kCleanMinSteps warp steps: a smaller nvfp4 call keeps version 5.
  run_random({MxFormat::nvfp4, DType::bf16, {3, 4096}}, rng);
  EXPECT_TRUE(last_counters().events.empty());
}

// The same data on the GPU, planned for 2 resident CTAs (quant_kernel::ScopedResidentCtas) so
// that these test-sized calls take version 7 there too: the real shuffles, barriers, shared
// memory and __fdividef candidates, codes bit for bit the reference's.
TEST(QuantMxKernel, CudaNvfp4CleanTableMatchesReference) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  const ScopedKernelBackend on_gpu(Backend::cuda);
  const quant_kernel::ScopedResidentCtas two(2);
  const float calibrated = static_cast<float>(std::ldexp(rng.uniform(1.0, 2.0), static_cast<int>(rng.randint(-4, 6))) / kNvfp4Range);
  for (const float tsv : {calibrated, 1.0f, 0.05f, 0.02f, 0.078125f, 0x1.e66666p-5f}) {
    nvfp4_clean_table<num::Bf16>(rng, DType::bf16, tsv, 1);
    nvfp4_clean_table<num::F16>(rng, DType::f16, tsv, 1);
  }
  nvfp4_clean_table<num::Bf16>(rng, DType::bf16, calibrated, 1, 1, 16);
  nvfp4_clean_table<num::F16>(rng, DType::f16, 0.05f, 1, 1, 16);
}

TEST(QuantMxKernel, CountersAtTheIdeal) {
  TEJAS_SEEDED_TEST_RNG();
  const detail::ScopedTuneOverride defaults(detail::Tune{});  // the launch counted below, whatever TEJAS_TUNE says
  constexpr int64_t M = 4, K = 1024;
  for (MxFormat f : kFormats) {
    SCOPED_TRACE(mx_format_name(f));
    PlacedTensor x(DType::bf16, {M, K}), q(code_dtype(f), {M, K}), s(scale_dtype(f), scale_shape({M, K}, f));
    fill_blocks(x, rng, mx_block_size(f));
    PlacedTensor ts(DType::f32, {1});
    ts.set(0, max_abs(x) / kNvfp4Range);
    const TensorView tsv = f == MxFormat::nvfp4 ? ts.view() : TensorView{};
    TEJAS_ASSERT_OK(quant_mx(backend_ctx(Backend::emulator), f, x, q, s, tsv));
    const emu::Counters& c = last_counters();
    // x: 16-byte lanes, 16 sectors per warp request; nvfp4 adds one 1-sector tensor_scale load
    // per warp step (after the step's x loads): 256 blocks of 16 in tiles of 16 (2 lanes x 1
    // chunk each), 4 tiles per warp step (config.h): 4 steps, one per warp (of 8 launched).
    const uint64_t x_requests = static_cast<uint64_t>(x.bytes() / 512);
    const uint64_t ts_requests = c.global_load_requests - x_requests;
    constexpr int64_t kNvfp4Groups = M * K / 16, kTilesPerStep = 4;
    const uint64_t warp_steps = static_cast<uint64_t>((kNvfp4Groups + 16 * kTilesPerStep - 1) / (16 * kTilesPerStep));
    EXPECT_EQ(ts_requests, f == MxFormat::nvfp4 ? warp_steps : 0u);
    EXPECT_EQ(c.global_load_sectors, x_requests * 16 + ts_requests);
    const uint64_t ts_bytes = f == MxFormat::nvfp4 ? sizeof(float) : 0;
    EXPECT_EQ(c.global_bytes_read_unique, static_cast<uint64_t>(x.bytes()) + ts_bytes);
    EXPECT_EQ(c.global_bytes_written_unique, static_cast<uint64_t>(q.bytes() + s.bytes()));
    EXPECT_EQ(c.bank_conflict_wavefronts(), 0u);
  }
}

// ---- dequant ------------------------------------------------------------------------------------

namespace {

// Random codes, block scales (ue8m0 around 2^0, or any e4m3 byte) and a tensor scale for dequant.
void fill_codes_and_scales(MxFormat f, PlacedTensor& q, PlacedTensor& s, PlacedTensor& ts, check::Rng& rng) {
  const uint64_t max_code = f == MxFormat::mxfp8 ? 0xFF : 0xF;
  for (int64_t i = 0; i < q.numel(); ++i)
    q.set_bits(i, static_cast<uint64_t>(rng.randint(0, static_cast<int64_t>(max_code))));
  for (int64_t i = 0; i < s.numel(); ++i)
    s.set_bits(i, static_cast<uint64_t>(f == MxFormat::nvfp4 ? rng.randint(0, 0xFF) : rng.randint(100, 150)));
  ts.set(0, rng.uniform(1e-3, 1.0));
}

void run_dequant(MxFormat f, DType od, std::vector<int64_t> shape, check::Rng& rng, int64_t pad = 0,
                 int64_t out_misalign = 0) {
  SCOPED_TRACE(testing::Message() << mx_format_name(f) << " -> " << dtype_name(od) << " shape "
                                  << testing::PrintToString(shape) << " pad " << pad << " misalign " << out_misalign);
  PlacedTensor q(code_dtype(f), shape, pad), s(scale_dtype(f), scale_shape(shape, f), pad), ts(DType::f32, {1});
  fill_codes_and_scales(f, q, s, ts, rng);
  const TensorView tsv = f == MxFormat::nvfp4 ? ts.view() : TensorView{};
  PlacedTensor out(od, shape, pad, out_misalign), out_ref(od, shape);
  TEJAS_ASSERT_OK(dequant_mx(backend_ctx(Backend::reference), f, q, s, tsv, out_ref));
  TEJAS_ASSERT_OK(run_kernel({&q, &s, f == MxFormat::nvfp4 ? &ts : nullptr}, {&out},
                             [f](const ExecContext& ctx, const std::vector<TensorView>& v) {
                               return dequant_mx(ctx, f, v[0], v[1], v[2], v[3]);
                             }));
  expect_same_bits(out, out_ref, "out");
  EXPECT_TRUE(out.outside_untouched()) << "out: wrote outside its view";
}

}  // namespace

namespace {
void dequant_random_shapes(check::Rng& rng) {
  for (MxFormat f : kFormats) {
    for (DType od : {DType::bf16, DType::f16, DType::f32}) {
      run_dequant(f, od, {1, 32}, rng);
      run_dequant(f, od, {3, 96}, rng);
      run_dequant(f, od, {13, 640}, rng);
    }
    run_dequant(f, DType::bf16, {1, 16384}, rng);
    run_dequant(f, DType::f16, {2, 16384}, rng);
    run_dequant(f, DType::bf16, {4, 128}, rng, 8);
    run_dequant(f, DType::f32, {4, 128}, rng, 2);
    run_dequant(f, DType::bf16, {4, 128}, rng, 0, 2);
  }
}
}  // namespace

// Under each poison byte: the random codes and nvfp4 scales include NaN ones, whose outputs the
// default 0xFF poison already reads as NaN.
TEST(DequantMxKernel, RandomShapesMatchReference) {
  TEJAS_SEEDED_TEST_RNG();
  testsupport::for_each_poison([&] { dequant_random_shapes(rng); });
}

// As QuantMxKernel.LinearWalkOnlyWhereRowsLieEndToEnd, for dequant_mx: the linear walk (a vector
// placed from its flat index) only where out's, q's and the scales' rows all lie end to end, or
// there is one row; with any one padded the launch walks rows; the outputs match the reference
// bit for bit and the padding stays untouched, under quant.linear=0 too.
TEST(DequantMxKernel, LinearWalkOnlyWhereRowsLieEndToEnd) {
  TEJAS_SEEDED_TEST_RNG();
  for (MxFormat f : kFormats) {
    const int64_t B = mx_block_size(f);
    for (DType od : {DType::bf16, DType::f32}) {
      SCOPED_TRACE(testing::Message() << mx_format_name(f) << " -> " << dtype_name(od));
      for_each_walk_layout(7, [&](int padded, int64_t rows, int linear) {
        const std::vector<int64_t> shape{rows, 96 * B};  // 7 rows: 2-6 blocks, both steps of a thread
        PlacedTensor q(code_dtype(f), shape, padded == 1 ? 32 : 0);
        PlacedTensor s(scale_dtype(f), scale_shape(shape, f), padded == 2 ? 4 : 0);
        PlacedTensor ts(DType::f32, {1});
        fill_codes_and_scales(f, q, s, ts, rng);
        const TensorView tsv = f == MxFormat::nvfp4 ? ts.view() : TensorView{};
        PlacedTensor out(od, shape, padded == 0 ? 8 : 0), out_ref(od, shape);
        const quant_kernel::DequantLaunch l =
            quant_kernel::dequant_launch(quant_kernel::plan_dequant(q, s, tsv, out, B), 0);
        ASSERT_TRUE(l.config.vectorized) << l.config.to_string();
        EXPECT_EQ(l.config.linear, walks_linearly(padded, rows, linear)) << l.config.to_string();
        TEJAS_ASSERT_OK(dequant_mx(backend_ctx(Backend::reference), f, q, s, tsv, out_ref));
        TEJAS_ASSERT_OK(dequant_mx(backend_ctx(Backend::emulator), f, q, s, tsv, out));
        expect_same_bits(out, out_ref, "out");
        EXPECT_TRUE(out.outside_untouched()) << "out: wrote outside its view";
      });
    }
  }
}

TEST(QuantMxKernel, TunedVariantsMatchReference) {  // run_tuned_variants (kernel_test_util.h)
  TEJAS_SEEDED_TEST_RNG();
  run_tuned_variants([&] { quant_random_shapes(rng); }, [&] { dequant_random_shapes(rng); });
}

TEST(DequantMxKernel, CountersAtTheIdeal) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t M = 4, K = 1024;
  PlacedTensor q(DType::e2m1, {M, K}), s(DType::ue8m0, {M, K / 32}), out(DType::bf16, {M, K});
  for (int64_t i = 0; i < q.numel(); ++i) q.set_bits(i, static_cast<uint64_t>(rng.randint(0, 0xF)));
  for (int64_t i = 0; i < s.numel(); ++i) s.set_bits(i, static_cast<uint64_t>(rng.randint(100, 150)));
  TEJAS_ASSERT_OK(dequant_mx(backend_ctx(Backend::emulator), MxFormat::mxfp4, q, s, TensorView{}, out));
  const emu::Counters& c = last_counters();
  EXPECT_EQ(c.sectors_per_store_request(), 16.0);
  EXPECT_EQ(c.global_bytes_read_unique, static_cast<uint64_t>(q.bytes() + s.bytes()));
  EXPECT_EQ(c.global_bytes_written_unique, static_cast<uint64_t>(out.bytes()));
  // Codes: 4 bytes per lane (4 sectors per warp); scales: 32 lanes x 8 outputs = 8 blocks, one sector.
  const uint64_t warps = static_cast<uint64_t>(M * K / 8 / 32);
  EXPECT_EQ(c.global_load_sectors, warps * 4 + warps);
}

TEST(QuantMxKernel, BadTensorScaleRejectedBeforeAnyWrite) {
  PlacedTensor x(DType::bf16, {2, 32}), q(DType::e2m1, {2, 32}), s(DType::e4m3, {2, 2}), ts(DType::f32, {1});
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, 1.0);
  ts.set(0, 0.0);
  const Status st = quant_mx(backend_ctx(Backend::emulator), MxFormat::nvfp4, x, q, s, ts);
  EXPECT_EQ(st.code(), StatusCode::invalid_argument);
  EXPECT_EQ(st.message().rfind("quant_mx: tensor_scale: expected", 0), 0u) << st.message();
  for (int64_t i = 0; i < q.numel(); ++i) ASSERT_EQ(q.bits(i), 0xFu);
  for (int64_t i = 0; i < s.numel(); ++i) ASSERT_EQ(s.bits(i), 0xFFu);
}

// Every emulator case above on the GPU (check helpers through run_kernel: whole buffers mirrored,
// misalignment kept, writes outside the views and past the buffers caught), and the launch
// variants of the A/Bs.
TEST(QuantMxKernel, CudaMatchesReference) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  const ScopedKernelBackend cuda(Backend::cuda);
  testsupport::for_each_poison([&] { quant_random_shapes(rng); });
  strided_and_misaligned(rng);
  nvfp4_tensor_scale_extremes(rng);
  nvfp4_tensor_scale_at_range_ends(rng);
  non_finite_zero_tiny_and_exponent_clamp(rng);
  nvfp4_near_ties_round_exactly(rng);
  packed_fp4_quant_exponents_and_ties(rng);
}

// Debug-check mode on cuda: a device tensor_scale is read and judged before any launch (outside
// [2^-64, 2^64]: invalid_argument naming it, every output byte untouched); formats without one
// read nothing and run.
TEST(QuantMxKernel, CudaDebugChecksReadTheTensorScale) {
  TEJAS_REQUIRE_CUDA();
  const ScopedKernelBackend cuda(Backend::cuda);
  for (double bad : {0.0, 0x1p65}) {
    SCOPED_TRACE(::testing::Message() << "tensor_scale " << bad);
    PlacedTensor x(DType::bf16, {2, 32}), q(DType::e2m1, {2, 32}), s(DType::e4m3, {2, 2}), ts(DType::f32, {1});
    for (int64_t i = 0; i < x.numel(); ++i) x.set(i, 1.0);
    ts.set(0, bad);
    const Status st = run_kernel({&x, &ts}, {&q, &s}, [](const ExecContext& ctx, const std::vector<TensorView>& v) {
      ExecContext debug = ctx;
      debug.debug_checks = true;
      return quant_mx(debug, MxFormat::nvfp4, v[0], v[2], v[3], v[1]);
    });
    EXPECT_EQ(st.code(), StatusCode::invalid_argument) << st.to_string();
    EXPECT_EQ(st.message().rfind("quant_mx: tensor_scale: expected a value in [2^-64, 2^64]", 0), 0u) << st.message();
    EXPECT_TRUE(q.outside_untouched() && s.outside_untouched());
    for (int64_t i = 0; i < q.numel(); ++i) ASSERT_EQ(q.bits(i), q.bits(0)) << "q written";
    PlacedTensor out(DType::bf16, {2, 32});
    const Status dst = run_kernel({&q, &s, &ts}, {&out}, [](const ExecContext& ctx, const std::vector<TensorView>& v) {
      ExecContext debug = ctx;
      debug.debug_checks = true;
      return dequant_mx(debug, MxFormat::nvfp4, v[0], v[1], v[2], v[3]);
    });
    EXPECT_EQ(dst.code(), StatusCode::invalid_argument) << dst.to_string();
    EXPECT_TRUE(out.outside_untouched());
  }
  PlacedTensor x(DType::bf16, {2, 32}), q(DType::e4m3, {2, 32}), s(DType::ue8m0, {2, 1});
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, 1.0);
  const Status ok = run_kernel({&x}, {&q, &s}, [](const ExecContext& ctx, const std::vector<TensorView>& v) {
    ExecContext debug = ctx;
    debug.debug_checks = true;
    return quant_mx(debug, MxFormat::mxfp8, v[0], v[1], v[2]);
  });
  EXPECT_TRUE(ok.ok()) << ok.to_string();
}

TEST(DequantMxKernel, CudaMatchesReference) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  const ScopedKernelBackend cuda(Backend::cuda);
  testsupport::for_each_poison([&] { dequant_random_shapes(rng); });
  packed_fp4_dequant_every_scale_and_code();
  nvfp4_bf16_double_rounding_hazards(rng);
}

TEST(QuantMxKernel, CudaTunedVariantsMatchReference) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  const ScopedKernelBackend cuda(Backend::cuda);
  run_tuned_variants([&] { quant_random_shapes(rng); }, [&] { dequant_random_shapes(rng); });
}
