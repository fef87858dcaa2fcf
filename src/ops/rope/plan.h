// Host side of the rope family's kernel backends: validated tensor views -> problem, config and
// kernel parameters (plan_launch), and the launchers of each backend (launch_emu.cpp, launch.cu).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "ops/rope/config.h"
#include "ops/rope/kernel_params.h"
#include "runtime/scoped_set.h"
#include "tejas/context.h"
#include "tejas/rope.h"
#include "tejas/status.h"

namespace tejas::rotary {

// The arguments of one call, already validated by the public op. Absent views stay default.
struct RopeArgs {
  TensorView positions, q, k, v, cos_sin, slots;
  PagedKvCache cache;
  RopeStyle style = RopeStyle::neox;
  bool mrope = false;
  int64_t sections[kNumSections] = {0, 0, 0};  // mrope only
};

struct RopeLaunch {
  RopeProblem problem;
  RopeConfig config;
  RopeParams params;
  DType dtype = DType::bf16;  // q's dtype: selects the kernel
  size_t smem_bytes = 0;      // dynamic shared memory: the rope.head_stage slots (and rope.v_stage's), else 0
  bool pipeline = false;      // rope.pipeline: rope_pipe_kernel on a persistent grid (two stages of slots)
  bool k_half = false;        // rope_kv_cache_write split (rope.kv_split): kv_rope_kernel on k, v and the caches
};

// The heads in flight of the kernel a launch runs: the plan's, except that the staged kernels go
// up to kMaxHeadsInFlight, so the wide step's plan without its pipeline (without_pipeline) runs
// the two-head kernel, whose head loop takes the heads past its first step itself (its staged
// slots, one stage of the wide plan's, hold more than it reads).
inline int kernel_heads_in_flight(const RopeLaunch& l) {
  return l.pipeline ? l.config.heads_in_flight : std::min(l.config.heads_in_flight, kMaxHeadsInFlight);
}

// The emulator's stand-in for the CTAs a GPU holds at once (the pipelined kernel's grid there):
// small, so that tests of a few tokens already walk several per CTA.
inline constexpr int64_t kEmuResidentCtas = 3;

RopeLaunch plan_launch(const RopeArgs& a);

// Runs the kernel through the emulator (host tensors), its report added to the op call's
// (run_kernel_backend starts the record: detail::begin_emulator_call).
Status launch_emulator(const char* op, const ExecContext& ctx, const RopeArgs& a, const RopeLaunch& l);

// The launch a pipelined plan falls back to when the GPU's occupancy query fails (launch.cu):
// the same config's staged kernel with one stage of slots, or, from kv_cache_write's
// kv_pipe_kernel, the loads-first kernel without shared memory, or, from the split's
// kv_rope_pipe_kernel, kv_rope_kernel (no shared memory). The staged kernel that rotates
// (rope_kernel) does not check clean multipliers; kv_write_kernel does. Other plans: unchanged.
RopeLaunch without_pipeline(const RopeLaunch& l);

// Tests: while one is alive, this thread's pipelined plans run without_pipeline's launch on either
// backend, as if the GPU's occupancy query had failed, so that the emulator covers the fallback.
class ScopedPipelineFallback : detail::ScopedSet<bool> {
 public:
  ScopedPipelineFallback();
};
bool pipeline_fallback_forced();

// The cuda backend (launch.cu); only in builds with device code. *launched (when given): the
// launch as run (without_pipeline's when a pipelined plan's occupancy query failed or
// pipeline_fallback_forced()).
Status launch_cuda(const char* op, const ExecContext& ctx, const RopeLaunch& l, RopeLaunch* launched = nullptr);

}  // namespace tejas::rotary

namespace tejas::rotary {

// Plans and runs the kernel on the emulator or cuda backend (arguments validated, index
// contents checked as the debug-check mode asks).
Status run_kernel_backend(const char* op, const ExecContext& ctx, Backend backend, const RopeArgs& a);

// The launch of this thread's last kernel-backend call, as run: tests check which kernel a case
// reached (the rope.head_stage kernels or the default ones; the pipelined one or not).
RopeLaunch last_launch();
// The q half of this thread's last call when rope_kv_cache_write ran split (rope.kv_split; its k
// half is last_launch(), k_half set); a default RopeLaunch otherwise.
RopeLaunch last_q_launch();

}  // namespace tejas::rotary
