// The rope family's cuda backend: the kernels of kernels.cuh on ctx.stream.
#include <cuda_runtime.h>

#include <string>

#include "ops/common/cuda_check.h"
#include "ops/rope/kernels.cuh"
#include "ops/rope/plan.h"

namespace tejas::rotary {

Status launch_cuda(const char* op, const ExecContext& ctx, const RopeLaunch& l) {
  const KernelFn kernel = select_kernel(l.dtype, l.config.vec);
  if (kernel == nullptr)
    return Status::Internal(std::string(op) + ": no kernel instantiated for vec " + std::to_string(l.config.vec));
  maybe_print_config(op, l.problem, l.config);
  auto* stream = static_cast<cudaStream_t>(ctx.stream);
  kernel<<<dim3(static_cast<unsigned>(l.config.blocks)), dim3(static_cast<unsigned>(l.config.threads)), 0, stream>>>(
      l.params);
  return detail::cuda_launch_status(op);
}

Status copy_to_host(const char* op, const ExecContext& ctx, const TensorView& device, std::vector<uint8_t>* storage,
                    TensorView* host) {
  int64_t lo = 0, hi = 0;
  device.byte_extent(&lo, &hi);
  storage->assign(static_cast<size_t>(hi - lo), 0);
  auto* stream = static_cast<cudaStream_t>(ctx.stream);
  const char* src = static_cast<const char*>(device.data) + lo;
  TEJAS_RETURN_IF_ERROR(detail::cuda_status(
      op, cudaMemcpyAsync(storage->data(), src, storage->size(), cudaMemcpyDeviceToHost, stream), "debug-check copy"));
  TEJAS_RETURN_IF_ERROR(detail::cuda_status(op, cudaStreamSynchronize(stream), "debug-check copy"));
  *host = device;
  host->data = storage->data() - lo;
  host->device = Device::cpu;
  host->device_index = 0;
  return Status::Ok();
}

}  // namespace tejas::rotary
