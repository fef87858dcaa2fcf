// paged_decode_attention: one test per validation rule. Each breaks one argument of a valid
// call and expects invalid_argument naming that argument, with outputs and inputs untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "ops/attention/paged_decode_fixture.h"
#include "support/seed.h"

using namespace attn_test;
using tejas::Device;
using tejas::DType;
using tejas::StatusCode;
using tejas::TensorView;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The arguments of one call, as views that a rule may break.
struct Call {
  TensorView q, k_cache, v_cache, block_table, seq_lens, sinks, out, lse;
  tejas::PagedDecodeParams params;
  tejas::ExecContext ctx;
  tejas::Status run() const {
    return tejas::paged_decode_attention(ctx, q, k_cache, v_cache, block_table, seq_lens, sinks, params, out, lse);
  }
};

struct Rule {
  const char* name;
  const char* argument;  // must be named in the message
  std::function<void(Call&, DecodeProblem&)> breaks;
};

// A valid problem: 2 requests, Q = 2, Hq = 4, Hkv = 2, D = 8, block_size 4, sinks and lse.
std::unique_ptr<DecodeProblem> valid_problem(tejas::check::Rng& rng) {
  DecodeCase c;
  c.Q = 2;
  c.Hq = 4;
  c.Hkv = 2;
  c.D = 8;
  c.block_size = 4;
  c.seq_lens = {7, 10};
  c.with_sinks = true;
  return make_problem(c, rng);
}

Call call_for(const DecodeProblem& p) {
  return Call{p.q, p.k_cache, p.v_cache, p.block_table, p.seq_lens, p.sinks, p.out, p.lse, p.c.params, {}};
}

std::vector<uint64_t> snapshot(const HostTensor& t) {
  std::vector<uint64_t> bits;
  for (int64_t i = 0; i < t.numel(); ++i) bits.push_back(t.bits_flat(i));
  return bits;
}

std::vector<std::vector<uint64_t>> inputs_of(const DecodeProblem& p) {
  return {snapshot(p.q), snapshot(p.k_cache), snapshot(p.v_cache), snapshot(p.block_table), snapshot(p.seq_lens),
          snapshot(p.sinks)};
}

void set_dim(TensorView& t, int d, int64_t n) { t.shape[d] = n; }

