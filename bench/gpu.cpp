#include "bench/gpu.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "bench/device_arena.h"

#if TEJAS_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace tejas::bench {

std::string gpu_key(const DeviceInfo& d) {
  for (const char* key : {"H200", "H100", "B200"}) {
    if (d.name.find(key) != std::string::npos) {
      std::string k(key);
      k[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(k[0])));
      return k;
    }
  }
  return "";
}

#if TEJAS_WITH_CUDA
namespace {
constexpr double kUsPerMs = 1000.0;
Status check_cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::Ok();
  return Status::CudaError(std::string(what) + ": " + cudaGetErrorString(e));
}
int attribute(cudaDeviceAttr a, int dev) {
  int v = 0;
  return cudaDeviceGetAttribute(&v, a, dev) == cudaSuccess ? v : 0;
}
// RAII pair of events.
struct Events {
  cudaEvent_t start = nullptr, stop = nullptr;
  Events() {
    (void)cudaEventCreate(&start);
    (void)cudaEventCreate(&stop);
  }
  ~Events() {
    (void)cudaEventDestroy(start);
    (void)cudaEventDestroy(stop);
  }
};
}  // namespace

DeviceInfo device_info() {
  DeviceInfo d;
  int n = 0;
  if (cudaError_t e = cudaGetDeviceCount(&n); e != cudaSuccess || n == 0) {
    d.why_absent = e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device";
    return d;
  }
  cudaDeviceProp p{};
  if (cudaError_t e = cudaGetDeviceProperties(&p, 0); e != cudaSuccess) {
    d.why_absent = cudaGetErrorString(e);
    return d;
  }
  d.present = true;
  d.name = p.name;
  d.sm_count = p.multiProcessorCount;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.memory_bytes = p.totalGlobalMem;
  d.l2_bytes = static_cast<size_t>(p.l2CacheSize);
  d.sm_clock_khz = attribute(cudaDevAttrClockRate, 0);
  d.memory_clock_khz = attribute(cudaDevAttrMemoryClockRate, 0);
  d.memory_bus_bits = attribute(cudaDevAttrGlobalMemoryBusWidth, 0);
  (void)cudaDriverGetVersion(&d.driver_version);
  (void)cudaRuntimeGetVersion(&d.runtime_version);
  return d;
}

Status time_launch(const std::function<Status()>& launch, int warmup, int iters, void* flush, size_t flush_bytes,
                   Timing* out) {
  for (int i = 0; i < warmup; ++i) TEJAS_RETURN_IF_ERROR(launch());
  TEJAS_RETURN_IF_ERROR(check_cuda(cudaDeviceSynchronize(), "warm-up"));
  Events ev;
  std::vector<double> us;
  for (int i = 0; i < iters; ++i) {
    if (flush) TEJAS_RETURN_IF_ERROR(check_cuda(cudaMemsetAsync(flush, i & 0xFF, flush_bytes), "L2 flush"));
    TEJAS_RETURN_IF_ERROR(check_cuda(cudaEventRecord(ev.start), "cudaEventRecord"));
    TEJAS_RETURN_IF_ERROR(launch());
    TEJAS_RETURN_IF_ERROR(check_cuda(cudaEventRecord(ev.stop), "cudaEventRecord"));
    TEJAS_RETURN_IF_ERROR(check_cuda(cudaEventSynchronize(ev.stop), "cudaEventSynchronize"));
    float ms = 0;
    TEJAS_RETURN_IF_ERROR(check_cuda(cudaEventElapsedTime(&ms, ev.start, ev.stop), "cudaEventElapsedTime"));
    us.push_back(static_cast<double>(ms) * kUsPerMs);
  }
  std::sort(us.begin(), us.end());
  out->iters = iters;
  out->min_us = us.empty() ? 0 : us.front();
  out->median_us = us.empty() ? 0 : us[us.size() / 2];
  return Status::Ok();
}

Status measure_copy(size_t bytes, int iters, void* flush, size_t flush_bytes, double* bytes_per_s, Timing* t) {
  DeviceArena arena(0);
  void *src = nullptr, *dst = nullptr;
  TEJAS_RETURN_IF_ERROR(arena.bytes(bytes, &src));
  TEJAS_RETURN_IF_ERROR(arena.bytes(bytes, &dst));
  TEJAS_RETURN_IF_ERROR(check_cuda(cudaMemset(src, 1, bytes), "cudaMemset"));
  constexpr int kWarmup = 2;
  auto launch = [&] { return check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpyAsync"); };
  TEJAS_RETURN_IF_ERROR(time_launch(launch, kWarmup, iters, flush, flush_bytes, t));
  *bytes_per_s = 2.0 * static_cast<double>(bytes) / (t->median_us * 1e-6);
  return Status::Ok();
}
#else
namespace {
constexpr const char* kNoCuda = "built without CUDA (host-only build)";
}
DeviceInfo device_info() {
  DeviceInfo d;
  d.why_absent = kNoCuda;
  return d;
}
Status time_launch(const std::function<Status()>&, int, int, void*, size_t, Timing*) {
  return Status::Unsupported(kNoCuda);
}
Status measure_copy(size_t, int, void*, size_t, double*, Timing*) { return Status::Unsupported(kNoCuda); }
#endif

}  // namespace tejas::bench
