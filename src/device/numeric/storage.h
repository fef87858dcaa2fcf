// Storage types of the activation dtypes as kernels hold them: the raw code in memory and its
// exact f32 value in registers (one definition for every op family's kernels), and the register
// type of one global access of 1..16 bytes.
#pragma once
#include <cstdint>

#include "device/numeric/convert.h"

namespace tejas::num {

struct Bf16 {
  using Raw = uint16_t;
  static constexpr float kMaxFinite = 3.3895313892515355e38f;  // 0x7F7F
  static constexpr uint32_t kInfBits = 0x7F80;                   // +Inf's code
  static constexpr bool kNarrow = true;                          // narrower than f32
  __host__ __device__ __forceinline__ static float to_f32(Raw r) { return bf16_to_f32(r); }
  __host__ __device__ __forceinline__ static Raw from_f32(float x) { return f32_to_bf16(x); }
  // Both lanes of a word of two codes (element 0 in the low half).
  __host__ __device__ __forceinline__ static F32x2 to_f32x2(uint32_t w) { return bf16x2_to_f32x2(w); }
};
struct F16 {
  using Raw = uint16_t;
  static constexpr float kMaxFinite = 65504.0f;
  static constexpr uint32_t kInfBits = 0x7C00;
  static constexpr bool kNarrow = true;
  __host__ __device__ __forceinline__ static float to_f32(Raw r) { return f16_to_f32(r); }
  __host__ __device__ __forceinline__ static Raw from_f32(float x) { return f32_to_f16(x); }
  __host__ __device__ __forceinline__ static F32x2 to_f32x2(uint32_t w) { return f16x2_to_f32x2(w); }
};
struct F32 {
  using Raw = float;
  static constexpr float kMaxFinite = 3.4028234663852886e38f;  // FLT_MAX
  static constexpr uint32_t kInfBits = 0x7F800000u;
  static constexpr bool kNarrow = false;
  __host__ __device__ __forceinline__ static float to_f32(Raw r) { return r; }
  __host__ __device__ __forceinline__ static Raw from_f32(float x) { return x; }
};

// The register type of one access of kBytes (1, 2, 4, 8 or 16).
template <int kBytes> struct AccessWord;
template <> struct AccessWord<1> { using type = uint8_t; };
template <> struct AccessWord<2> { using type = uint16_t; };
template <> struct AccessWord<4> { using type = uint32_t; };
template <> struct AccessWord<8> { using type = uint2; };
template <> struct AccessWord<16> { using type = uint4; };

}  // namespace tejas::num
