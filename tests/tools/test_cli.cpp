// The `tejas` command line in-process: flags (good, bad, --help on every command), exit codes,
// and the no-GPU path end to end (check on each host backend, bench, roofline, info).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "check/cuda_mem.h"
#include "tools/tejas/cli.h"
#include "tools/tejas/flags.h"

using tejas::cli::run;

namespace {
struct Result {
  int code;
  std::string out, err;
};
Result tejas_cmd(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = run(args, out, err);
  return {code, out.str(), err.str()};
}
bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }
}  // namespace

TEST(Flags, ParsesValuesBooleansAndInlineValues) {
  using namespace tejas::cli;
  const std::vector<FlagSpec> specs = {{"seed", "N", ""}, {"list", "", ""}, {"op", "NAME", ""}};
  Flags f;
  std::string error;
  ASSERT_TRUE(f.parse(specs, {"--seed", "7", "--list", "--op=rope"}, &error)) << error;
  EXPECT_EQ(f.get("seed"), "7");
  EXPECT_TRUE(f.has("list"));
  EXPECT_EQ(f.get("op"), "rope");
  EXPECT_EQ(f.get("missing", "dflt"), "dflt");
  EXPECT_FALSE(f.help());
}

TEST(Flags, ErrorsNameTheFlag) {
  using namespace tejas::cli;
  const std::vector<FlagSpec> specs = {{"seed", "N", ""}, {"list", "", ""}};
  std::string error;
  EXPECT_FALSE(Flags().parse(specs, {"--bogus"}, &error));
  EXPECT_TRUE(has(error, "--bogus")) << error;
  EXPECT_FALSE(Flags().parse(specs, {"--seed"}, &error));
  EXPECT_TRUE(has(error, "--seed")) << error;
  EXPECT_FALSE(Flags().parse(specs, {"--seed", "--list"}, &error));
  EXPECT_TRUE(has(error, "--seed")) << error;
  EXPECT_FALSE(Flags().parse(specs, {"--list=1"}, &error));
  EXPECT_TRUE(has(error, "--list")) << error;
  EXPECT_FALSE(Flags().parse(specs, {"stray"}, &error));
  EXPECT_TRUE(has(error, "stray")) << error;
  EXPECT_FALSE(Flags().parse(specs, {"--seed="}, &error));
  EXPECT_TRUE(has(error, "--seed")) << error;
}

TEST(Flags, NumbersAndLists) {
  using namespace tejas::cli;
  uint64_t v = 0;
  EXPECT_TRUE(parse_u64("42", &v));
  EXPECT_EQ(v, 42u);
  EXPECT_TRUE(parse_u64("0x10", &v));
  EXPECT_EQ(v, 16u);
  EXPECT_FALSE(parse_u64("-1", &v));
  EXPECT_FALSE(parse_u64("12abc", &v));
  EXPECT_FALSE(parse_u64("", &v));
  EXPECT_EQ(split_list("norm,rope"), (std::vector<std::string>{"norm", "rope"}));
  EXPECT_EQ(split_list("norm,,rope,"), (std::vector<std::string>{"norm", "rope"}));
}

TEST(Cli, HelpEverywhere) {
  Result r = tejas_cmd({"--help"});
  EXPECT_EQ(r.code, 0);
  for (const char* cmd : {"check", "bench", "roofline", "info", "overhead"}) EXPECT_TRUE(has(r.out, cmd)) << r.out;
  for (const char* cmd : {"check", "bench", "roofline", "info", "overhead"}) {
    r = tejas_cmd({cmd, "--help"});
    EXPECT_EQ(r.code, 0) << cmd;
    EXPECT_TRUE(has(r.out, std::string("usage: tejas ") + cmd)) << r.out;
    EXPECT_TRUE(has(r.out, "--help")) << r.out;
  }
  EXPECT_TRUE(has(tejas_cmd({"check", "--help"}).out, "--backend reference"));
}

