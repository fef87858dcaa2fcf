// Clean multipliers: fp8 / fp4 codes of x / sc from one f32 product per value, with no midpoint
// test, for every x of a 16-bit dtype (bf16, f16) at a given scale sc, when that scale allows it.
//
// A multiplier c > 0 is clean for (F, S, sc) when encode_F(RN(x * c)) == sat_rne_F(x / sc) for
// every finite x of S (encode: round to nearest even, saturating, as the cvt instructions do).
// Whether a candidate is clean is decided exactly, one test per rounding midpoint of F below its
// largest value (kCleanItems<F>: 126 for e4m3, 123 for e5m2, 7 for e2m1; above it both sides
// saturate), and a thread block shares those tests out once (ops/rope/kernel.cuh's clean_scales,
// ops/quant/kernel.cuh's nvfp4 clean table), instead of every value paying for a near-midpoint
// test (exact_round.h's near_key / round_quotient).
//
// Why one x per midpoint decides it. Let q = x / sc, t = RN(x * c) and |c sc - 1| <= E, with
// E < 2^-20 for the candidates below (c0 within ~1 ulp of 1 / sc, the others 2 ulps from c0, so
// up to ~3 from 1 / sc: E <= 2^-21.7 measured) and sc in [kCleanMinScale, kCleanMaxScale]. t's code differs from q's only if a midpoint m lies
// between them (or on one of them), so |q - m| <= |t - q| <= (E + 2^-24) q: x lies within
// ~2^-20 x of m sc. Neighbouring values of S are more than 2^-8 x apart (bf16; f16 2^-11; more
// below the normal ranges), so at most one x can, and it is the S value nearest to m sc:
// xn = RN_S(RN_f32(m sc)) (the inner rounding moves m sc by 2^-24 of it, far less than half an S
// spacing). The test then compares, for xn alone:
// - the exact code: below m, above m or the even one of the pair, by the sign of m sc - xn from
//   one fma (exact: m sc and xn are multiples of 2^-140 at these scales, so a nonzero
//   difference never rounds to zero);
// - the code of t = RN(xn c): below m, above m, or the even one when t == m (the conversion's
//   tie rule).
// A test fails exactly when xn itself would be written wrong: the check is exact both ways (a
// clean verdict is never wrong, and a candidate that fails has a value it would misround).
// Values far from every midpoint need no test: their t lies on q's side of each.
//
// Candidates (clean_candidates): c0 = 1 / sc refined by one Newton step from an approximation
// (within ~1 ulp), then c0 moved 2 ulps down and 2 ulps up. c0 is clean for most scales with a
// full mantissa (a value of S lands within c0's error of a midpoint for ~1 % of bf16 scales,
// ~6 % of f16 ones). The moved ones serve scales whose quotients have exact ties of x c0 (1 / sc
// with few bits: sc = 0.05f, c0 = 20, where every x with 20 x on a midpoint has x / sc just
// below it) or near-ties all on one side (sc = RN(A / 448) for a 16-bit amax A, a calibrated
// scale: x / sc = (448 x / A) / rho with rho = 448 sc / A within 2^-24 of 1). Scales where x / sc
// itself has exact ties (sc with few significant bits, such as 3 or 1.5) are clean only if c0
// lands the ties exactly; else none is and the caller keeps the per-value test.
// tests/device/test_clean_multiplier.cpp checks the verdicts against every bf16 and f16 value.
#pragma once
#include <cstdint>
#include "device/numeric/exact_round.h"

