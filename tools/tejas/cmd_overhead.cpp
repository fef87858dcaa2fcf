// tejas overhead: the host time of each op's cuda-backend call with the launch left out
// (detail::ScopedDryLaunch): validation, backend choice, planning, the occupancy questions' caches.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "bench/gpu.h"
#include "check/op_checks.h"
#include "commands.h"
#include "runtime/dry_launch.h"
#include "runtime/validate.h"

namespace tejas::cli {
namespace {
constexpr const char* kHelp =
    "usage: tejas overhead [--op NAME[,NAME]] [--calls N] [--seed N]\n"
    "\n"
    "Times the host side of each op's cuda-backend call, the launch left out: argument validation,\n"
    "backend choice, planning and the occupancy questions' caches - what a call costs the CPU on top\n"
    "of its cudaLaunchKernel (a few microseconds more, not timed here) when a serving engine calls\n"
    "the ops eagerly (a CUDA graph replays neither). The calls are `tejas check`'s cases (small\n"
    "shapes: T <= 9, decode-sized; the host path does not grow with T; each op's empty batch times\n"
    "validation and the early return alone), their tensors marked as device tensors and never\n"
    "touched, so no GPU is needed. Per case, over 9 rounds of N calls (after one call that fills the\n"
    "caches), in nanoseconds per call: the fastest round (the work itself: a shared or throttled CPU\n"
    "only adds to it) and the median round. Each call also pays the case's argument lookups by name\n"
    "(a few string comparisons per tensor).\n"
    "Without a GPU the occupancy questions fail (one failing cudaGetDevice each, not cached) and the\n"
    "plans fall back to the default kernels, as they would on a GPU whose queries failed; the\n"
    "current-device check's cudaGetDevice fails too, and the check is skipped.\n"
    "A call that does not succeed is shown with its message (an op without a cuda kernel yet:\n"
    "unsupported; a host-only build: every op). Refuses to run under TEJAS_DEBUG_CHECKS=1, whose\n"
    "index checks would read the tensors.\n";

const std::vector<FlagSpec> kFlags = {
    {"op", "NAME", "only these ops (comma-separated; tejas check --list shows them)"},
    {"calls", "N", "calls per round, 1..1000000 (default 2000)"},
    {"seed", "N", "the cases' input seed (default: TEJAS_SEED or fresh; shapes do not depend on it)"},
};

constexpr int kRounds = 9;
constexpr uint64_t kMaxCalls = 1000000, kDefaultCalls = 2000;
}  // namespace

int cmd_overhead(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Flags flags;
  int code = kExitOk;
  if (!parse_or_help("overhead", kHelp, kFlags, args, &flags, out, err, &code)) return code;
  std::vector<const check::OpCheck*> ops;
  uint64_t seed = 0;
  if (!ops_flag("overhead", flags, &ops, err) || !seed_flag("overhead", flags, &seed, err)) return kExitUsage;
  uint64_t calls = kDefaultCalls;
  if (flags.has("calls") && (!parse_u64(flags.get("calls"), &calls) || calls < 1 || calls > kMaxCalls))
    return usage_error("overhead", "--calls: expected an integer in 1..1000000, got '" + flags.get("calls") + "'", err);

  ExecContext ctx;
  ctx.backend = Backend::cuda;
  if (detail::debug_checks_enabled(ctx)) {
    err << "tejas overhead: TEJAS_DEBUG_CHECKS is set: its index checks would read the calls' tensors, which are\n"
           "host memory marked as device tensors; unset it\n";
    return kExitFailure;
  }
  const bench::DeviceInfo d = bench::device_info();
  out << "tejas overhead: host ns per cuda-backend call, launch excluded (" << kRounds << " rounds of " << calls
      << " calls); " << (d.present ? "device: " + d.name : "no GPU (" + d.why_absent + "): occupancy questions fail")
      << "\n";
  out << "op | case | best ns/call | median ns/call\n";
  int errors = 0;
  for (const auto* op : ops) {
    check::Rng rng(check::op_seed(seed, op->name));
    for (const check::Case& c : op->build(rng)) {
      const check::Args a = check::dry_device_args(c);
      const detail::ScopedDryLaunch dry;
      const Status first = c.call()(ctx, a);
      if (!first.ok()) {
        out << c.op() << " | " << c.label() << " | " << (first.code() == StatusCode::unsupported ? "unsupported" : "ERROR")
            << ": " << first.message() << "\n";
        if (first.code() != StatusCode::unsupported) ++errors;
        continue;
      }
      std::vector<double> per_call;
      for (int r = 0; r < kRounds; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        for (uint64_t i = 0; i < calls; ++i) (void)c.call()(ctx, a);
        const auto t1 = std::chrono::steady_clock::now();
        per_call.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(calls));
      }
      std::sort(per_call.begin(), per_call.end());
      char buf[48];
      std::snprintf(buf, sizeof buf, "%.0f | %.0f", per_call.front(), per_call[kRounds / 2]);
      out << c.op() << " | " << c.label() << " | " << buf << "\n";
    }
  }
  if (errors > 0) err << "tejas overhead: " << errors << " case(s) failed validation or planning (ERROR above)\n";
  return errors > 0 ? kExitFailure : kExitOk;
}

}  // namespace tejas::cli
