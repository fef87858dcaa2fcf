// Planted kernel bugs: each finding kind is reported with the right kind, thread and source line,
// and a corrected twin of each kernel runs clean.
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
using tejas::emu::testing::findings_of;
namespace emu = tejas::emu;

namespace {

constexpr uint32_t kPoisonWord = 0xffffffffu;

emu::LaunchReport run1(void (*k)(int*, int), dim3 block, size_t smem, int* p, int fix) {
  return emu::launch(k, dim3(1), block, smem, p, fix);
}

// Expects exactly the finding kinds in `kinds` (at least one each) and nothing else.
void expect_only(const emu::LaunchReport& r, std::initializer_list<FindingKind> kinds) {
  for (FindingKind k : kinds) EXPECT_TRUE(r.has(k)) << emu::finding_kind_name(k) << "\n" << r.summary();
  for (const emu::Finding& f : r.findings) {
    bool listed = false;
    for (FindingKind k : kinds) listed = listed || f.kind == k;
    EXPECT_TRUE(listed) << f.to_string();
  }
}

// ---- shared-memory races ------------------------------------------------------------------------
constexpr int kWwLine = __LINE__ + 5;
__global__ void race_ww(int* out, int fix) {
  int* s = dynamic_smem<int>();
  const int t = threadIdx.x;
  if (t == 0) st_shared(s, 1);
  if (t == 33) st_shared(s + (fix ? 1 : 0), 2);  // another warp, same word unless fixed
  __syncthreads();
  if (t == 0) st_global(out, ld_shared(s));
}

TEST(EmuFindings, SharedWriteWriteRace) {
  DevBuf<int> out(1);
  auto r = run1(race_ww, dim3(64), 16, out.get(), 0);
  expect_only(r, {FindingKind::shared_race});
  const auto f = findings_of(r, FindingKind::shared_race);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(f[0].site.line == static_cast<uint32_t>(kWwLine) || f[0].site.line == static_cast<uint32_t>(kWwLine - 1))
      << f[0].to_string();
  EXPECT_TRUE(f[0].thread.x == 33 || f[0].thread.x == 0) << f[0].to_string();  // whichever ran second
  EXPECT_TRUE(run1(race_ww, dim3(64), 16, out.get(), 1).ok());
}

constexpr int kWrLine = __LINE__ + 6;
__global__ void race_wr(int* out, int fix) {
  int* s = dynamic_smem<int>();
  const int t = threadIdx.x;
  if (t == 0) st_shared(s, 7);
  if (fix) __syncthreads();
  if (t == 40) st_global(out, ld_shared(s));
  if (!fix) __syncthreads();
}

TEST(EmuFindings, SharedWriteReadRaceEitherOrder) {
  DevBuf<int> out(1);
  // Under different seeds thread 0 or thread 40 runs first: both orders are one race.
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    emu::LaunchOptions o;
    o.block = dim3(64);
    o.dynamic_smem_bytes = 16;
    o.seed = seed;
    auto r = emu::launch(o, race_wr, out.get(), 0);
    const auto f = findings_of(r, FindingKind::shared_race);
    ASSERT_FALSE(f.empty()) << "seed " << seed << r.summary();
    EXPECT_TRUE(f[0].site.line == static_cast<uint32_t>(kWrLine) || f[0].site.line == static_cast<uint32_t>(kWrLine - 2))
        << f[0].to_string();
    o.seed = seed;
    auto clean = emu::launch(o, race_wr, out.get(), 1);
    EXPECT_TRUE(clean.ok()) << clean.summary();
    EXPECT_EQ(out.download()[0], 7);
  }
}

constexpr int kWarpRaceLine = __LINE__ + 6;
__global__ void race_in_warp(int* out, int fix) {
  int* s = dynamic_smem<int>();
  const int lane = threadIdx.x % 32;
  if (lane == 0) st_shared(s, 5);
  if (fix) __syncwarp();
  if (lane == 1) st_global(out, ld_shared(s));
}

TEST(EmuFindings, LanesOfOneWarpNeedSyncwarp) {
  DevBuf<int> out(1);
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    emu::LaunchOptions o;
    o.block = dim3(32);
    o.dynamic_smem_bytes = 4;
    o.seed = seed;
    auto r = emu::launch(o, race_in_warp, out.get(), 0);
    ASSERT_TRUE(r.has(FindingKind::shared_race)) << r.summary();
    const auto f = findings_of(r, FindingKind::shared_race)[0];
    EXPECT_TRUE(f.site.line == static_cast<uint32_t>(kWarpRaceLine) ||
                f.site.line == static_cast<uint32_t>(kWarpRaceLine - 2))
        << f.to_string();
    auto clean = emu::launch(o, race_in_warp, out.get(), 1);
    EXPECT_TRUE(clean.ok()) << clean.summary();
    EXPECT_EQ(out.download()[0], 5);
  }
}

