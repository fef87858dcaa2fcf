// rope (reference backend) against complex multiplication in long double, structural identities
// (neox/gptj permutation, partial rotary, norm preservation, position 0), positions checks,
// non-finite values and backends. Validation rules: test_rope_validation.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>
#include <vector>

#include "support/op_snapshots.h"
#include "ops/rope/rope_test_util.h"
#include "support/seed.h"
#include "tejas/rope.h"

using namespace tejas;
using check::HostTensor;
using ropetest::make_cache;
using ropetest::reference_ctx;

namespace {

// Expected q after rotation: each pair (a, b) as the complex a + ib times c + is; other dims copied.
HostTensor expected_rotated(const HostTensor& x, const HostTensor& positions, const HostTensor& cache,
                            RopeStyle style) {
  const int64_t T = x.shape()[0], H = x.shape()[1], half = cache.shape()[1] / 2;
  HostTensor want(x.dtype(), x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) want.set_bits_flat(i, x.bits_flat(i));
  for (int64_t t = 0; t < T; ++t) {
    const auto p = static_cast<int64_t>(positions.get({t}));
    for (int64_t j = 0; j < half; ++j) {
      const std::complex<long double> w(cache.get({p, j}), cache.get({p, half + j}));
      const int64_t lo = style == RopeStyle::neox ? j : 2 * j;
      const int64_t hi = style == RopeStyle::neox ? j + half : 2 * j + 1;
      for (int64_t h = 0; h < H; ++h) {
        const std::complex<long double> z = std::complex<long double>(x.get({t, h, lo}), x.get({t, h, hi})) * w;
        want.set({t, h, lo}, static_cast<double>(z.real()));
        want.set({t, h, hi}, static_cast<double>(z.imag()));
      }
    }
  }
  return want;
}

struct Shape {
  int64_t T, Hq, Hk, D, rotary_dim, pad;  // Hk = 0: no k
};
// T = 1, 3, 1023 (small heads for the large T); full and partial rotary; rotary_dim/2 odd; padding.
constexpr Shape kShapes[] = {{1, 1, 1, 2, 2, 0},   {3, 4, 2, 64, 64, 0},   {1023, 2, 1, 16, 8, 4},
                             {5, 3, 0, 128, 32, 0}, {3, 2, 2, 10, 6, 6}, {2, 1, 3, 130, 130, 2}};

TEST(Rope, MatchesComplexMultiplication) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t kMaxPos = 300;  // enough distinct angles; small so the long-double cache is quick
  for (const Shape& s : kShapes) {
    for (DType qt : {DType::bf16, DType::f16, DType::f32}) {
      for (DType ct : {DType::f32, qt}) {
        const HostTensor cache = make_cache(kMaxPos, s.rotary_dim, ct);
        for (RopeStyle style : {RopeStyle::neox, RopeStyle::gptj}) {
          const DType pt = s.T % 2 ? DType::i64 : DType::i32;
          SCOPED_TRACE(::testing::Message() << dtype_name(qt) << " q, " << dtype_name(ct) << " cache, "
                                            << (style == RopeStyle::neox ? "neox" : "gptj") << ", T=" << s.T
                                            << " Hq=" << s.Hq << " Hk=" << s.Hk << " D=" << s.D
                                            << " rotary_dim=" << s.rotary_dim);
          HostTensor pos(pt, {s.T}), q(qt, {s.T, s.Hq, s.D}, s.pad), k(qt, {s.T, s.Hk ? s.Hk : 1, s.D}, s.pad);
          check::fill_randint(pos, rng, 0, kMaxPos - 1);
          check::fill_normal(q, rng, 0.0, 2.0);
          check::fill_normal(k, rng, 0.0, 2.0);
          const HostTensor want_q = expected_rotated(q, pos, cache, style);
          const HostTensor want_k = expected_rotated(k, pos, cache, style);
          const TensorView k_view = s.Hk ? k.view() : TensorView{};
          const auto k_before = optest::bits_of(k);
          TEJAS_ASSERT_OK(rope(reference_ctx(), pos, q, k_view, cache, style));
          const check::Tolerance one_rounding{0.0, 0.0, 1};
          auto r = check::compare(q, want_q, one_rounding);
          EXPECT_TRUE(r.ok) << "q: " << r.message;
          if (s.Hk) {
            r = check::compare(k, want_k, one_rounding);
            EXPECT_TRUE(r.ok) << "k: " << r.message;
          } else {
            EXPECT_TRUE(optest::unchanged(k, k_before)) << "absent k";
          }
          EXPECT_TRUE(q.padding_intact() && k.padding_intact());
        }
      }
    }
  }
}

