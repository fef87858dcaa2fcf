// merge_attention_states(_n), reference backend, against naive long-double math, including the
// split-KV identity: attention over keys [0, n) equals the merge of attention over a partition.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/attention/merge_fixture.h"
#include "support/seed.h"
#include "tejas/attention.h"

using namespace attn_test;
using tejas::DType;
using tejas::check::compare;
using tejas::check::compare_exact;

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

tejas::Status merge2(const MergeProblem& m, bool with_lse = true) {
  return tejas::merge_attention_states({}, MergeProblem::part(m.v, 0), MergeProblem::part(m.lse, 0),
                                       MergeProblem::part(m.v, 1), MergeProblem::part(m.lse, 1), m.out,
                                       with_lse ? m.out_lse.view() : tejas::TensorView{});
}

tejas::Status merge_n(const MergeProblem& m) { return tejas::merge_attention_states_n({}, m.v, m.lse, m.out, m.out_lse); }

void expect_naive(const MergeProblem& m) {
  const NaiveMerged want = naive_merge(m);
  HostTensor got(m.out.dtype(), {m.N, m.H, m.D});
  got.copy_from(m.out);  // drops padding
  const auto r = compare(got, want.out, once_rounded(want.out));
  EXPECT_TRUE(r.ok) << "out: " << r.message;
  const auto rl = compare(m.out_lse, want.out_lse, once_rounded(want.out_lse));
  EXPECT_TRUE(rl.ok) << "out_lse: " << rl.message;
  EXPECT_TRUE(m.out.guards_intact() && m.out.padding_intact() && m.out_lse.guards_intact());
}

}  // namespace

TEST(MergeStates, TwoPartsMatchNaive) {
  TEJAS_SEEDED_TEST_RNG();
  for (DType t : {DType::bf16, DType::f16, DType::f32}) {
    SCOPED_TRACE(std::string(tejas::dtype_name(t)));
    MergeProblem m(t, 2, 3, 4, 64);
    fill_states(m, rng, 4.0);
    TEJAS_ASSERT_OK(merge2(m));
    expect_naive(m);
  }
}

TEST(MergeStates, NPartsMatchNaiveWithEmptyParts) {
  TEJAS_SEEDED_TEST_RNG();
  for (int64_t S : {1, 2, 5}) {
    for (DType t : {DType::bf16, DType::f32}) {
      SCOPED_TRACE("S " + std::to_string(S) + " " + std::string(tejas::dtype_name(t)));
      MergeProblem m(t, S, 4, 3, 32);
      fill_states(m, rng, 3.0);
      // Some parts empty (a split that held no visible key), with garbage v.
      for (int64_t i = 0; i < m.N * m.H; ++i)
        if (rng.randint(0, 2) == 0) {
          const int64_t s = rng.randint(0, S - 1), n = i / m.H, h = i % m.H;
          m.lse.set({s, n, h}, kNegInf);
          for (int64_t d = 0; d < m.D; ++d) m.v.set({s, n, h, d}, kNaN);
        }
      TEJAS_ASSERT_OK(merge_n(m));
      expect_naive(m);
    }
  }
}

TEST(MergeStates, SinglePartIsCopiedExactly) {
  TEJAS_SEEDED_TEST_RNG();
  MergeProblem m(DType::bf16, 1, 3, 2, 16);
  fill_states(m, rng, 5.0);
  TEJAS_ASSERT_OK(merge_n(m));
  HostTensor v0(DType::bf16, {3, 2, 16}), lse0(DType::f32, {3, 2});
  for (int64_t i = 0; i < v0.numel(); ++i) v0.set_flat(i, m.v.get_flat(i));
  for (int64_t i = 0; i < lse0.numel(); ++i) lse0.set_flat(i, m.lse.get_flat(i));
  EXPECT_TRUE(compare_exact(m.out, v0).ok);
  EXPECT_TRUE(compare_exact(m.out_lse, lse0).ok);
}

