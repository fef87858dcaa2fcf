// CUDA backend of the activation ops: the curated instantiations of launch_common.h launched on
// ctx.stream; launch errors come back as Status (no synchronization).
#include <cuda_runtime.h>

#include "ops/activation/launch_common.h"
#include "runtime/print_config.h"
#include "ops/common/cuda_check.h"
#include "ops/common/launch_kernel.h"
#include "ops/common/resident.h"
#include "ops/quant/checks.h"
#include "runtime/validate.h"

namespace tejas::act {

Status launch_gated_cuda(const char* op, const ExecContext& ctx, Act act, const TensorView& x,
                         const TensorView& out, const ActOptions& o) {
  const GatedProblem prob = gated_problem(x, out);
  GatedConfig c = make_gated_config(prob);
  const int stages = detail::tune().activation_pipeline;
  if (stages > 0 && c.vec_bytes == kMaxVecBytes) {
    const auto pipe = reinterpret_cast<const void*>(gated_pipe_kernel_for(act, x.dtype));
    const int64_t resident = detail::resident_ctas(pipe, kThreads, static_cast<size_t>(gated_pipe_smem_bytes(stages)));
    c = with_gated_pipeline(prob, c, stages, resident);
  }
  set_last_gated_config(c);
  if (detail::print_config_enabled()) detail::print_config(op, c.to_string());
  return detail::launch_kernel(op, ctx, gated_kernel_for(act, x.dtype, c), gated_grid(c),
                               dim3(static_cast<unsigned>(c.threads)), gated_smem(c), gated_params(x, out, o, c));
}

Status launch_silu_quant_cuda(const char* op, const ExecContext& ctx, const QuantArgs& a) {
  // nvfp4's tensor_scale lives on the device: its value is checked in debug-check mode only.
  if (a.tensor_scale && detail::debug_checks_enabled(ctx))  // absent (fp8, mxfp4): nothing read
    TEJAS_RETURN_IF_ERROR(quant_detail::check_device_tensor_scale(op, ctx, *a.tensor_scale));
  const QuantConfig c = quant_config(a);
  set_last_quant_config(c);
  if (detail::print_config_enabled()) detail::print_config(op, c.to_string());
  const dim3 grid(static_cast<unsigned>(c.grid_x), static_cast<unsigned>(c.grid_y));
  return detail::launch_kernel(op, ctx, quant_kernel_for(a.x->dtype, c), grid, dim3(static_cast<unsigned>(c.threads)),
                               0, quant_params(a, c));
}

}  // namespace tejas::act
