#include "ops/activation/config.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "device/numeric/storage.h"
#include "ops/activation/launch.h"
#include "runtime/alignment.h"

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

// Column blocks: enough for one step per lane, at most kMaxGridY (CUDA's limit) or max_grid_y
// when that is > 0; lanes loop over the rest.
int64_t column_blocks(int64_t chunks, int threads_per_row, int max_grid_y) {
  const int64_t cap = max_grid_y > 0 ? std::min<int64_t>(max_grid_y, kMaxGridY) : kMaxGridY;
  return std::min(ceil_div(chunks, threads_per_row), cap);
}

}  // namespace

namespace {
thread_local GatedConfig g_last_gated;
thread_local QuantConfig g_last_quant;
}  // namespace

GatedConfig last_gated_config() { return g_last_gated; }
void set_last_gated_config(const GatedConfig& c) { g_last_gated = c; }
QuantConfig last_quant_config() { return g_last_quant; }
void set_last_quant_config(const QuantConfig& c) { g_last_quant = c; }

int64_t gated_pipe_smem_bytes(int stages) { return int64_t{stages} * 2 * kPipeTileChunks * kMaxVecBytes; }

GatedConfig with_gated_pipeline(const GatedProblem& p, GatedConfig c, int stages, int64_t resident_ctas) {
  if (stages <= 0 || resident_ctas <= 0 || c.vec_bytes != kMaxVecBytes) return c;
  const int64_t tiles = ceil_div(p.T * (p.F / c.vec), kPipeTileChunks);
  if (tiles < 2 * resident_ctas) return c;
  c.pipeline_stages = stages;
  c.fast_math = false;  // gated_pipe_kernel has the accurate math only
  c.pipe_blocks = resident_ctas;
  return c;
}

ActOptions with_limit_pair(ActOptions o, DType x) {
  o.limit_pair = 0;
  if (!o.clamped || (x != DType::bf16 && x != DType::f16)) return o;
  const uint16_t bits = x == DType::bf16 ? num::Bf16::from_f32(o.limit) : num::F16::from_f32(o.limit);
  const float back = x == DType::bf16 ? num::Bf16::to_f32(bits) : num::F16::to_f32(bits);
  // Exactly representable (the limit is a positive normal f32: checks.h), so the 16-bit clamp is
  // the f32 one; otherwise the f32 clamp keeps the limit's own value.
  if (back == o.limit) o.limit_pair = bits | (static_cast<uint32_t>(bits) << 16);
  return o;
}

int x_halves_alignment(const TensorView& x, int64_t F) {
  if (!x.defined()) return kMaxVecBytes;
  TensorView gate = x, up = x;
  gate.shape[1] = up.shape[1] = F;
  up.data = static_cast<char*>(x.data) + dtype_bytes(x.dtype, F);
  return std::min(detail::access_alignment(gate, kMaxVecBytes), detail::access_alignment(up, kMaxVecBytes));
}

GatedConfig make_gated_config(const GatedProblem& p) {
  GatedConfig c;
  // Curated widths: 16 B (the fast path), 8 B (F a multiple of 4 / 2 elements but rows only
  // 8-byte aligned), else one element per access.
  const int align = std::min(p.x_align, p.out_align);
  c.vec_bytes = align >= kMaxVecBytes ? kMaxVecBytes : (align >= 8 && p.elem_bytes < 8 ? 8 : p.elem_bytes);
  c.vec = c.vec_bytes / p.elem_bytes;
  const int64_t chunks = p.F / c.vec;
  c.threads_per_row = lanes_for(chunks, 1);
  c.rows_per_block = c.threads / c.threads_per_row;
  c.grid_x = ceil_div(p.T, c.rows_per_block);
  c.steps = c.vec_bytes == kMaxVecBytes ? std::clamp(p.steps, 1, kMaxGatedSteps) : 1;
  c.grid_y = column_blocks(ceil_div(chunks, c.steps), c.threads_per_row, p.max_grid_y);
  c.fast_math = p.fast_math && c.vec_bytes == kMaxVecBytes && p.elem_bytes == 2 && c.steps == 1;
  return c;
}

QuantConfig make_quant_config(const QuantProblem& p) {
  QuantConfig c;
  const int q_lane_bytes = kQuantElems * p.q_bits / 8;  // 8 (e4m3) or 4 (e2m1)
  c.vectorized = p.x_align >= kMaxVecBytes && p.q_align >= q_lane_bytes;
  c.lanes_per_group = p.group / kQuantElems;
  const int64_t chunks = p.F / kQuantElems;
  c.threads_per_row = lanes_for(chunks, c.lanes_per_group);
  c.rows_per_block = c.threads / c.threads_per_row;
  c.grid_x = ceil_div(p.T, c.rows_per_block);
  c.grid_y = column_blocks(chunks, c.threads_per_row, p.max_grid_y);
  c.fast_math = p.fast_math;
  c.packed_fp4 = p.packed_fp4 && p.q_bits == 4;
  return c;
}

std::string GatedConfig::to_string() const {
  std::ostringstream os;
  if (pipeline_stages > 0) {
    os << "vec " << vec << " (" << vec_bytes << " B), threads " << threads << ", persistent blocks walking "
       << kPipeTileChunks << "-chunk tiles (" << pipeline_stages << " tile(s) ahead by cp.async), grid " << pipe_blocks;
    return os.str();
  }
  os << "vec " << vec << " (" << vec_bytes << " B), threads " << threads << " (" << rows_per_block << " rows x "
     << threads_per_row << "), grid " << grid_x << " x " << grid_y;
  if (steps > 1) os << ", " << steps << " steps per lane";
  if (fast_math) os << ", fast math";
  return os.str();
}

std::string QuantConfig::to_string() const {
  std::ostringstream os;
  os << (vectorized ? "16 B loads" : "element loads") << ", " << kQuantElems << " elems/lane, " << lanes_per_group
     << " lanes/group, threads " << threads << " (" << rows_per_block << " rows x " << threads_per_row << "), grid "
     << grid_x << " x " << grid_y;
  if (fast_math) os << ", fast math";
  if (packed_fp4) os << ", packed e2m1 pairs";
  return os.str();
}

}  // namespace tejas::act
