// Conformance of the device layer's matrix wrappers, run through the emulator: mma (every
// shape), ldmatrix and stmatrix (every form) against the PTX ISA's fragment layouts with exact,
// integer-valued data; bank-conflict accounting; misuse (partial warp, misaligned row, missing
// architecture) reported as findings.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "device/selftest_kernel.cuh"
#include "emu/emu.h"
#include "support/seed.h"

using namespace tejas;
namespace st = tejas::dev::selftest;
using emu::FindingKind;

namespace {

struct KernelRun {
  st::Inputs in;
  st::Outputs out;
  emu::LaunchReport report;
};

KernelRun run_fragment_kernel(uint64_t seed, int arch, bool fp8, bool stmatrix) {
  KernelRun r{st::make_inputs(seed), {}, {}};
  emu::ScopedBuffer b0(r.in.mma_a.data(), r.in.mma_a.size() * 4, emu::Access::read, "mma_a");
  emu::ScopedBuffer b1(r.in.mma_b.data(), r.in.mma_b.size() * 4, emu::Access::read, "mma_b");
  emu::ScopedBuffer b2(r.in.mma_c.data(), r.in.mma_c.size() * 4, emu::Access::read, "mma_c");
  emu::ScopedBuffer b3(r.out.mma_d.data(), r.out.mma_d.size() * 4, emu::Access::write, "mma_d", false);
  emu::ScopedBuffer b4(r.in.ld_src.data(), r.in.ld_src.size() * 2, emu::Access::read, "ld_src");
  emu::ScopedBuffer b5(r.out.ld_out.data(), r.out.ld_out.size() * 4, emu::Access::write, "ld_out", false);
  emu::ScopedBuffer b6(r.out.st_out.data(), r.out.st_out.size() * 2, emu::Access::write, "st_out", false);
  st::Params p{r.in.mma_a.data(), r.in.mma_b.data(), r.in.mma_c.data(), r.out.mma_d.data(),
               r.in.ld_src.data(), r.out.ld_out.data(), r.out.st_out.data(), fp8, stmatrix};
  emu::LaunchOptions o;
  o.block = dim3(st::kWarp, 1, 1);
  o.dynamic_smem_bytes = sizeof(st::Smem);
  o.arch = arch;
  r.report = emu::launch(o, st::fragment_kernel, p);
  return r;
}

// A CuTe-style hierarchical layout: (thread, value) -> column-major offset in the operand tile,
// offset = sum of coordinate * stride over the modes (thread = (lane%4, lane/4); value split
// into its modes, first mode fastest). Written from cute/atom/mma_traits_sm80.hpp / sm89, a
// different statement of the PTX ISA tables than selftest::*_position.
struct Mode {
  int shape, stride;
};
int cute_offset(int lane, int value, Mode t0, Mode t1, std::vector<Mode> vmodes) {
  int off = (lane % t0.shape) * t0.stride + (lane / t0.shape) * t1.stride;
  for (const Mode& m : vmodes) {
    off += (value % m.shape) * m.stride;
    value /= m.shape;
  }
  return off;
}

}  // namespace

TEST(Fragments, LayoutsAgreeWithCuteTables) {
  for (int s = 0; s < st::kMmaShapes; ++s) {
    const bool fp8 = s >= st::kE4m3;
    const int e = fp8 ? 4 : 2;
    for (int lane = 0; lane < st::kWarp; ++lane) {
      for (int i = 0; i < 4 * e; ++i) {  // A: 16 x K, offset m + 16 k
        const int off = fp8 ? cute_offset(lane, i, {4, 64}, {8, 1}, {{4, 16}, {2, 8}, {2, 256}})
                            : cute_offset(lane, i, {4, 32}, {8, 1}, {{2, 16}, {2, 8}, {2, 128}});
        int row, col;
        st::a_position(s, lane, i, &row, &col);
        EXPECT_EQ(row, off % 16) << "A shape " << s << " lane " << lane << " i " << i;
        EXPECT_EQ(col, off / 16) << "A shape " << s << " lane " << lane << " i " << i;
      }
      for (int i = 0; i < 2 * e; ++i) {  // B: 8 x K (n, k), offset n + 8 k
        const int off = fp8 ? cute_offset(lane, i, {4, 32}, {8, 1}, {{4, 8}, {2, 128}})
                            : cute_offset(lane, i, {4, 16}, {8, 1}, {{2, 8}, {2, 64}});
        int k, n;
        st::b_position(s, lane, i, &k, &n);
        EXPECT_EQ(n, off % 8) << "B shape " << s << " lane " << lane << " i " << i;
        EXPECT_EQ(k, off / 8) << "B shape " << s << " lane " << lane << " i " << i;
      }
    }
  }
  for (int lane = 0; lane < st::kWarp; ++lane) {
    for (int i = 0; i < 4; ++i) {  // C: 16 x 8, offset m + 16 n
      const int off = cute_offset(lane, i, {4, 32}, {8, 1}, {{2, 16}, {2, 8}});
      int row, col;
      st::c_position(lane, i, &row, &col);
      EXPECT_EQ(row, off % 16);
      EXPECT_EQ(col, off / 16);
    }
  }
}

