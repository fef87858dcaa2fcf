// The "pdl" suite: programmatic dependent launch (ExecContext::pdl) against plain stream order
// where it can matter, at decode sizes. Each row takes a row of the norm, rope, activation or
// quant suite whose tensors total at most kMaxChainRowBytes and runs its call kChain times back to
// back from one CUDA graph, as a serving engine's captured decode step runs its kernels: the row
// with every launch programmatic, its baseline the same graph without. What differs is only the
// boundary between consecutive kernels (the next one's launch and first CTAs overlapping the last
// CTAs of the one before), so x_baseline is that saving over kChain - 1 boundaries. The calls
// repeat on the same tensors: each waits for the one before (griddepcontrol.wait), as dependent
// ops do. Costs are kChain times the row's, but only the first call follows the L2 flush: the
// later ones find the row's tensors (at most 8 MiB) in L2, so a row's GB/s and % of floor are not
// comparable with other suites' (they may pass the HBM ceiling); x_baseline is the figure to read.
// A programmatic row whose calls made no programmatic launch (a GPU below sm_90, or code compiled
// from compute_80) is unsupported, not timed: its baseline would be the same graph.
#include <memory>
#include <string>

#include "bench/suites.h"

#if TEJAS_WITH_CUDA
#include <cuda_runtime_api.h>

#include "ops/common/cuda_check.h"
#include "ops/common/launch_kernel.h"
#endif

namespace tejas::bench {
namespace {

inline constexpr int kChain = 16;
inline constexpr double kMaxChainRowBytes = 8.0 * (1 << 20);  // ~2 us of HBM traffic at 4.3 TB/s

#if TEJAS_WITH_CUDA
// A captured chain: its stream (capture needs one other than the legacy stream) and graph.
struct Chain {
  cudaStream_t stream = nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~Chain() {
    if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    if (stream != nullptr) (void)cudaStreamDestroy(stream);
  }
};

constexpr const char* kSuite = "pdl suite";

Status cuda(cudaError_t e, const char* what) { return detail::cuda_status(kSuite, e, what); }

// Prepares `row` once and captures kChain calls of its launch (cuda_ctx() answering with the
// capture's stream and `pdl`) into a graph, which the returned launch runs on the legacy stream.
Status prepare_chain(const Prepare& row, bool pdl, DeviceArena& a, std::function<Status()>* launch) {
  std::function<Status()> one;
  TEJAS_RETURN_IF_ERROR(row(a, &one));
  TEJAS_RETURN_IF_ERROR(cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize"));  // the arena's fills
  auto chain = std::make_shared<Chain>();
  TEJAS_RETURN_IF_ERROR(cuda(cudaStreamCreateWithFlags(&chain->stream, cudaStreamNonBlocking), "cudaStreamCreate"));
  ExecContext ctx = cuda_ctx();
  ctx.stream = chain->stream;
  ctx.pdl = pdl;
  const ScopedBenchContext scope(ctx);
  // One eager call as captured, so that its first-call queries (occupancy, programmatic launch)
  // happen outside the capture.
  const int64_t programmatic = detail::programmatic_launches();
  TEJAS_RETURN_IF_ERROR(one());
  TEJAS_RETURN_IF_ERROR(cuda(cudaStreamSynchronize(chain->stream), "cudaStreamSynchronize"));
  if (pdl && detail::programmatic_launches() == programmatic)
    return Status::Unsupported(
        "no launch was programmatic (a GPU below sm_90, or code compiled from compute_80): nothing to compare");
  TEJAS_RETURN_IF_ERROR(cuda(cudaStreamBeginCapture(chain->stream, cudaStreamCaptureModeGlobal), "begin capture"));
  Status called = Status::Ok();
  for (int i = 0; i < kChain && called.ok(); ++i) called = one();
  const Status ended = cuda(cudaStreamEndCapture(chain->stream, &chain->graph), "end capture");
  if (!called.ok() || !ended.ok()) (void)cudaGetLastError();  // a failed capture's error stays here
  TEJAS_RETURN_IF_ERROR(called);
  TEJAS_RETURN_IF_ERROR(ended);
  TEJAS_RETURN_IF_ERROR(cuda(cudaGraphInstantiate(&chain->exec, chain->graph, 0), "cudaGraphInstantiate"));
  *launch = [chain] { return cuda(cudaGraphLaunch(chain->exec, nullptr), "cudaGraphLaunch"); };
  return Status::Ok();
}
#else
Status prepare_chain(const Prepare&, bool, DeviceArena&, std::function<Status()>*) {
  return Status::Unsupported("built without CUDA (host-only build)");
}
#endif

}  // namespace

void add_pdl_rows(const ModelShape& m, std::vector<Workload>& out) {
  std::vector<Workload> rows;
  add_norm_rows(m, rows);
  add_norm_fused_rows(m, rows);
  add_rope_rows(m, rows);
  add_rope_fused_rows(m, rows);
  add_activation_rows(m, rows);
  add_activation_fused_rows(m, rows);
  add_quant_rows(m, rows);
  for (Workload& r : rows) {
    if (r.cost.bytes > kMaxChainRowBytes || !r.prepare) continue;
    Workload w;
    w.suite = "pdl";
    w.op = r.op;
    w.model = r.model;
    w.shape = cat(r.shape, ", ", kChain, " calls in one graph, programmatic");
    w.cost.flops = r.cost.flops * kChain;
    w.cost.bytes = r.cost.bytes * kChain;
    w.check_op = r.check_op;
    w.baseline = cat("the same ", kChain, " calls in stream order");
    const Prepare one = r.prepare;
    w.prepare = [one](DeviceArena& a, std::function<Status()>* launch) { return prepare_chain(one, true, a, launch); };
    w.baseline_prepare = [one](DeviceArena& a, std::function<Status()>* launch) {
      return prepare_chain(one, false, a, launch);
    };
    out.push_back(std::move(w));
  }
}

}  // namespace tejas::bench
