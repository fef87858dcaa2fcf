// ptx::mov_opaque(x): x through a `mov` in volatile inline PTX, which the compiler can neither
// see through nor move (sm_80+). Computations on the result stay where the call is. Use: a value
// loaded early but needed late (a KV-cache slot or scale): without it, loop-invariant code motion puts
// the uses (a compare, a 64-bit division) right after the load, and the thread waits there for
// the data before issuing its other loads. Identity under emulation.
#pragma once
#include "device/prelude.h"

#include <cstdint>

namespace tejas::ptx {

__device__ __forceinline__ int64_t mov_opaque(int64_t x) {
#if TEJAS_DEVICE_PASS
  int64_t r;
  asm volatile("mov.b64 %0, %1;" : "=l"(r) : "l"(x));
  return r;
#else
  return x;
#endif
}

__device__ __forceinline__ float mov_opaque(float x) {
#if TEJAS_DEVICE_PASS
  float r;
  asm volatile("mov.b32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
#else
  return x;
#endif
}

}  // namespace tejas::ptx
