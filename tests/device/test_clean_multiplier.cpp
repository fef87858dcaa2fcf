// num::clean_misses / clean_candidates / first_clean_index (src/device/numeric/clean_multiplier.h)
// against brute force: for each scale and candidate multiplier c, every finite bf16 or f16 value
// x is converted as the kernels do (encode(RN(x * c))) and compared with tejas::ref's float64
// sat_rne(x / scale). The check must be exact both ways: a candidate it calls clean writes every
// value right, and one it rejects writes some value wrong (so the per-value path is kept only
// where it is needed). Scales: random full-mantissa ones, calibrated ones (RN(A / max) for a
// 16-bit amax A), 1 / n (whose reciprocals have few bits), few-bit scales (exact ties of x /
// scale), the range edges; each with approximate reciprocals off by up to 2 ulps, as __fdividef's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "device/clean_verdict.h"
#include "device/numeric/clean_multiplier.h"
#include "device/numeric/storage.h"
#include "ops/common/ref_numeric.h"
#include "support/seed.h"

namespace {

using tejas::num::Bf16;
using tejas::num::CodeFormat;
using tejas::num::F16;
namespace num = tejas::num;
namespace cleantest = tejas::cleantest;

template <CodeFormat F>
constexpr tejas::DType kCodeDtype = F == CodeFormat::e4m3   ? tejas::DType::e4m3
                                    : F == CodeFormat::e5m2 ? tejas::DType::e5m2
                                                            : tejas::DType::e2m1;

// Every finite value of S and its exact code at scale sc (float64 division: a non-tie quotient of
// a 16-bit x by an f32 scale lies far more than 2^-53 from every midpoint, so no false tie).
template <CodeFormat F, class S>
struct Exact {
  std::vector<float> x;
  std::vector<uint8_t> code;
  explicit Exact(float sc) : Exact(1.0f, sc) {}
  // The exact product a * b as the divisor (a * b of two f32 numbers is exact in float64);
  // positive_only: the values of S above zero (the codes of -x are those of x with the sign set,
  // on both sides of the check).
  Exact(float a, float b, bool positive_only = false) {
    const double d = static_cast<double>(a) * static_cast<double>(b);
    for (uint32_t b = 0; b < 65536; ++b) {
      const uint16_t bits = static_cast<uint16_t>(b);
      typename S::Raw r;
      std::memcpy(&r, &bits, sizeof bits);
      const float v = S::to_f32(r);
      if (!std::isfinite(v) || (positive_only && !(v > 0.0f))) continue;
      x.push_back(v);
      code.push_back(static_cast<uint8_t>(tejas::ref::encode(kCodeDtype<F>, static_cast<double>(v) / d)));
    }
  }
};

// The first value c writes wrong, or -1.
template <CodeFormat F, class S>
int64_t first_wrong(const Exact<F, S>& e, float c) {
  for (size_t i = 0; i < e.x.size(); ++i)
    if (num::CodeTraits<F>::encode(e.x[i] * c) != e.code[i]) return static_cast<int64_t>(i);
  return -1;
}

struct Tally {
  int scales = 0, c0 = 0, any = 0;
};

// The verdicts for sc against brute force, with approx = RN(1 / sc) moved by `ulps`.
template <CodeFormat F, class S>
void check_scale(float sc, int ulps, Tally& tally, const char* what) {
  ASSERT_TRUE(num::clean_scale_range(sc)) << what;
  const Exact<F, S> exact(sc);
  const num::CleanCandidates cand = cleantest::candidates(1.0f, sc, ulps);
  const uint32_t misses = num::all_clean_misses<F, S>(sc, cand);
  for (int j = 0; j < num::kCleanCandidates; ++j) {
    const int64_t wrong = first_wrong(exact, cand.c[j]);
    const bool missed = (misses >> j & 1u) != 0;
    EXPECT_EQ(missed, wrong >= 0) << what << ": scale " << std::hexfloat << sc << " candidate " << j << " ("
                                  << cand.c[j] << "): the check says " << (missed ? "not clean" : "clean")
                                  << (wrong >= 0 ? ", but it writes x = " : ", and no value is written wrong")
                                  << (wrong >= 0 ? exact.x[static_cast<size_t>(wrong)] : 0.0f) << std::defaultfloat;
  }
  // The first candidate without a miss, which then writes every value right.
  const float c = num::clean_candidate(cand, num::first_clean_index(misses));
  if (c != 0.0f) {
    EXPECT_EQ(first_wrong(exact, c), -1) << what << ": scale " << std::hexfloat << sc;
  }
  ++tally.scales;
  tally.c0 += (misses & 1u) == 0;
  tally.any += c != 0.0f;
}

float random_scale(tejas::check::Rng& rng, int lo_exp, int hi_exp) {
  const uint32_t mant = static_cast<uint32_t>(rng.randint(0, 0x7FFFFF));
  const uint32_t exp = static_cast<uint32_t>(127 + rng.randint(lo_exp, hi_exp));
  return num::bits_f32(exp << 23 | mant);
}

template <CodeFormat F, class S>
void check_family(const char* name) {
  SCOPED_TRACE(name);
  TEJAS_SEEDED_TEST_RNG();
  const auto ulps = [&] { return static_cast<int>(rng.randint(-2, 2)); };
  Tally random, calibrated, reciprocal, named;
  for (int i = 0; i < 24; ++i) check_scale<F, S>(random_scale(rng, -16, 4), ulps(), random, "random");
  // RN(A / max) for a random 16-bit amax A (S's values), as a calibration computes it in f32.
  for (int i = 0; i < 24; ++i) {
    const float a = S::to_f32(S::from_f32(static_cast<float>(std::ldexp(rng.uniform(1.0, 2.0), static_cast<int>(rng.randint(-8, 8))))));
    check_scale<F, S>(a / num::CodeTraits<F>::kMax, ulps(), calibrated, "calibrated");
  }
  // 1 / n x 2^k: reciprocals with few bits (n x 2^-k), so exact ties of x c0, all on one side.
  for (int i = 0; i < 12; ++i) {
    const float n = static_cast<float>(rng.randint(3, 255) | 1);
    check_scale<F, S>(std::ldexp(1.0f / n, static_cast<int>(rng.randint(-6, 2))), ulps(), reciprocal, "1 / n");
  }
  // The bench's scale, scales a config file would hold, few-bit scales (x / sc has exact ties),
  // the checked range's edges and their neighbours.
  for (const float sc : {0.05f, 0.1f, 0.02f, 0.37f, 1.0f / 3.0f, 3.0f, 1.5f, 0.75f, 0.0546875f, 7.0f / 1024.0f,
                         1.0f + 0x1p-23f, 0x1.fffffep-1f, num::kCleanMinScale, num::kCleanMaxScale,
                         0x1.3p-100f, 0x1.fffffep99f})
    for (const int u : {-2, 0, 2}) check_scale<F, S>(sc, u, named, "named");
  // Rates: the kernels' speed depends on them, their correctness does not. Loose bounds (host runs
  // of 24 scales per kind: every random one clean with c0, 23-24 calibrated ones with some
  // candidate), so that a candidate set that stops serving common scales is noticed.
  for (const auto& [what, t] : {std::pair{"random", random}, std::pair{"calibrated", calibrated},
                                std::pair{"1 / n", reciprocal}, std::pair{"named", named}})
    std::printf("  %s, %s scales: %d, first candidate clean %d, some candidate clean %d\n", name, what, t.scales,
                t.c0, t.any);
  EXPECT_GE(random.any, random.scales - 4);
  EXPECT_GE(calibrated.any, calibrated.scales - 6);
}

// nvfp4's divisors (ops/quant/kernel.cuh's clean table): block_scale * tensor_scale for every
// positive e4m3 block scale (e2m1 codes, the two-factor form of clean_misses), and 6 *
// tensor_scale (the block scale's own e4m3 code from the group's 16-bit amax), at tensor scales
// that are random, calibrated (RN(A / 2688) for a 16-bit global amax A, as a serving engine sets
// it), 1 (each divisor a block scale, whose few bits make exact ties of x / bs: 3 x 2^k has no
// clean multiplier), few-bit scales, and the validated range's ends (positive x: the check and
// the conversions are symmetric in the sign). Candidates from RN(1 / RN(a b)) moved by up
// to 2 ulps, as the kernel's fdividef. Every verdict against brute force over every finite bf16 /
// f16 value; no value written wrong by a clean candidate.
template <class S>
void check_nvfp4(const char* name) {
  SCOPED_TRACE(name);
  TEJAS_SEEDED_TEST_RNG();
  const float global_amax =
      S::to_f32(S::from_f32(static_cast<float>(std::ldexp(rng.uniform(1.0, 2.0), static_cast<int>(rng.randint(-4, 8))))));
  // 0.05 and 5 / 64: few significant bits (divisors that take the second candidate, and a 6 ts
  // with none).
  const float tensor_scales[] = {1.0f, 0x1p-64f, 0x1p64f, random_scale(rng, -20, 4), global_amax / 2688.0f, 0.05f,
                                 0.078125f};
  int codes = 0, clean_codes = 0;
  for (const float ts : tensor_scales) {
    const int u = static_cast<int>(rng.randint(-2, 2));
    const auto check = [&]<CodeFormat F>(float a, const Exact<F, S>& exact, const char* what) {
      const num::CleanCandidates cand = cleantest::candidates(a, ts, u);
      const uint32_t misses = num::all_clean_misses<F, S>(a, ts, cand);
      for (int j = 0; j < num::kCleanCandidates; ++j) {
        const int64_t wrong = first_wrong(exact, cand.c[j]);
        EXPECT_EQ((misses >> j & 1u) != 0, wrong >= 0)
            << what << " " << std::hexfloat << a << " x tensor scale " << ts << ", candidate " << j << " ("
            << cand.c[j] << ")" << (wrong >= 0 ? ": writes x = " : ": writes every value right, yet rejected ")
            << (wrong >= 0 ? exact.x[static_cast<size_t>(wrong)] : 0.0f) << std::defaultfloat;
      }
      return num::first_clean_index(misses) < num::kCleanCandidates;
    };
    check.template operator()<CodeFormat::e4m3>(6.0f, Exact<CodeFormat::e4m3, S>(6.0f, ts, true), "6");
    for (int b = 1; b <= 0x7E; ++b) {
      const float bs = num::e4m3_to_f32(static_cast<uint8_t>(b));
      clean_codes += check.template operator()<CodeFormat::e2m1>(bs, Exact<CodeFormat::e2m1, S>(bs, ts, true), "block scale");
      ++codes;
    }
  }
  std::printf("  %s: %d of %d (tensor scale, block scale) divisors with a clean multiplier\n", name, clean_codes, codes);
}
TEST(CleanMultiplier, Nvfp4VerdictsMatchEveryValueBf16) { check_nvfp4<Bf16>("nvfp4, bf16"); }
TEST(CleanMultiplier, Nvfp4VerdictsMatchEveryValueF16) { check_nvfp4<F16>("nvfp4, f16"); }

TEST(CleanMultiplier, VerdictsMatchEveryValueE4m3Bf16) { check_family<CodeFormat::e4m3, Bf16>("e4m3, bf16"); }
TEST(CleanMultiplier, VerdictsMatchEveryValueE4m3F16) { check_family<CodeFormat::e4m3, F16>("e4m3, f16"); }
TEST(CleanMultiplier, VerdictsMatchEveryValueE5m2Bf16) { check_family<CodeFormat::e5m2, Bf16>("e5m2, bf16"); }
TEST(CleanMultiplier, VerdictsMatchEveryValueE5m2F16) { check_family<CodeFormat::e5m2, F16>("e5m2, f16"); }

// The verdicts the kernel tests' scales are chosen for, whatever the reciprocal approximation
// (up to 2 ulps off, as __fdividef's; the kernels' Newton step makes them one), for bf16 and f16:
// e4m3 - 0.37 and 1 + 2^-23 the first candidate, 0.05 (the bench's; c0 = 20 makes exact ties of
// 20 x, whose quotients lie just below their midpoints) the second, 0.02 the third, 7 / 128 none
// (x / sc has exact ties that no f32 multiplier lands on: the per-value path); e5m2 - the same
// but 0.02, which takes the first.
template <CodeFormat F, class S>
void expect_verdict(float sc, int want) {
  const auto [lo, hi] = cleantest::verdict_range<F, S>(1.0f, sc);
  EXPECT_EQ(lo, want) << "scale " << sc << ": the lowest verdict over the reciprocals";
  EXPECT_EQ(hi, want) << "scale " << sc << ": the highest verdict over the reciprocals";
}
template <CodeFormat F>
void expect_verdicts() {
  const int none = num::kCleanCandidates;
  for (const auto& [sc, want] : {std::pair{0.37f, 0}, {0x1.000002p0f, 0}, {0.05f, 1},
                                 {0.02f, F == CodeFormat::e4m3 ? 2 : 0}, {0.0546875f, none}}) {
    expect_verdict<F, Bf16>(sc, want);
    expect_verdict<F, F16>(sc, want);
  }
}
// cleantest::verdict_range (the kernel tests' bounds on a block's verdicts) against brute force:
// for each scale, the first candidate that writes every value right, for each reciprocal the
// device may start from (-2..+2 ulps), lowest and highest. Scales 1 / n x 2^k, calibrated ones,
// and three whose first candidate depends on the reciprocal (30 in 5,000,000 random scales do:
// the Newton step lands the others on one c0; none of 12 such scales checked has a verdict that
// does, so the range is a bound the kernels' verdicts have not been seen to need).
template <CodeFormat F, class S>
void verdict_range_matches_brute_force() {
  TEJAS_SEEDED_TEST_RNG();
  std::vector<float> scales = {0x1.a15832p+5f, 0x1.4499eep-19f, 0x1.bd0d52p-4f};
  for (int n = 3; n < 200; n += 2) scales.push_back(std::ldexp(1.0f / static_cast<float>(n), static_cast<int>(rng.randint(-6, 2))));
  for (int i = 0; i < 24; ++i)
    scales.push_back(S::to_f32(S::from_f32(static_cast<float>(std::ldexp(rng.uniform(1.0, 2.0), static_cast<int>(rng.randint(-8, 8)))))) /
                     num::CodeTraits<F>::kMax);
  for (const float sc : scales) {
    const Exact<F, S> exact(sc);
    int lo = num::kCleanCandidates, hi = 0;
    for (int u = -cleantest::kApproxUlps; u <= cleantest::kApproxUlps; ++u) {
      const num::CleanCandidates cand = cleantest::candidates(1.0f, sc, u);
      int j = 0;
      while (j < num::kCleanCandidates && first_wrong(exact, cand.c[j]) >= 0) ++j;
      lo = std::min(lo, j);
      hi = std::max(hi, j);
    }
    const auto [vlo, vhi] = cleantest::verdict_range<F, S>(1.0f, sc);
    EXPECT_EQ(vlo, lo) << "scale " << std::hexfloat << sc;
    EXPECT_EQ(vhi, hi) << "scale " << std::hexfloat << sc;
  }
  // The three scales' candidates do move with the reciprocal.
  for (const float sc : {0x1.a15832p+5f, 0x1.4499eep-19f, 0x1.bd0d52p-4f}) {
    bool moves = false;
    for (int u = -cleantest::kApproxUlps; u <= cleantest::kApproxUlps; ++u)
      moves |= cleantest::candidates(1.0f, sc, u).c[0] != cleantest::candidates(1.0f, sc, 0).c[0];
    EXPECT_TRUE(moves) << "scale " << std::hexfloat << sc;
  }
}
TEST(CleanMultiplier, VerdictRangeMatchesBruteForce) {
  verdict_range_matches_brute_force<CodeFormat::e4m3, Bf16>();
  verdict_range_matches_brute_force<CodeFormat::e4m3, F16>();
  verdict_range_matches_brute_force<CodeFormat::e5m2, Bf16>();
  verdict_range_matches_brute_force<CodeFormat::e5m2, F16>();
}

TEST(CleanMultiplier, KernelTestScalesTakeTheirVerdicts) {
  expect_verdicts<CodeFormat::e4m3>();
  expect_verdicts<CodeFormat::e5m2>();
}

}  // namespace
