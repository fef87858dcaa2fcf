// stream_copy's kernel (probe.h): thread t of block b copies the 16-byte vectors
// b * kThreads * VECS + t + i * kThreads, i < VECS: each warp request is 512 contiguous bytes,
// and a thread issues all its loads before its first store, so VECS x 16 bytes are in flight per
// thread for one DRAM round trip (`tools/kernel-report loads probe`: VECS loads before the first
// wait on the whole-block path; with every load and store guarded, as the last block is, ptxas
// hoisted the first store above later loads and waited for the first load there: 3 of 8). No shared memory is touched: the launch's dynamic shared memory
// only caps how many blocks an SM holds.
#pragma once
#include "device/prelude.h"

#include <cstdint>

#include "device/numeric/storage.h"
#include "device/ptx/ld_st.h"
#include "ops/probe/probe.h"

namespace tejas::probe {
inline namespace TEJAS_BUILD_NS {  // nvcc and emulator builds apart (device/prelude.h)

using Vec = num::AccessWord<kVecBytes>::type;

struct StreamCopyParams {
  const Vec* src;
  Vec* dst;
  int64_t n;  // vectors
};

template <int VECS>
__global__ void __launch_bounds__(kThreads) stream_copy_kernel(const StreamCopyParams p) {
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kThreads * VECS;
  const int64_t base = first + static_cast<int>(threadIdx.x);
  Vec v[VECS];
  if (first + static_cast<int64_t>(kThreads) * VECS <= p.n) {  // a whole block (uniform): no guards
    #pragma unroll
    for (int i = 0; i < VECS; ++i) v[i] = ptx::ld_global_nc(p.src + base + i * kThreads);
    #pragma unroll
    for (int i = 0; i < VECS; ++i) ptx::st_global(p.dst + base + i * kThreads, v[i]);
    return;
  }
  #pragma unroll
  for (int i = 0; i < VECS; ++i) {
    const int64_t at = base + static_cast<int64_t>(i) * kThreads;
    if (at < p.n) v[i] = ptx::ld_global_nc(p.src + at);
  }
  #pragma unroll
  for (int i = 0; i < VECS; ++i) {
    const int64_t at = base + static_cast<int64_t>(i) * kThreads;
    if (at < p.n) ptx::st_global(p.dst + at, v[i]);
  }
}

using StreamCopyFn = void (*)(StreamCopyParams);

// nullptr for a count not instantiated (1, 2, 4, 8 are).
inline StreamCopyFn stream_copy_kernel_for(int vecs) {
  switch (vecs) {
    case 1: return stream_copy_kernel<1>;
    case 2: return stream_copy_kernel<2>;
    case 4: return stream_copy_kernel<4>;
    case 8: return stream_copy_kernel<kMaxVecs>;
    default: return nullptr;
  }
}

inline int64_t stream_copy_blocks(int64_t n, int vecs) {
  const int64_t per_block = static_cast<int64_t>(kThreads) * vecs;
  return (n + per_block - 1) / per_block;
}

}  // inline namespace TEJAS_BUILD_NS
}  // namespace tejas::probe
