// Host-side glue for the ops' emulator backends: registers the op's tensors with the emulator
// (merging views that share bytes, e.g. q and k slices of one qkv buffer), builds launch
// options from the ExecContext, and turns findings into a Status. Tests read the counters of
// the last op call through last_emulator_reports().
#pragma once
#include <initializer_list>
#include <vector>

#include "emu/emu.h"
#include "tejas/context.h"
#include "tejas/status.h"
#include "tejas/tensor.h"

namespace tejas::detail {

struct EmuArg {
  const TensorView* t;    // absent tensors are skipped
  emu::Access access;     // read: an input; write: an output that starts unwritten; read_write: in/out
};

// Registers the tensors' byte extents for the lifetime of the object.
class EmuBuffers {
 public:
  EmuBuffers(std::initializer_list<EmuArg> args);
  ~EmuBuffers();
  EmuBuffers(const EmuBuffers&) = delete;
  EmuBuffers& operator=(const EmuBuffers&) = delete;

 private:
  std::vector<const void*> bases_;
};

// grid/block/smem plus ctx.emulated_arch (80 -> 80, 90 -> 90) and the environment's seed; on
// sm_90 a programmatic dependent launch (emu::LaunchOptions::programmatic), whatever ctx.pdl.
// smem_opt_in: the cuda backend raises this kernel's dynamic shared-memory limit before it
// launches it (cudaFuncSetAttribute(MaxDynamicSharedMemorySize): resident_ctas with the
// max-shared carveout, the stream_copy probe), so here it may use up to the architecture's cap;
// without, the emulator holds the launch to CUDA's default 48 KiB, as a GPU would
// (emu::LaunchOptions::max_dynamic_smem_bytes).
emu::LaunchOptions emu_options(const ExecContext& ctx, dim3 grid, dim3 block, size_t dynamic_smem_bytes,
                               bool smem_opt_in = false);

// Records `report` as one of the current op call's reports; a finding makes the call fail
// with Status::Internal naming the op and listing the findings.
Status emu_status(const char* op, const emu::LaunchReport& report);

// Reports of the kernels launched by the most recent emulator op call on this thread
// (cleared by begin_emulator_call(), which each launcher calls first).
void begin_emulator_call();
const std::vector<emu::LaunchReport>& last_emulator_reports();

}  // namespace tejas::detail
