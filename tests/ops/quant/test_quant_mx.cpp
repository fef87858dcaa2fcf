// quant_mx / dequant_mx (MXFP8, MXFP4, NVFP4; reference backend) against expectations computed
// in the test (quant_expect.h), plus hand-worked shared-exponent and non-finite cases.
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

constexpr int kMagSpread = 8;  // per-block magnitudes 2^-8 .. 2^8
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr long double kF32HalfUlpRel = 0x1p-24L;
constexpr MxFormat kFormats[] = {MxFormat::mxfp8, MxFormat::mxfp4, MxFormat::nvfp4};

ExecContext ref_ctx() {
  ExecContext ctx;
  ctx.backend = Backend::reference;
  return ctx;
}

DType code_dtype(MxFormat f) { return f == MxFormat::mxfp8 ? DType::e4m3 : DType::e2m1; }
DType scale_dtype(MxFormat f) { return f == MxFormat::nvfp4 ? DType::e4m3 : DType::ue8m0; }
int64_t block_of(MxFormat f) { return f == MxFormat::nvfp4 ? 16 : 32; }

void fill_blocks(HostTensor& x, check::Rng& rng, int64_t block) {
  const int64_t K = x.shape().back();
  double mag = 1;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if ((i % K) % block == 0) mag = std::ldexp(1.0, static_cast<int>(rng.randint(-kMagSpread, kMagSpread)));
    x.set_flat(i, rng.normal() * mag);
  }
}

// The caller's NVFP4 recipe: tensor_scale = amax_tensor / (448 * 6), rounded to f32.
float nvfp4_tensor_scale(const HostTensor& x) {
  long double amax = 0;
  for (int64_t i = 0; i < x.numel(); ++i) amax = std::max(amax, std::fabs(x_value(x, i)));
  return static_cast<float>(amax / (kMaxE4m3 * kMaxE2m1));
}

struct Quantized {
  HostTensor q, scales, ts;
};

// Quantizes x with `format` (nvfp4: tensor scale `ts`), checks every code against the test's
// expectation and that nothing outside the views was written.
Quantized run_and_check(MxFormat f, const HostTensor& x, float ts = 0, int64_t pad = 0) {
  std::vector<int64_t> sshape = x.shape();
  sshape.back() /= block_of(f);
  Quantized r{HostTensor(code_dtype(f), x.shape(), pad), HostTensor(scale_dtype(f), sshape, pad), HostTensor()};
  TensorView tsv;
  if (f == MxFormat::nvfp4) {
    r.ts = HostTensor(DType::f32, {1});
    r.ts.set_flat(0, ts);
    tsv = r.ts.view();
  }
  const Status st = quant_mx(ref_ctx(), f, x, r.q, r.scales, tsv);
  EXPECT_TRUE(st.ok()) << st.to_string();
  if (!st.ok()) return r;
  expect_matches(r.q, r.scales, expect_mx(f, x, ts));
  expect_only_view_written(r.q, "q");
  expect_only_view_written(r.scales, "scales");
  return r;
}

}  // namespace

TEST(QuantMx, RandomInputsExactCodes) {
  TEJAS_SEEDED_TEST_RNG();
  for (MxFormat f : kFormats) {
    for (DType xd : {DType::f32, DType::bf16, DType::f16}) {
      SCOPED_TRACE(testing::Message() << mx_format_name(f) << " x " << dtype_name(xd));
      HostTensor x(xd, {6, 128});
      fill_blocks(x, rng, block_of(f));
      run_and_check(f, x, f == MxFormat::nvfp4 ? nvfp4_tensor_scale(x) : 0);
    }
  }
}

