// stream_copy on the GPU. A residency cap of B blocks per SM is set through dynamic shared
// memory: each block asks for (shared memory per SM) / B - (reserved per block), so B blocks fit
// and B + 1 do not; registers and the 2048-thread limit may cap it lower, which the occupancy
// API's count (StreamCopyLaunch::resident_blocks_per_sm, asked only when the caller wants the
// launch shape: the bench asks while preparing a row, not in the timed launches) shows.
#include <cuda_runtime.h>

#include <atomic>
#include <string>

#include "ops/common/cuda_check.h"
#include "ops/probe/kernel.cuh"
#include "ops/probe/launch.h"

namespace tejas::probe {

namespace {

// The dynamic shared memory each kernel was last allowed (cudaFuncSetAttribute), per read /
// write mix and vector count: set again only when a launch needs more, so timed launches make
// no attribute call.
std::atomic<int> g_allowed_smem[kNumStreamMixes][kMaxVecs + 1];

}  // namespace

Status launch_stream_copy_cuda(const char* op, const ExecContext& ctx, const TensorView& src, const TensorView& dst,
                               int64_t n, const StreamCopyOptions& o, StreamCopyLaunch* l, bool want_occupancy) {
  const StreamCopyFn kernel = stream_copy_kernel_for(o.vecs, o.reads, o.writes);
  if (kernel == nullptr) return Status::Internal(std::string(op) + ": no kernel for " + std::to_string(o.vecs) + " vectors");
  l->blocks = stream_copy_blocks(n, o.vecs);
  if (l->blocks > 0x7fffffff)
    return Status::Unsupported(std::string(op) + ": src: " + std::to_string(n) + " vectors need more than 2^31 - 1 blocks");
  int smem_per_sm = 0, reserved = 0, optin = 0;
  TEJAS_RETURN_IF_ERROR(detail::cuda_status(op, cudaDeviceGetAttribute(&smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, src.device_index), "cudaDeviceGetAttribute"));
  TEJAS_RETURN_IF_ERROR(detail::cuda_status(op, cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, src.device_index), "cudaDeviceGetAttribute"));
  TEJAS_RETURN_IF_ERROR(detail::cuda_status(op, cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, src.device_index), "cudaDeviceGetAttribute"));
  size_t smem = 0;
  if (o.blocks_per_sm > 0) {
    const int want = smem_per_sm / o.blocks_per_sm - reserved;
    smem = static_cast<size_t>(want < 0 ? 0 : (want > optin ? optin : want));
  }
  if (static_cast<int>(smem) > g_allowed_smem[stream_mix_index(o.reads, o.writes)][o.vecs].load()) {
    TEJAS_RETURN_IF_ERROR(detail::cuda_status(
        op, cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize, optin),
        "cudaFuncSetAttribute"));
    g_allowed_smem[stream_mix_index(o.reads, o.writes)][o.vecs].store(optin);
  }
  l->dynamic_smem_bytes = smem;
  if (want_occupancy) {
    int resident = 0;
    TEJAS_RETURN_IF_ERROR(detail::cuda_status(
        op, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, kThreads, smem), "occupancy query"));
    l->resident_blocks_per_sm = resident;
  }
  const StreamCopyParams p{static_cast<const Vec*>(src.data), static_cast<Vec*>(dst.data), n};
  kernel<<<dim3(static_cast<unsigned>(l->blocks)), dim3(kThreads), smem, static_cast<cudaStream_t>(ctx.stream)>>>(p);
  return detail::cuda_launch_status(op);
}

}  // namespace tejas::probe
