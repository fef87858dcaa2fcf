// Device tensors for benchmarks: allocated once per workload, filled with valid values of their
// dtype (random normal values tiled over the buffer, or exact host contents for index tensors),
// freed together. Without CUDA every call returns unsupported.
#pragma once
#include <cstdint>
#include <vector>

#include "check/host_tensor.h"
#include "tejas/status.h"
#include "tejas/tensor.h"

namespace tejas::bench {

class DeviceArena {
 public:
  explicit DeviceArena(uint64_t seed) : rng_(seed) {}
  ~DeviceArena();
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;

  // Contiguous device tensor of normal(0, stddev) values (a random tile repeated).
  Status random(DType dt, std::vector<int64_t> shape, TensorView* out, double stddev = 1.0);
  // Contiguous device tensor, uninitialized (outputs).
  Status empty(DType dt, std::vector<int64_t> shape, TensorView* out);
  // Exact copy of a host tensor (index tensors, scales).
  Status upload(const check::HostTensor& h, TensorView* out);
  // Raw bytes (L2 flush buffers, copy benchmarks).
  Status bytes(size_t n, void** out);
  size_t allocated() const { return allocated_; }

 private:
  Status alloc(size_t n, void** out);
  check::Rng rng_;
  std::vector<void*> blocks_;
  size_t allocated_ = 0;
};

}  // namespace tejas::bench
