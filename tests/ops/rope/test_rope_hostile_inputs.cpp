// Hostile index and value inputs of the rope family on the emulator, without debug checks (the
// kernels' own guards, tejas/rope.h): out-of-range positions (negative, max_pos, the int64
// extremes) leave their pairs unrotated in rope, mrope (only that section's pairs) and
// rope_kv_cache_write (k unrotated, still cached); any negative slot (-1, -2, INT64_MIN) skips
// the token's cache rows; +-Inf values saturate fp8 caches; NaN and +-Inf in q, k and v follow the
// reference on every kernel path. Each against the reference run on
// inputs that say the same thing legally (a bad position as position 0, whose rotation is the
// identity). The emulator reports any access outside the tensors as a finding (a failed call).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "ops/common/emu_launch.h"
#include "ops/rope/kv_cache_test_util.h"
#include "ops/rope/plan.h"
#include "ops/rope/rope_test_util.h"
#include "runtime/tune.h"
#include "support/plant.h"
#include "support/seed.h"

using namespace tejas;
using check::HostTensor;
using ropetest::KvBuffers;
using ropetest::KvShape;

namespace {

constexpr int64_t kMaxPos = 24;
constexpr int64_t kBadPositions[] = {-1, -7, kMaxPos, kMaxPos + 1000, std::numeric_limits<int64_t>::min(),
                                     std::numeric_limits<int64_t>::max()};

void expect_close(const HostTensor& got, const HostTensor& want, RopeStyle style, int64_t rotary, const char* what) {
  const auto r = ropetest::compare_rotated(got, want, style, rotary);
  EXPECT_TRUE(r.ok) << what << ": " << r.message;
}

TEST(RopeHostileInputs, OutOfRangePositionsLeaveTheirPairsUnrotated) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t T = 6, Hq = 3, Hk = 1, D = 16;
  const HostTensor cache = ropetest::make_cache(kMaxPos, D, DType::f32);
  for (int64_t bad : kBadPositions) {
    SCOPED_TRACE(::testing::Message() << "position " << bad);
    HostTensor pos(DType::i64, {T}), q(DType::bf16, {T, Hq, D}), k(DType::bf16, {T, Hk, D});
    check::fill_randint(pos, rng, 1, kMaxPos - 1);
    check::fill_normal(q, rng);
    check::fill_normal(k, rng);
    pos.set_bits_flat(2, static_cast<uint64_t>(bad));  // exact for every int64 (set() goes through double)
    HostTensor legal = pos, q_ref = q, k_ref = k;  // bit-exact copies
    legal.set_bits_flat(2, 0);
    TEJAS_ASSERT_OK(rope(ropetest::reference_ctx(), legal, q_ref, k_ref, cache, RopeStyle::gptj));
    TEJAS_ASSERT_OK(rope(ropetest::backend_ctx(Backend::emulator), pos, q, k, cache, RopeStyle::gptj));
    expect_close(q, q_ref, RopeStyle::gptj, D, "q");
    expect_close(k, k_ref, RopeStyle::gptj, D, "k");
  }
}

// The same through the token pipeline (rope.pipeline=1: each position loaded one token ahead;
// 40 tokens on the emulator's 3 resident CTAs, so the bad ones at 2 and 25 are a CTA's first
// and a later token), neox and gptj.
TEST(RopeHostileInputs, PipelinedOutOfRangePositionsLeaveTheirPairsUnrotated) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t T = 40, Hq = 3, Hk = 1, D = 16;
  const HostTensor cache = ropetest::make_cache(kMaxPos, D, DType::f32);
  detail::Tune t = ropetest::head_stage(2);
  t.rope_pipeline = 1;
  const detail::ScopedTuneOverride pipeline(t);
  for (RopeStyle style : {RopeStyle::neox, RopeStyle::gptj}) {
    for (int64_t bad : kBadPositions) {
      SCOPED_TRACE(::testing::Message() << "position " << bad << (style == RopeStyle::neox ? " neox" : " gptj"));
      HostTensor pos(DType::i64, {T}), q(DType::bf16, {T, Hq, D}), k(DType::bf16, {T, Hk, D});
      check::fill_randint(pos, rng, 1, kMaxPos - 1);
      check::fill_normal(q, rng);
      check::fill_normal(k, rng);
      HostTensor legal = pos;
      for (int64_t at : {2, 25}) {
        pos.set_bits_flat(at, static_cast<uint64_t>(bad));
        legal.set_bits_flat(at, 0);
      }
      HostTensor q_ref = q, k_ref = k;  // bit-exact copies
      TEJAS_ASSERT_OK(rope(ropetest::reference_ctx(), legal, q_ref, k_ref, cache, style));
      TEJAS_ASSERT_OK(rope(ropetest::backend_ctx(Backend::emulator), pos, q, k, cache, style));
      EXPECT_TRUE(rotary::last_launch().pipeline);
      expect_close(q, q_ref, style, D, "q");
      expect_close(k, k_ref, style, D, "k");
    }
  }
}

