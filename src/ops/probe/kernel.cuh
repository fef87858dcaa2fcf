// stream_copy's kernel (probe.h): thread t of block b takes the 16-byte vectors
// b * kThreads * VECS + t + i * kThreads, i < VECS, of each of the R source planes and stores
// their XOR into each of the W destination planes: each warp request is 512 contiguous bytes,
// and a thread issues all its R x VECS loads before its first store, so R x VECS x 16 bytes are
// in flight per thread for one DRAM round trip (`tools/kernel-report loads probe`: R x VECS loads
// before the first wait; the read pass at VECS 8 has 5 of its 8 out before ptxas starts its
// XORs). Whole blocks take an unguarded path: with every load and store guarded, as the last
// block's are, the first copy kernel had ptxas hoist the first store above later loads and wait
// there for the first load (3 loads of 8 in flight). No shared memory is touched:
// the launch's dynamic shared memory only caps how many blocks an SM holds. W = 0 is the read
// pass: each warp's lane 0 stores the XOR of every vector the warp read (shuffles), one 16-byte
// vector per warp, so the loads have a use and the pass writes 1 / (32 x R x VECS) of the bytes
// it reads.
#pragma once
#include "device/prelude.h"
#include "device/grid_dependency.h"

#include <cstdint>

#include "device/numeric/storage.h"
#include "device/ptx/cp_async.h"
#include "device/ptx/ld_st.h"
#include "device/smem.h"
#include "ops/probe/probe.h"

