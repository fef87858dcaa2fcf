#include "bench/cublaslt.h"

#include <memory>
#include <string>
#include <vector>

#if TEJAS_WITH_CUDA
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstring>

#include "bench/gpu.h"
#include "check/cuda_mem.h"
#include "ops/common/ref_numeric.h"
#endif

namespace tejas::bench {
namespace {
// cuBLAS docs 3.1.4.5: DeepSeek-V3's blocks, 1x128 (activations) and 128x128 (weights).
constexpr int64_t kBlock128 = 128;
// 3.1.4.4: 32-element blocks (MXFP8, ue8m0 scales) and 16-element blocks (NVFP4, ue4m3 scales).
constexpr int64_t kMxfp8Block = 32, kNvfp4Block = 16;
// 3.1.4.5.1: M and N multiples of 4; the 128x128 scales' column stride L rounded up to 4.
constexpr int64_t kBlock128Multiple = 4;
// 3.1.4.4.2: block scales are stored in tiles of 128 (outer: M or N) x 4 (inner: K blocks).
constexpr int64_t kTileOuter = 128, kTileInner = 4;
// 3.4.17 (cublasLtMatmul, fp8 / fp4 kernels): leading dimensions 16-byte aligned.
constexpr int64_t kAlignBytes = 16;
constexpr int kBitsPerByte = 8;
// Compute capabilities as major * 10 + minor.
constexpr int kCcAmpere = 80, kCcAda = 89, kCcHopper = 90, kCcBlackwell = 100;
constexpr int kCcScale = 10;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }
}  // namespace

const char* gemm_kind_name(GemmKind k) {
  switch (k) {
    case GemmKind::bf16: return "bf16";
    case GemmKind::fp8_per_tensor: return "fp8_per_tensor";
    case GemmKind::fp8_block128: return "fp8_block128";
    case GemmKind::mxfp8: return "mxfp8";
    case GemmKind::nvfp4: return "nvfp4";
  }
  return "?";
}

DType gemm_input_dtype(GemmKind k) {
  switch (k) {
    case GemmKind::bf16: return DType::bf16;
    case GemmKind::nvfp4: return DType::e2m1;
    default: return DType::e4m3;
  }
}

int64_t gemm_run_tokens(GemmKind kind, int64_t M) {
  return kind == GemmKind::fp8_block128 ? round_up(M, kBlock128Multiple) : M;
}

GemmScales gemm_scales(GemmKind kind, int64_t M, int64_t N, int64_t K) {
  GemmScales s;
  switch (kind) {
    case GemmKind::bf16: break;
    case GemmKind::fp8_per_tensor:
      s.act_alloc = s.weight_alloc = s.act_logical = s.weight_logical = 1;
      break;
    case GemmKind::fp8_block128: {
      // 3.1.4.5.1, with cuBLASLt's A = the weights (m = N) and B = the activations (n = M):
      // VEC128 on B: N-major (tokens contiguous) [n x L]; BLK128x128 on A: K-major
      // [L4 x ceil(m / 128)], L = ceil(K / 128), L4 = L rounded up to 4.
      s.k_block = kBlock128;
      const int64_t L = ceil_div(K, kBlock128), n_blocks = ceil_div(N, kBlock128);
      s.act_alloc = gemm_run_tokens(kind, M) * L;
      s.weight_alloc = round_up(L, kBlock128Multiple) * n_blocks;
      s.act_logical = M * L;
      s.weight_logical = L * n_blocks;
      break;
    }
    case GemmKind::mxfp8:
    case GemmKind::nvfp4: {
      // 3.1.4.4.2: whole 128 x 4 tiles; padding is allocated (and must read as zero or valid).
      s.dtype = kind == GemmKind::mxfp8 ? DType::ue8m0 : DType::e4m3;
      s.k_block = kind == GemmKind::mxfp8 ? kMxfp8Block : kNvfp4Block;
      const int64_t per_row = ceil_div(K, s.k_block);
      const int64_t inner = round_up(per_row, kTileInner);
      s.act_alloc = round_up(M, kTileOuter) * inner;
      s.weight_alloc = round_up(N, kTileOuter) * inner;
      s.act_logical = M * per_row;
      s.weight_logical = N * per_row;
      break;
    }
  }
  return s;
}

