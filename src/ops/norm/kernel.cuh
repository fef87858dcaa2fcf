// RMSNorm family kernel: rms_norm, fused_add_rms_norm (residual += x, stored) and the fp8
// outputs (dynamic per-token, static, per-group of 128), in one pass over HBM: each row is read
// once into registers (float v[I][V] per thread), reduced (sum of squares, then amax for fp8),
// and written once from the same registers. See config.h for the thread <-> element mapping.
// norm_kernel takes one row per CTA (or warp); norm_pipe_kernel, the norm.pipeline variant, walks
// rows with persistent CTAs and copies the next ones ahead into shared memory (cp.async);
// norm_warp_pipe_kernel, the norm.warp_items variant, does the same for short rows a warp per
// row, the row read back from shared memory once per pass instead of held in registers.
//
// Template parameters: XT (x's dtype, also `out`'s unless fp8), V (elements per vector access)
// and E (floats per thread). weight / residual / scale dtypes and the output kind are runtime
// values (uniform branches), to keep the instantiation count small.
#pragma once
#include <type_traits>

#include "device/prelude.h"
#include "device/grid_dependency.h"
#include "device/math.h"  // dev::rsqrtf: the GPU's error under emulation
#include "device/reduce.cuh"
#include "device/numeric/exact_round.h"  // num::is_positive_normal
#include "device/numeric/packed_half.h"  // num::hadd2
#include "device/loaded.h"
#include "device/smem.h"
#include "device/ptx/cp_async.h"
#include "ops/norm/config.h"
#include "ops/norm/params.h"
#include "ops/norm/vec_io.cuh"

