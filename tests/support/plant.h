// Hostile values planted into a test's input tensor (16-bit or f32 floating point), at random
// elements drawn from the test's seeded Rng.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "check/host_tensor.h"

namespace tejas::testsupport {

// NaN, +Inf and -Inf in turn at `n` random elements (an element may be drawn twice).
inline void plant_non_finite(check::HostTensor& t, check::Rng& rng, int64_t n) {
  constexpr double kValues[] = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                                -std::numeric_limits<double>::infinity()};
  for (int64_t i = 0; i < n && t.numel() > 0; ++i) t.set_flat(rng.randint(0, t.numel() - 1), kValues[i % 3]);
}

// The dtype's smallest subnormal: 2^-133 (bf16), 2^-24 (f16), 2^-149 (f32).
inline double smallest_subnormal(DType dt) {
  EXPECT_TRUE(dt == DType::bf16 || dt == DType::f16 || dt == DType::f32) << "plant: " << dtype_name(dt);
  return std::ldexp(1.0, dt == DType::bf16 ? -133 : dt == DType::f16 ? -24 : -149);
}

// Zeros and subnormals: a random run of 128 elements (a quantization group of every kind, a head
// row) set to +0, another run (a different one) to the smallest subnormal with random signs, and
// `n` scattered smallest subnormals. Below 256 elements the two runs are the tensor's halves.
inline void plant_tiny(check::HostTensor& t, check::Rng& rng, int64_t n) {
  const double tiny = smallest_subnormal(t.dtype());
  const int64_t numel = t.numel(), runs = numel / 128;
  int64_t zero_run = 0, tiny_run = 1, len = 128;
  if (runs >= 2) {
    zero_run = rng.randint(0, runs - 1);
    tiny_run = (zero_run + 1 + rng.randint(0, runs - 2)) % runs;
  } else {
    len = (numel + 1) / 2;
  }
  for (int64_t i = zero_run * len; i < std::min(numel, (zero_run + 1) * len); ++i) t.set_flat(i, 0.0);
  for (int64_t i = tiny_run * len; i < std::min(numel, (tiny_run + 1) * len); ++i)
    t.set_flat(i, rng.randint(0, 1) != 0 ? tiny : -tiny);
  for (int64_t i = 0; i < n && numel > 0; ++i) t.set_flat(rng.randint(0, numel - 1), tiny);
}

}  // namespace tejas::testsupport
