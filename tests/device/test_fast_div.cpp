// dev::FastDiv and dev::FastDiv32 (src/device/fast_div.h) against the `/` operator: every
// divisor up to 4096 and powers of two, their neighbours and random ones up to 2^62 (2^31), each
// with dividends at the edges (0, multiples of d and their neighbours, 2^31 and 2^32 boundaries,
// 2^63 - 1 or 2^31 - 1) and random ones.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "device/fast_div.h"
#include "support/seed.h"

namespace {

constexpr uint64_t kMaxN = (uint64_t{1} << 63) - 1;

void check_divisor(uint64_t d, tejas::check::Rng& rng) {
  const tejas::dev::FastDiv f = tejas::dev::make_fast_div(d);
  std::vector<uint64_t> ns = {0, 1, d - 1, d, d + 1, 2 * d - 1, 2 * d, (uint64_t{1} << 31) - 1, uint64_t{1} << 31,
                              (uint64_t{1} << 32) - 1, uint64_t{1} << 32, kMaxN, kMaxN - 1, kMaxN / d * d,
                              kMaxN / d * d - 1};
  for (int i = 0; i < 64; ++i) {
    const uint64_t hi = static_cast<uint64_t>(rng.randint(0, 0x7FFFFFFF)), lo = static_cast<uint64_t>(rng.randint(0, 0xFFFFFFFF));
    ns.push_back((hi << 32 | lo) & kMaxN);
    // A random multiple of d (below 2^63), or one past it.
    const uint64_t q = static_cast<uint64_t>(rng.randint(0, 0x7FFFFFFF)) % (kMaxN / d + 1);
    ns.push_back(q * d + static_cast<uint64_t>(rng.randint(0, 1)));
  }
  for (uint64_t n : ns) {
    if (n > kMaxN) continue;
    ASSERT_EQ(tejas::dev::fast_div(n, f), n / d) << "n " << n << " d " << d;
  }
}

TEST(FastDiv, MatchesDivision) {
  TEJAS_SEEDED_TEST_RNG();
  for (uint64_t d = 1; d <= 4096; ++d) check_divisor(d, rng);
  for (int k = 12; k < 63; ++k) {
    for (int64_t delta : {-1, 0, 1}) check_divisor((uint64_t{1} << k) + static_cast<uint64_t>(delta), rng);
  }
  for (uint64_t d : {uint64_t{1} << 63, (uint64_t{1} << 63) - 1, (uint64_t{1} << 62) + 12345, kMaxN - 999})
    check_divisor(d, rng);
  for (int i = 0; i < 2000; ++i) {
    const uint64_t d = (static_cast<uint64_t>(rng.randint(0, 0x3FFFFFFF)) << 32) | static_cast<uint64_t>(rng.randint(1, 0xFFFFFFFF));
    check_divisor(d, rng);
  }
  EXPECT_EQ(tejas::dev::make_fast_div(0).d, 1u);  // 0 is taken as 1
  EXPECT_EQ(tejas::dev::fast_div(kMaxN, tejas::dev::make_fast_div(~uint64_t{0})), 0u);  // clamped to 2^63
}

constexpr uint32_t kMaxN32 = (uint32_t{1} << 31) - 1;

void check_divisor32(uint32_t d, tejas::check::Rng& rng) {
  const tejas::dev::FastDiv32 f = tejas::dev::make_fast_div32(d);
  std::vector<uint64_t> ns = {0, 1, uint64_t{d} - 1, d, uint64_t{d} + 1, 2 * uint64_t{d} - 1, 2 * uint64_t{d},
                              (uint64_t{1} << 16) - 1, uint64_t{1} << 16, kMaxN32, kMaxN32 - 1,
                              kMaxN32 / d * d, kMaxN32 / d * d - 1};
  for (int i = 0; i < 64; ++i) {
    ns.push_back(static_cast<uint64_t>(rng.randint(0, kMaxN32)));
    const uint64_t q = static_cast<uint64_t>(rng.randint(0, kMaxN32)) % (kMaxN32 / d + 1);
    ns.push_back(q * d + static_cast<uint64_t>(rng.randint(0, 1)));
  }
  for (uint64_t n : ns) {
    if (n > kMaxN32) continue;
    ASSERT_EQ(tejas::dev::fast_div(static_cast<uint32_t>(n), f), n / d) << "n " << n << " d " << d;
  }
}

TEST(FastDiv32, MatchesDivision) {
  TEJAS_SEEDED_TEST_RNG();
  for (uint32_t d = 1; d <= 4096; ++d) check_divisor32(d, rng);
  for (int k = 12; k < 32; ++k) {
    for (int64_t delta : {-1, 0, 1}) {
      const int64_t d = (int64_t{1} << k) + delta;
      if (d <= (int64_t{1} << 31)) check_divisor32(static_cast<uint32_t>(d), rng);
    }
  }
  for (int i = 0; i < 2000; ++i) check_divisor32(static_cast<uint32_t>(rng.randint(1, kMaxN32)), rng);
  EXPECT_EQ(tejas::dev::make_fast_div32(0).d, 1u);  // 0 is taken as 1
  EXPECT_EQ(tejas::dev::fast_div(kMaxN32, tejas::dev::make_fast_div32(~uint32_t{0})), 0u);  // clamped to 2^31
}

}  // namespace