TEST(QuantMx, HostileShapesAndStrides) {
  TEJAS_SEEDED_TEST_RNG();
  struct Shape {
    std::vector<int64_t> dims;
    int64_t pad;  // row padding of x, q and scales (even: fp4 rows start on bytes)
  };
  const Shape shapes[] = {{{1, 32}, 0},  {{1023, 32}, 0}, {{3, 4224}, 0},
                          {{2, 3, 64}, 0}, {{5, 96}, 2},    {{2, 3, 64}, 6}};
  for (MxFormat f : kFormats) {
    for (const Shape& s : shapes) {
      SCOPED_TRACE(testing::Message() << mx_format_name(f) << " shape " << testing::PrintToString(s.dims) << " pad "
                                      << s.pad);
      HostTensor x(DType::f32, s.dims, s.pad + 1);  // odd padding is fine for x
      fill_blocks(x, rng, block_of(f));
      run_and_check(f, x, f == MxFormat::nvfp4 ? nvfp4_tensor_scale(x) : 0, s.pad);
    }
  }
}

// OCP shared exponent floor(log2(amax)) - emax_elem at its edges, worked by hand.
TEST(QuantMx, SharedExponentEdges) {
  struct Block {
    double amax;          // one element holds it; the rest are amax / 4 or 0
    int e_mxfp8, e_mxfp4;  // expected exponents of the scale (after clamping at -127)
  };
  const double f32_denorm = 1e-40;  // floor(log2) = -133
  const Block blocks[] = {
      {32.0, -3, 3},                                    // exactly a power of two
      {32.0 * (1 - std::ldexp(1.0, -20)), -4, 2},       // just below one
      {1.0 - std::ldexp(1.0, -24), -9, -3},             // just below 1.0
      {f32_denorm, -127, -127},                         // subnormal-range amax: clamped
      {std::ldexp(1.0, -118), -126, -120},              // near the bottom of the range
      {std::ldexp(1.0, -120), -127, -122},              // mxfp8 clamps, mxfp4 does not
      {0.0, -127, -127},                                // all-zero block
      {511.0, 0, 6},                                    // saturates: 511 -> 448, 511/64 -> 6
  };
  constexpr int64_t kBlocks = sizeof(blocks) / sizeof(blocks[0]);
  HostTensor x(DType::f32, {1, 32 * kBlocks});
  for (int64_t b = 0; b < kBlocks; ++b)
    for (int64_t k = 0; k < 32; ++k) x.set({0, 32 * b + k}, k == 7 ? -blocks[b].amax : blocks[b].amax * (k % 3) / 4);
  for (MxFormat f : {MxFormat::mxfp8, MxFormat::mxfp4}) {
    SCOPED_TRACE(mx_format_name(f));
    const Quantized r = run_and_check(f, x);
    for (int64_t b = 0; b < kBlocks; ++b) {
      const int e = f == MxFormat::mxfp8 ? blocks[b].e_mxfp8 : blocks[b].e_mxfp4;
      EXPECT_EQ(r.scales.bits_flat(b), static_cast<uint64_t>(e + kUe8m0Bias)) << "block " << b;
    }
    const uint64_t neg_max = f == MxFormat::mxfp8 ? 0xFE : 0xF;
    auto sign_of = [](MxFormat g) -> uint64_t { return g == MxFormat::mxfp8 ? 0x80 : 0x8; };
    EXPECT_EQ(r.q.bits_flat(32 * 7 + 7), neg_max);  // -511 saturates
    for (int64_t k = 0; k < 32; ++k)  // zero block: +0 codes, and -0 keeps its sign
      EXPECT_EQ(r.q.bits_flat(32 * 6 + k), k == 7 ? sign_of(f) : 0u) << k;
  }
}

TEST(QuantMx, Nvfp4TensorScaleUsesTheFullE4m3Range) {
  TEJAS_SEEDED_TEST_RNG();
  HostTensor x(DType::bf16, {4, 64});
  fill_blocks(x, rng, 16);
  const float ts = nvfp4_tensor_scale(x);
  const Quantized r = run_and_check(MxFormat::nvfp4, x, ts);
  // The block holding the tensor's amax gets block_scale 448 (the e4m3 max).
  uint64_t top = 0;
  for (int64_t b = 0; b < r.scales.numel(); ++b) top = std::max(top, r.scales.bits_flat(b));
  EXPECT_EQ(top, 0x7Eu);
}

