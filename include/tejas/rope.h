// Rotary position embedding, applied in place to q and k; its multimodal form (mrope); and its
// fusion with the paged KV-cache write (rope_kv_cache_write).
//
// rope:
// Shapes: positions [T] (i32 or i64); q [T, Hq, D]; k [T, Hk, D] (may be absent);
//         cos_sin_cache [max_pos, rotary_dim]: row p holds cos(p * f_i) for i < rotary_dim/2,
//         then sin(p * f_i) for the same i (the layout vLLM and FlashInfer use).
//         T >= 0 (T = 0 does nothing, in all four ops), Hq >= 1, Hk >= 1, Hq + Hk <= 2^24,
//         D <= 2^24, max_pos >= 1. The emulator and cuda backends (all four ops) run
//         T <= 2^31 - 1; beyond, unsupported.
// rotary_dim = cos_sin_cache.shape[1]: even, >= 2, <= D. Dimensions >= rotary_dim are left
// unchanged, bit for bit (partial rotary), and are neither read nor written by the kernels.
// Styles, for pair i in [0, rotary_dim/2), with c = cache[p, i], s = cache[p, rotary_dim/2 + i]:
//   neox: (x[i], x[i + rotary_dim/2]) is rotated      (rotate halves)
//   gptj: (x[2i], x[2i + 1]) is rotated               (interleaved pairs)
//   rotated: (a, b) -> (a*c - b*s, b*c + a*s), float64 in the reference, one rounding each.
//   The kernels compute in f32 (one product, one fused multiply-add: error E <= 2^-23 (|a| + |b|)):
//   bf16/f16 results lie within one unit in the last place of the reference, except where the
//   pair's own cancellation leaves a result within a few of its units of E (E at least a quarter
//   of the unit above the result: there within E plus two units); f32 results within E plus one
//   f32 unit.
// Non-finite values follow IEEE arithmetic of that formula: a NaN in a or b makes both outputs
//   of the pair NaN; an Inf gives +-Inf or NaN (e.g. a = Inf with s = 0 gives a' = Inf,
//   b' = NaN, since Inf * 0 is NaN).
// Dtypes: q, k in {bf16, f16, f32} (same dtype); cache in {f32, q's dtype}.
// Strides: non-negative; innermost dim contiguous; token and head strides free, but q and k
//   must not overlap themselves, each other, positions or the cache. Every data pointer is
//   aligned to its element size; all on one device. (Kernels use 16-byte accesses where the
//   pointers, strides and rotary_dim/2 allow it, narrower ones otherwise.)
// positions must lie in [0, max_pos): always checked by the reference backend (before anything
// is written), by the others in debug-check mode (ExecContext::debug_checks). Without debug
// checks the kernel backends leave the pairs of an out-of-range position unrotated: a wrong
// answer for that token, but no access outside the tensors.
//
// mrope: multimodal rope (Qwen2-VL M-RoPE), neox style, in place on q and k like rope.
//   positions [3, T] (i32 or i64): rows temporal, height, width (text tokens repeat one position).
//   section = {temporal, height, width}, each >= 0, summing to rotary_dim / 2. Pair i uses
//   position row r(i) = 0 for i < temporal, 1 for i < temporal + height, 2 otherwise:
//   p = positions[r(i), t], c = cache[p, i], s = cache[p, rotary_dim/2 + i], rotated as in rope.
//   Everything else (shapes, dtypes, strides, partial rotary, non-finite values, the position
//   checks, over all three rows) as rope. Not covered: Qwen3-VL's interleaved sections
//   (mrope_interleaved) and 1-D positions for text-only batches (pass the row three times).
//
// rope_kv_cache_write: rope, then the paged KV-cache write of the rotated k and of v (vLLM's
//   rotary_embedding followed by reshape_and_cache, each of q, k and v read once: one launch
//   below 16 MiB of traffic, two from there, q's rotation then k's with both cache writes;
//   TEJAS_TUNE rope.kv_split, docs/kernels/rope_kv_cache_write.md). Its result equals:
//     rope(ctx, positions, q, k, cos_sin_cache, style);   // q AND k rotated in place
//     for every t with slot = slot_mapping[t] >= 0, blk = slot / block_size, off = slot % block_size:
//       k_cache[blk, off, h, :] = enc(k[t, h, :]),  v_cache[blk, off, h, :] = enc(v[t, h, :])
//   k is updated in place (callers that read keys from the projection buffer, such as prefill
//   attention, see rotated keys), and the cache receives k as stored (rounded to k's dtype),
//   all D dims (the non-rotary tail too).
//   enc for caches in q's dtype: the bits, copied. For fp8 caches (e4m3, e5m2):
//     code = sat_rne(x / scale) (float64 division of the stored value by the f32 scale;
//     saturating to +-max finite; a NaN gives a NaN code, sign unspecified). The kernels give
//     the same codes bit for bit, ties and near-ties included.
//   A negative slot skips the token's cache writes (padding tokens; q and k are still rotated).
//   Shapes: v [T, Hk, D] (k's shape); slot_mapping [T] i64; k_cache, v_cache
//     [num_blocks, block_size, Hk, D] (the paged_decode_attention layout, tejas/attention.h),
//     num_blocks, block_size >= 1; k_scale, v_scale f32 [1] for fp8 caches, absent otherwise.
//   Dtypes: q, k, v in {bf16, f16} (same); k_cache, v_cache in {q's dtype, e4m3, e5m2} (same).
//   Strides: as rope for q, k; v, slot_mapping and the caches: non-negative, innermost
//     contiguous, element aligned. The caches must not overlap themselves, each other or any
//     other argument; q and k may be slices of one qkv buffer with v.
//   Index contents: non-negative slots lie in [0, num_blocks * block_size) and are distinct;
//     positions as rope; k_scale and v_scale finite and > 0. Checked (invalid_argument naming
//     slot_mapping, positions, k_scale or v_scale, before anything is written) by the reference
//     backend always and by the others in debug-check mode (on calls with tokens: T = 0 reads
//     nothing). Without debug checks the kernel backends skip a slot beyond the cache like a
//     negative one and treat positions as rope does; repeated slots or bad scales give wrong
//     cache contents, never a write outside the caches.
#pragma once
#include <cstdint>

