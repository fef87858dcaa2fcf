// Programmatic dependent launch (sm_90+; PTX ISA "Parallel Synchronization and Communication
// Instructions: griddepcontrol"):
//   griddepcontrol_wait()               griddepcontrol.wait;  the executing thread waits until the
//                                       prerequisite grids (the kernel before this one in the
//                                       stream, when this grid was launched as its programmatic
//                                       dependent) have completed and their memory operations are
//                                       performed and visible to this grid. Returns at once in a
//                                       grid launched without the attribute.
//   griddepcontrol_launch_dependents()  griddepcontrol.launch_dependents;  the grid launched after
//                                       this one as its programmatic dependent may be scheduled
//                                       once every CTA of this grid has executed it or exited.
//                                       Once per CTA counts; a scheduling hint, it makes nothing
//                                       visible (the dependent's own wait does).
// Kernels do not call these directly but dev::begin_dependent_grid() (device/grid_dependency.h),
// which leaves them out below sm_90. On the device below sm_90 the body is __trap(); the
// emulator reports FindingKind::unsupported when the translation unit's TEJAS_ARCH or the
// launch's arch is below 90.
#pragma once
#include "device/prelude.h"

#if TEJAS_EMULATION
#include <string>

#include "emu/emu.h"
#endif

namespace tejas::ptx {

inline constexpr int kGriddepcontrolMinSm = 90;

#if TEJAS_EMULATION
// A translation unit compiled for an arch below sm_90: the instruction is not there.
inline bool griddepcontrol_missing(const char* form, ::tejas::emu::Site site) {
  if (TEJAS_ARCH >= kGriddepcontrolMinSm * 10) return false;
  ::tejas::emu::report(::tejas::emu::FindingKind::unsupported, nullptr, site, std::string(form) + " needs sm_90");
  return true;
}
#endif

__device__ __forceinline__ void griddepcontrol_wait(TEJAS_SITE_PARAM_ONLY) {
#if TEJAS_EMULATION
  if (!griddepcontrol_missing("griddepcontrol.wait", site)) ::tejas::emu::griddepcontrol_wait(site);
#elif TEJAS_DEVICE_PASS && TEJAS_ARCH >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#elif TEJAS_DEVICE_PASS
  __trap();
#endif
}

__device__ __forceinline__ void griddepcontrol_launch_dependents(TEJAS_SITE_PARAM_ONLY) {
#if TEJAS_EMULATION
  if (!griddepcontrol_missing("griddepcontrol.launch_dependents", site))
    ::tejas::emu::griddepcontrol_launch_dependents(site);
#elif TEJAS_DEVICE_PASS && TEJAS_ARCH >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#elif TEJAS_DEVICE_PASS
  __trap();
#endif
}

}  // namespace tejas::ptx
