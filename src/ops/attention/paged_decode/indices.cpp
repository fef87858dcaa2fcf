#include "ops/attention/paged_decode/indices.h"

#include <string>

#include "runtime/validate.h"

namespace tejas::attn {

Status check_paged_indices(const char* op, const TensorView& block_table, const TensorView& seq_lens,
                           const PagedGeometry& g) {
  const int64_t batch = seq_lens.shape[0];
  const int64_t max_blocks = block_table.shape[1];
  const int64_t max_len = max_blocks * g.block_size;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t L = detail::read_index(seq_lens, {b});
    if (L < g.num_queries || L > max_len)
      return Status::InvalidArgument(std::string(op) + ": seq_lens: expected seq_lens[" + std::to_string(b) +
                                     "] in [" + std::to_string(g.num_queries) + ", " + std::to_string(max_len) +
                                     "] (Q .. max_blocks * block_size), got " + std::to_string(L));
    const int64_t first_block = first_used_key(L, g.num_queries, g.window_left) / g.block_size;
    const int64_t end_block = (L + g.block_size - 1) / g.block_size;
    for (int64_t i = first_block; i < end_block; ++i) {
      const int64_t blk = detail::read_index(block_table, {b, i});
      if (blk < 0 || blk >= g.num_blocks)
        return Status::InvalidArgument(std::string(op) + ": block_table: expected block_table[" +
                                       std::to_string(b) + ", " + std::to_string(i) + "] in [0, " +
                                       std::to_string(g.num_blocks) + ") (k_cache's blocks), got " +
                                       std::to_string(blk));
    }
  }
  return Status::Ok();
}

}  // namespace tejas::attn
