// Included first by every kernel header. Chooses between the real CUDA compilation and the
// emulator build, and defines TEJAS_ARCH:
//   nvcc device pass:  TEJAS_ARCH == __CUDA_ARCH__ (800, 900, ...)
//   nvcc host pass:    TEJAS_ARCH == 0 (kernel bodies are not executed on the host)
//   emulator build:    TEJAS_ARCH == TEJAS_EMU_ARCH (900 unless the translation unit sets it);
//                      launchers that differ by arch compile once per arch.
// Kernels test TEJAS_ARCH, never __CUDA_ARCH__.
#pragma once

#if defined(__CUDACC__)
#  define TEJAS_EMULATION 0
#else
#  define TEJAS_EMULATION 1
#endif

// Every device-layer wrapper ends its parameter list with TEJAS_SITE_PARAM: in emulation builds
// a defaulted emu::Site (the caller's file:line:column, for findings and for grouping lanes into
// requests); nothing on the device. TEJAS_SITE_PARAM_ONLY is the same for wrappers that take no
// other parameter.
//
// A kernel helper that calls wrappers (or other such helpers) on its callers' behalf ends its
// parameter list with TEJAS_CALLER_PARAM (the location of the call, by default) and passes
// TEJAS_NESTED_SITE as the last argument of each wrapper or helper call it makes: that site is
// the current line with the caller's chain behind it. On the GPU every inlined call of a helper
// is an instruction of its own; in the emulator two calls of one helper from different lines
// then stay different requests (emu::Site). Calls that pass nothing get the direct call's line,
// as before. All four expand to nothing under nvcc.
//   template <int N> __device__ void load_row(const float* p, float (&v)[N] TEJAS_CALLER_PARAM) {
//     for (int i = 0; i < N; ++i) v[i] = ptx::ld_global(p + i TEJAS_NESTED_SITE);
//   }
#if TEJAS_EMULATION
#  define TEJAS_SITE_PARAM , ::tejas::emu::Site site = ::tejas::emu::Site::here()
#  define TEJAS_SITE_PARAM_ONLY ::tejas::emu::Site site = ::tejas::emu::Site::here()
#  define TEJAS_CALLER_PARAM , ::tejas::emu::Site tejas_caller_site = ::tejas::emu::Site::here()
#  define TEJAS_CALLER_PARAM_ONLY ::tejas::emu::Site tejas_caller_site = ::tejas::emu::Site::here()
#  define TEJAS_NESTED_SITE , ::tejas::emu::Site::nested(tejas_caller_site)
#  define TEJAS_NESTED_SITE_ONLY ::tejas::emu::Site::nested(tejas_caller_site)
#else
#  define TEJAS_SITE_PARAM
#  define TEJAS_SITE_PARAM_ONLY
#  define TEJAS_CALLER_PARAM
#  define TEJAS_CALLER_PARAM_ONLY
#  define TEJAS_NESTED_SITE
#  define TEJAS_NESTED_SITE_ONLY
#endif

// Kernel code is compiled twice into one library: by nvcc for the cuda backend (launch.cu) and
// by the host compiler for the emulator (launch_emu.cpp). A kernel template's nvcc host stub and
// its emulated body would share a mangled name, and the linker would keep one for both, so
// kernel headers declare their code inside `inline namespace TEJAS_BUILD_NS { ... }`.
#if TEJAS_EMULATION
#  define TEJAS_BUILD_NS emulated
#else
#  define TEJAS_BUILD_NS compiled
#endif

#if defined(__CUDACC__)
#  include <cuda_runtime.h>
#  if defined(__CUDA_ARCH__)
#    define TEJAS_ARCH __CUDA_ARCH__
#    define TEJAS_DEVICE_PASS 1
#  else
#    define TEJAS_ARCH 0
#    define TEJAS_DEVICE_PASS 0
#  endif
#else
#  define TEJAS_DEVICE_PASS 0
#  ifndef TEJAS_EMU_ARCH
#    define TEJAS_EMU_ARCH 900
#  endif
#  define TEJAS_ARCH TEJAS_EMU_ARCH
#  include "emu/cuda_shim.h"  // CUDA keywords, built-in variables and intrinsics on fibers
#endif

#include <cstdint>
