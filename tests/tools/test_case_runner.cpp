// The check harness itself must be able to fail: a fake op whose "emulator" result is wrong in
// one specific way at a time, against a "reference" that doubles its input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "check/case_runner.h"
#include "check/op_checks.h"
#include "check/tolerances.h"
#include "ops/common/ref_numeric.h"
#include "support/seed.h"

using namespace tejas;
using namespace tejas::check;

namespace {
enum class Fault { none, one_ulp, two_ulps, many_ulps, nan, padding, input, unsupported, invalid, inf };
constexpr int64_t kRows = 3, kCols = 20, kPad = 4;

// out = 2 x (bf16); on the emulator backend the fault is injected at element [1, 5].
Case fake_case(Rng& rng, Fault fault, Rule rule = float_rule(DType::bf16)) {
  Case c("fake_double", "bf16 [3, 20]");
  fill_normal(c.in("x", DType::bf16, {kRows, kCols}), rng);
  c.out("out", DType::bf16, {kRows, kCols}, rule, kPad);
  c.set_call([fault](const ExecContext& ctx, const Args& a) -> Status {
    const TensorView& x = a["x"];
    const TensorView& out = a["out"];
    const bool faulty = ctx.backend != Backend::reference;
    if (faulty && fault == Fault::unsupported) return Status::Unsupported("fake_double: no kernel");
    if (faulty && fault == Fault::invalid) return Status::InvalidArgument("fake_double: x: expected something");
    for (int64_t i = 0; i < kRows; ++i)
      for (int64_t j = 0; j < kCols; ++j) ref::put(out, i, j, 2 * ref::at(x, i, j));
    if (fault == Fault::inf && !faulty) ref::put(out, 0, 0, std::numeric_limits<double>::infinity());
    if (!faulty) return Status::Ok();
    const int64_t idx[] = {1, 5};
    const uint64_t bits = ref::load_bits(out, idx);
    switch (fault) {
      case Fault::one_ulp: ref::store_bits(out, idx, bits + 1); break;
      case Fault::two_ulps: ref::store_bits(out, idx, bits + 2); break;
      case Fault::many_ulps: ref::store_bits(out, idx, bits + 8); break;
      case Fault::nan: ref::put(out, 1, 5, std::numeric_limits<double>::quiet_NaN()); break;
      case Fault::padding: static_cast<uint16_t*>(out.data)[kCols] = 0; break;  // row 0, first pad element
      case Fault::input: ref::put(x, 0, 0, 1234.0); break;
      default: break;
    }
    return Status::Ok();
  });
  return c;
}

CaseResult run(Fault fault, Backend b = Backend::emulator, Rule rule = float_rule(DType::bf16)) {
  Rng rng(fresh_seed());
  RunOptions o;
  o.backend = b;
  return run_case(fake_case(rng, fault, rule), o);
}
}  // namespace

TEST(CaseRunner, PassesWithinTolerance) {
  EXPECT_EQ(run(Fault::none).verdict, Verdict::pass) << run(Fault::none).detail;
  EXPECT_EQ(run(Fault::one_ulp).verdict, Verdict::pass);
}

TEST(CaseRunner, FailsEachFault) {
  for (Fault f : {Fault::two_ulps, Fault::many_ulps, Fault::nan, Fault::padding, Fault::input, Fault::invalid}) {
    const CaseResult r = run(f);
    EXPECT_EQ(r.verdict, Verdict::fail) << static_cast<int>(f) << ": " << r.detail;
  }
  EXPECT_NE(run(Fault::many_ulps).detail.find("out: 1 of 60 mismatch; first at [1, 5]"), std::string::npos)
      << run(Fault::many_ulps).detail;
  EXPECT_NE(run(Fault::padding).detail.find("padding"), std::string::npos);
  EXPECT_NE(run(Fault::input).detail.find("x: an input was modified"), std::string::npos);
}

TEST(CaseRunner, ExactRuleRejectsOneUlp) {
  EXPECT_EQ(run(Fault::one_ulp, Backend::emulator, exact_rule()).verdict, Verdict::fail);
}

// A fake quantizer: out = e4m3(x) for x = [1.0625, 1.3, 2.5, -0.75]; 1.0625 is the midpoint of
// 1.0 and 1.125 (RNE picks 1.0, code 0x38). The faulty backend moves one code, or writes NaN.
enum class CodeFault { none, at_tie, off_tie, nan, two_steps_at_tie };
constexpr double kCodeInputs[] = {1.0625, 1.3, 2.5, -0.75};

CaseResult run_codes(CodeFault fault) {
  Case c("fake_quant", "f32 [4] -> e4m3");
  HostTensor& x = c.in("x", DType::f32, {4});
  for (int64_t i = 0; i < 4; ++i) x.set_flat(i, kCodeInputs[i]);
  c.out("q", DType::e4m3, {4}, tie_rule([](const Args& want, const Args&, double r) {
          std::vector<double> v;
          for (int64_t i = 0; i < 4; ++i) v.push_back(ref::at(want["x"], i));
          return encode_all(DType::e4m3, v, r);
        }, 0x1p-20));
  c.set_call([fault](const ExecContext& ctx, const Args& a) -> Status {
    for (int64_t i = 0; i < 4; ++i) ref::put(a["q"], i, ref::at(a["x"], i));
    if (ctx.backend == Backend::reference) return Status::Ok();
    const int64_t i = fault == CodeFault::off_tie ? 1 : fault == CodeFault::nan ? 2 : 0;
    const int64_t idx[] = {i};
    const uint64_t bits = ref::load_bits(a["q"], idx);
    if (fault == CodeFault::at_tie || fault == CodeFault::off_tie) ref::store_bits(a["q"], idx, bits + 1);
    if (fault == CodeFault::two_steps_at_tie) ref::store_bits(a["q"], idx, bits + 2);
    if (fault == CodeFault::nan) ref::store_bits(a["q"], idx, 0x7F);
    return Status::Ok();
  });
  return run_case(c, RunOptions{});
}

