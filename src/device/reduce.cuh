// Warp- and block-wide reductions over float (f32 accumulation), on shuffles and the device
// layer's shared-memory accessors (so the emulator checks them).
#pragma once
#include "device/prelude.h"
#include "device/ptx/ld_st.h"

namespace tejas::dev {

inline constexpr unsigned kFullWarpMask = 0xffffffffu;
inline constexpr int kWarpSize = 32;
inline constexpr int kMaxWarpsPerBlock = 32;

struct SumOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  // fmaxf drops NaN; a reduction that must propagate NaN uses MaxNanOp.
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
// NOTES: as max.NaN (ptx::max_nan_f32, one FMNMX where this is two compares and a select; the
// fused silu_mul_quant kernels use it) the norm kernels' register allocation changed and three of
// them spilled 24-80 bytes under their 64-register bound (sm_80 / sm_90a, 2026-12-02).
struct MaxNanOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return (a != a || a > b) ? a : b; }
};

// Every lane of a full warp gets the reduction of all 32 lanes (butterfly: same order on every
// lane, so every lane gets bit-identical results).
template <class Op>
__device__ __forceinline__ float warp_allreduce(float v, Op op) {
  for (int offset = kWarpSize / 2; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(kFullWarpMask, v, offset));
  return v;
}

// Every thread of the block gets the reduction of all threads. blockDim.x must be a multiple of
// 32 (<= 1024); `scratch` is kMaxWarpsPerBlock floats of shared memory. Contains two
// __syncthreads: call from all threads; scratch may be reused right after it returns.
template <class Op>
__device__ __forceinline__ float block_allreduce(float v, Op op, float identity, float* scratch TEJAS_CALLER_PARAM) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int num_warps = blockDim.x / kWarpSize;
  v = warp_allreduce(v, op);
  if (lane == 0) ptx::st_shared(scratch + warp, v TEJAS_NESTED_SITE);
  __syncthreads(TEJAS_NESTED_SITE_ONLY);
  float w = lane < num_warps ? ptx::ld_shared(scratch + lane TEJAS_NESTED_SITE) : identity;
  w = warp_allreduce(w, op);
  __syncthreads(TEJAS_NESTED_SITE_ONLY);  // every warp has read scratch: the caller may write it again
  return w;
}

// Two block reductions in one pass (the same two barriers): a over op_a into scratch_a, b over
// op_b into scratch_b (kMaxWarpsPerBlock floats each, apart). Every thread gets both results.
template <class OpA, class OpB>
__device__ __forceinline__ void block_allreduce2(float& a, OpA op_a, float identity_a, float* scratch_a, float& b,
                                                 OpB op_b, float identity_b, float* scratch_b TEJAS_CALLER_PARAM) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int num_warps = blockDim.x / kWarpSize;
  a = warp_allreduce(a, op_a);
  b = warp_allreduce(b, op_b);
  if (lane == 0) {
    ptx::st_shared(scratch_a + warp, a TEJAS_NESTED_SITE);
    ptx::st_shared(scratch_b + warp, b TEJAS_NESTED_SITE);
  }
  __syncthreads(TEJAS_NESTED_SITE_ONLY);
  a = lane < num_warps ? ptx::ld_shared(scratch_a + lane TEJAS_NESTED_SITE) : identity_a;
  b = lane < num_warps ? ptx::ld_shared(scratch_b + lane TEJAS_NESTED_SITE) : identity_b;
  a = warp_allreduce(a, op_a);
  b = warp_allreduce(b, op_b);
  __syncthreads(TEJAS_NESTED_SITE_ONLY);  // every warp has read both scratches
}

}  // namespace tejas::dev