#include "tejas/context.h"
#include "tejas/status.h"
#include "tejas/tensor.h"

namespace tejas {

enum class RopeStyle : uint8_t { neox, gptj };

Status rope(const ExecContext& ctx, const TensorView& positions, const TensorView& q,
            const TensorView& k, const TensorView& cos_sin_cache, RopeStyle style);

// Frequency pairs per position row; Qwen2-VL (rotary_dim 128): {16, 24, 24}.
struct MropeSection {
  int64_t temporal = 0;
  int64_t height = 0;
  int64_t width = 0;
};

Status mrope(const ExecContext& ctx, const TensorView& positions, const TensorView& q,
             const TensorView& k, const TensorView& cos_sin_cache, const MropeSection& section);

// The paged caches written by rope_kv_cache_write.
struct PagedKvCache {
  TensorView k_cache;  // [num_blocks, block_size, Hk, D]
  TensorView v_cache;  // [num_blocks, block_size, Hk, D]
  TensorView k_scale;  // f32 [1], fp8 caches only
  TensorView v_scale;  // f32 [1], fp8 caches only
};

Status rope_kv_cache_write(const ExecContext& ctx, const TensorView& positions, const TensorView& q,
                           const TensorView& k, const TensorView& v, const TensorView& cos_sin_cache,
                           RopeStyle style, const TensorView& slot_mapping, const PagedKvCache& cache);

// kv_cache_write: the paged KV-cache write alone (vLLM's reshape_and_cache): for every t with
//   slot = slot_mapping[t] >= 0, k_cache[blk, off, h, :] = enc(k[t, h, :]) and
//   v_cache[blk, off, h, :] = enc(v[t, h, :]), enc as rope_kv_cache_write's (the bits for caches
//   in k's dtype; sat_rne(x / scale) for e4m3 / e5m2, exact). k and v are only read. rope
//   followed by kv_cache_write is rope_kv_cache_write's unfused sequence.
//   Shapes: k, v [T, Hk, D], T >= 0 (T = 0 does nothing), Hk, D >= 1, Hk, D <= 2^24;
//   slot_mapping [T] i64; caches as rope_kv_cache_write.
//   Dtypes: k, v in {bf16, f16} (same); caches in {k's dtype, e4m3, e5m2} (same). Strides,
//   overlaps, index contents, scales and debug checks: as rope_kv_cache_write (k, v are inputs).
Status kv_cache_write(const ExecContext& ctx, const TensorView& k, const TensorView& v,
                      const TensorView& slot_mapping, const PagedKvCache& cache);

}  // namespace tejas
