// The JSON report: parsed back with a small strict parser written here, then the documented
// schema (docs/tools.md) checked key by key; plus the Markdown rendering.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/gpu.h"
#include "runtime/tune.h"
#include "tools/tejas/cli.h"
#include "tools/tejas/json.h"
#include "tools/tejas/report.h"

namespace {
// A JSON value: kind plus payload. Strict: fails on trailing commas, bad escapes, junk.
struct J {
  enum Kind { null, boolean, number, string, array, object } kind = null;
  bool b = false;
  double n = 0;
  std::string s;
  std::vector<J> items;
  std::map<std::string, J> fields;
  const J& operator[](const std::string& k) const {
    static const J missing;
    auto it = fields.find(k);
    return it == fields.end() ? missing : it->second;
  }
  bool has(const std::string& k) const { return fields.count(k) != 0; }
};

class Parser {
 public:
  explicit Parser(std::string text) : t_(std::move(text)) {}
  bool parse(J* out) {
    if (!value(out)) return false;
    ws();
    return p_ == t_.size();
  }

 private:
  void ws() {
    while (p_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[p_]))) ++p_;
  }
  bool lit(const char* w) {
    const std::string s(w);
    if (t_.compare(p_, s.size(), s) != 0) return false;
    p_ += s.size();
    return true;
  }
  bool str(std::string* out) {
    if (t_[p_] != '"') return false;
    ++p_;
    while (p_ < t_.size() && t_[p_] != '"') {
      char c = t_[p_++];
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c == '\\') {
        if (p_ >= t_.size()) return false;
        const char e = t_[p_++];
        if (e == 'u') {
          if (p_ + 4 > t_.size()) return false;
          c = static_cast<char>(std::stoi(t_.substr(p_, 4), nullptr, 16));
          p_ += 4;
        } else if (e == 'n') c = '\n';
        else if (e == 't') c = '\t';
        else if (e == 'r') c = '\r';
        else if (e == '"' || e == '\\' || e == '/') c = e;
        else return false;
      }
      *out += c;
    }
    if (p_ >= t_.size()) return false;
    ++p_;
    return true;
  }
  bool value(J* v) {
    ws();
    if (p_ >= t_.size()) return false;
    const char c = t_[p_];
    if (c == '{') {
      v->kind = J::object;
      ++p_;
      ws();
      if (t_[p_] == '}') return ++p_, true;
      for (;;) {
        ws();
        std::string k;
        if (!str(&k)) return false;
        ws();
        if (t_[p_++] != ':') return false;
        if (!value(&v->fields[k])) return false;
        ws();
        if (t_[p_] == ',') { ++p_; continue; }
        if (t_[p_] == '}') return ++p_, true;
        return false;
      }
    }
    if (c == '[') {
      v->kind = J::array;
      ++p_;
      ws();
      if (t_[p_] == ']') return ++p_, true;
      for (;;) {
        v->items.emplace_back();
        if (!value(&v->items.back())) return false;
        ws();
        if (t_[p_] == ',') { ++p_; continue; }
        if (t_[p_] == ']') return ++p_, true;
        return false;
      }
    }
    if (c == '"') {
      v->kind = J::string;
      return str(&v->s);
    }
    if (lit("null")) return v->kind = J::null, true;
    if (lit("true")) return v->kind = J::boolean, v->b = true, true;
    if (lit("false")) return v->kind = J::boolean, v->b = false, true;
    size_t used = 0;
    try {
      v->n = std::stod(t_.substr(p_), &used);
    } catch (...) {
      return false;
    }
    if (used == 0 || !std::isfinite(v->n)) return false;
    v->kind = J::number;
    p_ += used;
    return true;
  }
  std::string t_;
  size_t p_ = 0;
};

J parse_or_fail(const std::string& text) {
  J j;
  EXPECT_TRUE(Parser(text).parse(&j)) << text.substr(0, 400);
  return j;
}

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string temp_path(const char* name) { return ::testing::TempDir() + name; }

int tejas_cmd(std::vector<std::string> args) {
  std::ostringstream out, err;
  return tejas::cli::run(args, out, err);
}

