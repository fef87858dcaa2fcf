// Warp-level 8x8 b16 matrix stores to shared memory (stmatrix, sm_90): the store direction of
// ldmatrix with the same address table and fragment layout (see ldmatrix.h).
//   stmatrix_xN(smem_row, r): lanes 8j .. 8j+7 give the row addresses of matrix j; lane l
//   provides row l/4, elements 2(l%4), 2(l%4)+1 of matrix j in r[j]. _trans stores the transpose.
// Emulation: one rendezvous gathers every lane's registers, counts the shared-memory phases
// and hands each address lane its 16-byte row, which that lane then stores through
// emu::on_store. On an arch below sm_90 the device body traps and the emulator reports
// FindingKind::unsupported and stores nothing.
#pragma once
#include <cstdint>

#include "device/prelude.h"
#include "device/ptx/ldmatrix.h"

#if TEJAS_EMULATION
#  include <cstring>
#  include <string>

#  include "emu/emu.h"
#endif

namespace tejas::ptx {

#if TEJAS_EMULATION
namespace emu_ldst {

inline constexpr int kStmatrixMinSm = 90;

template <int N>
struct StoreIn {
  const void* addr;
  uint32_t regs[N];
};
struct StoreOut {
  int lane = -1;  // stays -1 when the rendezvous failed
  Row row;
};

template <int N>
inline void st_gather(::tejas::emu::WarpSlots& slots, void* user) {
  const Op& op = *static_cast<const Op*>(user);
  const void* addr[kWarp];
  const uint32_t* regs[kWarp];
  for (int lane = 0; lane < kWarp; ++lane) {
    const auto* in = static_cast<const StoreIn<N>*>(slots.in[lane]);
    addr[lane] = in->addr;
    regs[lane] = in->regs;
  }
  count_phases(N, addr);
  Row rows[kRows];
  for (int j = 0; j < N; ++j) {
    rows_from_fragments(regs, j, op.trans, rows);
    for (int i = 0; i < kRows; ++i) static_cast<StoreOut*>(slots.out[j * kRows + i])->row = rows[i];
  }
  for (int lane = 0; lane < kWarp; ++lane) static_cast<StoreOut*>(slots.out[lane])->lane = lane;
}

template <int N>
inline void stmatrix(const Op& op, void* smem_row, const uint32_t (&r)[N], ::tejas::emu::Site site) {
  if (TEJAS_ARCH < kStmatrixMinSm * 10 || ::tejas::emu::current_arch() < kStmatrixMinSm) {
    ::tejas::emu::report(::tejas::emu::FindingKind::unsupported, smem_row, site, std::string(op.name) + " needs sm_90");
    return;
  }
  StoreIn<N> in;
  in.addr = smem_row;
  for (int j = 0; j < N; ++j) in.regs[j] = r[j];
  StoreOut out;
  ::tejas::emu::warp_collective(op.name, kFullMask, /*aligned=*/true, &in, &out, st_gather<N>, const_cast<Op*>(&op),
                                site);
  if (out.lane < 0 || out.lane >= N * kRows) return;
  // Wavefronts were counted per phase in st_gather; a faulting row store is dropped.
  if (::tejas::emu::on_store(smem_row, kRowBytes, site, ::tejas::emu::kAccessNoBankCount)) {
    std::memcpy(smem_row, out.row.bytes, kRowBytes);
  }
}

inline constexpr Op kStX1{"stmatrix.x1", 1, false}, kStX2{"stmatrix.x2", 2, false}, kStX4{"stmatrix.x4", 4, false};
inline constexpr Op kStX1T{"stmatrix.x1.trans", 1, true}, kStX2T{"stmatrix.x2.trans", 2, true},
    kStX4T{"stmatrix.x4.trans", 4, true};

}  // namespace emu_ldst
#endif  // TEJAS_EMULATION

#if TEJAS_DEVICE_PASS && TEJAS_ARCH >= 900
#  define TEJAS_STMATRIX_BODY(OP, ASM) ASM
#elif TEJAS_DEVICE_PASS
#  define TEJAS_STMATRIX_BODY(OP, ASM) ((void)r, (void)smem_row, __trap())
#elif TEJAS_EMULATION
#  define TEJAS_STMATRIX_BODY(OP, ASM) emu_ldst::stmatrix(emu_ldst::OP, smem_row, r, site)
#else
#  define TEJAS_STMATRIX_BODY(OP, ASM) ((void)r, (void)smem_row)
#endif

// stmatrix.sync.aligned.m8n8.x1.shared.b16 (sm_90)
__device__ __forceinline__ void stmatrix_x1(void* smem_row, const uint32_t (&r)[1] TEJAS_SITE_PARAM) {
  TEJAS_STMATRIX_BODY(kStX1, asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};\n"
                                          :: "r"(detail::smem_u32(smem_row)), "r"(r[0]) : "memory"));
}
// stmatrix.sync.aligned.m8n8.x2.shared.b16 (sm_90)
__device__ __forceinline__ void stmatrix_x2(void* smem_row, const uint32_t (&r)[2] TEJAS_SITE_PARAM) {
  TEJAS_STMATRIX_BODY(kStX2, asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1,%2};\n"
                                          :: "r"(detail::smem_u32(smem_row)), "r"(r[0]), "r"(r[1]) : "memory"));
}
// stmatrix.sync.aligned.m8n8.x4.shared.b16 (sm_90)
__device__ __forceinline__ void stmatrix_x4(void* smem_row, const uint32_t (&r)[4] TEJAS_SITE_PARAM) {
  TEJAS_STMATRIX_BODY(kStX4, asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};\n"
                                          :: "r"(detail::smem_u32(smem_row)), "r"(r[0]), "r"(r[1]), "r"(r[2]),
                                             "r"(r[3]) : "memory"));
}
// stmatrix.sync.aligned.m8n8.x1.trans.shared.b16 (sm_90)
__device__ __forceinline__ void stmatrix_x1_trans(void* smem_row, const uint32_t (&r)[1] TEJAS_SITE_PARAM) {
  TEJAS_STMATRIX_BODY(kStX1T, asm volatile("stmatrix.sync.aligned.m8n8.x1.trans.shared.b16 [%0], {%1};\n"
                                           :: "r"(detail::smem_u32(smem_row)), "r"(r[0]) : "memory"));
}
// stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 (sm_90)
__device__ __forceinline__ void stmatrix_x2_trans(void* smem_row, const uint32_t (&r)[2] TEJAS_SITE_PARAM) {
  TEJAS_STMATRIX_BODY(kStX2T, asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1,%2};\n"
                                           :: "r"(detail::smem_u32(smem_row)), "r"(r[0]), "r"(r[1]) : "memory"));
}
// stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 (sm_90)
__device__ __forceinline__ void stmatrix_x4_trans(void* smem_row, const uint32_t (&r)[4] TEJAS_SITE_PARAM) {
  TEJAS_STMATRIX_BODY(kStX4T, asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1,%2,%3,%4};\n"
                                           :: "r"(detail::smem_u32(smem_row)), "r"(r[0]), "r"(r[1]), "r"(r[2]),
                                              "r"(r[3]) : "memory"));
}

#undef TEJAS_STMATRIX_BODY

}  // namespace tejas::ptx
