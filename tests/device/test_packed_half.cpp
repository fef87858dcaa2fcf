// src/device/numeric/packed_half.h on the host (the emulator's model of the packed bf16 / f16
// instructions): each packed operation against the float64 reference rounded once, and the
// packed e2m1 conversion against the f32 conversion (itself checked against the headers and the
// float64 model in test_numeric.cpp) on every non-NaN 16-bit value in each lane. The device side
// (the half2 intrinsics and __vminu2) runs through the kernels in the cuda twins of the packed
// kernel tests (QuantMxKernel / DequantMxKernel.CudaMatchesReference: every amax binade with
// ties, every ue8m0 scale with every e2m1 code) when a GPU is present.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>

#include "device/numeric/packed_half.h"
#include "ops/common/ref_numeric.h"
#include "support/seed.h"

using namespace tejas;

namespace {

constexpr int kMaxReported = 8;
constexpr int kRandomPairs = 1 << 18;

template <class H>
DType dtype_of() {
  return std::is_same_v<H, num::Bf16> ? DType::bf16 : DType::f16;
}

template <class H>
bool is_nan16(uint32_t v) {
  return std::isnan(H::to_f32(static_cast<uint16_t>(v)));
}

// Every non-NaN value v in the low lane (and, in a second pass, the high lane) beside a value
// from a fixed scramble of the others.
template <class H>
void check_e2m1_lanes() {
  int64_t bad = 0, checked = 0;
  for (int lane = 0; lane < 2; ++lane) {
    for (uint32_t v = 0; v < (1u << 16); ++v) {
      uint32_t other = (v * 40503u + 12345u) & 0xFFFFu;
      if (is_nan16<H>(v)) continue;
      if (is_nan16<H>(other)) other = 0x8000;  // -0
      const uint32_t lo = lane == 0 ? v : other, hi = lane == 0 ? other : v;
      const uint32_t got = num::half2_to_e2m1_lanes<H>(lo | (hi << 16));
      const uint32_t want = num::detail::f32_to_e2m1_arith(H::to_f32(static_cast<uint16_t>(lo))) |
                            (static_cast<uint32_t>(num::detail::f32_to_e2m1_arith(H::to_f32(static_cast<uint16_t>(hi)))) << 16);
      ++checked;
      if (got != want && ++bad <= kMaxReported)
        ADD_FAILURE() << "lanes " << std::hex << lo << ", " << hi << ": got " << got << " want " << want;
    }
  }
  EXPECT_EQ(bad, 0) << bad << " of " << checked;
}

// a op b rounded once to H (the reference's correctly rounded encode of the double result).
template <class H>
void check_ops(check::Rng& rng) {
  const DType dt = dtype_of<H>();
  int64_t bad = 0;
  for (int i = 0; i < kRandomPairs; ++i) {
    const auto a = static_cast<uint32_t>(rng.randint(0, 0xFFFFFFFF)), b = static_cast<uint32_t>(rng.randint(0, 0xFFFFFFFF));
    for (int lane = 0; lane < 2; ++lane) {
      const auto la = static_cast<uint16_t>(a >> (16 * lane)), lb = static_cast<uint16_t>(b >> (16 * lane));
      if (is_nan16<H>(la) || is_nan16<H>(lb)) continue;
      const double x = H::to_f32(la), y = H::to_f32(lb);
      const auto lane_of = [&](uint32_t w) { return static_cast<uint16_t>(w >> (16 * lane)); };
      const uint16_t mul = lane_of(num::hmul2<H>(a, b)), add = lane_of(num::hadd2<H>(a, b));
      const uint16_t mn = lane_of(num::hmin2<H>(a, b)), mx = lane_of(num::hmax2<H>(a, b));
      const double p = x * y;  // exact in double
      bool ok = std::isnan(p) ? is_nan16<H>(mul) : mul == ref::encode(dt, p);
      ok = ok && (std::isnan(x + y) ? is_nan16<H>(add) : H::to_f32(add) == static_cast<float>(ref::decode(dt, ref::encode(dt, x + y))));
      // min / max: bit for bit the smaller / larger operand (equal operands: the same bits, or
      // two zeros, checked below).
      if (x != y) ok = ok && mn == (x < y ? la : lb) && mx == (x < y ? lb : la);
      // min / max.NaN agree with them away from NaN.
      const uint16_t mn_nan = lane_of(num::hmin2_nan<H>(a, b)), mx_nan = lane_of(num::hmax2_nan<H>(a, b));
      if (x != y) ok = ok && mn_nan == mn && mx_nan == mx;
      if (!ok && ++bad <= kMaxReported)
        ADD_FAILURE() << std::hex << "lane " << lane << " a " << la << " b " << lb << ": mul " << mul << " add " << add
                      << " min " << mn << " max " << mx;
    }
  }
  EXPECT_EQ(bad, 0);
  // min / max with one NaN lane return the other operand (as min / max.bf16x2 / .f16x2).
  const uint32_t nan2 = 0x7FFF7FFFu, one = std::is_same_v<H, num::Bf16> ? 0x3F803F80u : 0x3C003C00u;
  EXPECT_EQ(num::hmin2<H>(nan2, one), one);
  EXPECT_EQ(num::hmax2<H>(one, nan2), one);
  // min / max.NaN: a NaN in either operand's lane gives that lane the canonical NaN, the other
  // lane its own result (a clamp that keeps NaN, as `x > c ? c : x` does).
  const uint32_t nan_lo = (one & 0xFFFF0000u) | 0x7FC1u, two = 0x40004000u;  // 2.0 in both
  EXPECT_EQ(num::hmin2_nan<H>(nan_lo, two), (one & 0xFFFF0000u) | num::kCanonicalNaN16);
  EXPECT_EQ(num::hmax2_nan<H>(two, nan_lo), (two & 0xFFFF0000u) | num::kCanonicalNaN16);
  EXPECT_EQ(num::hmin2_nan<H>(two, nan2), 0x7FFF7FFFu);
  EXPECT_EQ(num::hmax2_nan<H>(nan2, nan2), 0x7FFF7FFFu);
  // Two NaNs (non-canonical payloads): the canonical NaN from every form (the headers' __hmin2 /
  // __hmax2: "If both inputs are NaNs, then canonical NaN is returned").
  const uint32_t nan_a = 0x7FC17FC1u, nan_b = 0xFFC2FFC2u;
  EXPECT_EQ(num::hmin2<H>(nan_a, nan_b), 0x7FFF7FFFu);
  EXPECT_EQ(num::hmax2<H>(nan_b, nan_a), 0x7FFF7FFFu);
  // Zeros of both signs, either order, each lane its own: -0 below +0 ("+0.0 > -0.0").
  const uint32_t lo_neg = 0x00008000u, hi_neg = 0x80000000u;  // (-0 low, +0 high), (+0 low, -0 high)
  EXPECT_EQ(num::hmin2<H>(lo_neg, hi_neg), 0x80008000u);
  EXPECT_EQ(num::hmax2<H>(lo_neg, hi_neg), 0x00000000u);
  EXPECT_EQ(num::hmin2<H>(hi_neg, lo_neg), 0x80008000u);
  EXPECT_EQ(num::hmax2<H>(hi_neg, lo_neg), 0x00000000u);
  EXPECT_EQ(num::hmin2_nan<H>(lo_neg, hi_neg), 0x80008000u);
  EXPECT_EQ(num::hmax2_nan<H>(hi_neg, lo_neg), 0x00000000u);
}

}  // namespace

