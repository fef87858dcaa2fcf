// Helpers for the emulator tests: device buffers and a finding filter.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "emu/emu.h"

namespace tejas::emu::testing {

// An emulator allocation of n elements (poisoned, tracked as never written until uploaded).
template <class T>
class DevBuf {
 public:
  explicit DevBuf(size_t n, const char* name = "buf") : n_(n) { p_ = static_cast<T*>(device_malloc(n * sizeof(T), name)); }
  ~DevBuf() { device_free(p_); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  T* get() const { return p_; }
  size_t size() const { return n_; }
  void upload(const std::vector<T>& v) { copy_to_device(p_, v.data(), v.size() * sizeof(T)); }
  std::vector<T> download() const {
    std::vector<T> v(n_);
    std::memcpy(v.data(), p_, n_ * sizeof(T));
    return v;
  }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

// Launch options for a grid of `block`-thread blocks with `smem` bytes of dynamic shared memory
// (seed 0: the environment's or the fixed default).
inline LaunchOptions launch_options(dim3 grid, dim3 block, size_t smem, uint64_t seed = 0) {
  LaunchOptions o;
  o.grid = grid;
  o.block = block;
  o.dynamic_smem_bytes = smem;
  o.seed = seed;
  return o;
}

inline std::vector<Finding> findings_of(const LaunchReport& r, FindingKind k) {
  std::vector<Finding> out;
  for (const Finding& f : r.findings) {
    if (f.kind == k) out.push_back(f);
  }
  return out;
}

inline std::string file_name(const char* path) {
  std::string s = path;
  const size_t slash = s.find_last_of('/');
  return slash == std::string::npos ? s : s.substr(slash + 1);
}

}  // namespace tejas::emu::testing
