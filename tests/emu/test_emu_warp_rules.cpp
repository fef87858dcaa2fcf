// PTX rules the emulator follows where an easy model would differ from a GPU: collectives wait
// only for non-exited lanes, shuffles use the low 5 bits of their lane operand, float -> integer
// conversions saturate, and (sm_70+) lanes may reach __syncwarp / shuffles from different call
// sites. Expected values are the PTX ISA's definitions, written out as plain loops here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "device/prelude.h"
#include "device/ptx/ld_st.h"
#include "emu_test_util.h"
#include "support/seed.h"

using namespace tejas::dev;
using tejas::emu::FindingKind;
using tejas::emu::testing::DevBuf;
using tejas::emu::testing::findings_of;
using tejas::ptx::ld_global;
using tejas::ptx::ld_shared;
using tejas::ptx::st_global;
using tejas::ptx::st_shared;
namespace emu = tejas::emu;

namespace {

constexpr int kWarp = 32;
constexpr unsigned kFull = 0xffffffffu;
constexpr uint64_t kSeeds = 6;  // every behaviour below must hold under each of these schedules

// ---- 1. collectives over mask & ~exited ---------------------------------------------------------
constexpr int kExitOuts = 8;
constexpr int kPredModulus = 5;

__global__ void after_early_exit(const int* in, int* out, int alive) {
  const int lane = threadIdx.x % kWarp;
  if (lane >= alive) return;  // these lanes exit before (or while) the others reach the collectives
  const int v = ld_global(in + threadIdx.x);
  const int members = min(alive, static_cast<int>(blockDim.x - (threadIdx.x - lane)));  // alive and existing
  int* o = out + threadIdx.x * kExitOuts;
  st_global(o + 0, static_cast<int>(__ballot_sync(kFull, v & 1)));
  st_global(o + 1, __all_sync(kFull, v % kPredModulus != 0));
  st_global(o + 2, __any_sync(kFull, v % kPredModulus == 0));
  st_global(o + 3, __reduce_add_sync(kFull, v));
  st_global(o + 4, __reduce_min_sync(kFull, v - 50));  // signed
  st_global(o + 5, static_cast<int>(__match_any_sync(kFull, v & 3)));
  __syncwarp();
  st_global(o + 6, __shfl_sync(kFull, v, (lane + 1) % members));
  st_global(o + 7, static_cast<int>(__reduce_max_sync(kFull, static_cast<unsigned>(v))));
}

TEST(EmuWarpRules, CollectivesComputeOverLanesThatHaveNotExited) {
  TEJAS_SEEDED_TEST_RNG();
  struct Shape {
    int threads, alive;
  };
  // 48 threads: the second warp's lanes 16..31 do not exist, which counts as exited.
  for (const Shape sh : {Shape{64, 16}, Shape{48, 32}, Shape{32, 1}, Shape{64, 27}}) {
    std::vector<int> in(sh.threads);
    for (int& x : in) x = static_cast<int>(rng.randint(0, 100));
    DevBuf<int> din(in.size(), "in"), dout(in.size() * kExitOuts, "out");
    din.upload(in);
    for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
      SCOPED_TRACE("threads " + std::to_string(sh.threads) + " alive " + std::to_string(sh.alive) + " seed " +
                   std::to_string(seed));
      emu::LaunchOptions o;
      o.block = dim3(sh.threads);
      o.seed = seed;
      auto r = emu::launch(o, after_early_exit, din.get(), dout.get(), sh.alive);
      ASSERT_TRUE(r.ok()) << r.summary();
      const auto out = dout.download();
      for (int t = 0; t < sh.threads; ++t) {
        const int base = t - t % kWarp, lane = t % kWarp;
        if (lane >= sh.alive) continue;
        // The lanes that take part: alive and existing.
        std::vector<int> members;
        for (int l = 0; l < sh.alive && base + l < sh.threads; ++l) members.push_back(l);
        unsigned ballot = 0, match = 0, umax = 0;
        int all = 1, any = 0, sum = 0, smin = std::numeric_limits<int>::max();
        for (int l : members) {
          const int v = in[base + l];
          if (v & 1) ballot |= 1u << l;
          if ((v & 3) == (in[t] & 3)) match |= 1u << l;
          all = all && v % kPredModulus != 0;
          any = any || v % kPredModulus == 0;
          sum += v;
          smin = std::min(smin, v - 50);
          umax = std::max(umax, static_cast<unsigned>(v));
        }
        const int* o = out.data() + t * kExitOuts;
        EXPECT_EQ(static_cast<unsigned>(o[0]), ballot) << "thread " << t;
        EXPECT_EQ(o[1], all) << "thread " << t;
        EXPECT_EQ(o[2], any) << "thread " << t;
        EXPECT_EQ(o[3], sum) << "thread " << t;
        EXPECT_EQ(o[4], smin) << "thread " << t;
        EXPECT_EQ(static_cast<unsigned>(o[5]), match) << "thread " << t;
        EXPECT_EQ(o[6], in[base + (lane + 1) % static_cast<int>(members.size())]) << "thread " << t;
        EXPECT_EQ(static_cast<unsigned>(o[7]), umax) << "thread " << t;
      }
    }
  }
}

