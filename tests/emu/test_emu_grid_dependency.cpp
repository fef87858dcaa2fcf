// Programmatic dependent launch under the emulator (LaunchOptions::programmatic, the
// griddepcontrol wrappers and dev::begin_dependent_grid): a global access or an exit before
// griddepcontrol.wait is a grid_dependency finding with the access's line; shared memory and
// prefetch.L2 are not; launches without the attribute need no wait; launch_dependents is counted
// once per block; sm_80 has neither the launch nor the instructions.
#include <gtest/gtest.h>

#include <cstdint>

#include "device/grid_dependency.h"
#include "device/prelude.h"
#include "device/ptx/cp_async.h"
#include "device/ptx/griddepcontrol.h"
#include "device/ptx/ld_st.h"
#include "device/smem.h"
#include "emu_test_util.h"

using namespace tejas::ptx;
using tejas::emu::FindingKind;
using tejas::emu::testing::DevBuf;
using tejas::emu::testing::findings_of;
namespace emu = tejas::emu;
namespace dev = tejas::dev;

namespace {

emu::LaunchOptions programmatic(dim3 grid, dim3 block, size_t smem = 0) {
  emu::LaunchOptions o = emu::testing::launch_options(grid, block, smem);
  o.programmatic = true;
  return o;
}

// What each planted kernel does before its wait (`mode`), then the same work done right.
enum Mode : int { kWaitFirst = 0, kLoadFirst, kStoreFirst, kAtomicFirst, kCpAsyncFirst, kNoWait };

constexpr int kEarlyLine = __LINE__ + 6;
__global__ void early(const int* in, int* out, int mode) {
  int* s = tejas::dev::dynamic_smem<int>();
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  st_shared(s + threadIdx.x, 1);  // shared memory: never the kernel before's
  prefetch_l2(in);                // changes no value: allowed before the wait
  if (mode == kLoadFirst) (void)ld_global(in + i);  // line kEarlyLine
  if (mode == kStoreFirst) st_global(out + i, 0);
  if (mode == kAtomicFirst) atomicAdd(out + i, 1);
  if (mode == kCpAsyncFirst) {
    cp_async_4(s + blockDim.x + threadIdx.x, in + i);
    cp_async_wait_all();
  }
  if (mode == kNoWait) return;
  griddepcontrol_wait();
  griddepcontrol_launch_dependents();
  st_global(out + i, ld_global(in + i) + ld_shared(s + threadIdx.x));
}

emu::LaunchReport run_early(int mode, bool programmatic_launch) {
  DevBuf<int> in(64), out(64);
  in.upload(std::vector<int>(64, 5));
  out.upload(std::vector<int>(64, 0));
  emu::LaunchOptions o = programmatic(dim3(2), dim3(32), 64 * sizeof(int));
  o.programmatic = programmatic_launch;
  return emu::launch(o, early, static_cast<const int*>(in.get()), out.get() + 0, mode);
}

}  // namespace

TEST(EmuGridDependency, WaitFirstRunsClean) {
  const emu::LaunchReport r = run_early(kWaitFirst, true);
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_EQ(r.counters.blocks, 2u);
  EXPECT_EQ(r.counters.dependent_launch_blocks, 2u) << "launch_dependents counts once per block";
  EXPECT_EQ(r.counters.global_prefetches, 64u);
}

TEST(EmuGridDependency, EveryGlobalAccessBeforeTheWaitIsReported) {
  for (int mode : {kLoadFirst, kStoreFirst, kAtomicFirst, kCpAsyncFirst}) {
    const emu::LaunchReport r = run_early(mode, true);
    const auto f = findings_of(r, FindingKind::grid_dependency);
    ASSERT_FALSE(f.empty()) << "mode " << mode << "\n" << r.summary();
    EXPECT_EQ(f.size(), r.findings.size()) << r.summary();  // nothing else is wrong
    EXPECT_NE(f[0].detail.find("before griddepcontrol.wait"), std::string::npos) << f[0].to_string();
    if (mode == kLoadFirst) {
      EXPECT_EQ(f[0].site.line, static_cast<uint32_t>(kEarlyLine)) << f[0].to_string();
    }
  }
}

