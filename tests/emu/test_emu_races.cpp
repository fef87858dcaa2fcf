// Race-detector rules beyond plain loads and stores: atomics against plain accesses, non-coherent
// loads of data written in the launch, __syncwarp with partial masks, and cp.async writes that
// happen when the copy lands. Each racy kernel must be reported under every seed tried, and its
// corrected twin must run clean.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "device/prelude.h"
#include "device/ptx/cp_async.h"
#include "device/ptx/ld_st.h"
#include "emu_test_util.h"

using namespace tejas::dev;
using namespace tejas::ptx;
using tejas::emu::FindingKind;
using tejas::emu::testing::DevBuf;
namespace emu = tejas::emu;

namespace {

constexpr uint64_t kSeeds = 8;
constexpr int kWarp = 32;
constexpr int kOtherWarpThread = 40;  // a thread of warp 1

emu::LaunchOptions opts(uint64_t seed, dim3 grid, dim3 block, size_t smem) {
  return emu::testing::launch_options(grid, block, smem, seed);
}

// ---- 4. atomics against plain accesses -----------------------------------------------------------
// Thread 0 adds atomically while thread 40 reads the same word plainly: unordered unless fixed.
__global__ void atomic_vs_plain_read(int* out, int fix) {
  int* s = dynamic_smem<int>();
  if (threadIdx.x == 0) st_shared(s, 10);
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(s, 5);
  if (fix) __syncthreads();
  if (threadIdx.x == kOtherWarpThread) st_global(out, ld_shared(s));
}

// Every thread adds atomically (never a race), then after a barrier one thread reads plainly.
__global__ void atomics_then_barrier(int* out, int fix) {
  int* s = dynamic_smem<int>();
  if (threadIdx.x == 0) st_shared(s, 0);
  __syncthreads();
  if (threadIdx.x != 5) atomicAdd(s, static_cast<int>(threadIdx.x));
  if (fix) __syncthreads();
  if (threadIdx.x == 5) st_shared(s, 0);  // a plain store racing with the other threads' atomics
  __syncthreads();
  if (threadIdx.x == kOtherWarpThread) st_global(out, ld_shared(s));
}

TEST(EmuRaces, AtomicAgainstPlainAccessInOneBlock) {
  DevBuf<int> out(1);
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    auto r = emu::launch(opts(seed, dim3(1), dim3(64), sizeof(int)), atomic_vs_plain_read, out.get(), 0);
    EXPECT_TRUE(r.has(FindingKind::shared_race)) << r.summary();
    auto clean = emu::launch(opts(seed, dim3(1), dim3(64), sizeof(int)), atomic_vs_plain_read, out.get(), 1);
    EXPECT_TRUE(clean.ok()) << clean.summary();
    EXPECT_EQ(out.download()[0], 15);

    auto w = emu::launch(opts(seed, dim3(1), dim3(64), sizeof(int)), atomics_then_barrier, out.get(), 0);
    EXPECT_TRUE(w.has(FindingKind::shared_race)) << w.summary();
    auto ok = emu::launch(opts(seed, dim3(1), dim3(64), sizeof(int)), atomics_then_barrier, out.get(), 1);
    EXPECT_TRUE(ok.ok()) << ok.summary();
    EXPECT_EQ(out.download()[0], 0);
  }
}

// Blocks count atomically; one block also reads the counter plainly inside the launch.
__global__ void blocks_count(int* counter, int fix) {
  if (threadIdx.x != 0) return;
  atomicAdd(counter, 1);
  if (!fix && blockIdx.x == 0) st_global(counter + 1, ld_global(counter));
  if (fix && blockIdx.x == 0) st_global(counter + 1, atomicAdd(counter, 0));  // an atomic read is fine
}

TEST(EmuRaces, AtomicAgainstPlainReadAcrossBlocks) {
  constexpr int kBlocks = 4;
  DevBuf<int> counter(2, "counter");
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    counter.upload({0, -1});
    auto r = emu::launch(opts(seed, dim3(kBlocks), dim3(kWarp), 0), blocks_count, counter.get(), 0);
    EXPECT_TRUE(r.has(FindingKind::global_race)) << r.summary();
    counter.upload({0, -1});
    auto clean = emu::launch(opts(seed, dim3(kBlocks), dim3(kWarp), 0), blocks_count, counter.get(), 1);
    EXPECT_TRUE(clean.ok()) << clean.summary();
    const auto v = counter.download();
    EXPECT_EQ(v[0], kBlocks);
    EXPECT_GE(v[1], 1);
    EXPECT_LE(v[1], kBlocks);
  }
}

// ---- 5. non-coherent loads of data written in the launch -----------------------------------------
__global__ void nc_after_write(int* buf, int mode) {
  if (threadIdx.x == 0) st_global(buf, 42);
  __syncthreads();  // orders the write for a coherent load, not for the read-only path
  if (threadIdx.x == kOtherWarpThread) {
    const int v = mode == 0 ? ld_global_nc(buf) : mode == 1 ? __ldg(buf) : ld_global(buf);
    st_global(buf + 1, v);
  }
}

