// Dynamic shared memory of the current block, typed: tejas::dev::dynamic_smem<T>(). Kernels lay
// their buffers out in one struct (its sizeof is the launch's dynamic_smem_bytes) and take
// `dynamic_smem<Layout>()`. Kernels use no static __shared__ arrays (the emulator rejects them).
#pragma once
#include "device/prelude.h"

#if TEJAS_EMULATION
#include "emu/emu.h"
#endif

namespace tejas::dev {

// 1024 bytes: the period of the 128-byte swizzle pattern (TMA / wgmma), which must start on that
// boundary; the emulator aligns its shared memory the same way.
inline constexpr int kDynamicSmemAlign = 1024;

// The block's dynamic shared memory (the launch's dynamic_smem_bytes), 1024-byte aligned (the
// period of the 128-byte swizzle patterns; the emulator aligns its shared memory the same way).
template <class T>
__device__ __forceinline__ T* dynamic_smem() {
#if TEJAS_EMULATION
  return static_cast<T*>(::tejas::emu::dynamic_smem_base());
#else
  extern __shared__ __align__(1024) unsigned char tejas_dynamic_smem[];
  return reinterpret_cast<T*>(tejas_dynamic_smem);
#endif
}

}  // namespace tejas::dev
