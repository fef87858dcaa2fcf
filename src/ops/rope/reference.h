// Reference (float64) rotary embedding: the oracle for every other backend. See tejas/rope.h.
// Arguments are assumed validated by tejas::rope; only positions' contents are checked here.
#pragma once
#include "tejas/rope.h"

namespace tejas::ref {

// invalid_argument naming positions unless every value lies in [0, max_pos). Host tensors only.
Status check_rope_positions(const TensorView& positions, int64_t max_pos);

// Checks positions first, then rotates q (and k when present) in place.
Status rope(const TensorView& positions, const TensorView& q, const TensorView& k, const TensorView& cos_sin_cache,
            RopeStyle style);

}  // namespace tejas::ref
