// stream_copy on the emulator: the kernel source on CPU fibers, src read-only, dst write-only.
// The residency cap is a property of the GPU's scheduling, not of the kernel: not emulated.
#include "ops/common/emu_launch.h"
#include "ops/probe/kernel.cuh"
#include "ops/probe/launch.h"

namespace tejas::probe {

Status launch_stream_copy_emu(const char* op, const ExecContext& ctx, const TensorView& src, const TensorView& dst,
                              int64_t n, const StreamCopyOptions& o, StreamCopyLaunch* l) {
  detail::begin_emulator_call();
  if (o.stages > 0) {  // the cp.async mode: kEmuAsyncSms stand-in SMs of persistent blocks
    const StreamAsyncFn kernel = stream_copy_async_kernel_for(o.vecs);
    if (kernel == nullptr) return Status::Internal(std::string(op) + ": no cp.async kernel for " + std::to_string(o.vecs) + " vectors");
    const int64_t tiles = stream_copy_blocks(n, o.vecs), resident = int64_t{o.blocks_per_sm} * kEmuAsyncSms;
    l->blocks = tiles < resident ? tiles : resident;
    l->dynamic_smem_bytes = stream_copy_async_smem(o.stages, o.vecs);
    detail::EmuBuffers buffers({{&src, emu::Access::read}, {&dst, emu::Access::write}});
    const emu::LaunchOptions lo = detail::emu_options(
        ctx, dim3(static_cast<unsigned>(l->blocks)), dim3(static_cast<unsigned>(kThreads)), l->dynamic_smem_bytes,
        true);  // launch.cu raises the limit of every capped kernel, as this mode's are
    const StreamAsyncParams p{static_cast<const Vec*>(src.data), static_cast<Vec*>(dst.data), n, o.stages};
    return detail::emu_status(op, emu::launch(lo, kernel, p));
  }
  const StreamCopyFn kernel = stream_copy_kernel_for(o.vecs, o.reads, o.writes);
  if (kernel == nullptr) return Status::Internal(std::string(op) + ": no kernel for " + std::to_string(o.vecs) + " vectors");
  l->blocks = stream_copy_blocks(n, o.vecs);
  detail::EmuBuffers buffers({{&src, emu::Access::read}, {&dst, emu::Access::write}});
  const emu::LaunchOptions lo =
      detail::emu_options(ctx, dim3(static_cast<unsigned>(l->blocks)), dim3(static_cast<unsigned>(kThreads)), 0);
  const StreamCopyParams p{static_cast<const Vec*>(src.data), static_cast<Vec*>(dst.data), n};
  return detail::emu_status(op, emu::launch(lo, kernel, p));
}

}  // namespace tejas::probe
