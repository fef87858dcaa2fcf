// CUDA for the host compiler: what a kernel source needs to compile unchanged in an emulation
// build (included by src/device/prelude.h when not compiled by nvcc).
//
// - Keywords and attributes (__global__, __device__, __host__, __forceinline__, __noinline__,
//   __launch_bounds__(...), __grid_constant__, __restrict__) are no-ops. The CUDA headers'
//   crt/host_defines.h already defines most of them for a host compiler (as empty or as GNU
//   attributes); we only add the ones it leaves out, so nothing is defined twice.
// - Static __shared__ arrays are not supported (a compile error names the fix): kernels use
//   dynamic shared memory through tejas::dev::dynamic_smem<T>() (src/device/ptx/ld_st.h).
// - threadIdx, blockIdx, blockDim, gridDim are the running fiber's; warpSize is 32.
// - Intrinsics follow CUDA semantics (shim_warp.h: barriers, warp collectives, atomics, __ldg;
//   shim_math.h: fast math, bit tricks, the bf16 / f16 functions the headers lack on the host).
#pragma once

#if defined(__CUDACC__)
#error "cuda_shim.h is for emulation builds (host compiler) only"
#endif

// cuda_runtime.h first: its host declarations of the built-in variables (extern const uint3
// threadIdx, ..., int warpSize) must be seen before the macros below replace those names.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#include <vector_functions.h>
#include <vector_types.h>

#include "emu/emu.h"

#ifndef __global__
#define __global__
#endif
#ifndef __device__
#define __device__
#endif
#ifndef __host__
#define __host__
#endif
#ifndef __forceinline__
#define __forceinline__ inline
#endif
// Empty, not an attribute: libstdc++ spells __attribute__((__noinline__)) and must still parse.
#ifndef __noinline__
#define __noinline__
#endif
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif
#ifndef __grid_constant__
#define __grid_constant__
#endif
#ifndef __constant__
#define __constant__
#endif
#undef __shared__
#define __shared__ TEJAS_EMU_static_shared_memory_is_not_supported_use_tejas_dev_dynamic_smem

#define threadIdx (::tejas::emu::detail::tls_builtins->thread_idx)
#define blockIdx (::tejas::emu::detail::tls_builtins->block_idx)
#define blockDim (::tejas::emu::detail::tls_builtins->block_dim)
#define gridDim (::tejas::emu::detail::tls_builtins->grid_dim)
#define warpSize 32

#include "emu/shim_math.h"
#include "emu/shim_warp.h"
