// Device math of the gated activations in f32 (see tejas/activation.h), and the storage types
// the kernels read and write.
//
// Accuracy: both activations are g * sigmoid(a) with a = g (silu), alpha g (clamped), 2z
// (gelu_tanh, z = sqrt(2/pi) (g + 0.044715 g^3)). sigmoid(a) is formed from t = e^-|a| <= 1,
// as 1 / (1 + t) or t / (1 + t): nothing overflows and nothing cancels; below a = -80, where t
// would lose bits as an f32 subnormal, g t comes from e^(a + 64) and e^-64. So a result
// keeps its relative accuracy down to the f32 subnormals (a naive g / (1 + e^-a) overflows e^-a
// to Inf for a < -88 and flushes representable results to 0). The error is a few f32 ulps plus
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

// Below this a, e^a would be an f32 subnormal (from a = -87.3) with fewer significant bits, and
// 1 + e^a rounds to 1 (from a = -16.6); g sigmoid(a) itself is then often subnormal (g e^a
// below 2^-126), so multiplying it by the other factor m afterwards would keep its few bits.
// There the product is formed as ((g e^(a + 64)) m) e^-64 instead: every factor normal (for
// a >= -151) until the last product, which rounds once. a + 64 is exact there (|a| >= 64: a is
// a multiple of 64's ulp); e^-64 as an f32 adds half an ulp. (g e^(a + 64)) m overflows where
// |result| > FLT_MAX e^-64 ~ 5e10 (never for silu and gelu_tanh: |g e^a| < 1e-33 there; clamped
// SwiGLU with a tiny alpha and a huge up can): then (g e^(a + 64) e^-64) m, whose first product
// is normal because |m| is that large.
inline constexpr float kScaledSigmoidBelow = -80.0f;
inline constexpr float kSigmoidShift = 64.0f;
inline constexpr float kExpMinusShift = 1.6038108905486379e-28f;  // e^-64, rounded to f32

// g * sigmoid(a) * m, with the header's limits: g sigmoid(a) -> -0 when a = -Inf (t = 0 on the
// negative side; then -0 * m), NaN for NaN. Above a = -80 the order is (g sigmoid(a)) m.
// kFast (activation.fast_math: 16-bit outputs; activation.fast_math_quant: the fused kernels'
// f32 y, judged within their tie band): above a = -80, t from __expf (2 + floor(1.173 |a|)
// <= 95 ulp there) and 1 / (1 + t) from __fdividef (2 ulp, 1 + t in [1, 2]), then plain products
// (subnormal results kept): the result errs by at most ~1.2e-5 (2^-16.4) relative near a = -80
// and ~2^-21 for |a| <= 4, far below a bf16 (2^-8) or f16 (2^-11) ulp, for a few instructions
// (two MUFU ops)
// instead of expf's range reduction and an IEEE division's Newton steps and slow-path check.
// Below a = -80 both take the scaled accurate path.
template <bool kFast = false>
__device__ __forceinline__ float times_sigmoid(float g, float a, float m) {
  if (a < kScaledSigmoidBelow) {
    const float ts = dev::expf(a + kSigmoidShift);  // e^a e^64
    if (ts == 0.0f) return -0.0f * m;  // a -> -Inf (or so negative that e^a underflows): the limit
    const float p = g * ts;
    const float scaled = p * m;
    if (fabsf(scaled) > num::F32::kMaxFinite && fabsf(m) <= num::F32::kMaxFinite) return p * kExpMinusShift * m;
    return scaled * kExpMinusShift;
  }
  if constexpr (kFast) {
    const float t = dev::fast_expf(-fabsf(a));      // >= e^-80: a normal f32, not flushed
    const float s = dev::fdividef(1.0f, 1.0f + t);  // 1 / (1 + t) in [1/2, 1]
    if (a >= 0.0f) return g * s * m;
    return g * t * s * m;
  }
  const float t = dev::expf(-fabsf(a));
  if (a >= 0.0f) return g / (1.0f + t) * m;
  return g * t / (1.0f + t) * m;
}

// silu(g) * up.
template <bool kFast = false>
__device__ __forceinline__ float silu_times(float g, float up) { return times_sigmoid<kFast>(g, g, up); }

// gelu_tanh(g) * up: 0.5 g (1 + tanh(z)) = g sigmoid(2z). g^3 overflows to +-Inf for huge |g|,
// which gives the limits (g, or -0) as well.
template <bool kFast = false>
__device__ __forceinline__ float gelu_tanh_times(float g, float up) {
  const float z = kSqrt2OverPi * (g + kGeluCubic * g * g * g);
  return times_sigmoid<kFast>(g, 2.0f * z, up);
}

// The comparisons keep NaN (fminf / fmaxf would drop it).
template <bool kFast = false>
__device__ __forceinline__ float clamped_swiglu(float gate, float up, const ActOptions& o) {
  const float g = gate > o.limit ? o.limit : gate;
  const float u = up > o.limit ? o.limit : (up < -o.limit ? -o.limit : up);
  return times_sigmoid<kFast>(g, o.alpha * g, u + 1.0f);
}

template <Act kAct, bool kFast = false>
__device__ __forceinline__ float gated(float gate, float up, const ActOptions& o) {
  if constexpr (kAct == Act::gelu_tanh) {
    return gelu_tanh_times<kFast>(gate, up);
  } else {
    return o.clamped ? clamped_swiglu<kFast>(gate, up, o) : silu_times<kFast>(gate, up);
  }
}

// Storage types and access words: device/numeric/storage.h.
using num::Bf16;
using num::F16;
using num::F32;

}  // namespace TEJAS_BUILD_NS
}  // namespace tejas::act
