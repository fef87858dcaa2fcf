// Device math of the gated activations in f32 (see tejas/activation.h), and the storage types
// the kernels read and write.
//
// Accuracy: both activations are g * sigmoid(a) with a = g (silu), alpha g (clamped), 2z
// (gelu_tanh, z = sqrt(2/pi) (g + 0.044715 g^3)). sigmoid(a) is formed from t = e^-|a| <= 1,
// as 1 / (1 + t) or t / (1 + t): nothing overflows and nothing cancels, so a result keeps its
// relative accuracy down to the f32 subnormals (a naive g / (1 + e^-a) overflows e^-a to Inf
// for a < -88 and flushes representable results to 0). The error is a few f32 ulps plus
// |a| times the relative rounding error of a (for gelu, ~|2z| * 2^-22, i.e. <= 2^-15 where the
// result is still a normal f32): far below a bf16/f16 ulp, so those outputs are within one
// ulp of the correctly rounded value.
#pragma once
#include "device/numeric/convert.h"
#include "device/numeric/storage.h"
#include "device/math.h"  // dev::expf: the GPU's error under emulation
#include "device/prelude.h"
#include "ops/activation/config.h"  // Act, ActOptions


namespace tejas::act {
inline namespace TEJAS_BUILD_NS {

inline constexpr float kSqrt2OverPi = 0.79788456080286535588f;
inline constexpr float kGeluCubic = 0.044715f;

// g * sigmoid(a), with the header's limits: -0 when a = -Inf (t = 0 on the negative side), NaN
// for NaN.
__device__ __forceinline__ float times_sigmoid(float g, float a) {
  const float t = dev::expf(-fabsf(a));
  if (a >= 0.0f) return g / (1.0f + t);
  if (t == 0.0f) return -0.0f;  // a -> -Inf (or so negative that e^a underflows): the limit
  return g * t / (1.0f + t);
}

__device__ __forceinline__ float silu(float g) { return times_sigmoid(g, g); }

// 0.5 g (1 + tanh(z)) = g sigmoid(2z). g^3 overflows to +-Inf for huge |g|, which gives the
// limits (g, or -0) as well.
__device__ __forceinline__ float gelu_tanh(float g) {
  const float z = kSqrt2OverPi * (g + kGeluCubic * g * g * g);
  return times_sigmoid(g, 2.0f * z);
}

// The comparisons keep NaN (fminf / fmaxf would drop it).
__device__ __forceinline__ float clamped_swiglu(float gate, float up, const ActOptions& o) {
  const float g = gate > o.limit ? o.limit : gate;
  const float u = up > o.limit ? o.limit : (up < -o.limit ? -o.limit : up);
  return times_sigmoid(g, o.alpha * g) * (u + 1.0f);
}

template <Act kAct>
__device__ __forceinline__ float gated(float gate, float up, const ActOptions& o) {
  if constexpr (kAct == Act::gelu_tanh) {
    return gelu_tanh(gate) * up;
  } else {
    return o.clamped ? clamped_swiglu(gate, up, o) : silu(gate) * up;
  }
}

// Storage types and access words: device/numeric/storage.h.
using num::Bf16;
using num::F16;
using num::F32;

}  // namespace TEJAS_BUILD_NS
}  // namespace tejas::act