TEST(Cli, BadFlagsExitTwoAndNameTheFlag) {
  struct Bad {
    std::vector<std::string> args;
    const char* needle;
  };
  const std::vector<Bad> bad = {
      {{}, "usage"},
      {{"frobnicate"}, "frobnicate"},
      {{"check", "--backend", "tpu"}, "--backend"},
      {{"check", "--op", "nope"}, "--op"},
      {{"check", "--seed", "x1"}, "--seed"},
      {{"check", "--frob"}, "--frob"},
      {{"check", "--backend", "emulator", "--graph"}, "--graph"},
      {{"check", "--backend", "reference", "--pdl"}, "--pdl"},
      {{"bench", "--suite", "nope"}, "--suite"},
      {{"bench", "--model", "gpt-5"}, "--model"},
      {{"bench", "--gpu", "a100"}, "--gpu"},
      {{"bench", "--iters", "0"}, "--iters"},
      {{"bench", "--iters"}, "--iters"},
      {{"bench", "--time-limit", "0"}, "--time-limit"},
      {{"bench", "--time-limit", "-3"}, "--time-limit"},
      {{"bench", "--time-limit", "10s"}, "--time-limit"},
      {{"bench", "--time-limit", "1e9"}, "--time-limit"},
      {{"bench", "--suite", "quant", "--filter", "no such row"}, "--filter"},
      {{"bench", "--flush", "memset"}, "--flush: expected dirty, clean or none"},
      {{"bench", "--flush"}, "--flush"},
      {{"roofline", "--gpu", "v100"}, "--gpu"},
      {{"info", "--verbose"}, "--verbose"},
      {{"overhead", "--calls", "0"}, "--calls"},
      {{"overhead", "--calls", "2000000"}, "--calls"},
      {{"overhead", "--op", "nope"}, "--op"},
      {{"overhead", "--seed", "-1"}, "--seed"},
  };
  for (const auto& b : bad) {
    const Result r = tejas_cmd(b.args);
    EXPECT_EQ(r.code, 2) << (b.args.empty() ? "(none)" : b.args[0]) << ": " << r.err;
    EXPECT_TRUE(has(r.err, b.needle)) << r.err;
  }
}

TEST(Cli, CheckListsEveryPublicOp) {
  const Result r = tejas_cmd({"check", "--list"});
  EXPECT_EQ(r.code, 0);
  for (const char* op : {"rms_norm", "fused_add_rms_norm", "rope", "silu_mul", "gelu_tanh_mul", "quant_fp8_group",
                         "dequant_fp8_group", "quant_mx", "dequant_mx", "paged_decode_attention",
                         "merge_attention_states", "merge_attention_states_n"})
    EXPECT_TRUE(has(r.out, std::string(op) + " |")) << op;
}

TEST(Cli, CheckReferenceBackendPassesAndPrintsSeed) {
  const Result r = tejas_cmd({"check", "--backend", "reference", "--seed", "123"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "seed 123")) << r.out;
  EXPECT_TRUE(has(r.out, " 0 FAIL, 0 unsupported")) << r.out;
  EXPECT_FALSE(has(r.out, "| FAIL |")) << r.out;
  EXPECT_TRUE(has(r.err, "[check] rms_norm")) << r.err;  // progress on stderr
}

TEST(Cli, CheckEmulatorNeverClaimsAPassItDidNotSee) {
  // Whatever the emulator supports today, every case is pass, FAIL or unsupported, and an
  // unsupported case is not reported as a pass.
  const Result r = tejas_cmd({"check", "--backend", "emulator", "--op", "rms_norm,merge_attention_states"});
  EXPECT_TRUE(has(r.out, "backend emulator")) << r.out;
  std::istringstream lines(r.out);
  std::string line;
  int cases = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("rms_norm |", 0) != 0 && line.rfind("merge_attention_states |", 0) != 0) continue;
    ++cases;
    const bool pass = has(line, "| pass |"), fail = has(line, "| FAIL |"), unsup = has(line, "| unsupported |");
    EXPECT_EQ(int(pass) + int(fail) + int(unsup), 1) << line;
  }
  EXPECT_GT(cases, 0);
  EXPECT_EQ(r.code, has(r.out, "| FAIL |") ? 1 : 0);
}

TEST(Cli, CheckCudaWithoutGpuIsUnsupportedNotPass) {
  if (tejas::check::cuda_available()) GTEST_SKIP() << "a GPU is present";
  const Result r = tejas_cmd({"check", "--backend", "cuda", "--op", "silu_mul"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "cuda backend not available")) << r.out;
  EXPECT_TRUE(has(r.out, "0 pass, 0 FAIL")) << r.out;
  // Default backend without a GPU is the emulator.
  EXPECT_TRUE(has(tejas_cmd({"check", "--op", "silu_mul"}).out, "backend emulator"));
  // --graph likewise reports unsupported, naming the mode.
  const Result g = tejas_cmd({"check", "--backend", "cuda", "--graph", "--op", "rms_norm"});
  EXPECT_EQ(g.code, 0) << g.out;
  EXPECT_TRUE(has(g.out, "captured CUDA graph")) << g.out;
  EXPECT_TRUE(has(g.out, "0 pass, 0 FAIL")) << g.out;
  // --graph alone picks the cuda backend, whose mode it is.
  const Result d = tejas_cmd({"check", "--graph", "--op", "rms_norm"});
  EXPECT_EQ(d.code, 0) << d.out;
  EXPECT_TRUE(has(d.out, "backend cuda (each call from a captured CUDA graph)")) << d.out;
  // --pdl too, alone or with --graph.
  const Result alone = tejas_cmd({"check", "--pdl", "--op", "silu_mul"});
  EXPECT_EQ(alone.code, 0) << alone.out;
  EXPECT_TRUE(has(alone.out, "backend cuda (programmatic dependent launch")) << alone.out;
  const Result p = tejas_cmd({"check", "--pdl", "--graph", "--op", "silu_mul"});
  EXPECT_EQ(p.code, 0) << p.out;
  EXPECT_TRUE(has(p.out, "backend cuda (each call from a captured CUDA graph) (programmatic dependent launch"))
      << p.out;
  EXPECT_TRUE(has(p.out, "0 pass, 0 FAIL")) << p.out;
}

