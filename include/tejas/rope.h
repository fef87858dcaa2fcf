// Rotary position embedding, applied in place to q and k.
//
// Shapes: positions [T] (i32 or i64); q [T, Hq, D]; k [T, Hk, D] (may be absent);
//         cos_sin_cache [max_pos, rotary_dim]: row p holds cos(p * f_i) for i < rotary_dim/2,
//         then sin(p * f_i) for the same i (the layout vLLM and FlashInfer use).
//         T >= 1, Hq >= 1, Hk >= 1, max_pos >= 1.
// rotary_dim = cos_sin_cache.shape[1]: even, >= 2, <= D. Dimensions >= rotary_dim are left
// unchanged, bit for bit (partial rotary).
// Styles, for pair i in [0, rotary_dim/2), with c = cache[p, i], s = cache[p, rotary_dim/2 + i]:
//   neox: (x[i], x[i + rotary_dim/2]) is rotated      (rotate halves)
//   gptj: (x[2i], x[2i + 1]) is rotated               (interleaved pairs)
//   rotated: (a, b) -> (a*c - b*s, b*c + a*s), float64 in the reference, one rounding each.
// Non-finite values follow IEEE arithmetic of that formula: a NaN in a or b makes both outputs
//   of the pair NaN; an Inf gives +-Inf or NaN (e.g. a = Inf with s = 0 gives a' = Inf,
//   b' = NaN, since Inf * 0 is NaN).
// Dtypes: q, k in {bf16, f16, f32} (same dtype); cache in {f32, q's dtype}.
// Strides: non-negative; innermost dim contiguous; token and head strides free, but q and k
//   must not overlap themselves, each other, positions or the cache. Every data pointer is
//   aligned to its element size; all on one device.
// positions must lie in [0, max_pos): always checked by the reference backend (before anything
// is written), by the others in debug-check mode (ExecContext::debug_checks).
#pragma once
#include "tejas/context.h"
#include "tejas/status.h"
#include "tejas/tensor.h"

namespace tejas {

enum class RopeStyle : uint8_t { neox, gptj };

Status rope(const ExecContext& ctx, const TensorView& positions, const TensorView& q,
            const TensorView& k, const TensorView& cos_sin_cache, RopeStyle style);

}  // namespace tejas