TEST(QuantMx, Nvfp4ZeroBlockScaleGivesZeroCodes) {
  HostTensor x(DType::f32, {1, 48});
  for (int64_t k = 0; k < 16; ++k) x.set({0, k}, k % 2 ? -1e-4 : 1e-4);  // 1e-4/6 < 2^-10: scale 0
  for (int64_t k = 16; k < 32; ++k) x.set({0, k}, 0.0);
  for (int64_t k = 32; k < 48; ++k) x.set({0, k}, 3.0 * (k - 40));
  const Quantized r = run_and_check(MxFormat::nvfp4, x, 1.0f);
  EXPECT_EQ(r.scales.bits_flat(0), 0u);
  EXPECT_EQ(r.scales.bits_flat(1), 0u);
  for (int64_t k = 0; k < 32; ++k) EXPECT_EQ(r.q.bits_flat(k), 0u) << k;
}

TEST(QuantMx, NanGivesNanScaleAndInfSaturates) {
  for (MxFormat f : kFormats) {
    SCOPED_TRACE(mx_format_name(f));
    const int64_t B = block_of(f);
    HostTensor x(DType::f32, {2, 2 * B});
    for (int64_t i = 0; i < x.numel(); ++i) x.set_flat(i, 0.25 * static_cast<double>(i % 7) - 0.5);
    x.set({0, B + 3}, kNaN);  // row 0, block 1
    x.set({1, 1}, kInf);      // row 1, block 0
    x.set({1, 2}, -kInf);
    const float ts = 1.0f;
    const Quantized r = run_and_check(f, x, ts);
    const uint64_t nan_scale = f == MxFormat::nvfp4 ? kE4m3NaN : kUe8m0NaN;
    const uint64_t nan_q = f == MxFormat::mxfp8 ? kE4m3NaN : kE2m1NaNStandIn;
    EXPECT_EQ(r.scales.bits_flat(1), nan_scale);
    for (int64_t k = B; k < 2 * B; ++k) EXPECT_EQ(r.q.bits_flat(k), nan_q);
    // Inf acts as FLT_MAX (2^127 * (2 - 2^-23)): scale exponent 127 - emax_elem; nvfp4 block
    // scale saturates at 448.
    const uint64_t inf_scale = f == MxFormat::mxfp8 ? 127 - 8 + 127 : f == MxFormat::mxfp4 ? 127 - 2 + 127 : 0x7E;
    EXPECT_EQ(r.scales.bits_flat(2), inf_scale);
    const uint64_t max_q = f == MxFormat::mxfp8 ? 0x7E : 0x7, sign = f == MxFormat::mxfp8 ? 0x80 : 0x8;
    EXPECT_EQ(r.q.bits_flat(2 * B + 1), max_q);
    EXPECT_EQ(r.q.bits_flat(2 * B + 2), max_q | sign);

    HostTensor out(DType::f32, x.shape());
    TEJAS_ASSERT_OK(dequant_mx(ref_ctx(), f, r.q, r.scales, f == MxFormat::nvfp4 ? r.ts.view() : TensorView{}, out));
    for (int64_t i = 0; i < out.numel(); ++i)
      EXPECT_EQ(std::isnan(out.get_flat(i)), i >= B && i < 2 * B) << i;
  }
}

TEST(QuantMx, Fp4NibbleOrder) {
  HostTensor x(DType::f32, {1, 32});
  for (int64_t k = 0; k < 32; ++k) x.set({0, k}, 0.0);
  x.set({0, 0}, 1.0);   // amax 6 -> X = 2^(2 - 2) = 1
  x.set({0, 1}, 2.0);
  x.set({0, 2}, 0.5);
  x.set({0, 3}, -6.0);
  const Quantized r = run_and_check(MxFormat::mxfp4, x);
  const auto* bytes = static_cast<const uint8_t*>(r.q.view().data);
  EXPECT_EQ(bytes[0], 0x42);  // element 0 (code 0x2) in the low nibble
  EXPECT_EQ(bytes[1], 0xF1);
  EXPECT_EQ(r.scales.bits_flat(0), static_cast<uint64_t>(kUe8m0Bias));
}