std::string gemm_arch_unsupported(GemmKind kind, int cc_major, int cc_minor) {
  const int cc = cc_major * kCcScale + cc_minor;
  const auto need = [&](const char* what) {
    return std::string("cuBLASLt ") + gemm_kind_name(kind) + " needs " + what + "; this GPU is " +
           std::to_string(cc_major) + "." + std::to_string(cc_minor);
  };
  switch (kind) {
    case GemmKind::bf16: return cc >= kCcAmpere ? "" : need("compute capability 8.0+");
    case GemmKind::fp8_per_tensor: return cc >= kCcAda ? "" : need("compute capability 8.9+ (fp8 tensor cores)");
    case GemmKind::fp8_block128:
      return cc == kCcHopper ? "" : need("compute capability 9.0 (the 128-element block scale modes are Hopper-only)");
    case GemmKind::mxfp8:
    case GemmKind::nvfp4:
      return cc >= kCcBlackwell ? "" : need("compute capability 10.0+ (Blackwell block-scaled tensor cores)");
  }
  return "unknown GEMM kind";
}

std::string gemm_shape_unsupported(GemmKind kind, int64_t M, int64_t N, int64_t K) {
  (void)M;  // any M: block128 pads it (gemm_run_tokens), the others take it as is
  if (kind == GemmKind::bf16) return "";  // cuBLASLt handles any bf16 shape
  const int64_t bits = dtype_bits(gemm_input_dtype(kind));
  const int64_t k_multiple = kAlignBytes * kBitsPerByte / bits;                 // A, W: leading dimension K
  const int64_t n_multiple = kAlignBytes * kBitsPerByte / dtype_bits(DType::bf16);  // D: leading dimension N
  std::string why;
  if (K % k_multiple != 0)
    why = "K = " + std::to_string(K) + " is not a multiple of " + std::to_string(k_multiple);
  else if (N % n_multiple != 0)
    why = "N = " + std::to_string(N) + " is not a multiple of " + std::to_string(n_multiple);
  if (why.empty()) return "";
  return std::string("cuBLASLt ") + gemm_kind_name(kind) + " needs 16-byte aligned leading dimensions: " + why;
}

Cost gemm_cost(GemmKind kind, int64_t M, int64_t N, int64_t K) {
  const DType in = gemm_input_dtype(kind);
  Cost c = cost_gemm(M, N, K, in, in, DType::bf16);
  const GemmScales s = gemm_scales(kind, M, N, K);
  c.bytes += tensor_bytes(s.dtype, s.act_logical) + tensor_bytes(s.dtype, s.weight_logical);
  return c;
}

namespace {
Status validate_dims(int64_t M, int64_t N, int64_t K) {
  const std::pair<const char*, int64_t> dims[] = {{"M", M}, {"N", N}, {"K", K}};
  for (const auto& [name, v] : dims)
    if (v <= 0) return Status::InvalidArgument(std::string("prepare_gemm: ") + name + ": expected > 0, got " +
                                               std::to_string(v));
  return Status::Ok();
}
}  // namespace

#if TEJAS_WITH_CUDA
namespace {
constexpr size_t kWorkspaceBytes = size_t{32} << 20;  // cuBLASLt's recommended size on Hopper
// cublasLtGetVersion(): the 128-element block modes arrived in cuBLAS 12.9, the 16/32-element ones
// in 12.8.
constexpr size_t kLtVersionBlock128 = 120900, kLtVersionMx = 120800;

Status check_lt(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return Status::CudaError(std::string("cuBLASLt ") + what + ": status " + std::to_string(static_cast<int>(s)));
}

template <typename T>
Status set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const T& v, const char* what) {
  return check_lt(cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof(v)), what);
}

// Owns the handle and descriptors for the lifetime of the launch closure.
struct LtGemm {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t w = nullptr, a = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulHeuristicResult_t algo{};
  void *W = nullptr, *A = nullptr, *D = nullptr, *workspace = nullptr;
  float alpha = 1.0f, beta = 0.0f;
  ~LtGemm() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (w) cublasLtMatrixLayoutDestroy(w);
    if (op) cublasLtMatmulDescDestroy(op);
    if (handle) cublasLtDestroy(handle);
  }
  // cuBLASLt's A is our W, its B our activations (see prepare_gemm).
  Status run() const {
    return check_lt(cublasLtMatmul(handle, op, &alpha, W, w, A, a, &beta, D, d, D, d, &algo.algo, workspace,
                                   kWorkspaceBytes, nullptr),
                    "matmul");
  }
};

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::bf16: return CUDA_R_16BF;
    case DType::e2m1: return CUDA_R_4F_E2M1;
    default: return CUDA_R_8F_E4M3;
  }
}

