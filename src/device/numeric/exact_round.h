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

// Bit casts usable on host and device (the __float_as_uint intrinsics are device-only in nvcc).
__host__ __device__ inline uint32_t f32_bits(float v) {
  uint32_t b;
  memcpy(&b, &v, sizeof(b));
  return b;
}
__host__ __device__ inline float bits_f32(uint32_t b) {
  float v;
  memcpy(&v, &b, sizeof(v));
  return v;
}

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
  constexpr uint32_t kLowMask = (1u << kLowBits) - 1;
  const uint32_t bits = f32_bits(t) & kF32AbsMask;
  return ((bits + kTieSlackUlps) & kLowMask) <= 2 * kTieSlackUlps;  // the carry handles binade edges
}

// The code of sat_rne(x / D) where D = a * b > 0, given t ~ x / D (within a few ulps) whose code
// `c` is near a midpoint. `a * mid` must be exact in f32 for every midpoint `mid` of F (a = 1,
// or a with few significant bits).
template <CodeFormat F>
__host__ __device__ inline uint8_t resolve_near_tie(float x, float t, uint8_t c, float a, float b) {
  using T = CodeTraits<F>;
  const float v = T::decode(c);
  // Representable t, or saturation: the exact quotient rounds to the same code.
  if (t == v || !(fabsf(t) < T::kMax)) return c;
  const bool up = fabsf(t) > fabsf(v);  // the neighbour on t's side has the larger magnitude
  const auto n = static_cast<uint8_t>(up ? c + 1 : c - 1);  // sign-magnitude: +-1 is +-1 step
  const float mid = 0.5f * (v + T::decode(n));
  const float r = fmaf(-(mid * a), b, x);  // sign(x - mid * D): exact
  if (r == 0.0f) return T::encode(mid);   // a true tie: ties to even
  const bool beyond = (r > 0.0f) == (mid > 0.0f);  // |x / D| > |mid|
  return beyond == up ? n : c;
}

// sat_rne(x / D) for D = a * b > 0, given t ~ x / D within a few ulps (e.g. an f32 division).
// Non-finite x: the code of t (a NaN code for NaN, +-max for +-Inf): resolve_near_tie keeps it.
template <CodeFormat F>
__host__ __device__ inline uint8_t round_quotient(float x, float t, float a, float b) {
  const uint8_t c = CodeTraits<F>::encode(t);
  return near_midpoint<F>(t) ? resolve_near_tie<F>(x, t, c, a, b) : c;
}

// sat_rne(x / D) for D = a * b, with inv ~ 1 / D (a normal f32 number).
template <CodeFormat F>
__host__ __device__ inline uint8_t quantize_exact(float x, float inv, float a, float b) {
  return round_quotient<F>(x, x * inv, a, b);
}

}  // namespace tejas::num