TEST(Fragments, EveryWrapperMatchesTheIsaLayoutsSm90) {
  TEJAS_SEEDED_TEST_RNG();
  const KernelRun r = run_fragment_kernel(rng.next(), 90, true, true);
  EXPECT_TRUE(r.report.ok()) << r.report.summary();
  EXPECT_EQ(st::check_outputs(r.in, r.out, true, true), "");
  for (const char* name : {"mma.m16n8k16.bf16.f32", "mma.m16n8k16.f16.f32", "mma.m16n8k32.e4m3.f32",
                           "mma.m16n8k32.e5m2.f32"}) {
    const auto it = r.report.counters.tensor_ops.find(name);
    ASSERT_NE(it, r.report.counters.tensor_ops.end()) << name;
    EXPECT_EQ(it->second, 1u) << name;
  }
}

TEST(Fragments, CheckerRejectsAWrongResult) {
  TEJAS_SEEDED_TEST_RNG();
  KernelRun r = run_fragment_kernel(rng.next(), 90, true, true);
  ASSERT_EQ(st::check_outputs(r.in, r.out, true, true), "");
  r.out.mma_d[5] += 1;
  r.out.ld_out[4] ^= 1;  // lane 1, register 0 of ldmatrix.x1
  r.out.st_out[st::kTotalRows * st::kCols * 5 + 3] ^= 1;
  const std::string msg = st::check_outputs(r.in, r.out, true, true);
  EXPECT_NE(msg.find("mma bf16"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ldmatrix.x1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("stmatrix.x4.trans"), std::string::npos) << msg;
}

// sm_80 has neither the fp8 mma (sm_89) nor stmatrix (sm_90): both are reported, the rest runs.
TEST(Fragments, Sm80ReportsFp8MmaAndStmatrixUnsupported) {
  TEJAS_SEEDED_TEST_RNG();
  const KernelRun r = run_fragment_kernel(rng.next(), 80, true, true);
  EXPECT_TRUE(r.report.has(FindingKind::unsupported)) << r.report.summary();
  EXPECT_EQ(st::check_outputs(r.in, r.out, /*fp8=*/false, /*stmatrix=*/false), "");
  EXPECT_TRUE(std::isnan(r.out.mma_d[st::kE4m3 * st::kWarp * st::kCRegs]));  // not a silent result
  for (const auto& f : r.report.findings) {
    if (f.kind == FindingKind::unsupported) {
      EXPECT_TRUE(f.detail.find("e4m3") != std::string::npos || f.detail.find("e5m2") != std::string::npos ||
                  f.detail.find("stmatrix") != std::string::npos)
          << f.to_string();
    }
  }
  const KernelRun clean = run_fragment_kernel(rng.next(), 80, false, false);
  EXPECT_TRUE(clean.report.ok()) << clean.report.summary();
}

// ---- bank conflicts ----------------------------------------------------------------------------
namespace {

constexpr int kTileRows = 32, kTileCols = 64;  // bf16: 128-byte rows
constexpr int kPadBytes = 16;

// One warp: fills a [32 x 64] bf16 tile (row stride `stride_bytes`) with conflict-free 4-byte
// stores, then one ldmatrix.x4 over rows 0..31 of the first 8 columns.
__global__ void ldmatrix_tile_kernel(int stride_bytes, uint32_t* out) {
  auto* base = dev::dynamic_smem<uint8_t>();
  const int lane = static_cast<int>(threadIdx.x);
  const int words = kTileRows * stride_bytes / 4;
  for (int i = lane; i < words; i += st::kWarp) st::st(reinterpret_cast<uint32_t*>(base) + i, static_cast<uint32_t>(i));
  __syncthreads();
  uint32_t r[4];
  ptx::ldmatrix_x4(r, base + lane * stride_bytes);
  for (int j = 0; j < 4; ++j) st::st(out + lane * 4 + j, r[j]);
}

emu::LaunchReport run_tile(int stride_bytes, std::vector<uint32_t>& out) {
  out.assign(st::kWarp * 4, 0xFFFFFFFFu);
  emu::ScopedBuffer b(out.data(), out.size() * 4, emu::Access::write, "out", false);
  emu::LaunchOptions o;
  o.block = dim3(st::kWarp, 1, 1);
  o.dynamic_smem_bytes = static_cast<size_t>(kTileRows * stride_bytes);
  return emu::launch(o, ldmatrix_tile_kernel, stride_bytes, out.data());
}

}  // namespace

TEST(Fragments, LdmatrixBankConflictsUnpaddedVsPadded) {
  constexpr int kUnpadded = kTileCols * 2, kPadded = kUnpadded + kPadBytes;
  constexpr int kPhases = 4, kRowsPerPhase = 8;
  std::vector<uint32_t> out;
  const emu::LaunchReport padded = run_tile(kPadded, out);
  EXPECT_TRUE(padded.ok()) << padded.summary();
  EXPECT_EQ(padded.counters.bank_conflict_wavefronts(), 0u) << padded.summary();
  // Lane l's register 0 holds row l/4 of matrix 0, columns 2(l%4), +1: word (l/4)*stride/4 + l%4.
  for (int lane = 0; lane < st::kWarp; ++lane) {
    EXPECT_EQ(out[lane * 4], static_cast<uint32_t>((lane / 4) * kPadded / 4 + lane % 4)) << lane;
  }
  const emu::LaunchReport unpadded = run_tile(kUnpadded, out);
  EXPECT_TRUE(unpadded.ok()) << unpadded.summary();
  // 128-byte rows: the 8 rows of a phase share banks, 8 wavefronts instead of 1.
  EXPECT_EQ(unpadded.counters.bank_conflict_wavefronts(), uint64_t{kPhases * (kRowsPerPhase - 1)})
      << unpadded.summary();
}

// ---- misuse --------------------------------------------------------------------------------------
namespace {

__global__ void partial_warp_mma_kernel(float* out) {
  const int lane = static_cast<int>(threadIdx.x);
  if (lane >= 16) return;  // half the warp leaves before an .aligned instruction
  const uint32_t a[4] = {}, b[2] = {};
  const float c[4] = {1, 1, 1, 1};
  float d[4] = {};
  ptx::mma_m16n8k16_bf16_f32(d, a, b, c);
  st::st(out + lane, d[0]);
}

__global__ void misaligned_ldmatrix_kernel(uint32_t* out) {
  auto* base = dev::dynamic_smem<uint8_t>();
  const int lane = static_cast<int>(threadIdx.x);
  for (int i = lane; i < 64; i += st::kWarp) st::st(reinterpret_cast<uint32_t*>(base) + i, 0u);
  __syncthreads();
  constexpr int kHalfRow = 8;  // rows must be 16-byte aligned
  uint32_t r[1];
  ptx::ldmatrix_x1(r, base + (lane % 8) * 16 + (lane == 3 ? kHalfRow : 0));
  st::st(out + lane, r[0]);
}

}  // namespace

TEST(Fragments, PartialWarpMmaIsReported) {
  std::vector<float> out(st::kWarp, 0.0f);
  emu::ScopedBuffer b(out.data(), out.size() * 4, emu::Access::write, "out", false);
  emu::LaunchOptions o;
  o.block = dim3(st::kWarp, 1, 1);
  const emu::LaunchReport rep = emu::launch(o, partial_warp_mma_kernel, out.data());
  EXPECT_TRUE(rep.has(FindingKind::partial_warp_collective)) << rep.summary();
}

TEST(Fragments, MisalignedLdmatrixRowIsReported) {
  std::vector<uint32_t> out(st::kWarp, 0);
  emu::ScopedBuffer b(out.data(), out.size() * 4, emu::Access::write, "out", false);
  emu::LaunchOptions o;
  o.block = dim3(st::kWarp, 1, 1);
  o.dynamic_smem_bytes = 256;
  const emu::LaunchReport rep = emu::launch(o, misaligned_ldmatrix_kernel, out.data());
  ASSERT_TRUE(rep.has(FindingKind::misaligned)) << rep.summary();
  for (const auto& f : rep.findings) {
    if (f.kind == FindingKind::misaligned) {
      EXPECT_EQ(f.thread.x, 3u) << f.to_string();  // the lane with the bad row
    }
  }
}