// ---- barriers and collectives -----------------------------------------------------------------
int g_unwound = 0;
struct CountsUnwind {
  ~CountsUnwind() { ++g_unwound; }
};

constexpr int kDivLine = __LINE__ + 4;
__global__ void divergent_barrier(int* out, int fix) {
  const int t = threadIdx.x;
  if (t < 64 || fix) {
    __syncthreads();
  }
  __syncthreads();
  if (t == 0) st_global(out, 1);
}

TEST(EmuFindings, BarrierNotReachedByEveryThread) {
  DevBuf<int> out(1);
  auto r = run1(divergent_barrier, dim3(128), 0, out.get(), 0);
  expect_only(r, {FindingKind::divergent_barrier});
  const auto f = findings_of(r, FindingKind::divergent_barrier)[0];
  EXPECT_TRUE(f.site.line == static_cast<uint32_t>(kDivLine) || f.site.line == static_cast<uint32_t>(kDivLine + 2))
      << f.to_string();
  EXPECT_TRUE(run1(divergent_barrier, dim3(128), 0, out.get(), 1).ok());
}

// Two barriers on one line: a different barrier for each half, told apart by column.
__global__ void divergent_barrier_one_line(int* out, int) {
  const int t = threadIdx.x;
  if (t < 64) __syncthreads(); else __syncthreads();  // one line on purpose
  if (t == 0) st_global(out, 1);
}

TEST(EmuFindings, BarriersOnOneLineAreTwoBarriers) {
  DevBuf<int> out(1);
  auto r = run1(divergent_barrier_one_line, dim3(128), 0, out.get(), 0);
  expect_only(r, {FindingKind::divergent_barrier});
  const auto f = findings_of(r, FindingKind::divergent_barrier)[0];
  EXPECT_NE(f.detail.find("[column "), std::string::npos) << f.to_string();  // same file:line: columns shown
}

constexpr int kStallShflLine = __LINE__ + 5;
__global__ void barrier_vs_collective(int* out, int fix) {
  CountsUnwind guard;
  int v = threadIdx.x;
  const bool in_shfl = fix ? threadIdx.x < 32 : threadIdx.x < 16;
  if (in_shfl) v = __shfl_sync(fix ? 0xffffffffu : 0xffffffffu, v, 3);
  __syncthreads();
  if (threadIdx.x == 0) st_global(out, v);
}

TEST(EmuFindings, StalledBlockIsReportedAndUnwound) {
  DevBuf<int> out(1);
  g_unwound = 0;
  auto r = run1(barrier_vs_collective, dim3(96), 0, out.get(), 0);
  // Lanes 0..15 wait in the shuffle for lanes 16..31, which wait at the barrier: no hang.
  expect_only(r, {FindingKind::partial_warp_collective, FindingKind::divergent_barrier});
  EXPECT_EQ(findings_of(r, FindingKind::partial_warp_collective)[0].site.line, static_cast<uint32_t>(kStallShflLine));
  EXPECT_EQ(g_unwound, 96) << "every fiber's stack is unwound";
  g_unwound = 0;
  auto clean = run1(barrier_vs_collective, dim3(96), 0, out.get(), 1);
  EXPECT_TRUE(clean.ok()) << clean.summary();
  EXPECT_EQ(out.download()[0], 3);
  EXPECT_EQ(g_unwound, 96);
}

// Lanes 16..31 exit without calling the shuffle: PTX then computes over the lanes that remain,
// but a source lane that exited gives an undefined value.
constexpr int kPartialLine = __LINE__ + 4;
__global__ void partial_shuffle(int* out, int fix) {
  const int lane = threadIdx.x % 32;
  int v = lane;
  if (lane < 16) v = __shfl_sync(0xffffffffu, v, fix ? 2 : 20);
  st_global(out + threadIdx.x, v);
}

