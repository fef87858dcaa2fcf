// paged_decode_attention, reference backend, against the naive long-double math.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/attention/paged_decode_fixture.h"
#include "support/seed.h"

using namespace attn_test;
using tejas::DType;
using tejas::check::HostTensor;

namespace {

// Ragged lengths in [lo, hi] for B requests, at least Q each.
std::vector<int32_t> ragged(tejas::check::Rng& rng, int B, int64_t Q, int64_t hi) {
  std::vector<int32_t> v;
  for (int b = 0; b < B; ++b) v.push_back(static_cast<int32_t>(rng.randint(Q, hi)));
  return v;
}

void check_case(const DecodeCase& c, tejas::check::Rng& rng) {
  const auto p = make_problem(c, rng);
  expect_matches_naive(*p);
}

}  // namespace

TEST(PagedDecode, HeadDimsAndBlockSizes) {
  TEJAS_SEEDED_TEST_RNG();
  for (int64_t D : {64, 128, 256}) {
    for (int64_t bs : {16, 32, 64}) {
      SCOPED_TRACE("D " + std::to_string(D) + " block_size " + std::to_string(bs));
      DecodeCase c;
      c.D = D;
      c.block_size = bs;
      c.Q = rng.randint(1, 4);
      c.Hq = 4;
      c.Hkv = 2;
      c.seq_lens = ragged(rng, 2, c.Q, 150);
      check_case(c, rng);
    }
  }
}

TEST(PagedDecode, QueriesPerRequestAndGqaRatios) {
  TEJAS_SEEDED_TEST_RNG();
  for (int64_t Q = 1; Q <= tejas::kMaxDecodeQueries; ++Q) {
    for (int64_t ratio : {1, 4, 8}) {
      SCOPED_TRACE("Q " + std::to_string(Q) + " ratio " + std::to_string(ratio));
      DecodeCase c;
      c.Q = Q;
      c.Hkv = 2;
      c.Hq = 2 * ratio;
      c.seq_lens = ragged(rng, 3, Q, 50);
      check_case(c, rng);
    }
  }
}

TEST(PagedDecode, OddBlockSizes) {
  TEJAS_SEEDED_TEST_RNG();
  for (int64_t bs : {1, 3, 7}) {
    SCOPED_TRACE("block_size " + std::to_string(bs));
    DecodeCase c;
    c.block_size = bs;
    c.Q = 3;
    c.seq_lens = ragged(rng, 3, c.Q, 40);
    check_case(c, rng);
  }
}

TEST(PagedDecode, RaggedEdgeLengths) {
  TEJAS_SEEDED_TEST_RNG();
  DecodeCase c;
  c.Q = 1;
  c.seq_lens = {1, 16, 17, 33, 2};  // a single key, a full block, one past, ...
  check_case(c, rng);
  c.Q = 5;
  c.seq_lens = {5, 16, 32, 6};  // seq_len == Q, exact block multiples
  check_case(c, rng);
}

TEST(PagedDecode, QueryDtypes) {
  TEJAS_SEEDED_TEST_RNG();
  for (DType t : {DType::bf16, DType::f16, DType::f32}) {
    SCOPED_TRACE(std::string(tejas::dtype_name(t)));
    DecodeCase c;
    c.q_dtype = t;
    c.cache_dtype = t == DType::f32 ? DType::f16 : t;
    c.Q = 2;
    c.seq_lens = ragged(rng, 2, c.Q, 70);
    check_case(c, rng);
  }
}

TEST(PagedDecode, Fp8CachesWithScales) {
  TEJAS_SEEDED_TEST_RNG();
  for (DType cache : {DType::e4m3, DType::e5m2}) {
    for (DType qt : {DType::bf16, DType::f32}) {
      SCOPED_TRACE(std::string(tejas::dtype_name(cache)) + " q " + std::string(tejas::dtype_name(qt)));
      DecodeCase c;
      c.cache_dtype = cache;
      c.q_dtype = qt;
      c.params.k_scale = 0.05f;
      c.params.v_scale = 3.0f;
      c.Q = 2;
      c.Hq = 8;
      c.Hkv = 2;
      c.seq_lens = ragged(rng, 3, c.Q, 80);
      check_case(c, rng);
    }
  }
}

