// Numeric conversions between f32 and the narrow formats, on raw codes (the bits kernels store).
// Host (emulator, reference glue) and device produce identical bits: every function is
// __host__ __device__. bf16, f16, e4m3 and e5m2 use the CUDA headers' conversion functions (their
// host paths are bit-exact software models of the device cvt instructions); e2m1 and ue8m0 use
// the headers only where the cvt instructions exist, and f32 / integer arithmetic elsewhere
// (see "fp4" below).
//
// Rules (see docs/device-layer.md, "Numeric rules"):
//   f32 -> bf16 / f16:  round to nearest even, overflow to +-Inf, NaN -> canonical NaN 0x7FFF.
//   f32 -> e4m3 / e5m2: round to nearest even, saturate to +-max finite (cvt.rn.satfinite),
//                       NaN -> 0x7F (sign dropped; 0x7F is NaN in both formats).
//   f32 -> e2m1:        round to nearest even, saturate to +-6; NaN -> 0x7 (+6; no NaN code).
//   f32 -> ue8m0:       round |x| up to a power of two (cvt.rp.satfinite), clamp to
//                       [2^-127, 2^127]; NaN -> 0xFF. The sign is ignored (scales are >= 0).
// Packed pairs put the first (lower-index) element in the low bits: byte / nibble / half 0.
#pragma once
#include <cstdint>
#include <cstring>
#include <cmath>

// nvcc hands its own include directory to the host compiler as a non-system path, so the CUDA
// 13 fp4 header's unused parameters would trip -Wextra -Werror in .cu files.
#if defined(__GNUC__)
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wunused-parameter"
#endif
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#if defined(__GNUC__)
#  pragma GCC diagnostic pop
#endif

namespace tejas::num {

struct F32x2 {
  float lo, hi;  // element 0, element 1
};

// ---- bit casts usable on host and device (the __float_as_uint intrinsics are device-only) ------
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

// ---- bf16 -------------------------------------------------------------------------------------
__host__ __device__ inline uint16_t f32_to_bf16(float x) {
  const __nv_bfloat16_raw r = __float2bfloat16_rn(x);
  return r.x;
}
__host__ __device__ inline float bf16_to_f32(uint16_t code) {
  __nv_bfloat16_raw r;
  r.x = code;
  return __bfloat162float(__nv_bfloat16(r));
}
__host__ __device__ inline uint32_t f32x2_to_bf16x2(float lo, float hi) {
  return static_cast<uint32_t>(f32_to_bf16(lo)) | (static_cast<uint32_t>(f32_to_bf16(hi)) << 16);
}
// bf16 is the top half of an f32: each lane's bits moved into place, one shift and one mask
// (bf16_to_f32 per lane compiled to a byte permute and a shift for the high lane, sm_90a).
__host__ __device__ inline F32x2 bf16x2_to_f32x2(uint32_t packed) {
  return {bits_f32(packed << 16), bits_f32(packed & 0xFFFF0000u)};
}

// ---- f16 --------------------------------------------------------------------------------------
__host__ __device__ inline uint16_t f32_to_f16(float x) {
  const __half_raw r = __float2half_rn(x);
  return r.x;
}
__host__ __device__ inline float f16_to_f32(uint16_t code) {
  __half_raw r;
  r.x = code;
  return __half2float(__half(r));
}
__host__ __device__ inline uint32_t f32x2_to_f16x2(float lo, float hi) {
  return static_cast<uint32_t>(f32_to_f16(lo)) | (static_cast<uint32_t>(f32_to_f16(hi)) << 16);
}
__host__ __device__ inline F32x2 f16x2_to_f32x2(uint32_t packed) {
  return {f16_to_f32(static_cast<uint16_t>(packed)), f16_to_f32(static_cast<uint16_t>(packed >> 16))};
}

// ---- fp8 (e4m3fn, e5m2) -----------------------------------------------------------------------
namespace detail {
__host__ __device__ inline uint8_t f32_to_fp8(float x, __nv_fp8_interpretation_t kind) {
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, kind));
}
// Every e4m3 / e5m2 value is exact in f16, so decoding through f16 loses nothing.
__host__ __device__ inline float fp8_to_f32(uint8_t code, __nv_fp8_interpretation_t kind) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(code, kind)));
}
__host__ __device__ inline uint16_t f32x2_to_fp8x2(float lo, float hi, __nv_fp8_interpretation_t kind) {
  float2 v;
  v.x = lo;  // .x lands in the low byte
  v.y = hi;
  return static_cast<uint16_t>(__nv_cvt_float2_to_fp8x2(v, __NV_SATFINITE, kind));
}
}  // namespace detail

__host__ __device__ inline uint8_t f32_to_e4m3(float x) { return detail::f32_to_fp8(x, __NV_E4M3); }
__host__ __device__ inline float e4m3_to_f32(uint8_t code) { return detail::fp8_to_f32(code, __NV_E4M3); }
__host__ __device__ inline uint8_t f32_to_e5m2(float x) { return detail::f32_to_fp8(x, __NV_E5M2); }
__host__ __device__ inline float e5m2_to_f32(uint8_t code) { return detail::fp8_to_f32(code, __NV_E5M2); }