// --time-limit: rows after the limit are not run but stay in the report, marked. Without the kernel
// checks and with one timed run per row: on a GPU the second call times its rows, and the kernels'
// correctness is their own tests' (this one judges the report only).
TEST(Cli, BenchTimeLimitKeepsTheReport) {
  const std::string json = ::testing::TempDir() + "tejas_time_limit.json";
  const Result r = tejas_cmd({"bench", "--suite", "norm", "--model", "llama-3.1-8b", "--no-check", "--iters", "1",
                              "--time-limit", "0.000001", "--json", json});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "rms_norm | llama-3.1-8b T=16 H=4096 bf16 | - | - | - | ")) << r.out;
  EXPECT_TRUE(has(r.out, "not measured: --time-limit reached")) << r.out;
  EXPECT_TRUE(has(r.out, "s reached: ")) << r.out;
  std::ifstream f(json);
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_TRUE(has(text.str(), "not measured: --time-limit reached")) << "the JSON is written";
  const Result none = tejas_cmd(
      {"bench", "--suite", "norm", "--model", "llama-3.1-8b", "--no-check", "--iters", "1", "--time-limit", "86400"});
  EXPECT_EQ(none.code, 0) << none.err;
  EXPECT_FALSE(has(none.out, "--time-limit reached")) << none.out;
}

// --filter keeps the rows whose "op model shape" contains the text; --no-check skips the validation
// (tools/gpu-check's profile step runs one row under ncu this way). With a GPU the one row is timed.
TEST(Cli, BenchFilterAndNoCheckRunOneRow) {
  const bool gpu = tejas::check::cuda_available();
  const std::string row = "quant_mx deepseek-v3 M=16384 K=7168 bf16 nvfp4";
  const Result r =
      tejas_cmd({"bench", "--suite", "quant", "--model", "deepseek-v3", "--filter", row, "--no-check", "--iters", "3"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "quant_mx | deepseek-v3 M=16384 K=7168 bf16 nvfp4 | ")) << r.out;
  EXPECT_EQ(has(r.out, "quant_mx | deepseek-v3 M=16384 K=7168 bf16 nvfp4 | - | "), !gpu) << r.out;
  EXPECT_EQ(has(r.out, "| measured"), gpu) << r.out;
  EXPECT_FALSE(has(r.out, "bf16 mxfp8")) << r.out;
  EXPECT_FALSE(has(r.out, "quant_fp8_group |")) << r.out;
  EXPECT_TRUE(has(r.out, "kernel checks: skipped (--no-check)")) << r.out;
  EXPECT_TRUE(has(r.err, "[bench] quant: 1 rows")) << r.err;
  EXPECT_FALSE(has(r.err, "[bench] checking")) << r.err;
  // Without --no-check the filtered row's kernel is still validated (the emulator without a GPU,
  // the cuda backend with one).
  const Result checked =
      tejas_cmd({"bench", "--suite", "quant", "--model", "deepseek-v3", "--filter", row, "--iters", "3"});
  EXPECT_EQ(checked.code, 0) << checked.err;
  EXPECT_TRUE(has(checked.out, gpu ? "kernel checks (cuda" : "kernel checks (emulator")) << checked.out;
  EXPECT_TRUE(has(checked.err, "[bench] checking quant_mx")) << checked.err;
}

