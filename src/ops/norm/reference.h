// Reference (float64) RMSNorm family: the oracle for every other backend. See tejas/norm.h.
// Arguments are assumed validated by the public functions (shapes, dtypes, overlaps); only
// tensor contents (the static FP8 scale) are checked here.
#pragma once
#include "tejas/norm.h"

namespace tejas::ref {

// invalid_argument naming out_scale.scale unless the static scale's value is finite and > 0.
Status check_static_fp8_scale(const char* op, const TensorView& scale);

Status rms_norm(const TensorView& x, const TensorView& weight, double eps, const TensorView& out,
                const Fp8Scale& out_scale);

Status fused_add_rms_norm(const TensorView& x, const TensorView& residual, const TensorView& weight,
                          double eps, const TensorView& out, const Fp8Scale& out_scale);

Status fused_add_rms_norm_quant_fp8_group(const TensorView& x, const TensorView& residual, const TensorView& weight,
                                          double eps, const TensorView& q, const TensorView& scales);

}  // namespace tejas::ref
