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

// Version 6 of the fp8 f32-scale rule for 16-bit x (bf16, f16): x / s without a per-value
// midpoint test. s = RN(amax / 448); q = x / s = q0 * rho with q0 = 448 x / amax and rho =
// (amax / 448) / s, within 2^-24 of 1 and the same for the whole group.
// - q0 is a ratio of small integers: x and amax have 8 (bf16) or 11 (f16) significant bits and
//   448 = 7 x 2^6, so a q0 that is not an e4m3 midpoint (5 significant bits) lies at least
//   1 / (31 x 2047) ~ 2^-15.95 (relative) from every midpoint (bf16: 1 / (31 x 255) ~ 2^-12.95).
// - So when rho = 1 (s exact: amax a multiple of 7 in its last bits), q's only near-midpoint
//   values are exact ties, which the conversion's round-to-nearest-even decides once the
//   quotient is correctly rounded: t + (x - t s) / s, one refinement of t = x * (1 / s).
// - When rho != 1, the exact ties of q0 move with rho, all one way: away from zero when
//   rho > 1 (amax - 448 s > 0), toward it otherwise. Multiplying by 1 / s moved 2^-19 that way
//   puts each such t on its tie's correct side (rho and three roundings move it by at most
//   ~2^-22), and moves every other t by far less than its 2^-15.95 to a midpoint.
// Groups below the amax clamp (kFp8MinAmax = 1e-10, the fixed scale s = RN(1e-10 / 448)) are no
// such ratio, but no 16-bit x there lies within 2^-18 of a midpoint (f16 has only zeros there;
// every bf16 value was checked), so the bias rounds them right too.
// docs/kernels/quant_fp8_group.md (version 6) has the argument; tests/ops/quant/
// test_quant_config.cpp checks it against long double on every pair of bf16 significands, and
// every bf16 value below the clamp.
struct TieBias {
  float inv = 1.0f;  // 1 / s, moved 2^-19 toward the side the group's ties round to (rho != 1)
  float s = 1.0f;
  float k = 0.0f;    // the refinement's 1 / s (rho = 1), else 0
};
// amax: the group's largest |x| (0 and values below kFp8MinAmax too: there s is the clamp's
// fixed scale, amax - 448 s < 0 and only that sign is used); s: the group's scale; inv = RN(1 / s).
__host__ __device__ inline TieBias tie_bias(float amax, float s, float inv) {
  constexpr float kE4m3Max = CodeTraits<CodeFormat::e4m3>::kMax;
  constexpr float kBias = 0x1p-19f;
  TieBias b;
  b.s = s;
  const float res = fmaf(-s, kE4m3Max, amax);  // amax - 448 s, its sign exact (one rounding)
  if (res == 0.0f) {
    b.inv = inv;
    b.k = inv;
  } else {
    b.inv = fmaf(inv, res > 0.0f ? kBias : -kBias, inv);
  }
  return b;
}
// The quotient whose e4m3 conversion (round to nearest even, saturating) is sat_rne(x / s): two
// fmas after the product, on the FMA pipe; the refinement's term is zero when rho != 1. Written
// so that -0 stays -0: t s - x is +0 for x = +-0, and (+0) x (-k) is -0.
__host__ __device__ inline float tie_biased_quotient(float x, const TieBias& b) {
  const float t = x * b.inv;
  const float rn = fmaf(t, b.s, -x);  // t s - x
  return fmaf(rn, -b.k, t);
}

// The dequant kernels' row walk (dequant_vec_kernel): position (r, v), v a vector's index in its
// row (0 <= v < row_vecs <= kMaxDequantRowVecs < 2^31), moved on by (by_rows, by_vecs), by_vecs
// < row_vecs too. v + by_vecs < 2^32 fits 32 unsigned bits (as int32_t it would overflow for
// row_vecs above 2^30), and at most one row carries.
__host__ __device__ inline void walk_advance(int64_t& r, int32_t& v, int64_t by_rows, int32_t by_vecs,
                                             int32_t row_vecs) {
  r += by_rows;
  uint32_t s = static_cast<uint32_t>(v) + static_cast<uint32_t>(by_vecs);
  if (s >= static_cast<uint32_t>(row_vecs)) {
    s -= static_cast<uint32_t>(row_vecs);
    ++r;
  }
  v = static_cast<int32_t>(s);
}

}  // namespace tejas::quant_kernel
