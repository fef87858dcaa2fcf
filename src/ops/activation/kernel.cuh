// silu_mul / gelu_tanh_mul kernel: out[t, f] = act(x[t, f]) * x[t, F + f]. Pure streaming:
// each lane loads one access of gate and one of up (vec elements each, read once through the
// read-only path) per step, computes in f32 and stores one access of out (streaming store);
// with kSteps > 1 (the activation.steps variant) a lane issues the loads of p.steps such steps
// first. Config and thread mapping: config.h.
#pragma once
#include <cstring>

#include "device/prelude.h"
#include "device/grid_dependency.h"
#include "device/ptx/cp_async.h"
#include "device/ptx/ld_st.h"
#include "device/smem.h"
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
  int steps = 1;         // chunks per lane at once (<= kSteps of the kernel)
  int pipeline_stages = 0;  // gated_pipe_kernel only: tiles each thread keeps in flight (1 or 2)
};

// out[c] = act(gate[c]) * up[c] for one access of each (as loaded). Takes its caller's site
// (TEJAS_CALLER_PARAM, device/prelude.h): each call is its own store site under emulation.
template <class S, int kVecBytes, Act kAct, class Vec, bool kFast = false>
__device__ __forceinline__ void store_gated(const Vec& gv, const Vec& uv, typename S::Raw* out_row, int64_t c,
                                            const ActOptions& options TEJAS_CALLER_PARAM) {
  using Raw = typename S::Raw;
  constexpr int kVec = kVecBytes / static_cast<int>(sizeof(Raw));
  Raw o[kVec];
  if constexpr (kFast) {  // 16-bit S, 16 bytes (gated_kernel's static_assert)
    constexpr int kWords = kVecBytes / 4;
    uint32_t gw[kWords], uw[kWords];
    memcpy(gw, &gv, sizeof(Vec));
    memcpy(uw, &uv, sizeof(Vec));
    const bool clamped = kAct == Act::silu && clamp_pairs<S>(gw, uw, options);
    const auto in = [&](int i, float& gate, float& up) {  // both lanes of a word at once
      const num::F32x2 gp = S::to_f32x2(gw[i / 2]), up2 = S::to_f32x2(uw[i / 2]);
      gate = i % 2 == 0 ? gp.lo : gp.hi;
      up = i % 2 == 0 ? up2.lo : up2.hi;
    };
    uint32_t ow[kWords];
    const auto out = [&](int k, float y0, float y1) {
      ow[k] = static_cast<uint32_t>(S::from_f32(y0)) | (static_cast<uint32_t>(S::from_f32(y1)) << 16);
    };
    if (clamped) gated_fast<kAct, false, kVec>(in, out, options);
    else gated_fast<kAct, true, kVec>(in, out, options);
    memcpy(o, ow, sizeof(Vec));
  } else {
    Raw g[kVec], u[kVec];
    memcpy(g, &gv, sizeof(Vec));
    memcpy(u, &uv, sizeof(Vec));
    for (int i = 0; i < kVec; ++i) o[i] = S::from_f32(gated<kAct>(S::to_f32(g[i]), S::to_f32(u[i]), options));
  }
  Vec ov;
  memcpy(&ov, o, sizeof(Vec));
  ptx::st_global_cs(reinterpret_cast<Vec*>(out_row) + c, ov TEJAS_NESTED_SITE);
}

// S: storage type (Bf16, F16, F32); kVecBytes: bytes per access (F is a multiple of the
// elements per access, and every row start is aligned to it: config.h). kSteps: the most chunks
// a lane takes at once (1, or kMaxGatedSteps for the activation.steps variant; registers are
// sized for it whatever p.steps is, so the default kernel keeps kSteps 1). kFast: the
// activation.fast_math variant's math (act_math.cuh; 16-bit storage, one step).
template <class S, int kVecBytes, Act kAct, int kSteps = 1, bool kFast = false>
__global__ void __launch_bounds__(kThreads, kSteps == 1 ? 8 : 4) gated_kernel(GatedParams p) {
  dev::begin_dependent_grid();
  static_assert(!kFast || (sizeof(typename S::Raw) == 2 && kSteps == 1), "fast math: 16-bit outputs, one step");
  using Raw = typename S::Raw;
  using Vec = typename num::AccessWord<kVecBytes>::type;
  constexpr int kVec = kVecBytes / static_cast<int>(sizeof(Raw));
  static_assert(kVec >= 1 && kVec * sizeof(Raw) == kVecBytes, "whole elements per access");

  // NOTES: the row by shifts (threads_per_row is a power of two), as silu_quant_kernel's, made
  // the 16-byte silu kernels spill 4-8 bytes under the 32-register bound (sm_80 and sm_90a).
  const int lane = static_cast<int>(threadIdx.x) & (p.threads_per_row - 1);
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / p.threads_per_row) +
                      threadIdx.x / p.threads_per_row;
  if (row >= p.T) return;
  const Raw* gate_row = static_cast<const Raw*>(p.x) + row * p.x_stride;
  const Raw* up_row = gate_row + p.F;
  Raw* out_row = static_cast<Raw*>(p.out) + row * p.out_stride;
  const int64_t chunks = p.F / kVec;
  // A lane's chunks at once are `stride` apart, so each warp request stays contiguous.
  const int64_t stride = static_cast<int64_t>(gridDim.y) * p.threads_per_row;
  if constexpr (kSteps == 1) {
    // NOTES: the default kernel keeps its own loop: written as the one-step case of the loop
    // below it took 37-39 registers instead of 31-32 (sm_90a), above the 32 of full occupancy.
    for (int64_t c = static_cast<int64_t>(blockIdx.y) * p.threads_per_row + lane; c < chunks; c += stride) {
      const Vec gv = ptx::ld_global_nc(reinterpret_cast<const Vec*>(gate_row) + c);
      const Vec uv = ptx::ld_global_nc(reinterpret_cast<const Vec*>(up_row) + c);
      store_gated<S, kVecBytes, kAct, Vec, kFast>(gv, uv, out_row, c, p.options);
    }
  } else {  // the activation.steps variant
    for (int64_t c0 = static_cast<int64_t>(blockIdx.y) * p.threads_per_row + lane; c0 < chunks;
         c0 += stride * p.steps) {
      Vec gv[kSteps], uv[kSteps];
#pragma unroll
      for (int s = 0; s < kSteps; ++s) {
        const int64_t c = c0 + s * stride;
        if (s < p.steps && c < chunks) {
          gv[s] = ptx::ld_global_nc(reinterpret_cast<const Vec*>(gate_row) + c);
          uv[s] = ptx::ld_global_nc(reinterpret_cast<const Vec*>(up_row) + c);
        }
      }
#pragma unroll
      for (int s = 0; s < kSteps; ++s) {
        const int64_t c = c0 + s * stride;
        if (s < p.steps && c < chunks) store_gated<S, kVecBytes, kAct>(gv[s], uv[s], out_row, c, p.options);
      }
    }
  }
}

