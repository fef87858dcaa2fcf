// dev::static_for (src/device/unroll.h), ptx::mov_opaque (src/device/ptx/mov.h) and
// dev::Loaded (src/device/loaded.h) in the emulation build: static_for calls its body once per
// index, in order, with the index usable as a constant expression; mov_opaque is the identity;
// a Loaded value read before it was set is a poison_read finding, one set first is not;
// ptx::max_nan_f32 / min_nan_f32 (src/device/ptx/minmax.h) follow max / min.NaN.f32.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "device/loaded.h"
#include "device/ptx/ld_st.h"
#include "device/ptx/minmax.h"
#include "device/ptx/mov.h"
#include "device/unroll.h"
#include "emu/emu.h"

namespace {

TEST(DeviceUnroll, StaticForCallsEachIndexInOrderAsAConstant) {
  std::vector<int> seen;
  int arr[5] = {};
  tejas::dev::static_for<5>([&](auto i) {
    constexpr int k = decltype(i)::value;  // a constant expression in every copy
    static_assert(k >= 0 && k < 5);
    arr[k] = 10 * k + 1;
    seen.push_back(k);
  });
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4}));
  for (int k = 0; k < 5; ++k) EXPECT_EQ(arr[k], 10 * k + 1);
  int calls = 0;
  tejas::dev::static_for<0>([&](auto) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(DeviceMov, OpaqueIsTheIdentity) {
  for (int64_t x : {int64_t{0}, int64_t{-1}, int64_t{42}, std::numeric_limits<int64_t>::min(),
                    std::numeric_limits<int64_t>::max()})
    EXPECT_EQ(tejas::ptx::mov_opaque(x), x);
  // f32: every bit pattern kept, -0 and NaN payloads included.
  for (uint32_t bits : {0x00000000u, 0x80000000u, 0x00000001u, 0x3f800000u, 0x7f800000u, 0x7fc01234u, 0xff800001u}) {
    float x;
    std::memcpy(&x, &bits, 4);
    const float y = tejas::ptx::mov_opaque(x);
    uint32_t got;
    std::memcpy(&got, &y, 4);
    EXPECT_EQ(got, bits);
  }
}

// Each thread loads its input only when `load` (uniform) says so, then reads the value when
// `read` says so: reading without loading is the bug dev::Loaded exists to report.
__global__ void loaded_kernel(const int64_t* in, int64_t* out, bool load, bool read) {
  tejas::dev::Loaded<int64_t> x;
  if (load) x.set(tejas::ptx::ld_global(in + threadIdx.x));
  if (read) tejas::ptx::st_global(out + threadIdx.x, x.get());
}

TEST(DeviceLoaded, ReadBeforeLoadIsAFinding) {
  std::vector<int64_t> in(32), out(32, -1);
  for (int i = 0; i < 32; ++i) in[i] = 1000 + i;
  tejas::emu::ScopedBuffer bi(in.data(), in.size() * 8, tejas::emu::Access::read, "in");
  tejas::emu::ScopedBuffer bo(out.data(), out.size() * 8, tejas::emu::Access::write, "out", false);
  auto rep = tejas::emu::launch(loaded_kernel, dim3(1), dim3(32), 0, in.data(), out.data(), true, true);
  EXPECT_TRUE(rep.ok()) << rep.summary();
  for (int i = 0; i < 32; ++i) EXPECT_EQ(out[i], 1000 + i);
  rep = tejas::emu::launch(loaded_kernel, dim3(1), dim3(32), 0, in.data(), out.data(), false, false);
  EXPECT_TRUE(rep.ok()) << rep.summary();  // never loaded, never read: fine
  rep = tejas::emu::launch(loaded_kernel, dim3(1), dim3(32), 0, in.data(), out.data(), false, true);
  EXPECT_TRUE(rep.has(tejas::emu::FindingKind::poison_read)) << rep.summary();
}

// max / min.NaN.f32 (PTX ISA): the canonical NaN (0x7FFFFFFF) when either operand is NaN, +0
// above -0, else the larger / smaller operand, bit for bit.
TEST(PtxMinMax, NanFormsFollowTheIsa) {
  using tejas::ptx::max_nan_f32;
  using tejas::ptx::min_nan_f32;
  const auto bits = [](float x) {
    uint32_t b;
    std::memcpy(&b, &x, sizeof(b));
    return b;
  };
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (float x : {0.0f, -0.0f, 1.5f, -3.0f, inf, -inf, 1e-40f}) {
    EXPECT_EQ(bits(max_nan_f32(nan, x)), 0x7FFFFFFFu) << x;
    EXPECT_EQ(bits(max_nan_f32(x, -nan)), 0x7FFFFFFFu) << x;
    EXPECT_EQ(bits(min_nan_f32(nan, x)), 0x7FFFFFFFu) << x;
    EXPECT_EQ(bits(min_nan_f32(x, nan)), 0x7FFFFFFFu) << x;
  }
  EXPECT_EQ(bits(max_nan_f32(-0.0f, 0.0f)), bits(0.0f));
  EXPECT_EQ(bits(max_nan_f32(0.0f, -0.0f)), bits(0.0f));
  EXPECT_EQ(bits(min_nan_f32(0.0f, -0.0f)), bits(-0.0f));
  EXPECT_EQ(bits(min_nan_f32(-0.0f, 0.0f)), bits(-0.0f));
  EXPECT_EQ(max_nan_f32(-3.0f, 1.5f), 1.5f);
  EXPECT_EQ(min_nan_f32(-3.0f, 1.5f), -3.0f);
  EXPECT_EQ(max_nan_f32(-inf, 1e-40f), 1e-40f);  // subnormals kept (no .ftz)
  EXPECT_EQ(min_nan_f32(inf, 7.0f), 7.0f);
}

}  // namespace