const std::vector<Rule>& rules() {
  static const std::vector<Rule> kRules = {
      // presence
      {"MissingQ", "q", [](Call& c, DecodeProblem&) { c.q = {}; }},
      {"MissingKCache", "k_cache", [](Call& c, DecodeProblem&) { c.k_cache = {}; }},
      {"MissingVCache", "v_cache", [](Call& c, DecodeProblem&) { c.v_cache = {}; }},
      {"MissingBlockTable", "block_table", [](Call& c, DecodeProblem&) { c.block_table = {}; }},
      {"MissingSeqLens", "seq_lens", [](Call& c, DecodeProblem&) { c.seq_lens = {}; }},
      {"MissingOut", "out", [](Call& c, DecodeProblem&) { c.out = {}; }},
      // dtypes
      {"QDtype", "q", [](Call& c, DecodeProblem&) { c.q.dtype = DType::e4m3; }},
      {"OutDtypeDiffersFromQ", "out", [](Call& c, DecodeProblem&) { c.out.dtype = DType::f16; }},
      {"KCacheDtype", "k_cache", [](Call& c, DecodeProblem&) { c.k_cache.dtype = DType::f32; }},
      {"VCacheDtypeDiffersFromK", "v_cache", [](Call& c, DecodeProblem&) { c.v_cache.dtype = DType::f16; }},
      {"BlockTableDtype", "block_table", [](Call& c, DecodeProblem&) { c.block_table.dtype = DType::i64; }},
      {"SeqLensDtype", "seq_lens", [](Call& c, DecodeProblem&) { c.seq_lens.dtype = DType::f32; }},
      {"SinksDtype", "sinks", [](Call& c, DecodeProblem&) { c.sinks.dtype = DType::bf16; }},
      {"LseDtype", "lse", [](Call& c, DecodeProblem&) { c.lse.dtype = DType::f16; }},
      // ranks
      {"QRank", "q", [](Call& c, DecodeProblem&) { c.q.ndim = 3; }},
      {"KCacheRank", "k_cache", [](Call& c, DecodeProblem&) { c.k_cache.ndim = 3; }},
      {"VCacheRank", "v_cache", [](Call& c, DecodeProblem&) { c.v_cache.ndim = 3; }},
      {"BlockTableRank", "block_table", [](Call& c, DecodeProblem&) { c.block_table.ndim = 1; }},
      {"SeqLensRank", "seq_lens", [](Call& c, DecodeProblem&) { c.seq_lens.ndim = 2; }},
      {"SinksRank", "sinks", [](Call& c, DecodeProblem&) { c.sinks.ndim = 2; }},
      {"OutRank", "out", [](Call& c, DecodeProblem&) { c.out.ndim = 3; }},
      {"LseRank", "lse", [](Call& c, DecodeProblem&) { c.lse.ndim = 2; }},
      {"SinksRankPastMax", "sinks", [](Call& c, DecodeProblem&) { c.sinks.ndim = tejas::kMaxDims + 1; }},
      {"LseSizesWrap", "lse",
       [](Call& c, DecodeProblem&) { c.lse.shape[0] = c.lse.shape[1] = c.lse.shape[2] = int64_t{1} << 22; }},
      // shapes
      {"TooManyQueries", "q", [](Call& c, DecodeProblem&) { set_dim(c.q, 1, tejas::kMaxDecodeQueries + 1); }},
      {"ZeroQueries", "q", [](Call& c, DecodeProblem&) { set_dim(c.q, 1, 0); }},
      {"ZeroHeads", "q", [](Call& c, DecodeProblem&) { set_dim(c.q, 2, 0); }},
      {"ZeroHeadDim", "q", [](Call& c, DecodeProblem&) { set_dim(c.q, 3, 0); }},
      {"KvHeadsNotDividingQHeads", "k_cache", [](Call& c, DecodeProblem&) { set_dim(c.k_cache, 2, 3); }},
      {"KCacheHeadDim", "k_cache", [](Call& c, DecodeProblem&) { set_dim(c.k_cache, 3, 4); }},
      {"ZeroBlockSize", "k_cache", [](Call& c, DecodeProblem&) { set_dim(c.k_cache, 1, 0); }},
      {"ZeroBlocks", "k_cache", [](Call& c, DecodeProblem&) { set_dim(c.k_cache, 0, 0); }},
      {"VCacheShape", "v_cache", [](Call& c, DecodeProblem&) { set_dim(c.v_cache, 0, 1); }},
      {"BlockTableBatch", "block_table", [](Call& c, DecodeProblem&) { set_dim(c.block_table, 0, 1); }},
      {"BlockTableNoColumns", "block_table", [](Call& c, DecodeProblem&) { set_dim(c.block_table, 1, 0); }},
      {"SeqLensBatch", "seq_lens", [](Call& c, DecodeProblem&) { set_dim(c.seq_lens, 0, 1); }},
      {"SinksHeads", "sinks", [](Call& c, DecodeProblem&) { set_dim(c.sinks, 0, 2); }},
      {"OutShape", "out", [](Call& c, DecodeProblem&) { set_dim(c.out, 3, 4); }},
      {"LseShape", "lse", [](Call& c, DecodeProblem&) { set_dim(c.lse, 2, 2); }},
      // strides and layouts
      {"QInnerStride", "q", [](Call& c, DecodeProblem&) { c.q.stride[3] = 2; }},
      {"KCacheInnerStride", "k_cache", [](Call& c, DecodeProblem&) { c.k_cache.stride[3] = 2; }},
      {"SeqLensStride", "seq_lens", [](Call& c, DecodeProblem&) { c.seq_lens.stride[0] = 2; }},
      {"OutInnerStride", "out", [](Call& c, DecodeProblem&) { c.out.stride[3] = 2; }},
      {"NegativeStride", "v_cache", [](Call& c, DecodeProblem&) { c.v_cache.stride[0] = -c.v_cache.stride[0]; }},
      {"OutWritesOneElementTwice", "out", [](Call& c, DecodeProblem&) { c.out.stride[1] = 0; }},
      {"LseWritesOneElementTwice", "lse", [](Call& c, DecodeProblem&) { c.lse.stride[0] = 1; }},
      // parameters
      {"NegativeScale", "params.softmax_scale", [](Call& c, DecodeProblem&) { c.params.softmax_scale = -0.5; }},
      {"NanScale", "params.softmax_scale", [](Call& c, DecodeProblem&) { c.params.softmax_scale = kNaN; }},
      {"InfScale", "params.softmax_scale", [](Call& c, DecodeProblem&) { c.params.softmax_scale = kInf; }},
      {"WindowBelowMinusOne", "params.window_left", [](Call& c, DecodeProblem&) { c.params.window_left = -2; }},
      {"NegativeSoftCap", "params.logits_soft_cap", [](Call& c, DecodeProblem&) { c.params.logits_soft_cap = -1; }},
      {"InfSoftCap", "params.logits_soft_cap", [](Call& c, DecodeProblem&) { c.params.logits_soft_cap = kInf; }},
      {"KScaleWithoutFp8", "params.k_scale", [](Call& c, DecodeProblem&) { c.params.k_scale = 2.0f; }},
      {"VScaleWithoutFp8", "params.v_scale", [](Call& c, DecodeProblem&) { c.params.v_scale = 0.5f; }},
      {"Fp8ZeroKScale", "params.k_scale",
       [](Call& c, DecodeProblem&) {
         c.k_cache.dtype = c.v_cache.dtype = DType::e4m3;
         c.params.k_scale = 0.0f;
       }},
      {"Fp8NanVScale", "params.v_scale",
       [](Call& c, DecodeProblem&) {
         c.k_cache.dtype = c.v_cache.dtype = DType::e5m2;
         c.params.v_scale = std::numeric_limits<float>::quiet_NaN();
       }},
      {"Fp8InfKScale", "params.k_scale",
       [](Call& c, DecodeProblem&) {
         c.k_cache.dtype = c.v_cache.dtype = DType::e4m3;
         c.params.k_scale = std::numeric_limits<float>::infinity();
       }},
      // devices and backends
      {"KCacheOnOtherDevice", "k_cache", [](Call& c, DecodeProblem&) { c.k_cache.device = Device::cuda; }},
      {"LseOnOtherDevice", "lse", [](Call& c, DecodeProblem&) { c.lse.device = Device::cuda; }},
      {"CudaBackendWithHostTensors", "q", [](Call& c, DecodeProblem&) { c.ctx.backend = tejas::Backend::cuda; }},
      // aliasing
      {"OutOverlapsQ", "out", [](Call& c, DecodeProblem&) { c.out.data = c.q.data; }},
      {"OutIsQ", "out", [](Call& c, DecodeProblem&) { c.out = c.q; }},
      {"OutOverlapsKCache", "out",
       [](Call& c, DecodeProblem&) {
         c.out.data = c.k_cache.data;
         c.out.dtype = c.q.dtype = c.k_cache.dtype;
       }},
      {"LseOverlapsSinks", "lse", [](Call& c, DecodeProblem&) { c.lse.data = c.sinks.data; }},
      {"LseOverlapsOut", "lse", [](Call& c, DecodeProblem&) { c.lse.data = c.out.data; }},
      // index contents (reference backend: always checked)
      {"SeqLenBelowQ", "seq_lens", [](Call&, DecodeProblem& p) { p.seq_lens.set({1}, 1); }},
      {"SeqLenBeyondTable", "seq_lens",
       [](Call&, DecodeProblem& p) { p.seq_lens.set({0}, static_cast<double>(p.max_blocks * 4 + 1)); }},
      {"BlockIndexPastEnd", "block_table",
       [](Call&, DecodeProblem& p) {
         p.block_table.set({1, 2}, static_cast<double>(p.num_blocks));
       }},
      {"NegativeBlockIndex", "block_table",
       [](Call&, DecodeProblem& p) {
         p.block_table.set({0, 0}, -1);
       }},
  };
  return kRules;
}

