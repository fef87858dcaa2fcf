// tejas check: every op's correctness cases on one backend against the reference backend.

#include <cstdint>

#include "check/cuda_mem.h"
#include "check/op_checks.h"
#include "commands.h"
#include "report.h"

#if TEJAS_WITH_CUDA
#include "ops/common/launch_kernel.h"
#endif

namespace tejas::cli {
namespace {

// Launches made as programmatic dependents so far in this process (0 in host-only builds).
int64_t programmatic_launches() {
#if TEJAS_WITH_CUDA
  return detail::programmatic_launches();
#else
  return 0;
#endif
}
constexpr const char* kHelp =
    "usage: tejas check [--backend cuda|emulator|reference] [--op NAME[,NAME]] [--seed N] [--graph] [--pdl]\n"
    "                   [--list] [--json FILE]\n"
    "\n"
    "Runs each op's correctness cases (small shapes with tails, strided views, every dtype, and an\n"
    "empty batch, which must succeed and change nothing) with seeded random inputs and poisoned\n"
    "outputs, on the chosen backend and on the reference backend with the same inputs, and compares\n"
    "the outputs with per-dtype tolerances (tools/check/tolerances.h). Also checked: guard bytes\n"
    "around every tensor, padding between rows and inputs left unchanged. The seed is printed;\n"
    "--seed N (or TEJAS_SEED=N) reruns the same inputs, also for a single --op.\n"
    "\n"
    "Results: pass; FAIL (exit status 1); unsupported (the backend has no kernel for the case, or\n"
    "the cuda backend is not available: not a failure, and not a pass).\n"
    "Default backend: cuda when a GPU is present, else emulator.\n"
    "--graph (cuda; the default backend with it): each call is captured into a CUDA graph on a new\n"
    "stream (global capture mode) and run from it, as a serving engine's decode graphs run it; a call\n"
    "that cannot be captured fails its case (so, under TEJAS_DEBUG_CHECKS=1, does every case whose\n"
    "debug checks read a device tensor: they copy to the host and synchronize).\n"
    "--pdl (cuda; the default backend with it): each call runs with programmatic dependent launch\n"
    "(ExecContext::pdl) right after a kernel that writes all its inputs: every input's device bytes are\n"
    "poisoned, then copied back together by one stream_copy kernel on the call's stream, so an op's\n"
    "first kernel that touched any input before its griddepcontrol.wait could read the poison (the\n"
    "emulator checks every kernel and tensor exactly). With --graph too, the producer and the call\n"
    "are captured together (a programmatic graph edge).\n"
    "--backend reference: comparing the reference with itself would be meaningless, so each case\n"
    "passes only if the reference call succeeds, writes no byte outside its outputs and leaves every\n"
    "output finite (infinities only where the case expects them, e.g. lse = -inf).\n";

const std::vector<FlagSpec> kFlags = {
    {"backend", "NAME", "cuda, emulator or reference (default: cuda with a GPU, else emulator)"},
    {"op", "NAME", "only these ops (comma-separated; see --list)"},
    {"seed", "N", "input seed (default: TEJAS_SEED or fresh)"},
    {"graph", "", "cuda backend: run each call from a captured CUDA graph"},
    {"pdl", "", "cuda backend: programmatic dependent launch after kernels producing the inputs"},
    {"list", "", "list the ops and their case counts, run nothing"},
    {"json", "FILE", "also write the results as JSON (schema: docs/tools.md)"},
};

bool parse_backend(const std::string& s, Backend* b) {
  if (s == "cuda") *b = Backend::cuda;
  else if (s == "emulator") *b = Backend::emulator;
  else if (s == "reference") *b = Backend::reference;
  else return false;
  return true;
}
}  // namespace

int cmd_check(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Flags flags;
  int code = kExitOk;
  if (!parse_or_help("check", kHelp, kFlags, args, &flags, out, err, &code)) return code;

  std::string why_no_cuda;
  const bool have_cuda = check::cuda_available(&why_no_cuda);
  const bool graph = flags.has("graph"), pdl = flags.has("pdl");
  Backend backend = have_cuda || graph || pdl ? Backend::cuda : Backend::emulator;  // cuda's modes
  if (flags.has("backend") && !parse_backend(flags.get("backend"), &backend))
    return usage_error("check", "--backend: expected cuda, emulator or reference, got '" + flags.get("backend") + "'", err);

  if (graph && backend != Backend::cuda)
    return usage_error("check", std::string("--graph: needs the cuda backend, got ") + backend_name(backend), err);
  if (pdl && backend != Backend::cuda)
    return usage_error("check", std::string("--pdl: needs the cuda backend, got ") + backend_name(backend), err);

  std::vector<const check::OpCheck*> ops;
  uint64_t seed = 0;
  if (!ops_flag("check", flags, &ops, err) || !seed_flag("check", flags, &seed, err)) return kExitUsage;

  if (flags.has("list")) {
    check::Rng rng(seed);
    out << "op | family | cases\n";
    for (const auto* c : ops) out << c->name << " | " << c->family << " | " << c->build(rng).size() << "\n";
    return kExitOk;
  }

  out << "tejas check: backend " << backend_name(backend) << (graph ? " (each call from a captured CUDA graph)" : "")
      << (pdl ? " (programmatic dependent launch after its inputs' producer)" : "") << ", " << check::seed_note(seed)
      << "\n";
  if (backend == Backend::cuda && !have_cuda)
    out << "cuda backend not available (" << why_no_cuda << "): every case reports unsupported\n";

  Report report;
  report.command = "check";
  report.has_checks = true;
  report.check_backend = backend_name(backend);
  report.check_graph = graph;
  report.check_pdl = pdl;
  report.seed = seed;
  check::RunOptions options;
  options.backend = backend;
  options.cuda_graph = graph;
  options.pdl = pdl;
  const int64_t programmatic_before = programmatic_launches();
  for (const auto* c : ops) {
    err << "[check] " << c->name << "\n";
    for (auto& r : check::run_op_check(*c, options, seed)) report.checks.push_back(std::move(r));
  }
  print_checks(out, report.checks);
  // Whether --pdl tested anything: on a GPU below sm_90, or with code compiled from compute_80,
  // every launch is in plain stream order (docs/using.md) and the checks pass trivially.
  if (pdl && have_cuda) {
    const int64_t n = programmatic_launches() - programmatic_before;
    out << "programmatic launches: " << n
        << (n == 0 ? " (none: a GPU below sm_90 or code compiled from compute_80; the order was not tested)" : "")
        << "\n";
  }
  if (backend == Backend::reference)
    out << "(reference backend: pass = the call succeeded and its outputs are finite where expected)\n";

  if (flags.has("json")) {
    const bench::GpuCeilings* g = bench::find_gpu("h200");
    report.gpu = g->name;
    report.ceilings = *g;
    std::string error;
    if (!write_file(flags.get("json"), to_json(report), &error)) {
      err << "tejas check: --json: " << error << "\n";
      return kExitFailure;
    }
  }
  return count_checks(report.checks).fail > 0 ? kExitFailure : kExitOk;
}

}  // namespace tejas::cli
