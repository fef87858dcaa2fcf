// Exact rounding of a quotient x / D to an fp8 / fp4 code in f32 arithmetic (host and device):
// sat_rne(x / D) bit for bit as float64 division would give it, not only up to a tie.
//
// Why f32 can be exact here (docs/kernels/quant_fp8_group.md, "Rounding"):
// - x / D for a non-power-of-two divisor D is approximated by t (x * (1 / D), or an f32
//   division) within a few f32 ulps. Its code can differ from the code of the exact quotient
//   only when t lies within those ulps of a rounding midpoint of the code format. Midpoints have
//   at most mantissa_bits + 2 significant bits, so that case is found from t's low mantissa bits
//   (near_midpoint: 17 in 2^20 values of F's normal range for e4m3, 17 in 2^22 for e2m1, more
//   below it; far more often on bf16 data, whose few significant bits make exact ties common)
//   and then decided
//   exactly by the sign of the residual x - mid * D, computed in one fma.
// - A float64 reference rounds x / D to double first; its result is never a false midpoint
//   (x has 24 bits and D at most 28, so a non-tie lies at least 2^-32 from a midpoint, relative).
// The residual must not underflow to 0, or it reads as an exact tie (no flush-to-zero builds: it
// may be an f32 subnormal). It is a multiple of the smaller of x's and mid * D's ulps, so it stays
// nonzero for divisors down to ~2^-109 (e5m2) / 2^-116 (e4m3) with bf16 / f16 / f32 x, and in the
// normal range down to ~2^-86; quant_fp8_group's f32 scales are >= ~2^-42, nvfp4's >= 2^-73. A
// caller with smaller divisors passes x * 2^k and b * 2^k (rope_kv_cache_write: k = 64 for
// scales below 2^-64): the residual's sign is the same.
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
inline constexpr float kF32MinNormal = 1.17549435e-38f;  // 2^-126

// A positive normal f32 number (not 0, subnormal, Inf or NaN): where a reciprocal 1 / s may
// stand in for a division by s (x * (1 / s) within ~1.5 ulps of x / s).
__host__ __device__ inline bool is_positive_normal(float v) { return v >= kF32MinNormal && v <= kF32Max; }
// x as computed, hidden from the host compiler's reasoning (the emulator's build of kernel code):
// nothing it knows about the expression that made x carries over to x or back to its inputs.
// GCC 13.3 at -O3 (the GPU machine's host compiler) broke the rope kernel's fp8 divisor for a
// subnormal scale s: a standalone copy computed 1.0f / (s * 2^64) as Inf beside an earlier
// 1.0f / s (as (1 / s) * 2^-64 would be; an opaque product fixed it there), and the emulated
// kernel wrote the saturated code for every value even with the product opaque, as if the
// failed normality test of 1 / s had let the compiler take s for 0 (GCC 13 added value ranges
// for floats). Both the reciprocal and the product now pass through here. On the device,
// identity: nvcc keeps the divisions and the test as written (rcp.rn.f32, checked in the PTX).
__host__ __device__ __forceinline__ float keep_order(float x) {
#if TEJAS_DEVICE_PASS
  return x;
#else
  volatile float opaque = x;  // a volatile read: a value the compiler knows nothing about
  return opaque;
#endif
}
// Distance (in f32 ulps of t) within which t ~ x / D is checked against a midpoint: the
// approximations err by at most ~2 ulps (a rounded reciprocal, a rounded product of two scales,
// the final multiply), ~4.5 for the rope family's fast reciprocal (__fdividef's 2 ulps, up to 4
// ulps of t at the bottom of its binade, and the product's rounding: ops/rope/kernel.cuh's
// fp8_divisor); 8 leaves a margin at no cost.
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
  static constexpr uint32_t kMinNormalBits = 0x3C800000u;  // 2^-6
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
  static constexpr uint32_t kMinNormalBits = 0x38800000u;  // 2^-14
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
  static constexpr uint32_t kMinNormalBits = 0x3F800000u;  // 1.0
  __host__ __device__ static uint8_t encode(float v) { return f32_to_e2m1(v); }
  __host__ __device__ static float decode(uint8_t c) { return e2m1_to_f32(c); }
};

// The bits of t below a rounding midpoint's last significant bit in F's normal range (a midpoint
// has kMantissaBits + 2 significant bits): near_midpoint, near_key and nudge_off_midpoint.
template <CodeFormat F>
inline constexpr int kMidpointLowBits = kF32MantissaBits - CodeTraits<F>::kMantissaBits - 1;

