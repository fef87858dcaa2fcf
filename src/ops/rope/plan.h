// Host side of the rope family's kernel backends: validated tensor views -> problem, config and
// kernel parameters (plan_launch), and the launchers of each backend (launch_emu.cpp, launch.cu).
#pragma once
#include <cstdint>
#include <vector>

#include "ops/rope/config.h"
#include "ops/rope/kernel_params.h"
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
};

// The emulator's stand-in for the CTAs a GPU holds at once (the pipelined kernel's grid there):
// small, so that tests of a few tokens already walk several per CTA.
inline constexpr int64_t kEmuResidentCtas = 3;

RopeLaunch plan_launch(const RopeArgs& a);

// Runs the kernel through the emulator (host tensors). Starts a new emulator call record.
Status launch_emulator(const char* op, const ExecContext& ctx, const RopeArgs& a, const RopeLaunch& l);

// The cuda backend (launch.cu); only in builds with device code. *launched (when given): the
// launch as run (the staged kernel when a pipelined plan's occupancy query failed).
Status launch_cuda(const char* op, const ExecContext& ctx, const RopeLaunch& l, RopeLaunch* launched = nullptr);

}  // namespace tejas::rotary

namespace tejas::rotary {

// Plans and runs the kernel on the emulator or cuda backend (arguments validated, index
// contents checked as the debug-check mode asks).
Status run_kernel_backend(const char* op, const ExecContext& ctx, Backend backend, const RopeArgs& a);

// The launch of this thread's last kernel-backend call, as run: tests check which kernel a case
// reached (the rope.head_stage kernels or the default ones; the pipelined one or not).
RopeLaunch last_launch();

}  // namespace tejas::rotary
