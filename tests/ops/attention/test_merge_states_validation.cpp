// merge_attention_states(_n): one test per validation rule. Each breaks one argument of a
// valid call and expects invalid_argument naming it, with outputs and inputs untouched.
#include <gtest/gtest.h>

#include <functional>

#include "ops/attention/merge_fixture.h"
#include "support/seed.h"
#include "tejas/attention.h"

using namespace attn_test;
using tejas::Device;
using tejas::DType;
using tejas::StatusCode;
using tejas::TensorView;

namespace {

struct Call2 {
  TensorView v_a, lse_a, v_b, lse_b, out, out_lse;
  tejas::ExecContext ctx;
  tejas::Status run() const { return tejas::merge_attention_states(ctx, v_a, lse_a, v_b, lse_b, out, out_lse); }
};

struct CallN {
  TensorView v_parts, lse_parts, out, out_lse;
  tejas::ExecContext ctx;
  tejas::Status run() const { return tejas::merge_attention_states_n(ctx, v_parts, lse_parts, out, out_lse); }
};

template <class Call>
struct Rule {
  const char* name;
  const char* argument;
  std::function<void(Call&)> breaks;
};

// Valid problem: S = 2 parts of [N=3, H=2, D=8] bf16 states.
MergeProblem valid_problem(tejas::check::Rng& rng) {
  MergeProblem m(DType::bf16, 2, 3, 2, 8);
  fill_states(m, rng, 2.0);
  return m;
}

Call2 call2_for(const MergeProblem& m) {
  return Call2{MergeProblem::part(m.v, 0), MergeProblem::part(m.lse, 0), MergeProblem::part(m.v, 1),
               MergeProblem::part(m.lse, 1), m.out, m.out_lse, {}};
}

CallN calln_for(const MergeProblem& m) { return CallN{m.v, m.lse, m.out, m.out_lse, {}}; }

std::vector<uint64_t> snapshot(const HostTensor& t) {
  std::vector<uint64_t> bits;
  for (int64_t i = 0; i < t.numel(); ++i) bits.push_back(t.bits_flat(i));
  return bits;
}

// Applies the rule to a valid call and checks the failure contract.
template <class Call>
void expect_rejected(const char* op, const Rule<Call>& rule, Call (*make)(const MergeProblem&)) {
  TEJAS_SEEDED_TEST_RNG();
  MergeProblem m = valid_problem(rng);
  Call call = make(m);
  TEJAS_ASSERT_OK(call.run());  // the unbroken call is valid
  m.out.poison();
  m.out_lse.poison();
  rule.breaks(call);
  const auto v_before = snapshot(m.v), lse_before = snapshot(m.lse);
  const tejas::Status s = call.run();
  EXPECT_EQ(s.code(), StatusCode::invalid_argument) << s.to_string();
  const std::string prefix = std::string(op) + ": " + rule.argument + ": expected";
  EXPECT_EQ(s.message().rfind(prefix, 0), 0u) << "want prefix '" << prefix << "', got: " << s.message();
  EXPECT_TRUE(untouched(m.out));
  EXPECT_TRUE(untouched(m.out_lse));
  EXPECT_EQ(snapshot(m.v), v_before);
  EXPECT_EQ(snapshot(m.lse), lse_before);
}

void shift_one_element(TensorView& t) {
  t.data = static_cast<char*>(t.data) + tejas::dtype_bits(t.dtype) / 8;
}

const std::vector<Rule<Call2>>& rules2() {
  static const std::vector<Rule<Call2>> kRules = {
      {"MissingVA", "v_a", [](Call2& c) { c.v_a = {}; }},
      {"MissingLseA", "lse_a", [](Call2& c) { c.lse_a = {}; }},
      {"MissingVB", "v_b", [](Call2& c) { c.v_b = {}; }},
      {"MissingLseB", "lse_b", [](Call2& c) { c.lse_b = {}; }},
      {"MissingOut", "out", [](Call2& c) { c.out = {}; }},
      {"VADtype", "v_a", [](Call2& c) { c.v_a.dtype = DType::e4m3; }},
      {"VBDtypeDiffers", "v_b", [](Call2& c) { c.v_b.dtype = DType::f16; }},
      {"OutDtypeDiffers", "out", [](Call2& c) { c.out.dtype = DType::f32; }},
      {"LseADtype", "lse_a", [](Call2& c) { c.lse_a.dtype = DType::bf16; }},
      {"LseBDtype", "lse_b", [](Call2& c) { c.lse_b.dtype = DType::f64; }},
      {"OutLseDtype", "out_lse", [](Call2& c) { c.out_lse.dtype = DType::f16; }},
      {"OutLseRankPastMax", "out_lse", [](Call2& c) { c.out_lse.ndim = tejas::kMaxDims + 1; }},
      {"OutLseSizesWrap", "out_lse", [](Call2& c) { c.out_lse.shape[0] = c.out_lse.shape[1] = int64_t{1} << 32; }},
      {"VARank", "v_a", [](Call2& c) { c.v_a.ndim = 2; }},
      {"VBShape", "v_b", [](Call2& c) { c.v_b.shape[2] = 4; }},
      {"OutShape", "out", [](Call2& c) { c.out.shape[0] = 2; }},
      {"LseAShape", "lse_a", [](Call2& c) { c.lse_a.shape[1] = 1; }},
      {"LseBRank", "lse_b", [](Call2& c) { c.lse_b.ndim = 3; }},
      {"OutLseShape", "out_lse", [](Call2& c) { c.out_lse.shape[0] = 1; }},
      {"VAInnerStride", "v_a", [](Call2& c) { c.v_a.stride[2] = 2; }},
      {"LseBInnerStride", "lse_b", [](Call2& c) { c.lse_b.stride[1] = 3; }},
      {"VBNegativeStride", "v_b", [](Call2& c) { c.v_b.stride[0] = -c.v_b.stride[0]; }},
      {"OutWritesOneElementTwice", "out", [](Call2& c) { c.out.stride[0] = 0; }},
      {"OutLseWritesOneElementTwice", "out_lse", [](Call2& c) { c.out_lse.stride[0] = 1; }},
      {"VBOnOtherDevice", "v_b", [](Call2& c) { c.v_b.device = Device::cuda; }},
      {"CudaBackendWithHostTensors", "v_a", [](Call2& c) { c.ctx.backend = tejas::Backend::cuda; }},
      {"OutIsVB", "out", [](Call2& c) { c.out = c.v_b; }},
      {"OutPartlyOverlapsVA", "out",
       [](Call2& c) {
         c.out = c.v_a;
         shift_one_element(c.out);
       }},
      {"OutIsVAButVBToo", "out",
       [](Call2& c) {
         c.out = c.v_a;
         c.v_b = c.v_a;
       }},
      {"OutLseIsLseB", "out_lse", [](Call2& c) { c.out_lse = c.lse_b; }},
      {"OutLseOverlapsOut", "out_lse", [](Call2& c) { c.out_lse.data = c.out.data; }},
  };
  return kRules;
}

const std::vector<Rule<CallN>>& rules_n() {
  static const std::vector<Rule<CallN>> kRules = {
      {"MissingVParts", "v_parts", [](CallN& c) { c.v_parts = {}; }},
      {"MissingLseParts", "lse_parts", [](CallN& c) { c.lse_parts = {}; }},
      {"MissingOut", "out", [](CallN& c) { c.out = {}; }},
      {"VPartsDtype", "v_parts", [](CallN& c) { c.v_parts.dtype = DType::i32; }},
      {"OutDtypeDiffers", "out", [](CallN& c) { c.out.dtype = DType::f16; }},
      {"LsePartsDtype", "lse_parts", [](CallN& c) { c.lse_parts.dtype = DType::bf16; }},
      {"OutLseDtype", "out_lse", [](CallN& c) { c.out_lse.dtype = DType::f64; }},
      {"OutLseRankPastMax", "out_lse", [](CallN& c) { c.out_lse.ndim = tejas::kMaxDims + 1; }},
      {"VPartsRank", "v_parts", [](CallN& c) { c.v_parts.ndim = 3; }},
      {"ZeroParts", "v_parts", [](CallN& c) { c.v_parts.shape[0] = 0; }},
      {"LsePartsShape", "lse_parts", [](CallN& c) { c.lse_parts.shape[0] = 1; }},
      {"OutShape", "out", [](CallN& c) { c.out.shape[2] = 7; }},
      {"OutLseShape", "out_lse", [](CallN& c) { c.out_lse.shape[1] = 3; }},
      {"VPartsInnerStride", "v_parts", [](CallN& c) { c.v_parts.stride[3] = 2; }},
      {"OutNegativeStride", "out", [](CallN& c) { c.out.stride[1] = -c.out.stride[1]; }},
      {"OutWritesOneElementTwice", "out", [](CallN& c) { c.out.stride[1] = 1; }},
      {"LsePartsOnOtherDevice", "lse_parts", [](CallN& c) { c.lse_parts.device = Device::cuda; }},
      {"OutIsFirstPart", "out", [](CallN& c) { c.out.data = c.v_parts.data; }},
      {"OutLseIsFirstPart", "out_lse", [](CallN& c) { c.out_lse.data = c.lse_parts.data; }},
      {"OutLseOverlapsOut", "out_lse", [](CallN& c) { c.out_lse.data = c.out.data; }},
  };
  return kRules;
}

class MergeRule : public ::testing::TestWithParam<size_t> {};
class MergeNRule : public ::testing::TestWithParam<size_t> {};

TEST_P(MergeRule, RejectsNamingArgumentAndWritesNothing) {
  expect_rejected("merge_attention_states", rules2()[GetParam()], &call2_for);
}

TEST_P(MergeNRule, RejectsNamingArgumentAndWritesNothing) {
  expect_rejected("merge_attention_states_n", rules_n()[GetParam()], &calln_for);
}

INSTANTIATE_TEST_SUITE_P(Rules, MergeRule, ::testing::Range<size_t>(0, rules2().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) { return rules2()[info.param].name; });
INSTANTIATE_TEST_SUITE_P(Rules, MergeNRule, ::testing::Range<size_t>(0, rules_n().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) { return rules_n()[info.param].name; });

TEST(MergeValidation, EmulatorIsUnsupportedForNow) {
  TEJAS_SEEDED_TEST_RNG();
  MergeProblem m = valid_problem(rng);
  Call2 c2 = call2_for(m);
  CallN cn = calln_for(m);
  c2.ctx.backend = cn.ctx.backend = tejas::Backend::emulator;
  EXPECT_EQ(c2.run().code(), StatusCode::unsupported);
  EXPECT_EQ(cn.run().code(), StatusCode::unsupported);
  EXPECT_TRUE(untouched(m.out) && untouched(m.out_lse));
}

}  // namespace
