#include "report.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "json.h"
#include "tejas/version.h"

namespace tejas::cli {
namespace {
constexpr double kUs = 1e-6;
constexpr double kTera = 1e12, kGiga = 1e9;
constexpr double kPercent = 100.0;
constexpr size_t kDetailWidth = 110;  // terminal table: longer details are cut (JSON has them whole)
constexpr const char* kNone = "-";

std::string fmt(double v, const char* f = "%.2f") {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string opt(const std::optional<double>& v, const char* f = "%.2f") { return v ? fmt(*v, f) : kNone; }

// Achieved rates, only from a measured time.
std::optional<double> tflops(const Row& r) {
  if (!r.us || *r.us <= 0) return std::nullopt;
  return r.cost.flops / (*r.us * kUs) / kTera;
}
std::optional<double> gbps(const Row& r) {
  if (!r.us || *r.us <= 0) return std::nullopt;
  return r.cost.bytes / (*r.us * kUs) / kGiga;
}
std::optional<double> pct_of_floor(const Row& r) {
  if (!r.us || *r.us <= 0) return std::nullopt;
  return kPercent * r.floor_us / *r.us;
}
std::optional<double> x_baseline(const Row& r) {
  if (!r.us || !r.baseline_us || *r.us <= 0) return std::nullopt;
  return *r.baseline_us / *r.us;
}

std::string shape_of(const Row& r) { return r.model.empty() ? r.shape : r.model + " " + r.shape; }

void ceiling_json(JsonWriter& j, const char* name, const bench::Ceiling& c) {
  j.key(name).begin_object();
  j.key("value").value(c.value > 0 ? std::optional<double>(c.value) : std::nullopt);
  j.key("datasheet").value(c.datasheet > 0 ? std::optional<double>(c.datasheet) : std::nullopt);
  j.key("source").value(c.source);
  j.end_object();
}
}  // namespace

Row make_row(const std::string& suite, const std::string& op, const std::string& model, const std::string& shape,
             const bench::Cost& cost, const bench::GpuCeilings& g) {
  Row r;
  r.suite = suite;
  r.op = op;
  r.model = model;
  r.shape = shape;
  r.cost = cost;
  r.floor_us = bench::floor_seconds(cost, g) / kUs;
  r.bound = bench::floor_bound(cost, g);
  return r;
}

CheckCounts count_checks(const std::vector<check::CaseResult>& results) {
  CheckCounts c;
  for (const auto& r : results) {
    if (r.verdict == check::Verdict::pass) ++c.pass;
    else if (r.verdict == check::Verdict::fail) ++c.fail;
    else ++c.unsupported;
  }
  return c;
}

void print_rows(std::ostream& os, const std::vector<Row>& rows) {
  os << "op | shape | us | TFLOP/s | GB/s | floor us | % of floor | baseline | x baseline | note\n";
  for (const Row& r : rows) {
    os << r.op << " | " << shape_of(r) << " | " << opt(r.us) << " | " << opt(tflops(r)) << " | " << opt(gbps(r))
       << " | " << fmt(r.floor_us, "%.3f") << " | " << opt(pct_of_floor(r), "%.1f") << " | "
       << (r.baseline.empty() ? kNone : r.baseline) << " | " << opt(x_baseline(r)) << " | " << r.status << "\n";
  }
}

void print_checks(std::ostream& os, const std::vector<check::CaseResult>& results) {
  os << "op | case | result | detail\n";
  for (const auto& r : results) {
    std::string d = r.detail;
    if (d.size() > kDetailWidth) d = d.substr(0, kDetailWidth) + "...";
    os << r.op << " | " << r.label << " | " << check::verdict_name(r.verdict) << " | " << d << "\n";
  }
  const CheckCounts c = count_checks(results);
  os << c.pass << " pass, " << c.fail << " FAIL, " << c.unsupported << " unsupported (of " << results.size()
     << " cases)\n";
}

void print_ceilings(std::ostream& os, const bench::GpuCeilings& g) {
  os << "ceiling | value | datasheet | source\n";
  auto line = [&](const char* what, const bench::Ceiling& c, double unit, const char* u) {
    os << what << " | " << (c.value > 0 ? fmt(c.value / unit, "%.1f") + " " + u : "none") << " | "
       << (c.datasheet > 0 ? fmt(c.datasheet / unit, "%.1f") + " " + u : kNone) << " | "
       << (c.source.empty() ? kNone : c.source) << "\n";
  };
  line("HBM (copy, read + written)", g.hbm, kTera, "TB/s");
  line("fp32 CUDA cores", g.fp32_simt, kTera, "TFLOP/s");
  line("bf16 tensor (dense)", g.bf16_tensor, kTera, "TFLOP/s");
  line("fp8 tensor (dense)", g.fp8_tensor, kTera, "TFLOP/s");
  line("fp4 tensor (dense)", g.fp4_tensor, kTera, "TFLOP/s");
}

std::string to_json(const Report& r) {
  JsonWriter j;
  j.begin_object();
  j.key("schema_version").value(kSchemaVersion);
  j.key("tool").value("tejas");
  j.key("version").value(version_string());
  j.key("command").value(r.command);
  j.key("tune");
  if (r.tune.empty()) j.null(); else j.value(r.tune);
  j.key("l2_flush");
  if (r.l2_flush.empty())
    j.null();
  else
    j.value(r.l2_flush);
  j.key("gpu").begin_object();
  j.key("name").value(r.gpu);
  j.key("present").value(r.gpu_present);
  j.key("device");
  if (r.device_name.empty()) j.null(); else j.value(r.device_name);
  j.end_object();
  j.key("ceilings").begin_object();
  ceiling_json(j, "hbm_bytes_per_s", r.ceilings.hbm);
  ceiling_json(j, "fp32_simt_flops", r.ceilings.fp32_simt);
  ceiling_json(j, "bf16_tensor_flops", r.ceilings.bf16_tensor);
  ceiling_json(j, "fp8_tensor_flops", r.ceilings.fp8_tensor);
  ceiling_json(j, "fp4_tensor_flops", r.ceilings.fp4_tensor);
  j.end_object();
  j.key("rows").begin_array();
  for (const Row& w : r.rows) {
    j.begin_object();
    j.key("suite").value(w.suite);
    j.key("op").value(w.op);
    j.key("model").value(w.model);
    j.key("shape").value(w.shape);
    j.key("flops").value(w.cost.flops);
    j.key("bytes").value(w.cost.bytes);
    j.key("intensity").value(bench::arithmetic_intensity(w.cost));
    j.key("math_unit").value(bench::math_unit_name(w.cost.unit));
    j.key("floor_us").value(w.floor_us);
    j.key("bound").value(w.bound);
    j.key("us").value(w.us);
    j.key("tflops").value(tflops(w));
    j.key("gbps").value(gbps(w));
    j.key("pct_of_floor").value(pct_of_floor(w));
    j.key("baseline");
    if (w.baseline.empty()) j.null(); else j.value(w.baseline);
    j.key("baseline_us").value(w.baseline_us);
    j.key("x_baseline").value(x_baseline(w));
    j.key("status").value(w.status);
    j.end_object();
  }
  j.end_array();
  j.key("checks");
  if (!r.has_checks) {
    j.null();
  } else {
    const CheckCounts c = count_checks(r.checks);
    j.begin_object();
    j.key("backend").value(r.check_backend);
    j.key("graph").value(r.check_graph);
    j.key("pdl").value(r.check_pdl);
    j.key("seed").value(r.seed);
    j.key("pass").value(c.pass);
    j.key("fail").value(c.fail);
    j.key("unsupported").value(c.unsupported);
    j.key("results").begin_array();
    for (const auto& cr : r.checks) {
      j.begin_object();
      j.key("op").value(cr.op);
      j.key("case").value(cr.label);
      j.key("verdict").value(cr.verdict == check::Verdict::fail ? "fail" : check::verdict_name(cr.verdict));
      j.key("detail").value(cr.detail);
      j.end_object();
    }
    j.end_array();
    j.end_object();
  }
  j.end_object();
  return j.str() + "\n";
}

std::string to_markdown(const Report& r) {
  std::ostringstream os;
  os << "# tejas " << r.command << "\n\n";
  os << "GPU: " << (r.gpu_present ? r.device_name : "none (timings not measured)") << "; ceilings for " << r.gpu
     << "\n\n";
  if (!r.tune.empty()) os << "TEJAS_TUNE: " << r.tune << "\n\n";
  if (!r.l2_flush.empty()) os << "L2 flush before each timed run: " << r.l2_flush << "\n\n";
  std::ostringstream ceil;
  print_ceilings(ceil, r.ceilings);
  auto table = [&](const std::string& text) {
    // The terminal tables are already pipe-separated: add the outer pipes and a header rule.
    std::istringstream in(text);
    std::string line;
    bool header = true;
    while (std::getline(in, line)) {
      if (line.find(" | ") == std::string::npos) {
        os << "\n" << line << "\n";
        continue;
      }
      os << "| " << line << " |\n";
      if (header) {
        os << "|---|";
        for (size_t p = line.find(" | "); p != std::string::npos; p = line.find(" | ", p + 3)) os << "---|";
        os << "\n";
        header = false;
      }
    }
    os << "\n";
  };
  table(ceil.str());
  if (!r.rows.empty()) {
    std::ostringstream rows;
    print_rows(rows, r.rows);
    table(rows.str());
  }
  if (r.has_checks) {
    os << "Checks on the " << r.check_backend << " backend" << (r.check_graph ? " (each call from a captured CUDA graph)" : "")
       << (r.check_pdl ? " (programmatic dependent launch)" : "") << ", seed " << r.seed << ":\n\n";
    std::ostringstream checks;
    print_checks(checks, r.checks);
    table(checks.str());
  }
  return os.str();
}

bool write_file(const std::string& path, const std::string& text, std::string* error) {
  std::ofstream f(path);
  if (!f) {
    *error = "cannot open " + path + " for writing";
    return false;
  }
  f << text;
  if (!f) {
    *error = "cannot write " + path;
    return false;
  }
  return true;
}

}  // namespace tejas::cli
