// Reference (float64) gated activations: the oracle for every other backend. See
// tejas/activation.h. Arguments are assumed validated by the public functions.
#pragma once
#include "tejas/activation.h"

namespace tejas::ref {

// The activations on one float64 value, with the header's limits at +-Inf.
double silu(double g);
double gelu_tanh(double g);
// gpt-oss clamped SwiGLU of one (gate, up) pair.
double clamped_swiglu(double gate, double up, double limit, double alpha);

void silu_mul(const TensorView& x, const TensorView& out, const SiluMulOptions& options);
void gelu_tanh_mul(const TensorView& x, const TensorView& out);

// The fused ops: y = silu_mul (unrounded, clamped to x's finite range) fed to the quant
// references (tejas/activation.h).
void silu_mul_quant_fp8_group(const TensorView& x, const TensorView& q, const TensorView& scales,
                              const SiluMulOptions& options);
void silu_mul_quant_mx(MxFormat format, const TensorView& x, const TensorView& q, const TensorView& scales,
                       const TensorView& tensor_scale, const SiluMulOptions& options);

}  // namespace tejas::ref
