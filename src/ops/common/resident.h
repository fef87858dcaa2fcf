// CTAs of one kernel the current GPU holds at once, for persistent grids (the norm.pipeline,
// activation.pipeline and rope.pipeline variants): the occupancy API's blocks per SM at `threads` threads and
// `smem` bytes of dynamic shared memory, after the kernel was given the opt-in shared-memory
// maximum and the max-shared carveout, times the SMs. Asked once per (device, kernel, threads,
// smem) and cached, so timed launches query nothing. 0 when the shared memory exceeds the
// device's opt-in limit or a query fails: the callers' variants are optimizations and fall back
// to their default kernels, so a failing query is cleared from the runtime's error state (the
// next launch would report it otherwise) and remembered, not reported. Thread safe.
// CUDA builds only (resident.cu).
#pragma once
#include <cstddef>
#include <cstdint>

namespace tejas::detail {

int64_t resident_ctas(const void* kernel, int threads, size_t smem);

}  // namespace tejas::detail