// Tie-aware codes: one step away passes only where the exact value sits on a midpoint.
TEST(CaseRunner, TieRuleAllowsOneStepOnlyAtTies) {
  EXPECT_EQ(run_codes(CodeFault::none).verdict, Verdict::pass) << run_codes(CodeFault::none).detail;
  const CaseResult tie = run_codes(CodeFault::at_tie);
  EXPECT_EQ(tie.verdict, Verdict::pass) << tie.detail;
  EXPECT_NE(tie.detail.find("1 at rounding ties"), std::string::npos) << tie.detail;
  for (CodeFault f : {CodeFault::off_tie, CodeFault::nan, CodeFault::two_steps_at_tie}) {
    const CaseResult r = run_codes(f);
    EXPECT_EQ(r.verdict, Verdict::fail) << static_cast<int>(f) << ": " << r.detail;
    EXPECT_NE(r.detail.find("q: 1 of 4 mismatch"), std::string::npos) << r.detail;
  }
}

// compare_codes directly: a NaN code never passes through the tie codes (even when they hold
// it), and NaN codes compare bitwise, as in compare_exact.
TEST(CaseRunner, CompareCodesNeverPassesNan) {
  HostTensor got(DType::e4m3, {2}), want(DType::e4m3, {2});
  got.set_bits_flat(0, 0x7F);   // NaN
  want.set_bits_flat(0, 0x38);  // 1.0
  got.set_bits_flat(1, 0x7F);
  want.set_bits_flat(1, 0xFF);  // NaN of the other sign: other bits
  const std::vector<uint64_t> lo = {0x7F, 0x7F}, hi = {0x7F, 0x7F};
  const CompareResult r = compare_codes(got, want, lo, hi);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.mismatches, 2);
  HostTensor same(DType::e4m3, {2});
  same.set_bits_flat(0, 0x38);
  same.set_bits_flat(1, 0xFF);
  EXPECT_TRUE(compare_codes(same, want, lo, hi).ok);
}

TEST(CaseRunner, UnsupportedIsNeitherPassNorFail) {
  const CaseResult r = run(Fault::unsupported);
  EXPECT_EQ(r.verdict, Verdict::unsupported);
  EXPECT_EQ(r.detail, "fake_double: no kernel");
}

TEST(CaseRunner, ReferenceBackendJudgesFiniteness) {
  EXPECT_EQ(run(Fault::none, Backend::reference).verdict, Verdict::pass);
  EXPECT_EQ(run(Fault::inf, Backend::reference).verdict, Verdict::fail);
  Rule inf_ok = float_rule(DType::bf16);
  inf_ok.inf_ok = true;
  EXPECT_EQ(run(Fault::inf, Backend::reference, inf_ok).verdict, Verdict::pass);
}

// The fake case's op writes through host pointers, so with a GPU it must not run on cuda at all
// (it crashed the test on the H200: the views were device mirrors).
TEST(CaseRunner, CudaWithoutGpuIsUnsupported) {
  if (check::cuda_available()) GTEST_SKIP() << "a GPU is present";
  const CaseResult r = run(Fault::none, Backend::cuda);
  EXPECT_EQ(r.verdict, Verdict::unsupported) << r.detail;
  EXPECT_NE(r.detail.find("not available"), std::string::npos) << r.detail;
}

TEST(OpChecks, SeedsAreStablePerOp) {
  EXPECT_EQ(op_seed(5, "rope"), op_seed(5, "rope"));
  EXPECT_NE(op_seed(5, "rope"), op_seed(5, "rms_norm"));
  EXPECT_NE(op_seed(5, "rope"), op_seed(6, "rope"));
  // The same seed builds the same inputs.
  Rng a(op_seed(9, "silu_mul")), b(op_seed(9, "silu_mul"));
  auto ca = silu_mul_cases(a), cb = silu_mul_cases(b);
  ASSERT_EQ(ca.size(), cb.size());
  const HostTensor& xa = *ca[0].args()[0].host;
  const HostTensor& xb = *cb[0].args()[0].host;
  for (int64_t i = 0; i < xa.numel(); ++i) ASSERT_EQ(xa.bits_flat(i), xb.bits_flat(i));
}

TEST(OpChecks, EveryCaseHasAnOutputAndInputs) {
  TEJAS_SEEDED_TEST_RNG();
  for (const auto& check : op_checks()) {
    const auto cases = check.build(rng);
    EXPECT_GE(cases.size(), 2u) << check.name;
    for (const auto& c : cases) {
      bool out = false;
      for (const auto& a : c.args()) out |= a.role != Role::input;
      EXPECT_TRUE(out) << check.name << " " << c.label();
      EXPECT_EQ(c.op(), check.name);
    }
  }
}
