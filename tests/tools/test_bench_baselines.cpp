// Baselines timed beside benchmark rows, without a GPU: every fused row of the norm, activation
// and rope suites names its unfused sequence and carries its launch (mrope: none), other rows
// carry none; bench::time_workload's bookkeeping (order, notes, errors) with a fake timer; the
// x baseline column's direction; the no-GPU bench prints no timing, baseline included; and
// the rows each suite makes (quant groups that fit K, dequant rows, the norm-only limit model).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/suites.h"
#include "check/cuda_mem.h"
#include "tools/tejas/cli.h"
#include "tools/tejas/report.h"

namespace {
using tejas::Status;
using tejas::bench::DeviceArena;
using tejas::bench::LaunchTimer;
using tejas::bench::RowTiming;
using tejas::bench::Workload;

constexpr uint64_t kArenaSeed = 1;

// Fused op -> the words its baseline's name must contain (the unfused ops, in order).
const std::map<std::string, std::vector<std::string>>& fused_ops() {
  static const std::map<std::string, std::vector<std::string>> m = {
      {"fused_add_rms_norm_quant_fp8_group", {"unfused: fused_add_rms_norm (bf16 out) + quant_fp8_group"}},
      {"silu_mul_quant_fp8_group", {"unfused: silu_mul + quant_fp8_group"}},
      {"silu_mul_quant_mx", {"unfused: silu_mul + quant_mx ("}},
      {"rope_kv_cache_write", {"unfused: rope + kv_cache_write"}},
  };
  return m;
}

std::vector<Workload> all_rows(const std::string& suite) { return tejas::bench::suite_workloads(suite, {}); }

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

TEST(BenchBaselines, EveryFusedRowNamesAndLaunchesItsUnfusedSequence) {
  std::map<std::string, int> seen;
  for (const char* suite : {"norm", "activation", "rope"}) {
    for (const Workload& w : all_rows(suite)) {
      const auto it = fused_ops().find(w.op);
      if (it == fused_ops().end()) continue;
      ++seen[w.op];
      SCOPED_TRACE(w.op + " " + w.model + " " + w.shape);
      ASSERT_TRUE(w.prepare);
      EXPECT_TRUE(w.baseline_prepare);
      for (const std::string& word : it->second) EXPECT_TRUE(has(w.baseline, word)) << w.baseline;
    }
  }
  // Each fused op has rows, so the loop above checked something for each.
  for (const auto& [op, words] : fused_ops()) EXPECT_GT(seen[op], 0) << op;
}

TEST(BenchBaselines, BaselineNamesMatchTheRowsFormatAndCache) {
  int mx = 0, fp8_cache = 0, bf16_cache = 0;
  for (const char* suite : {"activation", "rope"}) {
    for (const Workload& w : all_rows(suite)) {
      SCOPED_TRACE(w.op + " " + w.shape);
      if (w.op == "silu_mul_quant_mx") {
        ++mx;
        const std::string fmt = has(w.shape, "mxfp4") ? "mxfp4" : "nvfp4";
        EXPECT_TRUE(has(w.shape, fmt));
        EXPECT_TRUE(has(w.baseline, "quant_mx (" + fmt + ")")) << w.baseline;
      } else if (w.op == "rope_kv_cache_write") {
        const bool fp8 = has(w.shape, "e4m3 cache");
        ++(fp8 ? fp8_cache : bf16_cache);
        // The unfused sequence is real for both cache formats (kv_cache_write converts to fp8):
        // no lower-bound wording left from the copy baseline it replaced.
        EXPECT_EQ(w.baseline, "unfused: rope + kv_cache_write") << w.baseline;
      }
    }
  }
  EXPECT_GT(mx, 0);
  EXPECT_GT(fp8_cache, 0);
  EXPECT_GT(bf16_cache, 0);
}

TEST(BenchBaselines, MropeAndUnfusedRowsHaveNoBaseline) {
  int mrope = 0, others = 0;
  for (const std::string& suite : tejas::bench::suite_names()) {
    if (suite == "pdl") continue;  // every row there has its stream-order twin (PdlRows...)
    for (const Workload& w : all_rows(suite)) {
      SCOPED_TRACE(suite + ": " + w.op + " " + w.shape);
      // A launch always comes with a name; never a nameless baseline time.
      EXPECT_TRUE(!w.baseline_prepare || !w.baseline.empty());
      if (fused_ops().count(w.op)) continue;
      mrope += w.op == "mrope";
      ++others;
      EXPECT_TRUE(w.baseline.empty()) << w.baseline;
      EXPECT_FALSE(w.baseline_prepare);
    }
  }
  EXPECT_GT(mrope, 0);
  EXPECT_GT(others, mrope);
}

// A Prepare whose launch appends `name` to *log and returns `run`, or that fails with `prep`.
tejas::bench::Prepare fake(std::vector<std::string>* log, const std::string& name, Status run,
                           Status prep = Status::Ok()) {
  return [=](DeviceArena&, std::function<Status()>* launch) {
    log->push_back("prepare " + name);
    if (!prep.ok()) return prep;
    *launch = [=] {
      log->push_back("run " + name);
      return run;
    };
    return Status::Ok();
  };
}

// Runs each launch once and reports the next of `times` (or the launch's failure).
LaunchTimer fake_timer(std::vector<double> times) {
  auto next = std::make_shared<size_t>(0);
  return [=](const std::function<Status()>& launch, double* us) {
    if (Status s = launch(); !s.ok()) return s;
    *us = times.at((*next)++);
    return Status::Ok();
  };
}

RowTiming time_it(const Workload& w, const LaunchTimer& timer) {
  DeviceArena arena(kArenaSeed);
  return tejas::bench::time_workload(w, arena, timer);
}

TEST(TimeWorkload, TimesOursThenTheBaselineWithTheSameTimer) {
  std::vector<std::string> log;
  Workload w;
  w.prepare = fake(&log, "ours", Status::Ok());
  w.baseline = "unfused";
  w.baseline_prepare = fake(&log, "baseline", Status::Ok());
  const RowTiming t = time_it(w, fake_timer({3.0, 7.5}));
  ASSERT_TRUE(t.us && t.baseline_us);
  EXPECT_EQ(*t.us, 3.0);
  EXPECT_EQ(*t.baseline_us, 7.5);
  EXPECT_EQ(t.status, "measured");
  EXPECT_FALSE(t.error);
  // Both prepared before either runs: no allocation inside a timed region.
  EXPECT_EQ(log, (std::vector<std::string>{"prepare ours", "prepare baseline", "run ours", "run baseline"}));
}

TEST(TimeWorkload, RowWithoutBaselineLeavesItEmpty) {
  std::vector<std::string> log;
  Workload w;
  w.prepare = fake(&log, "ours", Status::Ok());
  const RowTiming t = time_it(w, fake_timer({2.0}));
  ASSERT_TRUE(t.us);
  EXPECT_EQ(*t.us, 2.0);
  EXPECT_FALSE(t.baseline_us);
  EXPECT_EQ(t.status, "measured");
}

TEST(TimeWorkload, UnsupportedOrFailingBaselineIsANoteNeverANumber) {
  std::vector<std::string> log;
  Workload w;
  w.prepare = fake(&log, "ours", Status::Ok());
  w.baseline = "unfused";
  w.baseline_prepare = fake(&log, "baseline", Status::Ok(), Status::Unsupported("no quant kernel"));
  RowTiming t = time_it(w, fake_timer({4.0, 99.0}));
  EXPECT_TRUE(t.us);
  EXPECT_FALSE(t.baseline_us);
  EXPECT_EQ(t.status, "measured; baseline unsupported: no quant kernel");
  EXPECT_FALSE(t.error);

  w.baseline_prepare = fake(&log, "baseline", Status::Unsupported("at launch"));
  t = time_it(w, fake_timer({4.0, 99.0}));
  EXPECT_FALSE(t.baseline_us);
  EXPECT_EQ(t.status, "measured; baseline unsupported: at launch");
  EXPECT_FALSE(t.error);

  // A real failure of the baseline is an error of the run, not only a note.
  w.baseline_prepare = fake(&log, "baseline", Status::InvalidArgument("quant_fp8_group: q: bad"));
  t = time_it(w, fake_timer({4.0, 99.0}));
  EXPECT_TRUE(t.us);
  EXPECT_FALSE(t.baseline_us);
  EXPECT_TRUE(has(t.status, "measured; baseline error: ")) << t.status;
  EXPECT_TRUE(has(t.status, "quant_fp8_group: q: bad")) << t.status;
  EXPECT_TRUE(t.error);
}

TEST(TimeWorkload, FailedRowSkipsOrKeepsTheBaselineByKind) {
  std::vector<std::string> log;
  Workload w;
  w.baseline = "unfused";
  w.baseline_prepare = fake(&log, "baseline", Status::Ok());
  // An error in our launch: the baseline is not run (the device may be unusable).
  w.prepare = fake(&log, "ours", Status::CudaError("illegal address"));
  RowTiming t = time_it(w, fake_timer({1.0, 2.0}));
  EXPECT_FALSE(t.us);
  EXPECT_FALSE(t.baseline_us);
  EXPECT_TRUE(t.error);
  EXPECT_TRUE(has(t.status, "error: ")) << t.status;
  EXPECT_TRUE(has(t.status, "illegal address")) << t.status;
  EXPECT_EQ(std::count(log.begin(), log.end(), "run baseline"), 0);

  // A failed preparation of ours: the baseline is not even prepared.
  log.clear();
  w.prepare = fake(&log, "ours", Status::Ok(), Status::Unsupported("built without CUDA"));
  t = time_it(w, fake_timer({1.0, 2.0}));
  EXPECT_EQ(t.status, "unsupported: built without CUDA");
  EXPECT_FALSE(t.error);
  EXPECT_EQ(log, (std::vector<std::string>{"prepare ours"}));

  // Ours unsupported at launch: the baseline is still measured (x baseline stays empty: no ours).
  log.clear();
  w.prepare = fake(&log, "ours", Status::Unsupported("no sm_90a kernel"));
  t = time_it(w, fake_timer({6.0}));
  EXPECT_FALSE(t.us);
  ASSERT_TRUE(t.baseline_us);
  EXPECT_EQ(*t.baseline_us, 6.0);
  EXPECT_EQ(t.status, "unsupported: no sm_90a kernel");
  EXPECT_FALSE(t.error);

  // No launch at all (working set above the limit).
  w.prepare = nullptr;
  t = time_it(w, fake_timer({}));
  EXPECT_FALSE(t.us || t.baseline_us);
  EXPECT_FALSE(t.error);
}

TEST(TimeWorkload, RealFusedRowsNeedADevice) {
  if (tejas::check::cuda_available()) GTEST_SKIP() << "a GPU is present";
  // Without a device the arena cannot allocate: nothing is timed and the timer is never called.
  const LaunchTimer never = [](const std::function<Status()>&, double*) {
    ADD_FAILURE() << "timer called without a device";
    return Status::Ok();
  };
  for (const char* suite : {"norm", "activation", "rope"}) {
    for (const Workload& w : tejas::bench::suite_workloads(suite, {tejas::bench::find_model("qwen3-30b-a3b")})) {
      if (!w.baseline_prepare) continue;
      const RowTiming t = time_it(w, never);
      EXPECT_FALSE(t.us || t.baseline_us) << w.op;
      EXPECT_TRUE(has(t.status, "unsupported: ") || has(t.status, "error: ")) << t.status;
      break;
    }
  }
}

TEST(Report, XBaselineIsBaselineTimeOverOurs) {
  tejas::cli::Row r;
  r.op = "silu_mul_quant_fp8_group";
  r.shape = "rows=8";
  r.baseline = "unfused: silu_mul + quant_fp8_group";
  r.us = 2.0;
  r.baseline_us = 5.0;  // the unfused pair takes 2.5x as long: > 1 means Tejas is faster
  r.status = "measured";
  std::ostringstream os;
  tejas::cli::print_rows(os, {r});
  EXPECT_TRUE(has(os.str(), "| unfused: silu_mul + quant_fp8_group | 2.50 | measured")) << os.str();
  r.baseline_us.reset();
  os.str("");
  tejas::cli::print_rows(os, {r});
  EXPECT_TRUE(has(os.str(), "| unfused: silu_mul + quant_fp8_group | - | measured")) << os.str();
}

// Rows the ops accept: quant_fp8_group only where K divides by 128 (gpt-oss's 2880 does not; its
// MX / NVFP4 rows stay), a dequant row beside each quant row, and the norm-only limit model
// (hidden 16384) in the norm suite and nowhere else.
TEST(BenchSuites, QuantRowsFitTheirGroupsAndDequantRowsExist) {
  std::map<std::string, int> ops;
  for (const Workload& w : all_rows("quant")) {
    ++ops[w.op];
    if (w.op == "quant_fp8_group" || w.op == "dequant_fp8_group") {
      EXPECT_NE(w.model, "gpt-oss-120b") << w.shape;
    }
    EXPECT_TRUE(w.prepare) << w.op << " " << w.shape;
  }
  EXPECT_GT(ops["quant_fp8_group"], 0);
  EXPECT_EQ(ops["dequant_fp8_group"], ops["quant_fp8_group"]);
  EXPECT_EQ(ops["dequant_mx"], ops["quant_mx"]);
  EXPECT_GT(ops["dequant_mx"], 0);
}

TEST(BenchSuites, NormLimitModelOnlyInTheNormSuite) {
  const std::string limit = tejas::bench::norm_limit_model().name;
  EXPECT_EQ(tejas::bench::norm_limit_model().hidden, 16384);
  int norm_rows = 0;
  for (const Workload& w : all_rows("norm")) norm_rows += w.model == limit;
  EXPECT_GT(norm_rows, 0);
  for (const char* suite : {"rope", "activation", "quant", "attention", "gemm"}) {
    for (const Workload& w : all_rows(suite)) EXPECT_NE(w.model, limit) << suite;
    for (const Workload& w : tejas::bench::suite_workloads(suite, {tejas::bench::find_model(limit)}))
      EXPECT_NE(w.model, limit) << suite << " with --model " << limit;
  }
}

TEST(BenchCli, NoGpuPrintsBaselineNamesButNoTiming) {
  if (tejas::check::cuda_available()) GTEST_SKIP() << "a GPU is present";
  std::ostringstream out, err;
  const int code = tejas::cli::run({"bench", "--suite", "activation", "--model", "qwen3-30b-a3b"}, out, err);
  EXPECT_EQ(code, 0) << err.str();
  const std::string text = out.str();
  EXPECT_EQ(text.rfind("no GPU: timings not measured", 0), 0u) << text;
  int fused = 0;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("silu_mul", 0) != 0) continue;
    // us, TFLOP/s and GB/s, then % of floor and x baseline: all "-".
    EXPECT_TRUE(has(line, " | - | - | - | ")) << line;
    if (line.rfind("silu_mul_quant_fp8_group |", 0) == 0) {
      ++fused;
      EXPECT_TRUE(has(line, " | - | unfused: silu_mul + quant_fp8_group | - | not measured: no GPU")) << line;
    }
  }
  EXPECT_GT(fused, 0) << text;
}

}  // namespace

