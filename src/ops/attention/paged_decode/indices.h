// Which keys and blocks a paged-decode request uses, and the check of index contents
// (seq_lens, block_table) that the reference always runs and other backends run in debug mode.
#pragma once
#include <algorithm>
#include <cstdint>

#include "tejas/status.h"
#include "tejas/tensor.h"

namespace tejas::attn {

// Position of query j of Q when the request holds L keys (the queries are the last Q keys).
inline int64_t query_position(int64_t L, int64_t Q, int64_t j) { return L - Q + j; }

// First key that query position p sees (window_left = -1: no window).
inline int64_t first_key_for(int64_t p, int window_left) {
  return window_left < 0 ? 0 : std::max<int64_t>(0, p - window_left);
}

// First key any of the request's queries sees: the earliest query has the earliest window.
inline int64_t first_used_key(int64_t L, int64_t Q, int window_left) {
  return first_key_for(query_position(L, Q, 0), window_left);
}

struct PagedGeometry {
  int64_t num_queries;  // Q
  int64_t block_size;
  int64_t num_blocks;
  int window_left;
};

// block_table [B, max_blocks] and seq_lens [B] (i32, host memory, shapes already validated).
// Returns invalid_argument naming seq_lens or block_table at the first bad entry; reads only.
Status check_paged_indices(const char* op, const TensorView& block_table, const TensorView& seq_lens,
                           const PagedGeometry& g);

}  // namespace tejas::attn
