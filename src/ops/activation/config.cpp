#include "ops/activation/config.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace tejas::act {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t pow2_ceil(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

// Lanes per row: enough to cover the row's chunks in one step (rows shorter than a block
// share it), at least `min_lanes`, at most a block.
int lanes_for(int64_t chunks, int min_lanes) {
  return static_cast<int>(std::clamp<int64_t>(pow2_ceil(chunks), min_lanes, kThreads));
}

}  // namespace

int common_alignment(const Alignment& a, int max_bytes) {
  const uint64_t all = a.x_addr | a.x_row_stride_bytes | a.up_offset_bytes | a.out_addr | a.out_row_stride_bytes |
                       static_cast<uint64_t>(max_bytes);
  return static_cast<int>(all & (~all + 1));  // lowest set bit
}

GatedConfig make_gated_config(const GatedProblem& p) {
  GatedConfig c;
  // Curated widths: 16 B (the fast path), 8 B (F a multiple of 4 / 2 elements but rows only
  // 8-byte aligned), else one element per access.
  const int align = common_alignment(p.align, kMaxVecBytes);
  c.vec_bytes = align >= kMaxVecBytes ? kMaxVecBytes : (align >= 8 && p.elem_bytes < 8 ? 8 : p.elem_bytes);
  c.vec = c.vec_bytes / p.elem_bytes;
  const int64_t chunks = p.F / c.vec;
  c.threads_per_row = lanes_for(chunks, 1);
  c.rows_per_block = c.threads / c.threads_per_row;
  c.grid_x = ceil_div(p.T, c.rows_per_block);
  c.grid_y = std::min(ceil_div(chunks, c.threads_per_row), kMaxGridY);
  return c;
}

QuantConfig make_quant_config(const QuantProblem& p) {
  QuantConfig c;
  const int q_lane_bytes = kQuantElems * p.q_bits / 8;  // 8 (e4m3) or 4 (e2m1)
  Alignment x_only = p.align, q_only = p.align;
  x_only.out_addr = x_only.out_row_stride_bytes = 0;
  q_only.x_addr = q_only.x_row_stride_bytes = q_only.up_offset_bytes = 0;
  c.vectorized = common_alignment(x_only, kMaxVecBytes) >= kMaxVecBytes &&
                 common_alignment(q_only, q_lane_bytes) >= q_lane_bytes;
  c.lanes_per_group = p.group / kQuantElems;
  const int64_t chunks = p.F / kQuantElems;
  c.threads_per_row = lanes_for(chunks, c.lanes_per_group);
  c.rows_per_block = c.threads / c.threads_per_row;
  c.grid_x = ceil_div(p.T, c.rows_per_block);
  c.grid_y = std::min(ceil_div(chunks, c.threads_per_row), kMaxGridY);
  return c;
}

std::string GatedConfig::to_string() const {
  std::ostringstream os;
  os << "vec " << vec << " (" << vec_bytes << " B), threads " << threads << " (" << rows_per_block << " rows x "
     << threads_per_row << "), grid " << grid_x << " x " << grid_y;
  return os.str();
}

std::string QuantConfig::to_string() const {
  std::ostringstream os;
  os << (vectorized ? "16 B loads" : "element loads") << ", " << kQuantElems << " elems/lane, " << lanes_per_group
     << " lanes/group, threads " << threads << " (" << rows_per_block << " rows x " << threads_per_row << "), grid "
     << grid_x << " x " << grid_y;
  return os.str();
}

}  // namespace tejas::act
