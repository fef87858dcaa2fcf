// The ceiling and baseline suites (device copy, cuBLASLt GEMMs) and suite dispatch.
#include <sstream>

#include "bench/cublaslt.h"
#include "bench/suites.h"
#include "check/cuda_mem.h"
#include "ops/probe/probe.h"

#if TEJAS_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace tejas::bench {
namespace {
constexpr int64_t kPeakGemmDim = 8192;
constexpr int64_t kMiB = int64_t{1} << 20;
// GEMM token counts: decode (1, 16) through prefill chunks (8192).
constexpr int64_t kGemmTokens[] = {1, 16, 128, 1024, 8192};
// DeepSeek-V3 block-scaled rows: decode, a small batch, a prefill chunk.
constexpr int64_t kDeepSeekTokens[] = {1, 64, 4096};
constexpr GemmKind kDeepSeekKinds[] = {GemmKind::fp8_block128, GemmKind::mxfp8, GemmKind::nvfp4};
// DeepSeek-V3 dimensions that ModelShape does not carry (the model's config.json): MLA ranks and
// head splits, and the dense FFN of its first layers.
constexpr int64_t kDsQLoraRank = 1536, kDsKvLoraRank = 512;
constexpr int64_t kDsQkNopeDim = 128, kDsRopeDim = 64, kDsVDim = 128;
constexpr int64_t kDsDenseFfn = 18432;

std::string gemm_shape(int64_t M, int64_t N, int64_t K) {
  std::ostringstream os;
  os << "M=" << M << " N=" << N << " K=" << K;
  return os.str();
}

// Row op names are the JSON keys baselines attach to; the first two predate the other kinds.
std::string gemm_op(GemmKind kind) {
  switch (kind) {
    case GemmKind::bf16: return "gemm_bf16_cublaslt";
    case GemmKind::fp8_per_tensor: return "gemm_fp8_cublaslt";
    default: return std::string("gemm_") + gemm_kind_name(kind) + "_cublaslt";
  }
}

const char* gemm_dtypes(GemmKind kind) {
  switch (kind) {
    case GemmKind::bf16: return " bf16";
    case GemmKind::fp8_per_tensor: return " e4m3 per-tensor";
    case GemmKind::fp8_block128: return " e4m3 1x128/128x128 f32 scales";
    case GemmKind::mxfp8: return " e4m3 1x32 ue8m0 scales";
    case GemmKind::nvfp4: return " e2m1 1x16 ue4m3 scales";
  }
  return "";
}

Workload gemm_row(const std::string& model, const std::string& what, int64_t M, int64_t N, int64_t K,
                  GemmKind kind) {
  Workload w;
  w.suite = "gemm";
  w.op = gemm_op(kind);
  w.model = model;
  w.shape = (what.empty() ? "" : what + " ") + gemm_shape(M, N, K) + gemm_dtypes(kind);
  // The floor is the workload's; the timing is what cuBLASLt needs for it (padded tokens).
  if (const int64_t run = gemm_run_tokens(kind, M); run != M)
    w.shape += " (cuBLASLt runs M=" + std::to_string(run) + ")";
  w.cost = gemm_cost(kind, M, N, K);
  w.prepare = [=](DeviceArena& a, std::function<Status()>* launch) { return prepare_gemm(kind, M, N, K, a, launch); };
  return w;
}

// DeepSeek-V3's per-layer projections (N, K), FP8 weights in 128x128 blocks.
std::vector<GemmShape> deepseek_projections(const ModelShape& m, int64_t tokens) {
  const int64_t H = m.hidden, heads = m.q_heads;
  return {
      {"q_a", tokens, kDsQLoraRank, H},
      {"q_b", tokens, heads * (kDsQkNopeDim + kDsRopeDim), kDsQLoraRank},
      {"kv_a", tokens, kDsKvLoraRank + kDsRopeDim, H},
      {"kv_b", tokens, heads * (kDsQkNopeDim + kDsVDim), kDsKvLoraRank},
      {"o", tokens, H, heads * kDsVDim},
      {"dense_gate_up", tokens, 2 * kDsDenseFfn, H},
      {"dense_down", tokens, H, kDsDenseFfn},
      {"expert_gate_up", tokens, 2 * m.ffn, H},
      {"expert_down", tokens, H, m.ffn},
  };
}
}  // namespace