__host__ __device__ inline uint16_t f32x2_to_e4m3x2(float lo, float hi) { return detail::f32x2_to_fp8x2(lo, hi, __NV_E4M3); }
__host__ __device__ inline uint16_t f32x2_to_e5m2x2(float lo, float hi) { return detail::f32x2_to_fp8x2(lo, hi, __NV_E5M2); }
namespace detail {
// Both codes through one pair conversion to f16 (one cvt on sm_89 and later), then each widened.
__host__ __device__ inline F32x2 fp8x2_to_f32x2(uint16_t packed, __nv_fp8_interpretation_t kind) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(packed, kind);
  __half_raw lo, hi;
  lo.x = h.x;
  hi.x = h.y;
  return {__half2float(__half(lo)), __half2float(__half(hi))};
}
}  // namespace detail
__host__ __device__ inline F32x2 e4m3x2_to_f32x2(uint16_t packed) { return detail::fp8x2_to_f32x2(packed, __NV_E4M3); }
__host__ __device__ inline F32x2 e5m2x2_to_f32x2(uint16_t packed) { return detail::fp8x2_to_f32x2(packed, __NV_E5M2); }


// Where the cvt instructions for e2m1 and ue8m0 exist (sm_100a and its family), the conversions
// below use them through the CUDA headers. Everywhere else (sm_80, sm_90a, and the host, so the
// emulator runs what sm_90a runs) they are plain f32 / integer arithmetic. NOTES: the headers'
// fallback on sm_90a converts e2m1 through double precision with branches (tens of
// instructions, some on the FP64 pipe, per element), which made the fp4 quantization kernels
// issue-bound (docs/kernels/quant_mx.md, version 4). tests/device/test_numeric.cpp checks the
// arithmetic forms against the float64 model (tejas::ref) and the headers' host code.
#if defined(__CUDA_ARCH__) && __CUDA_FP8_INTERNAL_CAN_RELY_ON_PTX_FOR_SHORTTYPESCVT__
#define TEJAS_NUM_HW_FP4_CVT 1
#else
#define TEJAS_NUM_HW_FP4_CVT 0
#endif

// ---- fp4 (e2m1): codes are nibbles; pairs are one byte, element 0 in the low nibble ----------
inline constexpr uint8_t kNibbleMask = 0xF;

namespace detail {
inline constexpr uint32_t kAbsMask = 0x7FFFFFFFu;
inline constexpr uint32_t kInfBits = 0x7F800000u;
inline constexpr uint32_t kOneHalfBits = 0x3F000000u;  // 0.5f
inline constexpr float kE2m1MaxF = 6.0f;
// 1.5 * 2^23: adding it rounds a value below 2^22 to an integer (RNE), left in the low bits.
inline constexpr float kRoundToIntMagic = 12582912.0f;
// An e2m1 code's exponent-and-mantissa bits sit at f32 bit 22 up: code = (f32 bits >> 22) - 252
// for values >= 1 (1.0 = 0x3F800000 -> 254 - 252 = 2, 6.0 = 0x40C00000 -> 259 - 252 = 7).
inline constexpr int kE2m1Shift = 22;
inline constexpr uint32_t kE2m1CodeBias = 252u << kE2m1Shift;

// sat_rne(x) to e2m1 in f32 / integer arithmetic (about 11 instructions, no branch) for x not
// NaN (+-Inf saturates).
__host__ __device__ inline uint8_t f32_to_e2m1_not_nan(float x) {
  const uint32_t u = f32_bits(x);
  const float a = fminf(fabsf(x), kE2m1MaxF);
  // Below 1 the codes are 0, 0.5, 1 (0, 1, 2): 2a rounded to an integer, ties to even.
  const uint32_t low = f32_bits(fmaf(a, 2.0f, kRoundToIntMagic)) & 0x3u;
  // From 1 up: round a's mantissa to one bit (ties to even) in the integer bits.
  const uint32_t b = f32_bits(a);
  const uint32_t half_ulp = (1u << (kE2m1Shift - 1)) - 1u + ((b >> kE2m1Shift) & 1u);
  const uint32_t high = (b + half_ulp - kE2m1CodeBias) >> kE2m1Shift;
  return static_cast<uint8_t>((a < 1.0f ? low : high) | ((u >> 28) & 0x8u));
}

// Any x: NaN -> 0x7 (+6), as cvt.rn.satfinite.e2m1x2.f32 (fminf of a signaling NaN may be NaN,
// so NaN is replaced after the fact).
__host__ __device__ inline uint8_t f32_to_e2m1_arith(float x) {
  const bool nan = (f32_bits(x) & kAbsMask) > kInfBits;
  return nan ? static_cast<uint8_t>(0x7u) : f32_to_e2m1_not_nan(x);
}

// e2m1 code -> f32 in integer arithmetic: magnitudes 2..7 are f32 bits (m << 22) + 0.5f's bits
// (1.0 .. 6.0); 1 is 0.5 and 0 is 0.
__host__ __device__ inline float e2m1_to_f32_arith(uint8_t code) {
  const uint32_t m = code & 0x7u;
  const uint32_t mag = m >= 2 ? (m << kE2m1Shift) + kOneHalfBits : (m == 1 ? kOneHalfBits : 0u);
  return bits_f32(mag | (static_cast<uint32_t>(code & 0x8u) << 28));
}
}  // namespace detail

