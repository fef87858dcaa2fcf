// Warp-level 8x8 b16 matrix loads from shared memory (ldmatrix, sm_75+).
//   ldmatrix_xN(r, smem_row): N = 1, 2, 4 matrices. Lanes 8j .. 8j+7 give the 16-byte-aligned
//   addresses of rows 0..7 of matrix j (other lanes' addresses are ignored). Matrix j lands in
//   r[j]: lane l receives row l/4, elements 2(l%4) and 2(l%4)+1 (low half first).
//   _trans: lane l receives elements (2(l%4), l/4) and (2(l%4)+1, l/4): the transpose.
// Emulation: one rendezvous hands each lane its lane index and counts one shared-memory phase
// per matrix (8 rows of 16 bytes); the address lanes then load their row through emu::on_load
// (bounds, alignment, poison, races, pending cp.async attributed to the lane that supplies the
// address, after every lane has reached the instruction; a faulting row reads as 0xFF poison);
// a second rendezvous distributes.
#pragma once
#include <cstdint>

#include "device/prelude.h"

#if TEJAS_EMULATION
#  include <cstring>

#  include "emu/emu.h"
#endif

#ifndef TEJAS_SITE_PARAM
#  if TEJAS_EMULATION
#    define TEJAS_SITE_PARAM , ::tejas::emu::Site site = ::tejas::emu::Site::here()
#  else
#    define TEJAS_SITE_PARAM
#  endif
#endif

