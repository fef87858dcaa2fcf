// The rope family's cuda backend: the kernels of kernels.cuh on ctx.stream.
#include <cuda_runtime.h>

#include <string>

#include "ops/common/cuda_check.h"
#include "ops/rope/kernels.cuh"
#include "ops/rope/plan.h"

namespace tejas::rotary {

Status launch_cuda(const char* op, const ExecContext& ctx, const RopeLaunch& l) {
  const KernelFn kernel = select_kernel(l.dtype, l.config.vec, l.config.heads_in_flight, l.params.head_stage, l.params.kv_loads_first);
  if (kernel == nullptr)
    return Status::Internal(std::string(op) + ": no kernel instantiated for vec " + std::to_string(l.config.vec) +
                            " with " + std::to_string(l.config.heads_in_flight) + " heads in flight");
  maybe_print_config(op, l.problem, l.config);
  auto* stream = static_cast<cudaStream_t>(ctx.stream);
  // At most 512 threads x 2 heads x 2 accesses x 16 bytes = 32 KiB of staged heads: under the
  // 48 KiB every kernel may ask for without an attribute.
  kernel<<<dim3(static_cast<unsigned>(l.config.blocks)), dim3(static_cast<unsigned>(l.config.threads)), l.smem_bytes, stream>>>(
      l.params);
  return detail::cuda_launch_status(op);
}

}  // namespace tejas::rotary
