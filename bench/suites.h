// Benchmark suites: the workload rows (op, model, shape, FLOPs/bytes) and, for GPU runs, how to
// allocate each row's tensors and launch it.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "bench/device_arena.h"
#include "bench/floors.h"
#include "bench/workloads.h"
#include "runtime/scoped_set.h"
#include "tejas/context.h"

namespace tejas::bench {

// GPU only: allocates the row's tensors in `arena` and returns a launch on the cuda backend.
using Prepare = std::function<Status(DeviceArena& arena, std::function<Status()>* launch)>;

struct Workload {
  std::string suite;  // "norm"
  std::string op;     // "rms_norm", "gemm_bf16", "copy_d2d"
  std::string model;  // "llama-3.1-8b" ("" for model-free rows)
  std::string shape;  // "T=16 H=4096 bf16"
  Cost cost;
  std::string check_op;  // the `tejas check` op that validates this kernel ("" for baselines)
  // Name of the baseline compared with this row ("" none). Fused ops name their unfused sequence
  // ("unfused: silu_mul + quant_fp8_group"); see docs/tools.md.
  std::string baseline;
  Prepare prepare;
  // The baseline's launch, prepared in the row's arena and timed right beside it; absent when
  // the row has no baseline (or one timed outside the C++ harness). Set => `baseline` is named.
  Prepare baseline_prepare;
};

// Times one launch: its median in microseconds (bench::time_launch on a GPU; tests pass fakes).
using LaunchTimer = std::function<Status(const std::function<Status()>& launch, double* median_us)>;

struct RowTiming {
  std::optional<double> us;           // ours, when measured
  std::optional<double> baseline_us;  // the baseline's, when measured (never estimated)
  // "measured", "unsupported: ...", "error: ...", then "; baseline unsupported: ..." or
  // "; baseline error: ..." when the baseline was not measured.
  std::string status;
  bool error = false;  // a launch or preparation failed other than as unsupported
};

// Prepares w and its baseline in `arena`, then times ours and, right after, the baseline with
// the same `timer` (so both get the same warm-up, L2 flush and median). The baseline is skipped
// when ours failed with an error (the device may be unusable after it).
RowTiming time_workload(const Workload& w, DeviceArena& arena, const LaunchTimer& timer);

// norm, rope, activation, quant, pdl, attention, memcpy, gemm.
const std::vector<std::string>& suite_names();
// The suites `tejas bench` runs by default: all of the above.
bool is_suite(std::string_view name);

// Rows of one suite for the given models (empty = every model).
std::vector<Workload> suite_workloads(std::string_view suite, const std::vector<const ModelShape*>& models);

// Per-family builders (suites_ops.cpp, suites_base.cpp).
void add_norm_rows(const ModelShape& m, std::vector<Workload>& out);
void add_rope_rows(const ModelShape& m, std::vector<Workload>& out);
void add_norm_fused_rows(const ModelShape& m, std::vector<Workload>& out);
Cost cost_fused_add_rms_norm_quant_fp8_group(int64_t T, int64_t H);
void add_activation_rows(const ModelShape& m, std::vector<Workload>& out);
void add_activation_fused_rows(const ModelShape& m, std::vector<Workload>& out);
void add_rope_fused_rows(const ModelShape& m, std::vector<Workload>& out);
void add_quant_rows(const ModelShape& m, std::vector<Workload>& out);
// The pdl suite (suites_pdl.cpp): the decode-sized rows of the four kernel suites above as
// graphs of back-to-back calls, programmatic against stream order.
void add_pdl_rows(const ModelShape& m, std::vector<Workload>& out);
void add_attention_rows(const ModelShape& m, std::vector<Workload>& out);
void add_gemm_rows(const ModelShape& m, std::vector<Workload>& out);
void add_copy_rows(std::vector<Workload>& out);         // copy_d2d, then the stream_copy rows
void add_stream_copy_rows(std::vector<Workload>& out);  // bytes in flight per SM against bandwidth
// The 8192^3 GEMMs whose throughput is the compute ceiling (roofline).
Workload peak_gemm(bool fp8);

// ---- helpers for the suite builders (suites_*.cpp) ----
// The context every benchmark launch runs with: the cuda backend, the legacy stream; while a
// ScopedBenchContext is alive on the thread, its context instead (the pdl suite's capture: its
// stream and programmatic launch).
inline thread_local const ExecContext* g_bench_ctx = nullptr;
inline ExecContext cuda_ctx() {
  if (g_bench_ctx != nullptr) return *g_bench_ctx;
  ExecContext c;
  c.backend = Backend::cuda;
  return c;
}
class ScopedBenchContext : detail::ScopedSet<const ExecContext*> {
 public:
  explicit ScopedBenchContext(const ExecContext& ctx) : ScopedSet(g_bench_ctx, &ctx) {}
};
// Shape and name strings: the arguments streamed one after another.
template <class... A>
std::string cat(const A&... a) {
  std::ostringstream os;
  (os << ... << a);
  return os.str();
}

// Largest working set a benchmark row may allocate; larger decode rows are listed with their
// floors but not run.
inline constexpr double kMaxRowBytes = 48.0 * (1ull << 30);

}  // namespace tejas::bench
