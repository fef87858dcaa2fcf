// Device-layer global and shared memory accesses, named after the PTX instruction they stand for.
// Kernels use these (not raw dereferences) for every access the emulator should check: under
// emulation each call goes through the emulator's hooks (bounds, alignment, poison, races,
// counters); on the device it is a plain typed access or the named ld/st form.
//
//   ld_global / st_global        ld.global / st.global            (sm_80+)
//   ld_global_nc                 ld.global.nc (read-only path)    (sm_80+)
//   ld_global_cg                 ld.global.cg (L2 only)           (sm_80+)
//   st_global_cs                 st.global.cs (streaming)         (sm_80+)
//   ld_shared / st_shared        ld.shared / st.shared            (sm_80+)
//   prefetch_l2                  prefetch.L2 (generic address)    (sm_80+)
//
// T: any trivially copyable type of 1, 2, 4, 8 or 16 bytes (scalars, uint2/uint4/float2/float4).
// The address must be aligned to sizeof(T). Cache hints are no-ops under emulation.
#pragma once
#include "device/prelude.h"
#include "device/smem.h"  // dynamic_smem<T>(), used with these accessors

#include <cstring>

#if TEJAS_EMULATION
#include "emu/emu.h"
#endif

namespace tejas::ptx {

namespace ldst_detail {
template <class T>
inline constexpr bool kValidAccess = sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8 ||
                                     sizeof(T) == 16;
}  // namespace ldst_detail


template <class T>
__device__ __forceinline__ T ld_global(const T* p TEJAS_SITE_PARAM) {
  static_assert(ldst_detail::kValidAccess<T>, "1, 2, 4, 8 or 16 bytes");
#if TEJAS_EMULATION
  return ::tejas::emu::load(p, site);
#else
  return *p;
#endif
}

template <class T>
__device__ __forceinline__ void st_global(T* p, const T& v TEJAS_SITE_PARAM) {
  static_assert(ldst_detail::kValidAccess<T>, "1, 2, 4, 8 or 16 bytes");
#if TEJAS_EMULATION
  ::tejas::emu::store(p, v, site);
#else
  *p = v;
#endif
}

template <class T>
__device__ __forceinline__ T ld_shared(const T* p TEJAS_SITE_PARAM) {
  static_assert(ldst_detail::kValidAccess<T>, "1, 2, 4, 8 or 16 bytes");
#if TEJAS_EMULATION
  return ::tejas::emu::load(p, site);
#else
  return *p;
#endif
}

template <class T>
__device__ __forceinline__ void st_shared(T* p, const T& v TEJAS_SITE_PARAM) {
  static_assert(ldst_detail::kValidAccess<T>, "1, 2, 4, 8 or 16 bytes");
#if TEJAS_EMULATION
  ::tejas::emu::store(p, v, site);
#else
  *p = v;
#endif
}

#if !TEJAS_EMULATION
namespace ldst_detail {
// Inline PTX for the cache-hinted forms, by access size.
template <class T>
__device__ __forceinline__ T ld_nc(const T* p) {
  T out;
  if constexpr (sizeof(T) == 16) {
    uint4 r;
    asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
    memcpy(&out, &r, sizeof(T));
  } else if constexpr (sizeof(T) == 8) {
    uint2 r;
    asm volatile("ld.global.nc.v2.u32 {%0, %1}, [%2];" : "=r"(r.x), "=r"(r.y) : "l"(p));
    memcpy(&out, &r, sizeof(T));
  } else if constexpr (sizeof(T) == 4) {
    unsigned r;
    asm volatile("ld.global.nc.u32 %0, [%1];" : "=r"(r) : "l"(p));
    memcpy(&out, &r, sizeof(T));
  } else {
    out = *p;  // 1- and 2-byte values: the plain path
  }
  return out;
}
template <class T>
__device__ __forceinline__ T ld_cg(const T* p) {
  T out;
  if constexpr (sizeof(T) == 16) {
    uint4 r;
    asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
    memcpy(&out, &r, sizeof(T));
  } else if constexpr (sizeof(T) == 8) {
    uint2 r;
    asm volatile("ld.global.cg.v2.u32 {%0, %1}, [%2];" : "=r"(r.x), "=r"(r.y) : "l"(p));
    memcpy(&out, &r, sizeof(T));
  } else if constexpr (sizeof(T) == 4) {
    unsigned r;
    asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(r) : "l"(p));
    memcpy(&out, &r, sizeof(T));
  } else {
    out = *p;
  }
  return out;
}
template <class T>
__device__ __forceinline__ void st_cs(T* p, const T& v) {
  if constexpr (sizeof(T) == 16) {
    uint4 r;
    memcpy(&r, &v, sizeof(T));
    asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(r.x), "r"(r.y), "r"(r.z), "r"(r.w)
                 : "memory");
  } else if constexpr (sizeof(T) == 8) {
    uint2 r;
    memcpy(&r, &v, sizeof(T));
    asm volatile("st.global.cs.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(r.x), "r"(r.y) : "memory");
  } else if constexpr (sizeof(T) == 4) {
    unsigned r;
    memcpy(&r, &v, sizeof(T));
    asm volatile("st.global.cs.u32 [%0], %1;" ::"l"(p), "r"(r) : "memory");
  } else {
    *p = v;
  }
}
}  // namespace ldst_detail
#endif

// ld.global.nc: read-only data for the whole kernel (inputs nobody writes during the launch).
// The emulator reports a read of bytes written earlier in the same launch (stale_nc_read).
template <class T>
__device__ __forceinline__ T ld_global_nc(const T* p TEJAS_SITE_PARAM) {
  static_assert(ldst_detail::kValidAccess<T>, "1, 2, 4, 8 or 16 bytes");
#if TEJAS_EMULATION
  return ::tejas::emu::load(p, site, ::tejas::emu::kAccessNonCoherent);
#else
  return ldst_detail::ld_nc(p);
#endif
}

// ld.global.cg: cache in L2 only (data another block may have written in an earlier launch).
template <class T>
__device__ __forceinline__ T ld_global_cg(const T* p TEJAS_SITE_PARAM) {
  static_assert(ldst_detail::kValidAccess<T>, "1, 2, 4, 8 or 16 bytes");
#if TEJAS_EMULATION
  return ::tejas::emu::load(p, site);
#else
  return ldst_detail::ld_cg(p);
#endif
}

// st.global.cs: streaming store (written once, not re-read soon).
template <class T>
__device__ __forceinline__ void st_global_cs(T* p, const T& v TEJAS_SITE_PARAM) {
  static_assert(ldst_detail::kValidAccess<T>, "1, 2, 4, 8 or 16 bytes");
#if TEJAS_EMULATION
  ::tejas::emu::store(p, v, site);
#else
  ldst_detail::st_cs(p, v);
#endif
}

// prefetch.L2: brings the line holding `p` into L2 ahead of a load that must wait for something
// else first (PTX ISA: no state space = generic addressing). Changes no values; under emulation
// it is counted (Counters::global_prefetches) and moves nothing; an address outside every
// registered buffer is reported (out_of_bounds), though the GPU would ignore it.
__device__ __forceinline__ void prefetch_l2(const void* p TEJAS_SITE_PARAM) {
#if TEJAS_EMULATION
  ::tejas::emu::count_prefetch(p, site);
#else
  asm volatile("prefetch.L2 [%0];" ::"l"(p));
#endif
}

}  // namespace tejas::ptx

