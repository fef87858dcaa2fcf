// Float64 reference of merge_attention_states(_n) (the oracle). Arguments must already be
// validated; see include/tejas/attention.h for the semantics.
#pragma once
#include <cstdint>
#include <span>

#include "tejas/tensor.h"

namespace tejas::attn {

// parts_v[s]: [N, H, D]; parts_lse[s]: [N, H] f32; out [N, H, D]; out_lse [N, H] (may be absent).
// out may be the same view as a part's v (and out_lse as its lse): each row is read in full
// before it is written.
void merge_states_reference(std::span<const TensorView> parts_v, std::span<const TensorView> parts_lse,
                            const TensorView& out, const TensorView& out_lse);

// Part s of a stacked [S, ...] tensor as a view with the leading dimension dropped.
TensorView part_view(const TensorView& stacked, int64_t s);

}  // namespace tejas::attn