TEST(EmuFindings, ShuffleFromAnExitedLane) {
  DevBuf<int> out(32);
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    emu::LaunchOptions o;
    o.block = dim3(32);
    o.seed = seed;
    auto r = emu::launch(o, partial_shuffle, out.get(), 0);
    expect_only(r, {FindingKind::partial_warp_collective});
    const auto f = findings_of(r, FindingKind::partial_warp_collective);
    ASSERT_EQ(f.size(), 16u) << r.summary();
    for (const auto& x : f) {
      EXPECT_EQ(x.site.line, static_cast<uint32_t>(kPartialLine));
      EXPECT_LT(x.thread.x, 16u);
    }
    auto clean = emu::launch(o, partial_shuffle, out.get(), 1);
    EXPECT_TRUE(clean.ok()) << clean.summary();
    const auto v = out.download();
    for (int l = 0; l < 32; ++l) EXPECT_EQ(v[l], l < 16 ? 2 : l);
  }
}

constexpr int kMaskLine = __LINE__ + 4;
__global__ void mask_without_caller(int* out, int fix) {
  const int lane = threadIdx.x % 32;
  const unsigned mask = fix ? __ballot_sync(0xffffffffu, lane < 16) : 0x0000ffffu;
  if (lane < 16 || !fix) st_global(out + threadIdx.x, __shfl_sync(mask, lane, 0));
}

TEST(EmuFindings, ShuffleMaskLeavesOutCaller) {
  DevBuf<int> out(32);
  auto r = run1(mask_without_caller, dim3(32), 0, out.get(), 0);
  expect_only(r, {FindingKind::mask_excludes_caller});
  const auto f = findings_of(r, FindingKind::mask_excludes_caller);
  ASSERT_EQ(f.size(), 16u);
  for (const auto& x : f) {
    EXPECT_GE(x.thread.x, 16u);
    EXPECT_EQ(x.site.line, static_cast<uint32_t>(kMaskLine));
  }
  EXPECT_TRUE(run1(mask_without_caller, dim3(32), 0, out.get(), 1).ok());
}

__global__ void aligned_partial(int* out, int) {
  static int dummy_in = 0;
  int o = 0;
  emu::warp_collective("mma.test", 0x0000ffffu, true, &dummy_in, &o, [](emu::WarpSlots&, void*) {}, nullptr,
                       emu::Site::here());
  (void)out;
}

TEST(EmuFindings, AlignedInstructionNeedsTheWholeWarp) {
  auto r = run1(aligned_partial, dim3(16), 0, nullptr, 0);
  expect_only(r, {FindingKind::partial_warp_collective});
}

// ---- memory -----------------------------------------------------------------------------------
constexpr int kOobLine = __LINE__ + 4;
__global__ void out_of_bounds(int* out, int n) {
  int* s = dynamic_smem<int>();
  const int t = threadIdx.x;
  const int g = ld_global(out + t + 1);  // reads one past the end in the last thread
  st_shared(s + t, g);
  __syncthreads();
  st_global(out + t, ld_shared(s + (t + 1) % n));
}

TEST(EmuFindings, OutOfBoundsIsReportedNotPerformed) {
  constexpr int n = 32;
  DevBuf<int> out(n, "out");
  std::vector<int> init(n);
  for (int i = 0; i < n; ++i) init[i] = i * 10;
  out.upload(init);
  auto r = emu::launch(out_of_bounds, dim3(1), dim3(n), n * sizeof(int), out.get(), n);
  expect_only(r, {FindingKind::out_of_bounds});
  const auto f = findings_of(r, FindingKind::out_of_bounds);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].site.line, static_cast<uint32_t>(kOobLine));
  EXPECT_EQ(f[0].thread.x, static_cast<uint32_t>(n - 1));
  const auto v = out.download();
  // Thread n-2 stored what thread n-1 loaded out of bounds: poison, not a neighbour's bytes.
  EXPECT_EQ(static_cast<uint32_t>(v[n - 2]), kPoisonWord);
  EXPECT_EQ(v[0], 20);
}

// A prefetch moves nothing and the GPU ignores a bad address, but a bad address is still a
// kernel bug: reported as out_of_bounds, at the prefetch's line, and counted like any prefetch.
constexpr int kPrefetchLine = __LINE__ + 2;
__global__ void prefetch_oob(int* out, int fix) {
  prefetch_l2(out + threadIdx.x + (fix ? 0 : 1));  // the last thread one int past the end
  st_global(out + threadIdx.x, 1);
}

