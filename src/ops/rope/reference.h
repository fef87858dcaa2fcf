// Reference (float64) rope family: the oracle for every other backend. See tejas/rope.h.
// Arguments are assumed validated by the public ops; only index contents and scale values are
// checked here (host tensors only), always before anything is written.
#pragma once
#include <cstdint>
#include "tejas/rope.h"

namespace tejas::ref {

// invalid_argument "<op>: positions: ..." unless every value (any rank) lies in [0, max_pos).
Status check_rope_positions(const char* op, const TensorView& positions, int64_t max_pos);
// invalid_argument "<op>: slot_mapping: ..." unless every slot is negative (skip) or lies in
// [0, num_slots), and the non-negative slots are distinct.
Status check_slot_mapping(const char* op, const TensorView& slot_mapping, int64_t num_slots);
// invalid_argument "<op>: <name>: ..." unless scale[0] is finite and > 0.
Status check_cache_scale(const char* op, const char* name, const TensorView& scale);

// Checks positions first, then rotates q (and k when present) in place.
Status rope(const TensorView& positions, const TensorView& q, const TensorView& k, const TensorView& cos_sin_cache,
            RopeStyle style);
Status mrope(const TensorView& positions, const TensorView& q, const TensorView& k, const TensorView& cos_sin_cache,
             const MropeSection& section);
// Checks positions, slots and scales, then rope, then the cache writes.
Status rope_kv_cache_write(const TensorView& positions, const TensorView& q, const TensorView& k,
                           const TensorView& v, const TensorView& cos_sin_cache, RopeStyle style,
                           const TensorView& slot_mapping, const PagedKvCache& cache);
Status kv_cache_write(const TensorView& k, const TensorView& v, const TensorView& slot_mapping,
                      const PagedKvCache& cache);

}  // namespace tejas::ref
