// dev::static_for (src/device/unroll.h) and ptx::mov_opaque (src/device/ptx/mov.h) in the
// emulation build: static_for calls its body once per index, in order, with the index usable as
// a constant expression; mov_opaque is the identity.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "device/ptx/mov.h"
#include "device/unroll.h"

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

}  // namespace