// An .aligned instruction (mma, ldmatrix, stmatrix) still needs every lane of the warp.
__global__ void aligned_after_exit(int* out, int fix) {
  if (!fix && threadIdx.x % kWarp >= 16) return;
  static int dummy_in = 0;
  int o = 0;
  emu::warp_collective("mma.test", kFull, true, &dummy_in, &o, [](emu::WarpSlots&, void*) {}, nullptr,
                       emu::Site::here());
  st_global(out + threadIdx.x, 1);
}

TEST(EmuWarpRules, AlignedInstructionAfterAnExitIsStillReported) {
  DevBuf<int> out(kWarp);
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    emu::LaunchOptions o;
    o.block = dim3(kWarp);
    o.seed = seed;
    auto r = emu::launch(o, aligned_after_exit, out.get(), 0);
    EXPECT_TRUE(r.has(FindingKind::partial_warp_collective)) << "seed " << seed << "\n" << r.summary();
    auto clean = emu::launch(o, aligned_after_exit, out.get(), 1);
    EXPECT_TRUE(clean.ok()) << clean.summary();
  }
}

// ---- 2. shuffle operands: only b[4:0] counts ------------------------------------------------------
enum Mode { kIdx, kUp, kDown, kBfly, kNumModes };
constexpr int kWidths[] = {32, 16, 8};
constexpr int kNumWidths = 3;

__global__ void shuffle_operands(const int* in, const int* args, int* out) {
  const int t = threadIdx.x;
  const int v = ld_global(in + t), b = ld_global(args + t);
  int* o = out + t * kNumModes * kNumWidths;
  for (int w = 0; w < kNumWidths; ++w) {
    const int width = kWidths[w];
    st_global(o + kIdx * kNumWidths + w, __shfl_sync(kFull, v, b, width));
    st_global(o + kUp * kNumWidths + w, __shfl_up_sync(kFull, v, static_cast<unsigned>(b), width));
    st_global(o + kDown * kNumWidths + w, __shfl_down_sync(kFull, v, static_cast<unsigned>(b), width));
    st_global(o + kBfly * kNumWidths + w, __shfl_xor_sync(kFull, v, b, width));
  }
}

// PTX ISA shfl.sync, with the c operand CUDA passes for `width`: segmask = 32 - width, and
// cval = 0 for .up, 31 otherwise.
int ptx_shfl_source(int mode, int lane, int b, int width) {
  constexpr int k5 = 0x1f;
  const int bval = b & k5, segmask = (kWarp - width) & k5, cval = mode == kUp ? 0 : k5;
  const int max_lane = (lane & segmask) | (cval & ~segmask & k5);
  const int min_lane = lane & segmask;
  int j = lane;
  bool p = false;
  switch (mode) {
    case kUp: j = lane - bval; p = j >= max_lane; break;
    case kDown: j = lane + bval; p = j <= max_lane; break;
    case kBfly: j = lane ^ bval; p = j <= max_lane; break;
    default: j = min_lane | (bval & ~segmask & k5); p = j <= max_lane; break;
  }
  return p ? j : lane;
}

TEST(EmuWarpRules, ShuffleOperandsUseTheirLowFiveBits) {
  TEJAS_SEEDED_TEST_RNG();
  std::vector<int> in(kWarp), args(kWarp);
  for (int& x : in) x = static_cast<int>(rng.randint(-1000000, 1000000));
  // Operands past 31 (and negative ones) are where a model without & 31 differs.
  for (int& a : args) a = static_cast<int>(rng.randint(-200, 200));
  args[0] = 33;
  args[1] = 37;
  args[2] = -31;
  DevBuf<int> din(kWarp, "in"), dargs(kWarp, "args"), dout(kWarp * kNumModes * kNumWidths, "out");
  din.upload(in);
  dargs.upload(args);
  auto r = emu::launch(shuffle_operands, dim3(1), dim3(kWarp), 0, din.get(), dargs.get(), dout.get());
  ASSERT_TRUE(r.ok()) << r.summary();
  const auto out = dout.download();
  for (int lane = 0; lane < kWarp; ++lane) {
    for (int m = 0; m < kNumModes; ++m) {
      for (int w = 0; w < kNumWidths; ++w) {
        const int src = ptx_shfl_source(m, lane, args[lane], kWidths[w]);
        EXPECT_EQ(out[(lane * kNumModes + m) * kNumWidths + w], in[src])
            << "lane " << lane << " mode " << m << " width " << kWidths[w] << " operand " << args[lane];
      }
    }
  }
}