// --flush: the mode is said (unless the default) and recorded in the JSON; on a GPU the row is
// timed after each mode's flush (the clean one a read pass through stream_copy).
TEST(Cli, BenchFlushModeIsRecorded) {
  const std::string json = ::testing::TempDir() + "tejas_flush.json";
  for (const char* mode : {"", "dirty", "clean", "none"}) {
    std::vector<std::string> args = {"bench", "--suite", "memcpy", "--filter", "copy_d2d 1 MiB"};
    args.insert(args.end(), {"--iters", "2", "--json", json});
    if (*mode) args.insert(args.end(), {"--flush", mode});
    const Result r = tejas_cmd(args);
    EXPECT_EQ(r.code, 0) << mode << ": " << r.err;
    const std::string expect = *mode ? mode : "dirty";
    EXPECT_EQ(has(r.out, "L2 flush: "), expect != "dirty") << r.out;
    if (expect != "dirty") {
      EXPECT_TRUE(has(r.out, "L2 flush: " + expect + " (")) << r.out;
    }
    std::ifstream f(json);
    std::stringstream text;
    text << f.rdbuf();
    EXPECT_TRUE(has(text.str(), "\"l2_flush\":\"" + expect + "\"")) << text.str().substr(0, 400);
    EXPECT_TRUE(has(r.out, "copy_d2d | 1 MiB | ")) << r.out;
    if (tejas::check::cuda_available()) {
      EXPECT_FALSE(has(r.out, "copy_d2d | 1 MiB | - |")) << mode << ": timed\n" << r.out;
    }
  }
  std::remove(json.c_str());
}

TEST(Cli, BenchWithoutGpuShowsFloorsOnly) {
  if (tejas::check::cuda_available()) GTEST_SKIP() << "a GPU is present";
  const Result r = tejas_cmd({"bench", "--suite", "norm,gemm", "--model", "llama-3.1-8b", "--gpu", "h100"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("no GPU: timings not measured; floors for h100 shown", 0), 0u) << r.out;
  EXPECT_TRUE(has(r.out, "op | shape | us | TFLOP/s | GB/s | floor us | % of floor | baseline | x baseline"));
  EXPECT_TRUE(has(r.out, "rms_norm | llama-3.1-8b T=16 H=4096 bf16 | - | - | - | ")) << r.out;
  EXPECT_TRUE(has(r.out, "gemm_bf16_cublaslt | llama-3.1-8b qkv")) << r.out;
  EXPECT_TRUE(has(r.err, "[bench] norm")) << r.err;
  // Every timing column is "-": no row claims a measurement.
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("rms_norm |", 0) == 0 || line.rfind("gemm_", 0) == 0) {
      EXPECT_TRUE(has(line, " | - | - | - | ")) << line;
    }
  }
}

TEST(Cli, RooflineAndInfoWithoutGpu) {
  if (tejas::check::cuda_available()) GTEST_SKIP() << "a GPU is present";
  Result r = tejas_cmd({"roofline", "--suite", "memcpy"});
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(has(r.out, "no GPU")) << r.out;
  EXPECT_TRUE(has(r.out, "4.3 TB/s | 4.8 TB/s | measured before on H200")) << r.out;
  EXPECT_TRUE(has(r.out, "780.0 TFLOP/s | 989.0 TFLOP/s")) << r.out;
  EXPECT_TRUE(has(r.out, "copy_d2d | 1024 MiB")) << r.out;
  r = tejas_cmd({"roofline", "--gpu", "b200", "--suite", "memcpy"});
  EXPECT_TRUE(has(r.out, "9000.0 TFLOP/s")) << r.out;
  r = tejas_cmd({"info"});
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(has(r.out, "tejas 0.1.0")) << r.out;
  EXPECT_TRUE(has(r.out, "compiled CUDA architectures:")) << r.out;
  EXPECT_TRUE(has(r.out, "emulator: fibers ")) << r.out;
  EXPECT_TRUE(has(r.out, "no GPU")) << r.out;
}

// tejas overhead: a row per case of the chosen ops, each with two figures (fastest and median
// round, ns per call) where the cuda path exists, or the call's unsupported message; no GPU needed.
TEST(Cli, OverheadTimesEachCaseOfTheChosenOps) {
  const Result r = tejas_cmd({"overhead", "--op", "silu_mul,merge_attention_states", "--calls", "3"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "best ns/call | median ns/call")) << r.out;
  int timed = 0, unsupported = 0;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("silu_mul | ", 0) == 0) {
#if TEJAS_WITH_CUDA
      const size_t last = line.rfind(" | "), before = line.rfind(" | ", last - 1);
      ASSERT_NE(before, std::string::npos) << line;
      const std::string best = line.substr(before + 3, last - before - 3), median = line.substr(last + 3);
      EXPECT_GT(std::stod(best), 0.0) << line;
      EXPECT_GE(std::stod(median), std::stod(best)) << line;
      ++timed;
#else
      EXPECT_TRUE(has(line, "unsupported")) << line;  // a host-only build has no cuda path
      ++unsupported;
#endif
    } else if (line.rfind("merge_attention_states | ", 0) == 0) {
      EXPECT_TRUE(has(line, "unsupported: merge_attention_states")) << line;
      ++unsupported;
    }
  }
  EXPECT_GT(timed + unsupported, 6) << r.out;
  EXPECT_FALSE(has(r.out, "silu_mul_quant")) << "--op selects whole names only";
}
