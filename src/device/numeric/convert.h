// Numeric conversions between f32 and the narrow formats, on raw codes (the bits kernels store).
// Built on the CUDA headers' conversion functions so host (emulator, reference glue) and device
// produce identical bits: every function is __host__ __device__ and the headers' host paths are
// bit-exact software models of the device cvt instructions.
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
__host__ __device__ inline F32x2 bf16x2_to_f32x2(uint32_t packed) {
  return {bf16_to_f32(static_cast<uint16_t>(packed)), bf16_to_f32(static_cast<uint16_t>(packed >> 16))};
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
__host__ __device__ inline F32x2 e4m3x2_to_f32x2(uint16_t packed) {
  return {e4m3_to_f32(static_cast<uint8_t>(packed)), e4m3_to_f32(static_cast<uint8_t>(packed >> 8))};
}
__host__ __device__ inline F32x2 e5m2x2_to_f32x2(uint16_t packed) {
  return {e5m2_to_f32(static_cast<uint8_t>(packed)), e5m2_to_f32(static_cast<uint8_t>(packed >> 8))};
}

// ---- fp4 (e2m1): codes are nibbles; pairs are one byte, element 0 in the low nibble ----------
inline constexpr uint8_t kNibbleMask = 0xF;

__host__ __device__ inline uint8_t f32_to_e2m1(float x) {
  return static_cast<uint8_t>(__nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest) & kNibbleMask);
}
__host__ __device__ inline float e2m1_to_f32(uint8_t code) {
  const auto nibble = static_cast<__nv_fp4_storage_t>(code & kNibbleMask);
  return __half2float(__half(__nv_cvt_fp4_to_halfraw(nibble, __NV_E2M1)));
}
__host__ __device__ inline uint8_t f32x2_to_e2m1x2(float lo, float hi) {
  float2 v;
  v.x = lo;
  v.y = hi;
  return static_cast<uint8_t>(__nv_cvt_float2_to_fp4x2(v, __NV_E2M1, cudaRoundNearest));
}
__host__ __device__ inline F32x2 e2m1x2_to_f32x2(uint8_t packed) {
  return {e2m1_to_f32(packed & kNibbleMask), e2m1_to_f32(static_cast<uint8_t>(packed >> 4))};
}

// ---- ue8m0 (power-of-two scale byte) ----------------------------------------------------------
__host__ __device__ inline uint8_t f32_to_ue8m0(float x) {
  return static_cast<uint8_t>(__nv_cvt_float_to_e8m0(x, __NV_SATFINITE, cudaRoundPosInf));
}
// 2^(code - 127); 0xFF is NaN. Every value is exact in bf16 (2^-127 as a subnormal).
__host__ __device__ inline float ue8m0_to_f32(uint8_t code) {
  return __bfloat162float(__nv_bfloat16(__nv_cvt_e8m0_to_bf16raw(code)));
}

}  // namespace tejas::num
