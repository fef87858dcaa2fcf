// dev::count_event(name): a kernel-defined event, counted by name in the emulator's launch report
// (emu::Counters::events) and compiled to nothing for the GPU. For what a kernel decided that its
// outputs do not show (which of two exact paths a block took), so that tests can check the
// decision itself; not for hot loops (each call is a map update under emulation).
#pragma once
#include "device/prelude.h"

#if TEJAS_EMULATION
#include "emu/emu.h"
#endif

namespace tejas::dev {

__device__ __forceinline__ void count_event(const char* name) {
#if TEJAS_EMULATION
  ::tejas::emu::count_event(name);
#else
  (void)name;
#endif
}

}  // namespace tejas::dev
