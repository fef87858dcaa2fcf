// Requests through helpers: a helper that takes TEJAS_CALLER_PARAM and passes TEJAS_NESTED_SITE
// (device/prelude.h) is one instruction per call, as each inlined call is on the GPU, so lanes
// that skip one call do not merge their next access with other lanes' different access.
// Findings through helpers name the innermost line and the calls that led to it.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "device/prelude.h"
#include "device/ptx/ld_st.h"
#include "emu_test_util.h"

using namespace tejas::ptx;
using tejas::emu::testing::DevBuf;
using tejas::emu::testing::file_name;
using tejas::emu::testing::findings_of;
namespace emu = tejas::emu;

namespace {

constexpr int kLoadOneLine = __LINE__ + 3;  // load_one's wrapper call
template <class T>
__device__ __forceinline__ T load_one(const T* p TEJAS_CALLER_PARAM) {
  return ld_global(p TEJAS_NESTED_SITE);
}

// Two levels: the outer helper's callers stay apart too.
constexpr int kLoadViaLine = __LINE__ + 3;  // load_via's call of load_one
template <class T>
__device__ __forceinline__ T load_via(const T* p TEJAS_CALLER_PARAM) {
  return load_one(p TEJAS_NESTED_SITE);
}

// A chain deeper than Site::kMaxCallers, every level on one line: only the kernel's two call
// lines tell the instructions apart (they are in the hash, not in the kept frames).
template <int N>
__device__ __forceinline__ float load_deep(const float* p TEJAS_CALLER_PARAM) {
  if constexpr (N == 0) return ld_global(p TEJAS_NESTED_SITE);
  else return load_deep<N - 1>(p TEJAS_NESTED_SITE);
}

// The kernel calls each helper from two lines, passing no site (the default: the call's line).
// mode 0: one level, 1: two levels, 2: a deep chain.
__global__ void even_lanes_then_all(const float* a, const float* b, float* out, int mode) {
  const int lane = threadIdx.x;
  float v = 0.0f;
  switch (mode) {
    case 0:
      if (lane % 2 == 0) v += load_one(a + lane);  // even lanes only
      v += load_one(b + lane);                     // every lane
      break;
    case 1:
      if (lane % 2 == 0) v += load_via(a + lane);
      v += load_via(b + lane);
      break;
    case 2:
      if (lane % 2 == 0) v += load_deep<6>(a + lane);
      v += load_deep<6>(b + lane);
      break;
  }
  st_global(out + lane, v);
}

// Lanes split between two calls of one helper: two source calls, each by half the warp, are two
// requests (a site is file:line:column, so one line or two makes no difference).
// mode 0: the calls on two lines; 1: on one line; 2: two ld_global_nc calls on one line.
// NOTES: the emulator counts source calls. On the GPU, two inline-asm loads (ld_global_nc) stay
// two instructions; two plain ld_global (`*p` on the device) may be if-converted by the
// compiler into one load of a selected address (nvcc 13 does it for modes 0 and 1 here).
__global__ void even_a_odd_b(const float* a, const float* b, float* out, int mode) {
  const int lane = threadIdx.x;
  float v;
  if (mode == 0) {
    if (lane % 2 == 0) v = load_one(a + lane);
    else v = load_one(b + lane);
  } else if (mode == 1) {
    v = lane % 2 == 0 ? load_one(a + lane) : load_one(b + lane);
  } else {
    v = lane % 2 == 0 ? ld_global_nc(a + lane) : ld_global_nc(b + lane);
  }
  st_global(out + lane, v);
}

// The same call executed repeatedly in a loop stays one instruction, counted per iteration.
__global__ void loop_calls(const float* a, const float* b, float* out, int n) {
  const int lane = threadIdx.x;
  float v = 0.0f;
  for (int i = 0; i < n; ++i) v += load_one(a + 32 * i + lane);
  v += load_one(b + lane);
  st_global(out + lane, v);
}

struct Bufs {
  DevBuf<float> a{128, "a"}, b{128, "b"}, out{32, "out"};
  Bufs() {
    a.upload(std::vector<float>(128, 1.0f));
    b.upload(std::vector<float>(128, 2.0f));
  }
};

TEST(EmuHelperSites, CallsOfOneHelperAreSeparateRequests) {
  Bufs m;
  for (int mode : {0, 1, 2}) {
    SCOPED_TRACE("mode " + std::to_string(mode));
    auto r = emu::launch(even_lanes_then_all, dim3(1), dim3(32), 0, m.a.get(), m.b.get(), m.out.get(), mode);
    ASSERT_TRUE(r.ok()) << r.summary();
    const auto& c = r.counters;
    // Even lanes' a[even] spans a's first 128 bytes: 4 sectors, 64 bytes used (ideal 2); every
    // lane's b[lane]: 4 sectors, all used. One site for both calls would have grouped odd lanes'
    // b load with even lanes' a load (8 sectors) and the even lanes' b loads apart (4): 12.
    EXPECT_EQ(c.global_load_requests, 2u);
    EXPECT_EQ(c.global_load_sectors, 8u);
    EXPECT_EQ(c.global_load_sectors_ideal, 6u);
    EXPECT_EQ(c.excess_load_sectors(), 2u);  // the even-lane access's half-used sectors, as on the GPU
    EXPECT_EQ(m.out.download()[1], 2.0f);
    EXPECT_EQ(m.out.download()[0], 3.0f);
  }
}

TEST(EmuHelperSites, DisjointCallsAreNotOneRequest) {
  for (int mode : {0, 1, 2}) {
    SCOPED_TRACE("mode " + std::to_string(mode));
    Bufs m;
    auto r = emu::launch(even_a_odd_b, dim3(1), dim3(32), 0, m.a.get(), m.b.get(), m.out.get(), mode);
    ASSERT_TRUE(r.ok()) << r.summary();
    // Two instructions, each of 16 lanes over 128 bytes: 4 sectors each (one site: 1 request).
    EXPECT_EQ(r.counters.global_load_requests, 2u);
    EXPECT_EQ(r.counters.global_load_sectors, 8u);
    EXPECT_EQ(r.counters.excess_load_sectors(), 4u);  // each half-used
    const auto out = m.out.download();
    EXPECT_EQ(out[0], 1.0f);
    EXPECT_EQ(out[1], 2.0f);
  }
}

TEST(EmuHelperSites, LoopIterationsStayOccurrences) {
  Bufs m;
  auto r = emu::launch(loop_calls, dim3(1), dim3(32), 0, m.a.get(), m.b.get(), m.out.get(), 3);
  ASSERT_TRUE(r.ok()) << r.summary();
  EXPECT_EQ(r.counters.global_load_requests, 4u);  // 3 iterations of one call, then the other call
  EXPECT_EQ(r.counters.global_load_sectors, 16u);
  EXPECT_EQ(r.counters.excess_load_sectors(), 0u);
}

TEST(EmuHelperSites, NestedSiteKeepsTheChain) {
  const emu::Site outer = emu::Site::here();
  const int outer_line = __LINE__ - 1;
  const emu::Site mid = emu::Site::nested(outer);
  const int mid_line = __LINE__ - 1;
  const emu::Site inner = emu::Site::nested(mid);
  const int inner_line = __LINE__ - 1;
  EXPECT_EQ(outer.depth, 0u);
  EXPECT_EQ(outer.chain, 0u);
  EXPECT_EQ(inner.line, static_cast<uint32_t>(inner_line));
  EXPECT_EQ(inner.depth, 2u);
  EXPECT_EQ(inner.callers[0].line, static_cast<uint32_t>(mid_line));
  EXPECT_EQ(inner.callers[1].line, static_cast<uint32_t>(outer_line));
  EXPECT_NE(inner.chain, 0u);
  EXPECT_NE(inner.chain, mid.chain);
  // One helper line reached from two calls: two instructions; from one call: one.
  const auto helper_line = [](const emu::Site& caller) { return emu::Site::nested(caller); };
  const emu::Site first = helper_line(emu::Site::here());
  const emu::Site second = helper_line(emu::Site::here());
  EXPECT_EQ(first.line, second.line);
  EXPECT_FALSE(first.same_instruction(second));
  // The same call executed twice (a loop): one instruction. Two calls on one line: two.
  emu::Site looped[2];
  for (emu::Site& s : looped) s = helper_line(emu::Site::here());
  EXPECT_TRUE(looped[0].same_instruction(looped[1]));
  const emu::Site left = helper_line(emu::Site::here()), right = helper_line(emu::Site::here());
  EXPECT_EQ(left.line, right.line);
  EXPECT_NE(left.callers[0].column, right.callers[0].column);
  EXPECT_FALSE(left.same_instruction(right));
  const std::string name = inner.name();
  const std::string f = file_name(inner.file);
  EXPECT_NE(name.find(f + ":" + std::to_string(inner_line) + " (via "), std::string::npos) << name;
  EXPECT_NE(name.find(f + ":" + std::to_string(mid_line) + ", "), std::string::npos) << name;
  EXPECT_NE(name.find(f + ":" + std::to_string(outer_line) + ")"), std::string::npos) << name;
  EXPECT_EQ(outer.name().find("via"), std::string::npos);
}

// An out-of-bounds load through two helpers (the last lane reads one past the end): the finding
// is at the wrapper call in load_one, with load_via's call and the kernel's call behind it.
constexpr int kOobCallLine = __LINE__ + 3;
__global__ void oob_through_helpers(const float* a, float* out, int) {
  const int lane = threadIdx.x;
  st_global(out + lane, load_via(a + lane + 1));
}

TEST(EmuHelperSites, FindingNamesTheCallChain) {
  DevBuf<float> a(32, "a"), out(32, "out");
  a.upload(std::vector<float>(32, 1.0f));
  auto r = emu::launch(oob_through_helpers, dim3(1), dim3(32), 0, a.get(), out.get(), 0);
  const auto f = findings_of(r, emu::FindingKind::out_of_bounds);
  ASSERT_EQ(f.size(), 1u) << r.summary();
  EXPECT_EQ(f[0].thread.x, 31u);
  const emu::Site& s = f[0].site;
  EXPECT_EQ(file_name(s.file), "test_emu_helper_sites.cpp");
  EXPECT_EQ(s.line, static_cast<uint32_t>(kLoadOneLine));
  ASSERT_EQ(s.depth, 2u);
  EXPECT_EQ(s.callers[0].line, static_cast<uint32_t>(kLoadViaLine));
  EXPECT_EQ(s.callers[1].line, static_cast<uint32_t>(kOobCallLine));
  const std::string text = f[0].to_string();
  const std::string file = file_name(s.file);
  EXPECT_NE(text.find(file + ":" + std::to_string(kLoadOneLine) + " (via "), std::string::npos) << text;
  EXPECT_NE(text.find(file + ":" + std::to_string(kOobCallLine) + ")"), std::string::npos) << text;
}

TEST(EmuHelperSites, DeepChainNameIsCut) {
  emu::Site s = emu::Site::here();
  for (int i = 0; i < emu::Site::kMaxCallers + 2; ++i) s = emu::Site::nested(s);
  EXPECT_EQ(s.depth, static_cast<uint32_t>(emu::Site::kMaxCallers + 2));
  const std::string name = s.name();
  EXPECT_NE(name.find(", ...)"), std::string::npos) << name;
}

}  // namespace