void add_gemm_rows(const ModelShape& m, std::vector<Workload>& out) {
  if (std::string_view(m.name) == "deepseek-v3") {
    // MLA projections are not the q/k/v/o GEMMs of layer_gemms(); its GEMMs run block-scaled.
    for (int64_t T : kDeepSeekTokens)
      for (const GemmShape& g : deepseek_projections(m, T))
        for (GemmKind kind : kDeepSeekKinds) out.push_back(gemm_row(m.name, g.what, g.M, g.N, g.K, kind));
    return;
  }
  for (int64_t T : kGemmTokens)
    for (const GemmShape& g : layer_gemms(m, T))
      for (GemmKind kind : {GemmKind::bf16, GemmKind::fp8_per_tensor})
        out.push_back(gemm_row(m.name, g.what, g.M, g.N, g.K, kind));
}

Workload peak_gemm(bool fp8) {
  return gemm_row("", "peak", kPeakGemmDim, kPeakGemmDim, kPeakGemmDim,
                  fp8 ? GemmKind::fp8_per_tensor : GemmKind::bf16);
}

void add_copy_rows(std::vector<Workload>& out) {
  for (int64_t mib : {int64_t{1}, int64_t{64}, int64_t{1024}, int64_t{4096}}) {
    Workload w;
    w.suite = "memcpy";
    w.op = "copy_d2d";
    w.shape = std::to_string(mib) + " MiB";
    const int64_t bytes = mib * kMiB;
    w.cost = cost_copy(bytes);
    w.prepare = [bytes](DeviceArena& a, std::function<Status()>* launch) {
      void *src = nullptr, *dst = nullptr;
      TEJAS_RETURN_IF_ERROR(a.bytes(static_cast<size_t>(bytes), &src));
      TEJAS_RETURN_IF_ERROR(a.bytes(static_cast<size_t>(bytes), &dst));
#if TEJAS_WITH_CUDA
      *launch = [=] {
        const cudaError_t e = cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice);
        return e == cudaSuccess ? Status::Ok() : Status::CudaError(cudaGetErrorString(e));
      };
      return Status::Ok();
#else
      (void)launch;
      return Status::Unsupported("built without CUDA (host-only build)");
#endif
    };
    out.push_back(std::move(w));
  }
  add_stream_copy_rows(out);
}

// The bytes-in-flight calibration (src/ops/probe, docs/kernels/stream_copy.md). Copies of 256 MiB
// whose threads each load `vecs` 16-byte vectors before storing them, with `blocks` blocks of 256
// threads allowed per SM (blocks x vecs x 4 KiB of loads in flight per SM, 4 to 128 KiB; 8 x 8
// is left out: 52 registers leave room for 4 blocks): the 1 : 1 curve.
// Then the read-heavy (2 : 1, 4 : 1: gated activations, quantization) and write-heavy (1 : 2,
// 1 : 4: dequantization) mixes over 128 MiB planes at 32 and 64 KiB in flight (four loads per
// thread, 2 and 4 blocks): where each mix's ceiling lies against the copy's; and the read pass
// (1 : 0, 256 MiB, the same two points: the read ceiling, and `--flush clean`'s pass, whose
// one 16-byte vector per warp adds 1/128 to its bytes). Then the cp.async
// mode's copies (blocks x stages x vecs x 4 KiB in flight per SM, held in shared memory). A row
// whose blocks cannot all be resident (registers, shared memory) is unsupported, saying how many
// can.
namespace {

Workload stream_row(int reads, int writes, int blocks, int vecs, int64_t plane_bytes, int stages = 0) {
  Workload w;
  w.suite = "memcpy";
  w.op = "stream_copy";
  const int64_t in_flight_kib =
      int64_t{blocks} * probe::kThreads * reads * vecs * (stages > 0 ? stages : 1) * probe::kVecBytes / 1024;
  const std::string per_thread = stages > 0 ? cat("cp.async ", stages, " stages x ", vecs, " x 16 B")
                                 : reads == 1 ? cat(vecs, " x 16 B")
                                              : cat(reads, " x ", vecs, " x 16 B");
  w.shape = reads == 1 && writes == 1
                ? cat(plane_bytes / kMiB, " MiB, ", blocks, " x 256 threads per SM, ", per_thread, " per thread: ",
                      in_flight_kib, " KiB of loads in flight per SM")
                : cat(plane_bytes / kMiB, " MiB planes, ", reads, " read : ", writes, " written, ", blocks,
                      " x 256 threads per SM, ", per_thread, " per thread: ", in_flight_kib,
                      " KiB of loads in flight per SM");
  // The read pass writes one 16-byte vector per warp.
  const int64_t dst_bytes =
      writes > 0 ? plane_bytes * writes : probe::stream_read_sink_bytes(plane_bytes / probe::kVecBytes, vecs);
  w.cost.bytes = static_cast<double>(plane_bytes * reads + dst_bytes);
  w.prepare = [=](DeviceArena& a, std::function<Status()>* launch) {
    void *src = nullptr, *dst = nullptr;
    TEJAS_RETURN_IF_ERROR(a.bytes(static_cast<size_t>(plane_bytes * reads), &src));
    TEJAS_RETURN_IF_ERROR(a.bytes(static_cast<size_t>(dst_bytes), &dst));
    const int device = check::current_device_index();
    const TensorView s = TensorView::contiguous(src, DType::u8, {plane_bytes * reads}, Device::cuda, device);
    const TensorView d = TensorView::contiguous(dst, DType::u8, {dst_bytes}, Device::cuda, device);
    probe::StreamCopyOptions o{vecs, blocks, reads, writes};
    o.stages = stages;
    probe::StreamCopyLaunch l;
    TEJAS_RETURN_IF_ERROR(probe::stream_copy(cuda_ctx(), s, d, o, &l));
    if (l.resident_blocks_per_sm < blocks)
      return Status::Unsupported(cat("stream_copy: ", blocks, " blocks per SM asked, only ", l.resident_blocks_per_sm,
                                     " fit (registers, threads or shared memory)"));
    if (l.resident_blocks_per_sm > blocks)
      return Status::Internal(cat("stream_copy: ", blocks, " blocks per SM asked, ", l.resident_blocks_per_sm,
                                  " resident: the shared-memory cap did not hold"));
    *launch = [s, d, o] { return probe::stream_copy(cuda_ctx(), s, d, o); };
    return Status::Ok();
  };
  return w;
}

}  // namespace

