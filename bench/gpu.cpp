#include "bench/gpu.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "bench/device_arena.h"
#include "check/cuda_mem.h"
#include "ops/probe/probe.h"

#if TEJAS_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace tejas::bench {

namespace {
// The read pass's vectors per thread: 8, for the smallest sink (1/256 of the bytes read), and a
// kernel (stream_copy_kernel<8, 1, 0>) no bench row launches with a residency cap, so it keeps
// the driver's carveout as the memset does (probe/launch.cu). Its speed is not timed.
constexpr int kFlushVecs = 8;
}  // namespace

const char* flush_mode_name(FlushMode m) {
  switch (m) {
    case FlushMode::dirty:
      return "dirty";
    case FlushMode::clean:
      return "clean";
    case FlushMode::none:
      return "none";
  }
  return "?";
}

bool parse_flush_mode(const std::string& text, FlushMode* out) {
  for (FlushMode m : {FlushMode::dirty, FlushMode::clean, FlushMode::none})
    if (text == flush_mode_name(m)) {
      *out = m;
      return true;
    }
  return false;
}

Status L2Flush::make(FlushMode mode, size_t bytes, DeviceArena& arena, L2Flush* out) {
  L2Flush f;
  f.mode_ = mode;
  if (mode != FlushMode::none) {
    if (bytes == 0 || bytes % probe::kVecBytes != 0)
      return Status::InvalidArgument("L2 flush: bytes: expected a positive multiple of 16, got " +
                                     std::to_string(bytes));
    f.bytes_ = bytes;
    TEJAS_RETURN_IF_ERROR(arena.bytes(bytes, &f.buffer_));
  }
  if (mode == FlushMode::clean) {
    f.sink_bytes_ =
        static_cast<size_t>(probe::stream_read_sink_bytes(static_cast<int64_t>(bytes / probe::kVecBytes), kFlushVecs));
    TEJAS_RETURN_IF_ERROR(arena.bytes(f.sink_bytes_, &f.sink_));
  }
  *out = f;
  return Status::Ok();
}

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

Status L2Flush::run(int i) const {
  switch (mode_) {
    case FlushMode::none:
      return Status::Ok();
    case FlushMode::dirty:
      return check_cuda(cudaMemsetAsync(buffer_, i & 0xFF, bytes_), "L2 flush");
    case FlushMode::clean: {
      const int device = check::current_device_index();
      const TensorView src =
          TensorView::contiguous(buffer_, DType::u8, {static_cast<int64_t>(bytes_)}, Device::cuda, device);
      const TensorView sink =
          TensorView::contiguous(sink_, DType::u8, {static_cast<int64_t>(sink_bytes_)}, Device::cuda, device);
      ExecContext ctx;  // the legacy stream, in order
      ctx.backend = Backend::cuda;
      const Status s = probe::stream_copy(ctx, src, sink, {kFlushVecs, 0, 1, 0});
      return s.ok() ? s : Status(s.code(), "L2 flush (read pass): " + s.message());
    }
  }
  return Status::Internal("L2 flush: unknown mode");
}

Status time_launch(const std::function<Status()>& launch, int warmup, int iters, const L2Flush& flush, Timing* out) {
  for (int i = 0; i < warmup; ++i) TEJAS_RETURN_IF_ERROR(launch());
  TEJAS_RETURN_IF_ERROR(check_cuda(cudaDeviceSynchronize(), "warm-up"));
  Events ev;
  std::vector<double> us;
  for (int i = 0; i < iters; ++i) {
    TEJAS_RETURN_IF_ERROR(flush.run(i));
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

Status measure_copy(size_t bytes, int iters, const L2Flush& flush, double* bytes_per_s, Timing* t) {
  DeviceArena arena(0);
  void *src = nullptr, *dst = nullptr;
  TEJAS_RETURN_IF_ERROR(arena.bytes(bytes, &src));
  TEJAS_RETURN_IF_ERROR(arena.bytes(bytes, &dst));
  TEJAS_RETURN_IF_ERROR(check_cuda(cudaMemset(src, 1, bytes), "cudaMemset"));
  constexpr int kWarmup = 2;
  auto launch = [&] { return check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpyAsync"); };
  TEJAS_RETURN_IF_ERROR(time_launch(launch, kWarmup, iters, flush, t));
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
Status L2Flush::run(int) const { return mode_ == FlushMode::none ? Status::Ok() : Status::Unsupported(kNoCuda); }
Status time_launch(const std::function<Status()>&, int, int, const L2Flush&, Timing*) {
  return Status::Unsupported(kNoCuda);
}
Status measure_copy(size_t, int, const L2Flush&, double*, Timing*) { return Status::Unsupported(kNoCuda); }
#endif

}  // namespace tejas::bench
