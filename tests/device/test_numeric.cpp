// tejas::num conversions (CUDA headers) against tejas::ref (an independent float64 model written
// from the format definitions). Every narrow code point is checked exhaustively; f32 -> code is
// checked on every code's value, every midpoint between neighbours (and one f32 ulp either side),
// values beyond the range, NaN/Inf, and large seeded random samples.
#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "device/numeric/convert.h"
#include "ops/common/ref_numeric.h"
#include "support/seed.h"

using namespace tejas;

namespace {

constexpr int kRandomSamples = 1 << 20;    // per format, random f32 bit patterns
constexpr int kInRangeSamples = 1 << 18;   // per format, random values near the format's range
constexpr int kMaxReported = 8;            // mismatches printed per check

using Encode = std::function<uint32_t(float)>;
using Decode = std::function<float(uint32_t)>;

struct Format {
  const char* name;
  DType dtype;
  int bits;  // code width
  Encode enc;
  Decode dec;
};

std::vector<Format> narrow_formats() {
  return {
      {"e4m3", DType::e4m3, 8, [](float x) { return uint32_t{num::f32_to_e4m3(x)}; },
       [](uint32_t c) { return num::e4m3_to_f32(static_cast<uint8_t>(c)); }},
      {"e5m2", DType::e5m2, 8, [](float x) { return uint32_t{num::f32_to_e5m2(x)}; },
       [](uint32_t c) { return num::e5m2_to_f32(static_cast<uint8_t>(c)); }},
      {"e2m1", DType::e2m1, 4, [](float x) { return uint32_t{num::f32_to_e2m1(x)}; },
       [](uint32_t c) { return num::e2m1_to_f32(static_cast<uint8_t>(c)); }},
  };
}
std::vector<Format> half_formats() {
  return {
      {"bf16", DType::bf16, 16, [](float x) { return uint32_t{num::f32_to_bf16(x)}; },
       [](uint32_t c) { return num::bf16_to_f32(static_cast<uint16_t>(c)); }},
      {"f16", DType::f16, 16, [](float x) { return uint32_t{num::f32_to_f16(x)}; },
       [](uint32_t c) { return num::f16_to_f32(static_cast<uint16_t>(c)); }},
  };
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}
std::string describe(float x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g (f32 bits %s)", static_cast<double>(x), hex(std::bit_cast<uint32_t>(x)).c_str());
  return buf;
}

// Same double value, and same sign for zeros; NaN only against NaN.
bool same_value(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// Accumulates encode mismatches against ref::encode. NaN inputs are checked separately (the
// codes differ, see NanInputs), so here they only need to produce a NaN code.
class EncodeChecker {
 public:
  explicit EncodeChecker(const Format& f) : f_(f) {}
  void check(float x) {
    ++checked_;
    const uint32_t got = f_.enc(x);
    if (std::isnan(x)) {
      if (!std::isnan(ref::decode(f_.dtype, got)) && f_.dtype != DType::e2m1) fail(x, got, "a NaN code");
      return;
    }
    const uint64_t want = ref::encode(f_.dtype, static_cast<double>(x));
    if (got != want) fail(x, got, hex(want));
  }
  void finish() const {
    EXPECT_EQ(mismatches_, 0) << f_.name << ": " << mismatches_ << " of " << checked_ << " inputs mismatch\n" << report_;
  }

 private:
  void fail(float x, uint32_t got, const std::string& want) {
    if (++mismatches_ <= kMaxReported) report_ += "  " + describe(x) + ": got " + hex(got) + " want " + want + "\n";
  }
  const Format& f_;
  int64_t checked_ = 0, mismatches_ = 0;
  std::string report_;
};

// Finite positive values of a format in increasing order (from ref::decode).
std::vector<double> positive_values(const Format& f) {
  std::vector<double> v;
  const uint32_t sign_bit = 1u << (f.bits - 1);
  for (uint32_t c = 0; c < sign_bit; ++c) {
    const double d = ref::decode(f.dtype, c);
    if (std::isfinite(d)) v.push_back(d);
  }
  return v;  // codes of one sign are monotonic in value
}

void check_code_points_and_midpoints(const Format& f) {
  EncodeChecker ck(f);
  const std::vector<double> pos = positive_values(f);
  for (size_t i = 0; i < pos.size(); ++i) {
    for (const double s : {1.0, -1.0}) {
      ck.check(static_cast<float>(s * pos[i]));
      if (i + 1 == pos.size()) continue;
      // The midpoint is exact in f32 for every format with fewer mantissa bits than f32.
      const auto mid = static_cast<float>(s * (pos[i] + pos[i + 1]) / 2);
      ck.check(mid);
      ck.check(std::nextafter(mid, 0.0f));
      ck.check(std::nextafter(mid, s * std::numeric_limits<float>::infinity()));
    }
  }
  // Beyond the largest finite value.
  const double max = ref::max_finite(f.dtype);
  for (const double m : {1.0 + 1.0 / 64, 1.0 + 1.0 / 16, 1.125, 1.5, 2.0, 1024.0}) {
    ck.check(static_cast<float>(max * m));
    ck.check(static_cast<float>(-max * m));
  }
  for (const float x : {FLT_MAX, -FLT_MAX, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                        FLT_MIN, -FLT_MIN, std::numeric_limits<float>::denorm_min(), 0.0f, -0.0f}) {
    ck.check(x);
  }
  ck.finish();
}

void check_random(const Format& f, check::Rng& rng) {
  EncodeChecker ck(f);
  for (int i = 0; i < kRandomSamples; ++i) ck.check(std::bit_cast<float>(static_cast<uint32_t>(rng.next())));
  // Random values spread over the format's binades (a few beyond both ends), both signs.
  const double max = ref::max_finite(f.dtype);
  const double min_sub = ref::decode(f.dtype, 1);
  const double lo = std::log2(min_sub) - 3, hi = std::log2(max) + 2;
  for (int i = 0; i < kInRangeSamples; ++i) {
    const double mag = std::exp2(rng.uniform(lo, hi));
    ck.check(static_cast<float>((rng.next() & 1) ? -mag : mag));
  }
  ck.finish();
}

}  // namespace

TEST(Numeric, DecodeEveryNarrowCode) {
  for (const Format& f : narrow_formats()) {
    for (uint32_t c = 0; c < (1u << f.bits); ++c) {
      EXPECT_TRUE(same_value(f.dec(c), ref::decode(f.dtype, c)))
          << f.name << " code " << hex(c) << ": got " << f.dec(c) << " want " << ref::decode(f.dtype, c);
    }
  }
}

TEST(Numeric, DecodeEveryHalfCode) {
  for (const Format& f : half_formats()) {
    int bad = 0;
    for (uint32_t c = 0; c < (1u << f.bits); ++c) {
      if (!same_value(f.dec(c), ref::decode(f.dtype, c)) && ++bad <= kMaxReported) {
        ADD_FAILURE() << f.name << " code " << hex(c) << ": got " << f.dec(c) << " want " << ref::decode(f.dtype, c);
      }
    }
    EXPECT_EQ(bad, 0) << f.name;
  }
}

TEST(Numeric, DecodeEveryUe8m0Code) {
  for (uint32_t c = 0; c < 256; ++c) {
    const float got = num::ue8m0_to_f32(static_cast<uint8_t>(c));
    EXPECT_TRUE(same_value(got, ref::decode(DType::ue8m0, c))) << "code " << c << ": got " << got;
  }
}

TEST(Numeric, EncodeCodePointsMidpointsAndRangeEnds) {
  for (const Format& f : narrow_formats()) check_code_points_and_midpoints(f);
  for (const Format& f : half_formats()) check_code_points_and_midpoints(f);
}

TEST(Numeric, EncodeRandomF32) {
  TEJAS_SEEDED_TEST_RNG();
  for (const Format& f : narrow_formats()) check_random(f, rng);
  for (const Format& f : half_formats()) check_random(f, rng);
}

// NaN: the CUDA conversions produce one canonical code, sign dropped; ref::encode keeps the sign
// and uses another NaN code for bf16/f16/e5m2. Both are NaN codes of the format (e2m1 has none:
// both give 0x7, +6). Pinned here so a change in either side is noticed.
TEST(Numeric, NanInputs) {
  const float nans[] = {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                        std::bit_cast<float>(0x7F800001u), std::bit_cast<float>(0xFFFFFFFFu)};
  for (const float x : nans) {
    SCOPED_TRACE(describe(x));
    EXPECT_EQ(num::f32_to_bf16(x), 0x7FFF);
    EXPECT_EQ(num::f32_to_f16(x), 0x7FFF);
    EXPECT_EQ(num::f32_to_e4m3(x), 0x7F);
    EXPECT_EQ(num::f32_to_e5m2(x), 0x7F);
    EXPECT_EQ(num::f32_to_e2m1(x), 0x7);
    EXPECT_EQ(num::f32_to_ue8m0(x), 0xFF);
    EXPECT_EQ(ref::encode(DType::e2m1, x), 0x7u);
    EXPECT_EQ(ref::encode(DType::ue8m0, x), 0xFFu);
    for (const DType t : {DType::bf16, DType::f16, DType::e4m3, DType::e5m2}) {
      EXPECT_TRUE(std::isnan(ref::decode(t, ref::encode(t, x)))) << dtype_name(t);
    }
  }
}

TEST(Numeric, PackedPairsMatchSingles) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int kPairs = 4096;
  for (int i = 0; i < kPairs; ++i) {
    const auto a = static_cast<float>(rng.normal(0.0, 8.0));
    const auto b = static_cast<float>(rng.normal(0.0, 8.0));
    const uint32_t bf = num::f32x2_to_bf16x2(a, b);
    EXPECT_EQ(bf, ref::encode(DType::bf16, a) | (ref::encode(DType::bf16, b) << 16));
    EXPECT_EQ(num::f32x2_to_f16x2(a, b), ref::encode(DType::f16, a) | (ref::encode(DType::f16, b) << 16));
    EXPECT_EQ(num::f32x2_to_e4m3x2(a, b), ref::encode(DType::e4m3, a) | (ref::encode(DType::e4m3, b) << 8));
    EXPECT_EQ(num::f32x2_to_e5m2x2(a, b), ref::encode(DType::e5m2, a) | (ref::encode(DType::e5m2, b) << 8));
    EXPECT_EQ(num::f32x2_to_e2m1x2(a, b), ref::encode(DType::e2m1, a) | (ref::encode(DType::e2m1, b) << 4));
    const num::F32x2 back = num::bf16x2_to_f32x2(bf);
    EXPECT_EQ(back.lo, ref::round_to(DType::bf16, a));
    EXPECT_EQ(back.hi, ref::round_to(DType::bf16, b));
  }
  for (uint32_t p = 0; p < 256; ++p) {
    const num::F32x2 e2 = num::e2m1x2_to_f32x2(static_cast<uint8_t>(p));
    EXPECT_EQ(e2.lo, ref::decode(DType::e2m1, p & 0xF));
    EXPECT_EQ(e2.hi, ref::decode(DType::e2m1, p >> 4));
  }
  for (uint32_t p = 0; p < 65536; p += 257) {  // a spread of both bytes
    const num::F32x2 e4 = num::e4m3x2_to_f32x2(static_cast<uint16_t>(p));
    const num::F32x2 e5 = num::e5m2x2_to_f32x2(static_cast<uint16_t>(p));
    EXPECT_TRUE(same_value(e4.lo, ref::decode(DType::e4m3, p & 0xFF)) && same_value(e4.hi, ref::decode(DType::e4m3, p >> 8)));
    EXPECT_TRUE(same_value(e5.lo, ref::decode(DType::e5m2, p & 0xFF)) && same_value(e5.hi, ref::decode(DType::e5m2, p >> 8)));
  }
  const num::F32x2 h = num::f16x2_to_f32x2(0x3C00C000u);  // lo = 1.0, hi = -2.0
  EXPECT_EQ(h.lo, -2.0f);
  EXPECT_EQ(h.hi, 1.0f);
  // Every bf16 code in each lane (the other lane a code that differs in every bit), bit for bit
  // what the one-code widening gives: NaN payloads, signed zeros and subnormals included.
  int64_t bad = 0;
  for (uint32_t c = 0; c < 65536; ++c) {
    const uint32_t other = c ^ 0xFFFFu;
    const num::F32x2 lo = num::bf16x2_to_f32x2(c | (other << 16)), hi = num::bf16x2_to_f32x2(other | (c << 16));
    const uint32_t want = num::f32_bits(num::bf16_to_f32(static_cast<uint16_t>(c)));
    const uint32_t want_other = num::f32_bits(num::bf16_to_f32(static_cast<uint16_t>(other)));
    bad += num::f32_bits(lo.lo) != want || num::f32_bits(lo.hi) != want_other || num::f32_bits(hi.hi) != want ||
           num::f32_bits(hi.lo) != want_other;
  }
  EXPECT_EQ(bad, 0);
}

