// One test per validation rule of rope: invalid_argument, the message names the argument, and
// q, k (and every other buffer) are unchanged.
#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "ops/rope/config.h"
#include "support/op_snapshots.h"
#include "ops/rope/rope_test_util.h"
#include "support/seed.h"
#include "tejas/rope.h"

using namespace tejas;
using check::HostTensor;

namespace {

constexpr int64_t T = 4, Hq = 2, Hk = 1, D = 16, kRotary = 8, kMaxPos = 32;

struct Buffers {
  HostTensor positions{DType::i32, {T}};
  HostTensor q{DType::f32, {T, Hq, D}};
  HostTensor k{DType::f32, {T, Hk, D}};
  HostTensor cache = ropetest::make_cache(kMaxPos, kRotary, DType::f32);
  HostTensor spare{DType::f32, {4 * T * Hq * D}};  // room for views with unusual strides
};

struct Args {
  TensorView positions, q, k, cache;
  RopeStyle style = RopeStyle::neox;
  Backend backend = Backend::reference;
};

struct Rule {
  const char* name;
  std::function<void(Args&, Buffers&)> break_it;
  const char* needle;  // "<argument>: expected"
};

TensorView shifted(const TensorView& t, int64_t bytes) {
  TensorView v = t;
  v.data = static_cast<char*>(t.data) + bytes;
  return v;
}

TensorView wide_view(Buffers& b, std::initializer_list<int64_t> shape) {
  return TensorView::contiguous(b.spare.view().data, DType::f32, shape);
}

// gtest prints the rule by name (not as raw bytes) in failure messages.
void PrintTo(const Rule& rule, std::ostream* os) { *os << rule.name; }

const std::vector<Rule>& rules() {
  static const std::vector<Rule> kRules = {
      {"PositionsAbsent", [](Args& a, Buffers&) { a.positions.data = nullptr; }, "positions: expected a tensor"},
      {"QAbsent", [](Args& a, Buffers&) { a.q.data = nullptr; }, "q: expected a tensor"},
      {"CacheAbsent", [](Args& a, Buffers&) { a.cache.data = nullptr; }, "cos_sin_cache: expected a tensor"},
      {"PositionsDtype", [](Args& a, Buffers&) { a.positions.dtype = DType::f32; }, "positions: expected dtype i32 or i64"},
      {"QDtype", [](Args& a, Buffers&) { a.q.dtype = DType::e4m3; }, "q: expected dtype"},
      {"KDtypeDiffersFromQ", [](Args& a, Buffers&) { a.k.dtype = DType::f16; }, "k: expected dtype f32 (as q)"},
      {"CacheDtype", [](Args& a, Buffers&) { a.cache.dtype = DType::bf16; }, "cos_sin_cache: expected dtype f32"},
      {"PositionsRank", [](Args& a, Buffers&) { a.positions = TensorView::contiguous(a.positions.data, DType::i32, {T, 1}); },
       "positions: expected 1 dimensions"},
      {"QRank", [](Args& a, Buffers&) { a.q = TensorView::contiguous(a.q.data, DType::f32, {T, Hq * D}); },
       "q: expected 3 dimensions"},
      {"KRank", [](Args& a, Buffers&) { a.k = TensorView::contiguous(a.k.data, DType::f32, {T, Hk, D, 1}); },
       "k: expected 3 dimensions"},
      {"CacheRank", [](Args& a, Buffers&) { a.cache = TensorView::contiguous(a.cache.data, DType::f32, {kMaxPos * kRotary}); },
       "cos_sin_cache: expected 2 dimensions"},
      {"NoTokensKRows", [](Args& a, Buffers&) { a.positions.shape[0] = a.q.shape[0] = 0; },
       "k: expected dim 0 = 0"},
      {"QTokens", [](Args& a, Buffers&) { a.q.shape[0] = T - 1; }, "q: expected dim 0 = 4"},
      {"QNoHeads", [](Args& a, Buffers&) { a.q.shape[1] = 0; }, "q: expected dim 1 >= 1"},
      {"KTokens", [](Args& a, Buffers&) { a.k.shape[0] = T - 1; }, "k: expected dim 0 = 4"},
      {"KNoHeads", [](Args& a, Buffers&) { a.k.shape[1] = 0; }, "k: expected dim 1 >= 1"},
      {"TooManyHeads", [](Args& a, Buffers&) { a.q.shape[1] = rotary::kMaxHeads; },
       "q, k: expected at most 16777216 heads in all (q's dim 1 plus k's), got 16777217"},
      {"KHeadDim", [](Args& a, Buffers&) { a.k.shape[2] = D - 2; }, "k: expected dim 2 = 16"},
      {"HeadDimTooLarge",
       [](Args& a, Buffers&) {
         a.q.shape[2] = a.k.shape[2] = rotary::kMaxHeadDim + 2;  // a view only: rejected before any access
         a.q.stride[1] = a.k.stride[1] = a.q.shape[2];
         a.q.stride[0] = a.q.shape[2] * a.q.shape[1];
         a.k.stride[0] = a.k.shape[2] * a.k.shape[1];
       },
       "q: expected a head dim (dim 2) of at most 16777216, got 16777218"},
      {"CacheNoRows", [](Args& a, Buffers&) { a.cache.shape[0] = 0; }, "cos_sin_cache: expected dim 0 >= 1"},
      {"RotaryDimOdd", [](Args& a, Buffers&) { a.cache.shape[1] = 7; }, "cos_sin_cache: expected an even rotary_dim"},
      {"RotaryDimZero", [](Args& a, Buffers&) { a.cache.shape[1] = 0; }, "cos_sin_cache: expected an even rotary_dim"},
      {"RotaryDimAboveHeadDim",
       [](Args& a, Buffers& b) {
         a.cache = wide_view(b, {kMaxPos, D + 2});
       },
       "cos_sin_cache: expected an even rotary_dim (dim 1) in [2, 16]"},
      {"PositionsNegativeStride",
       [](Args& a, Buffers&) {
         a.positions = shifted(a.positions, (T - 1) * 4);
         a.positions.stride[0] = -1;
       },
       "positions: expected non-negative strides"},
      {"QNegativeStride",
       [](Args& a, Buffers&) {
         a.q = shifted(a.q, (T - 1) * Hq * D * 4);
         a.q.stride[0] = -Hq * D;
       },
       "q: expected non-negative strides"},
      {"PositionsInnerStride",
       [](Args& a, Buffers& b) {
         a.positions = TensorView::contiguous(b.spare.view().data, DType::i32, {T});
         a.positions.stride[0] = 2;
       },
       "positions: expected a contiguous innermost"},
      {"QInnerStride",
       [](Args& a, Buffers& b) {
         a.q = wide_view(b, {T, Hq, D});
         a.q.stride[2] = 2;
         a.q.stride[1] = 2 * D;
         a.q.stride[0] = 2 * D * Hq;
       },
       "q: expected a contiguous innermost"},
      {"KInnerStride",
       [](Args& a, Buffers& b) {
         a.k = wide_view(b, {T, Hk, D});
         a.k.stride[2] = 2;
         a.k.stride[1] = 2 * D;
         a.k.stride[0] = 2 * D;
       },
       "k: expected a contiguous innermost"},
      {"CacheInnerStride",
       [](Args& a, Buffers& b) {
         a.cache = wide_view(b, {T, kRotary});
         a.cache.stride[1] = 2;
         a.cache.stride[0] = 2 * kRotary;
       },
       "cos_sin_cache: expected a contiguous innermost"},
      {"PositionsMisaligned", [](Args& a, Buffers&) { a.positions = shifted(a.positions, 2); },
       "positions: expected data aligned to 4"},
      {"QMisaligned", [](Args& a, Buffers&) { a.q = shifted(a.q, 1); }, "q: expected data aligned to 4"},
      {"KMisaligned", [](Args& a, Buffers&) { a.k = shifted(a.k, 2); }, "k: expected data aligned to 4"},
      {"CacheMisaligned", [](Args& a, Buffers&) { a.cache = shifted(a.cache, 3); }, "cos_sin_cache: expected data aligned to 4"},
      {"Style", [](Args& a, Buffers&) { a.style = static_cast<RopeStyle>(9); }, "style: expected neox or gptj"},
      {"QOnOtherDevice", [](Args& a, Buffers&) { a.q.device = Device::cuda; }, "q: expected device cpu"},
      {"CacheOnOtherDevice", [](Args& a, Buffers&) { a.cache.device_index = 2; }, "cos_sin_cache: expected device cpu"},
      {"QSelfOverlap", [](Args& a, Buffers&) { a.q.stride[1] = D / 2; }, "q: expected every element at its own address"},
      {"KSelfOverlap", [](Args& a, Buffers&) { a.k.stride[0] = 0; }, "k: expected every element at its own address"},
      {"KIsQ", [](Args& a, Buffers&) { a.k = a.q; }, "q: expected no overlap with k"},
      {"QOverPositions", [](Args& a, Buffers&) { a.positions.data = a.q.data; }, "q: expected no overlap with positions"},
      {"QOverCache", [](Args& a, Buffers&) { a.cache.data = a.q.data; }, "q: expected no overlap with cos_sin_cache"},
      {"KOverPositions", [](Args& a, Buffers&) { a.positions.data = a.k.data; }, "k: expected no overlap with positions"},
      {"KOverCache", [](Args& a, Buffers&) { a.cache.data = a.k.data; }, "k: expected no overlap with cos_sin_cache"},
      {"HostTensorsOnCudaBackend", [](Args& a, Buffers&) { a.backend = Backend::cuda; },
       "positions: expected a cuda tensor"},
  };
  return kRules;
}

class RopeValidation : public ::testing::TestWithParam<Rule> {};

TEST_P(RopeValidation, RejectedAndNothingWritten) {
  TEJAS_SEEDED_TEST_RNG();
  const Rule& rule = GetParam();
  Buffers b;
  check::fill_randint(b.positions, rng, 0, kMaxPos - 1);
  check::fill_normal(b.q, rng);
  check::fill_normal(b.k, rng);
  check::fill_normal(b.spare, rng);
  Args a{b.positions.view(), b.q.view(), b.k.view(), b.cache.view()};
  rule.break_it(a, b);
  ExecContext ctx;
  ctx.backend = a.backend;
  const std::vector<const HostTensor*> all = {&b.positions, &b.q, &b.k, &b.cache, &b.spare};
  std::vector<std::vector<uint64_t>> before;
  for (const HostTensor* t : all) before.push_back(optest::bits_of(*t));
  TEJAS_EXPECT_INVALID(rope(ctx, a.positions, a.q, a.k, a.cache, a.style), std::string("rope: ") + rule.needle);
  for (size_t i = 0; i < all.size(); ++i) EXPECT_TRUE(optest::unchanged(*all[i], before[i])) << "buffer " << i;
}

INSTANTIATE_TEST_SUITE_P(Rules, RopeValidation, ::testing::ValuesIn(rules()),
                         [](const ::testing::TestParamInfo<Rule>& info) { return std::string(info.param.name); });

// q and k as disjoint head slices of one qkv buffer (strided views) are accepted.
TEST(RopeValidationControl, QkvSlicesAccepted) {
  TEJAS_SEEDED_TEST_RNG();
  HostTensor qkv(DType::bf16, {T, Hq + 2 * Hk, D}), pos(DType::i64, {T});
  check::fill_normal(qkv, rng);
  check::fill_randint(pos, rng, 0, kMaxPos - 1);
  const HostTensor cache = ropetest::make_cache(kMaxPos, kRotary, DType::bf16);
  TensorView q = qkv.view(), k = qkv.view();
  q.shape[1] = Hq;
  k.shape[1] = Hk;
  k.data = static_cast<uint16_t*>(qkv.view().data) + Hq * D;
  const auto before = optest::bits_of(qkv);
  TEJAS_ASSERT_OK(rope(ropetest::reference_ctx(), pos, q, k, cache, RopeStyle::gptj));
  for (int64_t t = 0; t < T; ++t)  // v (the last head) is untouched
    for (int64_t d = 0; d < D; ++d) {
      const int64_t i = (t * (Hq + 2 * Hk) + Hq + Hk) * D + d;
      EXPECT_EQ(qkv.bits_flat(i), before[static_cast<size_t>(i)]);
    }
}

}  // namespace