TEST(RopeHostileInputs, MropeOutOfRangePositionLeavesItsSectionUnrotated) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t T = 4, Hq = 2, Hk = 2, D = 32;  // 16 pairs: sections 4 / 6 / 6
  const HostTensor cache = ropetest::make_cache(kMaxPos, D, DType::f32);
  for (int64_t row : {0, 1, 2}) {
    for (int64_t bad : {int64_t{-3}, kMaxPos, std::numeric_limits<int64_t>::min()}) {
      SCOPED_TRACE(::testing::Message() << "row " << row << " position " << bad);
      HostTensor pos(DType::i64, {3, T}), q(DType::f16, {T, Hq, D}), k(DType::f16, {T, Hk, D});
      check::fill_randint(pos, rng, 1, kMaxPos - 1);
      check::fill_normal(q, rng);
      check::fill_normal(k, rng);
      pos.set_bits_flat(row * T + 1, static_cast<uint64_t>(bad));
      HostTensor legal = pos, q_ref = q, k_ref = k;  // bit-exact copies
      legal.set_bits_flat(row * T + 1, 0);
      TEJAS_ASSERT_OK(mrope(ropetest::reference_ctx(), legal, q_ref, k_ref, cache, MropeSection{4, 6, 6}));
      TEJAS_ASSERT_OK(mrope(ropetest::backend_ctx(Backend::emulator), pos, q, k, cache, MropeSection{4, 6, 6}));
      expect_close(q, q_ref, RopeStyle::neox, D, "q");
      expect_close(k, k_ref, RopeStyle::neox, D, "k");
    }
  }
}

// The KV-cache write: a bad position (INT64_MIN, max_pos, -1) leaves k unrotated but still
// cached; every negative slot (-2, INT64_MIN) and one past the cache (num_slots + 3) skips; the
// rest as the reference. In one launch (rope.kv_split=0: the fused kernel) and split (2: plain
// rope on q, then kv_rope_kernel, or kv_rope_pipe_kernel with rope.kv_rope_pipe=1), over both
// styles and shapes that reach each k-half path: 16-byte columns, k-tail columns, one-element
// columns (D = 9: vec 1; gptj loads a pair as two scalars), 70 kv heads on 64 head lanes.
TEST(RopeHostileInputs, KvCacheWriteBadPositionsAndNegativeSlots) {
  TEJAS_SEEDED_TEST_RNG();
  const KvShape shapes[] = {{6, 4, 2, 64, 64, 4, 4}, {6, 2, 3, 48, 16, 4, 4}, {6, 2, 3, 9, 8, 4, 4},
                            {6, 1, 70, 16, 16, 4, 4}};
  for (int setting : {0, 2, 3}) {
    detail::Tune t;
    t.rope_kv_split = setting == 0 ? 0 : 2;
    t.rope_kv_rope_pipe = setting == 3;
    const detail::ScopedTuneOverride tune(t);
    for (const KvShape& s : shapes)
      for (RopeStyle style : {RopeStyle::neox, RopeStyle::gptj})
        for (DType cache_dt : {DType::bf16, DType::e4m3}) {
          SCOPED_TRACE(::testing::Message() << "rope.kv_split=" << t.rope_kv_split << " rope.kv_rope_pipe="
                                            << t.rope_kv_rope_pipe << " " << dtype_name(cache_dt) << " D=" << s.D
                                            << " rotary=" << s.rotary << " Hk=" << s.Hk
                                            << (style == RopeStyle::neox ? " neox" : " gptj"));
          KvBuffers b = ropetest::make_kv_buffers(rng, s, DType::bf16, cache_dt, DType::f32, kMaxPos, 0);
          b.pos.set_bits_flat(0, static_cast<uint64_t>(std::numeric_limits<int64_t>::min()));
          b.pos.set_bits_flat(3, static_cast<uint64_t>(kMaxPos));
          b.pos.set_bits_flat(5, static_cast<uint64_t>(int64_t{-1}));
          b.slots.set_bits_flat(1, static_cast<uint64_t>(int64_t{-2}));
          b.slots.set_bits_flat(4, static_cast<uint64_t>(std::numeric_limits<int64_t>::min()));
          b.slots.set_bits_flat(2, static_cast<uint64_t>(s.num_blocks * s.block_size + 3));
          KvBuffers want = b;
          for (int64_t tok : {0, 3, 5}) want.pos.set_bits_flat(tok, 0);
          want.slots.set_bits_flat(2, static_cast<uint64_t>(int64_t{-1}));  // the reference's skip
          TEJAS_ASSERT_OK(rope_kv_cache_write(ropetest::reference_ctx(), want.pos, want.q, want.k, want.v, want.cache,
                                              style, want.slots, want.paged()));
          TEJAS_ASSERT_OK(rope_kv_cache_write(ropetest::backend_ctx(Backend::emulator), b.pos, b.q, b.k, b.v, b.cache,
                                              style, b.slots, b.paged()));
          EXPECT_EQ(rotary::last_launch().k_half, setting != 0);
          EXPECT_EQ(detail::last_emulator_reports().size(), setting == 0 ? 1u : 2u);
          expect_close(b.q, want.q, style, s.rotary, "q");
          expect_close(b.k, want.k, style, s.rotary, "k");
          // v's cache is the reference's bit for bit (copied, or encoded exactly); k's holds enc(k
          // as the kernel stored it) in the rows of cached tokens; skipped rows keep their poison.
          for (int64_t i = 0; i < b.v_cache.numel(); ++i)
            ASSERT_EQ(b.v_cache.bits_flat(i), want.v_cache.bits_flat(i)) << "v_cache element " << i;
          ropetest::check_cache(b.k_cache, b.k, want.slots, b.k_scale, s, "k_cache");
        }
  }
}

