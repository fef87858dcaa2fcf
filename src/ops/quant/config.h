// Kernel configs of the quantization ops: pure functions from the problem (dtypes, group size,
// row length, the byte alignment all row starts share) to the launch shape. Unit-tested in
// tests/ops/quant/test_quant_config.cpp; printed when TEJAS_PRINT_CONFIG=1.
//
// Quantization, vectorized path: a lane owns `chunks` chunks of `vec` consecutive elements of one
// group (one 16-byte load each); a group spans lanes_per_group lanes (a power of two <= 32) that
// reduce its amax by xor shuffles, so a warp quantizes 32 / lanes_per_group groups at a time and
// the group stays in registers between the amax and the codes. Chunk c of lane l covers elements
// (c * lanes_per_group + l) * vec .. + vec of its group: each load instruction of the warp reads
// whole 16-byte pieces of 32 / lanes_per_group groups. With one chunk per lane, a warp step covers
// `steps` consecutive tiles of 32 / lanes_per_group groups (loads of all of them first), so a lane
// still has up to kMaxChunks x 16 bytes in flight when groups are small (MX 32, NVFP4 16).
// Generic path (groups that do not split that way, too large for registers, or rows not 16-byte
// aligned): a warp per group, one element (e4m3) or one byte of codes (e2m1, two elements) per
// lane per step, amax in a first pass and codes in a second that re-reads the group (L1/L2).
//
// Dequantization: a thread owns `vec` consecutive outputs (16 bytes) inside one group
// (vectorized), or one code byte (generic).
#pragma once
#include <cstdint>
#include <string>

