// Test helpers shared by the norm, rope and activation tests: proof that a failed call wrote
// nothing, and an e4m3 encoder written apart from src/ops/common/ref_numeric.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "check/host_tensor.h"

namespace tejas::optest {

// Every element's bits, in row-major order.
inline std::vector<uint64_t> bits_of(const check::HostTensor& t) {
  std::vector<uint64_t> bits(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) bits[static_cast<size_t>(i)] = t.bits_flat(i);
  return bits;
}

// The tensor's elements still hold `before`, its padding is still poison and its guards intact.
inline ::testing::AssertionResult unchanged(const check::HostTensor& t, const std::vector<uint64_t>& before) {
  if (!t.guards_intact()) return ::testing::AssertionFailure() << "guard bytes overwritten";
  if (!t.padding_intact()) return ::testing::AssertionFailure() << "padding overwritten";
  for (int64_t i = 0; i < t.numel(); ++i)
    if (t.bits_flat(i) != before[static_cast<size_t>(i)])
      return ::testing::AssertionFailure() << "element " << check::index_string(t.shape(), i) << " changed";
  return ::testing::AssertionSuccess();
}

// Value of a positive finite e4m3 (fn) code 0x00..0x7E, from the format: 4 exponent bits
// (bias 7), 3 mantissa bits, subnormals at exponent field 0.
inline long double e4m3_positive_value(int code) {
  const int e = code >> 3, m = code & 7;
  return e == 0 ? std::ldexp(static_cast<long double>(m), -9) : std::ldexp(static_cast<long double>(8 + m), e - 10);
}

inline constexpr int kE4m3MaxCode = 0x7E;   // 448
inline constexpr uint8_t kE4m3NaN = 0x7F;   // S.1111.111
inline constexpr uint8_t kE4m3Sign = 0x80;

// Nearest code by exhaustive search, ties to the even code, saturating beyond 448.
inline uint8_t e4m3_code_by_search(long double v) {
  const uint8_t sign = std::signbit(v) ? kE4m3Sign : 0;
  if (std::isnan(v)) return sign | kE4m3NaN;
  const long double a = std::fabs(v);
  if (std::isinf(a)) return sign | kE4m3MaxCode;
  int best = 0;
  long double best_err = std::numeric_limits<long double>::infinity();
  for (int c = 0; c <= kE4m3MaxCode; ++c) {
    const long double err = std::fabs(a - e4m3_positive_value(c));
    if (err < best_err || (err == best_err && c % 2 == 0)) {
      best = c;
      best_err = err;
    }
  }
  return static_cast<uint8_t>(sign | best);
}

inline bool e4m3_is_nan(uint64_t code) { return (code & 0x7F) == kE4m3NaN; }

}  // namespace tejas::optest