void expect_ceiling(const J& c) {
  EXPECT_EQ(c.kind, J::object);
  EXPECT_TRUE(c.has("value") && c.has("datasheet") && c.has("source"));
}
}  // namespace

TEST(Json, ParserRejectsMalformed) {
  J j;
  EXPECT_FALSE(Parser("{\"a\":1,}").parse(&j));
  EXPECT_FALSE(Parser("[1 2]").parse(&j));
  EXPECT_FALSE(Parser("{\"a\":1} x").parse(&j));
  EXPECT_TRUE(Parser("{\"a\":[1,2.5e3,null,true,\"x\\n\"]}").parse(&j));
}

TEST(Json, WriterEscapesAndNulls) {
  tejas::cli::JsonWriter w;
  w.begin_object().key("s").value("a\"b\\c\n\x01").key("nan").value(std::nan("")).key("n").value(1.5);
  w.key("opt").value(std::optional<double>()).key("arr").begin_array().value(1).value(true).end_array().end_object();
  const J j = parse_or_fail(w.str());
  EXPECT_EQ(j["s"].s, "a\"b\\c\n\x01");
  EXPECT_EQ(j["nan"].kind, J::null);
  EXPECT_EQ(j["opt"].kind, J::null);
  EXPECT_EQ(j["n"].n, 1.5);
  ASSERT_EQ(j["arr"].items.size(), 2u);
}

// A measured row's rates as the JSON and the table give them, from numbers worked by hand (the
// GPU run's rows are checked against their own bytes and time in BenchReportSchema): 8 MB and
// 2 MFLOP in 4 us are 2000 GB/s and 0.5 TFLOP/s (memory-bound: 2e6 / 67e12 s is 0.03 us); on
// the H200's tabled 4.3 TB/s the floor is 8e6 / 4.3e12 s = 1.8605 us, 46.51 % of 4 us; a 6 us
// baseline is 1.5x.
TEST(Json, MeasuredRowRates) {
  tejas::cli::Report rep;
  rep.command = "bench";
  rep.gpu = "h200";
  rep.ceilings = *tejas::bench::find_gpu("h200");
  rep.l2_flush = "dirty";
  const tejas::bench::Cost cost{2e6, 8e6, tejas::bench::MathUnit::fp32_simt};
  tejas::cli::Row timed = tejas::cli::make_row("norm", "rms_norm", "m", "T=1", cost, rep.ceilings);
  timed.us = 4.0;
  timed.baseline = "torch";
  timed.baseline_us = 6.0;
  timed.status = "measured";
  tejas::cli::Row untimed = tejas::cli::make_row("norm", "rms_norm", "m", "T=2", cost, rep.ceilings);
  untimed.baseline = "torch";
  untimed.baseline_us = 6.0;  // a baseline time alone gives no ratio
  untimed.status = "not measured: no GPU";
  rep.rows = {timed, untimed};
  const J j = parse_or_fail(tejas::cli::to_json(rep));
  ASSERT_EQ(j["rows"].items.size(), 2u);
  const J& a = j["rows"].items[0];
  EXPECT_EQ(a["us"].n, 4.0);
  EXPECT_NEAR(a["gbps"].n, 2000.0, 1e-6);
  EXPECT_NEAR(a["tflops"].n, 0.5, 1e-9);
  EXPECT_NEAR(a["floor_us"].n, 8e6 / 4.3e12 * 1e6, 1e-8);
  EXPECT_NEAR(a["pct_of_floor"].n, 100.0 * (8e6 / 4.3e12 * 1e6) / 4.0, 1e-7);
  EXPECT_NEAR(a["x_baseline"].n, 1.5, 1e-12);
  EXPECT_EQ(a["bound"].s, "memory");
  const J& b = j["rows"].items[1];
  for (const char* k : {"us", "gbps", "tflops", "pct_of_floor", "x_baseline"}) EXPECT_EQ(b[k].kind, J::null) << k;
  EXPECT_EQ(b["baseline_us"].n, 6.0);
  std::ostringstream table;
  tejas::cli::print_rows(table, rep.rows);
  EXPECT_NE(table.str().find("rms_norm | m T=1 | 4.00 | 0.50 | 2000.00 | 1.860 | 46.5 | torch | 1.50 | measured\n"),
            std::string::npos)
      << table.str();
  EXPECT_NE(table.str().find("rms_norm | m T=2 | - | - | - | 1.860 | - | torch | - | not measured: no GPU\n"),
            std::string::npos)
      << table.str();
}