// +-Inf in v saturates fp8 cache codes to +-max (e4m3 448, e5m2 57344), as the reference.
TEST(RopeHostileInputs, InfinitiesSaturateFp8Caches) {
  TEJAS_SEEDED_TEST_RNG();
  const KvShape s{2, 1, 1, 16, 16, 1, 2};
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (DType cache_dt : {DType::e4m3, DType::e5m2}) {
    SCOPED_TRACE(dtype_name(cache_dt));
    KvBuffers b = ropetest::make_kv_buffers(rng, s, DType::bf16, cache_dt, DType::f32, kMaxPos, 0);
    b.v.set({0, 0, 2}, kInf);
    b.v.set({1, 0, 9}, -kInf);
    KvBuffers want = b;
    TEJAS_ASSERT_OK(rope_kv_cache_write(ropetest::reference_ctx(), want.pos, want.q, want.k, want.v, want.cache,
                                        RopeStyle::neox, want.slots, want.paged()));
    TEJAS_ASSERT_OK(rope_kv_cache_write(ropetest::backend_ctx(Backend::emulator), b.pos, b.q, b.k, b.v, b.cache,
                                        RopeStyle::neox, b.slots, b.paged()));
    const double max = cache_dt == DType::e4m3 ? 448.0 : 57344.0;
    const auto slot0 = static_cast<int64_t>(b.slots.get({0})), slot1 = static_cast<int64_t>(b.slots.get({1}));
    EXPECT_EQ(b.v_cache.get({0, slot0, 0, 2}), max);
    EXPECT_EQ(b.v_cache.get({0, slot1, 0, 9}), -max);
    for (int64_t i = 0; i < b.v_cache.numel(); ++i)
      ASSERT_EQ(b.v_cache.bits_flat(i), want.v_cache.bits_flat(i)) << "v_cache element " << i;
  }
}