__host__ __device__ inline uint8_t f32_to_e2m1(float x) {
#if TEJAS_NUM_HW_FP4_CVT
  return static_cast<uint8_t>(__nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest) & kNibbleMask);
#else
  return detail::f32_to_e2m1_arith(x);
#endif
}
__host__ __device__ inline float e2m1_to_f32(uint8_t code) {
#if TEJAS_NUM_HW_FP4_CVT
  const auto nibble = static_cast<__nv_fp4_storage_t>(code & kNibbleMask);
  return __half2float(__half(__nv_cvt_fp4_to_halfraw(nibble, __NV_E2M1)));
#else
  return detail::e2m1_to_f32_arith(code);
#endif
}
__host__ __device__ inline uint8_t f32x2_to_e2m1x2(float lo, float hi) {
#if TEJAS_NUM_HW_FP4_CVT
  float2 v;
  v.x = lo;
  v.y = hi;
  return static_cast<uint8_t>(__nv_cvt_float2_to_fp4x2(v, __NV_E2M1, cudaRoundNearest));
#else
  return static_cast<uint8_t>(detail::f32_to_e2m1_arith(lo) | (detail::f32_to_e2m1_arith(hi) << 4));
#endif
}
// f32x2_to_e2m1x2 for inputs that are not NaN (the quantization kernels' scaled values): three
// instructions fewer per element where the conversion is arithmetic.
__host__ __device__ inline uint8_t f32x2_to_e2m1x2_not_nan(float lo, float hi) {
#if TEJAS_NUM_HW_FP4_CVT
  return f32x2_to_e2m1x2(lo, hi);
#else
  return static_cast<uint8_t>(detail::f32_to_e2m1_not_nan(lo) | (detail::f32_to_e2m1_not_nan(hi) << 4));
#endif
}
__host__ __device__ inline F32x2 e2m1x2_to_f32x2(uint8_t packed) {
  return {e2m1_to_f32(packed & kNibbleMask), e2m1_to_f32(static_cast<uint8_t>(packed >> 4))};
}

// ---- ue8m0 (power-of-two scale byte) ----------------------------------------------------------
namespace detail {
inline constexpr uint32_t kUe8m0Max = 254;         // 2^127
inline constexpr uint32_t kUe8m0NaNCode = 0xFF;
inline constexpr uint32_t kF32MinSubnormalPow2 = 0x00400000u;  // 2^-127, ue8m0 code 0
inline constexpr int kF32Mantissa = 23;

// Round |x| up to a power of two, clamped to [2^-127, 2^127]; NaN -> 0xFF.
__host__ __device__ inline uint8_t f32_to_ue8m0_arith(float x) {
  const uint32_t a = f32_bits(x) & kAbsMask;
  if (a > kInfBits) return static_cast<uint8_t>(kUe8m0NaNCode);
  const uint32_t e = a >> kF32Mantissa;
  const uint32_t up = (a & ((1u << kF32Mantissa) - 1u)) != 0u ? 1u : 0u;
  // f32 subnormals: (0, 2^-127] -> 2^-127 (code 0), above -> 2^-126 (code 1).
  const uint32_t code = e == 0 ? (a > kF32MinSubnormalPow2 ? 1u : 0u) : e + up;
  return static_cast<uint8_t>(code < kUe8m0Max ? code : kUe8m0Max);
}

// 2^(code - 127); 0xFF is NaN; code 0 is the f32 subnormal 2^-127.
__host__ __device__ inline float ue8m0_to_f32_arith(uint8_t code) {
  const uint32_t c = code;
  const uint32_t bits = c == kUe8m0NaNCode ? 0x7FC00000u : c == 0 ? kF32MinSubnormalPow2 : c << kF32Mantissa;
  return bits_f32(bits);
}
}  // namespace detail

__host__ __device__ inline uint8_t f32_to_ue8m0(float x) {
#if TEJAS_NUM_HW_FP4_CVT
  return static_cast<uint8_t>(__nv_cvt_float_to_e8m0(x, __NV_SATFINITE, cudaRoundPosInf));
#else
  return detail::f32_to_ue8m0_arith(x);
#endif
}
// Every value is exact in f32 (2^-127 as a subnormal).
__host__ __device__ inline float ue8m0_to_f32(uint8_t code) {
#if TEJAS_NUM_HW_FP4_CVT
  return __bfloat162float(__nv_bfloat16(__nv_cvt_e8m0_to_bf16raw(code)));
#else
  return detail::ue8m0_to_f32_arith(code);
#endif
}

}  // namespace tejas::num
