// CUDA launchers of the quantization kernels (the instantiations live in kernel_select.h).
#include <cmath>
#include <string>

#include "ops/common/cuda_check.h"
#include "runtime/device_copy.h"
#include "ops/quant/checks.h"
#include "ops/quant/kernel_select.h"
#include "ops/quant/launch.h"

namespace tejas::quant_detail {

Status check_device_tensor_scale(const char* op, const ExecContext& ctx, const TensorView& tensor_scale) {
  if (!tensor_scale.defined()) return Status::Ok();  // mxfp8 / mxfp4 / fp8: none to check
  float value = 0.0f;
  TEJAS_RETURN_IF_ERROR(detail::read_device_f32(op, ctx, tensor_scale, &value));
  return tensor_scale_value_status(op, value);
}

}  // namespace tejas::quant_detail

namespace tejas::quant_kernel {

Status run_quant_cuda(const char* op, const ExecContext& ctx, const QuantPlan& plan, bool check_tensor_scale) {
  const auto stream = static_cast<cudaStream_t>(ctx.stream);
  if (check_tensor_scale)
    TEJAS_RETURN_IF_ERROR(quant_detail::check_device_tensor_scale(op, ctx, *plan.t.tensor_scale));
  print_plan(op, plan);
  for (int64_t i = 0; i < plan.num_launches; ++i) {
    const QuantLaunch l = quant_launch(plan, i);
    const QuantConfig& c = l.config;
    const QuantKernel k = select_quant_kernel(plan.t.data->dtype, plan.code, c.vectorized);
    k<<<static_cast<unsigned>(c.grid), c.threads, 0, stream>>>(l.params);
    TEJAS_RETURN_IF_ERROR(detail::cuda_launch_status(op));
  }
  return Status::Ok();
}

Status run_dequant_cuda(const char* op, const ExecContext& ctx, const DequantPlan& plan, bool check_tensor_scale) {
  const auto stream = static_cast<cudaStream_t>(ctx.stream);
  if (check_tensor_scale)
    TEJAS_RETURN_IF_ERROR(quant_detail::check_device_tensor_scale(op, ctx, *plan.t.tensor_scale));
  print_plan(op, plan);
  for (int64_t i = 0; i < plan.num_launches; ++i) {
    const DequantLaunch l = dequant_launch(plan, i);
    const DequantConfig& c = l.config;
    const DequantKernel k = select_dequant_kernel(plan.t.data->dtype, plan.code, c.vectorized);
    k<<<static_cast<unsigned>(c.grid), c.threads, 0, stream>>>(l.params);
    TEJAS_RETURN_IF_ERROR(detail::cuda_launch_status(op));
  }
  return Status::Ok();
}

}  // namespace tejas::quant_kernel
