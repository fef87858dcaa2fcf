// Emulator backend of the activation ops: the kernels of kernel.cuh / quant_kernel.cuh run on
// CPU fibers with the op's tensors registered (inputs read-only, outputs write-only).
#include "ops/activation/launch_common.h"
#include "runtime/print_config.h"
#include "ops/common/emu_launch.h"

namespace tejas::act {

Status launch_gated_emu(const char* op, const ExecContext& ctx, Act act, const TensorView& x, const TensorView& out,
                        const ActOptions& o) {
  detail::begin_emulator_call();
  const GatedProblem prob = gated_problem(x, out);
  const GatedConfig c =
      with_gated_pipeline(prob, make_gated_config(prob), detail::tune().activation_pipeline, kEmuResidentBlocks);
  set_last_gated_config(c);
  if (detail::print_config_enabled()) detail::print_config(op, c.to_string());
  detail::EmuBuffers buffers({{&x, emu::Access::read}, {&out, emu::Access::write}});
  // The pipelined kernel's limit is raised on a GPU (launch.cu's resident_ctas), the others' is not.
  const emu::LaunchOptions lo = detail::emu_options(ctx, gated_grid(c), dim3(static_cast<unsigned>(c.threads)), gated_smem(c),
                                                    c.pipeline_stages > 0);
  return detail::emu_status(op, emu::launch(lo, gated_kernel_for(act, x.dtype, c), gated_params(x, out, o, c)));
}

Status launch_silu_quant_emu(const char* op, const ExecContext& ctx, const QuantArgs& a) {
  detail::begin_emulator_call();
  const QuantConfig c = quant_config(a);
  set_last_quant_config(c);
  if (detail::print_config_enabled()) detail::print_config(op, c.to_string());
  const TensorView none;
  detail::EmuBuffers buffers({{a.x, emu::Access::read},
                              {a.tensor_scale ? a.tensor_scale : &none, emu::Access::read},
                              {a.q, emu::Access::write},
                              {a.scales, emu::Access::write}});
  const emu::LaunchOptions lo = detail::emu_options(ctx, dim3(static_cast<unsigned>(c.grid_x), static_cast<unsigned>(c.grid_y)),
                                                    dim3(static_cast<unsigned>(c.threads)), 0);
  return detail::emu_status(op, emu::launch(lo, quant_kernel_for(a.x->dtype, c), quant_params(a, c)));
}

}  // namespace tejas::act
