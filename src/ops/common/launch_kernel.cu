// detail::launch_kernel_args and programmatic_launch_available (launch_kernel.h).
#include <cuda_runtime.h>

#include <atomic>
#include <map>
#include <mutex>
#include <utility>

#include "ops/common/cuda_check.h"
#include "ops/common/launch_kernel.h"
#include "ops/common/resident.h"
#include "runtime/dry_launch.h"
#include "runtime/recent_cache.h"

namespace tejas::detail {
namespace {

inline constexpr int kMinProgrammaticSm = 90;  // griddepcontrol and the launch attribute: sm_90+

std::atomic<int64_t> g_programmatic{0};
std::mutex g_mutex;
std::map<std::pair<int, const void*>, bool> g_available;  // per (device, kernel)

// The answer for (device, kernel); false in *answered when a query failed.
bool ask(int device, const void* kernel, bool* answered) {
  const RelaxedCaptureScope relaxed;
  int major = 0, minor = 0;
  cudaFuncAttributes attr{};
  *answered = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
              cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess &&
              cudaFuncGetAttributes(&attr, kernel) == cudaSuccess;
  if (!*answered) {
    (void)cudaGetLastError();
    return false;
  }
  // ptxVersion: the virtual architecture the loaded code was compiled from (the device pass's
  // TEJAS_ARCH), which decides whether dev::begin_dependent_grid emitted the wait. binaryVersion
  // would not do: sm_80 PTX compiled by the driver for a newer GPU reports that GPU's.
  return major * 10 + minor >= kMinProgrammaticSm && attr.ptxVersion >= kMinProgrammaticSm;
}

}  // namespace

bool programmatic_launch_available(const void* kernel) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  const auto key = std::make_pair(device, kernel);
  thread_local RecentCache<std::pair<int, const void*>, bool, 16> recent;
  if (const bool* known = recent.find(key)) return *known;
  const std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_available.find(key);
  if (it == g_available.end()) {
    bool answered = false;
    const bool available = ask(device, kernel, &answered);
    if (!answered) return false;  // not remembered: a later launch asks again
    it = g_available.emplace(key, available).first;
  }
  recent.put(key, it->second);
  return it->second;
}

int64_t programmatic_launches() { return g_programmatic.load(std::memory_order_relaxed); }

Status launch_kernel_args(const char* op, const ExecContext& ctx, const void* kernel, dim3 grid, dim3 block,
                          size_t smem, void** args) {
  if (dry_launch()) return Status::Ok();
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  const auto stream = static_cast<cudaStream_t>(ctx.stream);
  config.stream = stream;
  cudaLaunchAttribute attr[1];
  // Not on the legacy default stream (a null ctx.stream, or its explicit handle), which
  // synchronizes with every blocking stream: engines run their steps on streams of their own.
  if (ctx.pdl && stream != nullptr && stream != cudaStreamLegacy && programmatic_launch_available(kernel)) {
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    config.attrs = attr;
    config.numAttrs = 1;
  }
  const cudaError_t e = cudaLaunchKernelExC(&config, kernel, args);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // clear it, so the next op does not report this launch's error
    return cuda_status(op, e);
  }
  if (config.numAttrs > 0) g_programmatic.fetch_add(1, std::memory_order_relaxed);
  // cudaLaunchKernelExC returns the launch's own errors; the runtime's last error may hold an
  // earlier call's, which is not this launch's (the kernel is queued).
  return Status::Ok();
}

}  // namespace tejas::detail
