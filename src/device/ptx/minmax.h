// ptx::max_nan_f32(a, b) / min_nan_f32(a, b): `max.NaN.f32` / `min.NaN.f32` (sm_80+): the larger /
// smaller of a and b, +0 ordered above -0, and the canonical NaN (0x7FFFFFFF) when either is NaN
// (PTX ISA, "Floating Point Instructions: max / min"). One FMNMX in SASS, where the comparisons
// that keep NaN (`a != a || a > b ? a : b`) took two compares and a select (sm_90a); fmaxf /
// fminf drop NaN. Under emulation the same rule on the host.
#pragma once
#include "device/prelude.h"

#include <cstdint>
#if !TEJAS_DEVICE_PASS
#include <bit>
#include <cmath>
#endif

namespace tejas::ptx {

#if !TEJAS_DEVICE_PASS
namespace minmax_detail {  // the host rule: NaN in, canonical NaN out; a > b with +0 above -0
inline float canonical_nan() { return std::bit_cast<float>(uint32_t{0x7FFFFFFFu}); }
inline bool greater(float a, float b) {
  if (a == b) return !std::signbit(a) && std::signbit(b);  // only zeros of two signs differ here
  return a > b;
}
}  // namespace minmax_detail
#endif

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
