// dev::FastDiv: division of non-negative 64-bit integers (n < 2^63) by a divisor fixed at launch,
// as one 64-bit high multiply and a shift (the host computes the multiplier once). For a kernel
// index that an integer division per step split into row and column: sm_90a's code for `n / d`
// with 64-bit operands is a 32-bit fast path of ~20 instructions (I2F, MUFU.RCP, multiplies,
// two corrections) beside a call to a 64-bit division routine.
//
// Exactness: with l = ceil(log2 d) and m = ceil(2^(63 + l) / d) (< 2^64), floor(n * m / 2^(63 + l))
// = floor(n / d) for every n < 2^63: m * d - 2^(63 + l) = e < d, and n * e < 2^63 * d <= 2^(63 + l),
// so the product exceeds n / d by less than 1 / d (the round-up method, Granlund-Montgomery
// 1994). d = 1 returns n itself. tests/device/test_fast_div.cpp checks it against `/`.
#pragma once
#include <cstdint>

#include "device/prelude.h"

namespace tejas::dev {

struct FastDiv {
  uint64_t d = 1;    // the divisor (>= 1)
  uint64_t mul = 0;  // m; unused for d = 1
  int shift = 0;     // 63 + l - 64 = l - 1 (d > 1)
};

// Host: the multiplier and shift for divisor 1 <= d <= 2^63 (0 is taken as 1; larger d are
// clamped to 2^63: every n < 2^63 divides to 0 either way).
inline FastDiv make_fast_div(uint64_t d) {
  FastDiv f;
  constexpr uint64_t kMaxD = uint64_t{1} << 63;
  f.d = d == 0 ? 1 : (d > kMaxD ? kMaxD : d);
  if (f.d == 1) return f;
  int l = 0;
  while ((uint64_t{1} << l) < f.d) ++l;  // ceil(log2 d), 1..63
  // m = ceil(2^(63 + l) / d) = floor((2^(63 + l) - 1) / d) + 1, in 128 bits.
  const unsigned __int128 p = (static_cast<unsigned __int128>(1) << (63 + l)) - 1;
  f.mul = static_cast<uint64_t>(p / f.d) + 1;
  f.shift = l - 1;
  return f;
}

// floor(n / f.d) for n < 2^63.
__host__ __device__ __forceinline__ uint64_t fast_div(uint64_t n, const FastDiv& f) {
  if (f.d == 1) return n;
#if TEJAS_DEVICE_PASS
  return __umul64hi(n, f.mul) >> f.shift;
#else
  return static_cast<uint64_t>((static_cast<unsigned __int128>(n) * f.mul) >> 64) >> f.shift;
#endif
}

// dev::FastDiv32: the same for 32-bit dividends n < 2^31 and divisors 1 <= d <= 2^31, as one
// 32-bit high multiply and a shift: with l = ceil(log2 d), m = ceil(2^(31 + l) / d) < 2^32
// (d > 2^(l - 1)) and floor(n * m / 2^(31 + l)) = floor(n / d) by the argument above with 31 for
// 63. For small per-launch divisors (a head row's vectors) where a 32-bit `/` is ~15
// instructions (I2F, MUFU.RCP, multiplies, a correction).
struct FastDiv32 {
  uint32_t d = 1;    // the divisor (>= 1)
  uint32_t mul = 0;  // m; unused for d = 1
  int shift = 0;     // l - 1 (d > 1)
};

// Host: the multiplier and shift for divisor 1 <= d <= 2^31 (0 is taken as 1; larger d are
// clamped to 2^31: every n < 2^31 divides to 0 either way).
inline FastDiv32 make_fast_div32(uint32_t d) {
  FastDiv32 f;
  constexpr uint32_t kMaxD = uint32_t{1} << 31;
  f.d = d == 0 ? 1 : (d > kMaxD ? kMaxD : d);
  if (f.d == 1) return f;
  int l = 0;
  while ((uint64_t{1} << l) < f.d) ++l;  // ceil(log2 d), 1..31
  f.mul = static_cast<uint32_t>(((uint64_t{1} << (31 + l)) - 1) / f.d + 1);
  f.shift = l - 1;
  return f;
}

// floor(n / f.d) for n < 2^31.
__host__ __device__ __forceinline__ uint32_t fast_div(uint32_t n, const FastDiv32& f) {
  if (f.d == 1) return n;
#if TEJAS_DEVICE_PASS
  return __umulhi(n, f.mul) >> f.shift;
#else
  return static_cast<uint32_t>((static_cast<uint64_t>(n) * f.mul) >> 32) >> f.shift;
#endif
}

}  // namespace tejas::dev
