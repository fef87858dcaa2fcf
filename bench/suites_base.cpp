// The ceiling and baseline suites (device copy, cuBLASLt GEMMs) and suite dispatch.
#include <sstream>

#include "bench/cublaslt.h"
#include "bench/suites.h"

#if TEJAS_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace tejas::bench {
namespace {
constexpr int64_t kPeakGemmDim = 8192;
constexpr int64_t kMiB = int64_t{1} << 20;
// GEMM token counts: decode (1, 16) through prefill chunks (8192).
constexpr int64_t kGemmTokens[] = {1, 16, 128, 1024, 8192};

std::string gemm_shape(int64_t M, int64_t N, int64_t K) {
  std::ostringstream os;
  os << "M=" << M << " N=" << N << " K=" << K;
  return os.str();
}

Workload gemm_row(const std::string& model, const std::string& what, int64_t M, int64_t N, int64_t K, bool fp8) {
  Workload w;
  w.suite = "gemm";
  w.op = fp8 ? "gemm_fp8_cublaslt" : "gemm_bf16_cublaslt";
  w.model = model;
  w.shape = (what.empty() ? "" : what + " ") + gemm_shape(M, N, K) + (fp8 ? " e4m3 per-tensor" : " bf16");
  const DType in = fp8 ? DType::e4m3 : DType::bf16;
  w.cost = cost_gemm(M, N, K, in, in, DType::bf16);
  w.prepare = [=](DeviceArena& a, std::function<Status()>* launch) {
    return prepare_gemm(fp8 ? GemmKind::fp8_per_tensor : GemmKind::bf16, M, N, K, a, launch);
  };
  return w;
}
}  // namespace

void add_gemm_rows(const ModelShape& m, std::vector<Workload>& out) {
  if (m.head_dim == 576) return;  // MLA projections are not the q/k/v/o GEMMs of layer_gemms()
  for (int64_t T : kGemmTokens)
    for (const GemmShape& g : layer_gemms(m, T))
      for (bool fp8 : {false, true}) out.push_back(gemm_row(m.name, g.what, g.M, g.N, g.K, fp8));
}

Workload peak_gemm(bool fp8) { return gemm_row("", "peak", kPeakGemmDim, kPeakGemmDim, kPeakGemmDim, fp8); }

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
}

const std::vector<std::string>& suite_names() {
  static const std::vector<std::string> names = {"norm", "rope", "activation", "quant", "attention", "memcpy", "gemm"};
  return names;
}

bool is_suite(std::string_view name) {
  for (const auto& s : suite_names())
    if (s == name) return true;
  return false;
}

std::vector<Workload> suite_workloads(std::string_view suite, const std::vector<const ModelShape*>& chosen) {
  std::vector<const ModelShape*> ms = chosen;
  if (ms.empty())
    for (const auto& m : models()) ms.push_back(&m);
  std::vector<Workload> out;
  if (suite == "memcpy") {
    add_copy_rows(out);
    return out;
  }
  for (const ModelShape* m : ms) {
    if (suite == "norm") add_norm_rows(*m, out);
    else if (suite == "rope") add_rope_rows(*m, out);
    else if (suite == "activation") add_activation_rows(*m, out);
    else if (suite == "quant") add_quant_rows(*m, out);
    else if (suite == "attention") add_attention_rows(*m, out);
    else if (suite == "gemm") add_gemm_rows(*m, out);
  }
  return out;
}

}  // namespace tejas::bench
