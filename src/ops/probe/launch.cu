// stream_copy on the GPU (the current device). A residency cap of B blocks per SM is set through
// dynamic shared memory: each block asks for (shared memory per SM / B, rounded down to the
// 128-byte allocation unit) - (reserved per block), so B blocks fit and B + 1 do not (for B <= 8:
// with the unit ignored, B = 5 and 7 fitted one block fewer on an H200, B = 3 on an A100), with
// the kernel's preferred carveout at the maximum so that the SM's shared memory is all there.
// Without a cap (and not in the cp.async mode) no shared memory is asked and nothing is raised:
// the kernel keeps the driver's carveout, as a memset's kernel has (the bench's clean L2 flush
// launches the read pass so; bench/gpu.cpp).
// The cp.async mode (StreamCopyOptions::stages) launches blocks_per_sm x SMs persistent blocks
// (fewer when the copy has fewer tiles), with the larger of that cap and its slots' bytes.
// Registers and the 2048-thread limit may cap it lower, which the occupancy API's count
// (StreamCopyLaunch::resident_blocks_per_sm, asked only when the caller wants the launch shape:
// the bench asks while preparing a row, not in the timed launches) shows.
#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <string>

#include "ops/common/cuda_check.h"
#include "ops/common/launch_kernel.h"
#include "ops/common/resident.h"
#include "ops/probe/kernel.cuh"
#include "ops/probe/launch.h"
#include "runtime/dry_launch.h"

namespace tejas::probe {

namespace {

constexpr int kSmemUnit = 128;  // shared memory allocation granularity (sm_80, sm_90)

// Per device: its shared-memory sizes and SMs, asked once, so that timed launches query nothing
// (each kernel's opt-in maximum, which caps the residency cap's shared memory, and the max-shared
// carveout come from detail::raise_smem_optin, once per kernel).
struct DeviceState {
  int smem_per_sm = 0, reserved = 0, sms = 0;
};
std::mutex g_mutex;
std::map<int, DeviceState> g_devices;

Status device_state(const char* op, int device, DeviceState** out) {
  auto it = g_devices.find(device);
  if (it == g_devices.end()) {
    DeviceState d;
    TEJAS_RETURN_IF_ERROR(detail::cuda_status(
        op, cudaDeviceGetAttribute(&d.smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device), "cudaDeviceGetAttribute"));
    TEJAS_RETURN_IF_ERROR(detail::cuda_status(
        op, cudaDeviceGetAttribute(&d.reserved, cudaDevAttrReservedSharedMemoryPerBlock, device), "cudaDeviceGetAttribute"));
    TEJAS_RETURN_IF_ERROR(detail::cuda_status(
        op, cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute"));
    it = g_devices.emplace(device, d).first;
  }
  *out = &it->second;
  return Status::Ok();
}

}  // namespace

Status launch_stream_copy_cuda(const char* op, const ExecContext& ctx, const TensorView& src, const TensorView& dst,
                               int64_t n, const StreamCopyOptions& o, StreamCopyLaunch* l, bool want_occupancy) {
  const bool async = o.stages > 0;
  const StreamCopyFn kernel = async ? nullptr : stream_copy_kernel_for(o.vecs, o.reads, o.writes);
  const StreamAsyncFn async_kernel = async ? stream_copy_async_kernel_for(o.vecs) : nullptr;
  const void* fn = async ? reinterpret_cast<const void*>(async_kernel) : reinterpret_cast<const void*>(kernel);
  if (fn == nullptr) return Status::Internal(std::string(op) + ": no kernel for " + std::to_string(o.vecs) + " vectors");
  l->blocks = stream_copy_blocks(n, o.vecs);
  int device = 0;
  TEJAS_RETURN_IF_ERROR(detail::cuda_status(op, cudaGetDevice(&device), "cudaGetDevice"));
  size_t smem = 0;
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    DeviceState* d = nullptr;
    TEJAS_RETURN_IF_ERROR(device_state(op, device, &d));
    if (o.blocks_per_sm > 0) {
      int optin = 0;  // the kernel's limit, raised once (resident.h), its error reported
      TEJAS_RETURN_IF_ERROR(
          detail::cuda_status(op, detail::raise_smem_optin(device, fn, &optin), "raising the shared-memory limit"));
      const int want = d->smem_per_sm / o.blocks_per_sm / kSmemUnit * kSmemUnit - d->reserved;
      smem = static_cast<size_t>(want < 0 ? 0 : (want > optin ? optin : want));
    }
    if (async) {  // persistent blocks; the slots may need more than the cap's shared memory
      const size_t slots = stream_copy_async_smem(o.stages, o.vecs);
      smem = slots > smem ? slots : smem;
      const int64_t resident = int64_t{o.blocks_per_sm} * d->sms;
      l->blocks = l->blocks < resident ? l->blocks : resident;
    }
  }
  l->dynamic_smem_bytes = smem;
  if (want_occupancy) {
    int resident = 0;
    TEJAS_RETURN_IF_ERROR(detail::cuda_status(
        op, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, fn, kThreads, smem), "occupancy query"));
    l->resident_blocks_per_sm = resident;
  }
  // In stream order whatever ctx.pdl says (the copy is the pdl checks' producer and the bench's
  // ceiling); detail::launch_kernel skips the launch under ScopedDryLaunch.
  ExecContext ordered = ctx;
  ordered.pdl = false;
  const dim3 grid(static_cast<unsigned>(l->blocks)), block(kThreads);
  if (async)
    return detail::launch_kernel(
        op, ordered, async_kernel, grid, block, smem,
        StreamAsyncParams{static_cast<const Vec*>(src.data), static_cast<Vec*>(dst.data), n, o.stages});
  return detail::launch_kernel(op, ordered, kernel, grid, block, smem,
                               StreamCopyParams{static_cast<const Vec*>(src.data), static_cast<Vec*>(dst.data), n});
}

}  // namespace tejas::probe
