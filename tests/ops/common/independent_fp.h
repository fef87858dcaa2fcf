// Test-side numerics for the narrow float formats, written independently of
// src/ops/common/ref_numeric.cpp: decoding from the bit-field formulas (pow, long double, bit
// casts) or explicit tables, and encoding by searching a sorted table of every finite value for
// the nearest one (ties to the even code). Nearest-in-table saturates by construction.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "tejas/dtype.h"

namespace tejas::testfp {

inline constexpr long double kNaN = std::numeric_limits<long double>::quiet_NaN();
inline constexpr long double kInf = std::numeric_limits<long double>::infinity();

// The eight magnitudes of e2m1, by code 0..7 (code | 0x8 is the negative).
inline constexpr double kE2m1Magnitudes[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};

inline long double pow2(int e) { return std::pow(2.0L, static_cast<long double>(e)); }

// Sign-magnitude minifloat decode from the field formula: value = (1 + m / 2^mbits) 2^(e - bias)
// for normal numbers, (m / 2^mbits) 2^(1 - bias) for e == 0.
inline long double field_value(unsigned e, unsigned m, int mbits, int bias) {
  const long double frac = static_cast<long double>(m) / pow2(mbits);
  return e == 0 ? frac * pow2(1 - bias) : (1.0L + frac) * pow2(static_cast<int>(e) - bias);
}

inline long double decode(DType t, uint64_t c) {
  switch (t) {
    case DType::e4m3: {  // S EEEE MMM, bias 7; S 1111 111 is NaN; no infinities
      const bool neg = c & 0x80;
      const unsigned e = (c >> 3) & 0xF, m = c & 0x7;
      if (e == 0xF && m == 0x7) return kNaN;
      const long double v = field_value(e, m, 3, 7);
      return neg ? -v : v;
    }
    case DType::e5m2: {  // S EEEEE MM, bias 15; IEEE specials
      const bool neg = c & 0x80;
      const unsigned e = (c >> 2) & 0x1F, m = c & 0x3;
      if (e == 0x1F) return m == 0 ? (neg ? -kInf : kInf) : kNaN;
      const long double v = field_value(e, m, 2, 15);
      return neg ? -v : v;
    }
    case DType::e2m1: {
      const long double v = kE2m1Magnitudes[c & 0x7];
      return (c & 0x8) ? -v : v;
    }
    case DType::ue8m0:
      return (c & 0xFF) == 0xFF ? kNaN : pow2(static_cast<int>(c & 0xFF) - 127);
    case DType::f16: {  // S EEEEE MMMMMMMMMM, bias 15
      const bool neg = c & 0x8000;
      const unsigned e = (c >> 10) & 0x1F, m = c & 0x3FF;
      if (e == 0x1F) return m == 0 ? (neg ? -kInf : kInf) : kNaN;
      const long double v = field_value(e, m, 10, 15);
      return neg ? -v : v;
    }
    case DType::bf16: {  // the upper half of an f32
      const uint32_t bits = static_cast<uint32_t>(c & 0xFFFF) << 16;
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return f;
    }
    case DType::f32: {
      const auto bits = static_cast<uint32_t>(c);
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return f;
    }
    default: return kNaN;
  }
}

inline int code_bits(DType t) { return dtype_bits(t); }
inline uint64_t sign_bit(DType t) { return uint64_t{1} << (code_bits(t) - 1); }

// Every non-negative finite value of a narrow float format with its code, sorted by value.
struct ValueTable {
  std::vector<long double> values;
  std::vector<uint64_t> codes;
};

inline ValueTable make_table(DType t) {
  ValueTable tab;
  const uint64_t n = sign_bit(t);
  for (uint64_t c = 0; c < n; ++c) {
    const long double v = decode(t, c);
    if (std::isfinite(v)) {
      tab.values.push_back(v);
      tab.codes.push_back(c);
    }
  }
  return tab;  // codes ascend with value for sign-magnitude formats
}

inline const ValueTable& table(DType t) {
  static const ValueTable e4m3 = make_table(DType::e4m3), e5m2 = make_table(DType::e5m2),
                          e2m1 = make_table(DType::e2m1);
  return t == DType::e4m3 ? e4m3 : t == DType::e5m2 ? e5m2 : e2m1;
}

// Nearest finite code (ties to the even code), saturating; the sign of x (zero too) is kept.
// NaN input is the caller's business.
inline uint64_t nearest_code(DType t, long double x) {
  const ValueTable& tab = table(t);
  const uint64_t sign = std::signbit(x) ? sign_bit(t) : 0;
  const long double a = std::fabs(x);
  const auto hi = std::lower_bound(tab.values.begin(), tab.values.end(), a);
  if (hi == tab.values.end()) return sign | tab.codes.back();  // beyond max: saturate
  const size_t j = static_cast<size_t>(hi - tab.values.begin());
  if (j == 0 || *hi == a) return sign | tab.codes[j];
  const long double below = a - tab.values[j - 1], above = tab.values[j] - a;
  if (below < above) return sign | tab.codes[j - 1];
  if (above < below) return sign | tab.codes[j];
  return sign | ((tab.codes[j] % 2 == 0) ? tab.codes[j] : tab.codes[j - 1]);
}

// Smallest integer e with 2^e >= v (v > 0), found by stepping, not by frexp/log2.
inline int ceil_log2(long double v) {
  int e = 0;
  while (pow2(e) < v) ++e;
  while (pow2(e - 1) >= v) --e;
  return e;
}

// Largest integer e with 2^e <= v (v > 0).
inline int floor_log2(long double v) {
  int e = 0;
  while (pow2(e) > v) --e;
  while (pow2(e + 1) <= v) ++e;
  return e;
}

}  // namespace tejas::testfp
