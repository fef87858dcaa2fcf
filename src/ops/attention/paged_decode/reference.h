// Float64 reference of paged_decode_attention (the oracle). Arguments must already be
// validated, index contents included; see include/tejas/attention.h for the semantics.
#pragma once
#include "tejas/attention.h"
#include "tejas/tensor.h"

namespace tejas::attn {

void paged_decode_reference(const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                            const TensorView& block_table, const TensorView& seq_lens, const TensorView& sinks,
                            const PagedDecodeParams& params, const TensorView& out, const TensorView& lse);

}  // namespace tejas::attn
