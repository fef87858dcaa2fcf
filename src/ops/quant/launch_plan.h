// Host planning of the quantization launches: TensorViews -> kernel parameters + configs. A view
// whose leading dims collapse to one row stride (the usual case) is one launch; otherwise one
// launch per index of the outer leading dims.
#pragma once
#include <vector>

#include "ops/quant/config.h"
#include "ops/quant/params.h"
#include "ops/quant/quant_math.h"
#include "tejas/tensor.h"

namespace tejas::quant_kernel {

struct QuantPlan {
  DType x_dtype = DType::bf16;
  CodeFormat code = CodeFormat::e4m3;
  const TensorView* tensors[4] = {};  // x, q, scales, tensor_scale (may be absent)
  std::vector<QuantParams> launches;
  std::vector<QuantConfig> configs;
};

struct DequantPlan {
  DType out_dtype = DType::bf16;
  CodeFormat code = CodeFormat::e4m3;
  const TensorView* tensors[4] = {};  // q, scales, tensor_scale (may be absent), out
  std::vector<DequantParams> launches;
  std::vector<DequantConfig> configs;
};

QuantPlan plan_quant(const TensorView& x, const TensorView& q, const TensorView& scales,
                     const TensorView& tensor_scale, int64_t group, ScaleRule rule);
DequantPlan plan_dequant(const TensorView& q, const TensorView& scales, const TensorView& tensor_scale,
                         const TensorView& out, int64_t group);

// Prints each launch's config when TEJAS_PRINT_CONFIG=1.
void print_plan(const char* op, const QuantPlan& plan);
void print_plan(const char* op, const DequantPlan& plan);

}  // namespace tejas::quant_kernel