// Dims >= rotary_dim keep their exact bits, whatever they hold (NaN payloads, -0, Inf).
TEST(Rope, PartialRotaryLeavesTailBitIdentical) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t T = 3, H = 2, D = 24, kRotary = 8;
  const uint64_t kOddBits[] = {0x7FC1, 0x8000, 0x7F80, 0xFF81, 0x0001};  // bf16: NaN payload, -0, Inf, -NaN, denormal
  for (RopeStyle style : {RopeStyle::neox, RopeStyle::gptj}) {
    const HostTensor cache = make_cache(16, kRotary, DType::f32);
    HostTensor pos(DType::i32, {T}), q(DType::bf16, {T, H, D});
    check::fill_randint(pos, rng, 1, 15);
    check::fill_normal(q, rng);
    for (int64_t i = 0; i < q.numel(); ++i)
      if (i % D >= kRotary) q.set_bits_flat(i, kOddBits[i % 5]);
    const auto before = optest::bits_of(q);
    TEJAS_ASSERT_OK(rope(reference_ctx(), pos, q, TensorView{}, cache, style));
    int rotated_changed = 0;
    for (int64_t i = 0; i < q.numel(); ++i) {
      if (i % D >= kRotary) EXPECT_EQ(q.bits_flat(i), before[static_cast<size_t>(i)]) << "tail element " << i;
      else rotated_changed += q.bits_flat(i) != before[static_cast<size_t>(i)];
    }
    EXPECT_GT(rotated_changed, 0) << "the rotary dims must move (positions >= 1)";
  }
}

// gptj on the interleaved permutation of x equals the same permutation of neox on x, bit for bit:
// neox dim i -> gptj dim 2i, neox dim i + rotary_dim/2 -> gptj dim 2i + 1.
TEST(Rope, NeoxAndGptjAgreeUnderPermutation) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t T = 7, H = 3, D = 40, kRotary = 32, kHalf = kRotary / 2;
  auto gptj_dim = [](int64_t d) { return d >= kRotary ? d : (d < kHalf ? 2 * d : 2 * (d - kHalf) + 1); };
  for (DType qt : {DType::bf16, DType::f16, DType::f32}) {
    const HostTensor cache = make_cache(64, kRotary, DType::f32);
    HostTensor pos(DType::i64, {T}), neox(qt, {T, H, D}), gptj(qt, {T, H, D});
    check::fill_randint(pos, rng, 0, 63);
    check::fill_normal(neox, rng);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d) gptj.set({t, h, gptj_dim(d)}, neox.get({t, h, d}));
    TEJAS_ASSERT_OK(rope(reference_ctx(), pos, neox, TensorView{}, cache, RopeStyle::neox));
    TEJAS_ASSERT_OK(rope(reference_ctx(), pos, gptj, TensorView{}, cache, RopeStyle::gptj));
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d)
          ASSERT_EQ(gptj.get({t, h, gptj_dim(d)}), neox.get({t, h, d})) << dtype_name(qt) << " [" << t << ", " << h << ", " << d << "]";
  }
}

// |(a', b')| = |(a, b)| up to f32 rounding of the cache and the outputs.
TEST(Rope, RotationPreservesPairNorm) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t T = 9, H = 2, D = 64, kHalf = D / 2;
  constexpr double kRelTol = 1e-6;  // a few f32 ulps
  constexpr int64_t kMaxPos = 2048;
  const HostTensor cache = make_cache(kMaxPos, D, DType::f32);
  HostTensor pos(DType::i32, {T}), q(DType::f32, {T, H, D});
  check::fill_randint(pos, rng, 0, kMaxPos - 1);
  check::fill_normal(q, rng);
  std::vector<double> before(static_cast<size_t>(T * H * kHalf));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < kHalf; ++i)
        before[static_cast<size_t>((t * H + h) * kHalf + i)] = std::hypot(q.get({t, h, i}), q.get({t, h, i + kHalf}));
  TEJAS_ASSERT_OK(rope(reference_ctx(), pos, q, TensorView{}, cache, RopeStyle::neox));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < kHalf; ++i) {
        const double b = before[static_cast<size_t>((t * H + h) * kHalf + i)];
        EXPECT_NEAR(std::hypot(q.get({t, h, i}), q.get({t, h, i + kHalf})), b, kRelTol * b);
      }
}

TEST(Rope, PositionZeroIsIdentity) {
  TEJAS_SEEDED_TEST_RNG();
  for (DType qt : {DType::bf16, DType::f16, DType::f32}) {
    for (RopeStyle style : {RopeStyle::neox, RopeStyle::gptj}) {
      const HostTensor cache = make_cache(8, 16, qt);  // row 0: cos = 1, sin = 0
      HostTensor pos(DType::i32, {4}), q(qt, {4, 2, 16}), k(qt, {4, 1, 16});
      for (int64_t t = 0; t < 4; ++t) pos.set({t}, 0.0);
      check::fill_normal(q, rng);
      check::fill_normal(k, rng);
      const auto q_before = optest::bits_of(q), k_before = optest::bits_of(k);
      TEJAS_ASSERT_OK(rope(reference_ctx(), pos, q, k, cache, style));
      EXPECT_TRUE(optest::unchanged(q, q_before));
      EXPECT_TRUE(optest::unchanged(k, k_before));
    }
  }
}

