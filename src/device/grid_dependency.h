// dev::begin_dependent_grid(): the first statement of every op kernel, before any global-memory
// access and before any early return.
//
// A launcher may launch a kernel as the programmatic dependent of the kernel before it in the
// stream (ExecContext::pdl; cudaLaunchAttributeProgrammaticStreamSerialization): the GPU may then
// schedule its CTAs while that kernel still runs, and nothing that kernel writes is guaranteed
// visible until griddepcontrol.wait returns. So every thread waits first: no load may see stale
// inputs, no store may overwrite what the kernel before still reads, and the grid cannot complete
// (and let a fully ordered later kernel start) before its predecessor has. Then the thread
// executes griddepcontrol.launch_dependents, so the next kernel in the stream, when launched the
// same way, is scheduled as soon as every CTA of this grid has got this far: its launch latency
// hides behind this kernel's work. That next kernel runs nothing dependent before its own wait,
// which covers this whole grid's completion.
//
// In a grid launched without the attribute both instructions return at once. Below sm_90 there
// is no programmatic launch (the launchers never ask for one there) and nothing is emitted; the
// emulator does the same for an emulated sm_80.
#pragma once
#include "device/prelude.h"
#include "device/ptx/griddepcontrol.h"

namespace tejas::dev {

__device__ __forceinline__ void begin_dependent_grid(TEJAS_CALLER_PARAM_ONLY) {
#if TEJAS_EMULATION
  if (TEJAS_ARCH < ptx::kGriddepcontrolMinSm * 10 || ::tejas::emu::current_arch() < ptx::kGriddepcontrolMinSm) return;
  ptx::griddepcontrol_wait(TEJAS_NESTED_SITE_ONLY);
  ptx::griddepcontrol_launch_dependents(TEJAS_NESTED_SITE_ONLY);
#elif TEJAS_DEVICE_PASS && TEJAS_ARCH >= 900
  ptx::griddepcontrol_wait();
  ptx::griddepcontrol_launch_dependents();
#endif
}

}  // namespace tejas::dev
