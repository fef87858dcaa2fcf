// Gated activations: x[T, 2F] = [gate | up] -> out[T, F].
//
//   silu_mul:      out = silu(gate) * up,            silu(g) = g / (1 + exp(-g))
//   gelu_tanh_mul: out = gelu_tanh(gate) * up,       gelu_tanh(g) = 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3)))
//   silu_mul with SiluMulOptions::clamped (gpt-oss's clamped SwiGLU):
//                  g = min(gate, limit); u = clamp(up, -limit, limit);
//                  out = g * sigmoid(alpha * g) * (u + 1)
//                  (gate is clamped from above only; limit and alpha positive normal f32
//                  values, 2^-126 to FLT_MAX: the kernels use them as f32).
//   Layout: x holds the gate half then the up half. gpt-oss's reference (and vLLM's
//   swigluoai_and_mul) read interleaved [g0, u0, g1, u1, ...]: de-interleave the w13 weight rows
//   at load time so the projection writes [gate | up].
//   Differences from vLLM, on purpose: one rounding at the end (vLLM rounds silu(gate) to the
//   activation dtype before the product), NaN propagates through the clamp (fminf hides it),
//   and silu(-Inf) = -0 rather than NaN.
//
// Shapes: T >= 0 (T = 0 does nothing), F >= 1 (the emulator and cuda backends: T <= 2^31 - 1,
// beyond returns unsupported there). Dtypes: x in {bf16, f16, f32}; out has x's dtype.
// Strides: non-negative; innermost contiguous, token stride free; out must not overlap x or
// itself. Data pointers aligned to the element size; both on one device.
// Math in float64 in the reference; one rounding at the end.
// Non-finite values, per element:
//   NaN in gate or up gives NaN out (the clamps do not hide NaN).
//   gate = +Inf: silu and gelu_tanh give +Inf (their limit); gate = -Inf: they give -0 (their
//   limit), so out = -0 * up (NaN when up is +-Inf). Clamped: +Inf gate -> limit, -Inf gate ->
//   -0 * (u + 1); +-Inf up -> +-limit. Otherwise the product follows IEEE (Inf * 0 = NaN).
//
// Fused with quantization (the input of an FP8 / FP4 down-projection). y = silu_mul(x, options)
// in float64, *not* rounded to x's dtype: the kernels keep y in f32 registers, so quantizing
// the unrounded value is both what they can do and one rounding fewer than silu_mul followed by
// a quant op. A y beyond x's largest finite value (+-Inf included) counts as that value with
// its sign, as an Inf input does in tejas/quant.h; NaN stays NaN. Then:
//   silu_mul_quant_fp8_group: the rules of quant_fp8_group with group_size 128 applied to y:
//     q[T, F] e4m3, scales[T, F / 128] f32 or ue8m0 (its dtype selects the rule).
//   silu_mul_quant_mx: the rules of quant_mx applied to y, format mxfp4 (q e2m1, scales ue8m0
//     [T, F / 32]) or nvfp4 (q e2m1, scales e4m3 [T, F / 16], tensor_scale f32 [1] an input,
//     in [2^-64, 2^64] as in tejas/quant.h; checked when it is a host tensor, or in debug-check
//     mode on calls with tokens). mxfp8 is not offered.
// x in {bf16, f16} ([T, 2F], T >= 0, F a multiple of the group size). Layout rules as above for
// x; q and scales: innermost contiguous, non-negative strides, every element its own address,
// e2m1 rows starting on a byte (even row stride); q and scales overlap neither x nor each
// other. All tensors on one device.
#pragma once
#include "tejas/context.h"
#include "tejas/quant.h"
#include "tejas/status.h"
#include "tejas/tensor.h"

namespace tejas {

struct SiluMulOptions {
  bool clamped = false;
  double limit = 7.0;
  double alpha = 1.702;
};

Status silu_mul(const ExecContext& ctx, const TensorView& x, const TensorView& out,
                const SiluMulOptions& options = {});

Status gelu_tanh_mul(const ExecContext& ctx, const TensorView& x, const TensorView& out);

inline constexpr int kSiluQuantFp8Group = 128;

Status silu_mul_quant_fp8_group(const ExecContext& ctx, const TensorView& x, const TensorView& q,
                                const TensorView& scales, const SiluMulOptions& options = {});

Status silu_mul_quant_mx(const ExecContext& ctx, MxFormat format, const TensorView& x, const TensorView& q,
                         const TensorView& scales, const TensorView& tensor_scale = {},
                         const SiluMulOptions& options = {});

}  // namespace tejas
