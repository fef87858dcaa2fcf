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

}  // namespace tejas::ref
