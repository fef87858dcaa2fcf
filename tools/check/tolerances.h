// How `tejas check` compares a backend's outputs with the reference's, per output dtype. The
// reference computes in float64 and rounds once; the kernels compute in f32 in their own order.
#pragma once
#include "check/case_runner.h"
#include "tejas/dtype.h"

namespace tejas::check {

// f32 accumulation of up to a few thousand terms in another order: relative error grows like
// sqrt(n) * 2^-24, about 4e-6 at n = 4096; 1e-5 leaves room without hiding a wrong formula.
inline constexpr double kF32Rel = 1e-5;
// bf16/f16: the kernel's f32 value lies within ~1e-5 relative of the float64 value, so its
// single rounding can land one code away from the reference's; 2 ulps allows that plus one
// intermediate rounding where the math order requires it (e.g. a stored residual).
inline constexpr int64_t kHalfUlps = 2;
// fp8/fp4 codes from computed values: exact, except that f32 vs float64 scale arithmetic can move
// a value across a rounding midpoint (a tie) and flip the code by one step. Nothing larger.
inline constexpr int64_t kCodeTieSteps = 1;
// f32 scales (amax / 448) of input values: amax is exact, one division: two f32 ulps of
// float64's value. Scales of computed values (norm, activation) use kF32Rel instead.
inline constexpr double kF32ScaleRel = 0x1p-22;

// Elementwise outputs of dtype `t`; `abs` covers cancellation (rope's a*cos - b*sin) where a
// result near zero has a tiny ulp but carries the inputs' absolute error.
inline Rule float_rule(DType t, double abs = 0.0) {
  Rule r;
  r.tol.abs = abs;
  if (t == DType::f32 || t == DType::f64) {
    r.tol.rel = kF32Rel;
  } else if (dtype_bits(t) == 16) {
    r.tol.ulps = kHalfUlps;
  } else {
    r.tol.ulps = kCodeTieSteps;
  }
  return r;
}

// Quantized codes and scales computed from amax: see kCodeTieSteps.
inline Rule code_rule() {
  Rule r;
  r.tol.ulps = kCodeTieSteps;
  return r;
}

// Power-of-two scales (ue8m0, MX) come from exponents only: exact.
inline Rule exact_rule() {
  Rule r;
  r.exact = true;
  return r;
}

inline Rule f32_scale_rule() {
  Rule r;
  r.tol.rel = kF32ScaleRel;
  return r;
}

// f32 scales of computed values (amax of a norm's or activation's f32 y, / 448): y carries the
// sum of squares' f32 error and the GPU's rsqrtf / expf (2 ulps each, modeled by the emulator's
// TEJAS_EMU_MATH=gpu), so the scale has y's relative error, not two ulps: kF32Rel.
inline Rule computed_scale_rule() {
  Rule r;
  r.tol.rel = kF32Rel;
  return r;
}

// Attention outputs: kernels may round softmax probabilities to bf16 before the P*V product
// (tensor-core inputs), a relative error of 2^-9 per term; summed over keys it stays below
// 2^-9 * max|V|. Allowed: 2^-8 * max|V| absolute plus 2^-7 relative.
inline Rule attention_rule(double max_abs_v) {
  constexpr double kProbRounding = 0x1p-8, kRel = 0x1p-7;
  Rule r;
  r.tol.abs = kProbRounding * max_abs_v;
  r.tol.rel = kRel;
  return r;
}

// Log-sum-exp outputs (f32): a few f32 ulps of values of order 1-10.
inline Rule lse_rule(bool inf_ok = false) {
  constexpr double kLseAbs = 1e-5;
  Rule r;
  r.tol.abs = kLseAbs;
  r.tol.rel = kF32Rel;
  r.inf_ok = inf_ok;
  return r;
}

}  // namespace tejas::check
