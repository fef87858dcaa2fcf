// Gated activations: x[T, 2F] = [gate | up] -> out[T, F].
//
//   silu_mul:      out = silu(gate) * up,            silu(g) = g / (1 + exp(-g))
//   gelu_tanh_mul: out = gelu_tanh(gate) * up,       gelu_tanh(g) = 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3)))
//   silu_mul with SiluMulOptions::clamped (gpt-oss's clamped SwiGLU):
//                  g = min(gate, limit); u = clamp(up, -limit, limit);
//                  out = g * sigmoid(alpha * g) * (u + 1)
//
// Dtypes: x in {bf16, f16, f32}; out has x's dtype. Strides: innermost contiguous, token stride free.
// Math in float64 in the reference; one rounding at the end. NaN in, NaN out.
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
