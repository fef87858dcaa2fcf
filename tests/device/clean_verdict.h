// The clean-multiplier verdicts the host expects (src/device/numeric/clean_multiplier.h), for the
// tests of the checks themselves and of the kernels that take them (kv_cache_write's and
// rope_kv_cache_write's fp8 caches, quant_mx's nvfp4 version 7).
//
// A divisor is an exact product a x b (nvfp4: a block scale or 6 times the tensor scale; a = 1
// for one scale). The kernels' candidates come from an approximation of 1 / RN(a b) within
// kApproxUlps f32 ulps (__fdividef's), refined by one Newton step; a verdict is the index of the
// first clean candidate, or num::kCleanCandidates for none (also outside num::clean_scale_range).
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>

#include "device/numeric/clean_multiplier.h"

namespace tejas::cleantest {

inline constexpr int kApproxUlps = 2;

// The candidates for the divisor a x b from RN(1 / RN(a b)) moved by `ulps`.
inline num::CleanCandidates candidates(float a, float b, int ulps) {
  const float d = a * b;
  return num::clean_candidates(d, num::bits_f32(num::f32_bits(1.0f / d) + static_cast<uint32_t>(ulps)));
}

// The verdict for a x b with the approximation `ulps` off.
template <num::CodeFormat F, class S>
int verdict(float a, float b, int ulps = 0) {
  if (!num::clean_scale_range(a * b)) return num::kCleanCandidates;
  return num::first_clean_index(num::all_clean_misses<F, S>(a, b, candidates(a, b, ulps)));
}

// The lowest and highest verdict over every approximation the device may start from: equal where
// the verdict does not depend on it (the Newton step gives one c0 for all of them but about 6 in
// 10^6 random scales, and none of 12 such scales checked changed a verdict;
// CleanMultiplier.VerdictRangeMatchesBruteForce).
template <num::CodeFormat F, class S>
std::pair<int, int> verdict_range(float a, float b) {
  int lo = num::kCleanCandidates, hi = 0;
  for (int u = -kApproxUlps; u <= kApproxUlps; ++u) {
    const int j = verdict<F, S>(a, b, u);
    lo = std::min(lo, j);
    hi = std::max(hi, j);
  }
  return {lo, hi};
}

}  // namespace tejas::cleantest
