// Exact f32 rounding for the quantization kernels (host and device): every result equals the
// float64 reference's bit for bit, not only up to a tie.
//
// - x / 2^e (MX, ue8m0 scales) is an exponent shift: exact.
// - x / D for a non-power-of-two divisor D (f32 scales; nvfp4's block_scale * tensor_scale):
//   num::quantize_exact (src/device/numeric/exact_round.h) resolves the near-midpoint cases.
// - Dequantization to bf16 / f16 of a product that f32 rounds (f32 or nvfp4 scales) rounds the
//   product to odd in f32 first (from its exact fma residual), which makes the second rounding
//   correct.
#pragma once
#include <cstdint>
#include "device/numeric/exact_round.h"

namespace tejas::quant_kernel {

using num::bits_f32;
using num::CodeFormat;
using num::CodeTraits;
using num::f32_bits;
using num::kF32AbsMask;
using num::kF32Bias;
using num::kF32ExpMask;
using num::kF32MantissaBits;
using num::kF32Max;
using num::kTieSlackUlps;
using num::near_midpoint;
using num::quantize_exact;
using num::nudge_off_midpoint;

// 2^k as f32 for -126 <= k <= 127 (normal range).
__host__ __device__ inline float pow2f(int k) {
  return bits_f32(static_cast<uint32_t>(k + kF32Bias) << kF32MantissaBits);
}

// ue8m0 code of 2^ceil(log2(v / 448)) for v >= kFp8MinAmax (finite): rounding v / 448 up to a power
// of two from its RN quotient can only come out one step low (RN may land on 2^k from above).
__host__ __device__ inline uint8_t ue8m0_ceil_scale(float v) {
  constexpr float kE4m3Max = CodeTraits<CodeFormat::e4m3>::kMax;
  uint8_t code = num::f32_to_ue8m0(v / kE4m3Max);
  if (v > kE4m3Max * num::ue8m0_to_f32(code)) ++code;
  return code;
}

// MX scale exponent: floor(log2(amax)) - emax_elem, clamped below at -127 (ue8m0 code 0).
inline constexpr int kMinScaleExponent = -127;
template <CodeFormat F>
__host__ __device__ inline int mx_scale_exponent(float amax) {
  const int biased = static_cast<int>((f32_bits(amax) >> kF32MantissaBits) & kF32ExpMask);
  if (biased == 0) return kMinScaleExponent;  // zero or subnormal: far below the clamp
  const int e = biased - kF32Bias - CodeTraits<F>::kEmax;
  return e < kMinScaleExponent ? kMinScaleExponent : e;
}

// 1 / 2^e for an MX exponent (-127 <= e <= 125): exact, normal.
__host__ __device__ inline float mx_inverse_scale(int e) { return pow2f(-e); }

// a * b rounded to odd in f32 (exact when the product is), so that one more rounding to a
// format at least two bits narrower (bf16, f16) equals the correct rounding of a * b.
__host__ __device__ inline float mul_round_odd(float a, float b) {
  const float p = a * b;
  const float err = fmaf(a, b, -p);
  if (err == 0.0f || !(fabsf(p) <= kF32Max)) return p;  // exact, or overflowed
  uint32_t bits = f32_bits(p);
  // p was rounded away from zero when err points the other way: step back toward zero first.
  if ((err < 0.0f) == (p > 0.0f)) --bits;
  return bits_f32(bits | 1u);
}

}  // namespace tejas::quant_kernel