TEST(PackedHalf, E2m1LanesMatchTheF32ConversionOnEveryValue) {
  check_e2m1_lanes<num::Bf16>();
  check_e2m1_lanes<num::F16>();
}

TEST(PackedHalf, OperationsRoundOnce) {
  TEJAS_SEEDED_TEST_RNG();
  check_ops<num::Bf16>(rng);
  check_ops<num::F16>(rng);
}

// The f32 form (round to odd at bf16 precision, then the packed conversion) against the f32
// conversion of convert.h: every f32 whose low 16 bits are one of a few patterns (all exponents
// and signs; zero, the sticky boundary, the halfway bits) and random f32 bit patterns, in both
// lanes; NaN excluded (the kernels replace NaN groups whole).
TEST(PackedHalf, F32PairsRoundToOddThenPackedMatchTheF32Conversion) {
  TEJAS_SEEDED_TEST_RNG();
  const uint32_t lows[] = {0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF};
  int64_t bad = 0, checked = 0;
  const auto one = [&](uint32_t a, uint32_t b) {
    const float x = std::bit_cast<float>(a), y = std::bit_cast<float>(b);
    if (std::isnan(x) || std::isnan(y)) return;
    const uint32_t got = num::f32x2_to_e2m1_lanes(x, y);
    const uint32_t want = num::detail::f32_to_e2m1_not_nan(x) | (uint32_t{num::detail::f32_to_e2m1_not_nan(y)} << 16);
    ++checked;
    if (got != want && ++bad <= kMaxReported)
      ADD_FAILURE() << std::hex << "f32 bits " << a << ", " << b << ": got " << got << " want " << want;
  };
  for (uint32_t top = 0; top < (1u << 16); ++top)
    for (const uint32_t low : lows) {
      const uint32_t v = (top << 16) | low;
      one(v, static_cast<uint32_t>(rng.randint(0, 0xFFFFFFFF)));
      one(static_cast<uint32_t>(rng.randint(0, 0xFFFFFFFF)), v);
    }
  for (int i = 0; i < kRandomPairs; ++i)
    one(static_cast<uint32_t>(rng.randint(0, 0xFFFFFFFF)), static_cast<uint32_t>(rng.randint(0, 0xFFFFFFFF)));
  EXPECT_EQ(bad, 0) << bad << " of " << checked;
  // Packing two words: four nibbles.
  EXPECT_EQ(num::pack_e2m1_lanes(0x00020001u, 0x00040003u), 0x4321u);
}

TEST(PackedHalf, PackE2m1Lanes) {
  TEJAS_SEEDED_TEST_RNG();
  for (int i = 0; i < 1000; ++i) {
    uint32_t c[4], want = 0;
    for (int w = 0; w < 4; ++w) {
      const auto e0 = static_cast<uint32_t>(rng.randint(0, 15)), e1 = static_cast<uint32_t>(rng.randint(0, 15));
      c[w] = e0 | (e1 << 16);
      want |= (e0 << (8 * w)) | (e1 << (8 * w + 4));
    }
    ASSERT_EQ(num::pack_e2m1_lanes(c[0], c[1], c[2], c[3]), want);
  }
}
