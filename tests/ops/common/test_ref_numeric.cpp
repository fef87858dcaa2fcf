// Reference numerics (src/ops/common/ref_numeric.h) against values computed independently here
// (tests/ops/common/independent_fp.h: field formulas, explicit tables, table search).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ops/common/independent_fp.h"
#include "ops/common/ref_numeric.h"
#include "support/seed.h"

using namespace tejas;
namespace fp = tejas::testfp;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kSamples = 4000;  // random code pairs per 16-bit format

// Both NaN, or equal with the same sign (so -0 differs from +0).
void expect_same_value(long double want, double got, DType t, uint64_t code) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << dtype_name(t) << " code 0x" << std::hex << code;
    return;
  }
  EXPECT_EQ(static_cast<double>(want), got) << dtype_name(t) << " code 0x" << std::hex << code;
  EXPECT_EQ(std::signbit(want), std::signbit(got)) << dtype_name(t) << " code 0x" << std::hex << code;
}

void check_all_codes(DType t) {
  const uint64_t n = uint64_t{1} << dtype_bits(t);
  for (uint64_t c = 0; c < n; ++c) expect_same_value(fp::decode(t, c), ref::decode(t, c), t, c);
}

}  // namespace

TEST(RefNumericDecode, E2m1ExplicitTable) {
  const double want[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};
  for (uint64_t c = 0; c < 16; ++c) expect_same_value(want[c], ref::decode(DType::e2m1, c), DType::e2m1, c);
}

TEST(RefNumericDecode, E4m3EveryCode) {
  check_all_codes(DType::e4m3);
  EXPECT_EQ(ref::decode(DType::e4m3, 0x7E), 448.0);
  EXPECT_EQ(ref::decode(DType::e4m3, 0x38), 1.0);
  EXPECT_EQ(ref::decode(DType::e4m3, 0x08), std::ldexp(1.0, -6));  // smallest normal
  EXPECT_EQ(ref::decode(DType::e4m3, 0x01), std::ldexp(1.0, -9));  // smallest subnormal
  EXPECT_EQ(ref::decode(DType::e4m3, 0x07), 7 * std::ldexp(1.0, -9));
  EXPECT_EQ(ref::decode(DType::e4m3, 0xFE), -448.0);
  EXPECT_TRUE(std::isnan(ref::decode(DType::e4m3, 0x7F)));
  EXPECT_TRUE(std::isnan(ref::decode(DType::e4m3, 0xFF)));
  EXPECT_EQ(ref::decode(DType::e4m3, 0x78), 256.0);  // exponent field 15 is finite in e4m3fn
  int nans = 0;
  for (uint64_t c = 0; c < 256; ++c) nans += std::isnan(ref::decode(DType::e4m3, c));
  EXPECT_EQ(nans, 2);
}

TEST(RefNumericDecode, E5m2EveryCode) {
  check_all_codes(DType::e5m2);
  EXPECT_EQ(ref::decode(DType::e5m2, 0x7B), 57344.0);
  EXPECT_EQ(ref::decode(DType::e5m2, 0x3C), 1.0);
  EXPECT_EQ(ref::decode(DType::e5m2, 0x04), std::ldexp(1.0, -14));  // smallest normal
  EXPECT_EQ(ref::decode(DType::e5m2, 0x01), std::ldexp(1.0, -16));  // smallest subnormal
  EXPECT_EQ(ref::decode(DType::e5m2, 0x7C), kInf);
  EXPECT_EQ(ref::decode(DType::e5m2, 0xFC), -kInf);
  for (uint64_t c : {0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF}) EXPECT_TRUE(std::isnan(ref::decode(DType::e5m2, c)));
}

TEST(RefNumericDecode, Ue8m0EveryCode) {
  check_all_codes(DType::ue8m0);
  EXPECT_EQ(ref::decode(DType::ue8m0, 127), 1.0);
  EXPECT_EQ(ref::decode(DType::ue8m0, 0), std::ldexp(1.0, -127));
  EXPECT_EQ(ref::decode(DType::ue8m0, 254), std::ldexp(1.0, 127));
  EXPECT_TRUE(std::isnan(ref::decode(DType::ue8m0, 255)));
}

TEST(RefNumericDecode, F16AndBf16EveryCode) {
  check_all_codes(DType::f16);
  check_all_codes(DType::bf16);
  EXPECT_EQ(ref::decode(DType::f16, 0x7BFF), 65504.0);
  EXPECT_EQ(ref::decode(DType::f16, 0x0001), std::ldexp(1.0, -24));
  EXPECT_EQ(ref::decode(DType::bf16, 0x3F80), 1.0);
}

