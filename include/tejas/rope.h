// Rotary position embedding, applied in place to q and k.
//
// Shapes: positions [T] (i32 or i64); q [T, Hq, D]; k [T, Hk, D] (may be absent);
//         cos_sin_cache [max_pos, rotary_dim]: row p holds cos(p * f_i) for i < rotary_dim/2,
//         then sin(p * f_i) for the same i (the layout vLLM and FlashInfer use).
// rotary_dim = cos_sin_cache.shape[1]: even, <= D. Dimensions >= rotary_dim are left unchanged
// (partial rotary).
// Styles, for pair i in [0, rotary_dim/2):
//   neox: (x[i], x[i + rotary_dim/2]) is rotated      (rotate halves)
//   gptj: (x[2i], x[2i + 1]) is rotated               (interleaved pairs)
//   rotated: (a, b) -> (a*cos - b*sin, b*cos + a*sin)
// Dtypes: q, k in {bf16, f16, f32} (same dtype); cache in {f32, q's dtype}.
// Strides: innermost dim contiguous; token and head strides free.
// positions must lie in [0, max_pos): always checked by the reference backend, by the others in
// debug-check mode (ExecContext::debug_checks).
#pragma once
#include "tejas/context.h"
#include "tejas/status.h"
#include "tejas/tensor.h"

namespace tejas {

enum class RopeStyle : uint8_t { neox, gptj };

Status rope(const ExecContext& ctx, const TensorView& positions, const TensorView& q,
            const TensorView& k, const TensorView& cos_sin_cache, RopeStyle style);

}  // namespace tejas
