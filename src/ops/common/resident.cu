// detail::resident_ctas (resident.h).
#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <tuple>

#include "ops/common/resident.h"

namespace tejas::detail {
namespace {

std::mutex g_mutex;
std::map<std::tuple<int, const void*, int, size_t, Carveout>, int64_t> g_resident;
std::map<std::pair<int, const void*>, int> g_optin;  // per (device, kernel) once raised: the opt-in limit (0: failed)

// The dynamic shared memory a block of fn may ask for: the opt-in maximum once raised (with the
// max-shared carveout), or the default limit, untouched; 0 when a query fails.
int smem_limit(int device, const void* fn, Carveout carveout) {
  if (carveout == Carveout::driver) {
    int limit = 0;
    if (cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlock, device) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return limit;
  }
  auto optin = g_optin.find({device, fn});
  if (optin == g_optin.end()) {
    int limit = 0;
    const bool ok =
        cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) == cudaSuccess &&
        cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, limit) == cudaSuccess &&
        cudaFuncSetAttribute(fn, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared) ==
            cudaSuccess;
    if (!ok) (void)cudaGetLastError();
    optin = g_optin.emplace(std::make_pair(device, fn), ok ? limit : 0).first;
  }
  return optin->second;
}

int64_t query(int device, const void* fn, int threads, size_t smem, Carveout carveout) {
  if (smem > static_cast<size_t>(smem_limit(device, fn, carveout))) return 0;
  int per_sm = 0, sms = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, threads, smem) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return int64_t{per_sm} * sms;
}

}  // namespace

int64_t resident_ctas(const void* kernel, int threads, size_t smem, Carveout carveout) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  const auto key = std::make_tuple(device, kernel, threads, smem, carveout);
  // This thread's last answer: the norm launcher asks on every eligible launch (the pipeline is
  // a default) and launches repeat one config, so the common case takes no lock.
  thread_local std::tuple<int, const void*, int, size_t, Carveout> last_key{-1, nullptr, 0, 0, Carveout::max_shared};
  thread_local int64_t last = 0;
  if (key == last_key) return last;
  const std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_resident.find(key);
  if (it == g_resident.end()) it = g_resident.emplace(key, query(device, kernel, threads, smem, carveout)).first;
  last_key = key;
  last = it->second;
  return last;
}

}  // namespace tejas::detail
