// Kernel configs of the gated activations: pure functions from the problem (shape, dtype, the
// byte alignment every row start of each operand shares) to the launch shape. Unit-tested in
// tests/ops/activation/test_activation_config.cpp; printed when TEJAS_PRINT_CONFIG=1.
//
// Thread mapping (both kernels): a block is `threads` threads = rows_per_block rows x
// threads_per_row lanes. A lane owns one chunk of a row (`vec` elements of gate, the same of up)
// per step and strides over the row's chunks by threads_per_row * grid_y; silu_mul /
// gelu_tanh_mul's 16-byte path can take `steps` such chunks at once (TEJAS_TUNE
// activation.steps), loads first, with grid_y smaller by as much.
#pragma once
#include <cstdint>
#include <string>

#include "tejas/norm.h"  // kFp8MinAmax, kE4m3Max
#include "tejas/tensor.h"

namespace tejas::act {

enum class Act : uint8_t { silu, gelu_tanh };

// Options of silu_mul in f32; `clamped` selects gpt-oss's clamped SwiGLU.
struct ActOptions {
  bool clamped = false;
  float limit = 7.0f;
  float alpha = 1.702f;
  // The limit as x's 16-bit dtype in both halves of a word where it is exactly a value of that
  // dtype, else 0 (f32 x too): the fast kernels then clamp x's words before widening them
  // (act_math.cuh's clamp_pairs), else in f32. Set by with_limit_pair.
  uint32_t limit_pair = 0;
};

// o with limit_pair set for x's dtype.
ActOptions with_limit_pair(ActOptions o, DType x);

// What the fused quant kernel writes: fp8 group scales as f32 or ue8m0, or an fp4 format.
enum class QuantKind : uint8_t { fp8_f32, fp8_ue8m0, mxfp4, nvfp4 };

inline constexpr int kFp8Group = 128;
inline constexpr int kMxfp4Block = 32;
inline constexpr int kNvfp4Block = 16;
constexpr int quant_group(QuantKind k) {
  return k == QuantKind::mxfp4 ? kMxfp4Block : (k == QuantKind::nvfp4 ? kNvfp4Block : kFp8Group);
}

// f32(kFp8MinAmax / 448): the smallest dynamic fp8 scale (rounded once, as the reference does).
inline constexpr float kFp8MinScale = static_cast<float>(kFp8MinAmax / kE4m3Max);

inline constexpr int kThreads = 256;          // 8 warps: full occupancy at <= 32 registers
inline constexpr int kMaxVecBytes = 16;       // one ld.global.v4.u32 per lane
inline constexpr int64_t kMaxGridY = 65535;   // CUDA's limit on gridDim.y
inline constexpr int kQuantElems = 8;         // fused quant kernels: elements per lane (16 B of bf16/f16)
inline constexpr int kMaxGatedSteps = 4;      // gated kernels' register budget: chunks per lane at once

// Alignments decide how wide the accesses may be: the largest power of two <= kMaxVecBytes that
// divides every row start of a view (detail::access_alignment). x_align covers both [T, F]
// halves of x, gate (x[:, :F]) and up (x[:, F:], F elements further):
int x_halves_alignment(const TensorView& x, int64_t F);

// ---- silu_mul / gelu_tanh_mul -----------------------------------------------------------------
struct GatedProblem {
  int elem_bytes = 2;  // 2 (bf16, f16) or 4 (f32)
  int64_t T = 1, F = 1;
  int x_align = kMaxVecBytes;    // gate and up rows
  int out_align = kMaxVecBytes;
  int max_grid_y = 0;            // > 0: at most this many column blocks (TEJAS_TUNE activation.max_grid_y)
  int steps = 1;                 // 1..kMaxGatedSteps chunks per lane at once, 16-byte path only (TEJAS_TUNE activation.steps)
  bool fast_math = false;        // TEJAS_TUNE activation.fast_math: __expf / __fdividef (act_math.cuh)
};

struct GatedConfig {
  int vec_bytes = 2;         // access width: 16, 8 or elem_bytes (curated instantiations)
  int vec = 1;               // elements per access (F is a multiple of it)
  int threads = kThreads;
  int threads_per_row = 1;   // power of two
  int rows_per_block = 1;    // threads / threads_per_row
  int64_t grid_x = 1;        // row blocks: ceil(T / rows_per_block)
  int64_t grid_y = 1;        // column blocks (<= kMaxGridY; lanes loop beyond)
  int steps = 1;             // chunks per lane at once, loads first (> 1 only at 16 bytes)
  int pipeline_stages = 0;   // > 0: gated_pipe_kernel on a persistent grid of pipe_blocks (with_gated_pipeline)
  int64_t pipe_blocks = 0;
  bool fast_math = false;    // the fast-math kernel: 16-bit elements, 16-byte path, one step, no pipeline
  std::string to_string() const;
};

GatedConfig make_gated_config(const GatedProblem& p);

// The activation.pipeline variant (TEJAS_TUNE; gated_pipe_kernel): on the 16-byte path,
// persistent blocks of kThreads threads, as many as the GPU holds at once (`resident_ctas`), walk
// tiles of kThreads consecutive chunks of the flattened [T, chunks] space (a tile may span rows),
// each thread keeping `stages` tiles' gate and up vectors in flight in shared memory. Taken when
// there are at least two tiles per block; otherwise `c` unchanged.
inline constexpr int kPipeTileChunks = kThreads;
int64_t gated_pipe_smem_bytes(int stages);  // stages x (gate, up) x kThreads x 16 bytes
GatedConfig with_gated_pipeline(const GatedProblem& p, GatedConfig c, int stages, int64_t resident_ctas);

// ---- silu_mul_quant_fp8_group / silu_mul_quant_mx ------------------------------------------------
// x is bf16/f16; a lane owns kQuantElems consecutive elements, so a quantization group of
// `group` elements spans group / kQuantElems lanes (16, 4 or 2) that reduce their amax by
// shuffles. Vectorized path: x rows 16-byte aligned (q rows aligned to the q bytes of a lane);
// otherwise element-wide loads and byte stores.
struct QuantProblem {
  int64_t T = 1, F = 128;
  int group = 128;          // 128 (fp8 group), 32 (mxfp4), 16 (nvfp4)
  int q_bits = 8;           // 8 (e4m3) or 4 (e2m1)
  int x_align = kMaxVecBytes;  // gate and up rows
  int q_align = kMaxVecBytes;
  int max_grid_y = 0;          // as GatedProblem's
  bool fast_math = false;      // TEJAS_TUNE activation.fast_math_quant: __expf / __fdividef (act_math.cuh)
  bool packed_fp4 = true;      // TEJAS_TUNE activation.packed_fp4: e2m1 codes in pairs (packed_half.h)
};

struct QuantConfig {
  bool vectorized = false;
  int lanes_per_group = 16;  // group / kQuantElems: 16, 4 or 2 (a power of two: the kernel shifts by it)
  int threads = kThreads;
  int threads_per_row = 16;  // power of two, a multiple of lanes_per_group
  int rows_per_block = 16;
  int64_t grid_x = 1, grid_y = 1;
  bool fast_math = false;    // silu_quant_kernel's fast sigmoid (the activation.fast_math_quant variant)
  bool packed_fp4 = false;   // silu_quant_kernel's packed e2m1 conversion (fp4 kinds, activation.packed_fp4)
  std::string to_string() const;
};

QuantConfig make_quant_config(const QuantProblem& p);


}  // namespace tejas::act