// The activation.pipeline variant (config.h's with_gated_pipeline), 16-byte path: item i of the
// flattened [T, chunks] space is chunk i % chunks of row i / chunks; tile j is items
// j * 256 .. j * 256 + 255 (it may span rows), thread t taking item j * 256 + t. Persistent blocks
// take tiles blockIdx.x, + gridDim.x, ...; each thread copies the gate and up vectors of its
// items in the next p.pipeline_stages tiles into its own shared-memory slots (cp.async.cg, one
// commit group per tile, empty past the last tile, so group n is always the block's n-th tile),
// and at each tile waits for that tile's group, reads its slots, refills them with the tile
// `stages` ahead and computes and stores what it read. The default kernel's blocks make one
// trip each (a lane loads, computes, stores, and its block ends); here every thread keeps
// stages x 32 bytes in flight all its life, with no registers held for them. Its own slots
// only: the waits order them, no barrier; a slot is refilled after the ld.shared that read it
// (program order; the cp.async wrapper's memory clobber keeps it there). Row and chunk of a
// thread's item advance by a constant per tile (one division per thread at the start).
template <class S, Act kAct>
__global__ void __launch_bounds__(kThreads) gated_pipe_kernel(GatedParams p) {
  dev::begin_dependent_grid();
  using Raw = typename S::Raw;
  using Vec = typename num::AccessWord<kMaxVecBytes>::type;
  constexpr int kVec = kMaxVecBytes / static_cast<int>(sizeof(Raw));
  Vec* const slots = dev::dynamic_smem<Vec>();
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t chunks = p.F / kVec, items = p.T * chunks;
  const int64_t step_items = static_cast<int64_t>(gridDim.x) * kPipeTileChunks;  // per tile a block walks
  const int64_t step_rows = step_items / chunks, step_chunks = step_items % chunks;
  // An item's (row, chunk), advanced tile by tile.
  struct Cursor {
    int64_t item, row, chunk;
  };
  const auto start = [&](int64_t item) { return Cursor{item, item / chunks, item % chunks}; };
  const auto advance = [&](Cursor& c) {
    c.item += step_items;
    c.row += step_rows;
    c.chunk += step_chunks;
    if (c.chunk >= chunks) {
      c.chunk -= chunks;
      ++c.row;
    }
  };
  const auto slot = [&](int stage, int tensor) { return slots + (stage * 2 + tensor) * kThreads + tid; };
  const auto issue = [&](const Cursor& c, int stage) {
    if (c.item < items) {
      const Vec* gate = reinterpret_cast<const Vec*>(static_cast<const Raw*>(p.x) + c.row * p.x_stride);
      const Vec* up = reinterpret_cast<const Vec*>(static_cast<const Raw*>(p.x) + c.row * p.x_stride + p.F);
      ptx::cp_async_16(slot(stage, 0), gate + c.chunk);
      ptx::cp_async_16(slot(stage, 1), up + c.chunk);
    }
    ptx::cp_async_commit();
  };
  Cursor ahead = start(static_cast<int64_t>(blockIdx.x) * kPipeTileChunks + tid), now = ahead;
  for (int stage = 0; stage < p.pipeline_stages; ++stage) {
    issue(ahead, stage);
    advance(ahead);
  }
  for (int stage = 0; now.item - tid < items; advance(now)) {  // whole tiles: every thread runs the loop alike
    ptx::cp_async_wait_pending(p.pipeline_stages - 1);  // this tile's group landed; the next may not have
    const bool mine = now.item < items;
    Vec gv, uv;
    if (mine) {
      gv = ptx::ld_shared(slot(stage, 0));
      uv = ptx::ld_shared(slot(stage, 1));
    }
    issue(ahead, stage);
    advance(ahead);
    if (mine) store_gated<S, kMaxVecBytes, kAct>(gv, uv, static_cast<Raw*>(p.out) + now.row * p.out_stride, now.chunk,
                                                 p.options);
    stage = stage + 1 == p.pipeline_stages ? 0 : stage + 1;
  }
  ptx::cp_async_wait_all();  // the empty trailing groups: nothing pending at exit
}

}  // namespace TEJAS_BUILD_NS
}  // namespace tejas::act