namespace tejas::quant_kernel {

inline constexpr int kThreads = 256;          // 8 warps per block
inline constexpr int kWarp = 32;
inline constexpr int kVecBytes = 16;          // one ld.global.v4 per lane
inline constexpr int kSectorBytes = 32;       // DRAM / L2 sector
inline constexpr int kMaxChunks = 4;          // register budget: 4 x 16 bytes of x per lane
inline constexpr int kMaxDequantSteps = 2;    // dequant: up to 2 steps' codes in flight per thread
// The packed nvfp4-to-bf16 dequant kernel's launch bound: 6 CTAs of kThreads per SM (<= 40
// registers), as it held before its group division went to dev::fast_div (then 42: 5 CTAs). The
// other dequant kernels name none (0): bounded at 6 too, ptxas gave some of them up to 38
// registers (6 CTAs where they hold 8 at 32); even a bound of 1 changed their counts.
inline constexpr int kDequantNvfp4MinCtas = 6;
inline constexpr int64_t kMaxDequantRowVecs = (int64_t{1} << 31) - 1;  // dequant, vectorized: K / vec at most
inline constexpr int64_t kMaxGrid = 1 << 20;  // blocks; warps loop beyond (grid-stride)

struct QuantProblem {
  int x_bytes = 2;     // element size of x: 2 (bf16, f16) or 4 (f32)
  int code_bits = 8;   // 8 (e4m3) or 4 (e2m1)
  int64_t rows = 1, K = 128;
  int64_t group = 128;
  // Alignment every row start shares, in bytes (a power of two <= kSectorBytes, from
  // detail::access_alignment of the launch's [rows, K] views): 16 allows vector access, 32 lets
  // the lane split rely on groups starting on sector bounds.
  int x_align = kSectorBytes;
  int q_align = kSectorBytes;
  // Most chunks one lane may hold per group (1..kMaxChunks; TEJAS_TUNE quant.max_chunks).
  int max_chunks = kMaxChunks;
  // Most tiles per warp step when a lane holds one chunk (1..kMaxChunks; TEJAS_TUNE
  // quant.max_steps).
  int max_steps = kMaxChunks;
  int max_grid = 0;  // > 0: at most this many blocks (TEJAS_TUNE quant.max_grid); 0: kMaxGrid
  bool f32_scales = false;   // the fp8_f32 rule (divisors that are not powers of two)
  bool fast_convert = true;  // TEJAS_TUNE quant.fast_convert: allow the version 5 conversions
  bool tie_bias = true;      // TEJAS_TUNE quant.tie_bias: allow version 6 (with fast_convert)
  bool nvfp4_scales = false;  // the nvfp4 rule (e4m3 block scales times a tensor scale)
  bool clean_table = true;    // TEJAS_TUNE quant.clean_table: allow version 7 (with fast_convert)
  // x's, q's and the scales' rows laid end to end (row strides K, K and K / group elements, or one
  // row), and TEJAS_TUNE quant.linear on: the vectorized kernel walks group indices alone.
  bool linear = false;
};

struct QuantConfig {
  bool vectorized = false;
  int vec = 1;               // elements per chunk (vectorized: 16 bytes of x)
  int lanes_per_group = 32;  // vectorized: power of two <= 32
  int chunks = 1;            // vectorized: 16-byte chunks per lane per group (<= kMaxChunks)
  int steps = 1;             // vectorized: tiles per warp step; > 1 only with chunks 1 (chunks x steps <= kMaxChunks)
  int elems_per_lane = 1;    // generic: 1 (e4m3) or 2 (e2m1: one code byte)
  int threads = kThreads;
  int64_t groups_per_warp = 1;  // per step: 32 / lanes_per_group (vectorized) or 1
  // Version 5 (vectorized; e2m1 codes or f32 scales): e2m1 codes converted in pairs
  // (src/device/numeric/packed_half.h: scaled and rounded as packed bf16 / f16 for 16-bit x with
  // MX scales, else through bf16 rounded to odd) rather than element by element in f32, and the
  // inexact rules' (nvfp4, fp8 f32 scales) near-midpoint chunks found by num::near_key.
  bool fast_convert = false;
  // Version 6 (vectorized, fp8 f32 scales, 16-bit x, with fast_convert): each quotient from a
  // per-group biased 1 / s (quant_math.h's tie_bias), no near-midpoint test, in every group
  // (below the amax clamp too).
  bool tie_bias = false;
  // Version 7 (vectorized, nvfp4, 16-bit x, with fast_convert; with_clean_table): a per-block
  // table of clean multipliers (kernel.cuh's Nvfp4CleanTable, kCleanTableBytes of dynamic shared
  // memory: smem_bytes) on a persistent grid of the CTAs the GPU holds at once.
  bool clean_table = false;
  // Vectorized, QuantProblem::linear: a group's x, codes and scale placed from its index alone
  // (kernel.cuh's GroupWalk<true>), not from its row and its group in the row.
  bool linear = false;
  int64_t grid = 1;
  std::string to_string() const;
};

QuantConfig make_quant_config(const QuantProblem& p);

// Copies of version 7's table (kernel.cuh's Nvfp4CleanTable): one per group slot of a warp
// (nvfp4's 16-element groups of 16-bit x take 2 lanes: 16 slots).
inline constexpr int kCleanCopies = 16;
// Bytes of kernel.cuh's Nvfp4CleanTable (static_assert'ed there): 128 e4m3 codes x the copies.
inline constexpr int64_t kCleanTableBytes = 128 * kCleanCopies * 4;
// A launch's dynamic shared memory.
inline int64_t smem_bytes(const QuantConfig& c) { return c.clean_table ? kCleanTableBytes : 0; }
// Version 7 needs at least this many warp steps per block (each block builds its table once:
// ~150 instructions per thread, against ~700 per warp step of four tiles).
inline constexpr int64_t kCleanMinSteps = 4;
// c with version 7 where it applies (make_quant_config's vectorized nvfp4 config for 16-bit x,
// fast_convert, the tune on) and the grid holds at least kCleanMinSteps steps per resident CTA
// (resident_ctas: what the GPU holds at once; 0 = unknown, none): the grid becomes resident_ctas.
QuantConfig with_clean_table(const QuantProblem& p, QuantConfig c, int64_t resident_ctas);

struct DequantProblem {
  int out_bytes = 2;   // element size of out: 2 or 4
  int code_bits = 8;
  int64_t rows = 1, K = 128;
  int64_t group = 128;
  int out_align = kVecBytes;  // as QuantProblem's
  int q_align = kVecBytes;
  // Steps (vectors of out) one thread handles, loads first (TEJAS_TUNE dequant.steps).
  int steps = 2;
  int max_grid = 0;  // as QuantProblem's
  bool mx_scales = false;     // ue8m0 scales (MX)
  bool nvfp4_bf16 = false;    // e4m3 block scales (nvfp4) and bf16 out
  bool fast_convert = true;  // as QuantProblem's
  // out's, q's and the scales' rows laid end to end (or one row), and TEJAS_TUNE quant.linear on.
  bool linear = false;
};

struct DequantConfig {
  bool vectorized = false;
  int vec = 1;           // outputs per thread per step (vectorized: 16 bytes of out)
  int steps = 1;         // vectorized: steps per thread, all loads issued first (<= kMaxDequantSteps)
  // Vectorized, e2m1 codes: MX scales to 16-bit out, or nvfp4 to bf16: pairs decoded and scaled
  // as packed bf16 / f16 (version 4 of the e2m1 paths). e4m3 codes to 16-bit out: products
  // packed in pairs, rounded to odd only on a midpoint (version 3 of the fp8 path).
  bool fast_convert = false;
  // Vectorized, DequantProblem::linear and group / vec a power of two: a vector placed from its
  // flat index alone (kernel.cuh's dequant_vec_kernel, kLinear).
  bool linear = false;
  int threads = kThreads;
  int64_t grid = 1;
  std::string to_string() const;
};

DequantConfig make_dequant_config(const DequantProblem& p);


}  // namespace tejas::quant_kernel
