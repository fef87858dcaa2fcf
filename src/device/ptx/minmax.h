// ptx::max_nan_f32(a, b) / min_nan_f32(a, b): `max.NaN.f32` / `min.NaN.f32` (sm_80+): the larger /
// smaller of a and b, +0 ordered above -0, and the canonical NaN (0x7FFFFFFF) when either is NaN
// (PTX ISA, "Floating Point Instructions: max / min"). One FMNMX in SASS, where the comparisons
// that keep NaN (`a != a || a > b ? a : b`) took two compares and a select (sm_90a); fmaxf /
// fminf drop NaN. Under emulation the same rule on the host.
#pragma once
#include "device/prelude.h"

#include <cstdint>
#include <cstring>

namespace tejas::ptx {

namespace minmax_detail {
inline constexpr uint32_t kCanonicalNaN32 = 0x7FFFFFFFu;
__host__ __device__ inline float canonical_nan() {
  float r;
  memcpy(&r, &kCanonicalNaN32, sizeof(r));
  return r;
}
__host__ __device__ inline bool signbit_of(float x) {
  uint32_t b;
  memcpy(&b, &x, sizeof(b));
  return (b >> 31) != 0;
}
// The host rule: NaN in, canonical NaN out; a > b with +0 above -0.
__host__ __device__ inline bool greater(float a, float b) {
  if (a == b) return !signbit_of(a) && signbit_of(b);  // only zeros of two signs differ here
  return a > b;
}
}  // namespace minmax_detail

__device__ __forceinline__ float max_nan_f32(float a, float b) {
#if TEJAS_DEVICE_PASS
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  if (a != a || b != b) return minmax_detail::canonical_nan();
  return minmax_detail::greater(b, a) ? b : a;
#endif
}

__device__ __forceinline__ float min_nan_f32(float a, float b) {
#if TEJAS_DEVICE_PASS
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  if (a != a || b != b) return minmax_detail::canonical_nan();
  return minmax_detail::greater(a, b) ? b : a;
#endif
}

}  // namespace tejas::ptx
