// Every op's check cases on each backend through the shared check code (the same code
// `tejas check` runs): reference must pass; emulator and cuda may be unsupported (no kernel yet,
// or no GPU) but never fail.
#include <gtest/gtest.h>

#include "check/op_checks.h"
#include "support/seed.h"

using namespace tejas;
using namespace tejas::check;

namespace {
void run_all(Backend backend, bool require_pass) {
  TEJAS_SEEDED_TEST_RNG();
  RunOptions o;
  o.backend = backend;
  for (const auto& c : op_checks()) {
    for (const CaseResult& r : run_op_check(c, o, seed)) {
      if (require_pass) {
        EXPECT_EQ(r.verdict, Verdict::pass) << r.op << " " << r.label << ": " << r.detail;
      } else {
        EXPECT_NE(r.verdict, Verdict::fail) << r.op << " " << r.label << ": " << r.detail;
      }
    }
  }
}
}  // namespace

TEST(OpChecks, ReferencePasses) { run_all(Backend::reference, true); }
TEST(OpChecks, EmulatorNeverFails) { run_all(Backend::emulator, false); }
TEST(OpChecks, CudaNeverFails) { run_all(Backend::cuda, false); }
