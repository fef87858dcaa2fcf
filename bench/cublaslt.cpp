#include "bench/cublaslt.h"

#include <memory>
#include <string>

#if TEJAS_WITH_CUDA
#include <cublasLt.h>
#include <cuda_runtime.h>
#endif

namespace tejas::bench {

const char* gemm_kind_name(GemmKind k) { return k == GemmKind::bf16 ? "bf16" : "fp8_per_tensor"; }

#if TEJAS_WITH_CUDA
namespace {
constexpr size_t kWorkspaceBytes = size_t{32} << 20;  // cuBLASLt's recommended size on Hopper

Status check_lt(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return Status::CudaError(std::string("cuBLASLt ") + what + ": status " + std::to_string(static_cast<int>(s)));
}

// Owns the handle and descriptors for the lifetime of the launch closure.
struct LtGemm {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulHeuristicResult_t algo{};
  void *A = nullptr, *B = nullptr, *D = nullptr, *workspace = nullptr;
  float alpha = 1.0f, beta = 0.0f;
  ~LtGemm() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
    if (handle) cublasLtDestroy(handle);
  }
  Status run() const {
    return check_lt(cublasLtMatmul(handle, op, &alpha, A, a, B, b, &beta, D, d, D, d, &algo.algo, workspace,
                                   kWorkspaceBytes, nullptr),
                    "matmul");
  }
};
}  // namespace

Status prepare_gemm(GemmKind kind, int64_t M, int64_t N, int64_t K, DeviceArena& arena,
                    std::function<Status()>* launch) {
  auto g = std::make_shared<LtGemm>();
  const bool fp8 = kind == GemmKind::fp8_per_tensor;
  const DType in = fp8 ? DType::e4m3 : DType::bf16;
  const cudaDataType_t in_type = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  TensorView A, B, D;
  // Column-major "TN" (the layout fp8 requires): A stored K x M, B stored K x N, D M x N.
  TEJAS_RETURN_IF_ERROR(arena.random(in, {M, K}, &A));
  TEJAS_RETURN_IF_ERROR(arena.random(in, {N, K}, &B));
  TEJAS_RETURN_IF_ERROR(arena.empty(DType::bf16, {N, M}, &D));
  TEJAS_RETURN_IF_ERROR(arena.bytes(kWorkspaceBytes, &g->workspace));
  g->A = A.data;
  g->B = B.data;
  g->D = D.data;
  TEJAS_RETURN_IF_ERROR(check_lt(cublasLtCreate(&g->handle), "create"));
  TEJAS_RETURN_IF_ERROR(check_lt(cublasLtMatmulDescCreate(&g->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc"));
  const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
  TEJAS_RETURN_IF_ERROR(check_lt(
      cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa)), "transa"));
  TEJAS_RETURN_IF_ERROR(check_lt(
      cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof(transb)), "transb"));
  if (fp8) {
    // Per-tensor scales of 1 (device pointers, as cuBLASLt requires).
    check::HostTensor one(DType::f32, {1});
    one.set_flat(0, 1.0);
    TensorView sa, sb;
    TEJAS_RETURN_IF_ERROR(arena.upload(one, &sa));
    TEJAS_RETURN_IF_ERROR(arena.upload(one, &sb));
    TEJAS_RETURN_IF_ERROR(check_lt(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                                                   &sa.data, sizeof(sa.data)),
                                   "a scale"));
    TEJAS_RETURN_IF_ERROR(check_lt(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                                                   &sb.data, sizeof(sb.data)),
                                   "b scale"));
  }
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  TEJAS_RETURN_IF_ERROR(check_lt(cublasLtMatrixLayoutCreate(&g->a, in_type, u(K), u(M), K), "layout a"));
  TEJAS_RETURN_IF_ERROR(check_lt(cublasLtMatrixLayoutCreate(&g->b, in_type, u(K), u(N), K), "layout b"));
  TEJAS_RETURN_IF_ERROR(check_lt(cublasLtMatrixLayoutCreate(&g->d, CUDA_R_16BF, u(M), u(N), M), "layout d"));
  TEJAS_RETURN_IF_ERROR(check_lt(cublasLtMatmulPreferenceCreate(&g->pref), "preference"));
  const uint64_t ws = kWorkspaceBytes;
  TEJAS_RETURN_IF_ERROR(check_lt(cublasLtMatmulPreferenceSetAttribute(g->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                                      &ws, sizeof(ws)),
                                 "workspace"));
  int found = 0;
  TEJAS_RETURN_IF_ERROR(check_lt(
      cublasLtMatmulAlgoGetHeuristic(g->handle, g->op, g->a, g->b, g->d, g->d, g->pref, 1, &g->algo, &found),
      "heuristic"));
  if (found == 0) return Status::Unsupported(std::string("cuBLASLt has no algorithm for ") + gemm_kind_name(kind));
  *launch = [g] { return g->run(); };
  return Status::Ok();
}
#else
Status prepare_gemm(GemmKind, int64_t, int64_t, int64_t, DeviceArena&, std::function<Status()>*) {
  return Status::Unsupported("built without CUDA (host-only build)");
}
#endif

}  // namespace tejas::bench