void add_stream_copy_rows(std::vector<Workload>& out) {
  for (int blocks : {1, 2, 4, 8})
    for (int vecs : {1, 2, 4, 8})
      if (blocks * vecs <= 32)  // 8 x 8: 52 registers leave room for 4 blocks of 256 threads
        out.push_back(stream_row(1, 1, blocks, vecs, 256 * kMiB));
  constexpr int kMixes[][2] = {{2, 1}, {4, 1}, {1, 2}, {1, 4}};
  for (const auto& mix : kMixes)
    for (int blocks : {2, 4}) out.push_back(stream_row(mix[0], mix[1], blocks, 4 / mix[0], 128 * kMiB));
  for (int blocks : {2, 4}) out.push_back(stream_row(1, 0, blocks, 4, 256 * kMiB));  // the read pass
  // The cp.async mode (the norm.pipeline kernels' way): persistent blocks, stages x vecs vectors
  // per thread in flight in shared memory, 32 to 128 KiB per SM, past what registers allow.
  constexpr int kAsync[][3] = {{4, 2, 1}, {4, 4, 1}, {4, 2, 2}, {4, 4, 2}, {8, 2, 1}, {8, 4, 1}, {2, 4, 2}, {2, 4, 4}};
  for (const auto& a : kAsync) out.push_back(stream_row(1, 1, a[0], a[2], 256 * kMiB, a[1]));
}

const std::vector<std::string>& suite_names() {
  static const std::vector<std::string> names = {"norm", "rope",      "activation", "quant",
                                                 "pdl",  "attention", "memcpy",     "gemm"};
  return names;
}

bool is_suite(std::string_view name) {
  for (const auto& s : suite_names())
    if (s == name) return true;
  return false;
}

std::vector<Workload> suite_workloads(std::string_view suite, const std::vector<const ModelShape*>& chosen) {
  std::vector<const ModelShape*> ms = chosen;
  if (ms.empty()) {
    for (const auto& m : models()) ms.push_back(&m);
    if (suite == "norm") ms.push_back(&norm_limit_model());  // last: the first rows cut by --time-limit
  }
  const ModelShape* limit = &norm_limit_model();
  std::vector<Workload> out;
  if (suite == "memcpy") {
    add_copy_rows(out);
    return out;
  }
  for (const ModelShape* m : ms) {
    if (m == limit && suite != "norm") continue;  // its other shapes are not production shapes here
    // A TP rank normalizes (and quantizes for QKV) the whole hidden row: the TP-1 rows already.
    if (m->tp > 1 && (suite == "norm" || suite == "quant")) continue;
    // The pdl suite's question is the same for every model: one model unless models are chosen.
    if (suite == "pdl" && chosen.empty() && m != &models().front()) continue;
    if (suite == "norm") {
      add_norm_rows(*m, out);
      add_norm_fused_rows(*m, out);
    }
    else if (suite == "rope") {
      add_rope_rows(*m, out);
      add_rope_fused_rows(*m, out);
    } else if (suite == "activation") {
      add_activation_rows(*m, out);
      add_activation_fused_rows(*m, out);
    }
    else if (suite == "quant") add_quant_rows(*m, out);
    else if (suite == "pdl") add_pdl_rows(*m, out);
    else if (suite == "attention") add_attention_rows(*m, out);
    else if (suite == "gemm") add_gemm_rows(*m, out);
  }
  return out;
}

}  // namespace tejas::bench
