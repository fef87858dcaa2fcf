// silu_mul / gelu_tanh_mul kernel: out[t, f] = act(x[t, f]) * x[t, F + f]. Pure streaming:
// each lane loads one access of gate and one of up (vec elements each, read once through the
// read-only path), computes in f32 and stores one access of out (streaming store). Config and
// thread mapping: config.h.
#pragma once
#include <cstring>

#include "device/prelude.h"
#include "device/ptx/ld_st.h"
#include "ops/activation/act_math.cuh"
#include "ops/activation/config.h"

namespace tejas::act {
inline namespace TEJAS_BUILD_NS {

struct GatedParams {
  const void* x;         // [T, 2F] (gate | up), row stride x_stride elements, innermost contiguous
  void* out;             // [T, F], row stride out_stride elements, innermost contiguous
  int64_t T, F;
  int64_t x_stride, out_stride;
  int threads_per_row;   // power of two; rows_per_block = blockDim.x / threads_per_row
  ActOptions options;    // silu_mul only
};

// S: storage type (Bf16, F16, F32); kVecBytes: bytes per access (F is a multiple of the
// elements per access, and every row start is aligned to it: config.h).
template <class S, int kVecBytes, Act kAct>
__global__ void __launch_bounds__(kThreads) gated_kernel(GatedParams p) {
  using Raw = typename S::Raw;
  using Vec = typename num::AccessWord<kVecBytes>::type;
  constexpr int kVec = kVecBytes / static_cast<int>(sizeof(Raw));
  static_assert(kVec >= 1 && kVec * sizeof(Raw) == kVecBytes, "whole elements per access");

  const int lane = static_cast<int>(threadIdx.x) & (p.threads_per_row - 1);
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / p.threads_per_row) +
                      threadIdx.x / p.threads_per_row;
  if (row >= p.T) return;
  const Raw* gate_row = static_cast<const Raw*>(p.x) + row * p.x_stride;
  const Raw* up_row = gate_row + p.F;
  Raw* out_row = static_cast<Raw*>(p.out) + row * p.out_stride;
  const int64_t chunks = p.F / kVec;
  const int64_t step = static_cast<int64_t>(gridDim.y) * p.threads_per_row;
  for (int64_t c = static_cast<int64_t>(blockIdx.y) * p.threads_per_row + lane; c < chunks; c += step) {
    const Vec gv = ptx::ld_global_nc(reinterpret_cast<const Vec*>(gate_row) + c);
    const Vec uv = ptx::ld_global_nc(reinterpret_cast<const Vec*>(up_row) + c);
    Raw g[kVec], u[kVec], o[kVec];
    memcpy(g, &gv, sizeof(Vec));
    memcpy(u, &uv, sizeof(Vec));
    for (int i = 0; i < kVec; ++i) o[i] = S::from_f32(gated<kAct>(S::to_f32(g[i]), S::to_f32(u[i]), p.options));
    Vec ov;
    memcpy(&ov, o, sizeof(Vec));
    ptx::st_global_cs(reinterpret_cast<Vec*>(out_row) + c, ov);
  }
}

}  // namespace TEJAS_BUILD_NS
}  // namespace tejas::act
