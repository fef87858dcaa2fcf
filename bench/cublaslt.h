// cuBLASLt GEMM baselines (linked directly; no torch): D[M, N] = A[M, K] B[K, N] with f32
// accumulation, D in bf16.
//   bf16:             A, B bf16.
//   fp8_per_tensor:   A, B e4m3 with one f32 scale each (CUBLASLT_MATMUL_DESC_{A,B}_SCALE_POINTER).
// Block-scaled fp8 (DeepSeek-V3's 1x128 / 128x128) and MX/NVFP4 GEMMs are not wired yet: the
// library's block-scale modes differ between Hopper and Blackwell; add a GemmKind here when a
// kernel needs that baseline. Without CUDA, prepare_gemm() returns unsupported.
#pragma once
#include <cstdint>
#include <functional>

#include "bench/device_arena.h"
#include "tejas/status.h"

namespace tejas::bench {

enum class GemmKind : uint8_t { bf16, fp8_per_tensor };
const char* gemm_kind_name(GemmKind k);

// Allocates A, B, D (random inputs) in `arena`, picks cuBLASLt's first heuristic algorithm and
// returns a launch that runs one GEMM on the legacy stream.
Status prepare_gemm(GemmKind kind, int64_t M, int64_t N, int64_t K, DeviceArena& arena,
                    std::function<Status()>* launch);

}  // namespace tejas::bench