namespace tejas::norm {
inline namespace TEJAS_BUILD_NS {  // nvcc and emulator builds apart (device/prelude.h)

inline constexpr float kE4m3MaxF = 448.0f;

static_assert(kMaxWarps == dev::kMaxWarpsPerBlock, "NormSmem::reduce is block_allreduce's scratch");

// x's dtype and vector width where add_residual_packed applies: 16-bit pairs.
template <DType XT, int V>
inline constexpr bool kPackedAddable = XT != DType::f32 && V % 2 == 0;

// Where this thread sits: its row, its index among the row's threads, how many threads share the row.
struct RowSlot {
  int64_t row;
  int tid;
  int nthreads;
};

__device__ __forceinline__ RowSlot row_slot(const NormParams& p) {
  if (p.warp_per_row) {
    const int rows_per_block = blockDim.x / kWarpSize;
    return {static_cast<int64_t>(blockIdx.x) * rows_per_block + threadIdx.x / kWarpSize,
            static_cast<int>(threadIdx.x % kWarpSize), kWarpSize};
  }
  return {static_cast<int64_t>(blockIdx.x), static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x)};
}

template <class Op>
__device__ __forceinline__ float row_allreduce(const NormParams& p, float v, Op op, float identity,
                                               NormSmem* smem TEJAS_CALLER_PARAM) {
  return p.warp_per_row ? dev::warp_allreduce(v, op)
                        : dev::block_allreduce(v, op, identity, smem->reduce TEJAS_NESTED_SITE);
}

// row_allreduce for two values at once: ss summed and m maxed (NaN kept), the block's in one
// pass (the second scratch is the group maxima's first row, unused by a dynamic-scale row).
__device__ __forceinline__ void row_allreduce2(const NormParams& p, float& ss, float& m, NormSmem* smem TEJAS_CALLER_PARAM) {
  if (p.warp_per_row) {
    ss = dev::warp_allreduce(ss, dev::SumOp{});
    m = dev::warp_allreduce(m, dev::MaxNanOp{});
    return;
  }
  dev::block_allreduce2(ss, dev::SumOp{}, 0.0f, smem->reduce, m, dev::MaxNanOp{}, 0.0f, smem->group_amax[0] TEJAS_NESTED_SITE);
}

// fp8 groups take y clamped to +-FLT_MAX (an Inf saturates, as in quant_fp8_group); NaN stays.
__device__ __forceinline__ float clamp_f32_range(float y) { return y != y ? y : fminf(fmaxf(y, -kF32Max), kF32Max); }

// Bytes of a weight or residual element (bf16, f16 or f32: the host validates it). Not
// dtype_size: its 12-way switch was re-evaluated between the row's loads.
__device__ __forceinline__ int float_bytes(DType d) { return d == DType::f32 ? 4 : 2; }

// Byte address of element (row, col) of a [T, H] tensor with token stride `stride`.
__device__ __forceinline__ const void* elem_at(const void* base, int64_t row, int64_t stride, int64_t col, int bytes) {
  return static_cast<const unsigned char*>(base) + (row * stride + col) * bytes;
}
__device__ __forceinline__ void* elem_at(void* base, int64_t row, int64_t stride, int64_t col, int bytes) {
  return static_cast<unsigned char*>(base) + (row * stride + col) * bytes;
}

// x's raw registers at (row, col). x may be out: plain ld.global, not .nc.
template <DType XT, int N>
__device__ __forceinline__ void load_x_raw(const NormParams& p, int64_t row, int64_t col,
                                           RawVec<XT, N>& xr TEJAS_CALLER_PARAM) {
  load_raw<XT, N, false>(elem_at(p.x, row, p.x_stride, col, kElemBytes<XT>), xr TEJAS_NESTED_SITE);
}

// The residual's raw registers: a 16-bit (bf16 / f16) or f32 access, by the runtime res_dtype.
template <int N, bool kItem>
__device__ __forceinline__ void load_residual_raw(const NormParams& p, int64_t row, int64_t col,
                                                  RawAny<N>& rr TEJAS_CALLER_PARAM) {
  const void* a = elem_at(p.residual, row, p.res_stride, col, float_bytes(p.res_dtype));
  load_raw_any<N, false, kItem>(a, p.res_dtype, rr TEJAS_NESTED_SITE);
}

// residual += x, stored; f gets the stored value.
template <int N>
__device__ __forceinline__ void add_residual(const NormParams& p, int64_t row, int64_t col, float (&f)[N],
                                             const float (&r)[N] TEJAS_CALLER_PARAM) {
  const bool narrow = p.res_dtype != DType::f32;
#pragma unroll
  for (int e = 0; e < N; ++e) f[e] = round_to(p.res_dtype, narrow ? add_round_to_odd(r[e], f[e]) : r[e] + f[e]);
  store_any<N>(elem_at(p.residual, row, p.res_stride, col, float_bytes(p.res_dtype)), p.res_dtype, f TEJAS_NESTED_SITE);
}

// residual += x for x and the residual in one 16-bit dtype (NormParams::packed_add), on the
// registers as loaded: each pair's sum by one packed add, rounded once (num::hadd2), which is
// the correctly rounded sum add_residual gets through round-to-odd. The sum replaces x's
// registers (decoded from there as x would be) and is stored as is. NOTES: add_residual spends
// ~12 instructions per element (decode x and r, TwoSum, the round-to-odd fix-up, the
// conversion back), most on the ALU pipe, which ncu showed busy in the fused op
// (docs/kernels/fused_add_rms_norm.md). Kept in x's registers, not decoded into v here: with the
// sum decoded on its own path beside the per-element one, the E-16 kernels spilled 36-92 bytes.
template <DType XT, int N, class RawR>
__device__ __forceinline__ void add_residual_packed(const NormParams& p, int64_t row, int64_t col, RawVec<XT, N>& xr,
                                                    const RawR& rr TEJAS_CALLER_PARAM) {
  static_assert(XT != DType::f32 && N % 2 == 0, "pairs of 16-bit elements");
  using H = std::conditional_t<XT == DType::bf16, num::Bf16, num::F16>;
  uint32_t xw[N / 2], rw[N / 2];
  memcpy(xw, &xr, sizeof xw);
  memcpy(rw, &rr, sizeof rw);  // a 16-bit residual: the first N * 2 bytes
#pragma unroll
  for (int i = 0; i < N / 2; ++i) xw[i] = num::hadd2<H>(xw[i], rw[i]);
  memcpy(xr.c, xw, sizeof xw);
  using R = RawVec<XT, N>;
#pragma unroll
  for (int i = 0; i < R::kBytes / R::kPiece; ++i)
    ptx::st_global(static_cast<typename R::Chunk*>(elem_at(p.residual, row, p.res_stride, col, kElemBytes<XT>)) + i,
                   xr.c[i] TEJAS_NESTED_SITE);
}

// y = v * inv_rms * weight, in place: the weight's raw registers loaded, then applied.
template <int N>
__device__ __forceinline__ void load_weight_raw(const NormParams& p, int64_t col, RawAny<N>& wr TEJAS_CALLER_PARAM) {
  load_raw_any<N, true>(elem_at(p.weight, 0, 0, col, float_bytes(p.w_dtype)), p.w_dtype, wr TEJAS_NESTED_SITE);
}

template <int N>
__device__ __forceinline__ void apply_weight(const NormParams& p, const RawAny<N>& wr, float inv_rms, float (&f)[N]) {
  float w[N];
  decode_any(p.w_dtype, wr, w);
#pragma unroll
  for (int e = 0; e < N; ++e) f[e] = f[e] * inv_rms * w[e];
}

// The same for a weight known to be 16-bit (bf16 or f16 by p.w_dtype): a vec-8 config's, since
// 8 f32 elements would be a 32-byte access. No room for f32's upper half.
template <int N>
__device__ __forceinline__ void load_weight_raw(const NormParams& p, int64_t col, RawVec<DType::bf16, N>& wr TEJAS_CALLER_PARAM) {
  load_raw<DType::bf16, N, true>(elem_at(p.weight, 0, 0, col, 2), wr TEJAS_NESTED_SITE);
}

// N 16-bit values as loaded (bf16 or f16 bits, by d) as floats.
template <int N>
__device__ __forceinline__ void decode_16bit(DType d, const RawVec<DType::bf16, N>& r, float (&f)[N]) {
  if (d == DType::bf16) {
    decode_raw(r, f);
  } else {
    RawVec<DType::f16, N> h;
    memcpy(&h, &r, sizeof h);
    decode_raw(h, f);
  }
}

template <int N>
__device__ __forceinline__ void apply_weight(const NormParams& p, const RawVec<DType::bf16, N>& wr, float inv_rms,
                                             float (&f)[N]) {
  float w[N];
  decode_16bit(p.w_dtype, wr, w);
#pragma unroll
  for (int e = 0; e < N; ++e) f[e] = f[e] * inv_rms * w[e];
}

template <DType XT, int N>
__device__ __forceinline__ void store_out(const NormParams& p, int64_t row, int64_t col, const float (&f)[N],
                                          float scale TEJAS_CALLER_PARAM) {
  if (p.out_kind == OutKind::same) {
    store_typed<XT, N>(elem_at(p.out, row, p.out_stride, col, kElemBytes<XT>), f TEJAS_NESTED_SITE);
    return;
  }
  // y * (1 / s), then e4m3 RNE + satfinite: within ~1.5 f32 ulps of y / s, far inside the tie
  // window of the codes' accuracy rule (2^-18, docs/tools.md). Dynamic and group scales are
  // >= min_scale (~2^-42), so 1 / s is normal; a static scale whose reciprocal is not (or a NaN
  // row's scale) divides. NOTES: an IEEE division per element, as before, is ~10 instructions
  // with a slow-path call.
  float q[N];
  const float inv = num::keep_order(1.0f / scale);  // host compilers: exact_round.h
  if (num::is_positive_normal(inv)) {
#pragma unroll
    for (int e = 0; e < N; ++e) q[e] = f[e] * inv;
  } else {
#pragma unroll
    for (int e = 0; e < N; ++e) q[e] = f[e] / scale;
  }
  store_typed<DType::e4m3, N>(elem_at(p.out, row, p.out_stride, col, 1), q TEJAS_NESTED_SITE);
}

// The f32 scale of a dynamic row or group: max(amax, floor) / 448; NaN stays NaN.
__device__ __forceinline__ float fp8_scale(float amax, float min_scale) {
  return amax != amax ? amax : fmaxf(amax / kE4m3MaxF, min_scale);
}

// The scale of the fp8 group whose amax is `amax`, for the thread holding vector j of the row:
// written by the group's first vector's thread (f32 or ue8m0), and returned as stored (q is
// divided by the stored scale).
__device__ __forceinline__ float group_scale(const NormParams& p, int64_t row, int j, int group_vecs, float amax) {
  const float s = fp8_scale(amax, p.min_scale);
  if (j % group_vecs == 0) {
    const int64_t g = j / group_vecs;
    unsigned char* sp = static_cast<unsigned char*>(p.scale) +
                        (row * p.scale_stride_t + g * p.scale_stride_g) * dtype_size(p.scale_dtype);
    if (p.scale_dtype == DType::ue8m0) ptx::st_global(sp, num::f32_to_ue8m0(s));
    else ptx::st_global(reinterpret_cast<float*>(sp), s);
  }
  return p.scale_dtype == DType::ue8m0 ? num::ue8m0_to_f32(num::f32_to_ue8m0(s)) : s;
}

// Group maxima of item k (the GroupVecs consecutive threads of one group; every lane of the
// warp calls it: shuffles need the full mask). A group within a warp ends here; a wider one
// leaves each warp's maximum in shared memory, read back by group_amax_wide after a barrier.
// NOTES: publishing item by item keeps one maximum live instead of I; that is what keeps the
// V = 1, E = 16 kernel (I = 16) inside sm_80's 64 registers at 1024 threads without spilling.
template <int GroupVecs>
__device__ __forceinline__ float group_amax_warp(int tid, int k, float amax, NormSmem* smem) {
  constexpr int kWidth = GroupVecs < kWarpSize ? GroupVecs : kWarpSize;
#pragma unroll
  for (int off = kWidth / 2; off > 0; off /= 2)
    amax = dev::MaxNanOp{}(amax, __shfl_xor_sync(dev::kFullWarpMask, amax, off));
  if constexpr (GroupVecs > kWarpSize)
    if (tid % kWarpSize == 0) ptx::st_shared(&smem->group_amax[k][tid / kWarpSize], amax);
  return amax;
}

template <int GroupVecs>
__device__ __forceinline__ float group_amax_wide(int tid, int k, const NormSmem* smem) {
  constexpr int kWarps = GroupVecs / kWarpSize;
  const int first = (tid / GroupVecs) * kWarps;
  float m = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) m = dev::MaxNanOp{}(m, ptx::ld_shared(&smem->group_amax[k][first + w]));
  return m;
}