// The same schema with or without a GPU; the values differ: without one no row carries a time and
// the tabled ceilings stand, with one the measured rows carry their time and rates, the copy
// ceiling is measured, and the kernels are checked on the cuda backend. --iters 3 keeps the GPU
// run short (this checks the report, not the timings).
TEST(Json, BenchReportSchema) {
  const tejas::bench::DeviceInfo dev = tejas::bench::device_info();
  const bool gpu = dev.present;
  const std::string detected = gpu ? tejas::bench::gpu_key(dev) : "";
  const std::string path = temp_path("tejas_bench.json"), md = temp_path("tejas_bench.md");
  ASSERT_EQ(tejas_cmd({"bench", "--suite", "norm,attention,memcpy", "--model", "gpt-oss-120b", "--iters", "3", "--json",
                       path, "--markdown", md}),
            0);
  const J j = parse_or_fail(read(path));
  EXPECT_EQ(j["schema_version"].n, tejas::cli::kSchemaVersion);
  EXPECT_EQ(j["tool"].s, "tejas");
  EXPECT_EQ(j["command"].s, "bench");
  EXPECT_EQ(j["tune"].kind, tejas::detail::tune_text().empty() ? J::null : J::string);
  EXPECT_EQ(j["l2_flush"].s, "dirty") << "the default flush";
  EXPECT_EQ(j["gpu"]["name"].s, detected.empty() ? "h200" : detected) << "the tabled GPU without a known one";
  EXPECT_EQ(j["gpu"]["present"].kind, J::boolean);
  EXPECT_EQ(j["gpu"]["present"].b, gpu);
  EXPECT_EQ(j["gpu"]["device"].kind, gpu ? J::string : J::null);
  for (const char* c : {"hbm_bytes_per_s", "fp32_simt_flops", "bf16_tensor_flops", "fp8_tensor_flops", "fp4_tensor_flops"})
    expect_ceiling(j["ceilings"][c]);
  const J& hbm = j["ceilings"]["hbm_bytes_per_s"];
  if (!detected.empty()) {  // floors for this very GPU: the copy ceiling measured now
    EXPECT_EQ(hbm["source"].s, "measured now (1 GiB device copy)");
    EXPECT_GT(hbm["value"].n, 0);
  } else {
    EXPECT_EQ(hbm["value"].n, 4.3e12);
  }
  EXPECT_EQ(j["ceilings"]["fp4_tensor_flops"]["value"].kind, J::null);
  ASSERT_GT(j["rows"].items.size(), 10u);
  std::map<std::string, int> rows, measured;  // per suite (and copy_d2d apart)
  for (const J& r : j["rows"].items) {
    for (const char* k : {"suite", "op", "model", "shape", "flops", "bytes", "intensity", "math_unit", "floor_us",
                          "bound", "us", "tflops", "gbps", "pct_of_floor", "baseline", "baseline_us", "x_baseline",
                          "status"})
      EXPECT_TRUE(r.has(k)) << k;
    EXPECT_GT(r["floor_us"].n, 0);
    EXPECT_GT(r["bytes"].n, 0);
    const std::string row = r["op"].s + " " + r["shape"].s + ": " + r["status"].s;
    if (r["bound"].s == "memory") {  // the floor is the bytes at this run's HBM ceiling (measured or tabled)
      EXPECT_NEAR(r["floor_us"].n, r["bytes"].n / hbm["value"].n * 1e6, 1e-8 * r["floor_us"].n) << row;
    }
    const std::string group = r["op"].s == "copy_d2d" ? "copy_d2d" : r["suite"].s;
    ++rows[group];
    // "measured", or "measured; baseline ..." where the baseline was not timed (bench/suites.h).
    if (r["status"].s.rfind("measured", 0) != 0) {
      EXPECT_EQ(r["us"].kind, J::null) << row << ": a time only where measured";
      EXPECT_EQ(r["pct_of_floor"].kind, J::null) << row;
      EXPECT_EQ(r["gbps"].kind, J::null) << row;
      continue;
    }
    ++measured[group];
    EXPECT_TRUE(gpu) << row << ": no GPU, no timing may appear";
    EXPECT_GT(r["us"].n, 0) << row;
    // The rates follow from the row's own bytes and time; the JSON prints 10 significant digits,
    // so each of the three numbers is within 5e-10 of its value (1e-8 covers their combination).
    EXPECT_NEAR(r["gbps"].n, r["bytes"].n / (r["us"].n * 1e-6) / 1e9, 1e-8 * r["gbps"].n) << row;
    EXPECT_NEAR(r["pct_of_floor"].n, 100.0 * r["floor_us"].n / r["us"].n, 1e-8 * r["pct_of_floor"].n) << row;
    EXPECT_EQ(r["tflops"].kind, J::number) << row;
  }
  if (gpu) {  // every norm row and every device copy is timed (a stream_copy row may be unsupported)
    EXPECT_GT(rows["norm"], 0);
    EXPECT_EQ(measured["norm"], rows["norm"]);
    EXPECT_GT(rows["copy_d2d"], 0);
    EXPECT_EQ(measured["copy_d2d"], rows["copy_d2d"]);
  } else {
    EXPECT_TRUE(measured.empty());
  }
  const J& checks = j["checks"];
  EXPECT_EQ(checks["backend"].s, gpu ? "cuda" : "emulator");
  EXPECT_EQ(checks["graph"].kind, J::boolean);
  EXPECT_FALSE(checks["graph"].b);
  EXPECT_EQ(checks["pdl"].kind, J::boolean);
  EXPECT_FALSE(checks["pdl"].b);
  EXPECT_EQ(checks["pass"].n + checks["fail"].n + checks["unsupported"].n, checks["results"].items.size());
  EXPECT_GT(checks["pass"].n, 0);
  for (const J& c : checks["results"].items)
    for (const char* k : {"op", "case", "verdict", "detail"}) EXPECT_TRUE(c.has(k)) << k;
  const std::string m = read(md);
  EXPECT_NE(m.find("| op | shape | us |"), std::string::npos) << m.substr(0, 600);
  EXPECT_NE(m.find("|---|"), std::string::npos);
  EXPECT_NE(m.find("L2 flush before each timed run: dirty"), std::string::npos) << m.substr(0, 600);
  std::remove(path.c_str());
  std::remove(md.c_str());
}

