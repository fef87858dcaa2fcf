// tejas roofline: the ceilings (measured now on a GPU; otherwise the measured-before and
// datasheet figures, labelled) and the floor of every workload row.
#include <functional>

#include "bench/gpu.h"
#include "bench/suites.h"
#include "commands.h"
#include "report.h"

namespace tejas::cli {
namespace {
constexpr const char* kHelp =
    "usage: tejas roofline [--gpu h100|h200|b200] [--suite NAME[,NAME]|all] [--json FILE] [--markdown FILE]\n"
    "\n"
    "Prints the ceilings and, for every workload of the chosen suites, FLOPs, fewest HBM bytes,\n"
    "arithmetic intensity, floor time and what bounds it. On a GPU the ceilings are measured now:\n"
    "device-to-device copy bandwidth (bytes read + written) and bf16 / fp8 GEMM throughput through\n"
    "cuBLASLt at 8192^3. Without a GPU the figures of GPU.md / WORKLOADS.md are used, each labelled\n"
    "with its source (measured before on the lent H200, or datasheet).\n";

const std::vector<FlagSpec> kFlags = {
    {"gpu", "NAME", "h100, h200 or b200 (default: the GPU present, else h200)"},
    {"suite", "NAME", "suites whose floors to list (comma-separated, or all; default all)"},
    {"json", "FILE", "write ceilings and floors as JSON (schema: docs/tools.md)"},
    {"markdown", "FILE", "write them as Markdown"},
};
constexpr size_t kCopyBytes = size_t{1} << 30;
constexpr int kCopyIters = 20, kGemmWarmup = 3, kGemmIters = 10;
constexpr uint64_t kArenaSeed = 1;

// Times one 8192^3 GEMM; returns FLOP/s or 0 with the reason in *why.
double measure_gemm_peak(bool fp8, const bench::L2Flush& flush, std::string* why) {
  bench::Workload w = bench::peak_gemm(fp8);
  bench::DeviceArena arena(kArenaSeed);
  std::function<Status()> launch;
  bench::Timing t;
  Status s = w.prepare(arena, &launch);
  if (s.ok()) s = bench::time_launch(launch, kGemmWarmup, kGemmIters, flush, &t);
  if (!s.ok()) {
    *why = s.to_string();
    return 0;
  }
  return w.cost.flops / (t.median_us * 1e-6);
}
}  // namespace

int cmd_roofline(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Flags flags;
  int code = kExitOk;
  if (!parse_or_help("roofline", kHelp, kFlags, args, &flags, out, err, &code)) return code;
  std::vector<std::string> suites;
  if (!suites_flag("roofline", flags, &suites, err)) return kExitUsage;
  const bench::DeviceInfo dev = bench::device_info();
  const std::string detected = dev.present ? bench::gpu_key(dev) : "";
  const bench::GpuCeilings* g = gpu_flag("roofline", flags, detected.empty() ? "h200" : detected, err);
  if (!g) return kExitUsage;

  Report report;
  report.command = "roofline";
  report.gpu = g->name;
  report.ceilings = *g;
  report.gpu_present = dev.present;
  report.l2_flush = bench::flush_mode_name(bench::FlushMode::dirty);  // "none" below if its buffer cannot be had
  report.device_name = dev.name;
  if (!dev.present) {
    out << "no GPU: ceilings not measured; " << g->name << " figures from GPU.md / WORKLOADS.md (" << dev.why_absent
        << ")\n";
  } else if (g->name != detected) {
    out << "GPU: " << dev.name << "; --gpu " << g->name << " differs: its tabled ceilings are shown, nothing measured\n";
  } else {
    out << "GPU: " << dev.name << "; measuring ceilings\n";
    bench::DeviceArena arena(kArenaSeed);
    bench::L2Flush flush;  // none where the buffer cannot be had
    const size_t flush_bytes = bench::l2_flush_bytes(dev.l2_bytes, static_cast<size_t>(g->l2_bytes));
    if (Status s = bench::L2Flush::make(bench::FlushMode::dirty, flush_bytes, arena, &flush); !s.ok()) {
      err << "tejas roofline: L2 flush buffer: " << s.to_string() << " (timed without a flush)\n";
      flush = bench::L2Flush();
    }
    report.l2_flush = bench::flush_mode_name(flush.mode());
    err << "[roofline] copy bandwidth\n";
    double bw = 0;
    bench::Timing t;
    if (Status s = bench::measure_copy(kCopyBytes, kCopyIters, flush, &bw, &t); s.ok()) {
      report.ceilings.hbm.value = bw;
      report.ceilings.hbm.source = "measured now (1 GiB device copy)";
    } else {
      err << "tejas roofline: copy: " << s.to_string() << "\n";
    }
    for (bool fp8 : {false, true}) {
      err << "[roofline] " << (fp8 ? "fp8" : "bf16") << " GEMM 8192^3 through cuBLASLt\n";
      std::string why;
      const double peak = measure_gemm_peak(fp8, flush, &why);
      bench::Ceiling& c = fp8 ? report.ceilings.fp8_tensor : report.ceilings.bf16_tensor;
      if (peak > 0) {
        c.value = peak;
        c.source = "measured now (cuBLASLt 8192^3)";
      } else {
        err << "tejas roofline: " << (fp8 ? "fp8" : "bf16") << " GEMM: " << why << "\n";
      }
    }
  }
  print_ceilings(out, report.ceilings);
  out << "\nfloors (op | shape | FLOPs | bytes | FLOP/byte | floor us | bound):\n";
  for (const auto& suite : suites) {
    for (const auto& w : bench::suite_workloads(suite, {})) {
      Row r = make_row(w.suite, w.op, w.model, w.shape, w.cost, report.ceilings);
      r.status = "floor only";
      char buf[160];
      std::snprintf(buf, sizeof buf, "%.4g | %.4g | %.3g | %.3f | %s", r.cost.flops, r.cost.bytes,
                    bench::arithmetic_intensity(r.cost), r.floor_us, r.bound.c_str());
      out << r.op << " | " << (r.model.empty() ? "" : r.model + " ") << r.shape << " | " << buf << "\n";
      report.rows.push_back(std::move(r));
    }
  }
  std::string error;
  if (flags.has("json") && !write_file(flags.get("json"), to_json(report), &error)) {
    err << "tejas roofline: --json: " << error << "\n";
    return kExitFailure;
  }
  if (flags.has("markdown") && !write_file(flags.get("markdown"), to_markdown(report), &error)) {
    err << "tejas roofline: --markdown: " << error << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace tejas::cli