TEST(EmuGridDependency, AnExitWithoutTheWaitIsReported) {
  const emu::LaunchReport r = run_early(kNoWait, true);
  const auto f = findings_of(r, FindingKind::grid_dependency);
  ASSERT_FALSE(f.empty()) << r.summary();
  EXPECT_NE(f[0].detail.find("exits without griddepcontrol.wait"), std::string::npos) << f[0].to_string();
  EXPECT_EQ(r.counters.dependent_launch_blocks, 0u);
}

TEST(EmuGridDependency, AnOrdinaryLaunchNeedsNoWait) {
  for (int mode : {kLoadFirst, kStoreFirst, kAtomicFirst, kCpAsyncFirst, kNoWait}) {
    const emu::LaunchReport r = run_early(mode, false);
    EXPECT_TRUE(r.ok()) << "mode " << mode << "\n" << r.summary();
  }
}

namespace {
__global__ void helper_first(const int* in, int* out) {
  dev::begin_dependent_grid();
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (threadIdx.x >= 20) return;  // an early return after the helper is fine
  st_global(out + i, ld_global(in + i) * 2);
}
__global__ void bare_wait(int* out) {
  griddepcontrol_wait();
  st_global(out + threadIdx.x, 1);
}
}  // namespace

TEST(EmuGridDependency, BeginDependentGridWaitsAndLetsTheNextGridLaunch) {
  DevBuf<int> in(96), out(96);
  in.upload(std::vector<int>(96, 21));
  const emu::LaunchReport r =
      emu::launch(programmatic(dim3(3), dim3(32)), helper_first, static_cast<const int*>(in.get()), out.get() + 0);
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_EQ(r.counters.dependent_launch_blocks, 3u);
  EXPECT_EQ(out.download()[64 + 19], 42);
}

TEST(EmuGridDependency, Sm80HasNeitherTheLaunchNorTheInstructions) {
  DevBuf<int> in(32), out(32);
  in.upload(std::vector<int>(32, 1));
  emu::LaunchOptions o = programmatic(dim3(1), dim3(32));
  o.arch = 80;
  const emu::LaunchReport refused = emu::launch(o, helper_first, static_cast<const int*>(in.get()), out.get() + 0);
  ASSERT_FALSE(findings_of(refused, FindingKind::unsupported).empty()) << refused.summary();
  EXPECT_NE(refused.findings[0].detail.find("programmatic dependent launch needs sm_90"), std::string::npos);
  // An ordinary sm_80 launch: the helper emits nothing, the bare instruction is unsupported.
  o.programmatic = false;
  const emu::LaunchReport helper = emu::launch(o, helper_first, static_cast<const int*>(in.get()), out.get() + 0);
  EXPECT_TRUE(helper.ok()) << helper.summary();
  EXPECT_EQ(helper.counters.dependent_launch_blocks, 0u);
  const emu::LaunchReport bare = emu::launch(o, bare_wait, out.get() + 0);
  EXPECT_FALSE(findings_of(bare, FindingKind::unsupported).empty()) << bare.summary();
}

namespace {
__global__ void traps_first(int* out) {
  __trap();
  st_global(out + threadIdx.x, 1);
}
}  // namespace

// A thread that ends by __trap() (or an exception) has a finding of its own: its end is not also
// reported as an exit without the wait.
TEST(EmuGridDependency, ATrapIsNotAlsoAnExitWithoutTheWait) {
  DevBuf<int> out(32);
  const emu::LaunchReport r = emu::launch(programmatic(dim3(1), dim3(32)), traps_first, out.get() + 0);
  EXPECT_FALSE(findings_of(r, FindingKind::unsupported).empty()) << r.summary();
  EXPECT_TRUE(findings_of(r, FindingKind::grid_dependency).empty()) << r.summary();
}
