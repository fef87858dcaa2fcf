// The check harness itself must be able to fail: a fake op whose "emulator" result is wrong in
// one specific way at a time, against a "reference" that doubles its input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "check/case_runner.h"
#include "check/cuda_mem.h"
#include "check/op_checks.h"
#include "check/tolerances.h"
#include "ops/common/ref_numeric.h"
#include "ops/probe/probe.h"
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

// compare_with: the judge decides finite elements only (NaN must meet NaN, infinities exact,
// whatever it says), and the report names the first element it refused.
TEST(CaseRunner, CompareWithJudgesOnlyFiniteElements) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN(), kInf = std::numeric_limits<double>::infinity();
  HostTensor got(DType::f32, {2, 3}), want(DType::f32, {2, 3});
  const double g[] = {1.0, 2.5, kNaN, kInf, 7.0, 0.0}, w[] = {1.0, 2.0, kNaN, kInf, 7.0, kNaN};
  for (int64_t i = 0; i < 6; ++i) {
    got.set_flat(i, g[i]);
    want.set_flat(i, w[i]);
  }
  std::vector<int64_t> judged;
  const CompareResult r = compare_with(got, want, [&](int64_t i) {
    judged.push_back(i);
    return i != 1;
  });
  EXPECT_EQ(judged, (std::vector<int64_t>{0, 1, 4}));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.mismatches, 2);  // element 1 (refused) and 5 (0 where NaN was due)
  EXPECT_EQ(r.first_bad, 1);
  EXPECT_NE(r.message.find("first at [0, 1]"), std::string::npos) << r.message;
  got.set_flat(5, kNaN);
  got.set_flat(3, -kInf);
  const CompareResult all_true = compare_with(got, want, [](int64_t) { return true; });
  EXPECT_EQ(all_true.mismatches, 1);  // -Inf against +Inf
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

// Empty batches (Case::empty_batch): a fake cache write, cache[t, :] = x[t, :] for the T tokens
// of x [T, 8] into cache [4, 8] (in place), with one fault at a time on the emulator backend.
namespace {
enum class EmptyFault { none, write, write_on_reference, launch, unsupported };
constexpr int64_t kCacheRows = 4, kWidth = 8;
EmptyFault g_empty_fault = EmptyFault::none;  // fake_write_cases' fault (OpCheck takes a plain function)

Case fake_write_case(Rng& rng, int64_t T, EmptyFault fault) {
  Case c("fake_write", cat("T=", T));
  fill_normal(c.in("x", DType::f32, {T, kWidth}), rng);
  fill_normal(c.inout("cache", DType::f32, {kCacheRows, kWidth}, exact_rule()), rng);
  c.set_call([fault, T](const ExecContext& ctx, const Args& a) -> Status {
    const bool faulty = ctx.backend != Backend::reference;
    if (faulty && fault == EmptyFault::unsupported && T == 0) return Status::Unsupported("fake_write: no rows");
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < kWidth; ++j) ref::put(a["cache"], t, j, ref::at(a["x"], t, j));
    if (T > 0) return Status::Ok();
    if ((faulty && fault == EmptyFault::write) || (!faulty && fault == EmptyFault::write_on_reference))
      ref::put(a["cache"], kCacheRows - 1, 0, 1.0);
    if (faulty && fault == EmptyFault::launch) {  // a copy of a scratch buffer: one emulator launch
      alignas(16) static uint8_t src[256], dst[256];
      ExecContext emu = ctx;
      emu.backend = Backend::emulator;
      return probe::stream_copy(emu, TensorView::contiguous(src, DType::u8, {256}),
                                TensorView::contiguous(dst, DType::u8, {256}), probe::StreamCopyOptions{});
    }
    return Status::Ok();
  });
  return c;
}

std::vector<Case> fake_write_cases(Rng& rng) {
  std::vector<Case> v;
  v.push_back(fake_write_case(rng, 2, g_empty_fault));
  v.push_back(fake_write_case(rng, 0, g_empty_fault));
  return v;
}

CaseResult run_empty(EmptyFault fault, Backend b = Backend::emulator) {
  Rng rng(fresh_seed());
  RunOptions o;
  o.backend = b;
  return run_case(fake_write_case(rng, 0, fault), o);
}
}  // namespace

TEST(CaseRunner, EmptyBatchMustChangeNothing) {
  Rng rng(1);
  EXPECT_TRUE(fake_write_case(rng, 0, EmptyFault::none).empty_batch());
  EXPECT_FALSE(fake_write_case(rng, 2, EmptyFault::none).empty_batch());
  for (Backend b : {Backend::emulator, Backend::reference}) {
    const CaseResult r = run_empty(EmptyFault::none, b);
    EXPECT_EQ(r.verdict, Verdict::pass) << r.detail;
  }
  EXPECT_EQ(run_empty(EmptyFault::none, Backend::reference).detail,
            "empty batch: the call succeeded and changed nothing");
  CaseResult r = run_empty(EmptyFault::write);
  EXPECT_EQ(r.verdict, Verdict::fail);
  EXPECT_EQ(r.detail, "cache: an empty batch changed it");
  // The reference's own write is caught too (not only as a difference from the reference).
  r = run_empty(EmptyFault::write_on_reference, Backend::reference);
  EXPECT_EQ(r.verdict, Verdict::fail);
  EXPECT_EQ(r.detail, "cache: an empty batch changed it");
  r = run_empty(EmptyFault::write_on_reference);
  EXPECT_EQ(r.verdict, Verdict::fail);
  EXPECT_EQ(r.detail, "reference: cache: an empty batch changed it");
  r = run_empty(EmptyFault::launch);
  EXPECT_EQ(r.verdict, Verdict::fail);
  EXPECT_EQ(r.detail, "an empty batch launched 1 kernel(s)");
}