TEST(RefNumericDecode, MaxFinite) {
  EXPECT_EQ(ref::max_finite(DType::e4m3), 448.0);
  EXPECT_EQ(ref::max_finite(DType::e5m2), 57344.0);
  EXPECT_EQ(ref::max_finite(DType::e2m1), 6.0);
  EXPECT_EQ(ref::max_finite(DType::f16), 65504.0);
  EXPECT_EQ(ref::max_finite(DType::bf16), static_cast<double>((2.0L - fp::pow2(-7)) * fp::pow2(127)));
  EXPECT_EQ(ref::max_finite(DType::f32), static_cast<double>(std::numeric_limits<float>::max()));
}

TEST(RefNumericEncode, RoundTripEveryNonNanCode) {
  for (DType t : {DType::e4m3, DType::e5m2, DType::e2m1, DType::ue8m0, DType::f16, DType::bf16}) {
    const uint64_t n = uint64_t{1} << dtype_bits(t);
    for (uint64_t c = 0; c < n; ++c) {
      const double v = ref::decode(t, c);
      if (std::isnan(v)) continue;
      if (std::isinf(v) && t == DType::e5m2) continue;  // saturates (checked below)
      EXPECT_EQ(ref::encode(t, v), c) << dtype_name(t) << " code 0x" << std::hex << c;
    }
    if (t != DType::ue8m0) {
      EXPECT_EQ(ref::encode(t, -0.0), fp::sign_bit(t)) << dtype_name(t) << " -0";
    }
  }
}

// Every midpoint between adjacent values goes to the even code; a hair either side goes to the
// nearer one. Both signs.
TEST(RefNumericEncode, TiesToEvenAtEveryMidpointNarrowFormats) {
  for (DType t : {DType::e4m3, DType::e5m2, DType::e2m1}) {
    const fp::ValueTable& tab = fp::table(t);
    for (size_t j = 0; j + 1 < tab.values.size(); ++j) {
      const uint64_t lo = tab.codes[j], hi = tab.codes[j + 1];
      const uint64_t even = (lo % 2 == 0) ? lo : hi;
      const double mid = static_cast<double>((tab.values[j] + tab.values[j + 1]) / 2);  // exact
      for (int s : {1, -1}) {
        const uint64_t sign = s < 0 ? fp::sign_bit(t) : 0;
        SCOPED_TRACE(testing::Message() << dtype_name(t) << " between codes " << lo << " and " << hi << " sign " << s);
        EXPECT_EQ(ref::encode(t, s * mid), sign | even);
        EXPECT_EQ(ref::encode(t, s * std::nextafter(mid, 0.0)), sign | lo);
        EXPECT_EQ(ref::encode(t, s * std::nextafter(mid, kInf)), sign | hi);
      }
    }
  }
}

TEST(RefNumericEncode, TiesToEvenSampledF16Bf16) {
  TEJAS_SEEDED_TEST_RNG();
  for (DType t : {DType::f16, DType::bf16}) {
    const uint64_t max_code = t == DType::f16 ? 0x7BFF : 0x7F7F;
    for (int i = 0; i < kSamples; ++i) {
      const auto lo = static_cast<uint64_t>(rng.randint(0, static_cast<int64_t>(max_code) - 1)), hi = lo + 1;
      const long double vlo = fp::decode(t, lo), vhi = fp::decode(t, hi);
      const double mid = static_cast<double>((vlo + vhi) / 2);
      const uint64_t even = (lo % 2 == 0) ? lo : hi;
      const uint64_t sign = rng.randint(0, 1) ? 0x8000 : 0;
      const double s = sign ? -1.0 : 1.0;
      SCOPED_TRACE(testing::Message() << dtype_name(t) << " between codes " << lo << " and " << hi);
      EXPECT_EQ(ref::encode(t, s * mid), sign | even);
      EXPECT_EQ(ref::encode(t, s * std::nextafter(mid, 0.0)), sign | lo);
      EXPECT_EQ(ref::encode(t, s * std::nextafter(mid, kInf)), sign | hi);
    }
  }
  // Below the smallest f16 subnormal: half of it ties to zero, 1.5 of it to 2 (even).
  EXPECT_EQ(ref::encode(DType::f16, std::ldexp(1.0, -25)), 0x0000u);
  EXPECT_EQ(ref::encode(DType::f16, 1.5 * std::ldexp(1.0, -24)), 0x0002u);
  EXPECT_EQ(ref::encode(DType::f16, -std::ldexp(1.0, -26)), 0x8000u);
}

