// Scheduling: seeded interleavings (reproducible per seed, different across seeds), the seed
// sources, exited threads at barriers, clusters, stack size, kernel exceptions, and speed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <stdexcept>
#include <vector>

#include "device/prelude.h"
#include "device/ptx/ld_st.h"
#include "emu_test_util.h"

using namespace tejas::dev;
using namespace tejas::ptx;
using tejas::emu::FindingKind;
using tejas::emu::testing::DevBuf;
namespace emu = tejas::emu;

namespace {

// Each thread takes a ticket; order[ticket] = thread. The order is whatever the scheduler chose.
__global__ void ticket_order(int* counter, int* order) {
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int ticket = atomicAdd(counter, 1);
  st_global(order + ticket, t);
}

std::vector<int> order_for(uint64_t seed, dim3 grid, dim3 block) {
  const int n = static_cast<int>(grid.x * block.x);
  DevBuf<int> counter(1, "counter"), order(n, "order");
  counter.upload({0});
  emu::LaunchOptions o;
  o.grid = grid;
  o.block = block;
  o.seed = seed;
  auto r = emu::launch(o, ticket_order, counter.get(), order.get());
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_EQ(r.seed, seed);
  return order.download();
}

TEST(EmuSched, SeedsGiveReproducibleDistinctInterleavings) {
  std::set<std::vector<int>> seen;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const auto a = order_for(seed, dim3(1), dim3(64));
    EXPECT_EQ(a, order_for(seed, dim3(1), dim3(64))) << "same seed, same order";
    seen.insert(a);
  }
  EXPECT_GT(seen.size(), 1u);
}

TEST(EmuSched, BlockOrderIsSeeded) {
  std::set<std::vector<int>> seen;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    auto o = order_for(seed, dim3(16), dim3(1));
    seen.insert(o);
  }
  EXPECT_GT(seen.size(), 1u);
}

// Lanes 4 and 5 race for a ticket; the winner writes s[0], lane 5 reads it with no barrier. When
// lane 5 wins it reads its own write (no race); otherwise it is a race, so some seeds find it.
__global__ void unenforced_order(int* counter, int* out) {
  int* s = dynamic_smem<int>();
  const int lane = threadIdx.x;
  if (lane != 4 && lane != 5) return;
  if (atomicAdd(counter, 1) == 0) st_shared(s, lane);
  if (lane == 5) {
    atomicAdd(counter + 1, 1);  // a scheduling point: lane 4 may run in between
    st_global(out, ld_shared(s));
  }
}

TEST(EmuSched, UnenforcedOrderIsFoundUnderSomeSeeds) {
  int with_race = 0, without = 0;
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    DevBuf<int> counter(2, "counter"), out(1, "out");
    counter.upload({0, 0});
    emu::LaunchOptions o;
    o.block = dim3(32);
    o.dynamic_smem_bytes = 4;
    o.seed = seed;
    auto r = emu::launch(o, unenforced_order, counter.get(), out.get());
    (r.has(FindingKind::shared_race) ? with_race : without)++;
  }
  EXPECT_GT(with_race, 0);
  EXPECT_GT(without, 0);
}

TEST(EmuSched, SeedFromEnvironmentElseFixedDefault) {
  DevBuf<int> counter(1), order(8);
  counter.upload({0});
  ::setenv("TEJAS_EMU_SEED", "12345", 1);
  auto r = emu::launch(ticket_order, dim3(1), dim3(8), 0, counter.get(), order.get());
  EXPECT_EQ(r.seed, 12345u);
  ::unsetenv("TEJAS_EMU_SEED");
  counter.upload({0});
  auto d1 = emu::launch(ticket_order, dim3(1), dim3(8), 0, counter.get(), order.get());
  EXPECT_NE(d1.seed, 0u);
  EXPECT_NE(d1.seed, 12345u);
  const auto o1 = order.download();
  counter.upload({0});
  auto d2 = emu::launch(ticket_order, dim3(1), dim3(8), 0, counter.get(), order.get());
  EXPECT_EQ(d1.seed, d2.seed);
  EXPECT_EQ(o1, order.download());
}

__global__ void early_exit(int* out, int) {
  if (threadIdx.x >= 40) return;  // exited threads count as arrived
  __syncthreads();
  st_global(out + threadIdx.x, 1);
}