TEST(EmuFindings, PrefetchOutsideTheBuffersIsReported) {
  constexpr int n = 32;
  DevBuf<int> out(n, "out");
  auto r = run1(prefetch_oob, dim3(n), 0, out.get(), 0);
  expect_only(r, {FindingKind::out_of_bounds});
  const auto f = findings_of(r, FindingKind::out_of_bounds);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].site.line, static_cast<uint32_t>(kPrefetchLine));
  EXPECT_EQ(f[0].thread.x, static_cast<uint32_t>(n - 1));
  EXPECT_EQ(r.counters.global_prefetches, static_cast<uint64_t>(n));
  r = run1(prefetch_oob, dim3(n), 0, out.get(), 1);
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_EQ(r.counters.global_prefetches, static_cast<uint64_t>(n));
}

__global__ void shared_oob(int* out, int fix) {
  int* s = dynamic_smem<int>();
  st_shared(s + threadIdx.x + (fix ? 0 : 1), 1);  // the last thread steps past the 32 ints
  __syncthreads();
  st_global(out + threadIdx.x, ld_shared(s + threadIdx.x));
}

TEST(EmuFindings, SharedOutOfBounds) {
  DevBuf<int> out(32);
  auto r = run1(shared_oob, dim3(32), 32 * sizeof(int), out.get(), 0);
  EXPECT_TRUE(r.has(FindingKind::out_of_bounds)) << r.summary();
  EXPECT_TRUE(r.has(FindingKind::poison_read)) << "s[0] was never written";
  EXPECT_TRUE(run1(shared_oob, dim3(32), 32 * sizeof(int), out.get(), 1).ok());
}

constexpr int kPoisonLine = __LINE__ + 1;
__global__ void read_poison(int* out, int) { st_global(out + 1, ld_global(out) + 1); }

TEST(EmuFindings, PoisonRead) {
  DevBuf<int> out(2);
  auto r = run1(read_poison, dim3(1), 0, out.get(), 0);
  expect_only(r, {FindingKind::poison_read});
  EXPECT_EQ(findings_of(r, FindingKind::poison_read)[0].site.line, static_cast<uint32_t>(kPoisonLine));
  out.upload({41, 0});
  EXPECT_TRUE(run1(read_poison, dim3(1), 0, out.get(), 0).ok());
  EXPECT_EQ(out.download()[1], 42);
}

constexpr int kAsyncLine = __LINE__ + 6;
__global__ void async_early_read(int* out, int fix) {
  int* s = dynamic_smem<int>();
  const int t = threadIdx.x;
  cp_async_16(s + 4 * t, out + 4 * t);
  cp_async_commit();
  if (!fix) st_global(out + 64 + t, ld_shared(s + 4 * t));
  cp_async_wait<0>();
  __syncthreads();
  st_global(out + 64 + t, ld_shared(s + 4 * ((t + 1) % 16)));
}

TEST(EmuFindings, CpAsyncDestinationReadBeforeWait) {
  DevBuf<int> buf(64 + 16, "buf");
  std::vector<int> init(64 + 16, 0);
  for (int i = 0; i < 64; ++i) init[i] = 100 + i;
  buf.upload(init);
  auto r = run1(async_early_read, dim3(16), 64 * sizeof(int), buf.get(), 0);
  expect_only(r, {FindingKind::async_read_before_wait});
  const auto f = findings_of(r, FindingKind::async_read_before_wait);
  EXPECT_EQ(f[0].site.line, static_cast<uint32_t>(kAsyncLine));
  EXPECT_EQ(r.counters.cp_async_bytes, 16u * 16u);
  buf.upload(init);
  auto clean = run1(async_early_read, dim3(16), 64 * sizeof(int), buf.get(), 1);
  EXPECT_TRUE(clean.ok()) << clean.summary();
  const auto v = buf.download();
  for (int t = 0; t < 16; ++t) EXPECT_EQ(v[64 + t], 100 + 4 * ((t + 1) % 16));
}

__global__ void zero_fill(int* out, int) {
  int* s = dynamic_smem<int>();
  cp_async_16_zfill(s, out, 4);  // one int copied, three zero-filled
  cp_async_commit();
  cp_async_wait<0>();
  for (int i = 0; i < 4; ++i) st_global(out + 4 + i, ld_shared(s + i));
}

TEST(EmuFindings, CpAsyncZeroFill) {
  DevBuf<int> buf(8);
  buf.upload({9, 0, 0, 0, -1, -1, -1, -1});
  auto r = run1(zero_fill, dim3(1), 16, buf.get(), 0);
  EXPECT_TRUE(r.ok()) << r.summary();
  const auto v = buf.download();
  EXPECT_EQ(v[4], 9);
  EXPECT_EQ(v[5], 0);
  EXPECT_EQ(v[7], 0);
}

