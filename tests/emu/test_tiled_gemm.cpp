// A small tiled bf16 GEMM written like a production kernel (cp.async 16-byte double buffering,
// ldmatrix, mma.sync m16n8k16), run through the emulator end to end: exact against a float64
// product on integer inputs, coalesced global loads, and shared-memory bank conflicts that
// appear only with the deliberately unswizzled layout.
//   C[M, N] (f32) = A[M, K] (bf16, row-major) * B[N, K]^T (bf16, K-major: "TN")
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "device/numeric/convert.h"
#include "device/prelude.h"
#include "device/ptx/cp_async.h"
#include "device/ptx/ld_st.h"
#include "device/ptx/ldmatrix.h"
#include "device/ptx/mma.h"
#include "device/smem.h"
#include "emu/emu.h"
#include "support/seed.h"

using namespace tejas;

namespace {

// ---- the kernel ---------------------------------------------------------------------------------
constexpr int kBM = 64, kBN = 64, kBK = 32;  // block tile
constexpr int kThreads = 128;                 // 4 warps as 2 x 2, each a 32 x 32 warp tile
constexpr int kWarpTile = 32, kWarpsN = 2;
constexpr int kMmaM = 16, kMmaN = 8, kMmaK = 16;
constexpr int kStages = 2;
constexpr int kChunkElems = 8;                    // one 16-byte cp.async / ldmatrix row = 8 bf16
constexpr int kChunksPerRow = kBK / kChunkElems;  // 4
constexpr int kWarp = 32;

enum class SmemLayout { swizzled, padded, plain };

// Row pitch in elements; the padded layout adds one 16-byte chunk per row.
template <SmemLayout L>
constexpr int kPitch = L == SmemLayout::padded ? kBK + kChunkElems : kBK;

// Element offset of (row, chunk) in one tile. Swizzle: the 16-byte chunk index is XORed with
// (row / 2) % 4, so the 8 rows an ldmatrix phase reads (64-byte rows, two per 128 bytes) land
// on 8 distinct 16-byte bank groups.
template <SmemLayout L>
__device__ __forceinline__ int tile_offset(int row, int chunk) {
  if constexpr (L == SmemLayout::swizzled) chunk ^= (row >> 1) & (kChunksPerRow - 1);
  return row * kPitch<L> + chunk * kChunkElems;
}

template <SmemLayout L>
struct GemmSmem {
  uint16_t a[kStages][kBM * kPitch<L>];  // [stage][BM rows of BK]
  uint16_t b[kStages][kBN * kPitch<L>];  // [stage][BN rows of BK]
};

struct GemmParams {
  const uint16_t* a;  // [M, K] bf16
  const uint16_t* b;  // [N, K] bf16
  float* c;           // [M, N] f32
  int m, n, k;        // multiples of the block tile
};

// Issues the cp.async copies of k-tile `kt` into `stage`. A warp copies 8 rows x 4 chunks per
// instruction; lane l takes row l % 8, chunk l / 8, so each 8-lane shared-memory phase writes
// one chunk column of 8 rows (the pattern ldmatrix reads, conflict-free in the swizzled and
// padded layouts) while the warp still reads 8 x 64 contiguous global bytes (16 sectors).
template <SmemLayout L>
__device__ __forceinline__ void load_tile(const GemmParams& p, GemmSmem<L>& s, int stage, int kt, int m0, int n0) {
  constexpr int kRowsPerWarpCopy = 8, kWarps = kThreads / kWarp;
  const int lane = static_cast<int>(threadIdx.x) % kWarp, warp = static_cast<int>(threadIdx.x) / kWarp;
  const int chunk = lane / kRowsPerWarpCopy;
  for (int base = warp * kRowsPerWarpCopy; base < kBM; base += kWarps * kRowsPerWarpCopy) {
    const int row = base + lane % kRowsPerWarpCopy;
    const uint16_t* src = p.a + static_cast<size_t>(m0 + row) * p.k + kt * kBK + chunk * kChunkElems;
    ptx::cp_async_16(&s.a[stage][tile_offset<L>(row, chunk)], src);
  }
  for (int base = warp * kRowsPerWarpCopy; base < kBN; base += kWarps * kRowsPerWarpCopy) {
    const int row = base + lane % kRowsPerWarpCopy;
    const uint16_t* src = p.b + static_cast<size_t>(n0 + row) * p.k + kt * kBK + chunk * kChunkElems;
    ptx::cp_async_16(&s.b[stage][tile_offset<L>(row, chunk)], src);
  }
  ptx::cp_async_commit();
}

template <SmemLayout L>
__global__ void gemm_kernel(GemmParams p) {
  GemmSmem<L>& s = *dev::dynamic_smem<GemmSmem<L>>();
  const int lane = static_cast<int>(threadIdx.x) % kWarp, warp = static_cast<int>(threadIdx.x) / kWarp;
  const int m0 = static_cast<int>(blockIdx.y) * kBM, n0 = static_cast<int>(blockIdx.x) * kBN;
  const int wm = (warp / kWarpsN) * kWarpTile, wn = (warp % kWarpsN) * kWarpTile;
  constexpr int kMTiles = kWarpTile / kMmaM, kNTiles = kWarpTile / kMmaN;  // 2 x 4 mma tiles
  float acc[kMTiles][kNTiles][4] = {};

  const int k_tiles = p.k / kBK;
  load_tile<L>(p, s, 0, 0, m0, n0);
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int stage = kt % kStages;
    if (kt + 1 < k_tiles) {
      load_tile<L>(p, s, (kt + 1) % kStages, kt + 1, m0, n0);
      ptx::cp_async_wait<1>();  // tile kt has landed, kt + 1 may be in flight
    } else {
      ptx::cp_async_wait<0>();
    }
    __syncthreads();
    for (int kk = 0; kk < kBK / kMmaK; ++kk) {
      uint32_t af[kMTiles][4], bf[kNTiles][2];
      for (int mi = 0; mi < kMTiles; ++mi) {
        // x4 matrices: (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15)
        const int row = wm + mi * kMmaM + lane % 16, chunk = kk * 2 + lane / 16;
        ptx::ldmatrix_x4(af[mi], &s.a[stage][tile_offset<L>(row, chunk)]);
      }
      for (int np = 0; np < kNTiles / 2; ++np) {
        // x4 matrices: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15)
        const int row = wn + np * 16 + (lane / 16) * 8 + lane % 8, chunk = kk * 2 + (lane / 8) % 2;
        uint32_t r[4];
        ptx::ldmatrix_x4(r, &s.b[stage][tile_offset<L>(row, chunk)]);
        bf[2 * np][0] = r[0], bf[2 * np][1] = r[1], bf[2 * np + 1][0] = r[2], bf[2 * np + 1][1] = r[3];
      }
      for (int mi = 0; mi < kMTiles; ++mi) {
        for (int ni = 0; ni < kNTiles; ++ni) ptx::mma_m16n8k16_bf16_f32(acc[mi][ni], af[mi], bf[ni], acc[mi][ni]);
      }
    }
    __syncthreads();  // everyone is done with `stage` before the next iteration refills it
  }
  // Accumulator i: row g + 8 (i / 2), cols 2t, 2t + 1: one 8-byte store per row half.
  const int g = lane / 4, t = lane % 4;
  for (int mi = 0; mi < kMTiles; ++mi) {
    for (int ni = 0; ni < kNTiles; ++ni) {
      for (int h = 0; h < 2; ++h) {
        const int row = m0 + wm + mi * kMmaM + g + 8 * h, col = n0 + wn + ni * kMmaN + 2 * t;
        ptx::st_global(reinterpret_cast<float2*>(p.c + static_cast<size_t>(row) * p.n + col),
                        make_float2(acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]));
      }
    }
  }
}

