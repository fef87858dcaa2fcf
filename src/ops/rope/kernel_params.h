// The rope family kernel's parameters: one plain struct, shared by the device code (kernel.cuh)
// and the host planners (plan.cpp).
#pragma once
#include <cstdint>

#include "device/fast_div.h"

namespace tejas::rotary {

enum class KvKind : int { none, same, e4m3, e5m2 };  // same: the cache holds q's dtype

struct RopeParams {
  void* q;                  // [T, Hq, D], rotated in place
  void* k;                  // [T, Hk, D], rotated in place; may be null (then Hk = 0)
  const void* v;            // [T, Hk, D]; null unless kv_kind != none
  const void* positions;    // [T] or [3, T] (mrope), i32 or i64
  const void* cos_sin;      // [max_pos, rotary_dim]: cos then sin; f32 or q's dtype
  const int64_t* slots;     // [T]; null unless kv_kind != none; < 0 skips the token's cache rows
  void* k_cache;            // [num_blocks, block_size, Hk, D]; null unless kv_kind != none
  void* v_cache;            // [num_blocks, block_size, Hk, D]
  const float* k_scale;     // [1]; fp8 caches only
  const float* v_scale;     // [1]; fp8 caches only
  int64_t T, Hq, Hk, D, half;                          // half = rotary_dim / 2
  int64_t q_tok, q_head, k_tok, k_head, v_tok, v_head;  // strides, in elements
  int64_t pos_row, pos_tok;                            // positions strides (pos_row: mrope only)
  int64_t cs_row;                                      // cos_sin_cache row stride
  int64_t kc_block, kc_slot, kc_head, vc_block, vc_slot, vc_head;
  dev::FastDiv block_div;   // the caches' block size (block_div.d): a slot -> its block and row
  dev::FastDiv32 col_div;   // D / VEC, the vectors of a head row: a vector index -> its head
  dev::FastDiv32 group_div; // col_threads x head_lanes, a token's threads: a thread -> its token
  dev::FastDiv32 lane_div;  // col_threads: a thread of a token's group -> its head lane and column
  // Bounds for index contents the kernel cannot trust without debug checks: a position outside
  // [0, max_pos) leaves its pairs unrotated, a slot >= num_slots is skipped like a negative one,
  // so bad indices never touch memory outside the tensors.
  int64_t max_pos, num_slots;
  int64_t sec_end0, sec_end1;  // first pair of position rows 1 and 2 (rope: half, half)
  bool pos_i64, cos_f32, neox;
  bool v_prefetch;  // with caches: prefetch each thread's first v vector into L2 at the start
  bool head_prefetch;  // prefetch each thread's first q/k head rows into L2 before the position load
  bool head_stage;     // copy them into shared memory (cp.async) instead, and rotate them from there
  bool v_stage;        // with head_stage and caches: copy each thread's first v vector there too
  bool kv_loads_first;  // kv_cache_write: kv_write_kernel (loads first) instead of rope_kernel
  bool clean_scales;    // fp8 caches, 16-bit k and v: the block checks for clean multipliers (kernel.cuh)
  KvKind kv_kind;
  int rot_cols, pass_cols, col_threads, head_lanes, tokens_per_block;
};

}  // namespace tejas::rotary
