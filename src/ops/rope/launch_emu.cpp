// The rope family's emulator backend: the kernels of kernels.cuh run on the CPU emulator.
#include "ops/common/emu_launch.h"
#include "ops/rope/kernels.cuh"
#include "ops/rope/plan.h"

namespace tejas::rotary {

Status launch_emulator(const char* op, const ExecContext& ctx, const RopeArgs& a, const RopeLaunch& l) {
  const KernelFn kernel = kernel_of(l);
  if (kernel == nullptr)
    return Status::Internal(std::string(op) + ": no kernel instantiated for vec " + std::to_string(l.config.vec) +
                            " with " + std::to_string(l.config.heads_in_flight) + " heads in flight");
  maybe_print_config(op, l.problem, l.config, l.pipeline ? pipe_blocks(l.config, kEmuResidentCtas) : 0);
  using emu::Access;
  const detail::EmuBuffers buffers{
      {&a.positions, Access::read},      {&a.q, Access::read_write},
      {&a.k, a.cos_sin.defined() ? Access::read_write : Access::read},  // kv_cache_write only reads k
      {&a.v, Access::read},              {&a.cos_sin, Access::read},         {&a.slots, Access::read},
      {&a.cache.k_cache, Access::write}, {&a.cache.v_cache, Access::write},  {&a.cache.k_scale, Access::read},
      {&a.cache.v_scale, Access::read}};
  const emu::LaunchOptions opts =
      detail::emu_options(ctx, dim3(static_cast<unsigned>(l.pipeline ? pipe_blocks(l.config, kEmuResidentCtas) : l.config.blocks)),
                          dim3(static_cast<unsigned>(l.config.threads)), l.smem_bytes,
                          l.pipeline);  // the pipelined kernels' limit is raised on a GPU (launch.cu's resident_ctas)
  return detail::emu_status(op, emu::launch(opts, kernel, l.params));
}

}  // namespace tejas::rotary
