// cuBLASLt GEMM baselines (linked directly; no torch): D[M, N] = A[M, K] W[N, K]^T with f32
// accumulation and D in bf16 (row-major [M, N]). A is the activations (M tokens), W the weights in
// the nn.Linear layout [N, K] (K contiguous).
//   bf16            A, W bf16.
//   fp8_per_tensor  A, W e4m3, one f32 scale each (CUBLASLT_MATMUL_DESC_{A,B}_SCALE_POINTER).
//   fp8_block128    A, W e4m3 with DeepSeek-V3 block scales: A one f32 per 1x128 (per token, per
//                   128 K values), W one f32 per 128x128 block. cuBLASLt: compute capability 9.0
//                   only (Hopper), cuBLAS >= 12.9.
//   mxfp8           A, W e4m3, one ue8m0 scale per 32 K values (OCP MX). Blackwell (10.0+).
//   nvfp4           A, W e2m1, one ue4m3 scale per 16 K values. Blackwell (10.0+).
// Where the GPU or the library cannot run a kind, prepare_gemm() returns unsupported with the
// reason (also: host-only builds, no device, a heuristic that finds no algorithm).
// Scale-tensor layouts follow the cuBLAS documentation, section 3.1.4 "Narrow precision data types
// usage" (3.1.4.4.2 "1D Block Scaling Factors Layout", 3.1.4.5.1 "Scaling factors layouts").
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "bench/device_arena.h"
#include "bench/floors.h"
#include "tejas/status.h"

namespace tejas::bench {

enum class GemmKind : uint8_t { bf16, fp8_per_tensor, fp8_block128, mxfp8, nvfp4 };
inline constexpr GemmKind kAllGemmKinds[] = {GemmKind::bf16, GemmKind::fp8_per_tensor, GemmKind::fp8_block128,
                                             GemmKind::mxfp8, GemmKind::nvfp4};

// "bf16", "fp8_per_tensor", "fp8_block128", "mxfp8", "nvfp4" (stable: used in row names).
const char* gemm_kind_name(GemmKind k);
// Element type of A and W (bf16, e4m3 or e2m1).
DType gemm_input_dtype(GemmKind k);

// The scale tensors of one GEMM. "alloc" counts what cuBLASLt reads (its layout, padding
// included); "logical" what the quantization defines (one value per block, the floor's bytes).
struct GemmScales {
  DType dtype = DType::f32;  // f32; ue8m0 (mxfp8); e4m3 bytes read as ue4m3 (nvfp4)
  int64_t k_block = 0;       // K values per scale (128, 32, 16); 0: per-tensor or none
  int64_t act_alloc = 0, weight_alloc = 0;
  int64_t act_logical = 0, weight_logical = 0;
};
// M, N, K > 0. bf16: no scales (all zero).
GemmScales gemm_scales(GemmKind kind, int64_t M, int64_t N, int64_t K);

// Tokens cuBLASLt is run with for M tokens: fp8_block128 needs a multiple of 4 (cuBLAS docs
// 3.1.4.5.1: "M and N must be multiples of 4"), so M is padded; M for the other kinds.
int64_t gemm_run_tokens(GemmKind kind, int64_t M);

// "" when a GPU of compute capability major.minor can run `kind` through cuBLASLt, else why not
// (cuBLAS docs 3.1.4, "Scaling Mode Support Overview": tensorwide 8.9+, 128-element 1D and
// 128x128 2D blocks 9.0, 32- and 16-element 1D blocks 10.0+).
std::string gemm_arch_unsupported(GemmKind kind, int cc_major, int cc_minor);
// "" when cuBLASLt's alignment rules admit the shape (16-byte aligned leading dimensions,
// multiples of 4 for block128 weights), else why not. M, N, K > 0.
std::string gemm_shape_unsupported(GemmKind kind, int64_t M, int64_t N, int64_t K);

// Roofline cost: cost_gemm at the kind's dtypes (D bf16) plus both scale tensors at their
// logical size.
Cost gemm_cost(GemmKind kind, int64_t M, int64_t N, int64_t K);

// Validates M, N, K (invalid_argument naming the one that is not positive), then, on a GPU that
// supports `kind`, allocates A, W, D and the scales (random data, scales of 1) in `arena`, picks
// cuBLASLt's first heuristic algorithm and sets *launch to run one GEMM on the legacy stream.
// Otherwise returns unsupported with the reason and leaves *launch untouched.
Status prepare_gemm(GemmKind kind, int64_t M, int64_t N, int64_t K, DeviceArena& arena,
                    std::function<Status()>* launch);

}  // namespace tejas::bench
