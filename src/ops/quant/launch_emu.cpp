// Emulator launchers: the kernels of kernel.cuh run on the CPU through src/emu.
#include "ops/common/emu_launch.h"
#include "ops/quant/kernel_select.h"
#include "ops/quant/launch.h"

namespace tejas::quant_kernel {

Status run_quant_emu(const char* op, const ExecContext& ctx, const QuantPlan& plan) {
  detail::begin_emulator_call();
  print_plan(op, plan);
  const PlanTensors& t = plan.t;
  detail::EmuBuffers buffers({{t.data, emu::Access::read},
                              {t.q, emu::Access::write},
                              {t.scales, emu::Access::write},
                              {t.tensor_scale, emu::Access::read}});
  for (int64_t i = 0; i < plan.num_launches; ++i) {
    const QuantLaunch l = quant_launch(plan, i);
    const QuantConfig& c = l.config;
    const QuantKernel k = select_quant_kernel(plan.t.data->dtype, plan.code, c.vectorized);
    const emu::LaunchReport rep = emu::launch(
        detail::emu_options(ctx, dim3(static_cast<unsigned>(c.grid)), dim3(c.threads), 0), k, l.params);
    TEJAS_RETURN_IF_ERROR(detail::emu_status(op, rep));
  }
  return Status::Ok();
}

Status run_dequant_emu(const char* op, const ExecContext& ctx, const DequantPlan& plan) {
  detail::begin_emulator_call();
  print_plan(op, plan);
  const PlanTensors& t = plan.t;
  detail::EmuBuffers buffers({{t.q, emu::Access::read},
                              {t.scales, emu::Access::read},
                              {t.tensor_scale, emu::Access::read},
                              {t.data, emu::Access::write}});
  for (int64_t i = 0; i < plan.num_launches; ++i) {
    const DequantLaunch l = dequant_launch(plan, i);
    const DequantConfig& c = l.config;
    const DequantKernel k = select_dequant_kernel(plan.t.data->dtype, plan.code, c.vectorized);
    const emu::LaunchReport rep = emu::launch(
        detail::emu_options(ctx, dim3(static_cast<unsigned>(c.grid)), dim3(c.threads), 0), k, l.params);
    TEJAS_RETURN_IF_ERROR(detail::emu_status(op, rep));
  }
  return Status::Ok();
}

}  // namespace tejas::quant_kernel
