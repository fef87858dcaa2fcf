// Argument validation shared by the rope family's public ops (op.cpp, op_kv_cache.cpp).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "runtime/validate.h"
#include "tejas/rope.h"

namespace tejas::rotary {

inline constexpr const char* kCacheName = "cos_sin_cache";

// The rules on q, k (optional unless k_required) and cos_sin_cache for T tokens: dtypes (q in
// q_dtypes), ranks, sizes, rotary_dim, layout, and q / k writable without overlaps among q, k,
// positions and the cache.
void check_qk_cache(detail::Validator& v, int64_t T, const TensorView& positions, const TensorView& q,
                    const TensorView& k, const TensorView& cache, std::initializer_list<DType> q_dtypes);

// Non-negative strides, contiguous innermost dimension, data aligned to the element size.
void check_layout(detail::Validator& v, const TensorView& t, const char* name);

// Debug-check mode on a kernel backend: a host view of index tensor t (the emulator's tensors
// are host tensors already; the cuda backend copies t into `storage` and synchronizes).
Status host_view(const char* op, const ExecContext& ctx, Backend backend, const TensorView& t,
                 std::vector<uint8_t>* storage, TensorView* host);

}  // namespace tejas::rotary
