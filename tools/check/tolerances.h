// How `tejas check` compares a backend's outputs with the reference's, per output dtype. The
// reference computes in float64 and rounds once; the kernels compute in f32 in their own order.
// Each bound is what the op's public header promises, or, where it promises less, what the
// family's unit tests enforce on the same kernels (named below): a looser rule here would let
// `tejas check` pass a GPU result the test suite rejects on the emulator.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "check/case_runner.h"
#include "ops/common/ref_numeric.h"
#include "tejas/dtype.h"

namespace tejas::check {

// f32 results of reductions (attention's outputs and log-sum-exp): f32 accumulation of up to a
// few thousand terms in another order has relative error growing like sqrt(n) * 2^-24, about
// 4e-6 at n = 4096; 1e-5 leaves room without hiding a wrong formula.
inline constexpr double kF32Rel = 1e-5;
// bf16 / f16: tejas/norm.h and tejas/rope.h promise 1 ulp of the reference, and the activation
// unit tests (tests/ops/activation/kernel_test_util.h) enforce 1 ulp: the kernels' f32 value lies
// far less than an ulp from the float64 one, so its one rounding can land only on the correctly
// rounded value or, next to a midpoint, its neighbour.
inline constexpr int64_t kHalfUlps = 1;
// rms_norm's f32 outputs: tests/ops/norm/kernel_harness.h's bound (a sum of <= 17 squares per
// thread, a tree of <= 10 levels, rsqrt, two products: ~20 f32 ulps; 32 leave room).
inline constexpr double kNormF32Rel = 0x1p-19;
// f32 scales of computed values: amax of the kernel's f32 y over 448, one rounding. Norm: y's
// ~20 ulps, as kNormF32Rel (kernel_harness.h kScaleRel). Activation: y's error grows with the
// sigmoid's argument through expf (fused_expect.h kF32ScaleRel: 2^-16 covers |alpha g| ~ 90).
inline constexpr double kNormScaleRel = 0x1p-19;
inline constexpr double kActivationScaleRel = 0x1p-16;
// Tie windows of tie-aware codes (Rule::tie_codes): the relative distance from a rounding
// boundary within which a kernel's f32 value may round to the other side. Each is the window
// of the family's unit tests, justified there:
//   norm: y within ~20 f32 ulps, over the stored scale: 64 ulps (kernel_harness.h kTieWindow);
//   activation: y and the scale arithmetic in f32 with expf's error amplified by the sigmoid's
//     argument: 2^-15 (fused_expect.h kTieRel), far below the 2^-4 spacing of any fp8/fp4 code;
//   rope's fp8 cache: none - the kernels round the quotient stored / scale exactly (near-midpoint
//     quotients decided from the fma residual, src/device/numeric/exact_round.h), so the code is
//     the float64 reference's (test_rope_kv_cache_write_kernel.cpp, Fp8CachesRoundTheExactQuotient).
inline constexpr double kNormTieRel = 0x1p-18;
inline constexpr double kActivationTieRel = 0x1p-15;
inline constexpr double kKvCacheTieRel = 0.0;
// rms_norm and silu_mul: f32 underflow (results in the subnormal range lose relative precision).
inline constexpr double kF32SubnormalAbs = 0x1p-140;

// Elementwise outputs of float dtype `t`; `abs` covers results near zero, where an ulp is tiny
// but the f32 computation carries its inputs' absolute error. Codes (fp8, fp4, scales) never
// come here: they are exact (exact_rule) or tie-aware (tie_rule).
inline Rule float_rule(DType t, double abs = 0.0) {
  Rule r;
  r.tol.abs = abs;
  if (t == DType::f32 || t == DType::f64) {
    r.tol.rel = kF32Rel;
  } else if (dtype_bits(t) == 16) {
    r.tol.ulps = kHalfUlps;
  } else {
    r.exact = true;
  }
  return r;
}

// f32 outputs with a relative bound of their own (kNormF32Rel, activation_f32_rule).
inline Rule f32_rule(double rel, double abs = 0.0) {
  Rule r;
  r.tol.rel = rel;
  r.tol.abs = abs;
  return r;
}

// rope / mrope / rope_kv_cache_write's rotated q and k: tejas/rope.h promises bf16/f16 within 1
// ulp and f32 within a few f32 ulps of |a| + |b| (the kernels' fma has an absolute error below
// 2^-23 (|a| + |b|)); near zero, cancellation leaves that absolute error, not 1 ulp. As
// tests/ops/rope/rope_test_util.h kernel_tolerance: abs 2^-23 * max(|a| + |b|), plus 1 ulp
// (bf16/f16) or 2^-23 relative (f32, its own rounding). `max_pair_sum`: 2 max |x| over q, k.
inline Rule rope_rule(DType t, double max_pair_sum) {
  constexpr double kF32Eps = 0x1p-23;
  Rule r = float_rule(t, kF32Eps * max_pair_sum);
  if (t == DType::f32) r.tol.rel = kF32Eps;
  return r;
}

// silu_mul / gelu_tanh_mul f32 outputs: no accumulation, but the rounding of the sigmoid's
// argument a is amplified |a| times by the exponential: tests/ops/activation/kernel_test_util.h
// allows (8 + 4 |a|) f32 ulps per element (expf's 2 ulps on the GPU, the division, the product).
// A case's rule uses the largest |a| of its inputs, so no element gets less than that bound.
inline Rule activation_f32_rule(double max_abs_arg) {
  constexpr double kFewUlps = 8.0, kArgAmplification = 4.0, kF32Ulp = 0x1p-24;
  return f32_rule((kFewUlps + kArgAmplification * max_abs_arg) * kF32Ulp, kF32SubnormalAbs);
}

// Bitwise: the quantization kernels round exactly (src/ops/quant/quant_math.h: codes, f32 /
// ue8m0 / e4m3 scales and dequantized outputs all equal the float64 reference's bit for bit);
// power-of-two scales of input values come from exponents only; stored residuals are one
// rounding of an exact sum (tejas/norm.h); copied bits stay bits.
inline Rule exact_rule() {
  Rule r;
  r.exact = true;
  return r;
}

// Codes (and power-of-two scales) of values the kernel computes in f32: see Rule::tie_codes.
inline Rule tie_rule(TieCodes codes, double rel) {
  Rule r;
  r.tie_codes = std::move(codes);
  r.tie_rel = rel;
  return r;
}

// The codes of `values` (row-major, float64 before rounding) moved by (1 + rel), rounded by
// ref::encode's rules for `t` (RNE with saturation for fp8 / fp4, rounding up for ue8m0).
inline std::vector<uint64_t> encode_all(DType t, const std::vector<double>& values, double rel) {
  std::vector<uint64_t> codes;
  codes.reserve(values.size());
  for (double v : values) codes.push_back(ref::encode(t, v * (1.0 + rel)));
  return codes;
}

// f32 scales of computed values (amax of a norm's or activation's f32 y, / 448): y's relative
// error, not only the division's rounding (kNormScaleRel, kActivationScaleRel).
inline Rule computed_scale_rule(double rel) { return f32_rule(rel); }

// Merged attention outputs in bf16 / f16: tejas/attention.h promises no bound and there is no
// kernel yet; 2 ulps (one rounding of an f32 value within ~1e-5 of float64, plus one
// intermediate rounding) plus `abs` until the kernels state theirs.
inline Rule merge_rule(DType t, double abs) {
  constexpr int64_t kMergeHalfUlps = 2;
  Rule r = float_rule(t, abs);
  if (dtype_bits(t) == 16) r.tol.ulps = kMergeHalfUlps;
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