// NaN, +Inf and -Inf planted at random in q and k (and v), rotated and pass-through columns
// alike, follow the reference on every path: a NaN spreads to its own pair only, an Inf gives
// +-Inf or NaN as IEEE products and sums do (Inf x 0 at position 0, where sin = 0; Inf - Inf
// where both members are infinite), columns past rotary_dim keep their bits (NaN payloads
// included, checked bit for bit), fp8 caches get NaN codes and saturated codes. compare_rotated
// holds a NaN only against a NaN and an infinity exactly. rope and mrope: bf16, f16 and f32, both
// styles (mrope neox only), on the token pipeline (rope.pipeline=1, the default) and a thread per
// token column, staged and unstaged (each kernel asserted to run); shapes with 16-byte columns,
// partial rotary and narrow columns (D = 10: one element in neox). The KV-cache write: one
// launch, split, the split's pipelined k half, and the pipelined fused kernel (rope.pipeline=2),
// into bf16 and e4m3 caches.
void plant_non_finite(HostTensor& t, check::Rng& rng) {
  testsupport::plant_non_finite(t, rng, t.numel() / 16);
  // Quiet NaNs that are not the canonical one (sign set, payload 1), which a kernel or the
  // reference could canonicalise: in pass-through columns they must keep their bits.
  const uint64_t odd_nan = t.dtype() == DType::bf16 ? 0xFFC1u : t.dtype() == DType::f16 ? 0xFE01u : 0xFFC00001u;
  for (int64_t i = 0; i < t.numel() / 32; ++i) t.set_bits_flat(rng.randint(0, t.numel() - 1), odd_nan);
  t.set_flat(0, std::numeric_limits<double>::infinity());  // a pair of infinities of one sign (gptj's pair 0)
  t.set_flat(1, std::numeric_limits<double>::infinity());
}

// Columns at and past rotary_dim: got's bits are want's, NaN payloads included.
void expect_pass_through_bits(const HostTensor& got, const HostTensor& want, int64_t rotary, const char* what) {
  const int64_t D = got.shape().back();
  for (int64_t i = 0; i < got.numel(); ++i)
    if (i % D >= rotary) {
      ASSERT_EQ(got.bits_flat(i), want.bits_flat(i)) << what << " element " << i;
    }
}

