// Every op's check cases on each backend through the shared check code (the same code
// `tejas check` runs): reference must pass; the emulator must pass for every op that has a
// kernel (all but the attention ops, whose kernels have their own issue); cuda may be
// unsupported (no GPU here) but never fail.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "check/cuda_mem.h"
#include "check/op_checks.h"
#include "ops/common/emu_launch.h"
#include "support/seed.h"
#if TEJAS_WITH_CUDA
#include <cuda_runtime_api.h>

#include "ops/common/launch_kernel.h"
#include "ops/common/resident.h"
#endif

using namespace tejas;
using namespace tejas::check;

namespace {
// Ops without an emulator kernel yet: allowed to answer unsupported there.
const std::set<std::string> kNoKernelYet = {"paged_decode_attention", "merge_attention_states",
                                            "merge_attention_states_n"};

void run_all(Backend backend, bool require_pass, bool graph = false, bool pdl = false) {
  TEJAS_SEEDED_TEST_RNG();
  RunOptions o;
  o.backend = backend;
  o.cuda_graph = graph;
  o.pdl = pdl;
  for (const auto& c : op_checks()) {
    const bool must_pass = require_pass && (backend != Backend::emulator || !kNoKernelYet.count(c.name));
    for (const CaseResult& r : run_op_check(c, o, seed)) {
      if (must_pass) {
        EXPECT_EQ(r.verdict, Verdict::pass) << r.op << " " << r.label << ": " << r.detail;
      } else {
        EXPECT_NE(r.verdict, Verdict::fail) << r.op << " " << r.label << ": " << r.detail;
      }
    }
  }
}
}  // namespace

TEST(OpChecks, ReferencePasses) { run_all(Backend::reference, true); }
TEST(OpChecks, EmulatorPassesWhereKernelsExist) { run_all(Backend::emulator, true); }
TEST(OpChecks, CudaNeverFails) { run_all(Backend::cuda, false); }
// The same cases, each call captured into a CUDA graph (global capture mode) and run from it
// (RunOptions::cuda_graph), as a serving engine's decode graphs run the ops: no launch path may
// allocate, synchronize or copy synchronously, the first occupancy queries and attribute calls
// of the persistent kernels included (ctest runs this case in a process of its own, so they
// happen under capture), and the graph's outputs are judged against the reference.
TEST(OpChecks, CudaGraphCaptureNeverFails) {
  run_all(Backend::cuda, false, true);
#if TEJAS_WITH_CUDA
  if (!cuda_available()) return;
  const detail::ResidentStats stats = detail::resident_stats();
  EXPECT_GT(stats.queries, 0) << "no occupancy query ran under capture: the test no longer covers them";
  EXPECT_EQ(stats.failures, 0) << "an occupancy query or attribute call failed under capture";
#endif
}

// Programmatic dependent launch (ExecContext::pdl, RunOptions::pdl): each call right after
// stream_copy kernels that restore its poisoned inputs, eagerly and captured into a graph
// together with them. On an sm_90 GPU (H100, H200) the launches must really have been
// programmatic: the default and tools/gpu-check builds carry sm_90a code. Newer GPUs run it only
// if the build has code for them, older ones never.
namespace {
void run_all_pdl(bool graph) {
#if TEJAS_WITH_CUDA
  const int64_t before = detail::programmatic_launches();
#endif
  run_all(Backend::cuda, false, graph, true);
#if TEJAS_WITH_CUDA
  if (!cuda_available()) return;
  int device = 0, major = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), cudaSuccess);
  if (major == 9) {
    EXPECT_GT(detail::programmatic_launches(), before) << "no launch was programmatic: the cases did not test it";
  } else if (major < 9) {
    EXPECT_EQ(detail::programmatic_launches(), before) << "a programmatic launch below sm_90";
  }
#endif
}
}  // namespace
TEST(OpChecks, CudaPdlAfterProducersNeverFails) { run_all_pdl(false); }
TEST(OpChecks, CudaPdlUnderGraphCaptureNeverFails) { run_all_pdl(true); }

// The emulator holds every op kernel to the programmatic launch's rule (no global access or exit
// before griddepcontrol.wait: a finding fails EmulatorPassesWhereKernelsExist); here, each of
// their blocks also lets the next kernel launch early (griddepcontrol.launch_dependents), which
// no output shows.
TEST(OpChecks, EveryEmulatedBlockLetsTheNextKernelLaunchEarly) {
  TEJAS_SEEDED_TEST_RNG();
  RunOptions o;
  o.backend = Backend::emulator;
  int launches = 0;
  for (const auto& c : op_checks()) {
    if (kNoKernelYet.count(c.name)) continue;
    Rng rng(op_seed(seed, c.name));
    for (const Case& k : c.build(rng)) {
      const CaseResult r = run_case(k, o);
      ASSERT_EQ(r.verdict, Verdict::pass) << r.op << " " << r.label << ": " << r.detail;
      for (const emu::LaunchReport& rep : detail::last_emulator_reports()) {
        ++launches;
        EXPECT_GT(rep.counters.blocks, 0u) << r.op << " " << r.label;
        EXPECT_EQ(rep.counters.dependent_launch_blocks, rep.counters.blocks) << r.op << " " << r.label;
      }
    }
  }
  EXPECT_GT(launches, 40);
}
