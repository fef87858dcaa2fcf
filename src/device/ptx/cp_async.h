// cp.async (sm_80+): asynchronous global -> shared copies of 4, 8 or 16 bytes.
//
//   cp_async_4 / _8 (gmem, smem)     cp.async.ca.shared.global [smem], [gmem], n;
//   cp_async_16                       cp.async.cg.shared.global [smem], [gmem], 16;  (L2 only)
//   cp_async_*_zfill(..., src_bytes)  the src-size form: copies src_bytes, zero-fills the rest
//                                     (src_bytes 0: the whole destination becomes zeros)
//   cp_async_commit()                 cp.async.commit_group;  closes this thread's open group
//   cp_async_wait<N>()                cp.async.wait_group N;   at most N newest groups pending
//   cp_async_wait_pending(n)          the same for a uniform run-time n of 0..3 (a pipeline's
//                                     stages - 1): the immediate form picked by a branch
//   cp_async_wait_all()               cp.async.wait_all;
//
// The data lands in shared memory only at the wait for its group (under emulation too: a read of
// the destination before that is an async_read_before_wait finding). Other threads see it after
// a barrier that follows the wait. Both addresses must be aligned to the copy size.
#pragma once
#include "device/prelude.h"

#if TEJAS_EMULATION
#include "emu/emu.h"
#endif

namespace tejas::ptx {

namespace cp_async_detail {
inline constexpr int kCg = 16;  // the only size .cg accepts

#if !TEJAS_EMULATION
__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
template <int N>
__device__ __forceinline__ void ca(void* smem, const void* gmem, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(smem_addr(smem)), "l"(gmem), "n"(N),
               "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cg16(void* smem, const void* gmem, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], %2, %3;\n" ::"r"(smem_addr(smem)), "l"(gmem), "n"(kCg),
               "r"(src_bytes)
               : "memory");
}
#endif
}  // namespace cp_async_detail

#if TEJAS_EMULATION
#define TEJAS_CPA_BODY(N, SRC) ::tejas::emu::cp_async(smem, gmem, N, SRC, site)
#define TEJAS_CPA_BODY16(SRC) ::tejas::emu::cp_async(smem, gmem, 16, SRC, site)
#else
#define TEJAS_CPA_BODY(N, SRC) cp_async_detail::ca<N>(smem, gmem, SRC)
#define TEJAS_CPA_BODY16(SRC) cp_async_detail::cg16(smem, gmem, SRC)
#endif

__device__ __forceinline__ void cp_async_4(void* smem, const void* gmem TEJAS_SITE_PARAM) { TEJAS_CPA_BODY(4, 4); }
__device__ __forceinline__ void cp_async_8(void* smem, const void* gmem TEJAS_SITE_PARAM) { TEJAS_CPA_BODY(8, 8); }
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem TEJAS_SITE_PARAM) { TEJAS_CPA_BODY16(16); }
__device__ __forceinline__ void cp_async_4_zfill(void* smem, const void* gmem, int src_bytes TEJAS_SITE_PARAM) {
  TEJAS_CPA_BODY(4, src_bytes);
}
__device__ __forceinline__ void cp_async_8_zfill(void* smem, const void* gmem, int src_bytes TEJAS_SITE_PARAM) {
  TEJAS_CPA_BODY(8, src_bytes);
}
__device__ __forceinline__ void cp_async_16_zfill(void* smem, const void* gmem, int src_bytes TEJAS_SITE_PARAM) {
  TEJAS_CPA_BODY16(src_bytes);
}

#undef TEJAS_CPA_BODY
#undef TEJAS_CPA_BODY16

__device__ __forceinline__ void cp_async_commit(TEJAS_SITE_PARAM_ONLY) {
#if TEJAS_EMULATION
  ::tejas::emu::cp_async_commit(site);
#else
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

template <int N>
__device__ __forceinline__ void cp_async_wait(TEJAS_SITE_PARAM_ONLY) {
  static_assert(N >= 0, "number of groups left pending");
#if TEJAS_EMULATION
  ::tejas::emu::cp_async_wait(N, site);
#else
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

__device__ __forceinline__ void cp_async_wait_pending(int n TEJAS_SITE_PARAM) {
#if TEJAS_EMULATION
  ::tejas::emu::cp_async_wait(n < 0 ? 0 : (n > 3 ? 3 : n), site);
#else
  if (n >= 3) cp_async_wait<3>();
  else if (n == 2) cp_async_wait<2>();
  else if (n == 1) cp_async_wait<1>();
  else cp_async_wait<0>();
#endif
}

__device__ __forceinline__ void cp_async_wait_all(TEJAS_SITE_PARAM_ONLY) {
#if TEJAS_EMULATION
  ::tejas::emu::cp_async_commit(site);
  ::tejas::emu::cp_async_wait(0, site);
#else
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

}  // namespace tejas::ptx

