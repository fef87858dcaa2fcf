// ptx::ex2_approx_ftz_f32(x): `ex2.approx.ftz.f32` (every target; used on sm_80+): 2^x within
// 2 ulp of the correctly rounded result over the whole range, subnormal inputs and results
// flushed to sign-preserving zero; -Inf -> +0, +-0 -> 1, +Inf -> +Inf, NaN -> NaN (PTX ISA,
// "Floating Point Instructions: ex2"). One MUFU.EX2 in SASS: without .ftz, nvcc wraps the
// instruction in a range test and two multiplies that keep subnormal results (sm_90a), which a
// caller whose results are normal does not need. Under emulation: emu::gpu_ex2_approx_ftz (the
// same bound, seeded, as the other approximate functions; docs/emulator.md).
#pragma once
#include "device/prelude.h"

#if TEJAS_EMULATION
#include "emu/emu.h"
#endif

namespace tejas::ptx {

__device__ __forceinline__ float ex2_approx_ftz_f32(float x) {
#if TEJAS_DEVICE_PASS
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
#elif TEJAS_EMULATION
  return ::tejas::emu::gpu_ex2_approx_ftz(x);
#else
  return x;  // nvcc's host pass: kernel bodies are never run there
#endif
}

}  // namespace tejas::ptx