// Item k of this thread is vector j = k * nthreads + tid of the row; runs f(k, column) for each
// item that lies in the row (j < nvec).
template <int I, int V, class F>
__device__ __forceinline__ void each_item(const RowSlot& rs, int nvec, F&& f) {
#pragma unroll
  for (int k = 0; k < I; ++k) {
    const int j = k * rs.nthreads + rs.tid;
    if (j < nvec) f(k, static_cast<int64_t>(j) * V);
  }
}

// Steps 2-4 of a row whose values (residual added and stored) are in v / vt: the sum of squares,
// y = v * inv_rms * weight in place, and the write (out, and the fp8 scales).
// kNarrowWeight: the weight is 16-bit (vec-8 configs), its registers half of RawAny's.
template <DType XT, int V, int I, bool kWeightsFirst, bool kNarrowWeight = false, bool kOneReduce = false>
__device__ __forceinline__ void finish_row(const NormParams& p, const RowSlot& rs, int nvec, float (&v)[I][V],
                                           float (&vt)[1], bool has_tail, int64_t tail_col, NormSmem* smem) {
  const auto each = [&](auto&& f) { each_item<I, V>(rs, nvec, f); };
  // 2. Sum of squares -> 1 / rms.
  float ss = vt[0] * vt[0];
#pragma unroll
  for (int k = 0; k < I; ++k)
#pragma unroll
    for (int e = 0; e < V; ++e) ss = fmaf(v[k][e], v[k][e], ss);  // nvcc contracts it: written out for the emulator
  if constexpr (kOneReduce) {
    // The norm.fp8_one_reduction variant (config.h): fp8 dynamic output, 16-byte rows, no tail,
    // a 16-bit weight. The weight comes first, and the row's amax as inv_rms x max|v w| travels
    // in the sum of squares' block reduction, so the row pays one reduction (two barriers), not
    // two. inv_rms x max|v w| is max|y| up to the order of the products (~2 f32 ulps). Where
    // some |v w| overflows f32 (|y| itself may not: inv_rms is small then) the row reduces
    // max|y| as the default kernel does (uniform: m is the row's).
    static_assert(kNarrowWeight, "a vec-8 config's weight is 16-bit");
    RawVec<DType::bf16, V> wr[I];
    each([&](int k, int64_t col) { load_weight_raw<V>(p, col, wr[k]); });
    float m = 0.0f;
    each([&](int k, int64_t) {
      float w[V];
      decode_16bit(p.w_dtype, wr[k], w);
#pragma unroll
      for (int e = 0; e < V; ++e) m = dev::MaxNanOp{}(m, fabsf(v[k][e] * w[e]));
    });
    row_allreduce2(p, ss, m, smem);
    const float inv_rms = dev::rsqrtf(ss / static_cast<float>(p.H) + p.eps);
    float amax = 0.0f;
    each([&](int k, int64_t) {
      apply_weight(p, wr[k], inv_rms, v[k]);
#pragma unroll
      for (int e = 0; e < V; ++e) amax = dev::MaxNanOp{}(amax, fabsf(v[k][e]));
    });
    const float row_amax = m > kF32Max ? row_allreduce(p, amax, dev::MaxNanOp{}, 0.0f, smem) : m * inv_rms;
    const float s = fp8_scale(row_amax, p.min_scale);
    if (rs.tid == 0) ptx::st_global(static_cast<float*>(p.scale) + rs.row, s);
    each([&](int k, int64_t col) { store_out<XT, V>(p, rs.row, col, v[k], s); });
    return;
  }
  ss = row_allreduce(p, ss, dev::SumOp{}, 0.0f, smem);
  const float inv_rms = dev::rsqrtf(ss / static_cast<float>(p.H) + p.eps);

  // 3. y = v * inv_rms * weight, in place; the weight loads first too where that fits (E 8, or
  // at most 2 items: the rows of H <= 2048 and the 16-byte rows above), so the thread waits for
  // one L2 round trip, not one per item.
  // NOTES: weights first in the E-16 kernels of 4-8 items (vec 2 and 4) spilled 4-16 bytes.
  {
    std::conditional_t<kNarrowWeight, RawVec<DType::bf16, V>, RawAny<V>> wr[I];
    RawAny<1> wtr;
    each([&](int k, int64_t col) {
      load_weight_raw<V>(p, col, wr[k]);
      if constexpr (!kWeightsFirst) apply_weight(p, wr[k], inv_rms, v[k]);
    });
    if (has_tail) load_weight_raw<1>(p, tail_col, wtr);
    if constexpr (kWeightsFirst) each([&](int k, int64_t) { apply_weight(p, wr[k], inv_rms, v[k]); });
    if (has_tail) apply_weight(p, wtr, inv_rms, vt);
  }

  // 4. The write, from the same registers.
  if (p.out_kind == OutKind::fp8_group) {
    constexpr int kGroupVecs = kQuantGroup / V;  // H % 128 == 0: no tail, every group whole
    constexpr bool kWide = kGroupVecs > kWarpSize;
    float amax[kWide ? 1 : I];
#pragma unroll
    for (int k = 0; k < I; ++k) {
      float a = 0.0f;
#pragma unroll
      for (int e = 0; e < V; ++e) {
        v[k][e] = clamp_f32_range(v[k][e]);
        a = dev::MaxNanOp{}(a, fabsf(v[k][e]));
      }
      a = group_amax_warp<kGroupVecs>(rs.tid, k, a, smem);
      if constexpr (!kWide) amax[k] = a;
    }
    if constexpr (kWide) __syncthreads();
#pragma unroll
    for (int k = 0; k < I; ++k) {
      const int j = k * rs.nthreads + rs.tid;
      if (j >= nvec) continue;
      float a;
      if constexpr (kWide) a = group_amax_wide<kGroupVecs>(rs.tid, k, smem);
      else a = amax[k];
      const float stored = group_scale(p, rs.row, j, kGroupVecs, a);
      store_out<XT, V>(p, rs.row, static_cast<int64_t>(j) * V, v[k], stored);
    }
    return;
  }
  float s = 1.0f;
  if (p.out_kind == OutKind::fp8_dynamic) {
    float amax = fabsf(vt[0]);
#pragma unroll
    for (int k = 0; k < I; ++k)
#pragma unroll
      for (int e = 0; e < V; ++e) amax = dev::MaxNanOp{}(amax, fabsf(v[k][e]));
    s = fp8_scale(row_allreduce(p, amax, dev::MaxNanOp{}, 0.0f, smem), p.min_scale);
    if (rs.tid == 0) ptx::st_global(static_cast<float*>(p.scale) + rs.row, s);
  } else if (p.out_kind == OutKind::fp8_static) {
    s = ptx::ld_global_nc(static_cast<const float*>(p.scale));
  }
#pragma unroll
  for (int k = 0; k < I; ++k) {
    const int j = k * rs.nthreads + rs.tid;
    if (j < nvec) store_out<XT, V>(p, rs.row, static_cast<int64_t>(j) * V, v[k], s);
  }
  if (has_tail) store_out<XT, 1>(p, rs.row, tail_col, vt, s);
}