// n scale values of 1 (exact in f32, ue8m0 and ue4m3) in a fresh cudaMalloc'd (256-byte aligned,
// so 16-byte aligned as 3.1.4.5.1 asks) buffer; tile padding gets valid values too.
Status upload_ones(DeviceArena& arena, DType dt, int64_t n, void** out) {
  const size_t width = static_cast<size_t>(dtype_bits(dt) / kBitsPerByte);
  const size_t bytes = static_cast<size_t>(n) * width;
  TEJAS_RETURN_IF_ERROR(arena.bytes(bytes, out));
  const uint64_t one = ref::encode(dt, 1.0);
  std::vector<uint8_t> host(bytes);
  for (size_t i = 0; i < bytes; i += width) std::memcpy(&host[i], &one, width);  // little-endian low bytes
  return check::copy_to_device(*out, host.data(), bytes);
}

// Scale modes and pointers of each kind (cuBLAS docs 3.1.4; cuBLASLt's A = W, B = activations).
Status set_scales(GemmKind kind, void* w_scale, void* a_scale, cublasLtMatmulDesc_t op) {
  if (kind == GemmKind::bf16) return Status::Ok();  // scales on non-narrow matmuls are an error (3.1.4)
  int32_t w_mode = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F, a_mode = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  if (kind == GemmKind::fp8_block128) {
    // 3.1.4.5 table: A BLK128x128 with B VEC128 is a supported pair.
    w_mode = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    a_mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
  } else if (kind == GemmKind::mxfp8) {
    w_mode = a_mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0;
  } else if (kind == GemmKind::nvfp4) {
    w_mode = a_mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3;
  }
  if (kind != GemmKind::fp8_per_tensor) {
    TEJAS_RETURN_IF_ERROR(set_desc(op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, w_mode, "a scale mode"));
    TEJAS_RETURN_IF_ERROR(set_desc(op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, a_mode, "b scale mode"));
  }
  TEJAS_RETURN_IF_ERROR(set_desc(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, w_scale, "a scale"));
  return set_desc(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, a_scale, "b scale");
}

// Why this process cannot run `kind` here ("" = it can): device, architecture, library version.
std::string runtime_unsupported(GemmKind kind) {
  const DeviceInfo dev = device_info();
  if (!dev.present) return "no CUDA device: " + dev.why_absent;
  if (std::string why = gemm_arch_unsupported(kind, dev.cc_major, dev.cc_minor); !why.empty()) return why;
  const size_t have = cublasLtGetVersion();
  const size_t need = kind == GemmKind::fp8_block128                           ? kLtVersionBlock128
                      : kind == GemmKind::mxfp8 || kind == GemmKind::nvfp4 ? kLtVersionMx
                                                                              : 0;
  if (have < need)
    return std::string("cuBLASLt ") + gemm_kind_name(kind) + " needs cuBLAS " + std::to_string(need) +
           "+; this library is " + std::to_string(have);
  return "";
}
}  // namespace