TEST(Json, CheckAndRooflineReports) {
  const std::string path = temp_path("tejas_check.json");
  ASSERT_EQ(tejas_cmd({"check", "--backend", "reference", "--op", "rope", "--seed", "77", "--json", path}), 0);
  J j = parse_or_fail(read(path));
  EXPECT_EQ(j["command"].s, "check");
  EXPECT_EQ(j["checks"]["seed"].n, 77);
  EXPECT_EQ(j["checks"]["backend"].s, "reference");
  EXPECT_GT(j["checks"]["pass"].n, 0);
  EXPECT_EQ(j["checks"]["fail"].n, 0);
  EXPECT_EQ(j["l2_flush"].kind, J::null) << "check times nothing";
  ASSERT_EQ(tejas_cmd({"roofline", "--suite", "gemm", "--gpu", "b200", "--json", path}), 0);
  j = parse_or_fail(read(path));
  EXPECT_EQ(j["command"].s, "roofline");
  EXPECT_EQ(j["l2_flush"].s, "dirty");
  EXPECT_EQ(j["ceilings"]["fp4_tensor_flops"]["value"].n, 9e15);
  EXPECT_EQ(j["checks"].kind, J::null);
  ASSERT_FALSE(j["rows"].items.empty());
  EXPECT_EQ(j["rows"].items[0]["suite"].s, "gemm");
  std::remove(path.c_str());
  EXPECT_EQ(tejas_cmd({"check", "--op", "rope", "--backend", "reference", "--json", "/nonexistent-dir/x.json"}), 1);
}