// ue8m0 rounds up to a power of two. For x >= 0 the CUDA conversion and ref agree; for x < 0 CUDA
// converts |x| while ref::encode returns 0x00 (2^-127): pinned below, reported in the docs.
TEST(Numeric, Ue8m0Encode) {
  TEJAS_SEEDED_TEST_RNG();
  int bad = 0;
  auto expect_ref = [&](float x) {
    const uint32_t got = num::f32_to_ue8m0(x), want = static_cast<uint32_t>(ref::encode(DType::ue8m0, x));
    if (got != want && ++bad <= kMaxReported) ADD_FAILURE() << describe(x) << ": got " << hex(got) << " want " << hex(want);
  };
  constexpr int kMinExp = -149, kMaxExp = 127;  // every f32 power of two
  for (int e = kMinExp; e <= kMaxExp; ++e) {
    const float p = std::ldexp(1.0f, e);
    expect_ref(p);
    expect_ref(std::nextafter(p, 0.0f));
    expect_ref(std::nextafter(p, FLT_MAX));
  }
  for (const float x : {0.0f, FLT_MAX, std::numeric_limits<float>::infinity()}) expect_ref(x);
  for (int i = 0; i < kRandomSamples; ++i) expect_ref(std::fabs(std::bit_cast<float>(static_cast<uint32_t>(rng.next()))));
  EXPECT_EQ(bad, 0);
  // Negative inputs: CUDA rounds |x|.
  EXPECT_EQ(num::f32_to_ue8m0(-3.0f), ref::encode(DType::ue8m0, 3.0));
  EXPECT_EQ(num::f32_to_ue8m0(-std::numeric_limits<float>::infinity()), 0xFE);
  EXPECT_EQ(ref::encode(DType::ue8m0, -3.0), 0x00u);
}