TEST(MergeStates, EmptyPartContributesNothing) {
  TEJAS_SEEDED_TEST_RNG();
  MergeProblem m(DType::f16, 2, 2, 2, 8);
  fill_states(m, rng, 2.0);
  // Row 0: part b empty (v poisoned). Row 1: both empty.
  for (int64_t h = 0; h < m.H; ++h) {
    m.lse.set({1, 0, h}, kNegInf);
    m.lse.set({0, 1, h}, kNegInf);
    m.lse.set({1, 1, h}, kNegInf);
    for (int64_t d = 0; d < m.D; ++d) {
      m.v.set({1, 0, h, d}, kNaN);
      m.v.set({0, 1, h, d}, kNaN);
      m.v.set({1, 1, h, d}, kNaN);
    }
  }
  TEJAS_ASSERT_OK(merge2(m));
  for (int64_t h = 0; h < m.H; ++h) {
    EXPECT_EQ(m.out_lse.get({0, h}), m.lse.get({0, 0, h}));
    EXPECT_EQ(m.out_lse.get({1, h}), kNegInf);
    for (int64_t d = 0; d < m.D; ++d) {
      EXPECT_EQ(m.out.get({0, h, d}), m.v.get({0, 0, h, d}));
      EXPECT_EQ(m.out.get({1, h, d}), 0.0);
    }
  }
}

TEST(MergeStates, NanOrPositiveInfLseGivesNan) {
  TEJAS_SEEDED_TEST_RNG();
  MergeProblem m(DType::f32, 2, 4, 1, 8);
  fill_states(m, rng, 1.0);
  m.lse.set({0, 0, 0}, kNaN);  // row 0: one NaN part
  m.lse.set({1, 1, 0}, std::numeric_limits<double>::infinity());  // row 1: one +inf part
  m.lse.set({0, 2, 0}, kNaN);  // row 2: all parts NaN (not mistaken for "all empty")
  m.lse.set({1, 2, 0}, kNaN);
  TEJAS_ASSERT_OK(merge2(m));
  for (int64_t n : {0, 1, 2}) {
    EXPECT_TRUE(std::isnan(m.out_lse.get({n, 0}))) << "row " << n;
    for (int64_t d = 0; d < m.D; ++d) EXPECT_TRUE(std::isnan(m.out.get({n, 0, d}))) << "row " << n;
  }
  EXPECT_TRUE(std::isfinite(m.out_lse.get({3, 0})));
  for (int64_t d = 0; d < m.D; ++d) EXPECT_TRUE(std::isfinite(m.out.get({3, 0, d})));
}

TEST(MergeStates, FarApartLsesStayFinite) {
  TEJAS_SEEDED_TEST_RNG();
  MergeProblem m(DType::f32, 2, 2, 2, 16);
  fill_states(m, rng, 1.0);
  for (int64_t n = 0; n < m.N; ++n)
    for (int64_t h = 0; h < m.H; ++h) {
      m.lse.set({0, n, h}, 800.0 + rng.normal());  // e^800 overflows float64 without max subtraction
      m.lse.set({1, n, h}, n == 0 ? 801.0 : -800.0);
    }
  TEJAS_ASSERT_OK(merge2(m));
  expect_naive(m);
}

TEST(MergeStates, InPlaceMatchesOutOfPlace) {
  TEJAS_SEEDED_TEST_RNG();
  MergeProblem m(DType::bf16, 2, 3, 4, 32);
  fill_states(m, rng, 3.0);
  TEJAS_ASSERT_OK(merge2(m));
  const tejas::TensorView va = MergeProblem::part(m.v, 0), la = MergeProblem::part(m.lse, 0);
  TEJAS_ASSERT_OK(tejas::merge_attention_states({}, va, la, MergeProblem::part(m.v, 1), MergeProblem::part(m.lse, 1),
                                                va, la));
  for (int64_t i = 0; i < m.out.numel(); ++i) ASSERT_EQ(m.out.bits_flat(i), m.v.bits_flat(i));
  for (int64_t i = 0; i < m.out_lse.numel(); ++i) ASSERT_EQ(m.out_lse.bits_flat(i), m.lse.bits_flat(i));
}