class PagedDecodeRule : public ::testing::TestWithParam<size_t> {};

TEST_P(PagedDecodeRule, RejectsNamingArgumentAndWritesNothing) {
  TEJAS_SEEDED_TEST_RNG();
  const Rule& rule = rules()[GetParam()];
  auto p = valid_problem(rng);
  Call call = call_for(*p);
  TEJAS_ASSERT_OK(call.run());  // the unbroken call is valid
  p->out.poison();
  p->lse.poison();
  rule.breaks(call, *p);
  const auto before = inputs_of(*p);
  const tejas::Status s = call.run();
  EXPECT_EQ(s.code(), StatusCode::invalid_argument) << s.to_string();
  const std::string prefix = std::string("paged_decode_attention: ") + rule.argument + ": expected";
  EXPECT_EQ(s.message().rfind(prefix, 0), 0u) << "want prefix '" << prefix << "', got: " << s.message();
  EXPECT_TRUE(untouched(p->out));
  EXPECT_TRUE(untouched(p->lse));
  EXPECT_EQ(inputs_of(*p), before);
}

INSTANTIATE_TEST_SUITE_P(Rules, PagedDecodeRule, ::testing::Range<size_t>(0, rules().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) { return rules()[info.param].name; });

TEST(PagedDecodeValidation, UnusedTableEntriesAreNotChecked) {
  TEJAS_SEEDED_TEST_RNG();
  auto p = valid_problem(rng);
  // The last column is past every request's length: any value is fine there.
  p->block_table.set({0, p->max_blocks - 1}, 1e9);
  p->block_table.set({1, p->max_blocks - 1}, -5);
  TEJAS_ASSERT_OK(p->run());
}

TEST(PagedDecodeValidation, EmulatorChecksIndicesOnlyInDebugMode) {
  TEJAS_SEEDED_TEST_RNG();
  auto p = valid_problem(rng);
  p->block_table.set({1, 0}, static_cast<double>(p->num_blocks + 7));
  tejas::ExecContext ctx;
  ctx.backend = tejas::Backend::emulator;
  // Without debug checks the contents are not read; the emulator has no kernel yet.
  const tejas::Status quiet = p->run(ctx);
  EXPECT_EQ(quiet.code(), StatusCode::unsupported) << quiet.to_string();
  ctx.debug_checks = true;
  TEJAS_EXPECT_INVALID(p->run(ctx), "paged_decode_attention: block_table: expected");
  EXPECT_TRUE(untouched(p->out));
  EXPECT_TRUE(untouched(p->lse));
}

TEST(PagedDecodeValidation, ValidCallOnEmulatorIsUnsupportedForNow) {
  TEJAS_SEEDED_TEST_RNG();
  auto p = valid_problem(rng);
  tejas::ExecContext ctx;
  ctx.backend = tejas::Backend::emulator;
  ctx.debug_checks = true;
  EXPECT_EQ(p->run(ctx).code(), StatusCode::unsupported);
  EXPECT_TRUE(untouched(p->out));
}

}  // namespace
