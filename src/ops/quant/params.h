// Kernel parameters of the quantization ops (host and device). Rows are the flattened leading
// dims of one launch; every row stride is uniform within a launch (the launcher splits views
// whose leading dims do not collapse).
#pragma once
#include <cstdint>

#include "device/fast_div.h"

namespace tejas::quant_kernel {

// How quant_* derives a group's scale (include/tejas/quant.h).
enum class ScaleRule : uint8_t {
  fp8_f32,    // f32(max(amax, kFp8MinAmax) / 448)
  fp8_ue8m0,  // 2^ceil(log2(max(amax, kFp8MinAmax) / 448))
  mx,         // 2^(floor(log2(amax)) - emax_elem), clamped at 2^-127
  nvfp4,      // sat_rne_e4m3(amax / (6 * tensor_scale)), divisor block_scale * tensor_scale
};

// The dtype of a scale as stored.
enum class ScaleKind : uint8_t { f32, ue8m0, e4m3 };

struct QuantParams {
  const void* x;              // [rows, K] bf16 / f16 / f32, row stride x_row_stride elements
  uint8_t* q;                 // [rows, K] e4m3 bytes or e2m1 nibbles (low nibble first), row stride q_row_stride_bytes
  void* scales;               // [rows, K / group] f32 / ue8m0 / e4m3, row stride s_row_stride elements
  const float* tensor_scale;  // [1] f32, nvfp4 only; else null
  int64_t rows = 0, K = 0, group = 1;
  int64_t x_row_stride = 0, q_row_stride_bytes = 0, s_row_stride = 0;
  ScaleRule rule = ScaleRule::fp8_f32;
  int lanes_per_group = 32;  // vectorized kernel: power of two <= 32
  int chunks = 1;            // vectorized kernel: <= kMaxChunks
  int steps = 1;             // vectorized kernel: tiles per warp step (chunks x steps <= kMaxChunks)
  dev::FastDiv row_div;      // division by K / group (a group index -> its row), the one source of it
};

struct DequantParams {
  const uint8_t* q;           // [rows, K] e4m3 bytes or e2m1 nibbles, row stride q_row_stride_bytes
  const void* scales;         // [rows, K / group] f32 / ue8m0 / e4m3, row stride s_row_stride elements
  const float* tensor_scale;  // [1] f32 for e4m3 scales (nvfp4); else null
  void* out;                  // [rows, K] bf16 / f16 / f32, row stride out_row_stride elements
  int64_t rows = 0, K = 0, group = 1;
  int64_t q_row_stride_bytes = 0, s_row_stride = 0, out_row_stride = 0;
  ScaleKind scale_kind = ScaleKind::f32;
  int steps = 1;  // vectorized kernel: consecutive grid-stride steps per thread, loads first
  dev::FastDiv row_div;  // vectorized kernel: division by K / vec (a vector index -> its row)
  // Vectorized kernel: division by group / vec (a vector's index in its row -> its group; K / vec
  // < 2^31 there, make_dequant_config).
  dev::FastDiv32 group_div;
  int group_shift = 0;  // vectorized, linear (DequantConfig::linear): log2(group / vec)
};

}  // namespace tejas::quant_kernel