// kOneReduce: the norm.fp8_one_reduction variant (finish_row; vec 8, fp8 dynamic output only).
template <DType XT, int V, int E, bool kOneReduce = false>
__global__ void __launch_bounds__(kMaxThreads) norm_kernel(const NormParams p) {
  dev::begin_dependent_grid();
  static_assert(E % V == 0 && E / V <= kLargeE, "E floats per thread as E / V vectors");
  constexpr int I = E / V;
  NormSmem* smem = dev::dynamic_smem<NormSmem>();
  const RowSlot rs = row_slot(p);
  if (rs.row >= p.T) return;  // warp-per-row mode only (whole warps; no block barrier there)
  const int nvec = p.H / V, tail = p.H - nvec * V;
  const int64_t tail_col = static_cast<int64_t>(nvec) * V + rs.tid;
  const bool has_tail = rs.tid < tail;

  // 1. The row into registers: every load first (raw), then decoded, then the residual added
  // and stored.
  // NOTES: a load stays after a store it may alias (x may be out; the residual is written), so
  // a residual store between two items' loads held the second item's loads until the first
  // item's data arrived (one DRAM round trip per item instead of one per row). Decoding each
  // item as it was loaded did the same in SASS: the decode stayed in the load's guarded block
  // and waited for the data (vec_io.cuh).
  // Item k is vector j = k * nthreads + tid of the row; each(f) runs f(k, column) for this
  // thread's items.
  const auto each = [&](auto&& f) { each_item<I, V>(rs, nvec, f); };
  float v[I][V], r[I][V];
  float vt[1] = {0.0f}, rt[1] = {0.0f};
#pragma unroll
  for (int k = 0; k < I; ++k)
#pragma unroll
    for (int e = 0; e < V; ++e) v[k][e] = 0.0f;
  RawVec<XT, V> xr[I];
  RawAny<V> rr[I];
  dev::Loaded<RawVec<XT, 1>> xtr;  // loaded and read under has_tail
  RawAny<1> rtr;
  // NormParams::packed_add (x and the residual in one 16-bit dtype): x's registers hold the sum
  // (add_residual_packed) when they are decoded; the residual's are not decoded.
  // NOTES: written out here and in norm_pipe_kernel; one shared __device__ predicate for both
  // moved ptxas's allocation so that the sm_90a E-16 vec-1 / vec-2 kernels spilled 16-200 bytes.
  const bool packed = kPackedAddable<XT, V> && p.packed_add && p.residual != nullptr;
  const auto decode_item = [&](int k, int64_t col) {
    if constexpr (kPackedAddable<XT, V>) {
      if (packed) add_residual_packed<XT, V>(p, rs.row, col, xr[k], rr[k]);
    }
    decode_raw(xr[k], v[k]);
    if (p.residual != nullptr && !packed) decode_any(p.res_dtype, rr[k], r[k]);
  };
  // NOTES: f32 x vec 4 / E 16 (f32 rows above 2048) decodes each item as it arrives instead:
  // every load first spilled 6-12 bytes at the 64-register cap there; so does the vec 1 / E 16
  // kernel on sm_100a (36 bytes loads first, 8 as it arrives).
  constexpr bool kLoadsFirst =
      !(XT == DType::f32 && V == 4 && E == kLargeE) && !(TEJAS_ARCH >= 1000 && V == 1 && E == kLargeE);
  each([&](int k, int64_t col) {
    load_x_raw<XT, V>(p, rs.row, col, xr[k]);
    if (p.residual != nullptr) load_residual_raw<V, true>(p, rs.row, col, rr[k]);
    if constexpr (!kLoadsFirst) decode_item(k, col);
  });
  if (has_tail) {
    RawVec<XT, 1> t;
    load_x_raw<XT, 1>(p, rs.row, tail_col, t);
    xtr.set(t);
    if (p.residual != nullptr) load_residual_raw<1, false>(p, rs.row, tail_col, rtr);
  }
  // The norm.prefetch_rows variant: the row `prefetch_rows` ahead heads for L2 now (no registers
  // held), so that its CTA, starting about a wave later, finds its x and residual there. Only
  // with at most 2 items (the 16-byte rows): NOTES: with 4-16 items the addresses spilled 4-24
  // bytes in the E-16 kernels.
  if (I <= 2 && p.prefetch_rows > 0 && rs.row + p.prefetch_rows < p.T) {
    const int64_t ahead = rs.row + p.prefetch_rows;
    each([&](int, int64_t col) {
      ptx::prefetch_l2(elem_at(p.x, ahead, p.x_stride, col, kElemBytes<XT>));
      if (p.residual != nullptr)
        ptx::prefetch_l2(elem_at(p.residual, ahead, p.res_stride, col, float_bytes(p.res_dtype)));
    });
  }
  // The weight is read after the reduction (keeping it out of registers); its lines head for L2
  // now, so that read is an L2 hit even in decode, where nothing else brought them there.
  // NOTES: only with few items (vectorized rows): with 8-16 (misaligned views, vec 1-2) the
  // compiler kept every weight address live across the reduction and spilled 92-132 bytes.
  if constexpr (I <= 4) {
    each([&](int, int64_t col) { ptx::prefetch_l2(elem_at(p.weight, 0, 0, col, float_bytes(p.w_dtype))); });
  }
  // Decoded once every load is issued.
  if constexpr (kLoadsFirst) each(decode_item);
  if (has_tail) {
    decode_raw(xtr.get(), vt);
    if (p.residual != nullptr) decode_any(p.res_dtype, rtr, rt);
  }
  if (p.residual != nullptr) {
    if (!packed) each([&](int k, int64_t col) { add_residual<V>(p, rs.row, col, v[k], r[k]); });
    if (has_tail) add_residual<1>(p, rs.row, tail_col, vt, rt);
  }

  // 2-4. Sum of squares, weight, write.
  finish_row<XT, V, I, kLoadsFirst && (E == kSmallE || I <= 2), kOneReduce, kOneReduce>(p, rs, nvec, v, vt, has_tail,
                                                                                     tail_col, smem);
}

