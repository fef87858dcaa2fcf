// GoogleTest helpers: every randomized test takes a fresh seed and prints it on failure.
#pragma once
#include <cstdint>
#include <gtest/gtest.h>

#include "check/cuda_mem.h"
#include "check/host_tensor.h"

// Declares `seed` and `rng` for the current test; a failure message carries the seed.
#define TEJAS_SEEDED_TEST_RNG()                              \
  const uint64_t seed = ::tejas::check::fresh_seed();        \
  SCOPED_TRACE(::tejas::check::seed_note(seed));             \
  ::tejas::check::Rng rng(seed)

// Asserts a Status is ok, printing its message otherwise.
#define TEJAS_ASSERT_OK(expr)                                       \
  do {                                                              \
    const ::tejas::Status s_ = (expr);                              \
    ASSERT_TRUE(s_.ok()) << s_.to_string();                         \
  } while (0)

#define TEJAS_EXPECT_INVALID(expr, needle)                                               \
  do {                                                                                   \
    const ::tejas::Status s_ = (expr);                                                   \
    EXPECT_EQ(s_.code(), ::tejas::StatusCode::invalid_argument) << s_.to_string();      \
    EXPECT_NE(s_.message().find(needle), std::string::npos)                              \
        << "message should name '" << (needle) << "': " << s_.message();                \
  } while (0)

namespace tejas::testsupport {

// A generator for GPU cases placed among a test's emulator cases: seeded from `rng`'s next draw
// without advancing `rng`, so the emulator cases draw the same inputs under a seed with or without
// a GPU (an emulator failure in a GPU run replays on a machine without one).
inline check::Rng side_rng(const check::Rng& rng) {
  check::Rng ahead = rng;
  return check::Rng(ahead.next() ^ 0x9E3779B97F4A7C15ull);
}

}  // namespace tejas::testsupport

// Skips the test, with the reason ("no GPU: ..."), unless a CUDA device is usable.
#define TEJAS_REQUIRE_CUDA()                                                          \
  do {                                                                                \
    std::string why_;                                                                 \
    if (!::tejas::check::cuda_available(&why_)) GTEST_SKIP() << "no GPU: " << why_;   \
  } while (0)