TEST(MergeStates, PaddedViewsWithoutOutLse) {
  TEJAS_SEEDED_TEST_RNG();
  MergeProblem m(DType::f16, 2, 3, 2, 24, /*pad=*/3);
  fill_states(m, rng, 2.0);
  TEJAS_ASSERT_OK(merge2(m, /*with_lse=*/false));
  EXPECT_TRUE(untouched(m.out_lse));
  const NaiveMerged want = naive_merge(m);
  HostTensor got(DType::f16, {m.N, m.H, m.D});
  got.copy_from(m.out);
  const auto r = compare(got, want.out, once_rounded(want.out));
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_TRUE(m.out.padding_intact() && m.out.guards_intact());
}

// Split-KV identity. Partial states come from the naive attention over disjoint key ranges,
// stored as f32 (v and lse), merged by the op, and compared with the naive attention over all
// keys. Storing the parts rounds each v and lse once to f32: the merged result moves by about
// 2^-24 * (|v| + |lse| * spread of v), a few times 2^-24 of the values' scale here (|lse| <= ~10),
// so the bound is 2^-18 of the largest |V|, with 1 ulp of f32 as the other way to pass.
TEST(MergeStates, SplitKvIdentity) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr double kStoredPartsRel = 0x1p-18;
  const int64_t N = 3, H = 2, D = 32, n_keys = 48;
  const Logits lg{1 / std::sqrt(Real(D)), 0, false, 0};
  for (int S : {2, 4}) {
    // Split points, one of them making an empty range for S = 4.
    const std::vector<int64_t> cuts = S == 2 ? std::vector<int64_t>{0, rng.randint(1, n_keys - 1), n_keys}
                                             : std::vector<int64_t>{0, 10, 10, 31, n_keys};
    SCOPED_TRACE("S " + std::to_string(S));
    MergeProblem m(DType::f32, S, N, H, D);
    HostTensor want_out(DType::f32, {N, H, D}), want_lse(DType::f32, {N, H});
    double v_max = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t h = 0; h < H; ++h) {
        Row q(static_cast<size_t>(D));
        std::vector<Row> keys(static_cast<size_t>(n_keys), Row(static_cast<size_t>(D)));
        std::vector<Row> vals = keys;
        for (auto& x : q) x = rng.normal();
        for (int64_t k = 0; k < n_keys; ++k)
          for (int64_t d = 0; d < D; ++d) {
            keys[static_cast<size_t>(k)][static_cast<size_t>(d)] = rng.normal();
            vals[static_cast<size_t>(k)][static_cast<size_t>(d)] = rng.normal();
            v_max = std::max(v_max, std::fabs(static_cast<double>(vals[static_cast<size_t>(k)][static_cast<size_t>(d)])));
          }
        const State full = attend(q, keys, vals, lg, static_cast<size_t>(D));
        for (int64_t d = 0; d < D; ++d) want_out.set({n, h, d}, static_cast<double>(full.out[static_cast<size_t>(d)]));
        want_lse.set({n, h}, static_cast<double>(full.lse));
        for (int s = 0; s < S; ++s) {
          const auto lo = keys.begin() + cuts[static_cast<size_t>(s)], hi = keys.begin() + cuts[static_cast<size_t>(s) + 1];
          const std::vector<Row> pk(lo, hi);
          const std::vector<Row> pv(vals.begin() + cuts[static_cast<size_t>(s)], vals.begin() + cuts[static_cast<size_t>(s) + 1]);
          const State part = attend(q, pk, pv, lg, static_cast<size_t>(D));
          for (int64_t d = 0; d < D; ++d) m.v.set({s, n, h, d}, static_cast<double>(part.out[static_cast<size_t>(d)]));
          m.lse.set({s, n, h}, static_cast<double>(part.lse));
        }
      }
    TEJAS_ASSERT_OK(S == 2 ? merge2(m) : merge_n(m));
    const auto r = compare(m.out, want_out, tejas::check::Tolerance{kStoredPartsRel * v_max, 0, 1});
    EXPECT_TRUE(r.ok) << "out: " << r.message;
    const auto rl = compare(m.out_lse, want_lse, tejas::check::Tolerance{kStoredPartsRel, 0, 1});
    EXPECT_TRUE(rl.ok) << "out_lse: " << rl.message;
  }
}