TEST(RefNumericEncode, NarrowFormatsSaturate) {
  struct Case {
    DType t;
    uint64_t max_code;
    std::vector<double> above;  // every one of these saturates to max_code
  };
  const Case cases[] = {
      {DType::e4m3, 0x7E, {448, 449, 463.99, 464, 464.01, 480, 512, 1e6, 1e300, kInf}},
      {DType::e5m2, 0x7B, {57344, 59391, 59392, 61440, 65536, 1e9, 1e300, kInf}},
      {DType::e2m1, 0x7, {6, 6.5, 7, 8, 1e9, 1e300, kInf}},
  };
  for (const Case& c : cases) {
    for (double v : c.above) {
      EXPECT_EQ(ref::encode(c.t, v), c.max_code) << dtype_name(c.t) << " " << v;
      EXPECT_EQ(ref::encode(c.t, -v), c.max_code | fp::sign_bit(c.t)) << dtype_name(c.t) << " " << -v;
    }
  }
}

TEST(RefNumericEncode, NanCodes) {
  EXPECT_EQ(ref::encode(DType::e4m3, kNaN), 0x7Fu);
  EXPECT_EQ(ref::encode(DType::e4m3, -kNaN), 0xFFu);
  EXPECT_TRUE(std::isnan(ref::decode(DType::e5m2, ref::encode(DType::e5m2, kNaN))));
  EXPECT_EQ(ref::encode(DType::e2m1, kNaN), 0x7u);  // no NaN in e2m1: +6, as documented
  EXPECT_EQ(ref::encode(DType::ue8m0, kNaN), 0xFFu);
  EXPECT_TRUE(std::isnan(ref::decode(DType::f16, ref::encode(DType::f16, kNaN))));
  EXPECT_TRUE(std::isnan(ref::decode(DType::bf16, ref::encode(DType::bf16, kNaN))));
  EXPECT_TRUE(std::isnan(ref::decode(DType::f32, ref::encode(DType::f32, kNaN))));
  for (DType t : {DType::i8, DType::u8, DType::i32, DType::i64}) EXPECT_EQ(ref::decode(t, ref::encode(t, kNaN)), 0.0);
}

TEST(RefNumericEncode, F16Bf16OverflowToInf) {
  EXPECT_EQ(ref::encode(DType::f16, 65504.0), 0x7BFFu);
  EXPECT_EQ(ref::encode(DType::f16, std::nextafter(65520.0, 0.0)), 0x7BFFu);
  EXPECT_EQ(ref::encode(DType::f16, 65520.0), 0x7C00u);  // midpoint to the next binade: ties to Inf (even)
  EXPECT_EQ(ref::encode(DType::f16, 1e10), 0x7C00u);
  EXPECT_EQ(ref::encode(DType::f16, -65520.0), 0xFC00u);
  EXPECT_EQ(ref::encode(DType::f16, kInf), 0x7C00u);
  EXPECT_EQ(ref::encode(DType::f16, -kInf), 0xFC00u);
  const double bf_max = static_cast<double>((2.0L - fp::pow2(-7)) * fp::pow2(127));
  const double bf_half_ulp = std::ldexp(1.0, 119);
  EXPECT_EQ(ref::encode(DType::bf16, bf_max), 0x7F7Fu);
  EXPECT_EQ(ref::encode(DType::bf16, std::nextafter(bf_max + bf_half_ulp, 0.0)), 0x7F7Fu);
  EXPECT_EQ(ref::encode(DType::bf16, bf_max + bf_half_ulp), 0x7F80u);
  EXPECT_EQ(ref::encode(DType::bf16, 1e39), 0x7F80u);
  EXPECT_EQ(ref::encode(DType::bf16, -1e300), 0xFF80u);
  EXPECT_EQ(ref::encode(DType::bf16, kInf), 0x7F80u);
}