namespace tejas::probe {
inline namespace TEJAS_BUILD_NS {  // nvcc and emulator builds apart (device/prelude.h)

using Vec = num::AccessWord<kVecBytes>::type;

struct StreamCopyParams {
  const Vec* src;  // `reads` planes of n vectors
  Vec* dst;        // `writes` planes of n vectors (the read pass: one vector per warp of the grid)
  int64_t n;       // vectors per plane
};

__device__ __forceinline__ Vec xor_vec(const Vec& a, const Vec& b) { return Vec{a.x ^ b.x, a.y ^ b.y, a.z ^ b.z, a.w ^ b.w}; }

// Vector i of every plane: loads of the R source planes, then stores of their XOR to the W
// destination planes. kGuard: the last block's per-vector bounds (whole blocks go without).
// Returns the XOR of every vector the thread took (0 past n), which the read pass (W = 0) reduces.
template <int VECS, int R, int W, bool kGuard>
__device__ __forceinline__ Vec stream_vectors(const StreamCopyParams& p, int64_t base) {
  Vec v[R][VECS];
  // The read pass's start at zero: never read past n, which GCC cannot tell there (in the copies
  // the zeros made ptxas issue 6 of 8 loads before the first wait, not 8: they stay as measured).
  if constexpr (W == 0) {
    #pragma unroll
    for (int r = 0; r < R; ++r)
      #pragma unroll
      for (int i = 0; i < VECS; ++i) v[r][i] = Vec{0, 0, 0, 0};
  }
  #pragma unroll
  for (int r = 0; r < R; ++r) {
    #pragma unroll
    for (int i = 0; i < VECS; ++i) {
      const int64_t at = base + static_cast<int64_t>(i) * kThreads;
      if (!kGuard || at < p.n) v[r][i] = ptx::ld_global_nc(p.src + r * p.n + at);
    }
  }
  Vec all{0, 0, 0, 0};
  #pragma unroll
  for (int i = 0; i < VECS; ++i) {
    const int64_t at = base + static_cast<int64_t>(i) * kThreads;
    if (kGuard && at >= p.n) continue;
    Vec x = v[0][i];
    #pragma unroll
    for (int r = 1; r < R; ++r) x = xor_vec(x, v[r][i]);
    if constexpr (W == 0) all = xor_vec(all, x);
    #pragma unroll
    for (int w = 0; w < W; ++w) ptx::st_global(p.dst + w * p.n + at, x);
  }
  return all;
}

// The read pass's store: the XOR over the warp's lanes (butterfly shuffles), by lane 0, into
// vector (global warp index) of dst. Every lane of every warp takes part (lanes past n with 0).
__device__ __forceinline__ void store_warp_xor(const StreamCopyParams& p, Vec x) {
  constexpr unsigned kFullMask = 0xffffffffu;
  #pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    x.x ^= __shfl_xor_sync(kFullMask, x.x, off);
    x.y ^= __shfl_xor_sync(kFullMask, x.y, off);
    x.z ^= __shfl_xor_sync(kFullMask, x.z, off);
    x.w ^= __shfl_xor_sync(kFullMask, x.w, off);
  }
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * kThreads + static_cast<int>(threadIdx.x);
  if (threadIdx.x % 32 == 0) ptx::st_global(p.dst + thread / 32, x);
}

// No minimum blocks in __launch_bounds__: asking for 8 (<= 32 registers) made ptxas store the
// first vector of stream_copy_kernel<4, 1, 1> before loading the fourth (3 loads in flight, not
// 4); at its own 30 registers the 8-block rows fit, and a row that stops fitting is reported
// unsupported by the bench.
template <int VECS, int R, int W>
__global__ void __launch_bounds__(kThreads)
    stream_copy_kernel(const StreamCopyParams p) {
  dev::begin_dependent_grid();
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kThreads * VECS;
  const int64_t base = first + static_cast<int>(threadIdx.x);
  const Vec all = first + static_cast<int64_t>(kThreads) * VECS <= p.n
                      ? stream_vectors<VECS, R, W, false>(p, base)  // uniform
                      : stream_vectors<VECS, R, W, true>(p, base);
  if constexpr (W == 0) store_warp_xor(p, all);
}

using StreamCopyFn = void (*)(StreamCopyParams);

// The cp.async mode (StreamCopyOptions::stages): tile j is vectors j * 256 * VECS + i * 256 + t,
// i < VECS, of the one source plane; persistent blocks take tiles blockIdx.x, + gridDim.x, ...
// Each thread copies its vectors of the next `stages` tiles into its own 16-byte shared-memory
// slots (one commit group per tile, empty past the last tile, so group n is always the block's
// n-th tile), and at each tile waits for that tile's group, reads its slots, refills them with
// the tile `stages` ahead and stores what it read: stages x VECS x 16 bytes in flight per thread
// all the time, in shared memory rather than registers. Its own slots only: the waits order
// them, no barrier; a slot is refilled after the ld.shared that read it (program order; the
// cp.async wrapper's memory clobber keeps it there).
struct StreamAsyncParams {
  const Vec* src;
  Vec* dst;
  int64_t n;   // vectors
  int stages;  // 1, 2 or 4
};

template <int VECS>
__global__ void __launch_bounds__(kThreads) stream_copy_async_kernel(const StreamAsyncParams p) {
  dev::begin_dependent_grid();
  Vec* const slots = dev::dynamic_smem<Vec>();
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t tile_vecs = int64_t{kThreads} * VECS, tiles = (p.n + tile_vecs - 1) / tile_vecs;
  const int64_t step = gridDim.x;
  const auto slot = [&](int stage, int i) { return slots + (stage * VECS + i) * kThreads + tid; };
  const auto issue = [&](int64_t tile, int stage) {
    if (tile < tiles) {
      #pragma unroll
      for (int i = 0; i < VECS; ++i) {
        const int64_t at = tile * tile_vecs + i * kThreads + tid;
        if (at < p.n) ptx::cp_async_16(slot(stage, i), p.src + at);
      }
    }
    ptx::cp_async_commit();
  };
  int64_t tile = blockIdx.x;
  for (int stage = 0; stage < p.stages; ++stage) issue(tile + stage * step, stage);
  for (int stage = 0; tile < tiles; tile += step) {
    ptx::cp_async_wait_pending(p.stages - 1);  // this tile's group landed; the later ones may not have
    Vec v[VECS];
    #pragma unroll
    for (int i = 0; i < VECS; ++i)
      if (tile * tile_vecs + i * kThreads + tid < p.n) v[i] = ptx::ld_shared(slot(stage, i));
    issue(tile + p.stages * step, stage);
    #pragma unroll
    for (int i = 0; i < VECS; ++i) {
      const int64_t at = tile * tile_vecs + i * kThreads + tid;
      if (at < p.n) ptx::st_global(p.dst + at, v[i]);
    }
    stage = stage + 1 == p.stages ? 0 : stage + 1;
  }
  ptx::cp_async_wait_all();  // the empty trailing groups: nothing pending at exit
}

using StreamAsyncFn = void (*)(StreamAsyncParams);

// The cp.async mode's kernel for `vecs` (1, 2 or 4, as op.cpp admits); nullptr otherwise.
inline StreamAsyncFn stream_copy_async_kernel_for(int vecs) {
  switch (vecs) {
    case 1: return stream_copy_async_kernel<1>;
    case 2: return stream_copy_async_kernel<2>;
    case 4: return stream_copy_async_kernel<4>;
    default: return nullptr;
  }
}

template <int R, int W>
StreamCopyFn stream_copy_kernel_for_vecs(int vecs) {
  // Instantiated where R x VECS <= kMaxLoadsPerThread (the loads one thread holds at once).
  switch (vecs) {
    case 1: return stream_copy_kernel<1, R, W>;
    case 2: if constexpr (2 * R <= kMaxLoadsPerThread) return stream_copy_kernel<2, R, W>; break;
    case 4: if constexpr (4 * R <= kMaxLoadsPerThread) return stream_copy_kernel<4, R, W>; break;
    case 8: if constexpr (8 * R <= kMaxLoadsPerThread) return stream_copy_kernel<8, R, W>; break;
    default: break;
  }
  return nullptr;
}

// nullptr where no kernel is instantiated (op.cpp's validation admits the same set).
inline StreamCopyFn stream_copy_kernel_for(int vecs, int reads, int writes) {
  if (reads == 1 && writes == 1) return stream_copy_kernel_for_vecs<1, 1>(vecs);
  if (reads == 2 && writes == 1) return stream_copy_kernel_for_vecs<2, 1>(vecs);
  if (reads == 4 && writes == 1) return stream_copy_kernel_for_vecs<4, 1>(vecs);
  if (reads == 1 && writes == 2) return stream_copy_kernel_for_vecs<1, 2>(vecs);
  if (reads == 1 && writes == 4) return stream_copy_kernel_for_vecs<1, 4>(vecs);
  if (reads == 1 && writes == 0) return stream_copy_kernel_for_vecs<1, 0>(vecs);
  return nullptr;
}

}  // inline namespace TEJAS_BUILD_NS
}  // namespace tejas::probe
