// Gated activations: x[T, 2F] = [gate | up] -> out[T, F].
//
//   silu_mul:      out = silu(gate) * up,            silu(g) = g / (1 + exp(-g))
//   gelu_tanh_mul: out = gelu_tanh(gate) * up,       gelu_tanh(g) = 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3)))
//   silu_mul with SiluMulOptions::clamped (gpt-oss's clamped SwiGLU):
//                  g = min(gate, limit); u = clamp(up, -limit, limit);
//                  out = g * sigmoid(alpha * g) * (u + 1)
//                  (gate is clamped from above only; limit and alpha finite and > 0).
//
// Shapes: T >= 1, F >= 1. Dtypes: x in {bf16, f16, f32}; out has x's dtype.
// Strides: non-negative; innermost contiguous, token stride free; out must not overlap x or
// itself. Data pointers aligned to the element size; both on one device.
// Math in float64 in the reference; one rounding at the end.
// Non-finite values, per element:
//   NaN in gate or up gives NaN out (the clamps do not hide NaN).
//   gate = +Inf: silu and gelu_tanh give +Inf (their limit); gate = -Inf: they give -0 (their
//   limit), so out = -0 * up (NaN when up is +-Inf). Clamped: +Inf gate -> limit, -Inf gate ->
//   -0 * (u + 1); +-Inf up -> +-limit. Otherwise the product follows IEEE (Inf * 0 = NaN).
#pragma once
#include "tejas/context.h"
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

}  // namespace tejas
