// Emulator backend of the RMSNorm family: the kernels of instances.h run by src/emu.
#include "ops/common/emu_launch.h"
#include "ops/norm/instances.h"
#include "ops/norm/launch.h"
#include "ops/norm/reference.h"
#include "runtime/validate.h"

namespace tejas::norm {

Status launch_norm_emulator(const char* op, const ExecContext& ctx, const NormArgs& a) {
  detail::begin_emulator_call();
  if (a.out_kind == OutKind::fp8_static && detail::debug_checks_enabled(ctx))
    TEJAS_RETURN_IF_ERROR(ref::check_static_fp8_scale(op, a.scale));
  NormLaunch l = plan_norm(a);
  finish_plan(op, kEmuResidentCtas, &l, warp_resident_ctas_capped(kEmuResidentCtas));
  if (!l.config.supported) return detail::backend_unsupported(op, Backend::emulator, "H above 16384");
  const NormKernel kernel = kernel_for(a.x.dtype, l.config);
  if (kernel == nullptr) return Status::Internal(std::string(op) + ": no kernel instantiated for this config");

  using emu::Access;
  const Access scale_access = a.out_kind == OutKind::fp8_static ? Access::read : Access::write;
  const detail::EmuBuffers buffers({{&a.x, Access::read},
                                    {&a.weight, Access::read},
                                    {&a.residual, Access::read_write},
                                    {&a.out, Access::write},
                                    {&a.scale, scale_access}});
  // The pipelined kernels' limit is raised on a GPU (launch.cu's resident_ctas), the others' is not.
  const auto options = detail::emu_options(ctx, dim3(static_cast<unsigned>(l.config.grid)),
                                           dim3(static_cast<unsigned>(l.config.threads)), l.smem_bytes,
                                           l.config.pipeline_stages > 0);
  return detail::emu_status(op, emu::launch(options, kernel, l.params));
}

}  // namespace tejas::norm