// ---- the harness ----------------------------------------------------------------------------------
constexpr int kMaxAbsInput = 4;  // integer inputs: every product and sum below is exact in f32

struct Problem {
  int m, n, k;
  std::vector<uint16_t> a, b;  // bf16 codes
  std::vector<double> a_val, b_val;
};

Problem make_problem(int m, int n, int k, check::Rng& rng) {
  Problem pr{m, n, k, std::vector<uint16_t>(size_t(m) * k), std::vector<uint16_t>(size_t(n) * k),
             std::vector<double>(size_t(m) * k), std::vector<double>(size_t(n) * k)};
  for (size_t i = 0; i < pr.a.size(); ++i) {
    pr.a_val[i] = static_cast<double>(rng.randint(-kMaxAbsInput, kMaxAbsInput));
    pr.a[i] = num::f32_to_bf16(static_cast<float>(pr.a_val[i]));
  }
  for (size_t i = 0; i < pr.b.size(); ++i) {
    pr.b_val[i] = static_cast<double>(rng.randint(-kMaxAbsInput, kMaxAbsInput));
    pr.b[i] = num::f32_to_bf16(static_cast<float>(pr.b_val[i]));
  }
  return pr;
}

// Emulator allocations, like cudaMalloc: 256-byte aligned (so sector counts are the GPU's) and
// poisoned, the output included.
struct DeviceBuffer {
  explicit DeviceBuffer(size_t bytes, const char* name) : p(emu::device_malloc(bytes, name)) {}
  ~DeviceBuffer() { emu::device_free(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* p;
};

template <SmemLayout L>
emu::LaunchReport run_gemm(const Problem& pr, std::vector<float>& c) {
  DeviceBuffer a(pr.a.size() * 2, "A"), b(pr.b.size() * 2, "B"), dc(size_t(pr.m) * pr.n * 4, "C");
  emu::copy_to_device(a.p, pr.a.data(), pr.a.size() * 2);
  emu::copy_to_device(b.p, pr.b.data(), pr.b.size() * 2);
  emu::LaunchOptions o;
  o.grid = dim3(pr.n / kBN, pr.m / kBM, 1);
  o.block = dim3(kThreads, 1, 1);
  o.dynamic_smem_bytes = sizeof(GemmSmem<L>);
  const emu::LaunchReport rep = emu::launch(
      o, gemm_kernel<L>,
      GemmParams{static_cast<const uint16_t*>(a.p), static_cast<const uint16_t*>(b.p), static_cast<float*>(dc.p), pr.m, pr.n, pr.k});
  c.resize(size_t(pr.m) * pr.n);
  std::memcpy(c.data(), dc.p, c.size() * 4);
  return rep;
}

// Naive float64 product, then an exact comparison.
void expect_exact(const Problem& pr, const std::vector<float>& c) {
  int bad = 0;
  for (int i = 0; i < pr.m; ++i) {
    for (int j = 0; j < pr.n; ++j) {
      long double want = 0;
      for (int kk = 0; kk < pr.k; ++kk) want += static_cast<long double>(pr.a_val[size_t(i) * pr.k + kk]) * pr.b_val[size_t(j) * pr.k + kk];
      const float got = c[size_t(i) * pr.n + j];
      if (!(static_cast<long double>(got) == want) && ++bad <= 5) {
        ADD_FAILURE() << "C[" << i << ", " << j << "]: got " << got << " want " << static_cast<double>(want);
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

// Counts for the kernel's shape: per block, per k-tile, each warp issues 2 k-steps of
// (2 + 2) ldmatrix.x4 and 8 mma.
constexpr int kLdmatrixPerWarpKStep = 4, kMmaPerWarpKStep = 8, kPhasesPerX4 = 4;

}  // namespace

TEST(TiledGemm, SwizzledExactCoalescedConflictFree) {
  TEJAS_SEEDED_TEST_RNG();
  const Problem pr = make_problem(128, 128, 256, rng);
  std::vector<float> c;
  const emu::LaunchReport rep = run_gemm<SmemLayout::swizzled>(pr, c);
  ASSERT_TRUE(rep.ok()) << rep.summary();
  expect_exact(pr, c);
  const emu::Counters& k = rep.counters;
  // Each cp.async request: 32 lanes x 16 B = 8 rows x 64 contiguous bytes = 16 sectors, the ideal.
  constexpr double kIdealLoadSectors = kWarp * 16 / 32.0;
  EXPECT_EQ(k.sectors_per_load_request(), kIdealLoadSectors) << rep.summary();
  // Each C store request: 8 rows x 32 contiguous bytes = 8 sectors, the ideal for 256 bytes.
  constexpr double kIdealStoreSectors = kWarp * 8 / 32.0;
  EXPECT_EQ(k.sectors_per_store_request(), kIdealStoreSectors) << rep.summary();
  EXPECT_EQ(k.global_bytes_read_unique, (pr.a.size() + pr.b.size()) * 2);
  EXPECT_EQ(k.global_bytes_written_unique, c.size() * 4);
  EXPECT_EQ(k.bank_conflict_wavefronts(), 0u) << rep.summary();
  const uint64_t warp_ksteps = uint64_t{(128 / kBM) * (128 / kBN)} * (kThreads / kWarp) * (256 / kMmaK);
  ASSERT_EQ(k.tensor_ops.count("mma.m16n8k16.bf16.f32"), 1u);
  EXPECT_EQ(k.tensor_ops.at("mma.m16n8k16.bf16.f32"), warp_ksteps * kMmaPerWarpKStep);
}

TEST(TiledGemm, PaddedLayoutAlsoConflictFree) {
  TEJAS_SEEDED_TEST_RNG();
  const Problem pr = make_problem(64, 64, 128, rng);
  std::vector<float> c;
  const emu::LaunchReport rep = run_gemm<SmemLayout::padded>(pr, c);
  ASSERT_TRUE(rep.ok()) << rep.summary();
  expect_exact(pr, c);
  EXPECT_EQ(rep.counters.bank_conflict_wavefronts(), 0u) << rep.summary();
}

// 64-byte rows without a swizzle: an ldmatrix phase's 8 rows hit only 2 distinct 16-byte bank
// groups, 4 wavefronts instead of 1 (3 extra per phase, 12 per ldmatrix.x4). The cp.async
// copies write the same pattern (8 lanes a phase, one chunk column of 8 rows): 3 extra per
// phase, 4 phases per copy. Still exact.
TEST(TiledGemm, PlainLayoutShowsBankConflicts) {
  TEJAS_SEEDED_TEST_RNG();
  const Problem pr = make_problem(64, 64, 128, rng);
  std::vector<float> c;
  const emu::LaunchReport rep = run_gemm<SmemLayout::plain>(pr, c);
  ASSERT_TRUE(rep.ok()) << rep.summary();
  expect_exact(pr, c);
  constexpr uint64_t kExtraPerPhase = 3;
  const uint64_t warp_ksteps = uint64_t{kThreads / kWarp} * (128 / kMmaK);
  const uint64_t ldmatrix_extra = warp_ksteps * kLdmatrixPerWarpKStep * kPhasesPerX4 * kExtraPerPhase;
  // Per k-tile each warp copies (BM + BN) / (4 warps x 8 rows) = 4 times, 4 phases each.
  constexpr uint64_t kCopiesPerWarpKTile = (kBM + kBN) / (kThreads / kWarp * 8), kPhasesPerCopy = 4;
  const uint64_t cp_async_extra =
      uint64_t{kThreads / kWarp} * (128 / kBK) * kCopiesPerWarpKTile * kPhasesPerCopy * kExtraPerPhase;
  EXPECT_EQ(rep.counters.bank_conflict_wavefronts(), ldmatrix_extra + cp_async_extra) << rep.summary();
}
