// Launch-configuration overrides for measuring variants on a GPU without rebuilding:
// TEJAS_TUNE="key=value[,key=value...]", read once. Each config function takes the value as a
// plain input (the configs stay pure); the launchers fill it from tune(). Unknown keys or bad
// values are reported once on stderr and ignored. Keys:
//   quant.max_chunks=1..4  vectorized quant: most 16-byte chunks of x one lane holds per group
//                          (default 4; 1 = one chunk per lane, the widest lane split)
//   quant.max_steps=1..4   vectorized quant with one chunk per lane (MX, NVFP4, small groups):
//                          most tiles of groups a warp loads at once (default 4; 1 = one)
//   quant.max_grid=0..999  quant and dequant kernels (all paths): at most this many blocks, warps
//                          loop over the rest (default 0 = no cap beyond 2^20)
//   dequant.steps=1..2     vectorized dequant: grid-stride steps per thread, loads first
//                          (default 2; 1 = one step per thread)
//   activation.max_grid_y=0..999  silu_mul / gelu_tanh_mul and the fused quant kernels: at most
//                          this many column blocks, lanes loop over the rest (default 0 = only
//                          CUDA's 65535 limit)
//   activation.steps=1..4  silu_mul / gelu_tanh_mul, 16-byte path: chunks per lane, all their
//                          loads issued first, the column blocks fewer by as much (default 1)
//   activation.pipeline=0..2  silu_mul / gelu_tanh_mul, 16-byte path: persistent blocks walk
//                          256-chunk tiles of the flattened [rows, chunks] space, each thread
//                          keeping this many tiles' gate / up vectors in flight through cp.async
//                          into shared memory while it computes and stores the current one
//                          (default 0 = off: one block per row group and column block)
//   norm.prefetch_rows=0..65535  RMSNorm family, rows of at most 2 vectors per thread (the
//                          16-byte rows): each row's threads also prefetch (prefetch.L2) the x
//                          and residual vectors of the row this many rows ahead, so its loads
//                          find them in L2 (default 0 = none)
//   norm.pipeline=0..2     RMSNorm family, CTA-per-row rows of whole 16-byte vectors (16-bit x,
//                          16-bit residual or none): persistent CTAs (as many as fit on the GPU
//                          at once) walk the rows, each keeping this many rows ahead in flight
//                          through cp.async into shared memory while it reduces and writes the
//                          current one (default 0 = off: one CTA per row, loaded into registers)
//   rope.heads=1..2        rope family: heads whose q/k loads a thread issues together, half
//                          the head lanes at 2 (default 1)
//   rope.v_prefetch=0..1   rope_kv_cache_write and kv_cache_write: 1 = each thread prefetches its
//                          first v vector into L2 at its start; 0 (default) = v is first read at
//                          the copy
//   rope.head_prefetch=0..1  rope family: 1 = each thread prefetches its first q/k head rows
//                          into L2 before loading the position; 0 (default) = no prefetch
//   rope.head_stage=0..1   rope family, 16-byte q/k accesses: 1 = each thread copies its
//                          first step's q/k head vectors into shared memory (cp.async) before
//                          loading the position, and rotates them from there; 0 (default) =
//                          they are loaded after the position and cos/sin
#pragma once
#include <string>

namespace tejas::detail {

// The kernels' register arrays bound these (static_assert'ed against quant_kernel's constants).
inline constexpr int kTuneMaxQuantChunks = 4;
inline constexpr int kTuneMaxDequantSteps = 2;
inline constexpr int kTuneMaxActivationSteps = 4;
inline constexpr int kTuneMaxRopeHeads = 2;
inline constexpr int kTuneMaxNormStages = 2;
inline constexpr int kTuneMaxActivationStages = 2;

struct Tune {
  int quant_max_chunks = 4;
  int quant_max_steps = 4;
  int quant_max_grid = 0;
  int dequant_steps = 2;
  int rope_heads = 1;
  int rope_v_prefetch = 0;
  int rope_head_prefetch = 0;
  int rope_head_stage = 0;
  int activation_max_grid_y = 0;
  int activation_steps = 1;
  int activation_pipeline = 0;
  int norm_prefetch_rows = 0;
  int norm_pipeline = 0;
};

// Parses `text` ("" = defaults) into *out; false and `why` on the first bad entry (the entries
// before it are applied). Keys and values may carry spaces around them; values are decimal.
bool parse_tune(const std::string& text, Tune* out, std::string* why);

// The process's overrides (TEJAS_TUNE), parsed once.
const Tune& tune();
// Why TEJAS_TUNE did not parse ("" when it did or is unset): `tejas bench` refuses to time then,
// so a mistyped variant cannot pass for a measured one.
const std::string& tune_error();
// TEJAS_TUNE as given ("" when unset), for reports.
const std::string& tune_text();

// Tests: tune() returns `t` while this lives (one at a time, not thread safe), so both sides of
// a variant run in the same process.
class ScopedTuneOverride {
 public:
  explicit ScopedTuneOverride(const Tune& t);
  ~ScopedTuneOverride();
  ScopedTuneOverride(const ScopedTuneOverride&) = delete;
  ScopedTuneOverride& operator=(const ScopedTuneOverride&) = delete;

 private:
  Tune tune_;
  const Tune* previous_;
};

}  // namespace tejas::detail