TEST(RopeHostileInputs, NonFiniteValuesFollowTheReferenceOnEveryPath) {
  TEJAS_SEEDED_TEST_RNG();
  struct Shape {
    int64_t T, Hq, Hk, D, rotary;
  };
  const Shape shapes[] = {{40, 3, 1, 64, 64}, {7, 2, 2, 48, 32}, {5, 2, 1, 10, 10}};
  detail::Tune pipelined;  // defaults: the token pipeline for rope and mrope where it applies
  const detail::Tune tunes[] = {pipelined, ropetest::head_stage(2), ropetest::unstaged(1)};
  std::set<std::pair<bool, bool>> kernels;  // (pipelined, staged) of the rope and mrope kernels that ran
  const auto ran = [&] {
    const rotary::RopeLaunch l = rotary::last_launch();
    kernels.insert({l.pipeline, l.params.head_stage});
  };
  for (const detail::Tune& t : tunes) {
    const detail::ScopedTuneOverride tune(t);
    for (const Shape& s : shapes)
      for (DType dt : {DType::bf16, DType::f16, DType::f32})
        for (RopeStyle style : {RopeStyle::neox, RopeStyle::gptj}) {
          SCOPED_TRACE(::testing::Message()
                       << "rope.pipeline=" << t.rope_pipeline << " rope.head_stage=" << t.rope_head_stage << " "
                       << dtype_name(dt) << " D=" << s.D << " rotary=" << s.rotary
                       << (style == RopeStyle::neox ? " neox" : " gptj"));
          const HostTensor cache = ropetest::make_cache(kMaxPos, s.rotary, DType::f32);
          HostTensor pos(DType::i64, {s.T}), q(dt, {s.T, s.Hq, s.D}), k(dt, {s.T, s.Hk, s.D});
          check::fill_randint(pos, rng, 0, kMaxPos - 1);
          pos.set_flat(0, 0.0);  // Inf x sin 0
          check::fill_normal(q, rng);
          check::fill_normal(k, rng);
          plant_non_finite(q, rng);
          plant_non_finite(k, rng);
          HostTensor q_ref = q, k_ref = k;  // bit-exact copies
          TEJAS_ASSERT_OK(rope(ropetest::reference_ctx(), pos, q_ref, k_ref, cache, style));
          TEJAS_ASSERT_OK(rope(ropetest::backend_ctx(Backend::emulator), pos, q, k, cache, style));
          ran();
          expect_close(q, q_ref, style, s.rotary, "q");
          expect_close(k, k_ref, style, s.rotary, "k");
          expect_pass_through_bits(q, q_ref, s.rotary, "q");
          expect_pass_through_bits(k, k_ref, s.rotary, "k");
          if (style == RopeStyle::gptj || s.rotary != s.D) continue;
          // mrope (neox, rotary == D): three sections over the pairs.
          const int64_t pairs = s.D / 2, t_sec = pairs / 3, h_sec = (pairs - t_sec) / 2;
          const MropeSection sec{t_sec, h_sec, pairs - t_sec - h_sec};
          HostTensor mpos(DType::i64, {3, s.T});
          check::fill_randint(mpos, rng, 0, kMaxPos - 1);
          for (int64_t row = 0; row < 3; ++row) mpos.set({row, 0}, 0.0);
          check::fill_normal(q, rng);  // fresh inputs in place of the rotated ones
          check::fill_normal(k, rng);
          plant_non_finite(q, rng);
          plant_non_finite(k, rng);
          q_ref = q;
          k_ref = k;
          TEJAS_ASSERT_OK(mrope(ropetest::reference_ctx(), mpos, q_ref, k_ref, cache, sec));
          TEJAS_ASSERT_OK(mrope(ropetest::backend_ctx(Backend::emulator), mpos, q, k, cache, sec));
          ran();
          expect_close(q, q_ref, style, s.rotary, "mrope q");
          expect_close(k, k_ref, style, s.rotary, "mrope k");
        }
  }
  // Each kernel ran: the token pipeline (staged), and a thread per token column staged and not.
  EXPECT_EQ(kernels, (std::set<std::pair<bool, bool>>{{true, true}, {false, true}, {false, false}}));

  const KvShape kv_shapes[] = {{40, 2, 2, 64, 64, 8, 8}, {6, 2, 3, 48, 16, 4, 4}, {6, 2, 3, 10, 10, 4, 4}};
  std::set<std::pair<bool, bool>> kv_paths;  // (split, pipelined) of the kernels that ran
  for (int setting : {0, 1, 2, 3}) {
    detail::Tune t;  // 0: one launch; 1: split; 2: the split's pipelined k half; 3: rope.pipeline=2
    t.rope_kv_split = setting == 1 || setting == 2 ? 2 : 0;
    t.rope_kv_rope_pipe = setting == 2;
    if (setting == 3) t.rope_pipeline = 2;
    const detail::ScopedTuneOverride tune(t);
    for (const KvShape& s : kv_shapes)
      for (RopeStyle style : {RopeStyle::neox, RopeStyle::gptj})
        for (DType cache_dt : {DType::bf16, DType::e4m3}) {
          SCOPED_TRACE(::testing::Message()
                       << "rope.kv_split=" << t.rope_kv_split << " rope.kv_rope_pipe=" << t.rope_kv_rope_pipe
                       << " rope.pipeline=" << t.rope_pipeline << " " << dtype_name(cache_dt) << " D=" << s.D
                       << " rotary=" << s.rotary << (style == RopeStyle::neox ? " neox" : " gptj"));
          KvBuffers b = ropetest::make_kv_buffers(rng, s, DType::bf16, cache_dt, DType::f32, kMaxPos, 5);
          b.pos.set_flat(0, 0.0);
          plant_non_finite(b.q, rng);
          plant_non_finite(b.k, rng);
          plant_non_finite(b.v, rng);
          KvBuffers want = b;
          TEJAS_ASSERT_OK(rope_kv_cache_write(ropetest::reference_ctx(), want.pos, want.q, want.k, want.v, want.cache,
                                              style, want.slots, want.paged()));
          TEJAS_ASSERT_OK(rope_kv_cache_write(ropetest::backend_ctx(Backend::emulator), b.pos, b.q, b.k, b.v, b.cache,
                                              style, b.slots, b.paged()));
          const rotary::RopeLaunch l = rotary::last_launch();
          EXPECT_EQ(l.k_half, setting == 1 || setting == 2);
          if (setting == 3 && s.rotary == s.D && s.D % 8 == 0) {
            EXPECT_TRUE(l.pipeline);
          }
          kv_paths.insert({l.k_half, l.pipeline});
          expect_close(b.q, want.q, style, s.rotary, "q");
          expect_close(b.k, want.k, style, s.rotary, "k");
          expect_pass_through_bits(b.q, want.q, s.rotary, "q");
          expect_pass_through_bits(b.k, want.k, s.rotary, "k");
          // k's cache from k as the kernel stored it, v's from v: 16-bit bits copied, fp8 codes
          // the reference's (a NaN code's sign unspecified), skipped tokens' rows unwritten.
          ropetest::check_caches(b, s);
        }
  }
  EXPECT_EQ(kv_paths.size(), 4u);
}

}  // namespace
