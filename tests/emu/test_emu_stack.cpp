// A fiber stack overflow ends the process with a message that names the emulated thread and the
// fix, instead of a bare SIGSEGV; faults outside the guard pages stay plain SIGSEGVs.
#include <gtest/gtest.h>

#include <sys/mman.h>

#include <csignal>

#include "device/prelude.h"
#include "device/ptx/ld_st.h"
#include "emu_test_util.h"

using tejas::emu::testing::DevBuf;
namespace emu = tejas::emu;

namespace {

constexpr size_t kSmallStackBytes = 16 * 1024;
constexpr int kFrameBytes = 512;
constexpr int kDepth = 1000;  // ~500 KB of frames: far beyond the small stack

// Not inlinable, and every frame's buffer is read after the recursive call returns, so neither
// the frames nor the recursion can be optimized away.
__attribute__((noinline)) int recurse(int n) {
  volatile char buf[kFrameBytes];
  buf[0] = static_cast<char>(n);
  buf[kFrameBytes - 1] = static_cast<char>(n >> 8);
  if (n == 0) return buf[0];
  return recurse(n - 1) + buf[0] + buf[kFrameBytes - 1];
}

__global__ void deep_recursion(int* out, int depth) {
  const int v = threadIdx.x == 5 ? recurse(depth) : 0;
  tejas::ptx::st_global(out + threadIdx.x, v);
}

void overflow_one_thread() {
  DevBuf<int> out(32);
  emu::LaunchOptions o;
  o.grid = dim3(2);
  o.block = dim3(32);
  o.stack_bytes = kSmallStackBytes;
  emu::launch(o, deep_recursion, out.get(), kDepth);
}

TEST(EmuStackDeathTest, OverflowIsReportedWithTheThread) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(overflow_one_thread(),
               "tejas emu: fiber stack overflow in an emulated thread \\(stack 16 KB\\) block \\([01],0,0\\) "
               "thread \\(5,0,0\\); raise TEJAS_EMU_STACK_KB");
}

// The same kernel with room for its frames runs normally (the recursion depth is what overflows).
TEST(EmuStack, DeepRecursionFitsABigStack) {
  DevBuf<int> out(32);
  emu::LaunchOptions o;
  o.block = dim3(32);
  o.stack_bytes = 2 * kDepth * kFrameBytes;
  const auto r = emu::launch(o, deep_recursion, out.get(), kDepth);
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_NE(out.download()[5], 0);
}

// A fault elsewhere, after the handler is installed, is still a plain SIGSEGV without the message.
TEST(EmuStackDeathTest, OtherFaultsAreUnchanged) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        DevBuf<int> out(32);
        emu::launch(deep_recursion, dim3(1), dim3(32), 0, out.get(), 1);  // maps stacks: handler in place
        void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        *static_cast<volatile int*>(page) = 1;  // not a fiber guard page
      },
      ::testing::KilledBySignal(SIGSEGV), "^$");
}

}  // namespace