// ---- 3. float -> integer conversions saturate ---------------------------------------------------
TEST(EmuWarpRules, FloatToIntegerConversionsSaturate) {
  constexpr int kIntMax = std::numeric_limits<int>::max(), kIntMin = std::numeric_limits<int>::min();
  constexpr unsigned kUintMax = std::numeric_limits<unsigned>::max();
  constexpr long long kLlMax = std::numeric_limits<long long>::max(), kLlMin = std::numeric_limits<long long>::min();
  constexpr unsigned long long kUllMax = std::numeric_limits<unsigned long long>::max();
  const float inf = INFINITY;
  // NaN -> 0 in every form.
  EXPECT_EQ(__float2int_rn(NAN), 0);
  EXPECT_EQ(__float2int_rz(NAN), 0);
  EXPECT_EQ(__float2uint_rd(NAN), 0u);
  EXPECT_EQ(__float2ll_ru(NAN), 0);
  EXPECT_EQ(__double2int_rn(std::nan("")), 0);
  EXPECT_EQ(__double2ull_rz(std::nan("")), 0u);
  // Out of range -> the type's limits.
  EXPECT_EQ(__float2int_rn(3.0e9f), kIntMax);
  EXPECT_EQ(__float2int_rz(-3.0e9f), kIntMin);
  EXPECT_EQ(__float2int_rd(inf), kIntMax);
  EXPECT_EQ(__float2int_ru(-inf), kIntMin);
  EXPECT_EQ(__float2int_rn(2147483648.0f), kIntMax);   // 2^31: one past the top
  EXPECT_EQ(__float2int_rn(-2147483648.0f), kIntMin);  // -2^31 itself is representable
  EXPECT_EQ(__float2uint_rn(5.0e9f), kUintMax);
  EXPECT_EQ(__float2uint_rz(-5.0f), 0u);
  EXPECT_EQ(__float2uint_rn(-0.4f), 0u);
  EXPECT_EQ(__float2uint_ru(-0.5f), 0u);
  EXPECT_EQ(__float2ll_rn(1.0e19f), kLlMax);
  EXPECT_EQ(__float2ll_rn(-1.0e19f), kLlMin);
  EXPECT_EQ(__float2ull_rn(2.0e19f), kUllMax);
  EXPECT_EQ(__double2int_rz(1.0e10), kIntMax);
  EXPECT_EQ(__double2uint_rn(-1.0e10), 0u);
  EXPECT_EQ(__double2ll_rd(-1.0e300), kLlMin);
  // In range: the four roundings.
  EXPECT_EQ(__float2int_rn(2.5f), 2);  // ties to even
  EXPECT_EQ(__float2int_rn(3.5f), 4);
  EXPECT_EQ(__float2int_rz(-2.7f), -2);
  EXPECT_EQ(__float2int_rd(-2.2f), -3);
  EXPECT_EQ(__float2int_ru(-2.7f), -2);
  EXPECT_EQ(__float2uint_ru(4.1f), 5u);
  EXPECT_EQ(__float2uint_rn(4294967040.0f), 4294967040u);  // the largest float below 2^32
  EXPECT_EQ(__double2int_rn(-2147483648.4), kIntMin);
  EXPECT_EQ(__double2ll_rn(9007199254740993.0), 9007199254740992LL);
  EXPECT_EQ(__half2int_rn(__float2half(-7.5f)), -8);
}

// ---- 8. sm_70+: __syncwarp and shuffles from different call sites -------------------------------
__global__ void split_sites(int* out, int) {
  int* s = dynamic_smem<int>();
  const int lane = threadIdx.x % kWarp;
  int v = lane * 10;
  st_shared(s + lane, v);
  if (lane & 1) {
    v = __shfl_xor_sync(kFull, v, 1);
    __syncwarp();
  } else {
    v = __shfl_xor_sync(kFull, v, 1);
    __syncwarp();
  }
  // The __syncwarp above, reached from two sites, still orders the store before this load.
  st_global(out + lane, v + ld_shared(s + (lane ^ 1)));
}

__global__ void split_aligned(int*, int) {
  static int dummy_in = 0;
  int o = 0;
  if (threadIdx.x & 1) {
    emu::warp_collective("mma.test", kFull, true, &dummy_in, &o, [](emu::WarpSlots&, void*) {}, nullptr,
                         emu::Site::here());
  } else {
    emu::warp_collective("mma.test", kFull, true, &dummy_in, &o, [](emu::WarpSlots&, void*) {}, nullptr,
                         emu::Site::here());
  }
}

TEST(EmuWarpRules, NonAlignedCollectivesMayComeFromDifferentCallSites) {
  DevBuf<int> out(kWarp);
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    emu::LaunchOptions o;
    o.block = dim3(kWarp);
    o.dynamic_smem_bytes = kWarp * sizeof(int);
    o.seed = seed;
    auto r = emu::launch(o, split_sites, out.get(), 0);
    ASSERT_TRUE(r.ok()) << "seed " << seed << "\n" << r.summary();
    const auto v = out.download();
    for (int l = 0; l < kWarp; ++l) EXPECT_EQ(v[l], 2 * (l ^ 1) * 10) << "lane " << l;
    auto a = emu::launch(o, split_aligned, out.get(), 0);
    EXPECT_EQ(findings_of(a, FindingKind::partial_warp_collective).size(), 1u) << a.summary();
  }
}

}  // namespace
