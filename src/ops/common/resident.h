// CTAs of one kernel the current GPU holds at once, for persistent grids (the norm.pipeline,
// activation.pipeline and rope.pipeline variants, quant_mx's nvfp4 version 7): the occupancy
// API's blocks per SM at `threads` threads and `smem` bytes of dynamic shared memory, times the
// SMs. With Carveout::max_shared (the pipelines, whose stages are shared memory) the kernel is
// first given the opt-in shared-memory maximum and the max-shared carveout. With
// Carveout::driver (a kernel with a little shared memory whose loads go through L1: version 7's
// 512-byte table) neither attribute is touched: the driver sizes the carveout per launch, the
// rest of the SM's 256 KiB staying L1, and smem must fit the default 48 KiB per block. A
// kernel is asked with one carveout only (it is the kernel's attribute). Asked once per
// (device, kernel, threads, smem, carveout) and cached, so timed launches query nothing. 0 when
// the shared memory exceeds the limit (the opt-in maximum, or the default per-block limit with
// Carveout::driver) or a query fails: the callers' variants are optimizations and fall back
// to their default kernels, so a failing query is cleared from the runtime's error state (the
// next launch would report it otherwise) and remembered, not reported. Thread safe.
// CUDA builds only (resident.cu).
#pragma once
#include <cstddef>
#include <cstdint>

namespace tejas::detail {

enum class Carveout { max_shared, driver };

int64_t resident_ctas(const void* kernel, int threads, size_t smem, Carveout carveout = Carveout::max_shared);

// Since the process started, over all threads: the questions resident_ctas put to the CUDA
// runtime (one per new key), and the runtime calls among them that failed (each such answer is
// 0, so its caller runs its default kernel, and is remembered). Shared memory above the limit is
// an answer of 0, not a failure. Tests read them (OpChecks.CudaGraphCaptureNeverFails: the
// queries made under CUDA-graph capture must not fail).
struct ResidentStats {
  int64_t queries = 0, failures = 0;
};
ResidentStats resident_stats();

}  // namespace tejas::detail