__global__ void nc_of_input(int* buf, int) {
  if (threadIdx.x == kOtherWarpThread) st_global(buf + 1, ld_global_nc(buf) + __ldg(buf));
}

TEST(EmuRaces, NonCoherentLoadOfBytesWrittenInTheLaunch) {
  DevBuf<int> buf(2, "buf");
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    for (int mode : {0, 1}) {
      auto r = emu::launch(opts(seed, dim3(1), dim3(64), 0), nc_after_write, buf.get(), mode);
      EXPECT_TRUE(r.has(FindingKind::stale_nc_read)) << r.summary();
      for (const auto& f : r.findings) EXPECT_EQ(f.kind, FindingKind::stale_nc_read) << f.to_string();
    }
    auto coherent = emu::launch(opts(seed, dim3(1), dim3(64), 0), nc_after_write, buf.get(), 2);
    EXPECT_TRUE(coherent.ok()) << coherent.summary();
    EXPECT_EQ(buf.download()[1], 42);
    // Written by an earlier launch: read-only for this one.
    auto input = emu::launch(opts(seed, dim3(1), dim3(64), 0), nc_of_input, buf.get(), 0);
    EXPECT_TRUE(input.ok()) << input.summary();
    EXPECT_EQ(buf.download()[1], 84);
  }
}

// ---- 6. __syncwarp with partial masks ------------------------------------------------------------
// Lane 0 writes, lanes {0,2} and {1,3} synchronize separately, lane 1 reads: nothing orders lane
// 0's write before lane 1's read. Fixed: one __syncwarp over all four; chained: lane 2 joins
// both, so the write is ordered through it.
enum SyncMode { kSeparate, kTogether, kChained };

__global__ void partial_syncwarp(int* out, int mode) {
  int* s = dynamic_smem<int>();
  const int lane = threadIdx.x % kWarp;
  if (lane > 3) return;
  if (lane == 0) st_shared(s, 9);
  if (mode == kTogether) {
    __syncwarp(0xfu);
  } else if (mode == kSeparate) {
    __syncwarp(lane % 2 == 0 ? 0x5u : 0xau);
  } else {
    if (lane == 0 || lane == 2) __syncwarp(0x5u);
    if (lane == 1 || lane == 2) __syncwarp(0x6u);
  }
  if (lane == 1) st_global(out, ld_shared(s));
}

TEST(EmuRaces, PartialSyncwarpOrdersOnlyItsLanes) {
  DevBuf<int> out(1);
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    auto r = emu::launch(opts(seed, dim3(1), dim3(kWarp), sizeof(int)), partial_syncwarp, out.get(), kSeparate);
    EXPECT_TRUE(r.has(FindingKind::shared_race)) << r.summary();
    for (int mode : {kTogether, kChained}) {
      auto clean = emu::launch(opts(seed, dim3(1), dim3(kWarp), sizeof(int)), partial_syncwarp, out.get(), mode);
      EXPECT_TRUE(clean.ok()) << "mode " << mode << "\n" << clean.summary();
      EXPECT_EQ(out.download()[0], 9);
    }
  }
}

// ---- 7. cp.async writes when it lands ------------------------------------------------------------
// Thread 0 copies, a barrier passes, then thread 0 waits (the data lands) and signals thread 40
// through a relaxed atomic flag, which orders nothing: the read needs a barrier after the wait.
__global__ void read_after_landing(int* buf, int fix) {
  int* s = dynamic_smem<int>();  // [0..3] the copy, [4] the flag
  if (threadIdx.x == 0) {
    st_shared(s + 4, 0);
    cp_async_16(s, buf);
    cp_async_commit();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    cp_async_wait<0>();
    atomicExch(s + 4, 1);
  }
  if (fix) __syncthreads();
  if (threadIdx.x == kOtherWarpThread) {
    while (atomicAdd(s + 4, 0) == 0) {
    }
    st_global(buf + 4, ld_shared(s + 2));
  }
}

TEST(EmuRaces, CpAsyncDataIsWrittenWhenItLands) {
  DevBuf<int> buf(8, "buf");
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    buf.upload({1, 2, 3, 4, 0, 0, 0, 0});
    auto r = emu::launch(opts(seed, dim3(1), dim3(64), 8 * sizeof(int)), read_after_landing, buf.get(), 0);
    EXPECT_TRUE(r.has(FindingKind::shared_race)) << r.summary();
    buf.upload({1, 2, 3, 4, 0, 0, 0, 0});
    auto clean = emu::launch(opts(seed, dim3(1), dim3(64), 8 * sizeof(int)), read_after_landing, buf.get(), 1);
    EXPECT_TRUE(clean.ok()) << clean.summary();
    EXPECT_EQ(buf.download()[4], 3);
  }
}

}  // namespace