TEST(EmuSched, ExitedThreadsCountAsArrived) {
  DevBuf<int> out(40);
  auto r = emu::launch(early_exit, dim3(1), dim3(128), 0, out.get(), 0);
  EXPECT_TRUE(r.ok()) << r.summary();
  for (int v : out.download()) EXPECT_EQ(v, 1);
}

__global__ void cluster_blocks(int* out, int) {
  if (threadIdx.x == 0) st_global(out + blockIdx.x + gridDim.x * blockIdx.y, 1);
}

TEST(EmuSched, ClustersCoverTheGrid) {
  DevBuf<int> out(8);
  emu::LaunchOptions o;
  o.grid = dim3(4, 2);
  o.block = dim3(32);
  o.cluster = dim3(2, 1);
  auto r = emu::launch(o, cluster_blocks, out.get(), 0);
  EXPECT_TRUE(r.ok()) << r.summary();
  for (int v : out.download()) EXPECT_EQ(v, 1);
  o.cluster = dim3(3, 1);
  EXPECT_TRUE(emu::launch(o, cluster_blocks, out.get(), 0).has(FindingKind::unsupported));
}

constexpr int kBigStackBytes = 192 * 1024;
__global__ void big_stack(int* out, int) {
  volatile char buf[kBigStackBytes];
  buf[0] = 1;
  buf[kBigStackBytes - 1] = 2;
  st_global(out + threadIdx.x, buf[0] + buf[kBigStackBytes - 1]);
}

TEST(EmuSched, StackSizeIsConfigurable) {
  DevBuf<int> out(4);
  emu::LaunchOptions o;
  o.block = dim3(4);
  o.stack_bytes = 4 * kBigStackBytes;
  auto r = emu::launch(o, big_stack, out.get(), 0);
  EXPECT_TRUE(r.ok()) << r.summary();
  for (int v : out.download()) EXPECT_EQ(v, 3);
}

__global__ void throws(int*, int) {
  if (threadIdx.x == 3) throw std::runtime_error("boom");
  __syncthreads();
}

TEST(EmuSched, KernelExceptionIsAFinding) {
  auto r = emu::launch(throws, dim3(1), dim3(32), 0, static_cast<int*>(nullptr), 0);
  ASSERT_TRUE(r.has(FindingKind::unsupported)) << r.summary();
  EXPECT_EQ(r.findings[0].thread.x, 3u);
}

// Speed: a block-wide tree reduction repeated, ~300 barriers per block.
constexpr int kSpeedThreads = 256, kSpeedBlocks = 4, kRounds = 38;
__global__ void reduce_rounds(const float* in, float* out, int rounds) {
  float* s = dynamic_smem<float>();
  const int t = threadIdx.x;
  float acc = 0;
  for (int r = 0; r < rounds; ++r) {
    st_shared(s + t, ld_global(in + blockIdx.x * blockDim.x + t) + static_cast<float>(r));
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
      if (t < w) st_shared(s + t, ld_shared(s + t) + ld_shared(s + t + w));
      __syncthreads();
    }
    acc += ld_shared(s);
    __syncthreads();
  }
  if (t == 0) st_global(out + blockIdx.x, acc);
}

TEST(EmuSched, ManyBarriersEmulateQuickly) {
  DevBuf<float> in(kSpeedThreads * kSpeedBlocks, "in"), out(kSpeedBlocks, "out");
  std::vector<float> v(kSpeedThreads * kSpeedBlocks);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 5);
  in.upload(v);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = emu::launch(reduce_rounds, dim3(kSpeedBlocks), dim3(kSpeedThreads), kSpeedThreads * sizeof(float), in.get(),
                       out.get(), kRounds);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r.ok()) << r.summary();
  std::printf("[ timing ] %d blocks x %d threads, %llu barriers: %.3f s\n", kSpeedBlocks, kSpeedThreads,
              static_cast<unsigned long long>(r.counters.barriers), secs);
  EXPECT_GE(r.counters.barriers, static_cast<uint64_t>(kSpeedBlocks) * 300);
  const auto o = out.download();
  for (int b = 0; b < kSpeedBlocks; ++b) {
    long double want = 0;  // sum over rounds of (sum of inputs + 256 r), exact in float here
    for (int r2 = 0; r2 < kRounds; ++r2) {
      for (int t = 0; t < kSpeedThreads; ++t) want += v[b * kSpeedThreads + t] + r2;
    }
    EXPECT_EQ(static_cast<long double>(o[b]), want);
  }
  EXPECT_LT(secs, 5.0);
}

}  // namespace
