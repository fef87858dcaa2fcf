// Pairs of 16-bit floats (bf16 or f16) held as one 32-bit word, element 0 in the low half, and
// the e2m1 conversions built on them for power-of-two (MX) scales: two elements per instruction
// on the FMA pipe where the f32 forms of src/device/numeric/convert.h spend about ten integer
// (ALU-pipe) instructions per element.
//
// NOTES: why. ncu on the H200 (docs/kernels/quant_mx.md) showed the fp4 quantization and
// dequantization kernels limited by the ALU pipe (79-81 % of its peak; math-pipe throttle the
// first stall): the integer ALU takes a warp instruction every other cycle per scheduler, the
// FMA pipe every cycle, and the f32 e2m1 conversion is mostly ALU work (shifts, masks, compares,
// selects). Here the rounding is one packed add per pair and the rest is a few whole-word
// integer operations shared by both elements.
//
// Exactness: every operation below rounds once (RN) from the exact result, as the PTX
// instructions do (half precision add / mul / fma: one rounding; subnormals kept, no .ftz on
// bf16 or f16x2 here: PTX ISA, "Half Precision Floating Point Instructions: fma"). The host
// (emulator) computes each lane in double, where a product of two 16-bit floats is exact and a
// sum of two is exact or within one double ulp of a value far from any 16-bit rounding boundary,
// then rounds once with the headers' correctly rounding __double2bfloat16 / __double2half.
#pragma once
#include <cstdint>

#include "device/numeric/convert.h"
#include "device/numeric/storage.h"
#include "device/prelude.h"

