// The GPU side of the harness: device facts, CUDA-event timing with a cold L2, and the copy
// ceiling. Host code over the CUDA runtime; without CUDA, device_info() reports no GPU and the
// rest return unsupported.
#pragma once
#include <cstddef>
#include <functional>
#include <string>

#include "tejas/status.h"

namespace tejas::bench {

struct DeviceInfo {
  bool present = false;
  std::string why_absent;  // when !present
  std::string name;
  int sm_count = 0, cc_major = 0, cc_minor = 0;
  size_t memory_bytes = 0;
  size_t l2_bytes = 0;
  int sm_clock_khz = 0, memory_clock_khz = 0, memory_bus_bits = 0;
  int driver_version = 0, runtime_version = 0;  // 13000 = 13.0
};
DeviceInfo device_info();
// "h200", "h100", "b200" from the device name; "" when not one of the known GPUs.
std::string gpu_key(const DeviceInfo& d);

struct Timing {
  double median_us = 0, min_us = 0;
  int iters = 0;
};

// Times launch() with CUDA events on the legacy stream: `warmup` untimed calls, then `iters`
// timed calls, each preceded by a write of `flush_bytes` (> L2) to `flush` outside the timed
// region so no run starts with its data in L2. The first failing launch is returned (an
// unsupported op stops at the first warm-up call).
Status time_launch(const std::function<Status()>& launch, int warmup, int iters, void* flush, size_t flush_bytes,
                   Timing* out);

// Device-to-device copy bandwidth, counting bytes read + written, over a `bytes` buffer.
Status measure_copy(size_t bytes, int iters, void* flush, size_t flush_bytes, double* bytes_per_s, Timing* t);

}  // namespace tejas::bench
