// Kernel configuration of the rope family (rope, mrope, rope_kv_cache_write): a pure function
// from the problem (sizes, element sizes, alignments) to the launch shape. Unit-tested in
// tests/ops/rope/test_rope_config.cpp; TEJAS_PRINT_CONFIG=1 prints every choice.
//
// Work decomposition: a "column" is the rotation pairs one thread owns in one head (neox: VEC
// pairs, VEC elements from each half; gptj: the VEC / 2 pairs of VEC contiguous elements, or one
// pair loaded as two scalars when VEC is 1), or, for the KV-cache write, VEC elements of k's
// non-rotary tail. The threads of one token form a group of
// col_threads x head_lanes: a thread keeps its column's cos/sin in registers and walks the
// heads h = lane, lane + head_lanes, ..., heads_in_flight of them at a time (their loads issued
// together); v rows are copied by the whole group.
#pragma once
#include <cstdint>
#include <string>

namespace tejas::rotary {

inline constexpr int kMaxAccessBytes = 16;    // widest global access (ld/st .v4.u32)
inline constexpr int kCompactAccessBytes = 4; // the middle vector candidate: one 32-bit word
inline constexpr int kMaxGroupThreads = 512;  // threads per token; also the block cap
inline constexpr int kTargetBlockThreads = 256;
// The split rope_kv_cache_write's k half (kv_rope_kernel, plan.cpp): 128-thread blocks. At its
// 92-94 registers (sm_90a, allocated as 96) an SM holds 5 of them, 640 threads, where 256-thread
// blocks fit 2, 512 threads: a fifth fewer loads in flight. 128 is also the least block that
// checks its fp8 scales for clean multipliers (kCleanMinThreads).
inline constexpr int kKvRopeBlockThreads = 128;
inline constexpr int kWarpSize = 32;
inline constexpr int kNumSections = 3;        // mrope position rows
inline constexpr int kMaxHeadsInFlight = 2;   // heads a thread loads at once (kernels: 1 or 2)
// The pipelined kernel's wide step (rope and mrope, planned in plan.cpp only): three heads per
// thread where two would need a second step (more than 2 x 512 / rot_cols heads: DeepSeek-V3's
// 129 of D = 64), so that those shapes pipeline too. rope_pipe_kernel walks a thread's heads one
// at a time, so three cost it no registers (78 for bf16, sm_90a, as two).
inline constexpr int kPipeWideHeads = 3;
// Block size from which the kernels that can check their fp8 scales for clean multipliers do
// (kernel.cuh's clean_scales): at most 2 of the 126 tests per scale for each thread, so that the
// check ends while the block's first loads are still out.
inline constexpr int kCleanMinThreads = 128;
// Heads of q and k together: kernels count heads in 32-bit ints (validated, checks.cpp).
inline constexpr int64_t kMaxHeads = int64_t{1} << 24;
// Head dim: kernels count a head's columns in 32-bit ints (validated: rope family, kv_cache_write).
inline constexpr int64_t kMaxHeadDim = int64_t{1} << 24;

struct RopeProblem {
  int elem_bytes = 2;           // q, k, v: 2 (bf16 / f16) or 4 (f32)
  int cos_elem_bytes = 4;       // cos_sin_cache: 4 (f32) or elem_bytes
  int kv_cache_elem_bytes = 0;  // 0: no KV-cache write; 1: fp8; 2: bf16 / f16
  bool interleaved = false;     // gptj style
  int64_t T = 1, Hq = 1, Hk = 0, D = 2, rotary_dim = 2;
  int64_t sections[kNumSections] = {1, 0, 0};  // pairs per position row; rope: {rotary_dim/2, 0, 0}
  // Largest power of two <= 16 dividing the data address and every outer stride, in bytes
  // (detail::access_alignment). Unused ones (k absent, no cache) may stay at 16.
  int qk_align = kMaxAccessBytes, cos_align = kMaxAccessBytes;
  int v_align = kMaxAccessBytes, kv_cache_align = kMaxAccessBytes;
  int heads_in_flight = 1;      // 1 or kMaxHeadsInFlight: TEJAS_TUNE rope.heads (per op by default: plan.cpp); kPipeWideHeads: plan.cpp's wide step
  int block_threads = kTargetBlockThreads;  // what small groups fill a block up to (the split's k half: kKvRopeBlockThreads)
};

struct RopeConfig {
  int vec = 1;          // elements per q/k access = rotation pairs per thread and head
  int pairs = 1;        // rotation pairs per column: vec (neox), max(vec / 2, 1) (gptj)
  int rot_cols = 1;     // rotation columns per head: (rotary_dim / 2) / pairs
  int pass_cols = 0;    // k tail columns written to the cache: (D - rotary_dim) / vec
  int col_threads = 1;  // threads across columns (a thread loops when columns outnumber them)
  int head_lanes = 1;   // threads across heads: ceil(heads / heads_in_flight), capped by the group
  int tokens_per_block = 1;
  int threads = 1;      // per block: col_threads * head_lanes * tokens_per_block
  int64_t blocks = 1;   // ceil(T / tokens_per_block)
  int heads_in_flight = 1;  // heads whose loads a thread issues together (kernel.cuh rotate_column)
};

// The vector widths kernels are instantiated for, widest first, in elements of `elem_bytes`:
// 16 bytes, 4 bytes (16-bit types only), one element.
int vec_candidate(int elem_bytes, int index);  // 0 past the last candidate
int pairs_per_column(int vec, bool interleaved);
inline constexpr int kNumVecCandidates = 3;

RopeConfig choose_config(const RopeProblem& p);

// The rope.head_stage variant (TEJAS_TUNE): bytes of one q/k access of a column (a thread's
// element run per load: vec elements, or one for gptj's one-element path), the accesses per head
// and column, and the shared memory a block needs to stage its threads' first-step heads: 0 when
// the access is not 16 bytes (the staging kernels are instantiated for those only) or the
// config rotates nothing.
int head_access_bytes(const RopeConfig& c, int elem_bytes, bool interleaved);
int head_accesses(const RopeConfig& c, bool interleaved);
int64_t head_stage_smem_bytes(const RopeConfig& c, int elem_bytes, bool interleaved);

// The rope.pipeline variant (TEJAS_TUNE; kernel.cuh's rope_pipe_kernel): staged 16-byte heads,
// where every thread owns exactly one rotary column and one head step (heads <= heads_in_flight
// x head_lanes), so its slots hold all its work for a token; with a KV cache (16-bit q), no k
// tail columns (rotary == D).
bool pipe_eligible(const RopeProblem& p, const RopeConfig& c);
// kv_cache_write's pipelined kernel (rope.pipeline=3; kernel.cuh's kv_pipe_kernel): no rotary
// columns, 16-bit k and v in 16-byte vectors, and one k and one v vector per thread (a token's
// group is its Hk x D / vec vectors: kv_write_kernel's fast path).
bool kv_pipe_eligible(const RopeProblem& p, const RopeConfig& c);
// Its persistent grid: the config's blocks, at most the CTAs resident at once (> 0).
int64_t pipe_blocks(const RopeConfig& c, int64_t resident);

// rope_kv_cache_write's fewest HBM bytes (docs/kernels/rope_kv_cache_write.md): q and k's rotary
// dims read and written, k's tail and v read, the k and v cache rows written at the cache's
// width, a cos/sin row, a position (counted as i32) and a slot per token. 0 without a cache or q.
int64_t kv_cache_write_bytes(const RopeProblem& p);
// The op as two launches (TEJAS_TUNE rope.kv_split; plan.cpp's run_kernel_backend): plain rope on
// q, then kv_rope_kernel on k, v and the caches. Setting 0: never; 1 (the default): from
// kKvSplitMinBytes of kv_cache_write_bytes, where the second launch's few microseconds are small
// beside the fused kernel's lost time (below, one launch: decode's small T is launch-bound);
// 2: always. Only for rope_kv_cache_write (q, a rotation and a cache).
inline constexpr int64_t kKvSplitMinBytes = int64_t{16} << 20;
bool kv_split_planned(const RopeProblem& p, int setting);
// The split's k half on the persistent kv_rope_pipe_kernel (TEJAS_TUNE rope.kv_rope_pipe):
// no q heads, a cache, 16-bit k and v in 16-byte vectors, rotary == D (no tail columns), and one
// column of one kv head per thread (a token's group is its Hk x rot_cols columns).
bool kv_rope_pipe_eligible(const RopeProblem& p, const RopeConfig& c);

std::string to_string(const RopeProblem& p);
std::string to_string(const RopeConfig& c);
// Prints "<op>: <problem> -> <config>" to stderr when TEJAS_PRINT_CONFIG=1 (and "pipelined on N
// blocks" for the rope.pipeline kernel's persistent grid, pipe_grid > 0).
void maybe_print_config(const char* op, const RopeProblem& p, const RopeConfig& c, int64_t pipe_grid = 0);

}  // namespace tejas::rotary
