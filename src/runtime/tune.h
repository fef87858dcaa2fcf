// Launch-configuration overrides for measuring variants on a GPU without rebuilding:
// TEJAS_TUNE="key=value[,key=value...]", read once. Each config function takes the value as a
// plain input (the configs stay pure); the launchers fill it from tune(). Unknown keys or bad
// values are reported once on stderr and ignored. Keys:
//   quant.max_chunks=1..4  vectorized quant: most 16-byte chunks of x one lane holds per group
//                          (default 4; 1 = one chunk per lane, the widest lane split)
//   quant.max_steps=1..4   vectorized quant with one chunk per lane (MX, NVFP4, small groups):
//                          most tiles of groups a warp loads at once (default 4; 1 = one)
//   quant.max_grid=0..999  quant and dequant kernels (all paths): at most this many blocks, warps
//                          loop over the rest (default 0 = no cap beyond 2^20)
//   quant.fast_convert=0..1  the vectorized quant kernels' version 5 and dequant_mx's version 4
//                          (1, default; the same codes and outputs, bit for bit): e2m1 codes in
//                          pairs (quant_mx: mxfp4 from bf16 / f16 as packed 16-bit pairs, nvfp4
//                          and f32 x through bf16 rounded to odd; dequant_mx: mxfp4 to bf16 /
//                          f16 and nvfp4 to bf16 as packed pairs; packed_half.h), and the
//                          near-midpoint chunks of nvfp4 and quant_fp8_group's f32 scales found
//                          by num::near_key; 0 = the f32 conversions and near_midpoint, as
//                          before. The H200 (2026-11-30, two runs): 0 took 1.415 / 1.420 of the
//                          time on dequant_fp8_group, 1.553 / 1.556 on dequant_mx, 1.112 on
//                          quant_mx (rows >= 16 MiB); quant_fp8_group within noise
//   quant.tie_bias=0..1    quant_fp8_group with f32 scales, bf16 / f16 x, under
//                          quant.fast_convert=1: version 6 (1, default; the same codes), each
//                          quotient from 1 / s moved 2^-19 toward the side the group's ties round
//                          to (refined instead where s = amax / 448 exactly): no per-value
//                          midpoint test and no near-midpoint branch (quant_math.h); 0 = version
//                          5. Not measured on GPU
//   quant.clean_table=0..1  quant_mx nvfp4 from bf16 / f16 under quant.fast_convert=1: version 7
//                          (1, default; the same codes): where the grid holds >= 4 warp steps per
//                          resident CTA, persistent CTAs each build a table of clean multipliers
//                          for every block scale at the tensor scale (clean_multiplier.h), so
//                          groups with one need no near-midpoint filter and no reciprocal; 0 =
//                          version 5. Not measured on GPU
//   quant.linear=0..1      the vectorized quant and dequant kernels (quant_fp8_group, quant_mx,
//                          dequant_fp8_group, dequant_mx): 1 (default) = where the data's, the
//                          codes' and the scales' rows lie end to end (or there is one row; for
//                          dequant also group / vec a power of two), each group or vector placed
//                          from its flat index alone; 0 = from its row and its place in the row,
//                          as for strided rows (the same results; not measured on GPU:
//                          docs/kernels/quant_mx.md version 8, docs/kernels/dequant_mx.md
//                          version 5)
//   dequant.steps=1..2     vectorized dequant: grid-stride steps per thread, loads first
//                          (default 2; 1 = one step per thread)
//   activation.max_grid_y=0..999  silu_mul / gelu_tanh_mul and the fused quant kernels: at most
//                          this many column blocks, lanes loop over the rest (default 0 = only
//                          CUDA's 65535 limit)
//   activation.steps=1..4  silu_mul / gelu_tanh_mul, 16-byte path: chunks per lane, all their
//                          loads issued first, the column blocks fewer by as much (default 1)
//   activation.pipeline=0..2  silu_mul / gelu_tanh_mul, 16-byte path: persistent blocks walk
//                          256-chunk tiles of the flattened [rows, chunks] space, each thread
//                          keeping this many tiles' gate / up vectors in flight through cp.async
//                          into shared memory while it computes and stores the current one
//                          (default 0 = off: one block per row group and column block)
//   activation.fast_math=0..1  silu_mul / gelu_tanh_mul, bf16 / f16 on the 16-byte path (one
//                          step, no pipeline): 1 (default) = sigmoid from __expf and __fdividef
//                          (<= ~1.2e-5 relative error, far below a 16-bit ulp; src/ops/activation/
//                          act_math.cuh); 0 = expf and an IEEE division. The H200: silu_mul 28%
//                          and gelu_tanh_mul 30% faster at 1 (the kernels were issue-bound);
//                          re-timed 2026-11-30: 0 took 1.384 / 1.437 of the time
//   activation.fast_math_quant=0..1  silu_mul_quant_fp8_group / silu_mul_quant_mx: 1 (default)
//                          = the same fast sigmoid in the fused kernels; 0 = the accurate one.
//                          The H200 (2026-11-30, two runs): 1 took 0.741 (fp8_group) and
//                          0.753-0.754 (mx) of 0's time; re-confirmed by a third: 0 took
//                          1.345 / 1.327 of 1's
//   activation.packed_fp4=0..1  silu_mul_quant_mx (mxfp4, nvfp4): 1 (default) = e2m1 codes in
//                          pairs through bf16 rounded to odd (src/device/numeric/packed_half.h;
//                          the same codes); 0 = the f32 conversion per element. The H200
//                          (2026-11-30, two runs): 0 took 1.096 / 1.097 of the time
//   norm.prefetch_rows=0..65535  RMSNorm family, rows of at most 2 vectors per thread (the
//                          16-byte rows): each row's threads also prefetch (prefetch.L2) the x
//                          and residual vectors of the row this many rows ahead, so its loads
//                          find them in L2 (default 0 = none)
//   norm.pipeline=0..2     RMSNorm family, CTA-per-row rows of whole 16-byte vectors (16-bit x,
//                          16-bit residual or none) written in x's dtype, at least two rows per
//                          resident CTA: persistent CTAs (as many as fit on the GPU at once) walk
//                          the rows, each keeping this many rows ahead in flight through cp.async
//                          into shared memory while it reduces and writes the current one
//                          (default 1; 0 = off: one CTA per row, loaded into registers). The
//                          H200: rms_norm 23% faster at 1 (geomean over rows >= 16 MiB), 22% at
//                          2; fused_add_rms_norm 2.5% faster at 1 over all its rows (its bf16
//                          rows 0.86-1.03 of the time), even at 2 (re-timed 2026-11-30: 2 within
//                          noise, 1.004-1.024)
//   norm.pipeline_fp8=0..2 the same for the fp8 outputs (dynamic, static, 1x128 groups)
//                          (default 1; 0 = off). Before norm.packed_add, at 1, the fused op's
//                          dynamic rows took 0.95-1.15 of the time and the per-group op 1.019
//                          (1.042 at 2); with it (the H200, 2026-11-30): the fp8 rows at
//                          T >= 4096 0.953 of the time, the per-group op 0.960 over its rows >=
//                          16 MiB. Re-confirmed by a third run: 0 took 1.014 (fused_add_rms_norm)
//                          and 1.054 (the per-group op) of the time
//   norm.fp8_one_reduction=0..1  RMSNorm family, fp8 outputs with a dynamic per-token scale on the
//                          default kernel's 16-byte rows (16-bit x, H % 8 == 0; the rows the
//                          pipelined kernel does not take): 1 (default) = the row's amax as
//                          inv_rms x max|v w|, reduced with the sum of squares in one block
//                          reduction; 0 = a second reduction of max|y|. The H200 (2026-11-30):
//                          dynamic rows at T >= 4096 0.977 of the time at 1, fused_add_rms_norm
//                          0.986 (faster in one run, within noise in the other); a third run
//                          timed 0 within noise (1.004 / 1.002): kept, one reduction fewer
//   norm.packed_add=0..1   fused_add_rms_norm (and its fp8 outputs), x and the residual in one
//                          16-bit dtype: 1 (default) = residual += x as packed bf16x2 / f16x2
//                          adds from the loaded registers (the same bits); 0 = per element in
//                          f32, rounded to odd, then to the residual's dtype. The H200
//                          (2026-11-30, two runs): 0 took 1.121 / 1.124 of the time on
//                          fused_add_rms_norm, 1.178 / 1.180 on the fp8-group op
//   norm.warp_items=0..16  RMSNorm family, the pipelined rows (norm.pipeline, norm.pipeline_fp8)
//                          of at most this many 16-byte vectors per lane (H <= 256 x N): one warp
//                          per row instead of one CTA per row, warps walking the rows with the
//                          row kept in shared memory until written (norm_warp_pipe_kernel;
//                          default 8: H <= 2048; 0 = off: the CTA-per-row pipeline). Not
//                          measured on GPU
//   rope.heads=0..2        rope family: heads whose q/k loads a thread issues together, half
//                          the head lanes at 2; 0 (default) = per op: 2 for the ops that rotate
//                          (rope, mrope, rope_kv_cache_write), 1 for kv_cache_write (the H200:
//                          with rope.head_stage=1, 2 heads ran rope 15%, mrope 19% and
//                          rope_kv_cache_write 23% faster; kv_cache_write 9% slower)
//   rope.v_prefetch=0..1   rope_kv_cache_write (and kv_cache_write at rope.kv_loads_first=0): 1 =
//                          each thread prefetches its first v vector into L2 at its start (not
//                          where rope.v_stage copies it, nor in the rope.pipeline kernel); 0
//                          (default) = no prefetch
//   rope.head_prefetch=0..1  rope family: 1 = each thread prefetches its first q/k head rows
//                          into L2 before loading the position; 0 (default) = no prefetch
//   rope.head_stage=0..1   rope family, 16-byte q/k accesses: 1 (default) = each thread copies
//                          its first step's q/k head vectors into shared memory (cp.async)
//                          before loading the position, and rotates them from there; 0 = they
//                          are loaded after the position and cos/sin (with 1 head in flight,
//                          staging alone was 9-11% slower on the H200: it pays with 2)
//   rope.v_stage=0..1      rope_kv_cache_write with rope.head_stage=1: 1 (default) = each thread
//                          copies its first v vector into shared memory with its heads
//                          (cp.async, one group) and copies it to the cache from there; 0 = v
//                          is first read at the copy, after the rotation. The H200 (2026-11-30,
//                          two runs): 0 took 1.028 / 1.032 of the time, within noise (+-5.5 %);
//                          1 stays
//   rope.pipeline=0..3     rope, mrope and rope_kv_cache_write (rotary == D) with
//                          rope.head_stage=1, one rotary column and one head step per thread:
//                          persistent CTAs walk the tokens, each thread staging the next token's
//                          heads (cp.async) and loading its position while it rotates the
//                          current one; 1 (default) = that kernel for rope and mrope, 2 = for
//                          rope_kv_cache_write too; 0 = a thread per token column. The H200
//                          (2026-11-30, two runs): rope 0.852 / 0.855, mrope 0.847 / 0.846 of
//                          the time pipelined; rope_kv_cache_write 1.041 / 1.042 (its e4m3-cache
//                          rows at T >= 4096 1.089), so not at 1; two later runs: 0 took 1.143
//                          (rope) and 1.147 (mrope) of 1's time, 2 took 1.052 and 1.042 of it on
//                          rope_kv_cache_write. 3 = also kv_cache_write (with
//                          rope.kv_loads_first=1, the default; 16-byte vectors, one k and one v
//                          vector per thread: kv_pipe_kernel, the next token's vectors staged by
//                          cp.async while the current one's are stored; not measured on GPU)
//   rope.kv_loads_first=0..1  kv_cache_write: 1 (default) = kv_write_kernel, each thread's k and
//                          v vectors (up to 4) loaded with the slot before any wait, then stored
//                          (skipped tokens' rows read too); 0 = the rope kernel's kv-only path
//                          (slot, then k, then v: three round trips). The H200 (2026-11-30, two
//                          runs): 0 took 1.174 / 1.175 of the time
//   rope.clean_scales=0..1  kv_cache_write (blocks of >= 128 threads) and the rope.pipeline
//                          kernels with fp8 caches and 16-bit k and v: 1 (default) = each block
//                          first checks whether its k and v scales have a clean multiplier (one
//                          product per value gives the exact code of every 16-bit value), and
//                          then skips the per-value midpoint test; 0 = the per-value test always
//                          (the same codes; not measured on GPU)
//   rope.kv_split=0..2     rope_kv_cache_write: 1 (default) = from 16 MiB of compulsory traffic
//                          (rotary.kKvSplitMinBytes) two launches, plain rope on q (its pipelined
//                          kernel) and kv_rope_kernel on k, v and the caches (k rotated with its
//                          loads first); below, one launch; 0 = one launch always (the fused
//                          kernel, H200 2026-11-30: slower than rope then kv_cache_write on 28 of
//                          44 rows of >= 16 MiB); 2 = split always (tests). Not measured on GPU
//   rope.kv_rope_pipe=0..1  the split's k half with 16-byte vectors, rotary == D and one column
//                          of one kv head per thread: 1 = persistent CTAs walk the tokens, each
//                          thread copying the next token's k and v columns (cp.async) and
//                          loading its position and slot while it finishes the current one
//                          (kv_rope_pipe_kernel); 0 (default) = kv_rope_kernel, a thread per
//                          token column. Not measured on GPU
#pragma once
#include <string>