// NaN spreads to its pair only; Inf follows Inf * 0 = NaN at position 0 (sin = 0).
TEST(Rope, NonFiniteFollowsTheFormula) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN(), kInf = std::numeric_limits<double>::infinity();
  const HostTensor cache = make_cache(8, 8, DType::f32);
  HostTensor pos(DType::i32, {2}), q(DType::f32, {2, 1, 8});
  pos.set({0}, 3.0);
  pos.set({1}, 0.0);
  for (int64_t i = 0; i < q.numel(); ++i) q.set_flat(i, 1.0);
  q.set({0, 0, 1}, kNaN);  // neox pair (1, 5)
  q.set({1, 0, 2}, kInf);  // neox pair (2, 6) at position 0
  TEJAS_ASSERT_OK(rope(reference_ctx(), pos, q, TensorView{}, cache, RopeStyle::neox));
  EXPECT_TRUE(std::isnan(q.get({0, 0, 1})));
  EXPECT_TRUE(std::isnan(q.get({0, 0, 5})));
  for (int64_t d : {0, 2, 3, 4, 6, 7}) EXPECT_TRUE(std::isfinite(q.get({0, 0, d}))) << d;
  EXPECT_EQ(q.get({1, 0, 2}), kInf);      // Inf * 1 - 1 * 0
  EXPECT_TRUE(std::isnan(q.get({1, 0, 6})));  // 1 * 1 + Inf * 0
  EXPECT_EQ(q.get({1, 0, 0}), 1.0);
}

TEST(Rope, OutOfRangePositionRejectedBeforeAnyWrite) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t T = 5, kMaxPos = 32;
  const HostTensor cache = make_cache(kMaxPos, 8, DType::f32);
  for (DType pt : {DType::i32, DType::i64}) {
    for (int64_t bad : {int64_t{-1}, kMaxPos, int64_t{1} << 30}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(pt) << " position " << bad);
      HostTensor pos(pt, {T}), q(DType::bf16, {T, 2, 8}), k(DType::bf16, {T, 1, 8});
      check::fill_randint(pos, rng, 0, kMaxPos - 1);
      pos.set({T - 1}, static_cast<double>(bad));  // the last token: a streaming check would have written
      check::fill_normal(q, rng);
      check::fill_normal(k, rng);
      const auto q_before = optest::bits_of(q), k_before = optest::bits_of(k);
      TEJAS_EXPECT_INVALID(rope(reference_ctx(), pos, q, k, cache, RopeStyle::neox),
                           "rope: positions: expected values in [0, 32)");
      EXPECT_TRUE(optest::unchanged(q, q_before));
      EXPECT_TRUE(optest::unchanged(k, k_before));
    }
  }
}

// Without debug checks the kernel backends do not validate positions; an out-of-range one leaves
// its pairs unrotated and touches no memory outside the tensors (the emulator would report any
// out-of-bounds read). Debug-check mode rejects it before the launch, writing nothing.
TEST(RopeBackend, EmulatorChecksPositionsOnlyInDebugMode) {
  const HostTensor cache = make_cache(4, 4, DType::f32);
  HostTensor pos(DType::i32, {1}), q(DType::f32, {1, 1, 4});
  pos.set({0}, 9.0);  // out of range
  for (int64_t i = 0; i < 4; ++i) q.set_flat(i, 1.0);
  const auto before = optest::bits_of(q);
  ExecContext ctx;
  ctx.backend = Backend::emulator;
  ctx.debug_checks = true;
  TEJAS_EXPECT_INVALID(rope(ctx, pos, q, TensorView{}, cache, RopeStyle::neox), "rope: positions: expected");
  EXPECT_TRUE(optest::unchanged(q, before));
  ctx.backend = Backend::cuda;
  TEJAS_EXPECT_INVALID(rope(ctx, pos, q, TensorView{}, cache, RopeStyle::neox), "rope: positions: expected a cuda tensor");
  EXPECT_TRUE(optest::unchanged(q, before));
  ctx.backend = Backend::emulator;
  ctx.debug_checks = false;
  const Status plain = rope(ctx, pos, q, TensorView{}, cache, RopeStyle::neox);
  EXPECT_TRUE(plain.ok()) << plain.to_string();
  EXPECT_TRUE(optest::unchanged(q, before));  // unrotated
}

}  // namespace
