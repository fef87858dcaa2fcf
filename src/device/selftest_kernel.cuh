// Fragment self-test: one warp runs every device-layer matrix wrapper on integer-valued inputs.
// The same kernel runs through the emulator (tests/device/test_fragments.cpp) and on a GPU
// (device_selftest_cuda in selftest.cu); both compare with `check_outputs`, whose expected values
// come from the PTX ISA's fragment layouts and a float64 matrix product.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "device/prelude.h"
#include "device/numeric/convert.h"
#include "device/ptx/ldmatrix.h"
#include "device/ptx/mma.h"
#include "device/ptx/stmatrix.h"
#include "device/smem.h"

#if TEJAS_EMULATION
#  include "emu/emu.h"
#endif

namespace tejas::dev::selftest {
inline namespace TEJAS_BUILD_NS {  // see device/prelude.h

inline constexpr int kWarp = 32;
inline constexpr int kM = 16, kN = 8;
enum MmaShape : int { kBf16, kF16, kE4m3, kE5m2, kMmaShapes };
inline constexpr int kARegs = 4, kBRegs = 2, kCRegs = 4;
// ldmatrix and stmatrix forms: x1, x2, x4, then the same with .trans.
inline constexpr int kLdForms = 6, kStForms = 6;
inline constexpr uint16_t kUnwritten = 0;  // shared-memory fill before each stmatrix form
inline constexpr int kMatrices = 4, kRows = 8, kCols = 8, kTotalRows = kMatrices * kRows;
inline constexpr int kMaxAbsInput = 4;  // |inputs| <= 4: exact in every input format

struct Params {
  const uint32_t* mma_a;   // [kMmaShapes][32][kARegs] per-lane A fragments
  const uint32_t* mma_b;   // [kMmaShapes][32][kBRegs]
  const float* mma_c;      // [kMmaShapes][32][kCRegs]
  float* mma_d;            // [kMmaShapes][32][kCRegs]
  const uint16_t* ld_src;  // [kTotalRows][kCols]: row 8j + r is row r of matrix j
  uint32_t* ld_out;        // [kLdForms][32][4]: registers beyond the form's count untouched
  uint16_t* st_out;        // [kStForms][kTotalRows][kCols]: rows the form does not write stay kUnwritten
  int run_fp8;             // sm_89+: the fp8 mma forms
  int run_stmatrix;        // sm_90+
};

// Rows live at permuted 16-byte slots so every lane's address matters.
struct Smem {
  uint16_t rows[kTotalRows][kCols];
};
__host__ __device__ constexpr int row_slot(int row) { return (row * 5 + 3) % kTotalRows; }

// Registers for stmatrix: lane l, matrix j, half h hold a distinct value.
__host__ __device__ constexpr uint16_t st_value(int lane, int j, int h) {
  return static_cast<uint16_t>(1 + (j * kWarp + lane) * 2 + h);
}

// Plain accesses with the emulator's checks in host builds.
template <class T>
__device__ __forceinline__ T ld(const T* p) {
#if TEJAS_EMULATION
  return ::tejas::emu::load(p);
#else
  return *p;
#endif
}
template <class T>
__device__ __forceinline__ void st(T* p, T v) {
#if TEJAS_EMULATION
  ::tejas::emu::store(p, v);
#else
  *p = v;
#endif
}

__device__ __forceinline__ void run_mma(int shape, float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                        const float (&c)[4]) {
  switch (shape) {
    case kBf16: ptx::mma_m16n8k16_bf16_f32(d, a, b, c); break;
    case kF16: ptx::mma_m16n8k16_f16_f32(d, a, b, c); break;
    case kE4m3: ptx::mma_m16n8k32_e4m3_f32(d, a, b, c); break;
    default: ptx::mma_m16n8k32_e5m2_f32(d, a, b, c); break;
  }
}

template <int N>
__device__ __forceinline__ void put_regs(uint32_t* out, const uint32_t (&r)[N]) {
  for (int j = 0; j < N; ++j) st(out + j, r[j]);
}

// One warp; dynamic shared memory sizeof(Smem).
__global__ void fragment_kernel(Params p) {
  const int lane = static_cast<int>(threadIdx.x);
  for (int s = 0; s < kMmaShapes; ++s) {
    if (s >= kE4m3 && !p.run_fp8) continue;
    uint32_t a[kARegs], b[kBRegs];
    float c[kCRegs], d[kCRegs];
    for (int i = 0; i < kARegs; ++i) a[i] = ld(p.mma_a + (s * kWarp + lane) * kARegs + i);
    for (int i = 0; i < kBRegs; ++i) b[i] = ld(p.mma_b + (s * kWarp + lane) * kBRegs + i);
    for (int i = 0; i < kCRegs; ++i) c[i] = ld(p.mma_c + (s * kWarp + lane) * kCRegs + i);
    run_mma(s, d, a, b, c);
    for (int i = 0; i < kCRegs; ++i) st(p.mma_d + (s * kWarp + lane) * kCRegs + i, d[i]);
  }

  Smem& sm = *dynamic_smem<Smem>();
  for (int i = lane; i < kTotalRows * kCols; i += kWarp) st(&sm.rows[row_slot(i / kCols)][i % kCols], ld(p.ld_src + i));
  __syncthreads();
  const void* my_row = sm.rows[row_slot(lane)];  // lane L: row L % 8 of matrix L / 8
  uint32_t* out = p.ld_out + lane * 4;
  constexpr int kFormStride = kWarp * 4;
  { uint32_t r[1]; ptx::ldmatrix_x1(r, my_row); put_regs(out + 0 * kFormStride, r); }
  { uint32_t r[2]; ptx::ldmatrix_x2(r, my_row); put_regs(out + 1 * kFormStride, r); }
  { uint32_t r[4]; ptx::ldmatrix_x4(r, my_row); put_regs(out + 2 * kFormStride, r); }
  { uint32_t r[1]; ptx::ldmatrix_x1_trans(r, my_row); put_regs(out + 3 * kFormStride, r); }
  { uint32_t r[2]; ptx::ldmatrix_x2_trans(r, my_row); put_regs(out + 4 * kFormStride, r); }
  { uint32_t r[4]; ptx::ldmatrix_x4_trans(r, my_row); put_regs(out + 5 * kFormStride, r); }
  if (!p.run_stmatrix) return;

  uint32_t v[kMatrices];
  for (int j = 0; j < kMatrices; ++j) v[j] = st_value(lane, j, 0) | (uint32_t{st_value(lane, j, 1)} << 16);
  void* dst = sm.rows[row_slot(lane)];
  for (int form = 0; form < kStForms; ++form) {
    __syncthreads();  // the previous readers of sm are done
    for (int i = lane; i < kTotalRows * kCols; i += kWarp) st(&sm.rows[i / kCols][i % kCols], kUnwritten);
    __syncthreads();
    switch (form) {
      case 0: { const uint32_t r[1] = {v[0]}; ptx::stmatrix_x1(dst, r); break; }
      case 1: { const uint32_t r[2] = {v[0], v[1]}; ptx::stmatrix_x2(dst, r); break; }
      case 2: ptx::stmatrix_x4(dst, v); break;
      case 3: { const uint32_t r[1] = {v[0]}; ptx::stmatrix_x1_trans(dst, r); break; }
      case 4: { const uint32_t r[2] = {v[0], v[1]}; ptx::stmatrix_x2_trans(dst, r); break; }
      default: ptx::stmatrix_x4_trans(dst, v); break;
    }
    __syncthreads();
    for (int i = lane; i < kTotalRows * kCols; i += kWarp) {
      st(p.st_out + form * kTotalRows * kCols + i, ld(&sm.rows[row_slot(i / kCols)][i % kCols]));
    }
  }
}

// ---- host side: inputs, expected values, comparison ----------------------------------------

struct Inputs {
  double a[kMmaShapes][kM][32];  // dense A (16 x K), B (K x 8), C (16 x 8); K = 16 or 32
  double b[kMmaShapes][32][kN];
  double c[kMmaShapes][kM][kN];
  std::vector<uint32_t> mma_a = std::vector<uint32_t>(kMmaShapes * kWarp * kARegs);
  std::vector<uint32_t> mma_b = std::vector<uint32_t>(kMmaShapes * kWarp * kBRegs);
  std::vector<float> mma_c = std::vector<float>(kMmaShapes * kWarp * kCRegs);
  std::vector<uint16_t> ld_src = std::vector<uint16_t>(kTotalRows * kCols);
};
struct Outputs {
  std::vector<float> mma_d = std::vector<float>(kMmaShapes * kWarp * kCRegs, NAN);
  std::vector<uint32_t> ld_out = std::vector<uint32_t>(kLdForms * kWarp * 4, 0xFFFFFFFFu);
  std::vector<uint16_t> st_out = std::vector<uint16_t>(kStForms * kTotalRows * kCols, 0xFFFF);
};

inline int mma_k(int shape) { return shape >= kE4m3 ? 32 : 16; }
inline int per_reg(int shape) { return shape >= kE4m3 ? 4 : 2; }

inline uint32_t encode_input(int shape, double v) {
  const auto f = static_cast<float>(v);
  switch (shape) {
    case kBf16: return num::f32_to_bf16(f);
    case kF16: return num::f32_to_f16(f);
    case kE4m3: return num::f32_to_e4m3(f);
    default: return num::f32_to_e5m2(f);
  }
}

// Fragment positions ("Matrix Fragments for mma.m16n8k16 / mma.m16n8k32"), E = per_reg.
inline void a_position(int shape, int lane, int i, int* row, int* col) {
  const int e = per_reg(shape), g = lane >> 2, t = lane & 3;
  *row = g + 8 * ((i / e) & 1);
  *col = e * t + i % e + (mma_k(shape) / 2) * (i >= 2 * e);
}
inline void b_position(int shape, int lane, int i, int* k, int* n) {
  const int e = per_reg(shape), g = lane >> 2, t = lane & 3;
  *k = e * t + i % e + (mma_k(shape) / 2) * (i >= e);
  *n = g;
}
inline void c_position(int lane, int i, int* row, int* col) {
  *row = (lane >> 2) + 8 * (i >= 2);
  *col = 2 * (lane & 3) + (i & 1);
}

// Integer-valued inputs from a seed (splitmix64; no dependency on the test library).
inline Inputs make_inputs(uint64_t seed) {
  Inputs in{};
  auto next = [&seed]() {
    uint64_t z = (seed += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  auto small_int = [&]() { return static_cast<double>(static_cast<int>(next() % (2 * kMaxAbsInput + 1)) - kMaxAbsInput); };
  for (int s = 0; s < kMmaShapes; ++s) {
    const int k = mma_k(s), e = per_reg(s), bits = 32 / e;
    for (int m = 0; m < kM; ++m) for (int kk = 0; kk < k; ++kk) in.a[s][m][kk] = small_int();
    for (int kk = 0; kk < k; ++kk) for (int n = 0; n < kN; ++n) in.b[s][kk][n] = small_int();
    for (int m = 0; m < kM; ++m) for (int n = 0; n < kN; ++n) in.c[s][m][n] = 8 * small_int();
    for (int lane = 0; lane < kWarp; ++lane) {
      for (int i = 0; i < kARegs * e; ++i) {
        int r, c;
        a_position(s, lane, i, &r, &c);
        in.mma_a[(s * kWarp + lane) * kARegs + i / e] |= encode_input(s, in.a[s][r][c]) << (bits * (i % e));
      }
      for (int i = 0; i < kBRegs * e; ++i) {
        int kk, n;
        b_position(s, lane, i, &kk, &n);
        in.mma_b[(s * kWarp + lane) * kBRegs + i / e] |= encode_input(s, in.b[s][kk][n]) << (bits * (i % e));
      }
      for (int i = 0; i < kCRegs; ++i) {
        int r, c;
        c_position(lane, i, &r, &c);
        in.mma_c[(s * kWarp + lane) * kCRegs + i] = static_cast<float>(in.c[s][r][c]);
      }
    }
  }
  for (int i = 0; i < kTotalRows * kCols; ++i) in.ld_src[i] = static_cast<uint16_t>(0x100 + i);  // distinct
  return in;
}

// Lists every mismatch (up to a few per part); empty when all match.
inline std::string check_outputs(const Inputs& in, const Outputs& out, bool fp8, bool stmatrix) {
  std::string report;
  int bad = 0;
  constexpr int kMaxListed = 8;
  auto note = [&](const char* what, int a, int b, double got, double want) {
    if (++bad > kMaxListed) return;
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s [%d][%d]: got %.9g want %.9g\n", what, a, b, got, want);
    report += buf;
  };
  static const char* const kMmaNames[] = {"mma bf16", "mma f16", "mma e4m3", "mma e5m2"};
  for (int s = 0; s < kMmaShapes; ++s) {
    if (s >= kE4m3 && !fp8) continue;
    for (int lane = 0; lane < kWarp; ++lane) {
      for (int i = 0; i < kCRegs; ++i) {
        int r, c;
        c_position(lane, i, &r, &c);
        double want = in.c[s][r][c];
        for (int kk = 0; kk < mma_k(s); ++kk) want += in.a[s][r][kk] * in.b[s][kk][c];
        const double got = out.mma_d[(s * kWarp + lane) * kCRegs + i];
        if (!(got == want)) note(kMmaNames[s], lane, i, got, want);
      }
    }
  }
  static const char* const kLdNames[] = {"ldmatrix.x1", "ldmatrix.x2", "ldmatrix.x4",
                                         "ldmatrix.x1.trans", "ldmatrix.x2.trans", "ldmatrix.x4.trans"};
  for (int form = 0; form < kLdForms; ++form) {
    const int num = 1 << (form % 3);
    const bool trans = form >= 3;
    for (int lane = 0; lane < kWarp; ++lane) {
      for (int j = 0; j < num; ++j) {
        uint32_t want = 0;
        for (int h = 0; h < 2; ++h) {
          // Element (row, col) of matrix j: lane l holds row l/4, cols 2(l%4)+h; .trans swaps.
          const int row = trans ? 2 * (lane % 4) + h : lane / 4;
          const int col = trans ? lane / 4 : 2 * (lane % 4) + h;
          want |= uint32_t{in.ld_src[(j * kRows + row) * kCols + col]} << (16 * h);
        }
        const uint32_t got = out.ld_out[(form * kWarp + lane) * 4 + j];
        if (got != want) note(kLdNames[form], lane, j, got, want);
      }
    }
  }
  static const char* const kStNames[] = {"stmatrix.x1", "stmatrix.x2", "stmatrix.x4",
                                         "stmatrix.x1.trans", "stmatrix.x2.trans", "stmatrix.x4.trans"};
  for (int form = 0; stmatrix && form < kStForms; ++form) {
    const int num = 1 << (form % 3);
    const bool trans = form >= 3;
    for (int j = 0; j < kMatrices; ++j) {
      for (int row = 0; row < kRows; ++row) {
        for (int col = 0; col < kCols; ++col) {
          // Stored element (row, col) of matrix j came from lane 4*row + col/2, half col%2
          // (.trans: from lane 4*col + row/2, half row%2); matrices j >= num are not written.
          const int r = trans ? col : row, c = trans ? row : col;
          const uint16_t want = j < num ? st_value(4 * r + c / 2, j, c % 2) : kUnwritten;
          const uint16_t got = out.st_out[(form * kTotalRows + j * kRows + row) * kCols + col];
          if (got != want) note(kStNames[form], j * kRows + row, col, got, want);
        }
      }
    }
  }
  if (bad > kMaxListed) report += std::to_string(bad - kMaxListed) + " more mismatches\n";
  return report;
}

}  // inline namespace TEJAS_BUILD_NS
}  // namespace tejas::dev::selftest