// The norm.pipeline variant (config.h's with_pipeline): persistent CTAs walk rows blockIdx.x,
// + gridDim.x, ...; each keeps p.pipeline_stages rows ahead in flight, x (and the residual) copied
// by cp.async into this thread's own shared-memory slots, while it reduces and writes the current
// row. The default kernel has its loads out only before each row's reduction (its CTA waits for
// one DRAM round trip, then reduces, reads the weight and stores with nothing in flight); here the
// next rows' bytes are in flight through all of that, and cost no registers.
// Rows of whole 16-byte x vectors only (pipeline_eligible): no tail, and the residual, if any,
// 16-bit (16-byte vectors too).
// Each thread reads back only the slots it copied into, so cp_async_wait alone orders them: no
// barrier. A slot is copied into again only after the ld.shared that read it, in program order
// (the cp.async wrapper's memory clobber keeps the compiler from moving the load past it; the
// copy is performed as if by an asynchronous thread that the issue starts, after the thread's
// earlier accesses).
template <DType XT, int V, int E>
__global__ void __launch_bounds__(kMaxThreads) norm_pipe_kernel(const NormParams p) {
  dev::begin_dependent_grid();
  static_assert(V * kElemBytes<XT> == kPipeSlotBytes && E % V == 0, "16-byte x vectors, E / V of them");
  constexpr int I = E / V;
  using Slot = typename RawVec<XT, V>::Chunk;  // 16 bytes
  static_assert(sizeof(Slot) == kPipeSlotBytes && sizeof(NormSmem) % kPipeSlotBytes == 0, "slots after NormSmem");
  NormSmem* smem = dev::dynamic_smem<NormSmem>();
  Slot* const slots = reinterpret_cast<Slot*>(smem + 1);
  const int nvec = p.H / V;  // H % V == 0
  const bool fused = p.residual != nullptr;
  const int tensors = fused ? 2 : 1, stages = p.pipeline_stages;
  RowSlot rs{static_cast<int64_t>(blockIdx.x), static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x)};
  const int64_t step = gridDim.x;
  const auto slot = [&](int stage, int tensor, int k) {
    return slots + ((stage * tensors + tensor) * I + k) * rs.nthreads + rs.tid;
  };
  // Row `row`'s vectors of this thread into stage `stage`, as one commit group; past the last
  // row the group is empty, so that group n is always this CTA's n-th row.
  const auto issue = [&](int64_t row, int stage) {
    if (row < p.T) {
      each_item<I, V>(rs, nvec, [&](int k, int64_t col) {
        ptx::cp_async_16(slot(stage, 0, k), elem_at(p.x, row, p.x_stride, col, kElemBytes<XT>));
        if (fused) ptx::cp_async_16(slot(stage, 1, k), elem_at(p.residual, row, p.res_stride, col, 2));
      });
    }
    ptx::cp_async_commit();
  };
  for (int stage = 0; stage < stages; ++stage) issue(rs.row + stage * step, stage);
  // NOTES: no prefetch.L2 of the weight (norm_kernel's): its addresses were kept for the loop's
  // weight loads and spilled 16-48 bytes in the E-16 kernels; every CTA walks >= 2 rows, so
  // only the first row's weight read can miss L2.

  int stage = 0;
  for (; rs.row < p.T; rs.row += step) {
    ptx::cp_async_wait_pending(stages - 1);  // this row's group landed; the next one may not have
    // This row's slots into registers as raw words, then the slots are refilled with the row
    // `stages` ahead before anything is decoded (fewer live registers across the copies' address
    // math: decoded first, the E-16 kernels spilled 8-16 bytes).
    RawVec<XT, V> xr[I];
    RawVec<DType::bf16, V> rr[I];  // a 16-bit residual (pipeline_eligible), bf16 or f16 bits
    each_item<I, V>(rs, nvec, [&](int k, int64_t) {
      xr[k].c[0] = ptx::ld_shared(slot(stage, 0, k));
      if (fused) rr[k].c[0] = ptx::ld_shared(slot(stage, 1, k));
    });
    issue(rs.row + stages * step, stage);
    float v[I][V], r[I][V];
    float vt[1] = {0.0f};
#pragma unroll
    for (int k = 0; k < I; ++k)
#pragma unroll
      for (int e = 0; e < V; ++e) v[k][e] = r[k][e] = 0.0f;
    const bool packed = kPackedAddable<XT, V> && p.packed_add && fused;  // as in norm_kernel
    each_item<I, V>(rs, nvec, [&](int k, int64_t col) {
      if constexpr (kPackedAddable<XT, V>) {
        if (packed) add_residual_packed<XT, V>(p, rs.row, col, xr[k], rr[k]);
      }
      decode_raw(xr[k], v[k]);
      if (fused && !packed) decode_16bit(p.res_dtype, rr[k], r[k]);
    });
    stage = stage + 1 == stages ? 0 : stage + 1;
    if (fused && !packed) each_item<I, V>(rs, nvec, [&](int k, int64_t col) { add_residual<V>(p, rs.row, col, v[k], r[k]); });
    // NOTES: kNarrowWeight: with RawAny's f32 room the unloaded upper halves were carried from
    // row to row through local memory (32-48 bytes of spill in the E-16 kernels).
    finish_row<XT, V, I, true, true>(p, rs, nvec, v, vt, false, 0, smem);
  }
  ptx::cp_async_wait_all();  // the empty trailing groups: nothing left pending at exit
}