TEST(QuantMx, RoundTripWithinHalfACodeStep) {
  TEJAS_SEEDED_TEST_RNG();
  for (MxFormat f : kFormats) {
    SCOPED_TRACE(mx_format_name(f));
    const int64_t B = block_of(f);
    const DType cd = code_dtype(f);
    const long double qmax = cd == DType::e4m3 ? kMaxE4m3 : kMaxE2m1;
    HostTensor x(DType::f32, {8, 192});
    fill_blocks(x, rng, B);
    const float ts = f == MxFormat::nvfp4 ? nvfp4_tensor_scale(x) : 1.0f;
    const Quantized r = run_and_check(f, x, ts);
    HostTensor out(DType::f32, x.shape());
    TEJAS_ASSERT_OK(dequant_mx(ref_ctx(), f, r.q, r.scales, f == MxFormat::nvfp4 ? r.ts.view() : TensorView{}, out));
    int64_t bad = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      long double s = fp::decode(scale_dtype(f), r.scales.bits_flat(i / B));
      if (f == MxFormat::nvfp4) s *= ts;
      const long double xv = x_value(x, i), got = fp::decode(DType::f32, out.bits_flat(i));
      const long double u = std::fabs(xv) / s;
      // Saturated values (u > max: the OCP exponent allows up to 2 * 2^emax) lose u - max.
      const long double q_err = s == 0 ? std::fabs(xv) : u > qmax ? (u - qmax) * s : half_step(cd, u) * s;
      const long double bound = q_err + kF32HalfUlpRel * std::fabs(got);
      if (!(std::fabs(got - xv) <= bound) && bad++ < 5)
        ADD_FAILURE() << "at " << i << ": x " << static_cast<double>(xv) << " round trip "
                      << static_cast<double>(got) << " bound " << static_cast<double>(bound);
    }
  }
}

TEST(QuantMx, DequantExact) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t kUe8m0Lo = 118, kUe8m0Hi = 136;  // 2^-9 .. 2^9
  for (MxFormat f : kFormats) {
    for (DType od : {DType::f32, DType::bf16}) {
      SCOPED_TRACE(testing::Message() << mx_format_name(f) << " out " << dtype_name(od));
      const int64_t B = block_of(f), M = 3, K = 4 * B;
      const DType cd = code_dtype(f), sd = scale_dtype(f);
      HostTensor q(cd, {M, K}, 2), scales(sd, {M, 4}), out(od, {M, K}, 1), ts(DType::f32, {1});
      // bf16: a power-of-two tensor scale keeps every product exact; f32: any scale.
      ts.set_flat(0, od == DType::bf16 ? 0.125 : rng.uniform(1e-3, 1.0));
      const int64_t code_hi = cd == DType::e4m3 ? 0xFF : 0xF;
      for (int64_t i = 0; i < q.numel(); ++i) {
        uint64_t c = static_cast<uint64_t>(rng.randint(0, code_hi));
        if (cd == DType::e4m3 && (c & 0x7F) == 0x7F) c ^= 1;  // finite codes only
        q.set_bits_flat(i, c);
      }
      for (int64_t i = 0; i < scales.numel(); ++i) {
        const auto c = static_cast<uint64_t>(sd == DType::ue8m0 ? rng.randint(kUe8m0Lo, kUe8m0Hi) : rng.randint(0, 0x7E));
        scales.set_bits_flat(i, c);
      }
      const TensorView tsv = f == MxFormat::nvfp4 ? ts.view() : TensorView{};
      TEJAS_ASSERT_OK(dequant_mx(ref_ctx(), f, q, scales, tsv, out));
      expect_only_view_written(out, "out");
      const long double tsv_value = f == MxFormat::nvfp4 ? fp::decode(DType::f32, ts.bits_flat(0)) : 1.0L;
      for (int64_t i = 0; i < out.numel(); ++i) {
        const long double want = fp::decode(cd, q.bits_flat(i)) * fp::decode(sd, scales.bits_flat(i / B)) * tsv_value;
        const long double got = fp::decode(od, out.bits_flat(i));
        if (od == DType::f32) {
          ASSERT_EQ(got, static_cast<float>(want)) << i;
        } else {
          ASSERT_EQ(got, want) << i;
        }
      }
    }
  }
}
