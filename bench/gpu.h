// The GPU side of the harness: device facts, CUDA-event timing with a cold L2, and the copy
// ceiling. Host code over the CUDA runtime; without CUDA, device_info() reports no GPU and the
// rest return unsupported.
#pragma once
#include <cstddef>
#include <functional>
#include <string>

#include "bench/device_arena.h"
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

// What runs before each timed launch, outside the timed region (`tejas bench --flush`), over a
// buffer of twice the L2:
//   dirty  a memset of the buffer (as nvbench's and Triton's do_bench flushes): nothing of the
//          last run is left in L2, which is full of the flush's dirty lines; the timed kernel
//          writes them back as its own lines evict them (HBM writes that are not its own);
//   clean  a read pass over the buffer (probe::stream_copy, 1 : 0, 8 vectors per thread): the
//          last run's dirty lines are written back during the pass, untimed, and the L2 ends
//          full of clean lines but the pass's sink (1/256 of what it reads: 0.4 MiB of an
//          H200's 50 MB), so the kernel pays for next to no other kernel's writes (nor for its
//          own last writes, which stay in L2 when the timing stops);
//   none   nothing: a row finds in L2 whatever its last run left there (a warm L2).
// A serving step sits between dirty and clean: the kernel before it left dirty lines, some of
// them this kernel's inputs.
enum class FlushMode { dirty, clean, none };
const char* flush_mode_name(FlushMode m);
// "dirty", "clean" or "none"; false for anything else.
bool parse_flush_mode(const std::string& text, FlushMode* out);

// The flush buffer's bytes: twice the L2 (the device's; `tabled_l2` where it reports none), so
// a flush evicts everything a previous run left there.
inline size_t l2_flush_bytes(size_t device_l2, size_t tabled_l2) { return 2 * (device_l2 ? device_l2 : tabled_l2); }

class L2Flush {
 public:
  L2Flush() = default;  // none
  // The buffer (`bytes`: a multiple of 16, over the L2) and the read pass's sink from `arena`,
  // which must outlive this flush; `none` allocates nothing.
  static Status make(FlushMode mode, size_t bytes, DeviceArena& arena, L2Flush* out);
  // Queues the flush on the legacy stream (i: the timed run's index, the memset's byte value).
  Status run(int i) const;
  FlushMode mode() const { return mode_; }
  void* buffer() const { return buffer_; }  // null for none
  size_t bytes() const { return bytes_; }
  void* sink() const { return sink_; }  // clean only
  size_t sink_bytes() const { return sink_bytes_; }

 private:
  FlushMode mode_ = FlushMode::none;
  void* buffer_ = nullptr;
  size_t bytes_ = 0;
  void* sink_ = nullptr;  // clean: one 16-byte vector per warp of the read pass
  size_t sink_bytes_ = 0;
};

// Times launch() with CUDA events on the legacy stream: `warmup` untimed calls, then `iters`
// timed calls, each preceded by `flush` outside the timed region. The first failing launch is
// returned (an unsupported op stops at the first warm-up call).
Status time_launch(const std::function<Status()>& launch, int warmup, int iters, const L2Flush& flush, Timing* out);

// Device-to-device copy bandwidth, counting bytes read + written, over a `bytes` buffer.
Status measure_copy(size_t bytes, int iters, const L2Flush& flush, double* bytes_per_s, Timing* t);

}  // namespace tejas::bench