// The pdl suite: for one model unless models are chosen, each decode-sized row (at most 8 MiB) of
// the four kernel suites once, as 16 calls in one graph with its stream-order twin as baseline;
// without a GPU, preparing one fails.
TEST(BenchSuites, PdlRowsAreTheDecodeRowsOfTheKernelSuitesTwice) {
  const auto& models = tejas::bench::models();
  const std::vector<Workload> rows = tejas::bench::suite_workloads("pdl", {});
  ASSERT_FALSE(rows.empty());
  std::map<std::string, int> ops;
  for (const Workload& w : rows) {
    SCOPED_TRACE(w.op + " " + w.shape);
    EXPECT_EQ(w.suite, "pdl");
    EXPECT_EQ(w.model, models.front().name);
    EXPECT_EQ(w.baseline, "the same 16 calls in stream order");
    EXPECT_TRUE(w.prepare && w.baseline_prepare);
    EXPECT_NE(w.shape.find(", 16 calls in one graph, programmatic"), std::string::npos);
    EXPECT_LE(w.cost.bytes, 16 * 8.0 * (1 << 20));
    ++ops[w.op];
  }
  for (const char* op : {"rms_norm", "fused_add_rms_norm", "rope", "rope_kv_cache_write", "kv_cache_write", "silu_mul",
                         "silu_mul_quant_mx", "quant_fp8_group", "dequant_fp8_group", "quant_mx"})
    EXPECT_GT(ops[op], 0) << op;
  // A source row's cost times 16: the first rms_norm row is T=1.
  for (const Workload& src : all_rows("norm")) {
    if (src.op != "rms_norm" || src.model != models.front().name) continue;
    EXPECT_EQ(rows.front().op, "rms_norm");
    EXPECT_DOUBLE_EQ(rows.front().cost.bytes, 16 * src.cost.bytes);
    break;
  }
  const auto chosen = tejas::bench::suite_workloads("pdl", {&models[1]});
  ASSERT_FALSE(chosen.empty());
  EXPECT_EQ(chosen.front().model, models[1].name);
  if (tejas::check::cuda_available()) return;
  DeviceArena arena(kArenaSeed);
  std::function<Status()> launch;
  EXPECT_FALSE(rows.front().prepare(arena, &launch).ok());  // unsupported, or the runtime's error
}
