// dev::FastDiv / dev::FastDiv32: division of non-negative integers by a divisor fixed at launch,
// as one high multiply and a shift (the host computes the multiplier once). FastDiv: 64-bit
// dividends n < 2^63 (`__umul64hi`), for a kernel index that an integer division per step split
// into row and column: sm_90a's code for `n / d` with 64-bit operands is a 32-bit fast path of ~20
// instructions (I2F, MUFU.RCP, multiplies, two corrections) beside a call to a 64-bit division
// routine. FastDiv32: 32-bit dividends n < 2^31 (`__umulhi`), for small per-launch divisors (a
// head row's vectors, a token's threads) where a 32-bit `/` is ~15 instructions.
//
// Exactness, for W-bit words (W = 64 or 32): with l = ceil(log2 d) and m = ceil(2^(W - 1 + l) / d)
// (< 2^W, since d > 2^(l - 1)), floor(n * m / 2^(W - 1 + l)) = floor(n / d) for every
// n < 2^(W - 1): m * d - 2^(W - 1 + l) = e < d, and n * e < 2^(W - 1) * d <= 2^(W - 1 + l), so the
// product exceeds n / d by less than 1 / d (the round-up method, Granlund-Montgomery 1994).
// d = 1 returns n itself. tests/device/test_fast_div.cpp checks both widths against `/`.
#pragma once
#include <cstdint>
#include <type_traits>

#include "device/prelude.h"

namespace tejas::dev {

template <class U>
struct FastDivOf {
  static_assert(std::is_same_v<U, uint64_t> || std::is_same_v<U, uint32_t>, "64- or 32-bit words");
  U d = 1;          // the divisor (>= 1)
  U mul = 0;        // m; unused for d = 1
  int shift = 0;    // W - 1 + l - W = l - 1 (d > 1)
};
using FastDiv = FastDivOf<uint64_t>;
using FastDiv32 = FastDivOf<uint32_t>;

namespace detail {
template <class U>
using FastDivWide = std::conditional_t<std::is_same_v<U, uint64_t>, unsigned __int128, uint64_t>;
}  // namespace detail

// Host: the multiplier and shift for divisor 1 <= d <= 2^(W - 1) (0 is taken as 1; larger d are
// clamped to 2^(W - 1): every n < 2^(W - 1) divides to 0 either way).
template <class U>
inline FastDivOf<U> make_fast_div_of(U d) {
  constexpr int kW = 8 * static_cast<int>(sizeof(U));
  constexpr U kMaxD = U{1} << (kW - 1);
  using Wide = detail::FastDivWide<U>;
  FastDivOf<U> f;
  f.d = d == 0 ? 1 : (d > kMaxD ? kMaxD : d);
  if (f.d == 1) return f;
  int l = 0;
  while ((Wide{1} << l) < f.d) ++l;  // ceil(log2 d), 1..W - 1
  // m = ceil(2^(W - 1 + l) / d) = floor((2^(W - 1 + l) - 1) / d) + 1, in 2W bits.
  f.mul = static_cast<U>(((Wide{1} << (kW - 1 + l)) - 1) / f.d + 1);
  f.shift = l - 1;
  return f;
}
inline FastDiv make_fast_div(uint64_t d) { return make_fast_div_of<uint64_t>(d); }
inline FastDiv32 make_fast_div32(uint32_t d) { return make_fast_div_of<uint32_t>(d); }

// floor(n / f.d) for n < 2^(W - 1).
template <class U>
__host__ __device__ __forceinline__ U fast_div(U n, const FastDivOf<U>& f) {
  if (f.d == 1) return n;
#if TEJAS_DEVICE_PASS
  if constexpr (std::is_same_v<U, uint64_t>) return __umul64hi(n, f.mul) >> f.shift;
  else return __umulhi(n, f.mul) >> f.shift;
#else
  constexpr int kW = 8 * static_cast<int>(sizeof(U));
  return static_cast<U>((static_cast<detail::FastDivWide<U>>(n) * f.mul) >> kW) >> f.shift;
#endif
}

}  // namespace tejas::dev
