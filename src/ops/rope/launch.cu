// The rope family's cuda backend: the kernels of kernels.cuh on ctx.stream.
#include <cuda_runtime.h>

#include <optional>
#include <string>

#include "ops/common/cuda_check.h"
#include "ops/common/launch_kernel.h"
#include "ops/common/resident.h"
#include "ops/rope/kernels.cuh"
#include "ops/rope/plan.h"

namespace tejas::rotary {

Status launch_cuda(const char* op, const ExecContext& ctx, const RopeLaunch& planned, RopeLaunch* launched) {
  int64_t resident = 0;
  std::optional<RopeLaunch> fallback;
  const RopeLaunch* run = &planned;  // copied only where the plan changes: this runs on every call
  if (planned.pipeline) {
    resident = pipeline_fallback_forced() ? 0
                                          : detail::resident_ctas(reinterpret_cast<const void*>(kernel_of(planned)),
                                                                  planned.config.threads, planned.smem_bytes);
    if (resident == 0) {  // the query failed: the default kernel instead
      run = &fallback.emplace(without_pipeline(planned));
    }
  }
  const RopeLaunch& l = *run;
  if (launched != nullptr) *launched = l;  // what runs (last_launch())
  const KernelFn kernel = kernel_of(l);
  if (kernel == nullptr)
    return Status::Internal(std::string(op) + ": no kernel instantiated for vec " + std::to_string(l.config.vec) +
                            " with " + std::to_string(l.config.heads_in_flight) + " heads in flight");
  // The pipelined kernel's persistent grid: the CTAs the GPU holds at once.
  const int64_t blocks = l.pipeline ? pipe_blocks(l.config, resident) : l.config.blocks;
  maybe_print_config(op, l.problem, l.config, l.pipeline ? blocks : 0);
  // The staged kernels' one stage of slots: at most 512 threads x (2 heads x 2 accesses + 1 v) x
  // 16 bytes = 40 KiB, and 512 x 3 heads x 2 accesses x 16 = 48 KiB exactly for the wide step's
  // plan without its pipeline (without_pipeline): within the 48 KiB any kernel may ask for without
  // an attribute, which the emulator enforces too (emu::LaunchOptions::max_dynamic_smem_bytes).
  // The pipelined kernels' two stages (up to 96 KiB) get the opt-in maximum from resident_ctas.
  return detail::launch_kernel(op, ctx, kernel, dim3(static_cast<unsigned>(blocks)),
                               dim3(static_cast<unsigned>(l.config.threads)), l.smem_bytes, l.params);
}

}  // namespace tejas::rotary
