// Hostile index and value inputs of the rope family on the emulator, without debug checks (the
// kernels' own guards, tejas/rope.h): out-of-range positions (negative, max_pos, the int64
// extremes) leave their pairs unrotated in rope, mrope (only that section's pairs) and
// rope_kv_cache_write (k unrotated, still cached); any negative slot (-1, -2, INT64_MIN) skips
// the token's cache rows; +-Inf values saturate fp8 caches. Each against the reference run on
// inputs that say the same thing legally (a bad position as position 0, whose rotation is the
// identity). The emulator reports any access outside the tensors as a finding (a failed call).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "ops/common/emu_launch.h"
#include "ops/rope/kv_cache_test_util.h"
#include "ops/rope/plan.h"
#include "ops/rope/rope_test_util.h"
#include "runtime/tune.h"
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

}  // namespace
