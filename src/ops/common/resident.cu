// detail::resident_ctas (resident.h).
#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <tuple>

#include "ops/common/resident.h"
#include "runtime/recent_cache.h"

namespace tejas::detail {
namespace {

std::mutex g_mutex;
std::map<std::tuple<int, const void*, int, size_t, Carveout>, int64_t> g_resident;
ResidentStats g_stats;  // under g_mutex
std::mutex g_optin_mutex;
std::map<std::pair<int, const void*>, int> g_optin;  // per (device, kernel) raised: the opt-in limit

// The dynamic shared memory a block of fn may ask for: the opt-in maximum once raised (with the
// max-shared carveout), or the default limit, untouched; 0 when a query fails.
int smem_limit(int device, const void* fn, Carveout carveout) {
  if (carveout == Carveout::driver) {
    int limit = 0;
    if (cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlock, device) != cudaSuccess) {
      (void)cudaGetLastError();
      ++g_stats.failures;
      return 0;
    }
    return limit;
  }
  int limit = 0;
  if (raise_smem_optin(device, fn, &limit) != cudaSuccess) {
    ++g_stats.failures;
    return 0;
  }
  return limit;
}

int64_t query(int device, const void* fn, int threads, size_t smem, Carveout carveout) {
  ++g_stats.queries;
  if (smem > static_cast<size_t>(smem_limit(device, fn, carveout))) return 0;
  int per_sm = 0, sms = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, threads, smem) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    (void)cudaGetLastError();
    ++g_stats.failures;
    return 0;
  }
  return int64_t{per_sm} * sms;
}

}  // namespace

RelaxedCaptureScope::RelaxedCaptureScope() {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  swapped_ = cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess;
  if (swapped_) previous_ = static_cast<int>(mode);
  else (void)cudaGetLastError();
}

RelaxedCaptureScope::~RelaxedCaptureScope() {
  if (!swapped_) return;
  auto mode = static_cast<cudaStreamCaptureMode>(previous_);
  (void)cudaThreadExchangeStreamCaptureMode(&mode);
}

cudaError_t raise_smem_optin(int device, const void* kernel, int* limit) {
  const std::lock_guard<std::mutex> lock(g_optin_mutex);
  if (const auto it = g_optin.find({device, kernel}); it != g_optin.end()) {
    *limit = it->second;
    return cudaSuccess;
  }
  const RelaxedCaptureScope relaxed;
  int optin = 0;
  cudaError_t e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (e == cudaSuccess) e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin);
  if (e == cudaSuccess)
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    *limit = 0;
    return e;  // not remembered: a later call asks again
  }
  g_optin.emplace(std::make_pair(device, kernel), optin);
  *limit = optin;
  return cudaSuccess;
}

int64_t resident_ctas(const void* kernel, int threads, size_t smem, Carveout carveout) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  const auto key = std::make_tuple(device, kernel, threads, smem, carveout);
  // This thread's recent answers: the launchers ask on every launch that may run a persistent
  // grid (the norm family twice at decode sizes, one question per pipeline), in a serving loop
  // that alternates the ops, so the common case takes no lock. 16 covers a decode step's
  // questions (a few per family and hidden size).
  thread_local RecentCache<std::tuple<int, const void*, int, size_t, Carveout>, int64_t, 16> recent;
  if (const int64_t* known = recent.find(key)) return *known;
  const std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_resident.find(key);
  if (it == g_resident.end()) {
    const RelaxedCaptureScope relaxed;
    it = g_resident.emplace(key, query(device, kernel, threads, smem, carveout)).first;
  }
  recent.put(key, it->second);
  return it->second;
}

ResidentStats resident_stats() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  return g_stats;
}

}  // namespace tejas::detail
