// Math functions whose GPU results are not correctly rounded. Kernels call these instead of the
// global names, so the emulator can give them the GPU's error: on the device they are CUDA's own
// expf / rsqrtf; under emulation they return the correctly rounded value moved by up to the
// documented maximum error (TEJAS_EMU_MATH, docs/emulator.md), so a test tuned on the emulator
// cannot rely on last bits the GPU does not reproduce.
//
// Maximum errors (CUDA C++ Programming Guide, Mathematical Functions appendix, table
// "Single-Precision Mathematical Standard Library Functions with Maximum ULP Error"):
//   expf(x)    2 ulp (full range)
//   rsqrtf(x)  2 ulp (full range)
//   fast_expf(x)      __expf: 2 + floor(|1.173 x|) ulp, subnormal results flushed to +0
//                     (CUDA C++ Programming Guide, "Intrinsic Functions"): ex2.approx.ftz
//                     (2 ulp) of x log2(e), whose rounding grows with |x|
//   fdividef(x, y)    __fdividef: 2 ulp for |y| in [2^-126, 2^126]; 0 for 2^126 < |y| < 2^128
//                     (NaN for an infinite x there)
// Special values as CUDA documents them: expf(+-0) = 1, expf(-Inf) = +0, expf(+Inf) = +Inf;
// rsqrtf(+-0) = +-Inf, rsqrtf(+Inf) = +0, rsqrtf(x < 0) = NaN; NaN in, NaN out.
#pragma once
#include "device/prelude.h"
#include "device/ptx/ex2.h"

#if TEJAS_EMULATION
#include "emu/emu.h"
#endif

namespace tejas::dev {

__device__ __forceinline__ float expf(float x) {
#if TEJAS_EMULATION
  return ::tejas::emu::gpu_expf(x);
#else
  return ::expf(x);
#endif
}

// log2(e) rounded to f32 (0x3FB8AA3B), the constant __expf multiplies by.
inline constexpr float kLog2eF = 1.44269504088896340736f;

// __expf's two instructions with the exponential's .ftz form: x log2(e) rounded to f32, then
// ex2.approx.ftz (ptx/ex2.h). The same value as __expf where e^x is a normal f32 (x >= -87.3)
// and +0 below, as CUDA documents __expf (subnormal results flushed); 3 SASS instructions fewer
// per call on sm_90a (nvcc's non-ftz ex2 keeps subnormal results with a range test and two
// multiplies). Emulated through the wrapper: the product rounds as on the GPU, the exponential
// errs by its own 2 ulp.
__device__ __forceinline__ float fast_expf(float x) { return ptx::ex2_approx_ftz_f32(x * kLog2eF); }

__device__ __forceinline__ float fdividef(float x, float y) {
#if TEJAS_EMULATION
  return ::tejas::emu::gpu_fdividef(x, y);
#else
  return ::__fdividef(x, y);
#endif
}

__device__ __forceinline__ float rsqrtf(float x) {
#if TEJAS_EMULATION
  return ::tejas::emu::gpu_rsqrtf(x);
#else
  return ::rsqrtf(x);
#endif
}

}  // namespace tejas::dev