// e2m1 and ue8m0 are f32 / integer arithmetic where no cvt instruction exists (sm_80, sm_90a,
// the host; device/numeric/convert.h). Against the CUDA headers' own software conversion (a
// different algorithm: through double, with branches): every f32 whose low 16 bits are one of a
// few patterns (all exponents, signs, NaN payloads and the rounding-relevant high mantissa bits),
// in a second; TEJAS_EXHAUSTIVE=1 runs all 2^32 inputs (about 40 s of CPU; run when the
// arithmetic changes: 0 mismatches).
TEST(Numeric, ArithmeticFp4AndUe8m0MatchTheHeaders) {
  const char* env = std::getenv("TEJAS_EXHAUSTIVE");
  const bool all = env != nullptr && std::string(env) == "1";
  const std::vector<uint32_t> lows = {0x0000, 0x0001, 0x3FFF, 0x4000, 0x7FFF, 0x8000, 0x8001, 0xC000, 0xFFFF};
  int64_t bad = 0, checked = 0;
  auto one = [&](uint32_t bits) {
    const float x = std::bit_cast<float>(bits);
    ++checked;
    const auto e2 = static_cast<uint8_t>(__nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest) & 0xF);
    const auto ue = static_cast<uint8_t>(__nv_cvt_float_to_e8m0(x, __NV_SATFINITE, cudaRoundPosInf));
    if (num::detail::f32_to_e2m1_arith(x) != e2 && ++bad <= kMaxReported) {
      ADD_FAILURE() << "e2m1 " << describe(x) << ": got " << hex(num::detail::f32_to_e2m1_arith(x)) << " want " << hex(e2);
    }
    if (num::detail::f32_to_ue8m0_arith(x) != ue && ++bad <= kMaxReported) {
      ADD_FAILURE() << "ue8m0 " << describe(x) << ": got " << hex(num::detail::f32_to_ue8m0_arith(x)) << " want " << hex(ue);
    }
  };
  if (all) {
    for (uint64_t b = 0; b < (uint64_t{1} << 32); ++b) one(static_cast<uint32_t>(b));
  } else {
    for (uint32_t hi = 0; hi < (1u << 16); ++hi)
      for (const uint32_t lo : lows) one((hi << 16) | lo);
  }
  EXPECT_EQ(bad, 0) << bad << " of " << checked << " inputs mismatch";
  for (uint32_t c = 0; c < 16; ++c) {
    const float want = __half2float(__half(__nv_cvt_fp4_to_halfraw(static_cast<__nv_fp4_storage_t>(c), __NV_E2M1)));
    EXPECT_TRUE(same_value(num::detail::e2m1_to_f32_arith(static_cast<uint8_t>(c)), want)) << "e2m1 code " << c;
  }
  for (uint32_t c = 0; c < 256; ++c) {
    const float want = __bfloat162float(__nv_bfloat16(__nv_cvt_e8m0_to_bf16raw(static_cast<__nv_fp8_storage_t>(c))));
    EXPECT_TRUE(same_value(num::detail::ue8m0_to_f32_arith(static_cast<uint8_t>(c)), want)) << "ue8m0 code " << c;
  }
}