namespace tejas::num {

// The scales checked (outside, a caller keeps the per-value test): products m * sc stay normal
// and the residuals exact (see above).
inline constexpr float kCleanMinScale = 0x1p-100f;
inline constexpr float kCleanMaxScale = 0x1p100f;

// The code of F's largest finite value: the midpoints tested lie between codes i and i + 1 for
// i < kCleanItems<F>.
template <CodeFormat F>
inline constexpr int kCleanItems = F == CodeFormat::e4m3 ? 0x7E : F == CodeFormat::e5m2 ? 0x7B : 0x7;

inline constexpr int kCleanCandidates = 3;
struct CleanCandidates {
  float c[kCleanCandidates];
};

// The candidates for sc (in [kCleanMinScale, kCleanMaxScale]) from approx ~ 1 / sc (a few ulps:
// __fdividef's 2 on the device).
__host__ __device__ inline CleanCandidates clean_candidates(float sc, float approx) {
  constexpr uint32_t kBiasUlps = 2;
  const float c0 = fmaf(approx, fmaf(-approx, sc, 1.0f), approx);
  return {{c0, bits_f32(f32_bits(c0) - kBiasUlps), bits_f32(f32_bits(c0) + kBiasUlps)}};
}

// Test i (0 <= i < kCleanItems<F>), the midpoint between codes i and i + 1, for each candidate:
// bit j set when candidate j writes the S value nearest to that midpoint times sc (xn) wrong.
// sc in [kCleanMinScale, kCleanMaxScale]; the candidates clean_candidates' (the one-value
// argument needs c within ~2^-13 of 1 / sc, f16's spacing: a multiplier farther off can misround
// other values than xn).
// The divisor may also be an exact product a * b that f32 need not hold (nvfp4's block_scale *
// tensor_scale: a the block scale or 6, b the tensor scale) when m * a is exact for every
// midpoint m (m has at most 5 significant bits, so any a of at most 19 significant bits, at most
// 448 in magnitude, will do; a block scale has 4, 6 has 2) and a * b lies in the checked range:
// xn is then RN_S(RN(m * a * b)), the S value nearest to m a b (or, where m a b lies within
// 2^-24 of it from halfway between two S values, either of them: both are then about half an S
// spacing away, so no x is within 2^-20 and neither needs the test), and the residual's sign comes
// from one fma(m * a, b, -xn) (the exact residual, a multiple of ulp(m a) ulp(b) and of xn's ulp,
// is far above f32's smallest subnormal at these scales, so it never rounds to zero). The candidates are clean_candidates' for RN(a * b), within ~1 ulp more of
// 1 / (a * b) (E still below 2^-20: 2^-21.57 the largest found over 574 tensor scales, every
// block scale and 6, approximations 2 ulps off). clean_misses(sc, i, cand) is the product 1 * sc.
template <CodeFormat F, class S>
__host__ __device__ inline uint32_t clean_misses(float a, float b, int i, const CleanCandidates& cand) {
  const float lo = CodeTraits<F>::decode(static_cast<uint8_t>(i));
  const float hi = CodeTraits<F>::decode(static_cast<uint8_t>(i + 1));
  const float m = (lo + hi) * 0.5f;  // exact: both on F's grid, their sum below 2^17
  const float ma = m * a;            // exact (above)
  const float xn = S::to_f32(S::from_f32(ma * b));
  if (!(xn <= kF32Max)) return 0;  // m a b beyond S's range: no finite x near it
  const int even = i + (i & 1);
  const float r = fmaf(ma, b, -xn);  // m a b - xn, its sign exact
  const int exact = r > 0.0f ? i : r < 0.0f ? i + 1 : even;
  uint32_t misses = 0;
  for (int j = 0; j < kCleanCandidates; ++j) {
    const float t = xn * cand.c[j];
    const int code = t < m ? i : t > m ? i + 1 : even;
    misses |= static_cast<uint32_t>(code != exact) << j;
  }
  return misses;
}
template <CodeFormat F, class S>
__host__ __device__ inline uint32_t clean_misses(float sc, int i, const CleanCandidates& cand) {
  return clean_misses<F, S>(1.0f, sc, i, cand);
}

// The index of the first clean candidate given the misses of every test (OR-ed), or
// kCleanCandidates (none).
__host__ __device__ inline int first_clean_index(uint32_t misses) {
  int j = 0;
  while (j < kCleanCandidates && (misses >> j & 1u)) ++j;
  return j;
}
// Candidate j (0 <= j <= kCleanCandidates), or 0 for j = kCleanCandidates (none). Selects, not an
// indexed read: a runtime index would put the candidates in local memory on the device.
__host__ __device__ inline float clean_candidate(const CleanCandidates& cand, int j) {
  static_assert(kCleanCandidates == 3, "the selects below name each candidate");
  return j == 0 ? cand.c[0] : j == 1 ? cand.c[1] : j == 2 ? cand.c[2] : 0.0f;
}
// Every test's misses OR-ed, on one thread: the host's verdict (a thread block shares the tests
// out instead: ops/rope/kernel.cuh's find_clean_scales).
template <CodeFormat F, class S>
inline uint32_t all_clean_misses(float a, float b, const CleanCandidates& cand) {
  uint32_t misses = 0;
  for (int i = 0; i < kCleanItems<F>; ++i) misses |= clean_misses<F, S>(a, b, i, cand);
  return misses;
}
template <CodeFormat F, class S>
inline uint32_t all_clean_misses(float sc, const CleanCandidates& cand) {
  return all_clean_misses<F, S>(1.0f, sc, cand);
}

// Whether sc takes the check at all.
__host__ __device__ inline bool clean_scale_range(float sc) {
  return sc >= kCleanMinScale && sc <= kCleanMaxScale;
}

}  // namespace tejas::num
