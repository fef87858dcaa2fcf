// Warp-level matrix multiply-accumulate (mma.sync), one wrapper per instruction form.
//   D[16x8] = A[16xK] * B[Kx8] + C[16x8], f32 accumulators, A row-major, B column-major.
// Fragments are register arrays in the PTX ISA's order ("Matrix Fragments for mma.m16n8k16 /
// mma.m16n8k32"), with g = lane >> 2, t = lane & 3, E elements per 32-bit register (2 for
// bf16/f16, 4 for fp8), K = 8 * E, elements packed low bits first:
//   A element i (0 .. 4E-1): row g + 8 * ((i / E) & 1), col E*t + i % E + (K/2) * (i >= 2E)
//   B element i (0 .. 2E-1): k   E*t + i % E + (K/2) * (i >= E), n g
//   C/D element i (0 .. 3):  row g + 8 * (i >= 2),       col 2t + (i & 1)
// Emulated semantics: products of the narrow inputs are exact; each output element is
// c + sum_k a*b accumulated in double and rounded once to f32 (hardware accumulates with less
// precision in an unspecified order; integer-valued inputs give identical results).
// Architectures: m16n8k16 bf16/f16 sm_80+; m16n8k32 e4m3/e5m2 sm_89+. On an older target the
// device body traps and the emulator reports FindingKind::unsupported (outputs become NaN).
#pragma once
#include <cstdint>

#include "device/prelude.h"

#if TEJAS_EMULATION
#  include <cmath>
#  include <limits>
#  include <memory>
#  include <string>

#  include "device/numeric/convert.h"
#  include "emu/emu.h"
#endif

#ifndef TEJAS_SITE_PARAM
#  if TEJAS_EMULATION
// Emulation builds record the call site of every wrapper for findings.
#    define TEJAS_SITE_PARAM , ::tejas::emu::Site site = ::tejas::emu::Site::here()
#  else
#    define TEJAS_SITE_PARAM
#  endif
#endif

namespace tejas::ptx {

#if TEJAS_EMULATION
namespace emu_mma {

enum class Elem : uint8_t { bf16, f16, e4m3, e5m2 };

inline constexpr int kM = 16, kN = 8, kMaxK = 32;
inline constexpr int kWarp = 32;
inline constexpr uint32_t kFullMask = 0xFFFFFFFFu;

struct Shape {
  Elem elem;
  int per_reg;  // E: elements per 32-bit register
  int k;        // K = 8 * E
  int min_sm;   // 80, 89
  const char* name;
};

struct In {
  uint32_t a[4];
  uint32_t b[2];
  float c[4];
};
struct Out {
  float d[4];
};

inline double element(Elem e, uint32_t reg, int idx) {
  switch (e) {
    case Elem::bf16: return num::bf16_to_f32(static_cast<uint16_t>(reg >> (16 * idx)));
    case Elem::f16: return num::f16_to_f32(static_cast<uint16_t>(reg >> (16 * idx)));
    case Elem::e4m3: return num::e4m3_to_f32(static_cast<uint8_t>(reg >> (8 * idx)));
    case Elem::e5m2: return num::e5m2_to_f32(static_cast<uint8_t>(reg >> (8 * idx)));
  }
  return 0;
}

// Computes D for the whole warp from the lanes' fragments (runs once, on the last arriver).
inline void compute(::tejas::emu::WarpSlots& slots, void* user) {
  const Shape& s = *static_cast<const Shape*>(user);
  const int e = s.per_reg, k_half = s.k / 2;
  // Dense operands, heap-allocated to keep fiber stacks small.
  struct Dense {
    double a[kM][kMaxK] = {}, b[kMaxK][kN] = {}, c[kM][kN] = {};
  };
  const auto dense = std::make_unique<Dense>();
  auto& a = dense->a;
  auto& b = dense->b;
  auto& c = dense->c;
  for (int lane = 0; lane < kWarp; ++lane) {
    const In& in = *static_cast<const In*>(slots.in[lane]);
    const int g = lane >> 2, t = lane & 3;
    for (int i = 0; i < 4 * e; ++i) {
      a[g + 8 * ((i / e) & 1)][e * t + i % e + k_half * (i >= 2 * e)] = element(s.elem, in.a[i / e], i % e);
    }
    for (int i = 0; i < 2 * e; ++i) b[e * t + i % e + k_half * (i >= e)][g] = element(s.elem, in.b[i / e], i % e);
    for (int i = 0; i < 4; ++i) c[g + 8 * (i >= 2)][2 * t + (i & 1)] = in.c[i];
  }
  for (int lane = 0; lane < kWarp; ++lane) {
    Out& out = *static_cast<Out*>(slots.out[lane]);
    const int g = lane >> 2, t = lane & 3;
    for (int i = 0; i < 4; ++i) {
      const int m = g + 8 * (i >= 2), n = 2 * t + (i & 1);
      double acc = c[m][n];
      for (int kk = 0; kk < s.k; ++kk) acc += a[m][kk] * b[kk][n];
      out.d[i] = static_cast<float>(acc);
    }
  }
  ::tejas::emu::count_tensor_op(s.name);
}

inline void run(const Shape& s, float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4],
                ::tejas::emu::Site site) {
  constexpr int kArchScale = 10;  // TEJAS_ARCH is 900-style, emu::current_arch() 90-style
  if (TEJAS_ARCH < s.min_sm * kArchScale || ::tejas::emu::current_arch() < s.min_sm) {
    ::tejas::emu::report(::tejas::emu::FindingKind::unsupported, nullptr, site,
                         std::string(s.name) + " needs sm_" + std::to_string(s.min_sm));
    for (float& x : d) x = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  In in;
  for (int i = 0; i < 4; ++i) in.a[i] = a[i], in.c[i] = c[i];
  for (int i = 0; i < 2; ++i) in.b[i] = b[i];
  Out out;
  for (float& x : out.d) x = std::numeric_limits<float>::quiet_NaN();  // kept if the rendezvous fails
  ::tejas::emu::warp_collective(s.name, kFullMask, /*aligned=*/true, &in, &out, compute,
                                const_cast<Shape*>(&s), site);
  for (int i = 0; i < 4; ++i) d[i] = out.d[i];
}

inline constexpr Shape kBf16{Elem::bf16, 2, 16, 80, "mma.m16n8k16.bf16.f32"};
inline constexpr Shape kF16{Elem::f16, 2, 16, 80, "mma.m16n8k16.f16.f32"};
inline constexpr Shape kE4m3{Elem::e4m3, 4, 32, 89, "mma.m16n8k32.e4m3.f32"};
inline constexpr Shape kE5m2{Elem::e5m2, 4, 32, 89, "mma.m16n8k32.e5m2.f32"};

}  // namespace emu_mma
#endif  // TEJAS_EMULATION

// The four mma forms share operand lists; only the instruction string and arch floor differ.
#define TEJAS_MMA_ASM(INSTR)                                                                    \
  asm volatile(INSTR " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"              \
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])                                 \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]),   \
                 "f"(c[1]), "f"(c[2]), "f"(c[3]))

// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 (sm_80)
__device__ __forceinline__ void mma_m16n8k16_bf16_f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                                      const float (&c)[4] TEJAS_SITE_PARAM) {
#if TEJAS_DEVICE_PASS && TEJAS_ARCH >= 800
  TEJAS_MMA_ASM("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32");
#elif TEJAS_DEVICE_PASS
  (void)d, (void)a, (void)b, (void)c;
  __trap();
#elif TEJAS_EMULATION
  emu_mma::run(emu_mma::kBf16, d, a, b, c, site);
#else
  (void)d, (void)a, (void)b, (void)c;  // nvcc host pass: never executed
#endif
}

// mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 (sm_80)
__device__ __forceinline__ void mma_m16n8k16_f16_f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                                     const float (&c)[4] TEJAS_SITE_PARAM) {
#if TEJAS_DEVICE_PASS && TEJAS_ARCH >= 800
  TEJAS_MMA_ASM("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32");
#elif TEJAS_DEVICE_PASS
  (void)d, (void)a, (void)b, (void)c;
  __trap();
#elif TEJAS_EMULATION
  emu_mma::run(emu_mma::kF16, d, a, b, c, site);
#else
  (void)d, (void)a, (void)b, (void)c;
#endif
}

// mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 (sm_89)
__device__ __forceinline__ void mma_m16n8k32_e4m3_f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                                      const float (&c)[4] TEJAS_SITE_PARAM) {
#if TEJAS_DEVICE_PASS && TEJAS_ARCH >= 890
  TEJAS_MMA_ASM("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32");
#elif TEJAS_DEVICE_PASS
  (void)d, (void)a, (void)b, (void)c;
  __trap();
#elif TEJAS_EMULATION
  emu_mma::run(emu_mma::kE4m3, d, a, b, c, site);
#else
  (void)d, (void)a, (void)b, (void)c;
#endif
}

// mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32 (sm_89)
__device__ __forceinline__ void mma_m16n8k32_e5m2_f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                                      const float (&c)[4] TEJAS_SITE_PARAM) {
#if TEJAS_DEVICE_PASS && TEJAS_ARCH >= 890
  TEJAS_MMA_ASM("mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32");
#elif TEJAS_DEVICE_PASS
  (void)d, (void)a, (void)b, (void)c;
  __trap();
#elif TEJAS_EMULATION
  emu_mma::run(emu_mma::kE5m2, d, a, b, c, site);
#else
  (void)d, (void)a, (void)b, (void)c;
#endif
}

#undef TEJAS_MMA_ASM

}  // namespace tejas::ptx