__global__ void write_input(int* in, int) { st_global(in, 5); }

TEST(EmuFindings, StoreIntoReadOnlyInput) {
  std::vector<int> host = {1, 2};
  emu::ScopedBuffer reg(host.data(), host.size() * sizeof(int), emu::Access::read, "x");
  auto r = run1(write_input, dim3(1), 0, host.data(), 0);
  expect_only(r, {FindingKind::write_to_input});
  EXPECT_EQ(host[0], 1) << "the store is not performed";
}

__global__ void misaligned(int* out, int) {
  const auto* bytes = reinterpret_cast<const char*>(out);
  st_global(out + 2, ld_global(reinterpret_cast<const int*>(bytes + 2)));
}

TEST(EmuFindings, MisalignedAccess) {
  DevBuf<int> out(4);
  out.upload({1, 2, 3, 4});
  auto r = run1(misaligned, dim3(1), 0, out.get(), 0);
  expect_only(r, {FindingKind::misaligned});
}

__global__ void blocks_write_same(int* out, int fix) {
  if (threadIdx.x == 0) st_global(out + (fix ? blockIdx.x : 0), 1);
}

TEST(EmuFindings, GlobalRaceBetweenBlocks) {
  DevBuf<int> out(4);
  auto r = emu::launch(blocks_write_same, dim3(4), dim3(32), 0, out.get(), 0);
  expect_only(r, {FindingKind::global_race});
  EXPECT_TRUE(emu::launch(blocks_write_same, dim3(4), dim3(32), 0, out.get(), 1).ok());
  // A second launch writing the same bytes is ordered after the first.
  EXPECT_TRUE(emu::launch(blocks_write_same, dim3(4), dim3(32), 0, out.get(), 1).ok());
}

int g_ran = 0;
__global__ void mark_ran(int*, int) { g_ran = 1; }

TEST(EmuFindings, SharedMemoryCapPerArchitecture) {
  for (int arch : {80, 90}) {
    const size_t cap = arch == 90 ? emu::kSmemCapSm90 : emu::kSmemCapSm80;
    emu::LaunchOptions o;
    o.arch = arch;
    o.dynamic_smem_bytes = cap + 1;
    g_ran = 0;
    auto r = emu::launch(o, mark_ran, nullptr, 0);
    expect_only(r, {FindingKind::smem_over_limit});
    EXPECT_EQ(g_ran, 0) << "over the cap: no run";
    o.dynamic_smem_bytes = cap;
    o.max_dynamic_smem_bytes = cap;  // raised to the opt-in maximum
    EXPECT_TRUE(emu::launch(o, mark_ran, nullptr, 0).ok());
    EXPECT_EQ(g_ran, 1);
  }
}

// CUDA's default per-kernel limit, 48 KiB: a launch above it fails on a GPU unless the kernel's
// MaxDynamicSharedMemorySize was raised (LaunchOptions::max_dynamic_smem_bytes here).
TEST(EmuFindings, DefaultDynamicSharedMemoryLimit) {
  for (int arch : {80, 90}) {
    emu::LaunchOptions o;
    o.arch = arch;
    o.dynamic_smem_bytes = emu::kDefaultMaxDynamicSmem;
    g_ran = 0;
    EXPECT_TRUE(emu::launch(o, mark_ran, nullptr, 0).ok()) << "48 KiB itself needs no attribute";
    EXPECT_EQ(g_ran, 1);
    o.dynamic_smem_bytes = emu::kDefaultMaxDynamicSmem + 16;
    g_ran = 0;
    auto r = emu::launch(o, mark_ran, nullptr, 0);
    expect_only(r, {FindingKind::smem_over_limit});
    EXPECT_EQ(g_ran, 0) << "above 48 KiB without the attribute: no run";
    o.max_dynamic_smem_bytes = 64 * 1024;  // raised, but not as far as the launch asks
    o.dynamic_smem_bytes = 64 * 1024 + 16;
    expect_only(emu::launch(o, mark_ran, nullptr, 0), {FindingKind::smem_over_limit});
    o.dynamic_smem_bytes = 64 * 1024;
    EXPECT_TRUE(emu::launch(o, mark_ran, nullptr, 0).ok());
    EXPECT_EQ(g_ran, 1);
  }
}

}  // namespace