TEST(PagedDecode, WindowZeroSeesOnlyItself) {
  TEJAS_SEEDED_TEST_RNG();
  DecodeCase c;
  c.Q = 4;
  c.params.window_left = 0;
  c.seq_lens = {4, 37, 64};
  const auto p = make_problem(c, rng);
  expect_matches_naive(*p);
  // One visible key: out is that key's value, exactly (bf16 in, bf16 out, weight 1).
  for (int64_t b = 0; b < p->B; ++b) {
    const int64_t L = c.seq_lens[static_cast<size_t>(b)];
    for (int64_t j = 0; j < c.Q; ++j) {
      const int64_t pos = L - c.Q + j;
      const int64_t phys = p->owner[static_cast<size_t>(b)][static_cast<size_t>(pos / c.block_size)];
      for (int64_t h = 0; h < c.Hq; ++h)
        for (int64_t d = 0; d < c.D; ++d)
          ASSERT_EQ(p->out.get({b, j, h, d}), p->v_cache.get({phys, pos % c.block_size, 0, d}));
    }
  }
}

TEST(PagedDecode, WindowsNarrowAndWiderThanSequence) {
  TEJAS_SEEDED_TEST_RNG();
  for (int window : {1, 5, 20, 1000}) {
    SCOPED_TRACE("window_left " + std::to_string(window));
    DecodeCase c;
    c.Q = 3;
    c.block_size = 4;  // so that narrow windows leave whole blocks unused (-1 in the table)
    c.params.window_left = window;
    c.seq_lens = ragged(rng, 3, c.Q, 60);
    const auto p = make_problem(c, rng);
    expect_matches_naive(*p);
    if (window == 1000) {
      // Wider than any sequence: identical to no window.
      HostTensor windowed(c.q_dtype, {p->B, c.Q, c.Hq, c.D});
      windowed.copy_from(p->out);
      p->c.params.window_left = -1;
      p->out.poison();
      TEJAS_ASSERT_OK(p->run());
      EXPECT_TRUE(tejas::check::compare_exact(windowed, p->out).ok);
    }
  }
}

TEST(PagedDecode, SoftCap) {
  TEJAS_SEEDED_TEST_RNG();
  DecodeCase c;
  c.Q = 2;
  c.params.softmax_scale = 1.0;  // logits of several units, so a cap of 3 bends them hard
  c.params.logits_soft_cap = 3.0;
  c.with_sinks = true;
  c.seq_lens = ragged(rng, 3, c.Q, 60);
  check_case(c, rng);
}

TEST(PagedDecode, SinksModerateLargePositiveLargeNegative) {
  TEJAS_SEEDED_TEST_RNG();
  for (double mean : {0.0, 12.0, -1000.0}) {
    SCOPED_TRACE("sink mean " + std::to_string(mean));
    DecodeCase c;
    c.Q = 2;
    c.Hq = 4;
    c.with_sinks = true;
    c.sink_mean = mean;
    c.sink_std = 2.0;
    c.seq_lens = ragged(rng, 3, c.Q, 40);
    const auto p = make_problem(c, rng);
    expect_matches_naive(*p);
    if (mean < 0) {
      // e^(-1000 - max logit) vanishes in float64: identical to running without sinks.
      HostTensor with_sink(c.q_dtype, {p->B, c.Q, c.Hq, c.D});
      with_sink.copy_from(p->out);
      p->c.with_sinks = false;
      TEJAS_ASSERT_OK(p->run());
      EXPECT_TRUE(tejas::check::compare_exact(with_sink, p->out).ok);
    }
  }
}

TEST(PagedDecode, LargeLogitsStayFinite) {
  TEJAS_SEEDED_TEST_RNG();
  DecodeCase c;
  c.Q = 2;
  c.params.softmax_scale = 40.0;  // logits of hundreds: exp overflows without max subtraction
  c.with_sinks = true;
  c.sink_mean = 300.0;
  c.seq_lens = ragged(rng, 2, c.Q, 50);
  check_case(c, rng);
}