namespace tejas::num {

// The canonical NaN of bf16 and f16 (PTX ISA): what min / max.NaN return for a NaN lane, and
// min / max for two.
inline constexpr uint16_t kCanonicalNaN16 = 0x7FFF;

namespace detail {
template <class H>
struct Half2Type;
template <>
struct Half2Type<Bf16> {
  using Pair = __nv_bfloat162;
  using OneRaw = __nv_bfloat16_raw;
  __host__ __device__ static OneRaw from_d(double v) { return __double2bfloat16(v); }
};
template <>
struct Half2Type<F16> {
  using Pair = __half2;
  using OneRaw = __half_raw;
  __host__ __device__ static OneRaw from_d(double v) { return __double2half(v); }
};

#if TEJAS_DEVICE_PASS
// The word as the intrinsics' pair type and back, as one register (built from the two halves,
// the conversion cost two ALU instructions per call: a shift and a byte permute, SASS sm_90a).
template <class H>
__device__ __forceinline__ typename Half2Type<H>::Pair as_pair(uint32_t w) {
  return *reinterpret_cast<const typename Half2Type<H>::Pair*>(&w);
}
template <class H>
__device__ __forceinline__ uint32_t as_word(typename Half2Type<H>::Pair p) {
  return *reinterpret_cast<const uint32_t*>(&p);
}
#endif

enum class HalfOp { mul, add, min, max, min_nan, max_nan };

// Host model of one lane, as cuda_bf16.h / cuda_fp16.h state __hmin2 / __hmax2 and their _nan
// forms (min / max.bf16x2, .f16x2 and .NaN): min / max return the other operand for one NaN and
// the canonical NaN for two; min_nan / max_nan the canonical NaN when either operand is NaN;
// both order -0 below +0.
template <class H, HalfOp kOp>
__host__ __device__ inline uint16_t host_lane(uint16_t a, uint16_t b) {
  const double x = H::to_f32(a), y = H::to_f32(b);
  if constexpr (kOp == HalfOp::mul) {
    return Half2Type<H>::from_d(x * y).x;
  } else if constexpr (kOp == HalfOp::add) {
    return Half2Type<H>::from_d(x + y).x;
  } else {
    const bool a_nan = x != x, b_nan = y != y;
    if (kOp == HalfOp::min_nan || kOp == HalfOp::max_nan ? a_nan || b_nan : a_nan && b_nan) return kCanonicalNaN16;
    if (a_nan || b_nan) return a_nan ? b : a;
    // b below a: smaller, or the same zero with b's sign bit set and a's clear.
    const bool b_below = y < x || (y == x && (b & 0x8000u) != 0 && (a & 0x8000u) == 0);
    const bool a_below = x < y || (x == y && (a & 0x8000u) != 0 && (b & 0x8000u) == 0);
    const bool take_b = kOp == HalfOp::min || kOp == HalfOp::min_nan ? b_below : a_below;
    return take_b ? b : a;
  }
}

template <class H, HalfOp kOp>
__host__ __device__ __forceinline__ uint32_t half2_op(uint32_t a, uint32_t b) {
#if TEJAS_DEVICE_PASS
  const auto pa = as_pair<H>(a), pb = as_pair<H>(b);
  // The _rn forms: never contracted with a neighbouring add or multiply into one fma.
  if constexpr (kOp == HalfOp::mul) return as_word<H>(__hmul2_rn(pa, pb));
  else if constexpr (kOp == HalfOp::add) return as_word<H>(__hadd2_rn(pa, pb));
  else if constexpr (kOp == HalfOp::min) return as_word<H>(__hmin2(pa, pb));
  else if constexpr (kOp == HalfOp::max) return as_word<H>(__hmax2(pa, pb));
  else if constexpr (kOp == HalfOp::min_nan) return as_word<H>(__hmin2_nan(pa, pb));
  else return as_word<H>(__hmax2_nan(pa, pb));
#else
  const uint32_t lo = host_lane<H, kOp>(static_cast<uint16_t>(a), static_cast<uint16_t>(b));
  const uint32_t hi = host_lane<H, kOp>(static_cast<uint16_t>(a >> 16), static_cast<uint16_t>(b >> 16));
  return lo | (hi << 16);
#endif
}
}  // namespace detail

// Lane-wise a * b, a + b, min, max of two packed pairs (each lane rounded once, RN).
template <class H>
__host__ __device__ __forceinline__ uint32_t hmul2(uint32_t a, uint32_t b) {
  return detail::half2_op<H, detail::HalfOp::mul>(a, b);
}
template <class H>
__host__ __device__ __forceinline__ uint32_t hadd2(uint32_t a, uint32_t b) {
  return detail::half2_op<H, detail::HalfOp::add>(a, b);
}
template <class H>
__host__ __device__ __forceinline__ uint32_t hmin2(uint32_t a, uint32_t b) {
  return detail::half2_op<H, detail::HalfOp::min>(a, b);
}
template <class H>
__host__ __device__ __forceinline__ uint32_t hmax2(uint32_t a, uint32_t b) {
  return detail::half2_op<H, detail::HalfOp::max>(a, b);
}
// min / max.NaN (sm_80+): as hmin2 / hmax2, but a NaN in either operand gives the canonical NaN
// (so a clamp by them keeps NaN, as the comparisons `x > c ? c : x` do).
template <class H>
__host__ __device__ __forceinline__ uint32_t hmin2_nan(uint32_t a, uint32_t b) {
  return detail::half2_op<H, detail::HalfOp::min_nan>(a, b);
}
template <class H>
__host__ __device__ __forceinline__ uint32_t hmax2_nan(uint32_t a, uint32_t b) {
  return detail::half2_op<H, detail::HalfOp::max_nan>(a, b);
}

// ---- e2m1 from packed 16-bit floats -----------------------------------------------------------
// Per format: the bits of 1.0 and 6.0, the exponent field, and where a magic number M whose ulp
// is the e2m1 grid step of a binade sits (RNE rounding of a + M rounds a to that grid).
template <class H>
struct E2m1Pack;
template <>
struct E2m1Pack<Bf16> {
  static constexpr uint32_t kOne = 0x3F80, kSix = 0x40C0, kExp = 0x7F80;
  static constexpr int kMant = 7;   // mantissa bits
  static constexpr int kBias = 127;
};
template <>
struct E2m1Pack<F16> {
  static constexpr uint32_t kOne = 0x3C00, kSix = 0x4600, kExp = 0x7C00;
  static constexpr int kMant = 10;
  static constexpr int kBias = 15;
};

// sat_rne to e2m1 of both lanes of w (bf16 or f16 bits, not NaN; +-Inf saturates): each lane's
// code in its bits 0-3 (sign in bit 3), the rest of the lane 0.
//
// How: a = min(|v|, 6) and k = the binade of max(a, 1) (0 for a < 2, 1 below 4, 2 up to 6), read
// from its exponent field E. The e2m1 grid step there is 2^(k-1) (0.5 below 2: e2m1's subnormals
// 0, 0.5 continue its [1, 2) grid), so t = a + M with M = 1.5 * 2^(p-2+k) (p = the format's
// significant bits: M's ulp is 2^(k-1)) rounds a to the grid, ties to even, in one add; the grid
// index n = bits(t) - bits(M) and the code is n + 2k (codes 0-4 on [0, 2], 4-6 on [2, 4], 6-7 on
// [4, 6]), and both M and n + 2k come from E in whole-word integer operations: no lane's value
// carries into the other (each lane's partial results stay in [0, 2^16)).
namespace detail {
// half2_to_e2m1_lanes's body, from |w| (sign bits clear) and the word whose sign bits are w's.
template <class H>
__host__ __device__ __forceinline__ uint32_t e2m1_lanes_of(uint32_t abs_w, uint32_t sign_w) {
  using C = E2m1Pack<H>;
  constexpr uint32_t kTwo = 0x00010001u;  // a per-lane constant c is c * kTwo
  // M = 1.5 * 2^(p - 2 + k): exponent field + (p - 2), mantissa's top bit. p - 2 = kMant - 1.
  constexpr uint32_t kMagicOff = (static_cast<uint32_t>(C::kMant - 1) << C::kMant) | (1u << (C::kMant - 1));
  // E >> (kMant - 1) = 2 (bias + k): 2k = (E >> (kMant - 1)) - 2 bias.
  constexpr int kTwoKShift = C::kMant - 1;
  constexpr uint32_t kCodeOff = kMagicOff + 2u * C::kBias;
  const uint32_t a = hmin2<H>(abs_w, C::kSix * kTwo);
  const uint32_t e = hmax2<H>(a, C::kOne * kTwo) & (C::kExp * kTwo);
  const uint32_t m = e + kMagicOff * kTwo;
  const uint32_t t = hadd2<H>(a, m);
  // code = bits(t) - bits(M) + 2k = bits(t) - (E - (E >> (kMant - 1)) + kCodeOff).
  const uint32_t code = t - (e - (e >> kTwoKShift) + kCodeOff * kTwo);
  return code | ((sign_w >> 12) & 0x00080008u);
}
}  // namespace detail

template <class H>
__host__ __device__ __forceinline__ uint32_t half2_to_e2m1_lanes(uint32_t w) {
  return detail::e2m1_lanes_of<H>(w & 0x7FFF7FFFu, w);
}

// Per 16-bit lane, the smaller of a and b as unsigned integers (one VIMNMX.U16x2 on sm_90a).
__host__ __device__ __forceinline__ uint32_t min_u16x2(uint32_t a, uint32_t b) {
#if TEJAS_DEVICE_PASS
  return __vminu2(a, b);
#else
  const uint32_t lo = (a & 0xFFFFu) < (b & 0xFFFFu) ? (a & 0xFFFFu) : (b & 0xFFFFu);
  const uint32_t hi = (a >> 16) < (b >> 16) ? (a >> 16) : (b >> 16);
  return lo | (hi << 16);
#endif
}

// sat_rne to e2m1 of two f32 values (not NaN; +-Inf saturates) as one word of lane codes (as
// half2_to_e2m1_lanes). Each value is first rounded to odd at bf16 precision: its top 16 bits,
// the lowest of them set when any of the low 16 is (truncation plus a sticky bit). Rounding to
// odd at p significant bits and then to nearest at q <= p - 2 bits equals rounding to nearest
// at q bits once; bf16 keeps 8, e2m1 needs at most 2 (and below 1 its fixed step 0.5 lies far
// above bf16's), so the codes are those of the f32 values. Four more integer operations per pair
// than the 16-bit form (two byte permutes, a per-lane min, an OR), against about ten per element
// for the f32 conversion of convert.h.
__host__ __device__ __forceinline__ uint32_t f32x2_to_e2m1_lanes(float lo, float hi) {
  const uint32_t a = f32_bits(lo), b = f32_bits(hi);
  // One byte permute each (written as shifts and masks, nvcc spent two instructions on each).
#if TEJAS_DEVICE_PASS
  const uint32_t top = __byte_perm(a, b, 0x7632), low = __byte_perm(a, b, 0x5410);
#else
  const uint32_t top = (a >> 16) | (b & 0xFFFF0000u), low = (a & 0xFFFFu) | (b << 16);
#endif
  // |top| with the sticky bits in one three-input logic op; the signs from top.
  return detail::e2m1_lanes_of<Bf16>((top | min_u16x2(low, 0x00010001u)) & 0x7FFF7FFFu, top);
}

// Four words of lane codes (word i: elements 2i, 2i + 1) as eight e2m1 nibbles, element 0 in the
// low nibble.
__host__ __device__ __forceinline__ uint32_t pack_e2m1_lanes(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3) {
  const uint32_t u = c0 | (c1 << 8), v = c2 | (c3 << 8);  // lanes: e0 | e2 << 8, e1 | e3 << 8
  return ((u | (u >> 12)) & 0xFFFFu) | ((v | (v >> 12)) << 16);
}
// Two words of lane codes as four nibbles (the low 16 bits).
__host__ __device__ __forceinline__ uint32_t pack_e2m1_lanes(uint32_t c0, uint32_t c1) {
  const uint32_t u = c0 | (c1 << 8);
  return (u | (u >> 12)) & 0xFFFFu;
}

}  // namespace tejas::num
