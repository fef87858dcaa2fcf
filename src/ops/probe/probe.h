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
inline constexpr int kMaxVecs = 8;          // vectors per thread: 1, 2, 4 or 8
inline constexpr int kMaxBlocksPerSm = 32;  // the hardware's cap on resident blocks

struct StreamCopyOptions {
  int vecs = 1;           // 16-byte vectors each thread loads (all issued before its stores)
  int blocks_per_sm = 0;  // resident blocks per SM to allow (cuda: by dynamic shared memory); 0 = no cap
};

struct StreamCopyLaunch {
  int64_t blocks = 0;
  int threads = kThreads;
  size_t dynamic_smem_bytes = 0;  // what caps the residency (cuda; 0 without a cap, and on the emulator)
  int resident_blocks_per_sm = 0; // cuda: the occupancy API's count (asked when `launch` is given); else 0
};

// dst[i] = src[i] for the u8 vectors src and dst (rank 1, contiguous, equal sizes, a positive
// multiple of 16 bytes, 16-byte aligned, not overlapping, one device). Backends: reference (a
// host copy), emulator and cuda. `launch` (may be null) receives the launch shape.
Status stream_copy(const ExecContext& ctx, const TensorView& src, const TensorView& dst,
                   const StreamCopyOptions& options, StreamCopyLaunch* launch = nullptr);

}  // namespace tejas::probe