// run_op_check: unsupported for an empty batch where the op's other cases ran is a failure; where
// none ran (no kernel for the op), it stays unsupported.
TEST(CaseRunner, EmptyBatchUnsupportedWhereOthersRanFails) {
  const OpCheck fake{"fake_write", "test", fake_write_cases};
  RunOptions o;
  o.backend = Backend::emulator;
  g_empty_fault = EmptyFault::unsupported;
  std::vector<CaseResult> rs = run_op_check(fake, o, fresh_seed());
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[0].verdict, Verdict::pass) << rs[0].detail;
  EXPECT_EQ(rs[1].verdict, Verdict::fail);
  EXPECT_EQ(rs[1].detail, "an empty batch answered unsupported where the op's other cases ran: fake_write: no rows");
  g_empty_fault = EmptyFault::none;
  rs = run_op_check(fake, o, fresh_seed());
  EXPECT_EQ(rs[1].verdict, Verdict::pass) << rs[1].detail;
  EXPECT_EQ(rs[1].detail, "cache: 32 match; max abs err 0, max rel err 0, max ulps 0");
  o.backend = Backend::cuda;  // the fake op writes through host pointers: only where cuda is absent
  if (!check::cuda_available()) {
    for (const CaseResult& c : run_op_check(fake, o, fresh_seed())) EXPECT_EQ(c.verdict, Verdict::unsupported);
  }
}

// The fake case's op writes through host pointers, so with a GPU it must not run on cuda at all
// (it crashed the test on the H200: the views were device mirrors).
TEST(CaseRunner, CudaWithoutGpuIsUnsupported) {
  if (check::cuda_available()) GTEST_SKIP() << "a GPU is present";
  const CaseResult r = run(Fault::none, Backend::cuda);
  EXPECT_EQ(r.verdict, Verdict::unsupported) << r.detail;
  EXPECT_NE(r.detail.find("not available"), std::string::npos) << r.detail;
}

// RunOptions::pdl's producer: every input in one device block, restored together by one kernel.
// After upload (which produces once) and a produce on a new stream, each mirror holds exactly its
// host bytes (the poison memsets overwritten), keeps its host address modulo 256 (the views one
// after another in the block: a bf16 tensor with padded rows, an odd-sized i32 one, one moved
// off its 256-byte boundary by 6 bytes) and its guards.
TEST(InputProducer, CudaRestoresEveryInputWithOneKernel) {
  std::string why;
  if (!check::cuda_available(&why)) GTEST_SKIP() << why;
  TEJAS_SEEDED_TEST_RNG();
  std::vector<HostTensor> hosts;
  hosts.emplace_back(DType::bf16, std::vector<int64_t>{3, 20}, 4);
  hosts.emplace_back(DType::i32, std::vector<int64_t>{7});
  hosts.emplace_back(DType::u8, std::vector<int64_t>{64});
  fill_normal(hosts[0], rng);
  fill_randint(hosts[1], rng, -1000, 1000);
  fill_randint(hosts[2], rng, 0, 255);
  TensorView& moved = hosts[2].view();  // bytes 6 .. 57 of its storage
  moved.data = static_cast<uint8_t*>(moved.data) + 6;
  moved.shape[0] = 52;
  std::vector<std::unique_ptr<DeviceMirror>> mirrors;
  std::vector<const HostTensor*> in;
  std::vector<DeviceMirror*> out;
  for (const HostTensor& h : hosts) {
    mirrors.push_back(std::make_unique<DeviceMirror>());
    in.push_back(&h);
    out.push_back(mirrors.back().get());
  }
  InputProducer producer;
  ASSERT_TRUE(producer.upload(in, out).ok());
  ASSERT_TRUE(run_on_new_stream([&](void* stream) { return producer.produce(stream); }).ok());
  for (size_t i = 0; i < hosts.size(); ++i) {
    const TensorView& h = hosts[i].view();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(mirrors[i]->view().data) % 256, reinterpret_cast<uintptr_t>(h.data) % 256);
    HostTensor back = hosts[i];
    back.poison();
    ASSERT_TRUE(mirrors[i]->download(back).ok());
    const size_t bytes = payload_bytes(h);
    EXPECT_EQ(std::memcmp(back.view().data, h.data, bytes), 0) << "tensor " << i << " (" << bytes << " bytes)";
    bool intact = false;
    ASSERT_TRUE(mirrors[i]->guards_intact(&intact).ok());
    EXPECT_TRUE(intact) << "tensor " << i;
  }
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

// op_checks.h: every op's cases include an empty batch (a tensor with no elements: no tokens,
// no requests), so `tejas check` runs one on every backend, under graph capture and PDL.
TEST(OpChecks, EveryOpHasAnEmptyBatchCase) {
  TEJAS_SEEDED_TEST_RNG();
  for (const auto& check : op_checks()) {
    int empty = 0;
    for (const auto& c : check.build(rng)) {
      if (!c.empty_batch()) continue;
      ++empty;
      // No tokens: every per-token output is empty; what has elements is a tensor kept as it was.
      for (const auto& a : c.args()) {
        if (a.role != Role::input && a.host->numel() > 0) {
          EXPECT_EQ(a.role, Role::inout) << check.name << " " << c.label() << ": " << a.name;
        }
      }
    }
    EXPECT_GE(empty, 1) << check.name << ": no case with an empty batch";
  }
}
