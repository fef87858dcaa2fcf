// Reference (float64) semantics of the quantization ops; see include/tejas/quant.h.
// Arguments are already validated; tensors are host tensors.
#pragma once
#include "tejas/quant.h"
#include "tejas/tensor.h"

namespace tejas::ref {

void quant_fp8_group(const TensorView& x, const TensorView& q, const TensorView& scales, int group_size);
void dequant_fp8_group(const TensorView& q, const TensorView& scales, const TensorView& out, int group_size);

// tensor_scale: f32 [1] for nvfp4, absent otherwise.
void quant_mx(MxFormat format, const TensorView& x, const TensorView& q, const TensorView& scales,
              const TensorView& tensor_scale);
void dequant_mx(MxFormat format, const TensorView& q, const TensorView& scales, const TensorView& tensor_scale,
                const TensorView& out);

}  // namespace tejas::ref
