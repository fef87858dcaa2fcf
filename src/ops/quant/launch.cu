// CUDA launchers of the quantization kernels (the instantiations live in kernel_select.h).
#include <cmath>
#include <string>

#include "ops/common/cuda_check.h"
#include "ops/quant/kernel_select.h"
#include "ops/quant/launch.h"

namespace tejas::quant_kernel {
namespace {

// Debug-check mode: tensor_scale (device, f32 [1]) must be finite and > 0. Synchronizes the stream.
Status check_device_tensor_scale(const char* op, const TensorView& ts, cudaStream_t stream) {
  if (!ts.defined()) return Status::Ok();
  float value = 0.0f;
  TEJAS_RETURN_IF_ERROR(
      detail::cuda_status(op, cudaMemcpyAsync(&value, ts.data, sizeof(value), cudaMemcpyDeviceToHost, stream),
                          "tensor_scale copy"));
  TEJAS_RETURN_IF_ERROR(detail::cuda_status(op, cudaStreamSynchronize(stream), "tensor_scale copy"));
  if (std::isfinite(value) && value > 0.0f) return Status::Ok();
  return Status::InvalidArgument(std::string(op) + ": tensor_scale: expected a finite value > 0, got " +
                                 std::to_string(value));
}

}  // namespace

Status run_quant_cuda(const char* op, const ExecContext& ctx, const QuantPlan& plan, bool check_tensor_scale) {
  const auto stream = static_cast<cudaStream_t>(ctx.stream);
  if (check_tensor_scale) TEJAS_RETURN_IF_ERROR(check_device_tensor_scale(op, *plan.tensors[3], stream));
  print_plan(op, plan);
  for (size_t i = 0; i < plan.launches.size(); ++i) {
    const QuantConfig& c = plan.configs[i];
    const QuantKernel k = select_quant_kernel(plan.x_dtype, plan.code, c.vectorized);
    k<<<static_cast<unsigned>(c.grid), c.threads, 0, stream>>>(plan.launches[i]);
    TEJAS_RETURN_IF_ERROR(detail::cuda_launch_status(op));
  }
  return Status::Ok();
}

Status run_dequant_cuda(const char* op, const ExecContext& ctx, const DequantPlan& plan, bool check_tensor_scale) {
  const auto stream = static_cast<cudaStream_t>(ctx.stream);
  if (check_tensor_scale) TEJAS_RETURN_IF_ERROR(check_device_tensor_scale(op, *plan.tensors[2], stream));
  print_plan(op, plan);
  for (size_t i = 0; i < plan.launches.size(); ++i) {
    const DequantConfig& c = plan.configs[i];
    const DequantKernel k = select_dequant_kernel(plan.out_dtype, plan.code, c.vectorized);
    k<<<static_cast<unsigned>(c.grid), c.threads, 0, stream>>>(plan.launches[i]);
    TEJAS_RETURN_IF_ERROR(detail::cuda_launch_status(op));
  }
  return Status::Ok();
}

}  // namespace tejas::quant_kernel
