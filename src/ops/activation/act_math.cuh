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
#include "device/numeric/packed_half.h"
#include "device/numeric/storage.h"
#include "device/math.h"  // dev::expf: the GPU's error under emulation
#include "device/prelude.h"
#include "device/ptx/minmax.h"
#include "ops/activation/config.h"  // Act, ActOptions


namespace tejas::act {
inline namespace TEJAS_BUILD_NS {

inline constexpr float kTwoSqrt2OverPi = 2.0f * 0.79788456080286535588f;  // 2 sqrt(2 / pi): a = 2z in one product
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

// The scaled path (a < -80), both maths.
__device__ __forceinline__ float scaled_times_sigmoid(float g, float a, float m) {
  const float ts = dev::expf(a + kSigmoidShift);  // e^a e^64
  if (ts == 0.0f) return -0.0f * m;  // a -> -Inf (or so negative that e^a underflows): the limit
  const float p = g * ts;
  const float scaled = p * m;
  if (fabsf(scaled) > num::F32::kMaxFinite && fabsf(m) <= num::F32::kMaxFinite) return p * kExpMinusShift * m;
  return scaled * kExpMinusShift;
}

// The fast form for a >= -80 (and NaN: NaN out): sigmoid(a) = w s with s = 1 / (1 + t) and w = 1
// (a >= 0) or t, so the result is ((g w) s) m: the same products as `g s m` and `g t s m`, bit
// for bit (g 1 = g), with one select instead of a predicated multiply chain (SASS sm_90a).
__device__ __forceinline__ float fast_times_sigmoid(float g, float a, float m) {
  const float t = dev::fast_expf(-fabsf(a));      // >= e^-80: a normal f32, not flushed
  const float s = dev::fdividef(1.0f, 1.0f + t);  // 1 / (1 + t) in [1/2, 1]
  const float w = a >= 0.0f ? 1.0f : t;
  return g * w * s * m;
}

// g * sigmoid(a) * m, with the header's limits: g sigmoid(a) -> -0 when a = -Inf (t = 0 on the
// negative side; then -0 * m), NaN for NaN. Above a = -80 the order is (g sigmoid(a)) m.
// kFast (activation.fast_math: 16-bit outputs; activation.fast_math_quant: the fused kernels'
// f32 y, judged within their tie band): above a = -80, t from dev::fast_expf (__expf, 2 +
// floor(1.173 |a|) <= 95 ulp there) and 1 / (1 + t) from __fdividef (2 ulp, 1 + t in [1, 2]),
// then plain products (subnormal results kept): the result errs by at most ~1.2e-5 (2^-16.4)
// relative near a = -80 and ~2^-21 for |a| <= 4, far below a bf16 (2^-8) or f16 (2^-11) ulp,
// for a few instructions (two MUFU ops) instead of expf's range reduction and an IEEE
// division's Newton steps and slow-path check.
// Below a = -80 both take the scaled accurate path.
template <bool kFast = false>
__device__ __forceinline__ float times_sigmoid(float g, float a, float m) {
  if (a < kScaledSigmoidBelow) return scaled_times_sigmoid(g, a, m);
  if constexpr (kFast) return fast_times_sigmoid(g, a, m);
  const float t = dev::expf(-fabsf(a));
  if (a >= 0.0f) return g / (1.0f + t) * m;
  return g * t / (1.0f + t) * m;
}

// The three factors of g sigmoid(a) m for one element: silu (g, g, up); gelu_tanh (g, 2z, up):
// 0.5 g (1 + tanh(z)) = g sigmoid(2z), and g^3 overflows to +-Inf for huge |g|, which gives the
// limits (g, or -0) as well; clamped SwiGLU (min(g, limit), alpha g, clamp(up) + 1), whose
// comparisons keep NaN (fminf / fmaxf would drop it). kClamp: the clamps here, in f32; false
// where the caller clamped x's 16-bit words already (clamp_pairs).
struct SigmoidTerms {
  float g, a, m;
};
template <Act kAct, bool kClamp = true>
__device__ __forceinline__ SigmoidTerms gated_terms(float gate, float up, const ActOptions& o) {
  if constexpr (kAct == Act::gelu_tanh) {
    // g + c g^3 as one fma, written out: nvcc contracts it (--fmad), the emulator's host build
    // would not. 2 (k x) as (2k) x: the same value (times 2 is exact; below 2^-125 not, where
    // sigmoid(a) is 1/2 in f32 either way), with no add for nvcc to contract.
    return {gate, kTwoSqrt2OverPi * fmaf(kGeluCubic * gate * gate, gate, gate), up};
  } else {
    if (!o.clamped) return {gate, gate, up};
    float g = gate, u = up;
    if constexpr (kClamp) {  // max / min.NaN: one FMNMX each (the compares took ~7-9 with a branch)
      g = ptx::min_nan_f32(gate, o.limit);
      u = ptx::min_nan_f32(ptx::max_nan_f32(up, -o.limit), o.limit);
    }
    return {g, o.alpha * g, u + 1.0f};
  }
}

// The fast math (activation.fast_math / fast_math_quant) over one lane's chunk of N elements, by
// pairs: in(i, gate, up) widens element i from the caller's registers, out(k, y0, y1) takes the
// results of elements 2k and 2k + 1 (one packed word for 16-bit outputs). Each element keeps
// its own branch to the scaled path (a < -80). NOTES: one predicate for the whole chunk and a
// second pass over it when set (no branch per element, ~4 SASS instructions an element fewer)
// kept the loaded words live across the first pass and spilled 12-20 bytes under the default
// kernels' 32-register bound (sm_90a).
template <Act kAct, bool kClamp, int N, class In, class Out>
__device__ __forceinline__ void gated_fast(const In& in, const Out& out, const ActOptions& o) {
  static_assert(N % 2 == 0, "pairs");
  for (int k = 0; k < N / 2; ++k) {
    float y[2];
    for (int j = 0; j < 2; ++j) {
      float gate, up;
      in(2 * k + j, gate, up);
      const SigmoidTerms t = gated_terms<kAct, kClamp>(gate, up, o);
      y[j] = times_sigmoid<true>(t.g, t.a, t.m);
    }
    out(k, y[0], y[1]);
  }
}

// Clamped SwiGLU's clamps on x's 16-bit words (2 elements each), before they are widened:
// gate = min.NaN(gate, limit), up = min.NaN(max.NaN(up, -limit), limit), where the limit is
// exactly a value of x's dtype (o.limit_pair, from config.cpp's with_limit_pair; 0 otherwise).
// The same values as the f32 comparisons of gated_terms (both keep NaN; the limit is positive,
// so no two zeros meet), for 1.5 instructions an element instead of ~7 with the up clamp's branch
// (SASS sm_90a). Returns whether it clamped (else gated_terms must).
template <class S, int kWords>
__device__ __forceinline__ bool clamp_pairs(uint32_t (&gate)[kWords], uint32_t (&up)[kWords], const ActOptions& o) {
  if (!o.clamped || o.limit_pair == 0) return false;
  constexpr uint32_t kSigns = 0x80008000u;
  for (int i = 0; i < kWords; ++i) {
    gate[i] = num::hmin2_nan<S>(gate[i], o.limit_pair);
    up[i] = num::hmin2_nan<S>(num::hmax2_nan<S>(up[i], o.limit_pair ^ kSigns), o.limit_pair);
  }
  return true;
}

// One element's act(gate) * up, element by element (the accurate kernels).
template <Act kAct>
__device__ __forceinline__ float gated(float gate, float up, const ActOptions& o) {
  const SigmoidTerms t = gated_terms<kAct>(gate, up, o);
  return times_sigmoid(t.g, t.a, t.m);
}

// Storage types and access words: device/numeric/storage.h.
using num::Bf16;
using num::F16;
using num::F32;

}  // namespace TEJAS_BUILD_NS
}  // namespace tejas::act
