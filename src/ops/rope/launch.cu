// The rope family's cuda backend: the kernels of kernels.cuh on ctx.stream.
#include <cuda_runtime.h>

#include <string>

#include "ops/common/cuda_check.h"
#include "ops/rope/kernels.cuh"
#include "ops/rope/plan.h"

namespace tejas::rotary {

Status launch_cuda(const char* op, const ExecContext& ctx, const RopeLaunch& l) {
  const KernelFn kernel = select_kernel(l.dtype, l.config.vec, l.config.heads_in_flight);
  if (kernel == nullptr)
    return Status::Internal(std::string(op) + ": no kernel instantiated for vec " + std::to_string(l.config.vec) +
                            " with " + std::to_string(l.config.heads_in_flight) + " heads in flight");
  maybe_print_config(op, l.problem, l.config);
  auto* stream = static_cast<cudaStream_t>(ctx.stream);
  kernel<<<dim3(static_cast<unsigned>(l.config.blocks)), dim3(static_cast<unsigned>(l.config.threads)), 0, stream>>>(
      l.params);
  return detail::cuda_launch_status(op);
}

}  // namespace tejas::rotary