TEST(PagedDecode, DefaultScaleIsInverseSqrtHeadDim) {
  TEJAS_SEEDED_TEST_RNG();
  DecodeCase c;
  c.D = 128;
  c.seq_lens = ragged(rng, 2, c.Q, 50);
  const auto p = make_problem(c, rng);
  expect_matches_naive(*p);
  HostTensor dflt(c.q_dtype, {p->B, c.Q, c.Hq, c.D});
  dflt.copy_from(p->out);
  p->c.params.softmax_scale = 1.0 / std::sqrt(128.0);
  TEJAS_ASSERT_OK(p->run());
  EXPECT_TRUE(tejas::check::compare_exact(dflt, p->out).ok);
}

TEST(PagedDecode, NonContiguousQueryAndOutput) {
  TEJAS_SEEDED_TEST_RNG();
  DecodeCase c;
  c.Q = 3;
  c.pad = 5;
  c.q_dtype = DType::f32;
  c.cache_dtype = DType::bf16;
  c.seq_lens = ragged(rng, 2, c.Q, 40);
  check_case(c, rng);  // padding of out is checked untouched there
}

TEST(PagedDecode, SharedPrefixBlocks) {
  TEJAS_SEEDED_TEST_RNG();
  DecodeCase c;
  c.Q = 2;
  c.seq_lens = {40, 40};
  const auto p = make_problem(c, rng);
  // Request 1 reuses request 0's physical blocks (prefix caching): same keys, same outputs.
  for (int64_t i = 0; i < p->max_blocks; ++i) {
    p->owner[1][static_cast<size_t>(i)] = p->owner[0][static_cast<size_t>(i)];
    p->block_table.set({1, i}, p->block_table.get({0, i}));
  }
  for (int64_t h = 0; h < c.Hq; ++h)
    for (int64_t j = 0; j < c.Q; ++j)
      for (int64_t d = 0; d < c.D; ++d) p->q.set({1, j, h, d}, p->q.get({0, j, h, d}));
  expect_matches_naive(*p);
  for (int64_t i = 0; i < c.Q * c.Hq * c.D; ++i)
    ASSERT_EQ(p->out.get_flat(i), p->out.get_flat(c.Q * c.Hq * c.D + i));
}

TEST(PagedDecode, NanInQueryPropagatesToItsHeadOnly) {
  TEJAS_SEEDED_TEST_RNG();
  DecodeCase c;
  c.Q = 2;
  c.seq_lens = {20, 9};
  const auto p = make_problem(c, rng);
  p->q.set({1, 1, 2, 7}, std::nan(""));
  expect_matches_naive(*p);  // positions where the naive result is NaN must be NaN, others not
  for (int64_t d = 0; d < c.D; ++d) EXPECT_TRUE(std::isnan(p->out.get({1, 1, 2, d})));
  EXPECT_TRUE(std::isnan(p->lse.get({1, 1, 2})));
  EXPECT_FALSE(std::isnan(p->out.get({1, 1, 1, 0})));
}

TEST(PagedDecode, EmptyBatchDoesNothing) {
  TEJAS_SEEDED_TEST_RNG();
  DecodeCase c;
  c.seq_lens = {};
  const auto p = make_problem(c, rng);
  TEJAS_ASSERT_OK(p->run());
  EXPECT_TRUE(p->out.guards_intact() && p->lse.guards_intact());
}

TEST(PagedDecode, LargerMixedProblem) {
  TEJAS_SEEDED_TEST_RNG();
  DecodeCase c;
  c.Q = 8;
  c.Hq = 32;
  c.Hkv = 4;
  c.D = 128;
  c.block_size = 16;
  c.with_sinks = true;
  c.params.window_left = 200;
  c.params.logits_soft_cap = 30.0;
  c.seq_lens = ragged(rng, 3, c.Q, 300);
  check_case(c, rng);
}
