// CTAs of one kernel the current GPU holds at once, for persistent grids (the norm.pipeline,
// activation.pipeline and rope.pipeline variants, quant_mx's nvfp4 version 7): the occupancy
// API's blocks per SM at `threads` threads and `smem` bytes of dynamic shared memory, times the
// SMs. With Carveout::max_shared (the pipelines, whose stages are shared memory) the kernel is
// first given the opt-in shared-memory maximum and the max-shared carveout. With
// Carveout::driver (a kernel with a little shared memory whose loads go through L1: version 7's
// 8 KiB table) neither attribute is touched: the driver sizes the carveout per launch, the
// rest of the SM's 256 KiB staying L1, and smem must fit the default 48 KiB per block. A
// kernel is asked with one carveout only (it is the kernel's attribute). Asked once per
// (device, kernel, threads, smem, carveout) and cached, so timed launches query nothing. 0 when
// the shared memory exceeds the limit (the opt-in maximum, or the default per-block limit with
// Carveout::driver) or a query fails: the callers' variants are optimizations and fall back
// to their default kernels, so a failing query is cleared from the runtime's error state (the
// next launch would report it otherwise) and remembered, not reported. Thread safe. The runtime
// calls of a new question run in a RelaxedCaptureScope, so that a launcher called while a stream
// is being captured into a CUDA graph (a serving engine's decode step) never invalidates the
// capture with them.
// CUDA builds only (resident.cu).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace tejas::detail {

enum class Carveout { max_shared, driver };

int64_t resident_ctas(const void* kernel, int threads, size_t smem, Carveout carveout = Carveout::max_shared);

// Gives `kernel` the opt-in dynamic shared-memory maximum of `device` (*limit: that maximum) and
// the max-shared carveout, once per (device, kernel): later calls answer from the first success.
// A failure (*limit = 0, its error cleared from the runtime's error state and returned) is not
// remembered: the next call asks again (resident_ctas remembers its own answers per question).
// Used by resident_ctas and by stream_copy (src/ops/probe/launch.cu), which reports the error.
// Thread safe.
cudaError_t raise_smem_optin(int device, const void* kernel, int* limit);

// While alive, this thread's potentially unsafe runtime calls (attribute changes, occupancy
// queries) are tolerated by a stream capture in progress, on this thread or another, instead of
// invalidating it (cudaThreadExchangeStreamCaptureMode to relaxed; the previous mode restored at
// the end). None of them is stream-ordered: what they change or answer holds for the captured
// launches as for eager ones. Where the runtime cannot exchange the mode (no driver), nothing.
class RelaxedCaptureScope {
 public:
  RelaxedCaptureScope();
  ~RelaxedCaptureScope();
  RelaxedCaptureScope(const RelaxedCaptureScope&) = delete;
  RelaxedCaptureScope& operator=(const RelaxedCaptureScope&) = delete;

 private:
  bool swapped_ = false;
  int previous_ = 0;
};

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
