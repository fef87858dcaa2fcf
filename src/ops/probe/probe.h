// Memory-level-parallelism probe: a streaming copy whose bytes of loads in flight per SM are set
// by its launch (16-byte vectors per thread, resident blocks per SM), so that `tejas bench`
// (memcpy suite, stream_copy rows) can measure copy bandwidth against bytes in flight - the curve
// by which every memory-bound kernel's occupancy and loads-before-first-wait predict its speed
// (docs/kernels/stream_copy.md). Internal, not a serving op: bytes in, the same bytes out.
#pragma once
#include <cstddef>
#include <cstdint>

#include "tejas/context.h"
#include "tejas/status.h"
#include "tejas/tensor.h"

namespace tejas::probe {

inline constexpr int kThreads = 256;        // per block
inline constexpr int kVecBytes = 16;        // one ld/st .v4.u32
inline constexpr int kMaxVecs = 8;          // vectors per thread and plane: 1, 2, 4 or 8
inline constexpr int kMaxLoadsPerThread = 8;  // reads x vecs
inline constexpr int kMaxBlocksPerSm = 2048 / kThreads;  // 2048 threads per SM (sm_80, sm_90)
inline constexpr int64_t kMaxGridBlocks = (int64_t{1} << 31) - 1;

struct StreamCopyOptions {
  int vecs = 1;           // 16-byte vectors each thread takes per plane (all loads issued before its stores)
  int blocks_per_sm = 0;  // resident blocks per SM to allow (cuda: by dynamic shared memory); 0 = no cap
  // The read : write mix: (1, 1) a copy; (2, 1), (4, 1) read-heavy like quantization and gated
  // activations; (1, 2), (1, 4) write-heavy like dequantization; (1, 0) the read pass (the read
  // ceiling, and `tejas bench --flush clean`: dst is one vector per warp, stream_read_sink_bytes).
  // reads x vecs <= 8.
  int reads = 1, writes = 1;
  // > 0: the cp.async pipeline instead (a copy: reads = writes = 1; needs blocks_per_sm): as many
  // persistent blocks as blocks_per_sm x the SMs walk tiles of 256 x vecs vectors, each thread
  // keeping `stages` (1, 2 or 4) tiles' vectors in flight in shared memory through cp.async
  // while it stores the oldest: stages x vecs x 16 bytes per thread, with no registers held
  // (the norm.pipeline kernels' way). vecs 1, 2 or 4 there: at most 64 KiB of slots per block.
  int stages = 0;
};

// The emulator's stand-in for the SMs of the cp.async mode's persistent grid (blocks_per_sm x
// this many blocks): small and odd, so that blocks walk unequal tile counts.
inline constexpr int kEmuAsyncSms = 3;

struct StreamCopyLaunch {
  int64_t blocks = 0;             // the cp.async mode: min(tiles, blocks_per_sm x SMs)
  int threads = kThreads;
  size_t dynamic_smem_bytes = 0;  // what caps the residency (cuda; 0 without a cap, and on the emulator),
                                  // or the cp.async mode's slots where larger (both backends)
  int resident_blocks_per_sm = 0; // cuda: the occupancy API's count (asked when `launch` is given); else 0
};

// Blocks of the launch for n vectors per plane at `vecs` per thread (the cp.async mode: its
// tiles, walked by min(tiles, resident) persistent blocks).
inline int64_t stream_copy_blocks(int64_t n, int vecs) {
  const int64_t per_block = int64_t{kThreads} * vecs;
  return (n + per_block - 1) / per_block;
}

// The read pass's dst (writes = 0): one 16-byte vector per warp of its launch, each the XOR of
// every vector the warp read (0 from warps wholly past n).
inline constexpr int kWarpsPerBlock = kThreads / 32;
inline int64_t stream_read_sink_bytes(int64_t n, int vecs) {
  return stream_copy_blocks(n, vecs) * kWarpsPerBlock * kVecBytes;
}

// The cp.async mode's shared memory per block: its stages' slots.
inline size_t stream_copy_async_smem(int stages, int vecs) {
  return static_cast<size_t>(stages) * vecs * kThreads * kVecBytes;
}

// src is `reads` planes of n 16-byte vectors, dst `writes` planes of n: every destination plane
// gets the XOR of the source planes (a copy when reads = writes = 1); the read pass (writes = 0)
// writes dst's stream_read_sink_bytes(n, vecs) instead: vector w the XOR of the vectors warp w
// read (block w / 8, threads 32 (w % 8) .. + 31, each thread's `vecs` vectors). u8 vectors, rank 1,
// contiguous, 16-byte aligned, not overlapping, one device, n >= 1. Backends: reference (host
// code), emulator and cuda. `launch` (may be null) receives the launch shape.
Status stream_copy(const ExecContext& ctx, const TensorView& src, const TensorView& dst,
                   const StreamCopyOptions& options, StreamCopyLaunch* launch = nullptr);

}  // namespace tejas::probe
