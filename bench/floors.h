// Roofline arithmetic: the ceilings of each GPU and, per op and shape, the FLOPs and the fewest
// bytes that must cross HBM (each input read once, each output written once, at its dtype).
// floor time = max(FLOPs / compute peak, bytes / HBM bandwidth). Pure functions, no CUDA.
//
// FLOP conventions (per output element unless noted; exp, tanh, rsqrt count as one FLOP):
//   rms_norm 4 (square, add, scale, weight); fused_add_rms_norm 5 (+ the residual add);
//   rope 3 per rotated element (a*cos - b*sin: 2 mul + 1 add); silu_mul 4 (exp, add, div, mul);
//   silu_mul clamped 9 (min, clamp 2, alpha*g, exp, add, div, *g, (u+1)*); gelu_tanh_mul 10;
//   quant 3 per input element (abs, max, scale); dequant 2 (decode, scale; nvfp4's two scales
//   are multiplied once per block);
//   attention 4*D per visible (query, key) pair (QK^T and PV, multiply-add = 2);
//   merge (2*S + 1)*D per (token, head) for S parts (S scaled accumulations, one final scale);
//   gemm 2*M*N*K; copy 0.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tejas/dtype.h"

namespace tejas::bench {

// Which compute ceiling bounds an op's FLOPs: elementwise ops run on the FP32 CUDA cores;
// attention and GEMMs can use tensor cores at their input precision.
enum class MathUnit : uint8_t { fp32_simt, bf16_tensor, fp8_tensor, fp4_tensor };
const char* math_unit_name(MathUnit u);

// One ceiling with where it came from.
// `value` is the one floors use: measured where a measurement exists, else the datasheet.
struct Ceiling {
  double value = 0;        // bytes/s or FLOP/s; 0 = unknown / not present on this GPU
  double datasheet = 0;    // the vendor's figure (0 = none)
  std::string source;      // "measured before (GPU.md)", "datasheet", "measured now"
};

struct GpuCeilings {
  std::string name;      // "h200"
  Ceiling hbm;           // bytes/s, counting bytes read + written
  Ceiling fp32_simt;     // FLOP/s
  Ceiling bf16_tensor;   // dense
  Ceiling fp8_tensor;
  Ceiling fp4_tensor;    // 0 where the GPU has no fp4 tensor cores
  double l2_bytes = 0;   // for the L2 flush size
  const Ceiling& compute(MathUnit u) const;
};

// The known GPUs: "h100", "h200", "b200". Measured-before figures (GPU.md) where they exist,
// datasheet otherwise; each Ceiling says which.
const std::vector<GpuCeilings>& known_gpus();
// nullptr when the name is unknown.
const GpuCeilings* find_gpu(std::string_view name);

struct Cost {
  double flops = 0;
  double bytes = 0;          // fewest bytes that must cross HBM
  MathUnit unit = MathUnit::fp32_simt;
};

// Bytes of n elements of dtype t (fp4 counts half a byte each, rounded up per tensor).
double tensor_bytes(DType t, int64_t n);

// Floor time in seconds: max(flops / compute(unit), bytes / hbm). A zero ceiling is ignored.
double floor_seconds(const Cost& c, const GpuCeilings& g);
// "memory" or "compute": which term sets the floor.
const char* floor_bound(const Cost& c, const GpuCeilings& g);
// FLOPs per byte (0 when bytes is 0).
double arithmetic_intensity(const Cost& c);

// --- costs per op ---------------------------------------------------------------------------
// x, out [T, H]; weight [H]. fp8 out with a dynamic per-token scale adds T f32 scales written.
Cost cost_rms_norm(int64_t T, int64_t H, DType x, DType weight, DType out, bool dynamic_fp8_scale);
// residual is read and written.
Cost cost_fused_add_rms_norm(int64_t T, int64_t H, DType x, DType residual, DType weight, DType out,
                             bool dynamic_fp8_scale);
// q [T, Hq, D], k [T, Hk, D]; only the rotary_dim leading dims of each head are read and written;
// one cache row (rotary_dim values) and one position (pos dtype) per token.
Cost cost_rope(int64_t T, int64_t Hq, int64_t Hk, int64_t rotary_dim, DType qk, DType cache, DType pos);
enum class GatedAct : uint8_t { silu, silu_clamped, gelu_tanh };
// x [T, 2F] -> out [T, F].
Cost cost_gated_act(int64_t T, int64_t F, DType dt, GatedAct act);
// x [M, K] -> q [M, K], scales [M, K / group].
Cost cost_quant_group(int64_t M, int64_t K, int64_t group, DType x, DType q, DType scale, bool tensor_scale);
Cost cost_dequant_group(int64_t M, int64_t K, int64_t group, DType q, DType scale, DType out, bool tensor_scale);
// Decode attention: one query token per request (Q >= 1: causal among the last Q positions).
struct DecodeShape {
  std::vector<int64_t> seq_lens;  // per request
  int64_t Q = 1, Hq = 0, Hkv = 0, D = 0, block_size = 16;
  DType q = DType::bf16, kv = DType::bf16;
  bool lse = false, sinks = false;
};
Cost cost_paged_decode(const DecodeShape& s);
// S partial states [S, N, H, D] + lse [S, N, H] -> out [N, H, D] (+ lse [N, H]).
Cost cost_merge_states(int64_t S, int64_t N, int64_t H, int64_t D, DType v, DType out, bool out_lse);
// D[M, N] = A[M, K] B[K, N].
Cost cost_gemm(int64_t M, int64_t N, int64_t K, DType a, DType b, DType d);
// Device-to-device copy of `bytes`: read once + written once.
Cost cost_copy(int64_t bytes);

}  // namespace tejas::bench