namespace tejas::detail {

// The kernels' register arrays bound these (static_assert'ed against quant_kernel's constants).
inline constexpr int kTuneMaxQuantChunks = 4;
inline constexpr int kTuneMaxDequantSteps = 2;
inline constexpr int kTuneMaxActivationSteps = 4;
inline constexpr int kTuneMaxRopeHeads = 2;
inline constexpr int kTuneMaxNormStages = 2;
inline constexpr int kTuneMaxNormWarpItems = 16;  // norm::kMaxWarpPipeItems (static_assert in plan.cpp)
inline constexpr int kTuneMaxActivationStages = 2;

struct Tune {
  int quant_max_chunks = 4;
  int quant_max_steps = 4;
  int quant_max_grid = 0;
  int quant_fast_convert = 1;
  int quant_tie_bias = 1;
  int quant_clean_table = 1;
  int quant_linear = 1;
  int dequant_steps = 2;
  int rope_heads = 0;  // 0: per op (plan.cpp)
  int rope_v_prefetch = 0;
  int rope_head_prefetch = 0;
  int rope_head_stage = 1;
  int rope_kv_loads_first = 1;
  int rope_v_stage = 1;
  int rope_pipeline = 1;
  int rope_clean_scales = 1;
  int rope_kv_split = 1;
  int rope_kv_rope_pipe = 0;
  int activation_max_grid_y = 0;
  int activation_steps = 1;
  int activation_pipeline = 0;
  int activation_fast_math = 1;
  int activation_fast_math_quant = 1;
  int activation_packed_fp4 = 1;
  int norm_prefetch_rows = 0;
  int norm_pipeline = 1;
  int norm_pipeline_fp8 = 1;
  int norm_fp8_one_reduction = 1;
  int norm_packed_add = 1;
  int norm_warp_items = 8;
};

// Parses `text` ("" = defaults) into *out; false and `why` on the first bad entry (the entries
// before it are applied). Keys and values may carry spaces around them; values are decimal.
bool parse_tune(const std::string& text, Tune* out, std::string* why);

// The process's overrides (TEJAS_TUNE), parsed once.
const Tune& tune();
// Why TEJAS_TUNE did not parse ("" when it did or is unset): `tejas bench` refuses to time then,
// so a mistyped variant cannot pass for a measured one.
const std::string& tune_error();
// TEJAS_TUNE as given ("" when unset), for reports.
const std::string& tune_text();

// Tests: tune() returns `t` while this lives (one at a time, not thread safe), so both sides of
// a variant run in the same process.
class ScopedTuneOverride {
 public:
  explicit ScopedTuneOverride(const Tune& t);
  ~ScopedTuneOverride();
  ScopedTuneOverride(const ScopedTuneOverride&) = delete;
  ScopedTuneOverride& operator=(const ScopedTuneOverride&) = delete;

 private:
  Tune tune_;
  const Tune* previous_;
};

}  // namespace tejas::detail
