// Exact rounding of a quotient x / D to an fp8 / fp4 code in f32 arithmetic (host and device):
// sat_rne(x / D) bit for bit as float64 division would give it, not only up to a tie.
//
// Why f32 can be exact here (docs/kernels/quant_fp8_group.md, "Rounding"):
// - x / D for a non-power-of-two divisor D is approximated by t (x * (1 / D), or an f32
//   division) within a few f32 ulps. Its code can differ from the code of the exact quotient
//   only when t lies within those ulps of a rounding midpoint of the code format. Midpoints have
//   at most mantissa_bits + 2 significant bits, so that case is found from t's low mantissa bits
//   (about 1 in 30000 random values for e4m3, fewer for e2m1) and then decided exactly by the
//   sign of the residual x - mid * D, computed in one fma.
// - A float64 reference rounds x / D to double first; its result is never a false midpoint
//   (x has 24 bits and D at most 28, so a non-tie lies at least 2^-32 from a midpoint, relative).
// Known limit: a residual below the f32 subnormal range (|x| < ~2^-100, with tiny divisors)
// reads as an exact tie; no realistic data gets there.
// Users: the quantization kernels (src/ops/quant/quant_math.h builds its scale rules on this)
// and rope_kv_cache_write's fp8 cache stores.
#pragma once
#include <cstdint>
#include "device/numeric/convert.h"
#include "device/prelude.h"

#include <cstring>

namespace tejas::num {

enum class CodeFormat : uint8_t { e4m3, e5m2, e2m1 };

inline constexpr int kF32MantissaBits = 23;
inline constexpr uint32_t kF32AbsMask = 0x7FFFFFFFu;
inline constexpr uint32_t kF32ExpMask = 0xFFu;
inline constexpr int kF32Bias = 127;
inline constexpr float kF32Max = 3.4028234663852886e38f;
// Distance (in f32 ulps of t) within which t ~ x / D is checked against a midpoint: the
// approximation errs by at most ~2 ulps (a rounded reciprocal, a rounded product of two scales,
// the final multiply); 8 leaves a wide margin at no cost.
inline constexpr uint32_t kTieSlackUlps = 8;

template <CodeFormat F>
struct CodeTraits;

template <>
struct CodeTraits<CodeFormat::e4m3> {
  static constexpr int kMantissaBits = 3;
  static constexpr float kMax = 448.0f;
  static constexpr uint8_t kSign = 0x80;
  static constexpr uint8_t kNaN = 0x7F;
  static constexpr int kEmax = 8;  // floor(log2(448)): OCP emax_elem
  __host__ __device__ static uint8_t encode(float v) { return f32_to_e4m3(v); }
  __host__ __device__ static float decode(uint8_t c) { return e4m3_to_f32(c); }
};

template <>
struct CodeTraits<CodeFormat::e5m2> {
  static constexpr int kMantissaBits = 2;
  static constexpr float kMax = 57344.0f;
  static constexpr uint8_t kSign = 0x80;
  static constexpr uint8_t kNaN = 0x7F;
  static constexpr int kEmax = 15;  // floor(log2(57344))
  __host__ __device__ static uint8_t encode(float v) { return f32_to_e5m2(v); }
  __host__ __device__ static float decode(uint8_t c) { return e5m2_to_f32(c); }
};

template <>
struct CodeTraits<CodeFormat::e2m1> {
  static constexpr int kMantissaBits = 1;
  static constexpr float kMax = 6.0f;
  static constexpr uint8_t kSign = 0x8;
  static constexpr uint8_t kNaN = 0x7;  // +6: e2m1 has no NaN (the NaN scale marks the block)
  static constexpr int kEmax = 2;       // floor(log2(6))
  __host__ __device__ static uint8_t encode(float v) { return f32_to_e2m1(v); }
  __host__ __device__ static float decode(uint8_t c) { return e2m1_to_f32(c); }
};

// Could t be within kTieSlackUlps of a rounding midpoint of F? Midpoints have at most
// kMantissaBits + 2 significant bits: the f32 mantissa bits below that are all zero.
template <CodeFormat F>
__host__ __device__ inline bool near_midpoint(float t) {
  constexpr int kLowBits = kF32MantissaBits - CodeTraits<F>::kMantissaBits - 1;
  // (bits + slack) mod 2^kLowBits <= 2 slack, with the low bits moved to the top of the word
  // (sign and exponent shifted out): one multiply-add and one compare. The carry handles binade
  // edges.
  constexpr uint32_t kUp = 1u << (32 - kLowBits);
  return f32_bits(t) * kUp + kTieSlackUlps * kUp <= 2 * kTieSlackUlps * kUp;
}

// t ~ x / D moved off a possible midpoint onto the exact quotient's side of it, when t is near
// one (near_midpoint<F>): t rounded to kMantissaBits + 2 significant bits is the only candidate
// m (every midpoint of F has at most that many bits, so no other lies within the slack), and
// the sign of x - m * D, exact in one fma (a * m is exact in f32), says on which side of m the
// exact quotient lies. The result is m one f32 ulp toward it (m itself on an exact tie), which
// rounds to the exact quotient's code: no midpoint lies strictly between the two. When m is not
// a midpoint (a code value, or neither) the nudge changes nothing. Saturation comes out right
// too (t next to FLT_MAX: m = Inf, m * a = Inf, the nudge goes toward the finite x / D, below m).
// NOTES: no code is decoded. The first form (resolve_near_tie) decoded the code and its
// neighbour to find the midpoint and encoded again: inlined for every element of a tile it grew
// the e2m1 kernels to ~17,000 SASS instructions on sm_90a (docs/kernels/quant_mx.md).
// t must be finite (+-Inf and NaN round to their own codes: round_quotient skips them).
template <CodeFormat F>
__host__ __device__ inline float nudge_off_midpoint(float x, float t, float a, float b) {
  constexpr int kLowBits = kF32MantissaBits - CodeTraits<F>::kMantissaBits - 1;
  constexpr uint32_t kLowMask = (1u << kLowBits) - 1;
  const uint32_t sign = f32_bits(t) & ~kF32AbsMask;
  const uint32_t m_bits = ((f32_bits(t) & kF32AbsMask) + (kLowMask >> 1) + 1) & ~kLowMask;  // |m|
  const float m = bits_f32(m_bits | sign);
  const float r = fmaf(-(m * a), b, x);  // x - m * D: exact sign (zero only on a true tie)
  // |x / D| beyond |m| when r and t share a sign (t carries x's sign: D > 0).
  const bool away = (r > 0.0f) == (sign == 0u);
  const uint32_t nudged = r == 0.0f ? m_bits : away ? m_bits + 1 : m_bits - 1;
  return bits_f32(nudged | sign);
}

// sat_rne(x / D) for D = a * b > 0, given t ~ x / D within a few ulps (e.g. an f32 division).
// Non-finite x: the code of t (a NaN code for NaN, +-max for +-Inf).
template <CodeFormat F>
__host__ __device__ inline uint8_t round_quotient(float x, float t, float a, float b) {
  const float u = near_midpoint<F>(t) && fabsf(t) <= kF32Max ? nudge_off_midpoint<F>(x, t, a, b) : t;
  return CodeTraits<F>::encode(u);
}

// sat_rne(x / D) for D = a * b, with inv ~ 1 / D (a normal f32 number).
template <CodeFormat F>
__host__ __device__ inline uint8_t quantize_exact(float x, float inv, float a, float b) {
  return round_quotient<F>(x, x * inv, a, b);
}

}  // namespace tejas::num