TEST(RefNumericEncode, Ue8m0RoundsUp) {
  constexpr int kBias = 127;
  for (int e = -126; e <= 127; ++e) {
    const double p = static_cast<double>(fp::pow2(e));
    const auto code = static_cast<uint64_t>(e + kBias);
    EXPECT_EQ(ref::encode(DType::ue8m0, p), code) << "2^" << e;
    EXPECT_EQ(ref::encode(DType::ue8m0, 0.75 * p), code) << "0.75 * 2^" << e;
    EXPECT_EQ(ref::encode(DType::ue8m0, std::nextafter(p, 0.0)), code) << "just below 2^" << e;
    if (e < 127) {
      EXPECT_EQ(ref::encode(DType::ue8m0, std::nextafter(p, kInf)), code + 1) << "just above 2^" << e;
    }
  }
  EXPECT_EQ(ref::encode(DType::ue8m0, std::ldexp(1.0, -127)), 0x00u);
  EXPECT_EQ(ref::encode(DType::ue8m0, std::ldexp(1.0, -140)), 0x00u);
  EXPECT_EQ(ref::encode(DType::ue8m0, 0.0), 0x00u);
  EXPECT_EQ(ref::encode(DType::ue8m0, -1.0), 0x00u);
  EXPECT_EQ(ref::encode(DType::ue8m0, 1.5 * std::ldexp(1.0, 127)), 0xFEu);
  EXPECT_EQ(ref::encode(DType::ue8m0, kInf), 0xFEu);
  EXPECT_EQ(ref::encode(DType::ue8m0, kNaN), 0xFFu);
}

TEST(RefNumericEncode, IntegersRoundToEvenAndSaturate) {
  auto enc = [](DType t, double v) { return ref::decode(t, ref::encode(t, v)); };
  EXPECT_EQ(enc(DType::i8, 2.5), 2.0);
  EXPECT_EQ(enc(DType::i8, 3.5), 4.0);
  EXPECT_EQ(enc(DType::i8, -2.5), -2.0);
  EXPECT_EQ(enc(DType::i8, 127.4), 127.0);
  EXPECT_EQ(enc(DType::i8, 127.5), 127.0);
  EXPECT_EQ(enc(DType::i8, 1e6), 127.0);
  EXPECT_EQ(enc(DType::i8, -128.5), -128.0);
  EXPECT_EQ(enc(DType::i8, -kInf), -128.0);
  EXPECT_EQ(enc(DType::u8, -1.0), 0.0);
  EXPECT_EQ(enc(DType::u8, 255.5), 255.0);
  EXPECT_EQ(enc(DType::u8, 256.0), 255.0);
  EXPECT_EQ(enc(DType::i32, 3e9), 2147483647.0);
  EXPECT_EQ(enc(DType::i32, -3e9), -2147483648.0);
  EXPECT_EQ(enc(DType::i32, 0.5), 0.0);
  EXPECT_EQ(ref::encode(DType::i64, 1e19), static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(ref::encode(DType::i64, -1e19), static_cast<uint64_t>(std::numeric_limits<int64_t>::min()));
  EXPECT_EQ(ref::encode(DType::i8, -1.0), 0xFFu);  // two's complement in the low byte
}

TEST(RefNumericAccess, Fp4NibblesLowFirst) {
  uint8_t buf[2] = {0xFF, 0xFF};
  const TensorView t = TensorView::contiguous(buf, DType::e2m1, {4});
  ref::put(t, 0, 1.0);   // code 0x2 -> low nibble of byte 0
  EXPECT_EQ(buf[0], 0xF2);
  ref::put(t, 1, -3.0);  // code 0xD -> high nibble of byte 0
  EXPECT_EQ(buf[0], 0xD2);
  EXPECT_EQ(buf[1], 0xFF);
  ref::put(t, 3, 0.5);   // code 0x1 -> high nibble of byte 1
  EXPECT_EQ(buf[1], 0x1F);
  EXPECT_EQ(ref::at(t, 0), 1.0);
  EXPECT_EQ(ref::at(t, 1), -3.0);
  EXPECT_EQ(ref::at(t, 3), 0.5);
}

TEST(RefNumericAccess, StridedLoadStore) {
  uint16_t buf[6] = {};
  TensorView t = TensorView::contiguous(buf, DType::bf16, {2, 2});
  t.stride[0] = 3;  // rows 3 elements apart
  ref::put(t, 1, 1, 1.0);
  EXPECT_EQ(buf[4], 0x3F80);
  EXPECT_EQ(ref::at(t, 1, 1), 1.0);
  for (int i : {0, 1, 2, 3, 5}) EXPECT_EQ(buf[i], 0);
}