// Could t be within kTieSlackUlps of a rounding midpoint of F? In F's normal range a midpoint
// has kMantissaBits + 2 significant bits, the last one set: in t's bits an odd multiple of
// 2^kLowBits. Below F's smallest normal value midpoints have fewer bits: there any nonzero t
// whose bits below 2^kLowBits are near zero counts. Zero and the code values of F's normal range
// (448 for the largest element of an fp8 group, 6, ...) do not count, so the correction's branch
// stays rare on real data; F's subnormal code values (e4m3 k * 2^-9, e2m1 0.5) still do,
// harmlessly. Each test is one multiply-add (the bits kept moved to the top of the word,
// sign and exponent shifted out) and one compare; the carry handles binade edges.
// NOTES: the first form took every t with low bits near zero: the largest element of each fp8
// group (t ~ 448) and every zero qualified, so the chunk's correction branch ran for nearly every
// chunk of quant_fp8_group.
template <CodeFormat F>
__host__ __device__ inline bool near_midpoint(float t) {
  constexpr int kLowBits = kMidpointLowBits<F>;
  constexpr uint32_t kUpOdd = 1u << (31 - kLowBits);  // keeps kLowBits + 1 bits
  constexpr uint32_t kUp = 1u << (32 - kLowBits);     // keeps kLowBits bits
  const uint32_t bits = f32_bits(t);
  // (bits - 2^kLowBits + slack) mod 2^(kLowBits + 1) <= 2 slack.
  const bool odd_near = bits * kUpOdd + ((1u << kLowBits) + kTieSlackUlps) * kUpOdd <= 2 * kTieSlackUlps * kUpOdd;
  // 0 < |t| < F's smallest normal, and (bits + slack) mod 2^kLowBits <= 2 slack.
  const bool small = bits * 2u - 2u < CodeTraits<F>::kMinNormalBits * 2u - 2u;  // sign shifted out
  const bool low_near = bits * kUp + kTieSlackUlps * kUp <= 2 * kTieSlackUlps * kUp;
  return odd_near || (small && low_near);
}

// A cheaper, wider filter than near_midpoint for a run of values (the quant kernels' chunks): the
// run needs the correction only if some t has near_key<F>(t) <= kNearKeyMax<F>, which holds for
// every t near_midpoint accepts and for any other whose bits below 2^kLowBits lie within the
// slack of a multiple of 2^kLowBits (about 17 in 2^21 of e2m1's values: the odd / even and
// below-F's-normal-range distinctions are dropped). One multiply-add and one add per value, on
// the FMA pipe, and an unsigned min per value or two, where near_midpoint takes about seven
// integer (ALU) instructions. Zero would pass (all its low bits are 0), so t + kNearKeyOffset
// is tested instead (an add that is never fused with the multiply that made t): equal to t for
// |t| >= 2^-70, far from any midpoint of F for t = 0 (and
// for the tiny t it does move, which lie far below F's smallest midpoint, the answer does not
// matter). Passing a t that is not near a midpoint only costs the correction branch:
// nudge_off_midpoint leaves such t's code as it is.
inline constexpr float kNearKeyOffset = 0x1.4b4b4ap-100f;  // f32 bits 0x0DA5A5A5
template <CodeFormat F>
inline constexpr uint32_t kNearKeyUp = 1u << (32 - kMidpointLowBits<F>);
template <CodeFormat F>
inline constexpr uint32_t kNearKeyMax = 2 * kTieSlackUlps * kNearKeyUp<F>;
template <CodeFormat F>
__host__ __device__ inline uint32_t near_key(float t) {
#if TEJAS_DEVICE_PASS
  const float shifted = __fadd_rn(t, kNearKeyOffset);  // not contracted with the multiply making t
#else
  const float shifted = t + kNearKeyOffset;
#endif
  return f32_bits(shifted) * kNearKeyUp<F> + kTieSlackUlps * kNearKeyUp<F>;
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
// t must not be NaN; t = +-Inf needs a finite x (x = +-Inf would make the residual NaN:
// round_quotient skips non-finite t).
template <CodeFormat F>
__host__ __device__ inline float nudge_off_midpoint(float x, float t, float a, float b) {
  constexpr int kLowBits = kMidpointLowBits<F>;
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
