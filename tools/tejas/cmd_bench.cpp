// tejas bench: kernels over WORKLOADS.md shapes beside their roofline floors. On a GPU each row
// is timed (CUDA events, warm-up, cold L2, median); without one only the floors are printed and
// each kernel is validated through the emulator at the check's reduced sizes.
#include <chrono>
#include <cstdlib>
#include <map>
#include <set>

#include "bench/gpu.h"
#include "bench/suites.h"
#include "check/op_checks.h"
#include "commands.h"
#include "runtime/tune.h"
#include "report.h"

namespace tejas::cli {
namespace {
constexpr const char* kHelp =
    "usage: tejas bench [--suite NAME[,NAME]|all] [--model NAME[,NAME]|all] [--json FILE] [--markdown FILE]\n"
    "                   [--gpu h100|h200|b200] [--iters N] [--time-limit S] [--filter TEXT] [--no-check]\n"
    "                   [--flush dirty|clean|none]\n"
    "\n"
    "Suites: norm, rope, activation, quant, pdl (the rows of those four of at most 8 MiB, each as a\n"
    "CUDA graph of 16 back-to-back calls with programmatic dependent launch, its baseline the same\n"
    "graph in plain stream order; one model unless --model), attention (decode), memcpy (the copy\n"
    "ceiling), gemm (cuBLASLt baselines: bf16, fp8 per-tensor, fp8 1x128/128x128 block-scaled;\n"
    "MXFP8 and NVFP4 where the GPU supports them). Shapes come from the models of WORKLOADS.md at token counts\n"
    "1..16384 and decode batches/contexts (bench/workloads.cpp).\n"
    "\n"
    "On a GPU: each kernel is first checked on the cuda backend (an op with no kernel is reported\n"
    "unsupported, a failing one is not timed), then timed with CUDA events: warm-up, then N runs\n"
    "each after an L2 flush (--flush), median reported. Columns: us (median), TFLOP/s and GB/s achieved,\n"
    "floor us (max of FLOPs/peak and bytes/bandwidth), % of floor (floor / measured), baseline and\n"
    "x baseline = baseline time / ours (> 1: Tejas is faster; < 1: the baseline is). Fused ops\n"
    "(norm, activation, rope suites) are compared with their unfused sequence of Tejas ops, timed\n"
    "right after the row by the same method; a baseline that fails or is unsupported leaves\n"
    "x baseline '-' and says why in the note. The HBM ceiling is re-measured at the start.\n"
    "Without a GPU: the first line says so, the floors for --gpu are printed (no timing is ever\n"
    "printed that was not measured) and each kernel is validated through the emulator.\n"
    "--time-limit S: once S seconds have passed, the remaining rows are not run (status \"not\n"
    "measured: --time-limit reached\"); the report is still written, so a bounded run keeps what\n"
    "it measured.\n"
    "--filter TEXT: only the rows whose \"op model shape\" contains TEXT (e.g. \"quant_mx deepseek-v3\n"
    "M=16384 K=7168 bf16 nvfp4\"); --no-check: time without validating the kernels first (for a\n"
    "profiler: the first launch of the row's kernel is then its first warm-up run; tools/gpu-check's\n"
    "profile step). Both are for single-row runs; the default runs check everything.\n"
    "--flush MODE: what runs before each timed run (and each run of the copy ceiling), over a\n"
    "buffer of twice the L2: dirty (default) a memset, which leaves the L2 full of dirty lines\n"
    "that the timed kernel writes back as it evicts them; clean a read pass, which leaves clean\n"
    "lines (the last run's writes go back to HBM during it, untimed); none nothing (a warm L2:\n"
    "rows smaller than the L2 may pass the HBM ceiling). The report records the mode.\n";

const std::vector<FlagSpec> kFlags = {
    {"suite", "NAME", "suites to run (comma-separated, or all; default all)"},
    {"model", "NAME", "models (comma-separated, or all; default all)"},
    {"json", "FILE", "write the report as JSON (schema: docs/tools.md)"},
    {"markdown", "FILE", "write the report as Markdown"},
    {"gpu", "NAME", "ceilings for the floors: h100, h200 or b200 (default: the GPU present, else h200)"},
    {"iters", "N", "timed runs per row (default 30)"},
    {"time-limit", "S", "stop running rows after S seconds (default: none); the report keeps the rest as not measured"},
    {"filter", "TEXT", "only rows whose \"op model shape\" contains TEXT (default: every row)"},
    {"no-check", "", "skip the kernel checks before timing"},
    {"flush", "MODE", "before each timed run: dirty (a memset; default), clean (a read pass) or none"},
};
constexpr uint64_t kDefaultIters = 30;
constexpr uint64_t kMaxIters = 100000;
constexpr double kMaxTimeLimitS = 86400.0;
constexpr int kWarmup = 3;
constexpr size_t kCopyBytes = size_t{1} << 30;
constexpr int kCopyIters = 10;
constexpr uint64_t kArenaSeed = 1;

struct OpVerdict {
  check::Verdict verdict = check::Verdict::pass;
  std::string detail;
};

// Summarizes an op's check: any fail -> fail; all unsupported -> unsupported; else pass.
OpVerdict summarize(const std::vector<check::CaseResult>& rs) {
  OpVerdict v;
  size_t unsupported = 0;
  for (const auto& r : rs) {
    if (r.verdict == check::Verdict::fail && v.verdict != check::Verdict::fail) v = {check::Verdict::fail, r.detail};
    if (r.verdict == check::Verdict::unsupported) {
      ++unsupported;
      if (v.detail.empty()) v.detail = r.detail;
    }
  }
  if (v.verdict != check::Verdict::fail && unsupported == rs.size() && !rs.empty()) v.verdict = check::Verdict::unsupported;
  return v;
}
}  // namespace

int cmd_bench(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Flags flags;
  int code = kExitOk;
  if (!parse_or_help("bench", kHelp, kFlags, args, &flags, out, err, &code)) return code;

  std::vector<std::string> suites;
  if (!suites_flag("bench", flags, &suites, err)) return kExitUsage;
  if (!detail::tune_error().empty()) {  // a mistyped variant must not be timed as the defaults
    err << "tejas bench: TEJAS_TUNE: " << detail::tune_error() << "\n";
    return kExitUsage;
  }
  std::vector<const bench::ModelShape*> models;
  const std::string model_arg = flags.get("model", "all");
  if (model_arg != "all") {
    for (const auto& m : split_list(model_arg)) {
      const bench::ModelShape* ms = bench::find_model(m);
      if (!ms) return usage_error("bench", "--model: unknown model '" + m + "' (e.g. llama-3.1-8b, deepseek-v3)", err);
      models.push_back(ms);
    }
  }
  uint64_t iters = kDefaultIters;
  if (flags.has("iters") && (!parse_u64(flags.get("iters"), &iters) || iters == 0 || iters > kMaxIters))
    return usage_error("bench", "--iters: expected an integer in 1..100000, got '" + flags.get("iters") + "'", err);
  double time_limit_s = 0.0;  // 0: none
  if (flags.has("time-limit")) {
    char* end = nullptr;
    const std::string v = flags.get("time-limit");
    time_limit_s = std::strtod(v.c_str(), &end);
    if (v.empty() || end == nullptr || *end != '\0' || !(time_limit_s > 0.0) || time_limit_s > kMaxTimeLimitS)
      return usage_error("bench", "--time-limit: expected seconds in (0, 86400], got '" + v + "'", err);
  }
  bench::FlushMode flush_mode = bench::FlushMode::dirty;
  if (flags.has("flush") && !bench::parse_flush_mode(flags.get("flush"), &flush_mode))
    return usage_error("bench", "--flush: expected dirty, clean or none, got '" + flags.get("flush") + "'", err);
  const auto start = std::chrono::steady_clock::now();
  const auto out_of_time = [&] {
    return time_limit_s > 0.0 &&
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >= time_limit_s;
  };
  size_t cut_rows = 0;

  const bench::DeviceInfo dev = bench::device_info();
  const std::string detected = dev.present ? bench::gpu_key(dev) : "";
  const bench::GpuCeilings* g = gpu_flag("bench", flags, detected.empty() ? "h200" : detected, err);
  if (!g) return kExitUsage;

  Report report;
  report.command = "bench";
  report.gpu = g->name;
  report.ceilings = *g;
  report.gpu_present = dev.present;
  report.device_name = dev.name;
  report.has_checks = true;
  report.check_backend = dev.present ? "cuda" : "emulator";
  report.seed = check::fresh_seed();
  report.l2_flush = bench::flush_mode_name(flush_mode);

  bench::L2Flush flush;
  bench::DeviceArena flush_arena(kArenaSeed);
  if (!dev.present) {
    out << "no GPU: timings not measured; floors for " << g->name << " shown (" << dev.why_absent << ")\n";
  } else {
    out << "GPU: " << dev.name << "; floors use the " << g->name << " ceilings\n";
  }
  if (!detail::tune_text().empty()) out << "TEJAS_TUNE: " << detail::tune_text() << " (launch-config overrides)\n";
  if (flush_mode != bench::FlushMode::dirty)
    out << "L2 flush: " << report.l2_flush
        << (flush_mode == bench::FlushMode::clean ? " (a read pass)" : " (a warm L2)") << " before each timed run\n";
  report.tune = detail::tune_text();
  if (dev.present) {
    const size_t flush_bytes = bench::l2_flush_bytes(dev.l2_bytes, static_cast<size_t>(g->l2_bytes));
    if (Status s = bench::L2Flush::make(flush_mode, flush_bytes, flush_arena, &flush); !s.ok()) {
      err << "tejas bench: L2 flush buffer: " << s.to_string() << "\n";
      return kExitFailure;
    }
    double bw = 0;
    bench::Timing t;
    // Re-measure the HBM ceiling only when the floors are for this very GPU.
    if (g->name != detected) {
      err << "tejas bench: --gpu " << g->name << " differs from the device present: its tabled ceilings are used\n";
    } else if (Status s = bench::measure_copy(kCopyBytes, kCopyIters, flush, &bw, &t); s.ok()) {
      report.ceilings.hbm.value = bw;
      report.ceilings.hbm.source = "measured now (1 GiB device copy)";
    } else {
      err << "tejas bench: copy ceiling not measured: " << s.to_string() << "\n";
    }
  }

  // Rows and their baselines are timed alike: warm-up, an L2 flush before each run, median.
  const bench::LaunchTimer timer = [&](const std::function<Status()>& launch, double* median_us) {
    bench::Timing t;
    TEJAS_RETURN_IF_ERROR(bench::time_launch(launch, kWarmup, static_cast<int>(iters), flush, &t));
    *median_us = t.median_us;
    return Status::Ok();
  };

  check::RunOptions check_options;
  check_options.backend = dev.present ? Backend::cuda : Backend::emulator;
  std::map<std::string, OpVerdict> verdicts;
  bool any_error = false;
  const bool filtered = flags.has("filter");
  const std::string filter = flags.get("filter", "");
  const bool no_check = flags.has("no-check");
  size_t matched = 0;
  for (const std::string& suite : suites) {
    std::vector<bench::Workload> rows = bench::suite_workloads(suite, models);
    if (filtered) {
      // The row as printed: "op | model shape" -> "op model shape".
      std::erase_if(rows, [&](const bench::Workload& w) {
        const std::string text = w.op + " " + (w.model.empty() ? "" : w.model + " ") + w.shape;
        return text.find(filter) == std::string::npos;
      });
      matched += rows.size();
    }
    err << "[bench] " << suite << ": " << rows.size() << " rows\n";
    // Validate each kernel once (reduced sizes) before any timing.
    for (const auto& w : rows) {
      if (no_check) break;
      if (w.check_op.empty() || verdicts.count(w.check_op) || out_of_time()) continue;
      const check::OpCheck* c = check::find_op_check(w.check_op);
      if (!c) continue;
      err << "[bench] checking " << w.check_op << " on the " << backend_name(check_options.backend) << " backend\n";
      auto results = check::run_op_check(*c, check_options, report.seed);
      verdicts[w.check_op] = summarize(results);
      for (auto& r : results) report.checks.push_back(std::move(r));
    }
    size_t done = 0;
    for (auto& w : rows) {
      Row r = make_row(w.suite, w.op, w.model, w.shape, w.cost, report.ceilings);
      r.baseline = w.baseline;
      const OpVerdict* v = w.check_op.empty() || no_check ? nullptr : &verdicts[w.check_op];
      if (out_of_time()) {
        r.status = "not measured: --time-limit reached";
        ++cut_rows;
      } else if (v && v->verdict == check::Verdict::fail) {
        r.status = "not timed: check FAIL";
      } else if (v && v->verdict == check::Verdict::unsupported) {
        r.status = dev.present ? "unsupported: " + v->detail : "not measured: no GPU; emulator: unsupported";
      } else if (!dev.present) {
        r.status = v ? "not measured: no GPU; emulator check pass" : "not measured: no GPU";
      } else if (!w.prepare) {
        r.status = "not run: working set above the benchmark memory limit";
      } else {
        bench::DeviceArena arena(kArenaSeed);
        const bench::RowTiming t = bench::time_workload(w, arena, timer);
        r.us = t.us;
        r.baseline_us = t.baseline_us;
        r.status = t.status;
        any_error = any_error || t.error;
      }
      if (dev.present && ++done % 10 == 0) err << "[bench] " << suite << ": " << done << "/" << rows.size() << "\n";
      report.rows.push_back(std::move(r));
    }
  }

  if (filtered && matched == 0)
    return usage_error("bench", "--filter: no row's \"op model shape\" contains '" + filter + "' in the suites and models chosen", err);
  print_rows(out, report.rows);
  if (cut_rows > 0) {
    out << "--time-limit " << time_limit_s << " s reached: " << cut_rows << " of " << report.rows.size()
        << " rows not run\n";
  }
  const CheckCounts cc = count_checks(report.checks);
  if (no_check) {
    out << "kernel checks: skipped (--no-check)\n";
  } else {
    out << "kernel checks (" << report.check_backend << ", " << check::seed_note(report.seed) << "): " << cc.pass
        << " pass, " << cc.fail << " FAIL, " << cc.unsupported << " unsupported\n";
  }
  std::string error;
  if (flags.has("json") && !write_file(flags.get("json"), to_json(report), &error)) {
    err << "tejas bench: --json: " << error << "\n";
    return kExitFailure;
  }
  if (flags.has("markdown") && !write_file(flags.get("markdown"), to_markdown(report), &error)) {
    err << "tejas bench: --markdown: " << error << "\n";
    return kExitFailure;
  }
  return (cc.fail > 0 || any_error) ? kExitFailure : kExitOk;
}

}  // namespace tejas::cli