namespace tejas::ptx {

#if TEJAS_EMULATION
// Shared by ldmatrix and stmatrix (same address table, opposite direction).
namespace emu_ldst {

inline constexpr int kWarp = 32;
inline constexpr uint32_t kFullMask = 0xFFFFFFFFu;
inline constexpr int kRows = 8;        // rows per 8x8 matrix
inline constexpr int kRowBytes = 16;   // 8 b16 elements
inline constexpr int kHalfBytes = 2;
inline constexpr uint32_t kPoisonRegister = 0xFFFFFFFFu;  // NaN in every 16-bit float format

struct Op {
  const char* name;
  int num;     // matrices: 1, 2, 4
  bool trans;
};

struct Row {
  uint8_t bytes[kRowBytes];
};

// Lane l of matrix j's fragment register, from the matrix's 8 rows (row-major in memory).
inline uint32_t fragment_from_rows(const Row* rows, int lane, bool trans) {
  uint16_t half[2];
  for (int h = 0; h < 2; ++h) {
    const int r = trans ? 2 * (lane & 3) + h : lane >> 2;
    const int c = trans ? lane >> 2 : 2 * (lane & 3) + h;
    std::memcpy(&half[h], rows[r].bytes + c * kHalfBytes, kHalfBytes);
  }
  return static_cast<uint32_t>(half[0]) | (static_cast<uint32_t>(half[1]) << 16);
}

// Inverse of fragment_from_rows: the 8 rows of one matrix from every lane's register j.
inline void rows_from_fragments(const uint32_t* regs_of_lane[kWarp], int j, bool trans, Row* rows) {
  for (int lane = 0; lane < kWarp; ++lane) {
    const uint32_t v = regs_of_lane[lane][j];
    for (int h = 0; h < 2; ++h) {
      const int r = trans ? 2 * (lane & 3) + h : lane >> 2;
      const int c = trans ? lane >> 2 : 2 * (lane & 3) + h;
      const auto half = static_cast<uint16_t>(v >> (16 * h));
      std::memcpy(rows[r].bytes + c * kHalfBytes, &half, kHalfBytes);
    }
  }
}

// One shared-memory phase (wavefront accounting) per matrix, from the address lanes.
inline void count_phases(int num, const void* const* addr_of_lane) {
  for (int j = 0; j < num; ++j) {
    uintptr_t rows[kRows];
    for (int i = 0; i < kRows; ++i) rows[i] = reinterpret_cast<uintptr_t>(addr_of_lane[j * kRows + i]);
    ::tejas::emu::count_shared_phase(rows, kRows, kRowBytes);
  }
}

// ---- ldmatrix ----
struct LoadTicket {
  int lane = -1;  // stays -1 when the rendezvous failed (reported by the emulator)
};

inline void ld_assign(::tejas::emu::WarpSlots& slots, void* user) {
  const Op& op = *static_cast<const Op*>(user);
  const void* addr[kWarp];
  for (int lane = 0; lane < kWarp; ++lane) {
    addr[lane] = *static_cast<const void* const*>(slots.in[lane]);
    static_cast<LoadTicket*>(slots.out[lane])->lane = lane;
  }
  count_phases(op.num, addr);
}

inline void ld_distribute(::tejas::emu::WarpSlots& slots, void* user) {
  const Op& op = *static_cast<const Op*>(user);
  Row rows[4 * kRows];  // rows[8j + i]: row i of matrix j
  for (int l = 0; l < op.num * kRows; ++l) rows[l] = *static_cast<const Row*>(slots.in[l]);
  for (int lane = 0; lane < kWarp; ++lane) {
    auto* out = static_cast<uint32_t*>(slots.out[lane]);
    for (int j = 0; j < op.num; ++j) out[j] = fragment_from_rows(rows + j * kRows, lane, op.trans);
  }
}

template <int N>
inline void ldmatrix(const Op& op, uint32_t (&r)[N], const void* smem_row, ::tejas::emu::Site site) {
  LoadTicket ticket;
  ::tejas::emu::warp_collective(op.name, kFullMask, /*aligned=*/true, &smem_row, &ticket, ld_assign,
                                const_cast<Op*>(&op), site);
  if (ticket.lane < 0) {  // reported by the emulator; the registers read as poison
    for (uint32_t& x : r) x = kPoisonRegister;
    return;
  }
  Row row{};
  if (ticket.lane < N * kRows) {
    // Wavefronts were counted per phase above, so the row load is not counted again.
    if (::tejas::emu::on_load(smem_row, kRowBytes, site, ::tejas::emu::kAccessNoBankCount)) {
      std::memcpy(row.bytes, smem_row, kRowBytes);
    } else {
      std::memset(row.bytes, ::tejas::emu::kPoisonByte, kRowBytes);  // faulted: poison, like emu::load
    }
  }
  uint32_t out[N];
  for (uint32_t& x : out) x = kPoisonRegister;  // what a lane gets when the rendezvous fails
  ::tejas::emu::warp_collective(op.name, kFullMask, /*aligned=*/true, &row, out, ld_distribute,
                                const_cast<Op*>(&op), site);
  for (int j = 0; j < N; ++j) r[j] = out[j];
}

inline constexpr Op kLdX1{"ldmatrix.x1", 1, false}, kLdX2{"ldmatrix.x2", 2, false}, kLdX4{"ldmatrix.x4", 4, false};
inline constexpr Op kLdX1T{"ldmatrix.x1.trans", 1, true}, kLdX2T{"ldmatrix.x2.trans", 2, true},
    kLdX4T{"ldmatrix.x4.trans", 4, true};

}  // namespace emu_ldst
#endif  // TEJAS_EMULATION

#if TEJAS_DEVICE_PASS
namespace detail {
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
}  // namespace detail
#endif

// Bodies: PTX in the device pass, the emulator in host builds, nothing in nvcc's host pass.
#if TEJAS_DEVICE_PASS
#  define TEJAS_LDMATRIX_BODY(OP, ASM) ASM
#elif TEJAS_EMULATION
#  define TEJAS_LDMATRIX_BODY(OP, ASM) emu_ldst::ldmatrix(emu_ldst::OP, r, smem_row, site)
#else
#  define TEJAS_LDMATRIX_BODY(OP, ASM) ((void)r, (void)smem_row)
#endif

// ldmatrix.sync.aligned.m8n8.x1.shared.b16 (sm_75)
__device__ __forceinline__ void ldmatrix_x1(uint32_t (&r)[1], const void* smem_row TEJAS_SITE_PARAM) {
  TEJAS_LDMATRIX_BODY(kLdX1, asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n"
                                          : "=r"(r[0]) : "r"(detail::smem_u32(smem_row))));
}
// ldmatrix.sync.aligned.m8n8.x2.shared.b16 (sm_75)
__device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], const void* smem_row TEJAS_SITE_PARAM) {
  TEJAS_LDMATRIX_BODY(kLdX2, asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
                                          : "=r"(r[0]), "=r"(r[1]) : "r"(detail::smem_u32(smem_row))));
}
// ldmatrix.sync.aligned.m8n8.x4.shared.b16 (sm_75)
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* smem_row TEJAS_SITE_PARAM) {
  TEJAS_LDMATRIX_BODY(kLdX4, asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                                          : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                                          : "r"(detail::smem_u32(smem_row))));
}
// ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 (sm_75)
__device__ __forceinline__ void ldmatrix_x1_trans(uint32_t (&r)[1], const void* smem_row TEJAS_SITE_PARAM) {
  TEJAS_LDMATRIX_BODY(kLdX1T, asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
                                           : "=r"(r[0]) : "r"(detail::smem_u32(smem_row))));
}
// ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 (sm_75)
__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t (&r)[2], const void* smem_row TEJAS_SITE_PARAM) {
  TEJAS_LDMATRIX_BODY(kLdX2T, asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                                           : "=r"(r[0]), "=r"(r[1]) : "r"(detail::smem_u32(smem_row))));
}
// ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 (sm_75)
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* smem_row TEJAS_SITE_PARAM) {
  TEJAS_LDMATRIX_BODY(kLdX4T, asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                                           : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                                           : "r"(detail::smem_u32(smem_row))));
}

#undef TEJAS_LDMATRIX_BODY

}  // namespace tejas::ptx