Status prepare_gemm(GemmKind kind, int64_t M, int64_t N, int64_t K, DeviceArena& arena,
                    std::function<Status()>* launch) {
  TEJAS_RETURN_IF_ERROR(validate_dims(M, N, K));
  if (std::string why = gemm_shape_unsupported(kind, M, N, K); !why.empty()) return Status::Unsupported(why);
  if (std::string why = runtime_unsupported(kind); !why.empty()) return Status::Unsupported(why);

  auto g = std::make_shared<LtGemm>();
  const DType in = gemm_input_dtype(kind);
  const int64_t T = gemm_run_tokens(kind, M);
  // Column-major "TN" (fp8 and fp4 require it on Hopper; 3.4.17), with cuBLASLt's A = W stored
  // K x N (transposed: op(A) is N x K), its B = the activations stored K x T, so that its D
  // (N x T, column-major) is our row-major [T, N] with leading dimension N.
  TensorView W, A, D;
  TEJAS_RETURN_IF_ERROR(arena.random(in, {N, K}, &W));
  TEJAS_RETURN_IF_ERROR(arena.random(in, {T, K}, &A));
  TEJAS_RETURN_IF_ERROR(arena.empty(DType::bf16, {T, N}, &D));
  TEJAS_RETURN_IF_ERROR(arena.bytes(kWorkspaceBytes, &g->workspace));
  g->W = W.data;
  g->A = A.data;
  g->D = D.data;
  TEJAS_RETURN_IF_ERROR(check_lt(cublasLtCreate(&g->handle), "create"));
  TEJAS_RETURN_IF_ERROR(check_lt(cublasLtMatmulDescCreate(&g->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc"));
  const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
  TEJAS_RETURN_IF_ERROR(set_desc(g->op, CUBLASLT_MATMUL_DESC_TRANSA, transa, "transa"));
  TEJAS_RETURN_IF_ERROR(set_desc(g->op, CUBLASLT_MATMUL_DESC_TRANSB, transb, "transb"));
  if (kind != GemmKind::bf16) {
    const GemmScales s = gemm_scales(kind, M, N, K);
    void *w_scale = nullptr, *a_scale = nullptr;
    TEJAS_RETURN_IF_ERROR(upload_ones(arena, s.dtype, s.weight_alloc, &w_scale));
    TEJAS_RETURN_IF_ERROR(upload_ones(arena, s.dtype, s.act_alloc, &a_scale));
    TEJAS_RETURN_IF_ERROR(set_scales(kind, w_scale, a_scale, g->op));
  }
  const cudaDataType_t in_type = cuda_type(in);
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  TEJAS_RETURN_IF_ERROR(check_lt(cublasLtMatrixLayoutCreate(&g->w, in_type, u(K), u(N), K), "layout w"));
  TEJAS_RETURN_IF_ERROR(check_lt(cublasLtMatrixLayoutCreate(&g->a, in_type, u(K), u(T), K), "layout a"));
  TEJAS_RETURN_IF_ERROR(check_lt(cublasLtMatrixLayoutCreate(&g->d, CUDA_R_16BF, u(N), u(T), N), "layout d"));
  TEJAS_RETURN_IF_ERROR(check_lt(cublasLtMatmulPreferenceCreate(&g->pref), "preference"));
  const uint64_t ws = kWorkspaceBytes;
  TEJAS_RETURN_IF_ERROR(check_lt(cublasLtMatmulPreferenceSetAttribute(g->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                                      &ws, sizeof(ws)),
                                 "workspace"));
  int found = 0;
  const cublasStatus_t hs =
      cublasLtMatmulAlgoGetHeuristic(g->handle, g->op, g->w, g->a, g->d, g->d, g->pref, 1, &g->algo, &found);
  // No algorithm for this combination is "unsupported", not a failure (the library may answer
  // with an empty list or with NOT_SUPPORTED / ARCH_MISMATCH).
  const bool none = hs == CUBLAS_STATUS_SUCCESS && found == 0;
  if (none || hs == CUBLAS_STATUS_NOT_SUPPORTED || hs == CUBLAS_STATUS_ARCH_MISMATCH)
    return Status::Unsupported(std::string("cuBLASLt has no algorithm for ") + gemm_kind_name(kind) + " M=" +
                               std::to_string(T) + " N=" + std::to_string(N) + " K=" + std::to_string(K) +
                               " (heuristic status " + std::to_string(static_cast<int>(hs)) + ")");
  TEJAS_RETURN_IF_ERROR(check_lt(hs, "heuristic"));
  *launch = [g] { return g->run(); };
  return Status::Ok();
}
#else
Status prepare_gemm(GemmKind kind, int64_t M, int64_t N, int64_t K, DeviceArena&, std::function<Status()>*) {
  TEJAS_RETURN_IF_ERROR(validate_dims(M, N, K));
  if (std::string why = gemm_shape_unsupported(kind, M, N, K); !why.empty()) return Status::Unsupported(why);
  return Status::Unsupported("built without CUDA (host-only build)");
}
#endif

}  // namespace tejas::bench