// N floats already rounded to d (bf16 or f16) as d's bits: exact.
template <int N>
__device__ __forceinline__ void encode_16bit(DType d, const float (&f)[N], RawVec<DType::bf16, N>& r) {
  unsigned char b[RawVec<DType::bf16, N>::kBytes];
#pragma unroll
  for (int e = 0; e < N; ++e) {
    if (d == DType::bf16) encode<DType::bf16>(f[e], b + 2 * e);
    else encode<DType::f16>(f[e], b + 2 * e);
  }
  memcpy(r.c, b, sizeof b);
}

// The norm.warp_items variant (config.h's with_warp_pipeline): one warp per row, warps walking
// rows with `pipeline_stages` rows ahead in their own shared-memory buffers (stages + 1 of them:
// a row stays in its buffer until its output is written). Lane l owns vectors l, l + 32, ... of
// the row (items), each read back from its slot once per pass:
//   1. the sum of squares (fused: residual += x first, stored, and the sum written back into x's
//      slot, so the later passes read the stored value), reduced by shuffles;
//   2. (dynamic fp8 scales) max |y|, reduced by shuffles;
//   3. y = v x inv_rms x weight, written (fp8 groups: the group's 16 vectors are 16 lanes of one
//      item, their amax reduced by shuffles within the half warp).
// y is computed as finish_row computes it (apply_weight), so passes 2 and 3 agree bit for bit.
// Each lane reads back only slots it copied into or wrote, in program order; the buffer is
// copied into again (the row stages + 1 ahead) only after pass 3 read it. Warps of one CTA
// share nothing, so there is no barrier and a warp leaves when its rows are done.
// Rows of whole 16-byte vectors, a 16-bit residual or none, and a 16-bit weight (vec 8 needs it).
template <DType XT>
__global__ void __launch_bounds__(kWarpPipeThreads, kWarpPipeMinCtas) norm_warp_pipe_kernel(const NormParams p) {
  dev::begin_dependent_grid();
  constexpr int V = kMaxVec;
  static_assert(V * kElemBytes<XT> == kPipeSlotBytes, "16-byte x vectors");
  // The other 16-bit dtype: a fused row's sum in a residual of the other dtype.
  constexpr DType kOther = XT == DType::bf16 ? DType::f16 : DType::bf16;
  using Slot = typename RawVec<XT, V>::Chunk;  // 16 bytes
  const int lane = static_cast<int>(threadIdx.x % kWarpSize), warp = static_cast<int>(threadIdx.x / kWarpSize);
  const int nvec = p.H / V;  // H % V == 0
  const int items = (nvec + kWarpSize - 1) / kWarpSize;
  const bool fused = p.residual != nullptr;
  const int tensors = fused ? 2 : 1, stages = p.pipeline_stages, buffers = stages + 1;
  const int64_t step = static_cast<int64_t>(gridDim.x) * kWarpPipeWarps;
  int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpPipeWarps + warp;
  // This lane's slot of item 0 of x in buffer b; item k at + k x 32, the residual's (fused) at
  // + items x 32 after x's (consecutive lanes, consecutive 16 bytes: conflict-free).
  Slot* const lane_slots = dev::dynamic_smem<Slot>() + warp * buffers * tensors * items * kWarpSize + lane;
  const int buffer_slots = tensors * items * kWarpSize, res_slots = items * kWarpSize;
  // Row r's vectors of this lane into buffer b, as one commit group (empty past the last row, so
  // that group n is always this warp's n-th row).
  const auto issue = [&](int64_t r, int b) {
    if (r < p.T) {
      Slot* const xs = lane_slots + b * buffer_slots;
      for (int k = 0, j = lane; j < nvec; ++k, j += kWarpSize) {
        const int64_t col = static_cast<int64_t>(j) * V;
        ptx::cp_async_16(xs + k * kWarpSize, elem_at(p.x, r, p.x_stride, col, kElemBytes<XT>));
        if (fused) ptx::cp_async_16(xs + res_slots + k * kWarpSize, elem_at(p.residual, r, p.res_stride, col, 2));
      }
    }
    ptx::cp_async_commit();
  };
  for (int b = 0; b < stages; ++b) issue(row + b * step, b);
  const bool packed = kPackedAddable<XT, V> && p.packed_add && fused;  // as in norm_kernel
  const bool sum_in_x = !fused || p.res_dtype == XT;  // x's slots hold XT after pass 1 (else kOther)
  // A slot's 16 bytes (x, or the stored sum) as values.
  const auto decode_slot = [&](const Slot& w, float (&v)[V]) {
    if (sum_in_x) {
      RawVec<XT, V> raw;
      raw.c[0] = w;
      decode_raw(raw, v);
    } else {
      RawVec<kOther, V> raw;
      memcpy(raw.c, &w, sizeof w);
      decode_raw(raw, v);
    }
  };
  // Item k's values from x's slots xs.
  const auto values = [&](const Slot* xs, int k, float (&v)[V]) { decode_slot(ptx::ld_shared(xs + k * kWarpSize), v); };
  // y = v x inv_rms x weight, as finish_row computes it.
  const auto y_of = [&](const Slot* xs, int k, int64_t col, float inv_rms, float (&v)[V]) {
    values(xs, k, v);
    RawVec<DType::bf16, V> wr;
    load_weight_raw<V>(p, col, wr);
    apply_weight(p, wr, inv_rms, v);
  };
  const float static_scale =
      p.out_kind == OutKind::fp8_static ? ptx::ld_global_nc(static_cast<const float*>(p.scale)) : 1.0f;

  int buf = 0;
  for (; row < p.T; row += step) {
    const int ahead = buf + stages < buffers ? buf + stages : buf + stages - buffers;
    issue(row + stages * step, ahead);  // into the buffer the previous row left
    ptx::cp_async_wait_pending(stages);  // this row's group landed; the `stages` newer may not have
    Slot* const xs = lane_slots + buf * buffer_slots;

    // 1. The sum of squares (the residual added first).
    float ss = 0.0f;
    for (int k = 0, j = lane; j < nvec; ++k, j += kWarpSize) {
      float v[V];
      if (fused) {
        const int64_t col = static_cast<int64_t>(j) * V;
        RawVec<XT, V> xr;
        RawVec<DType::bf16, V> rr;  // a 16-bit residual, bf16 or f16 bits
        xr.c[0] = ptx::ld_shared(xs + k * kWarpSize);
        rr.c[0] = ptx::ld_shared(xs + res_slots + k * kWarpSize);
        RawVec<DType::bf16, V> sum;
        if constexpr (kPackedAddable<XT, V>) {
          if (packed) {
            add_residual_packed<XT, V>(p, row, col, xr, rr);
            memcpy(&sum, &xr, sizeof sum);
          }
        }
        if (!packed) {
          float r[V];
          decode_raw(xr, v);
          decode_16bit(p.res_dtype, rr, r);
          add_residual<V>(p, row, col, v, r);
          encode_16bit(p.res_dtype, v, sum);
        }
        ptx::st_shared(xs + k * kWarpSize, sum.c[0]);  // the stored sum, for passes 2-3
        decode_slot(sum.c[0], v);
      } else {
        values(xs, k, v);
      }
      // The item's 8 squares, then the item's sum into the lane's: <= 8 + 16 + 5 (shuffles)
      // roundings deep (kernel_harness.h's error budget).
      float part = 0.0f;
#pragma unroll
      for (int e = 0; e < V; ++e) part = fmaf(v[e], v[e], part);  // nvcc contracts it: written out for the emulator
      ss += part;
    }
    ss = dev::warp_allreduce(ss, dev::SumOp{});
    const float inv_rms = dev::rsqrtf(ss / static_cast<float>(p.H) + p.eps);

    // 2. A dynamic scale: max |y| over the row.
    float s = static_scale;
    if (p.out_kind == OutKind::fp8_dynamic) {
      float amax = 0.0f;
      for (int k = 0, j = lane; j < nvec; ++k, j += kWarpSize) {
        float v[V];
        y_of(xs, k, static_cast<int64_t>(j) * V, inv_rms, v);
#pragma unroll
        for (int e = 0; e < V; ++e) amax = dev::MaxNanOp{}(amax, fabsf(v[e]));
      }
      s = fp8_scale(dev::warp_allreduce(amax, dev::MaxNanOp{}), p.min_scale);
      if (lane == 0) ptx::st_global(static_cast<float*>(p.scale) + row, s);
    }

    // 3. The write. fp8 groups: every lane takes part in each item's shuffles (a lane past the
    // row's vectors with amax 0, in a half warp of its own: nvec is a multiple of 16).
    if (p.out_kind == OutKind::fp8_group) {
      constexpr int kGroupVecs = kQuantGroup / V;
      static_assert(kGroupVecs <= kWarpSize && kWarpSize % kGroupVecs == 0, "a group within a half warp");
      for (int k = 0, j = lane; k < items; ++k, j += kWarpSize) {
        const bool in_row = j < nvec;
        const int64_t col = static_cast<int64_t>(j) * V;
        float v[V];
        float a = 0.0f;
        if (in_row) {
          y_of(xs, k, col, inv_rms, v);
#pragma unroll
          for (int e = 0; e < V; ++e) {
            v[e] = clamp_f32_range(v[e]);
            a = dev::MaxNanOp{}(a, fabsf(v[e]));
          }
        }
        a = group_amax_warp<kGroupVecs>(lane, k, a, nullptr);
        if (in_row) store_out<XT, V>(p, row, col, v, group_scale(p, row, j, kGroupVecs, a));
      }
    } else {
      for (int k = 0, j = lane; j < nvec; ++k, j += kWarpSize) {
        const int64_t col = static_cast<int64_t>(j) * V;
        float v[V];
        y_of(xs, k, col, inv_rms, v);
        store_out<XT, V>(p, row, col, v, s);
      }
    }
    buf = buf + 1 == buffers ? 0 : buf + 1;
  }
  ptx::cp_async_wait_all();  // the empty trailing groups: nothing left pending at exit
}

}  // inline namespace TEJAS_BUILD_NS
}  // namespace tejas::norm
