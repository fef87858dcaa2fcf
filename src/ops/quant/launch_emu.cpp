// Emulator launchers: the kernels of kernel.cuh run on the CPU through src/emu.
#include "ops/common/emu_launch.h"
#include "ops/quant/kernel_select.h"
#include "ops/quant/launch.h"

namespace tejas::quant_kernel {
namespace {

// Every launch of `plan` on the emulator, with `tensors` registered (inputs read-only).
template <class Plan>
Status run_emu(const char* op, const ExecContext& ctx, const Plan& plan, std::initializer_list<detail::EmuArg> tensors) {
  detail::begin_emulator_call();
  print_plan(op, plan);
  detail::EmuBuffers buffers(tensors);
  return for_each_launch(plan, [&](auto kernel, const auto& l) {
    const emu::LaunchReport rep = emu::launch(
        detail::emu_options(ctx, dim3(static_cast<unsigned>(l.config.grid)), dim3(l.config.threads),
                            static_cast<size_t>(smem_bytes(l.config))),
        kernel, l.params);
    return detail::emu_status(op, rep);
  });
}

}  // namespace

Status run_quant_emu(const char* op, const ExecContext& ctx, const QuantPlan& planned) {
  QuantPlan plan = planned;
  plan.resident_ctas = resident_ctas_or_override(kEmuResidentCtas);
  const PlanTensors& t = plan.t;
  return run_emu(op, ctx, plan,
                 {{t.data, emu::Access::read},
                  {t.q, emu::Access::write},
                  {t.scales, emu::Access::write},
                  {t.tensor_scale, emu::Access::read}});
}

Status run_dequant_emu(const char* op, const ExecContext& ctx, const DequantPlan& plan) {
  const PlanTensors& t = plan.t;
  return run_emu(op, ctx, plan,
                 {{t.q, emu::Access::read},
                  {t.scales, emu::Access::read},
                  {t.tensor_scale, emu::Access::read},
                  {t.data, emu::Access::write}});
}

}  // namespace tejas::quant_kernel
