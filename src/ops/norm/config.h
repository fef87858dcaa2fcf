// Launch configuration of the RMSNorm family: a pure function of the problem (shape, dtypes,
// byte alignment of every operand's rows), unit-tested in tests/ops/norm/test_norm_config.cpp.
//
// The row lives in registers between the sum of squares and the scaled write: each thread holds
// `elems_per_thread` (E, a template parameter: 8 or 16) floats, as E / vec vectors of `vec`
// elements. Vector j of a row goes to thread j % threads (item j / threads), so a warp's lanes
// touch consecutive vectors (coalesced). The last H % vec elements (the tail) go one per thread
// to threads 0 .. tail - 1, as scalar accesses.
#pragma once
#include <cstdint>
#include <string>

#include "ops/norm/params.h"
#include "tejas/dtype.h"

namespace tejas::norm {

inline constexpr int kWarpSize = 32;
inline constexpr int kMaxVecBytes = 16;           // widest global access (ld.global.v4.u32)
inline constexpr int kMaxVec = 8;                 // elements per vector (8 x 16-bit = 16 bytes)
inline constexpr int kMaxThreads = 1024;
inline constexpr int kSmallE = 8;                 // floats per thread for rows up to kSmallRowElems
inline constexpr int kLargeE = 16;                // floats per thread beyond (more bytes in flight)
inline constexpr int kSmallRowElems = 2048;       // 256 threads x 8
inline constexpr int64_t kMaxH = int64_t{kMaxThreads} * kLargeE;  // 16384: the kernels' limit
inline constexpr int kWarpRowsPerBlock = 4;       // rows per CTA in warp-per-row mode
inline constexpr int kQuantGroup = 128;           // fp8_group: elements per scale

// One tensor operand: its dtype and the alignment its row starts share, in bytes (a power of two
// <= kMaxVecBytes, from detail::access_alignment). Absent operands are ignored.
struct Operand {
  bool present = false;
  DType dtype = DType::f32;
  int align = kMaxVecBytes;
};

struct NormProblem {
  int64_t T = 0, H = 0;
  OutKind out_kind = OutKind::same;
  Operand x, residual, weight, out;
};

struct NormConfig {
  bool supported = true;  // false: H beyond kMaxH (the reference backend still runs it)
  int vec = 1;            // elements per vector access: 8, 4, 2 or 1
  int elems_per_thread = kSmallE;  // E: the kernel's register row size (template parameter)
  int threads = kWarpSize;         // blockDim.x
  bool warp_per_row = false;
  int rows_per_block = 1;
  int64_t grid = 1;                // gridDim.x
  int pipeline_stages = 0;         // > 0: norm_pipe_kernel, persistent CTAs (see with_pipeline)
  bool fp8_one_reduction = false;  // the norm.fp8_one_reduction kernel (see with_fp8_one_reduction)
};

constexpr int dtype_size(DType t) { return dtype_bits(t) / 8; }

// Widest vector (elements) such that every access of `p` (vec * element size bytes, at most 16)
// is aligned.
constexpr int widest_vec(const Operand& p) {
  if (!p.present) return kMaxVec;
  const int es = dtype_size(p.dtype);
  for (int v = kMaxVec; v > 1; v /= 2) {
    const int bytes = v * es;
    if (bytes <= kMaxVecBytes && p.align >= bytes) return v;
  }
  return 1;
}

constexpr int min_int(int a, int b) { return a < b ? a : b; }
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

constexpr NormConfig choose_config(const NormProblem& p) {
  NormConfig c;
  if (p.H > kMaxH || p.H < 1 || p.T < 1) {
    c.supported = false;
    return c;
  }
  c.vec = min_int(min_int(widest_vec(p.x), widest_vec(p.residual)), min_int(widest_vec(p.weight), widest_vec(p.out)));
  const int64_t nvec = p.H / c.vec;
  // fp8_group: the lanes of one group (group / vec consecutive vectors) must sit in one item of
  // one row, so CTA sizes are multiples of it; groups wider than a warp reduce through smem.
  const int64_t group_vecs = p.out_kind == OutKind::fp8_group ? kQuantGroup / c.vec : 1;
  const int64_t small_items = kSmallE / c.vec;
  if (nvec <= kWarpSize * small_items && group_vecs <= kWarpSize) {
    // Short rows: one warp per row, no block barrier.
    c.elems_per_thread = kSmallE;
    c.warp_per_row = true;
    c.rows_per_block = static_cast<int>(p.T < kWarpRowsPerBlock ? p.T : kWarpRowsPerBlock);
    c.threads = kWarpSize * c.rows_per_block;
    c.grid = ceil_div(p.T, c.rows_per_block);
    return c;
  }
  c.elems_per_thread = p.H <= kSmallRowElems ? kSmallE : kLargeE;
  const int64_t items = c.elems_per_thread / c.vec;
  const int64_t granule = group_vecs > kWarpSize ? group_vecs : kWarpSize;
  c.threads = static_cast<int>(round_up(ceil_div(nvec, items), granule));
  c.grid = p.T;
  return c;
}

// Dynamic shared memory of one CTA (its sizeof is the launch's smem): the block reduction's
// scratch, and per-(item, warp) maxima for fp8 groups wider than a warp (vec <= 2).
inline constexpr int kMaxWarps = kMaxThreads / kWarpSize;
struct NormSmem {
  float reduce[kMaxWarps];
  float group_amax[kLargeE][kMaxWarps];
};

// The norm.pipeline variant (TEJAS_TUNE; norm_pipe_kernel). Persistent CTAs, as many as the GPU
// holds at once (`resident_ctas`: blocks per SM at this kernel's registers and shared memory,
// times the SMs), walk rows blockIdx.x, + grid, ...; each keeps the next `stages` rows of x (and
// the residual) in flight through cp.async into shared memory while it reduces and writes the
// current one from registers, so its loads are out for its whole life rather than before each
// row's reduction only. Eligible: CTA-per-row configs whose x accesses are 16 bytes (16-bit x,
// vec 8), every vector whole (H % 8 == 0) and a 16-bit residual or none; the tail and f32 paths
// keep the default kernel.
inline constexpr int kPipeSlotBytes = 16;  // one cp.async.cg per vector and tensor

// The rows both pipelines copy by cp.async: 16-bit x in whole 16-byte vectors, a 16-bit residual
// or none.
constexpr bool copyable_rows(const NormProblem& p, const NormConfig& c) {
  const bool x16 = p.x.dtype == DType::bf16 || p.x.dtype == DType::f16;
  const bool res_ok = !p.residual.present || p.residual.dtype == DType::bf16 || p.residual.dtype == DType::f16;
  return c.supported && x16 && c.vec == kMaxVec && p.H % kMaxVec == 0 && res_ok;
}

constexpr bool pipeline_eligible(const NormProblem& p, const NormConfig& c) {
  return copyable_rows(p, c) && !c.warp_per_row;
}

// The norm.fp8_one_reduction variant (TEJAS_TUNE): fp8 outputs with a dynamic per-token scale
// take the row's amax as inv_rms x max|v w| (v: x plus the residual, w: the weight), reduced with
// the sum of squares in one block reduction, instead of reducing max|y| in a second one. For the
// default kernel's configs of 16-bit x with whole 16-byte rows (the weight is 16-bit there).
constexpr bool fp8_one_reduction_eligible(const NormProblem& p, const NormConfig& c) {
  const bool x16 = p.x.dtype == DType::bf16 || p.x.dtype == DType::f16;
  return c.supported && p.out_kind == OutKind::fp8_dynamic && x16 && c.vec == kMaxVec && p.H % kMaxVec == 0 &&
         c.pipeline_stages == 0;
}
constexpr NormConfig with_fp8_one_reduction(const NormProblem& p, NormConfig c, bool on) {
  c.fp8_one_reduction = on && fp8_one_reduction_eligible(p, c);
  return c;
}

// Dynamic shared memory of norm_pipe_kernel: NormSmem, then [stage][tensor][item][thread] 16-byte
// slots (tensor 0 x, 1 the residual).
constexpr int64_t pipeline_smem_bytes(const NormConfig& c, bool residual, int stages) {
  const int64_t items = c.elems_per_thread / c.vec, tensors = residual ? 2 : 1;
  return static_cast<int64_t>(sizeof(NormSmem)) + stages * tensors * items * c.threads * kPipeSlotBytes;
}

// The pipelined config when it applies: `stages` > 0, an eligible config, and at least two rows
// per CTA (T >= 2 x resident_ctas; below that the default kernel's one CTA per row has more in
// flight). Otherwise `c` unchanged.
constexpr NormConfig with_pipeline(const NormProblem& p, NormConfig c, int stages, int64_t resident_ctas) {
  if (stages <= 0 || resident_ctas <= 0 || !pipeline_eligible(p, c) || p.T < 2 * resident_ctas) return c;
  c.pipeline_stages = stages;
  c.grid = resident_ctas;
  return c;
}

// The warp-row pipeline (TEJAS_TUNE norm.warp_items; norm_warp_pipe_kernel): the short rows of
// the pipelined configs go one warp per row instead of one CTA per row. A CTA of kWarpPipeWarps
// warps is a set of independent row walkers: warp w of CTA b takes rows b x kWarpPipeWarps + w,
// + gridDim.x x kWarpPipeWarps, ...; lane l owns the row's vectors l, l + 32, ... (`items` per
// lane, ceil(H / 8 / 32)), copied by cp.async into its own slots, `stages` rows ahead, one
// buffer more than that (stages + 1 per warp), because the row stays in shared memory while it is
// used: read once for the sum of squares (the residual added, stored, and the sum written back
// into x's slot), once more for the output (and once between the two for a dynamic fp8 scale's
// amax). No block barrier: the reductions are warp shuffles. Why: the CTA-per-row rows of
// H <= 2048 (64-256 threads, one vector per thread) pay the block reduction's two barriers and
// the per-row work for 8 elements per thread; here they are paid once per row per warp over
// 8 x items elements per lane. Eligible: pipeline_eligible's rows but for the warp-per-row ones
// (H <= 256) too, with items <= the key's maximum (default 8: H <= 2048).
inline constexpr int kWarpPipeWarps = 4;  // rows in flight per CTA, one per warp
inline constexpr int kWarpPipeThreads = kWarpPipeWarps * kWarpSize;
inline constexpr int kMaxWarpPipeItems = 16;  // TEJAS_TUNE norm.warp_items's largest: H <= 4096
// Its launch bound: 9 CTAs of 4 warps per SM, <= 56 registers (63 unbounded; at 10, 48 registers
// spilled 8-16 bytes).
inline constexpr int kWarpPipeMinCtas = 9;

// 16-byte vectors per lane of a warp-row pipeline row.
constexpr int64_t warp_pipe_items(const NormProblem& p) { return ceil_div(p.H / kMaxVec, kWarpSize); }

constexpr bool warp_pipe_eligible(const NormProblem& p, const NormConfig& c, int max_items) {
  // fp8 groups: whole groups of 128 (op.cpp validates it; a group is half a warp's item).
  const bool groups_ok = p.out_kind != OutKind::fp8_group || p.H % kQuantGroup == 0;
  return copyable_rows(p, c) && groups_ok && max_items > 0 && max_items <= kMaxWarpPipeItems &&
         warp_pipe_items(p) <= max_items;
}

// Dynamic shared memory of norm_warp_pipe_kernel: [warp][buffer][tensor][item][lane] 16-byte
// slots, stages + 1 buffers (no NormSmem: no block reduction).
constexpr int64_t warp_pipeline_smem_bytes(const NormProblem& p, int stages) {
  const int64_t tensors = p.residual.present ? 2 : 1;
  return kWarpPipeWarps * (stages + 1) * tensors * warp_pipe_items(p) * kWarpSize * kPipeSlotBytes;
}

// The warp-row pipelined config when it applies (`stages` > 0, eligible with at most `max_items`
// vectors per lane, T >= 2 x resident_ctas): kWarpPipeThreads threads, grid = the resident CTAs,
// or ceil(T / 4) when that is fewer (no CTA without a row; the last may have idle warps).
// Otherwise `c` unchanged. NOTES: the T threshold is with_pipeline's (two rows per resident CTA),
// which here is half a row per resident warp: from 2x to ~8x the resident CTAs a warp walks one
// or two rows, so little is ahead of it, but every warp's first rows are out at once (as with a
// CTA per row, which is what T < 2x falls back to), with no block barrier per row.
constexpr NormConfig with_warp_pipeline(const NormProblem& p, NormConfig c, int stages, int max_items,
                                        int64_t resident_ctas) {
  if (stages <= 0 || resident_ctas <= 0 || !warp_pipe_eligible(p, c, max_items) || p.T < 2 * resident_ctas) return c;
  c.pipeline_stages = stages;
  c.warp_per_row = true;
  c.rows_per_block = kWarpPipeWarps;
  c.threads = kWarpPipeThreads;
  c.elems_per_thread = static_cast<int>(warp_pipe_items(p)) * kMaxVec;
  const int64_t blocks = ceil_div(p.T, kWarpPipeWarps);
  c.grid = blocks < resident_ctas ? blocks : resident_ctas;
  return c;
}

// "vec 8, E 16, 256 threads, 1 row/CTA, grid 37" (TEJAS_PRINT_CONFIG=1 prints it per call).
std::string describe(const NormConfig& c);
// Prints `op`, the problem and the config to stderr when TEJAS_PRINT_CONFIG=1.
void maybe_print_config(const char* op, const NormProblem& p, const NormConfig& c);

}  // namespace tejas::norm
