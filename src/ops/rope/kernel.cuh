// Rope family kernel: rotates q and k in place (rope, mrope) and optionally writes the rotated k
// and v into paged KV caches (rope_kv_cache_write), in one pass over HBM; without q and rotary
// columns it is the cache write alone (kv_cache_write: every column a tail column): every q/k element of
// the rotary dims is read once and written once; each cache row is written once.
// Layout and thread mapping: see config.h. Templated on the q/k/v storage type and the vector
// width; style, cos/sin dtype, position dtype, mrope sections and the cache format are uniform
// runtime flags (a branch per column, not per element).
#pragma once
// `#pragma unroll` marks loops over register arrays (they must unroll so the arrays stay in
// registers); the host compiler ignores it.
#include "device/prelude.h"
#include "device/grid_dependency.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "device/numeric/clean_multiplier.h"
#include "device/numeric/convert.h"
#include "device/numeric/exact_round.h"
#include "device/numeric/storage.h"
#include "device/loaded.h"
#include "device/math.h"
#include "device/probe.h"
#include "device/ptx/cp_async.h"
#include "device/ptx/ld_st.h"
#include "device/smem.h"
#include "device/ptx/mov.h"
#include "ops/rope/config.h"
#include "ops/rope/kernel_params.h"

namespace tejas::rotary {
inline namespace TEJAS_BUILD_NS {  // nvcc and emulator builds apart (device/prelude.h)

using num::Bf16;  // storage types (device/numeric/storage.h)
using num::F16;
using num::F32;
using dev::Loaded;  // a register loaded under a uniform condition (device/loaded.h)

namespace impl {

inline constexpr float kTwoTo64 = 18446744073709551616.0f;     // 2^64
inline constexpr float kTwoToMinus64 = 5.42101086242752217e-20f;  // 2^-64

// N contiguous elements through accesses of min(N * sizeof(E), 16) bytes; kNc: through the
// read-only path (inputs nobody writes during the launch). The helpers below take their caller's
// site (TEJAS_CALLER_PARAM, device/prelude.h) and pass it on: under emulation every call of a
// helper is its own request site, as every inlined call is its own instruction on the GPU.
template <int N, bool kNc = false, class E>
__device__ __forceinline__ void load_vec(const E* p, E* out TEJAS_CALLER_PARAM) {
  constexpr int kBytes = N * static_cast<int>(sizeof(E));
  constexpr int kStep = kBytes < kMaxAccessBytes ? kBytes : kMaxAccessBytes;
  using W = typename num::AccessWord<kStep>::type;
  #pragma unroll
  for (int i = 0; i < kBytes / kStep; ++i) {
    const W* at = reinterpret_cast<const W*>(p) + i;
    const W w = kNc ? ptx::ld_global_nc(at TEJAS_NESTED_SITE) : ptx::ld_global(at TEJAS_NESTED_SITE);
    memcpy(reinterpret_cast<char*>(out) + i * kStep, &w, kStep);
  }
}
template <int N, class E>
__device__ __forceinline__ void store_vec(E* p, const E* in TEJAS_CALLER_PARAM) {
  constexpr int kBytes = N * static_cast<int>(sizeof(E));
  constexpr int kStep = kBytes < kMaxAccessBytes ? kBytes : kMaxAccessBytes;
  using W = typename num::AccessWord<kStep>::type;
  #pragma unroll
  for (int i = 0; i < kBytes / kStep; ++i) {
    W w;
    memcpy(&w, reinterpret_cast<const char*>(in) + i * kStep, kStep);
    ptx::st_global(reinterpret_cast<W*>(p) + i, w TEJAS_NESTED_SITE);
  }
}

__device__ __forceinline__ int64_t load_position(const RopeParams& p, int row, int64_t t TEJAS_CALLER_PARAM) {
  const int64_t at = row * p.pos_row + t * p.pos_tok;
  if (p.pos_i64) return ptx::ld_global_nc(static_cast<const int64_t*>(p.positions) + at TEJAS_NESTED_SITE);
  return ptx::ld_global_nc(static_cast<const int32_t*>(p.positions) + at TEJAS_NESTED_SITE);
}

// cos and sin of pairs [i0, i0 + VEC) at position pos.
template <class S, int VEC>
__device__ __forceinline__ void load_cos_sin(const RopeParams& p, int64_t pos, int64_t i0, float (&c)[VEC],
                                             float (&s)[VEC] TEJAS_CALLER_PARAM) {
  const int64_t at = pos * p.cs_row + i0;
  if (p.cos_f32) {
    const float* row = static_cast<const float*>(p.cos_sin) + at;
    load_vec<VEC, true>(row, c TEJAS_NESTED_SITE);
    load_vec<VEC, true>(row + p.half, s TEJAS_NESTED_SITE);
  } else {
    using Raw = typename S::Raw;
    const Raw* row = static_cast<const Raw*>(p.cos_sin) + at;
    Raw rc[VEC], rs[VEC];
    load_vec<VEC, true>(row, rc TEJAS_NESTED_SITE);
    load_vec<VEC, true>(row + p.half, rs TEJAS_NESTED_SITE);
    #pragma unroll
    for (int j = 0; j < VEC; ++j) {
      c[j] = S::to_f32(rc[j]);
      s[j] = S::to_f32(rs[j]);
    }
  }
}

// Start of the cache row for `slot` (>= 0) and kv head h, in elements. NOTES: `slot / block_size`
// with 64-bit operands was a ~20-instruction fast path beside a call to the 64-bit division
// routine, at every cache store; dev::FastDiv makes it one high multiply and a shift.
__device__ __forceinline__ int64_t cache_offset(int64_t slot, const dev::FastDiv& block, int64_t blk_stride,
                                                int64_t slot_stride, int64_t head_stride, int64_t h) {
  const int64_t blk = static_cast<int64_t>(dev::fast_div(static_cast<uint64_t>(slot), block));
  return blk * blk_stride + (slot - blk * static_cast<int64_t>(block.d)) * slot_stride + h * head_stride;
}

// This thread's token in its block and its index in the token's group of col_threads x
// head_lanes threads (p.group_div). NOTES: `threadIdx.x % group` and `/ group` as signed 32-bit
// operations were ~35 SASS instructions at every thread's start.
__device__ __forceinline__ void group_position(const RopeParams& p, int& token, int& local) {
  const uint32_t tid = threadIdx.x, q = dev::fast_div(tid, p.group_div);
  token = static_cast<int>(q);
  local = static_cast<int>(tid - q * p.group_div.d);
}

// A group thread's head lane and first column (local / col_threads and the remainder) by
// p.lane_div. NOTES: as `/` and `%` (32-bit) the division came before the thread's first loads
// (the head prefetch and staging use both): ~15 dependent SASS instructions, an MUFU.RCP among
// them, at the head of every thread's DRAM trip (sm_90a).
__device__ __forceinline__ void lane_position(const RopeParams& p, int local, int& lane, int& col) {
  const uint32_t q = dev::fast_div(static_cast<uint32_t>(local), p.lane_div);
  lane = static_cast<int>(q);
  col = local - static_cast<int>(q * p.lane_div.d);
}

// Vector `it` (< Hk x D / VEC) of a token's k or v row: its head and its first element, by
// p.col_div (a 32-bit high multiply) below 2^31, else (a row of 2^31 vectors or more: 16-bit
// heads of D = 2^24 - 1 across 129 kv heads reach it) by a 64-bit division.
template <int VEC>
__device__ __forceinline__ void row_vector(const RopeParams& p, int64_t it, int64_t& h, int64_t& d0) {
  if (it < (int64_t{1} << 31)) {
    const uint32_t i = static_cast<uint32_t>(it), hh = dev::fast_div(i, p.col_div);
    h = hh;
    d0 = static_cast<int64_t>(i - hh * p.col_div.d) * VEC;
  } else {
    const int64_t cols = p.col_div.d;
    h = it / cols;
    d0 = (it - h * cols) * VEC;
  }
}

// x / sc for one fp8 cache's scale sc, as cache_codes uses it: t = (x * a) * b with a * b ~ 1 / sc:
// a ~ 1 / sc within 2 ulps (dev::fdividef, CUDA's bound for a divisor in [2^-126, 2^126]) and
// b = 1 for sc in [2^-125, 2^125], so a stays a normal number; else (a uniform branch) b = 2^-64
// (sc above) or 2^64 (sc below) and a = 1 / (sc * b) correctly rounded. t then lies within 5 f32
// ulps of x / sc (a's 2^-22 relative error is up to 4 ulps of t at the bottom of its binade, plus
// the product's rounding), inside the 8 ulps of slack near_key and near_midpoint allow (or t is far
// below every code midpoint, or saturates). num::round_quotient resolves t near a code midpoint
// from the exact residual x * rs - m * sc_r with sc_r = sc * rs: rs = 2^64 below sc = 2^-64 (both
// products exact), since the residual could otherwise fall below the f32 subnormals and read as a
// tie (exact_round.h); else rs = 1.
// exact: t = x * a is x / sc's code's answer as it stands (the quotients converted in pairs, no
// midpoint test), b = 1:
// - sc a power of two in [2^-125, 2^125] (1.0, the usual scale of an uncalibrated cache, among
//   them): a = 2^-k exactly, t = x / sc exactly (short of f32's subnormal range, where t is far
//   below every code midpoint, and of overflow, where both saturate), so the conversion's own
//   round-to-nearest-even is the answer, ties included;
// - a clean multiplier for sc (clean_scales; device/numeric/clean_multiplier.h): RN(x * a)'s
//   code is sat_rne(x / sc) for every 16-bit x, checked by the block at its start.
// Powers of two outside that range take the filtered path (b != 1).
struct Fp8Divisor {
  float a, b, rs, sc_r;
  bool exact;
};

// From the scale as loaded once per column or thread (load_scale), per stored vector without a
// clean multiplier; through ptx::mov_opaque, so the compiler keeps the wait for the scale here and
// not at its load.
// NOTES: v4 formed a as 1.0f / sc, an IEEE division (MUFU.RCP, two fixes, a range test and a
// call to the slow path) per stored vector, with its extreme-scale branch: ~45 SASS instructions
// of kv_write_kernel's ~180 per vector (sm_90a).
__device__ __forceinline__ Fp8Divisor fp8_divisor(float loaded) {
  constexpr float kTwoToMinus125 = 0x1p-125f, kTwoTo125 = 0x1p125f;
  const float sc = ptx::mov_opaque(loaded);
  const uint32_t bits = num::f32_bits(sc);
  Fp8Divisor d{0.0f, 1.0f, 1.0f, sc, false};
  if (sc >= kTwoToMinus125 && sc <= kTwoTo125) {  // uniform
    // 2^-k for sc = 2^k exactly (its exponent negated); else the fast reciprocal.
    d.exact = (bits & 0x807FFFFFu) == 0;
    d.a = d.exact ? num::bits_f32(0x7F000000u - bits) : dev::fdividef(1.0f, sc);
  } else {
    d.b = sc > 1.0f ? kTwoToMinus64 : kTwoTo64;
    d.a = 1.0f / num::keep_order(sc * d.b);  // keep_order: host compilers (exact_round.h)
  }
  if (sc < kTwoToMinus64) {
    d.rs = kTwoTo64;
    d.sc_r = sc * kTwoTo64;
  }
  return d;
}

// fp8 codes of N values: sat_rne(x / sc) exactly (tejas/rope.h: as float64 division would round
// it), with d = fp8_divisor(sc) or the block's clean multiplier. An exact divisor (a power-of-two
// scale, or a clean multiplier: clean_scales): the products x * a converted in pairs (one cvt per
// two), nothing else. Otherwise, kFiltered (kv_write_kernel): each
// t is tested with num::near_key (an add and a shifted multiply-add on the FMA pipe, a running
// minimum; it passes every t near_midpoint does); only a vector with a t near a midpoint runs
// round_quotient on every value (a uniform-ish branch: ~17 in 2^19 e4m3 values pass on data with
// full f32 quotients), the others convert in pairs; also rope_pipe_kernel's v stores. !kFiltered
// (the fused kernels' other stores): round_quotient on every value (v3's form).
// NOTES: v3's form is ~14 SASS instructions per value, 9 on the ALU pipe (near_midpoint's ~7
// integer instructions, a branch around each nudge, one cvt per value). The filtered form's
// quotients, live through the test, took the fused two-head kernel from 96 to 114 registers
// (sm_90a), so those keep v3's (rope_pipe_kernel's k stores filtered: 96 -> 101). Tried in v5: the pairs converted before the test and only the
// flagged values corrected in a second pass (quotients recomputed there): sm_80's 16-byte
// kv_write_kernel spilled 8-12 bytes under its 64-register bound. Before the 2^64 residual scale,
// scales near 2^-127 (e.g. f32 bits 0x003C3C3C) wrote the code below the exact quotient's for a
// few values just above a midpoint.
template <num::CodeFormat F, class S, int N, bool kFiltered>
__device__ __forceinline__ void cache_codes(const typename S::Raw* vals, const Fp8Divisor& d, uint8_t (&codes)[N]) {
  const auto quotient = [&](int j) { return (S::to_f32(vals[j]) * d.a) * d.b; };
  // The quotients' codes in pairs (one cvt per two), the pairs as 16-bit words copied whole (as
  // bytes, nvcc split and re-packed each pair).
  const auto convert = [&](const auto& t) {
    if constexpr (N % 2 == 1) codes[N - 1] = num::CodeTraits<F>::encode(t(N - 1));
    if constexpr (N >= 2) {
      uint16_t pairs[N / 2];
      #pragma unroll
      for (int j = 0; j < N / 2; ++j)
        pairs[j] = F == num::CodeFormat::e4m3 ? num::f32x2_to_e4m3x2(t(2 * j), t(2 * j + 1))
                                              : num::f32x2_to_e5m2x2(t(2 * j), t(2 * j + 1));
      memcpy(codes, pairs, sizeof(pairs));
    }
  };
  if (d.exact) {  // uniform: t = x * a's conversion is the answer (b = 1)
    convert([&](int j) { return S::to_f32(vals[j]) * d.a; });
    return;
  }
  if constexpr (!kFiltered) {
    // NOTES: with the exact test per value (a select between the two forms) nvcc branched on it
    // at every value: a convergence barrier and two branches each, and rope_kv_cache_write's fp8
    // rows ran 5 % slower on the H200 than with v3's loop alone.
    #pragma unroll
    for (int j = 0; j < N; ++j)
      codes[j] = num::round_quotient<F>(S::to_f32(vals[j]) * d.rs, quotient(j), 1.0f, d.sc_r);
  } else {
    float t[N];
    uint32_t key = ~0u;
    #pragma unroll
    for (int j = 0; j < N; ++j) {
      t[j] = quotient(j);
      const uint32_t k = num::near_key<F>(t[j]);
      key = k < key ? k : key;
    }
    if (key <= num::kNearKeyMax<F>) {
      #pragma unroll
      for (int j = 0; j < N; ++j) codes[j] = num::round_quotient<F>(S::to_f32(vals[j]) * d.rs, t[j], 1.0f, d.sc_r);
    } else {
      convert([&](int j) { return t[j]; });
    }
  }
}

// Writes N stored values into a cache row: the bits for a cache in q's dtype, fp8 codes of
// value / scale otherwise (cache_codes; `scale` as loaded, unused for a cache in q's dtype).
// clean: the block's clean multiplier for this cache's scale (clean_scales), or 0.
template <class S, int N, bool kFiltered = false>
__device__ __forceinline__ void store_cache(const RopeParams& p, void* cache, int64_t at, const Loaded<float>& scale,
                                            float clean, const typename S::Raw* vals TEJAS_CALLER_PARAM) {
  if (p.kv_kind == KvKind::same) {
    store_vec<N>(static_cast<typename S::Raw*>(cache) + at, vals TEJAS_NESTED_SITE);
    return;
  }
  uint8_t codes[N];
  const Fp8Divisor d = clean != 0.0f ? Fp8Divisor{clean, 1.0f, 1.0f, 1.0f, true} : fp8_divisor(scale.get());  // uniform
  if (clean != 0.0f) dev::count_event("clean_scales: vectors stored with a clean multiplier");  // emulator only
  if (p.kv_kind == KvKind::e4m3) cache_codes<num::CodeFormat::e4m3, S, N, kFiltered>(vals, d, codes);
  else cache_codes<num::CodeFormat::e5m2, S, N, kFiltered>(vals, d, codes);
  store_vec<N>(static_cast<uint8_t*>(cache) + at, codes TEJAS_NESTED_SITE);
}

__device__ __forceinline__ bool fp8_cache(const RopeParams& p) {
  return p.kv_kind == KvKind::e4m3 || p.kv_kind == KvKind::e5m2;
}

// The block's clean multipliers for the fp8 caches' k and v scales (device/numeric/
// clean_multiplier.h): for each, a c whose RN(x c) converts to sat_rne(x / scale) for every
// 16-bit x, so the stores need no per-value midpoint test (Fp8Divisor's exact path), or 0 (none
// clean, a scale outside the checked range, or RopeParams::clean_scales off: the per-value test).
// Every thread of the block calls it before any leaves. The kCleanItems<F> tests of each scale
// (one per code midpoint, three candidates each) are shared out over the block's threads; then
// one __syncthreads_or says whether the first candidate is clean for both scales (usual for a
// calibrated scale), and only if not, one per candidate and scale says which are (7 barriers in
// all; the bench's scale 0.05, whose 1 / sc = 20 makes exact ties of 20 x, takes them).
// When: RopeParams::clean_scales, planned (plan.cpp) for the kernels that call this
// (kv_write_kernel, kv_pipe_kernel, rope_pipe_kernel with caches) in blocks of >= kCleanMinThreads
// threads: at most 2 tests per thread and scale, about 100 instructions, which run while the
// block's first loads are out (they are issued first; the scale, the same word for every block,
// comes from L2), so the check should end before the data arrives. The persistent kernels pay
// for it once per block for all their tokens. rope_kernel does not call it: there the check
// would sit between the staged head loads and the position load, adding its time (the scale's
// L2 trip and the tests) to the chain of trips each thread waits through.
struct CleanScales {
  float k = 0.0f, v = 0.0f;
};
// The dev::count_event name of a block's verdict for k's or v's scale: the candidate taken
// (num::clean_candidates' order), or none (also for a scale outside the checked range).
__device__ __forceinline__ const char* clean_event(bool v, int candidate) {
  switch (candidate) {
    case 0: return v ? "clean_scales v: candidate 0" : "clean_scales k: candidate 0";
    case 1: return v ? "clean_scales v: candidate 1" : "clean_scales k: candidate 1";
    case 2: return v ? "clean_scales v: candidate 2" : "clean_scales k: candidate 2";
    default: return v ? "clean_scales v: none" : "clean_scales k: none";
  }
}
template <num::CodeFormat F, class S>
__device__ __forceinline__ CleanScales find_clean_scales(float ks, float vs) {
  constexpr int kItems = num::kCleanItems<F>;
  constexpr int kCands = num::kCleanCandidates;
  const bool k_in = num::clean_scale_range(ks), v_in = num::clean_scale_range(vs);
  const num::CleanCandidates ck = num::clean_candidates(ks, dev::fdividef(1.0f, ks));
  const num::CleanCandidates cv = num::clean_candidates(vs, dev::fdividef(1.0f, vs));
  uint32_t misses = 0;  // k's candidates in bits 0 .. kCands - 1, v's above
  for (int i = static_cast<int>(threadIdx.x); i < 2 * kItems; i += static_cast<int>(blockDim.x)) {
    if (i < kItems) {
      if (k_in) misses |= num::clean_misses<F, S>(ks, i, ck);
    } else if (v_in) {
      misses |= num::clean_misses<F, S>(vs, i - kItems, cv) << kCands;
    }
  }
  uint32_t any = 0;
  if (__syncthreads_or(static_cast<int>(misses & (1u | 1u << kCands))) != 0) {
    #pragma unroll 1
    for (int j = 0; j < 2 * kCands; ++j) any |= static_cast<uint32_t>(__syncthreads_or(static_cast<int>(misses >> j & 1u)) != 0) << j;
  }
  const int jk = k_in ? num::first_clean_index(any) : kCands;
  const int jv = v_in ? num::first_clean_index(any >> kCands) : kCands;
  if (threadIdx.x == 0) {  // the block's verdicts, for the emulator's report (tests check them)
    dev::count_event(clean_event(false, jk));
    dev::count_event(clean_event(true, jv));
  }
  return {num::clean_candidate(ck, jk), num::clean_candidate(cv, jv)};
}
// k_scale, v_scale: as load_scale loaded them (every thread's, tail threads' too).
template <class S>
__device__ __forceinline__ CleanScales clean_scales(const RopeParams& p, const Loaded<float>& k_scale,
                                                    const Loaded<float>& v_scale) {
  if constexpr (sizeof(typename S::Raw) != 2) {
    return {};  // f32 x: too many significant bits for one test per midpoint
  } else {
    if (!p.clean_scales) return {};  // uniform
    const float ks = k_scale.get(), vs = v_scale.get();
    return p.kv_kind == KvKind::e4m3 ? find_clean_scales<num::CodeFormat::e4m3, S>(ks, vs)
                                     : find_clean_scales<num::CodeFormat::e5m2, S>(ks, vs);
  }
}

// The token's slot as loaded (with caches), issued first and judged by slot_at where it is used.
__device__ __forceinline__ void load_slot(const RopeParams& p, int64_t t, Loaded<int64_t>& loaded TEJAS_CALLER_PARAM) {
  if (p.kv_kind != KvKind::none) loaded.set(ptx::ld_global_nc(p.slots + t TEJAS_NESTED_SITE));
}

// An fp8 cache's scale as loaded (fp8 caches), issued with the loads it can travel with (the
// position's, v's first) and used by fp8_divisor.
__device__ __forceinline__ void load_scale(const RopeParams& p, const float* scale, Loaded<float>& loaded TEJAS_CALLER_PARAM) {
  if (fp8_cache(p)) loaded.set(ptx::ld_global_nc(scale TEJAS_NESTED_SITE));
}

// The slot to write, or -1: negative, or beyond the cache (skipped, see RopeParams).
// NOTES: through ptx::mov_opaque, so the compare and cache_offset's division stay at the use.
// Judged right after its load (as before), the slot held every thread of rope_kv_cache_write for
// a DRAM round trip before it issued its head and position loads (SASS, sm_90a): three trips
// per thread (slot; head and position; cos/sin) instead of two.
__device__ __forceinline__ int64_t slot_at(const RopeParams& p, const Loaded<int64_t>& loaded) {
  if (p.kv_kind == KvKind::none) return -1;
  const int64_t slot = ptx::mov_opaque(loaded.get());
  return slot < p.num_slots ? slot : -1;
}

// Whether thread `local` of a token's group copies a v vector (its first: vector `local`).
template <int VEC>
__device__ __forceinline__ bool copies_v(const RopeParams& p, int local) {
  return local < p.Hk * (p.D / VEC);
}

// The mrope position row of the column whose first pair is i0 (rope: row 0); sections never
// straddle a column.
__device__ __forceinline__ int position_row(const RopeParams& p, int64_t i0) {
  return (i0 >= p.sec_end0) + (i0 >= p.sec_end1);
}

// Rotation pairs per column: neox takes VEC from each half; gptj's VEC contiguous elements
// hold VEC / 2 interleaved pairs (a one-element path loads a pair as two scalars).
template <int VEC, bool kNeox>
inline constexpr int kPairsPerColumn = kNeox ? VEC : (VEC >= 2 ? VEC / 2 : 1);

// Head h of token t: q's heads, then k's.
template <class Raw>
__device__ __forceinline__ Raw* head_row(const RopeParams& p, int64_t t, int h) {
  return h >= p.Hq ? static_cast<Raw*>(p.k) + t * p.k_tok + (h - p.Hq) * p.k_head
                   : static_cast<Raw*>(p.q) + t * p.q_tok + h * p.q_head;
}

// Element offset of access a (of kLoad elements) of the column whose pairs start at i0, in a
// head row: neox A = [i0, i0 + P), B = [half + i0, ...); gptj: the 2P elements from 2 * i0.
template <bool kNeox, int kLoad>
__device__ __forceinline__ int64_t access_offset(const RopeParams& p, int64_t i0, int a) {
  return kNeox ? a * p.half + i0 : 2 * i0 + a * kLoad;
}

// f(i, a, address) for access a of column `col` in head i of the thread's first step (h = lane +
// i * head_lanes, i < kHeads): what prefetch_heads and stage_heads fetch before the position is
// loaded. `t` comes through ptx::mov_opaque, so these addresses are computed apart from the head
// loop's (shared, they would stay live in registers from here to the head loop).
template <class S, int VEC, bool kNeox, int kHeads, class F>
__device__ __forceinline__ void each_first_step_access(const RopeParams& p, int64_t t, int col, int lane, F&& f) {
  using Raw = typename S::Raw;
  constexpr int P = kPairsPerColumn<VEC, kNeox>;
  constexpr int kLoad = kNeox || VEC >= 2 ? VEC : 1;
  constexpr int kAccesses = 2 * P / kLoad;
  const int64_t i0 = static_cast<int64_t>(col) * P;
  const int heads = static_cast<int>(p.Hq + p.Hk);
  #pragma unroll
  for (int i = 0; i < kHeads; ++i) {
    const int h = lane + i * p.head_lanes;
    if (h >= heads) break;
    const Raw* x = head_row<Raw>(p, t, h);
    #pragma unroll
    for (int a = 0; a < kAccesses; ++a) f(i, a, x + access_offset<kNeox, kLoad>(p, i0, a));
  }
}

// The first step's q/k vectors into L2: the head loads that follow the position's wait find them
// there.
template <class S, int VEC, bool kNeox, int kHeads>
__device__ __forceinline__ void prefetch_heads(const RopeParams& p, int64_t t, int col, int lane) {
  each_first_step_access<S, VEC, kNeox, kHeads>(p, t, col, lane,
                                                [](int, int, const typename S::Raw* x) { ptx::prefetch_l2(x); });
}

// The rope.head_stage variant: this thread's slot for access a of head i of its first step, in
// the block's shared memory laid out [head i][access a][thread] (consecutive threads' same
// access contiguous: conflict-free 16-byte accesses).
template <int kAccesses, int kBytes>
__device__ __forceinline__ unsigned char* head_slot(int i, int a) {
  unsigned char* base = dev::dynamic_smem<unsigned char>();
  return base + ((static_cast<int64_t>(i) * kAccesses + a) * blockDim.x + threadIdx.x) * kBytes;
}

// Head slot `slot_head`'s kAccesses 16-byte accesses (head_slot's layout) into e, as stage_heads
// copied them.
template <int kAccesses, class Raw>
__device__ __forceinline__ void read_head_slots(int slot_head, Raw* e TEJAS_CALLER_PARAM) {
  using W = typename num::AccessWord<kMaxAccessBytes>::type;
  constexpr int kLoad = kMaxAccessBytes / static_cast<int>(sizeof(Raw));
  #pragma unroll
  for (int a = 0; a < kAccesses; ++a) {
    const W w = ptx::ld_shared(reinterpret_cast<const W*>(head_slot<kAccesses, kMaxAccessBytes>(slot_head, a)) TEJAS_NESTED_SITE);
    memcpy(e + a * kLoad, &w, kMaxAccessBytes);
  }
}

// The first step's q/k vectors copied into this thread's slots by cp.async, one commit group:
// their DRAM trip runs beside the position's and the cos/sin row's, and the registers wait for
// nothing until rotate_column reads the slots. 16-byte accesses only (the staging kernels').
// head0: the slots' first head index (rope_pipe_kernel's second stage: kHeads).
template <class S, int VEC, bool kNeox, int kHeads>
__device__ __forceinline__ void stage_heads(const RopeParams& p, int64_t t, int col, int lane, int head0 = 0) {
  using Raw = typename S::Raw;
  constexpr int kLoad = kNeox || VEC >= 2 ? VEC : 1;
  constexpr int kBytes = kLoad * static_cast<int>(sizeof(Raw));
  if constexpr (kBytes == kMaxAccessBytes) {
    constexpr int kAccesses = 2 * kPairsPerColumn<VEC, kNeox> / kLoad;
    each_first_step_access<S, VEC, kNeox, kHeads>(p, t, col, lane, [head0](int i, int a, const Raw* x) {
      ptx::cp_async_16(head_slot<kAccesses, kBytes>(head0 + i, a), x);
    });
    ptx::cp_async_commit();
  }
}

// Head h of token t, its column's 2P elements e as loaded (pairs as in rotate_column): rotated by
// (c, s) when `rotate`, stored back, and for a k head of a token with a slot (kCache) sent to the
// cache (k_scale: an fp8 cache's scale as loaded; k_clean: the block's clean multiplier or 0).
// slot_of(): the token's slot as slot_at judges it, asked only for a k head with caches: the
// staged kernels judge it there (slot_at's late use); kv_rope_column passes the one it judged for
// v's rows, so that the cache row is derived once (one FastDiv, not two).
template <class S, int VEC, bool kNeox, bool kCache = true, class SlotOf>
__device__ __forceinline__ void finish_head(const RopeParams& p, int64_t t, int h, int64_t i0, typename S::Raw* e,
                                            bool rotate, const float* c, const float* s, SlotOf&& slot_of,
                                            const Loaded<float>& k_scale, float k_clean TEJAS_CALLER_PARAM) {
  using Raw = typename S::Raw;
  constexpr int P = kPairsPerColumn<VEC, kNeox>;
  constexpr int kLoad = kNeox || VEC >= 2 ? VEC : 1;
  constexpr int kAccesses = 2 * P / kLoad;
  Raw* x = head_row<Raw>(p, t, h);
  #pragma unroll
  for (int j = 0; j < P && rotate; ++j) {
    const int ia = kNeox ? j : 2 * j, ib = kNeox ? P + j : 2 * j + 1;
    const float xa = S::to_f32(e[ia]), xb = S::to_f32(e[ib]);
    e[ia] = S::from_f32(fmaf(xa, c[j], -(xb * s[j])));
    e[ib] = S::from_f32(fmaf(xb, c[j], xa * s[j]));
  }
  #pragma unroll
  for (int a = 0; a < kAccesses; ++a)
    store_vec<kLoad>(x + access_offset<kNeox, kLoad>(p, i0, a), e + a * kLoad TEJAS_NESTED_SITE);
  if (!kCache || h < p.Hq) return;
  const int64_t slot = slot_of();
  if (slot < 0) return;
  const int64_t at = cache_offset(slot, p.block_div, p.kc_block, p.kc_slot, p.kc_head, h - p.Hq);
  #pragma unroll
  for (int a = 0; a < kAccesses; ++a)
    store_cache<S, kLoad>(p, p.k_cache, at + access_offset<kNeox, kLoad>(p, i0, a), k_scale, k_clean,
                          e + a * kLoad TEJAS_NESTED_SITE);
}

// Rotation column `col` of every q and k head this thread walks; k rows also go to the cache
// when the token has a slot. kHeads: heads whose loads a thread issues together before it waits
// (lanes walk h = lane, lane + head_lanes, ... kHeads at a time): kHeads x 2P elements in flight
// per thread after the position and cos/sin trips.
// staged: the first step's heads are in this thread's slots (stage_heads), not to be loaded.
template <class S, int VEC, bool kNeox, int kHeads>
__device__ __forceinline__ void rotate_column(const RopeParams& p, int64_t t, int col, int lane,
                                              const Loaded<int64_t>& slot_loaded, bool staged TEJAS_CALLER_PARAM) {
  using Raw = typename S::Raw;
  constexpr int P = kPairsPerColumn<VEC, kNeox>;
  constexpr int kLoad = kNeox || VEC >= 2 ? VEC : 1;  // elements per access
  constexpr int kAccesses = 2 * P / kLoad;
  const int64_t i0 = static_cast<int64_t>(col) * P;
  const int heads = static_cast<int>(p.Hq + p.Hk);
  const int64_t pos = load_position(p, position_row(p, i0), t TEJAS_NESTED_SITE);
  Loaded<float> k_scale;  // arrives with the position
  load_scale(p, p.k_scale, k_scale TEJAS_NESTED_SITE);
  const bool rotate = pos >= 0 && pos < p.max_pos;  // else left unrotated (see RopeParams)
  float c[P], s[P];
  if (rotate) load_cos_sin<S, P>(p, pos, i0, c, s TEJAS_NESTED_SITE);
  // Head i of a step: neox pair j = (e[i][j], e[i][P + j]); gptj: pair j = (e[i][2j], e[i][2j + 1]).
  Raw e[kHeads][2 * P];
  constexpr int kBytes = kLoad * static_cast<int>(sizeof(Raw));
  constexpr bool kStageable = kBytes == 16;
  for (int h0 = lane; h0 < heads; h0 += kHeads * p.head_lanes) {
    bool from_slots = false;
    if constexpr (kStageable) from_slots = staged && h0 == lane;
    if (from_slots) {  // the first step: from the slots stage_heads filled
      if constexpr (kStageable) {
        ptx::cp_async_wait<0>();
        #pragma unroll
        for (int i = 0; i < kHeads; ++i) {
          if (h0 + i * p.head_lanes >= heads) break;
          read_head_slots<kAccesses>(i, e[i] TEJAS_NESTED_SITE);
        }
      }
    } else {
      #pragma unroll
      for (int i = 0; i < kHeads; ++i) {
        const int h = h0 + i * p.head_lanes;
        if (h >= heads) break;
        const Raw* x = head_row<Raw>(p, t, h);
        #pragma unroll
        for (int a = 0; a < kAccesses; ++a)
          load_vec<kLoad>(x + access_offset<kNeox, kLoad>(p, i0, a), e[i] + a * kLoad TEJAS_NESTED_SITE);
      }
    }
    #pragma unroll
    for (int i = 0; i < kHeads; ++i) {
      const int h = h0 + i * p.head_lanes;
      if (h >= heads) break;
      finish_head<S, VEC, kNeox>(p, t, h, i0, e[i], rotate, c, s, [&] { return slot_at(p, slot_loaded); }, k_scale,
                                 0.0f TEJAS_NESTED_SITE);
    }
  }
}

// rope_pipe_kernel's rotation of column `col` of token t. One head step per thread (config.cpp's
// pipe_eligible): heads h = lane + i x head_lanes, i < kHeads, from the slots stage_heads filled
// (the stage's: slot heads head0 ...), one head at a time through the same registers: the loop
// does not unroll. Unlike rotate_column's loads, these are shared-memory reads with nothing to
// overlap, so one head's elements are live at a time, not kHeads heads'. NOTES: as
// rotate_column's staged first step (the heads read together, then finished), the two-head bf16
// kernel with caches took 112 registers on sm_90a (one 288-thread block per SM; the fp8 k stores
// of the second head beside the first's), 96 without caches; this loop takes 96 and 78.
// pos: the token's position, loaded one token ahead; kCache = false compiles the cache stores
// out (rope and mrope). One cp.async group (the next token's) may stay in flight.
template <class S, int VEC, bool kNeox, int kHeads, bool kCache>
__device__ __forceinline__ void rotate_staged(const RopeParams& p, int64_t t, int col, int lane,
                                              const Loaded<int64_t>& slot_loaded, int head0,
                                              int64_t pos, float k_clean TEJAS_CALLER_PARAM) {
  using Raw = typename S::Raw;
  constexpr int P = kPairsPerColumn<VEC, kNeox>;
  constexpr int kLoad = kNeox || VEC >= 2 ? VEC : 1;  // elements per access
  constexpr int kAccesses = 2 * P / kLoad;
  static_assert(kLoad * sizeof(Raw) == kMaxAccessBytes, "16-byte staged heads");
  const int64_t i0 = static_cast<int64_t>(col) * P;
  const int heads = static_cast<int>(p.Hq + p.Hk);
  Loaded<float> k_scale;
  if constexpr (kCache) load_scale(p, p.k_scale, k_scale TEJAS_NESTED_SITE);
  const bool rotate = pos >= 0 && pos < p.max_pos;  // else left unrotated (see RopeParams)
  float c[P], s[P];
  if (rotate) load_cos_sin<S, P>(p, pos, i0, c, s TEJAS_NESTED_SITE);
  ptx::cp_async_wait<1>();
  #pragma unroll 1
  for (int i = 0; i < kHeads; ++i) {
    const int h = lane + i * p.head_lanes;
    if (h >= heads) break;
    Raw e[2 * P];
    read_head_slots<kAccesses>(head0 + i, e TEJAS_NESTED_SITE);
    finish_head<S, VEC, kNeox, kCache>(p, t, h, i0, e, rotate, c, s, [&] { return slot_at(p, slot_loaded); }, k_scale,
                                       k_clean TEJAS_NESTED_SITE);
  }
}

// The first element of k's non-rotary tail column pc (rotary_dim + pc x VEC), in a head row.
template <int VEC>
__device__ __forceinline__ int64_t tail_offset(const RopeParams& p, int pc) {
  return 2 * p.half + static_cast<int64_t>(pc) * VEC;
}

// k's non-rotary tail, column `pc` (elements rotary_dim + pc * VEC ...), copied to the cache.
template <class S, int VEC>
__device__ __forceinline__ void copy_k_tail(const RopeParams& p, int64_t t, int pc, int lane,
                                            int64_t slot TEJAS_CALLER_PARAM) {
  using Raw = typename S::Raw;
  const int64_t d0 = tail_offset<VEC>(p, pc);
  Loaded<float> k_scale;
  load_scale(p, p.k_scale, k_scale TEJAS_NESTED_SITE);
  for (int64_t h = lane; h < p.Hk; h += p.head_lanes) {
    Raw r[VEC];
    // Plain load, not .nc: other threads write k's rotary dims during this launch.
    load_vec<VEC>(static_cast<const Raw*>(p.k) + t * p.k_tok + h * p.k_head + d0, r TEJAS_NESTED_SITE);
    const int64_t at = cache_offset(slot, p.block_div, p.kc_block, p.kc_slot, p.kc_head, h);
    store_cache<S, VEC>(p, p.k_cache, at + d0, k_scale, 0.0f, r TEJAS_NESTED_SITE);
  }
}

// The rope.v_stage variant (RopeParams::v_stage; the head-staging kernels): this thread's first v
// vector's slot, after the head slots (kHeads heads x 2 (neox) or 1 (gptj) accesses of 16 bytes
// per thread: config.cpp's head_stage_smem_bytes), and its copy there by cp.async, issued before
// stage_heads's commit so that it joins the heads' group (or committed alone by a thread that
// stages no heads). 16-byte vectors (kStage kernels only).
// kHeadSlots: the head slots before it (kHeads; rope_pipe_kernel's two stages: 2 x kHeads);
// stage: the pipelined kernel's stage (one v slot each).
template <int kHeadSlots>
__device__ __forceinline__ unsigned char* v_slot(const RopeParams& p, int stage = 0) {
  const int accesses = p.neox ? 2 : 1;  // the staged columns' accesses per head (16-byte loads)
  return dev::dynamic_smem<unsigned char>() +
         ((static_cast<int64_t>(kHeadSlots * accesses) + stage) * blockDim.x + threadIdx.x) * kMaxAccessBytes;
}
template <class S, int VEC, int kHeadSlots>
__device__ __forceinline__ void stage_v(const RopeParams& p, int64_t t, int local, int stage = 0) {
  static_assert(VEC * sizeof(typename S::Raw) == kMaxAccessBytes, "16-byte v vectors");
  int64_t h, d0;
  row_vector<VEC>(p, local, h, d0);
  ptx::cp_async_16(v_slot<kHeadSlots>(p, stage), static_cast<const typename S::Raw*>(p.v) + t * p.v_tok + h * p.v_head + d0);
}

// v rows of token t, copied to the cache by the token's whole group (consecutive threads take
// consecutive vectors of a row). staged: the thread's first vector is in its v slot (stage_v;
// kHeads: the head slots before the v slots, stage: which one; kPending: cp.async groups that
// may stay in flight, as in rotate_staged). kFiltered: fp8 codes as kv_write_kernel forms them
// (cache_codes; rope_pipe_kernel's, whose one-head-at-a-time rotation leaves the registers).
template <class S, int VEC, int kHeads = 0, int kPending = 0, bool kFiltered = false>
__device__ __forceinline__ void copy_v(const RopeParams& p, int64_t t, int local, int group, int64_t slot,
                                       float v_clean, bool staged = false, int stage = 0 TEJAS_CALLER_PARAM) {
  using Raw = typename S::Raw;
  const int64_t cols = p.D / VEC;
  Loaded<float> v_scale;  // arrives with the first v vector; threads past the v vectors copy none
  if (copies_v<VEC>(p, local)) load_scale(p, p.v_scale, v_scale TEJAS_NESTED_SITE);
  for (int64_t it = local; it < p.Hk * cols; it += group) {
    int64_t h, d0;
    row_vector<VEC>(p, it, h, d0);
    Raw r[VEC];
    bool from_slot = false;
    if constexpr (kHeads > 0) from_slot = staged && it == local;
    if (from_slot) {
      if constexpr (kHeads > 0) {
        using W = typename num::AccessWord<kMaxAccessBytes>::type;
        ptx::cp_async_wait<kPending>();
        const W w = ptx::ld_shared(reinterpret_cast<const W*>(v_slot<kHeads>(p, stage)) TEJAS_NESTED_SITE);
        memcpy(r, &w, sizeof w);
      }
    } else {
      load_vec<VEC, true>(static_cast<const Raw*>(p.v) + t * p.v_tok + h * p.v_head + d0, r TEJAS_NESTED_SITE);
    }
    const int64_t at = cache_offset(slot, p.block_div, p.vc_block, p.vc_slot, p.vc_head, h);
    store_cache<S, VEC, kFiltered>(p, p.v_cache, at + d0, v_scale, v_clean, r TEJAS_NESTED_SITE);
  }
}

// The k and v vectors of head h, columns d0 ..., of a token with cache slot `slot` (>= 0) into the
// caches: kv_write_kernel's one-vector-per-thread path and kv_pipe_kernel.
template <class S, int VEC>
__device__ __forceinline__ void store_kv_vectors(const RopeParams& p, int64_t slot, int64_t h, int64_t d0,
                                                 const Loaded<float>& k_scale, const Loaded<float>& v_scale,
                                                 const CleanScales& clean, const typename S::Raw* rk,
                                                 const typename S::Raw* rv) {
  store_cache<S, VEC, true>(p, p.k_cache, cache_offset(slot, p.block_div, p.kc_block, p.kc_slot, p.kc_head, h) + d0,
                            k_scale, clean.k, rk);
  store_cache<S, VEC, true>(p, p.v_cache, cache_offset(slot, p.block_div, p.vc_block, p.vc_slot, p.vc_head, h) + d0,
                            v_scale, clean.v, rv);
}

// k and v vectors a kv_write_kernel thread loads before its first store.
inline constexpr int kKvBatch = 4;

// Vector `it` of a token's k row then v row (per_row = Hk x cols vectors each): which row, its
// head and its first element.
struct KvVector {
  bool is_v;
  int64_t h, d0;
};
template <int VEC>
__device__ __forceinline__ KvVector kv_vector(const RopeParams& p, int64_t it, int64_t per_row) {
  KvVector w;
  w.is_v = it >= per_row;
  row_vector<VEC>(p, w.is_v ? it - per_row : it, w.h, w.d0);
  return w;
}

// The persistent kernels' look-ahead (rope_pipe_kernel, kv_pipe_kernel, kv_rope_pipe_kernel):
// token `next`'s loads (`issue_next`: its cp.async group, then its register loads) when it is one
// of this thread's, else an empty cp.async group, so that the current token's group is always the
// older of two (their cp_async_wait<1>).
template <class F>
__device__ __forceinline__ void issue_ahead(const RopeParams& p, int64_t next, F&& issue_next) {
  if (next < p.T) issue_next();
  else ptx::cp_async_commit();
}

// kv_rope_kernel's loads of column `col` of kv head h of token t: a rotary column's 2P elements of
// k (access_offset's accesses), then v's at the same offsets; a tail column's VEC elements of each.
// k through plain loads, not .nc: the kernel writes k's rotary dims.
template <class S, int VEC, bool kNeox>
__device__ __forceinline__ void kv_rope_loads(const RopeParams& p, int64_t t, int col, int h, typename S::Raw* ek,
                                              typename S::Raw* ev TEJAS_CALLER_PARAM) {
  using Raw = typename S::Raw;
  constexpr int P = kPairsPerColumn<VEC, kNeox>;
  constexpr int kLoad = kNeox || VEC >= 2 ? VEC : 1;
  const Raw* k_row = static_cast<const Raw*>(p.k) + t * p.k_tok + h * p.k_head;
  const Raw* v_row = static_cast<const Raw*>(p.v) + t * p.v_tok + h * p.v_head;
  if (col >= p.rot_cols) {
    const int64_t d0 = tail_offset<VEC>(p, col - p.rot_cols);
    load_vec<VEC>(k_row + d0, ek TEJAS_NESTED_SITE);
    load_vec<VEC, true>(v_row + d0, ev TEJAS_NESTED_SITE);
    return;
  }
  const int64_t i0 = static_cast<int64_t>(col) * P;
  #pragma unroll
  for (int a = 0; a < 2 * P / kLoad; ++a) {
    load_vec<kLoad>(k_row + access_offset<kNeox, kLoad>(p, i0, a), ek + a * kLoad TEJAS_NESTED_SITE);
    load_vec<kLoad, true>(v_row + access_offset<kNeox, kLoad>(p, i0, a), ev + a * kLoad TEJAS_NESTED_SITE);
  }
}

// kv_rope_kernel's column `col` of kv head h of token t, its k and v elements in ek and ev
// (kv_rope_loads): a rotary column's k rotated by the position's cos/sin and stored back
// (finish_head, which also sends it to the k cache), a tail column's k to the k cache as it is,
// and v to the v cache, when the token has a slot.
template <class S, int VEC, bool kNeox>
__device__ __forceinline__ void kv_rope_column(const RopeParams& p, int64_t t, int col, int h, int64_t pos,
                                               const Loaded<int64_t>& slot_loaded, const Loaded<float>& k_scale,
                                               const Loaded<float>& v_scale, const CleanScales& clean,
                                               typename S::Raw* ek, typename S::Raw* ev TEJAS_CALLER_PARAM) {
  constexpr int P = kPairsPerColumn<VEC, kNeox>;
  constexpr int kLoad = kNeox || VEC >= 2 ? VEC : 1;
  if (col >= p.rot_cols) {  // a tail column
    const int64_t slot = slot_at(p, slot_loaded);
    if (slot < 0) return;
    const int64_t d0 = tail_offset<VEC>(p, col - p.rot_cols);
    store_cache<S, VEC>(p, p.k_cache, cache_offset(slot, p.block_div, p.kc_block, p.kc_slot, p.kc_head, h) + d0,
                        k_scale, clean.k, ek TEJAS_NESTED_SITE);
    store_cache<S, VEC, true>(p, p.v_cache, cache_offset(slot, p.block_div, p.vc_block, p.vc_slot, p.vc_head, h) + d0,
                              v_scale, clean.v, ev TEJAS_NESTED_SITE);
    return;
  }
  const int64_t i0 = static_cast<int64_t>(col) * P;
  const bool rotate = pos >= 0 && pos < p.max_pos;  // else left unrotated (see RopeParams)
  float c[P], s[P];
  if (rotate) load_cos_sin<S, P>(p, pos, i0, c, s TEJAS_NESTED_SITE);
  // v first, while the cos/sin row is on its way: its registers are free before k's rotation.
  const int64_t slot = slot_at(p, slot_loaded);
  if (slot >= 0) {
    const int64_t at = cache_offset(slot, p.block_div, p.vc_block, p.vc_slot, p.vc_head, h);
    #pragma unroll
    for (int a = 0; a < 2 * P / kLoad; ++a)
      store_cache<S, kLoad, true>(p, p.v_cache, at + access_offset<kNeox, kLoad>(p, i0, a), v_scale, clean.v,
                                  ev + a * kLoad TEJAS_NESTED_SITE);
  }
  finish_head<S, VEC, kNeox>(p, t, static_cast<int>(p.Hq) + h, i0, ek, rotate, c, s, [slot] { return slot; }, k_scale,
                             clean.k TEJAS_NESTED_SITE);
}

// kv_rope_kernel for one style: a uniform branch on the style for the whole kernel, not per call
// (both styles' calls in one body took the 16-byte kernels from 90 to 102 registers, sm_90a).
template <class S, int VEC, bool kNeox>
__device__ __forceinline__ void kv_rope_body(const RopeParams& p) {
  using Raw = typename S::Raw;
  int token, local;
  group_position(p, token, local);
  const int64_t t = static_cast<int64_t>(blockIdx.x) * p.tokens_per_block + token;
  int lane, col0;
  lane_position(p, local, lane, col0);
  const int cols = p.rot_cols + p.pass_cols;
  // Tail threads (t >= T) run their share of clean_scales's tests, then leave.
  const bool live = t < p.T && col0 < cols && lane < p.Hk;
  Loaded<int64_t> slot_loaded;
  Loaded<float> k_scale, v_scale;  // every thread's: clean_scales's too
  int64_t pos = 0;
  // A column's k elements and v's (neox's 2 x VEC are the most).
  Raw ek[2 * VEC], ev[2 * VEC];
  if (live) {
    load_slot(p, t, slot_loaded);
    pos = load_position(p, 0, t);  // rope only (plan.cpp): one position row
    kv_rope_loads<S, VEC, kNeox>(p, t, col0, lane, ek, ev);
  }
  load_scale(p, p.k_scale, k_scale);
  load_scale(p, p.v_scale, v_scale);
  const CleanScales clean = clean_scales<S>(p, k_scale, v_scale);  // while the loads are out
  if (!live) return;  // no barriers below
  for (int col = col0; col < cols; col += p.col_threads) {
    for (int h = lane; h < p.Hk; h += p.head_lanes) {
      if (col != col0 || h != lane) kv_rope_loads<S, VEC, kNeox>(p, t, col, h, ek, ev);  // past the first column
      kv_rope_column<S, VEC, kNeox>(p, t, col, h, pos, slot_loaded, k_scale, v_scale, clean, ek, ev);
    }
  }
}

// The rope.kv_rope_pipe variant of kv_rope_kernel (config.cpp's kv_rope_pipe_eligible: 16-byte
// vectors, rotary == D, one column of one kv head per thread): a persistent grid whose token
// groups walk tokens t, t + step, ... (step = gridDim.x x tokens_per_block), as kv_pipe_kernel's
// and rope_pipe_kernel's do. While a thread stores token t's v and rotates its k from its slots
// (stage s), token t + step's k and v columns are on their way into the other stage's slots
// (cp.async, one commit group per token) and its position and slot into registers, so a token's
// exposed trip is its cos/sin row alone; kv_rope_kernel's threads wait for two trips in a row
// (k, v, slot and position; then cos/sin) and exit. Slots: [stage][k's accesses, then v's][thread]
// 16 bytes (head_slot's layout), read back only by the thread that copied them, ordered by the
// waits (no barrier); a stage is refilled (the token after next) only after this thread's
// ld.shared of it, in program order. Skipped tokens' rows are read too.
template <class S, int VEC, bool kNeox>
__device__ __forceinline__ void kv_rope_pipe_body(const RopeParams& p) {
  using Raw = typename S::Raw;
  static_assert(VEC * sizeof(Raw) == kMaxAccessBytes, "16-byte k and v columns");
  constexpr int kAccesses = 2 * kPairsPerColumn<VEC, kNeox> / VEC;  // per column: neox 2, gptj 1
  constexpr int kSlots = 2 * kAccesses;                              // k's, then v's
  int token, local;
  group_position(p, token, local);
  int h, col;
  lane_position(p, local, h, col);
  const int64_t step = static_cast<int64_t>(gridDim.x) * p.tokens_per_block;
  int64_t t = static_cast<int64_t>(blockIdx.x) * p.tokens_per_block + token;
  // (col < rot_cols and h < Hk hold by eligibility: defensive.) Threads that leave run their
  // share of clean_scales's tests first.
  const bool live = t < p.T && col < p.rot_cols && h < p.Hk;
  const int64_t i0 = static_cast<int64_t>(col) * kPairsPerColumn<VEC, kNeox>;
  const Raw* k_src = static_cast<const Raw*>(p.k) + h * p.k_head;
  const Raw* v_src = static_cast<const Raw*>(p.v) + h * p.v_head;
  const auto issue = [&](int64_t tok, int st) {
    const int64_t at = ptx::mov_opaque(tok);
    #pragma unroll
    for (int a = 0; a < kAccesses; ++a) {
      const int64_t off = access_offset<kNeox, VEC>(p, i0, a);
      ptx::cp_async_16(head_slot<kSlots, kMaxAccessBytes>(st, a), k_src + at * p.k_tok + off);
      ptx::cp_async_16(head_slot<kSlots, kMaxAccessBytes>(st, kAccesses + a), v_src + at * p.v_tok + off);
    }
    ptx::cp_async_commit();
  };
  Loaded<int64_t> slot;
  int64_t pos = 0;
  if (live) {
    issue(t, 0);
    pos = load_position(p, 0, t);  // rope only (plan.cpp): one position row
    load_slot(p, t, slot);
  }
  Loaded<float> k_scale, v_scale;  // every thread's: clean_scales's too
  load_scale(p, p.k_scale, k_scale);
  load_scale(p, p.v_scale, v_scale);
  const CleanScales clean = clean_scales<S>(p, k_scale, v_scale);  // once for all the block's tokens
  if (!live) return;  // no barriers below
  for (int s = 0; t < p.T; t += step, s ^= 1) {
    const int64_t next = t + step;
    int64_t pos_next = 0;
    Loaded<int64_t> slot_next;
    issue_ahead(p, next, [&] {
      issue(next, s ^ 1);
      pos_next = load_position(p, 0, next);
      load_slot(p, next, slot_next);
    });
    ptx::cp_async_wait<1>();
    Raw kv[kSlots * VEC];  // k's column, then v's
    read_head_slots<kSlots>(s, kv);
    kv_rope_column<S, VEC, kNeox>(p, t, col, h, pos, slot, k_scale, v_scale, clean, kv, kv + kAccesses * VEC);
    pos = pos_next;
    if (next < p.T) slot = slot_next;  // (unset past the last token: not read)
  }
  ptx::cp_async_wait<0>();  // the trailing empty group: nothing pending at exit
}

}  // namespace impl

// kv_cache_write with its loads first (TEJAS_TUNE rope.kv_loads_first=1, the default; same
// launch shape as rope_kernel's kv-only config). The token's k and v rows are 2 x Hk x D / VEC
// vectors; the group's threads take them in turn (thread `local`: vectors local, local + group,
// ...), up to kKvBatch at a time, and a thread issues all of a batch's loads, with the slot and
// the fp8 scales, before it waits for any: one DRAM round trip, then the stores. NOTES:
// rope_kernel's kv-only path (rope.kv_loads_first=0) waits for the slot before it loads k's
// columns (a skipped token reads neither k nor v), then stores k before loading v: three round
// trips in a row per thread, 24-54 % of the copy floor on the H200. Here a skipped token's rows
// are read too (their loads are out before the slot is known): T_skipped x 2 x Hk x D elements
// more than the compulsory bytes, nothing written.
// Launch bounds: two 512-thread blocks per SM, i.e. at most 64 registers (without, the f16
// 16-byte kernel took 71 on sm_90a, 3 blocks of 256 per SM instead of 4); 0 spills.
template <class S, int VEC>
__global__ void __launch_bounds__(kMaxGroupThreads, 2) kv_write_kernel(const RopeParams p) {
  dev::begin_dependent_grid();
  using Raw = typename S::Raw;
  const int group = static_cast<int>(p.group_div.d);
  int token, local;
  impl::group_position(p, token, local);
  const int64_t t = static_cast<int64_t>(blockIdx.x) * p.tokens_per_block + token;
  // Tail threads (t >= T) run their share of clean_scales's tests, then leave (a thread that left
  // first would not be waited for at its barriers, and its tests would silently not run).
  const bool live = t < p.T;
  Loaded<int64_t> slot_loaded;
  Loaded<float> k_scale, v_scale;  // every thread's: clean_scales's too
  if (live) impl::load_slot(p, t, slot_loaded);
  impl::load_scale(p, p.k_scale, k_scale);
  impl::load_scale(p, p.v_scale, v_scale);
  const int64_t cols = p.D / VEC;
  const int64_t per_row = p.Hk * cols;  // vectors of k's row (and of v's)
  if (group == per_row) {  // uniform; the usual config (Hk x D / VEC <= 512)
    // One k and one v vector per thread, of the same head and columns: their source and cache
    // offsets computed once. NOTES: through the general loop below (vector index -> row, head
    // and columns, per load and again per store) the 16-byte kernel spent ~35 SASS instructions
    // of 64-bit offset arithmetic per stored vector.
    int64_t h, d0;
    impl::row_vector<VEC>(p, local, h, d0);
    Raw rk[VEC], rv[VEC];
    if (live) {
      impl::load_vec<VEC, true>(static_cast<const Raw*>(p.k) + t * p.k_tok + h * p.k_head + d0, rk);
      impl::load_vec<VEC, true>(static_cast<const Raw*>(p.v) + t * p.v_tok + h * p.v_head + d0, rv);
    }
    const impl::CleanScales clean = impl::clean_scales<S>(p, k_scale, v_scale);  // while the loads are out
    if (!live) return;
    const int64_t slot = impl::slot_at(p, slot_loaded);
    if (slot >= 0) impl::store_kv_vectors<S, VEC>(p, slot, h, d0, k_scale, v_scale, clean, rk, rv);
    return;
  }
  const impl::CleanScales clean = impl::clean_scales<S>(p, k_scale, v_scale);
  if (!live) return;
  for (int64_t base = local; base < 2 * per_row; base += impl::kKvBatch * group) {
    Raw r[impl::kKvBatch][VEC];
    #pragma unroll
    for (int b = 0; b < impl::kKvBatch; ++b) {
      const int64_t it = base + b * group;
      if (it >= 2 * per_row) break;
      const impl::KvVector w = impl::kv_vector<VEC>(p, it, per_row);
      const Raw* src = w.is_v ? static_cast<const Raw*>(p.v) + t * p.v_tok + w.h * p.v_head
                              : static_cast<const Raw*>(p.k) + t * p.k_tok + w.h * p.k_head;
      impl::load_vec<VEC, true>(src + w.d0, r[b]);
    }
    const int64_t slot = impl::slot_at(p, slot_loaded);
    if (slot < 0) return;
    const int64_t blk = static_cast<int64_t>(dev::fast_div(static_cast<uint64_t>(slot), p.block_div));
    const int64_t in_blk = slot - blk * static_cast<int64_t>(p.block_div.d);
    #pragma unroll
    for (int b = 0; b < impl::kKvBatch; ++b) {
      const int64_t it = base + b * group;
      if (it >= 2 * per_row) break;
      const impl::KvVector w = impl::kv_vector<VEC>(p, it, per_row);
      // NOTES: the fp8 divisors derived once per thread instead of per stored vector took the
      // 16-byte kernels from 64 to 69 registers (sm_90a): 3 blocks of 256 per SM instead of 4.
      if (w.is_v)
        impl::store_cache<S, VEC, true>(p, p.v_cache, blk * p.vc_block + in_blk * p.vc_slot + w.h * p.vc_head + w.d0,
                                        v_scale, clean.v, r[b]);
      else
        impl::store_cache<S, VEC, true>(p, p.k_cache, blk * p.kc_block + in_blk * p.kc_slot + w.h * p.kc_head + w.d0,
                                        k_scale, clean.k, r[b]);
    }
  }
}

// The rope.pipeline=3 variant of kv_cache_write (TEJAS_TUNE; config.cpp's kv_pipe_eligible:
// 16-byte vectors, and a token's group of one k and one v vector per thread, kv_write_kernel's
// fast path): a persistent grid whose token groups walk tokens t, t + step, ... (step = gridDim.x
// x tokens_per_block), as rope_pipe_kernel's do. While a thread converts and stores token t's
// vectors from its slots (stage s), token t + step's are already on their way into the other
// stage's (cp.async, one commit group per token) and its slot into a register: kv_write_kernel's
// threads load, wait, store and exit, so an SM's loads are out only for part of each block's
// life (the bf16-cache rows measured 69-75 % of the copy floor with 8-16 kv heads, 39-52 % for the
// TP-sharded 1-2). Slots: [stage][k, v][thread] 16 bytes, read back only by the thread that copied
// them, ordered by the waits (no barrier); a stage is refilled (the token after next) only after
// this thread's ld.shared of it, in program order. Skipped tokens' rows are read too, as in
// kv_write_kernel. Launch bounds as kv_write_kernel's.
template <class S, int VEC>
__global__ void __launch_bounds__(kMaxGroupThreads, 2) kv_pipe_kernel(const RopeParams p) {
  dev::begin_dependent_grid();
  using Raw = typename S::Raw;
  static_assert(VEC * sizeof(Raw) == kMaxAccessBytes, "16-byte k and v vectors");
  int token, local;
  impl::group_position(p, token, local);
  const int64_t step = static_cast<int64_t>(gridDim.x) * p.tokens_per_block;
  int64_t t = static_cast<int64_t>(blockIdx.x) * p.tokens_per_block + token;
  const bool live = t < p.T;  // threads that leave run their share of clean_scales's tests first
  // The thread's k and v vector (group == Hk x D / VEC: each vector of a row once).
  int64_t h, d0;
  impl::row_vector<VEC>(p, local, h, d0);
  const Raw* k_src = static_cast<const Raw*>(p.k) + h * p.k_head + d0;
  const Raw* v_src = static_cast<const Raw*>(p.v) + h * p.v_head + d0;
  // Stage st's slots are head slot st's two accesses (head_slot's layout): k's vector, then v's.
  const auto issue = [&](int64_t tok, int st) {
    const int64_t at = ptx::mov_opaque(tok);
    ptx::cp_async_16(impl::head_slot<2, kMaxAccessBytes>(st, 0), k_src + at * p.k_tok);
    ptx::cp_async_16(impl::head_slot<2, kMaxAccessBytes>(st, 1), v_src + at * p.v_tok);
    ptx::cp_async_commit();
  };
  Loaded<int64_t> slot;
  Loaded<float> k_scale, v_scale;  // fp8 caches: once per thread (tail threads' too: clean_scales)
  if (live) {
    issue(t, 0);
    impl::load_slot(p, t, slot);
  }
  impl::load_scale(p, p.k_scale, k_scale);
  impl::load_scale(p, p.v_scale, v_scale);
  const impl::CleanScales clean = impl::clean_scales<S>(p, k_scale, v_scale);  // once for all the block's tokens
  if (!live) return;  // no barriers below
  for (int s = 0; t < p.T; t += step, s ^= 1) {
    const int64_t next = t + step;
    Loaded<int64_t> slot_next;
    impl::issue_ahead(p, next, [&] {
      issue(next, s ^ 1);
      impl::load_slot(p, next, slot_next);
    });
    ptx::cp_async_wait<1>();
    Raw kv[2 * VEC];  // k's vector, then v's
    impl::read_head_slots<2>(s, kv);
    const int64_t at = impl::slot_at(p, slot);
    if (at >= 0) impl::store_kv_vectors<S, VEC>(p, at, h, d0, k_scale, v_scale, clean, kv, kv + VEC);
    if (next < p.T) slot = slot_next;  // (unset past the last token: not read)
  }
  ptx::cp_async_wait<0>();  // the trailing empty group: nothing pending at exit
}

// rope_kv_cache_write's k half where the op runs as two launches (TEJAS_TUNE rope.kv_split;
// plan.cpp's run_kernel_backend): the q half is plain rope (its pipelined kernel), and this kernel
// rotates k in place and writes k and v into the caches, with its loads first. A thread owns one
// column (config.h: a rotary column's 2P elements, or VEC elements of k's non-rotary tail) of one
// kv head, and takes v's elements at the same offsets, so k's column and v's are issued together
// with the slot, the position and the fp8 scales before any wait: a DRAM trip, then the cos/sin
// row's (an L2 hit where positions repeat or the q half read it recently), then the stores. A
// thread walks heads h = lane, lane + head_lanes, ... and columns col0, col0 + col_threads, ...
// when a token's kv heads hold more than 512 columns (the usual shapes: one of each per thread).
// Skipped tokens (slot < 0) are rotated (k is updated in place whatever the slot) and their v
// is read (issued before the slot is known) but nothing goes to the caches. NOTES: with the
// fused kernel (rope_kernel, q and k in one group) the H200 measured this op slower than rope
// then kv_cache_write on 28 of its 44 rows of >= 16 MiB (docs/kernels/rope_kv_cache_write.md):
// q's heads are most of its bytes, and the cache path's state (slot, scales, v) cost the
// pipelined kernel its occupancy. Split, q's rotation is the pipelined rope's kernel, which
// carries none of it, and the cache half is a kv_write_kernel that also rotates: each byte
// of q, k and v still crosses HBM once; positions and cos/sin rows are read by both halves.
// Launch bounds: one 512-thread block (kv_write_kernel's two, 64 registers, spilled 152 bytes at
// VEC 8); blocks of kKvRopeBlockThreads (config.h) at its 94 registers (sm_90a), 5 per SM.
template <class S, int VEC>
__global__ void __launch_bounds__(kMaxGroupThreads, 1) kv_rope_kernel(const RopeParams p) {
  dev::begin_dependent_grid();
  if (p.neox) impl::kv_rope_body<S, VEC, true>(p);
  else impl::kv_rope_body<S, VEC, false>(p);
}

// The rope.kv_rope_pipe variant (impl::kv_rope_pipe_body): 16-byte vectors of 16-bit k and v.
template <class S>
__global__ void __launch_bounds__(kMaxGroupThreads, 1) kv_rope_pipe_kernel(const RopeParams p) {
  dev::begin_dependent_grid();
  constexpr int kVec = kMaxAccessBytes / static_cast<int>(sizeof(typename S::Raw));
  if (p.neox) impl::kv_rope_pipe_body<S, kVec, true>(p);
  else impl::kv_rope_pipe_body<S, kVec, false>(p);
}

// grid: ceil(T / tokens_per_block); block: col_threads * head_lanes * tokens_per_block threads.
// kStage: the rope.head_stage variant's kernels (16-byte q/k accesses only; kernels.cuh), apart
// so that the default kernels carry none of its code (compiled in, it cost them 4-6 registers).
template <class S, int VEC, int kHeads, bool kStage = false>
__global__ void __launch_bounds__(kMaxGroupThreads, 1) rope_kernel(const RopeParams p) {
  dev::begin_dependent_grid();
  const int group = static_cast<int>(p.group_div.d);
  int token, local;
  impl::group_position(p, token, local);
  const int64_t t = static_cast<int64_t>(blockIdx.x) * p.tokens_per_block + token;
  if (t >= p.T) return;  // no barriers below: tail threads may leave
  int lane, col0;
  impl::lane_position(p, local, lane, col0);
  Loaded<int64_t> slot_loaded;
  impl::load_slot(p, t, slot_loaded);
  // TEJAS_TUNE rope.head_prefetch=1 (off: within noise on the H200): the first
  // step's head rows into L2 before the position load, when the thread's first column rotates.
  if (p.head_prefetch && col0 < p.rot_cols) {
    if (p.neox) impl::prefetch_heads<S, VEC, true, kHeads>(p, ptx::mov_opaque(t), col0, lane);
    else impl::prefetch_heads<S, VEC, false, kHeads>(p, ptx::mov_opaque(t), col0, lane);
  }
  // TEJAS_TUNE rope.head_stage=1 (the default since the H200 timed it; 16-byte q/k
  // accesses): the first step's head vectors copied into shared memory (cp.async) before the
  // position load, and rotated from there (rotate_column's `staged`).
  bool v_staged = false;
  if constexpr (kStage) {
    // TEJAS_TUNE rope.v_stage=1 (the default): the thread's first v vector copied into shared
    // memory with its heads (one cp.async group), so the v copy after the rotation reads it
    // there instead of making a DRAM trip of its own. NOTES: the L2 prefetch of that vector
    // (rope.v_prefetch) was within noise on the H200 (0.96-0.98 of the time). Skipped tokens' v
    // is staged too (their slot is not known yet), as with the prefetch.
    v_staged = p.v_stage && impl::copies_v<VEC>(p, local);
    if (v_staged) impl::stage_v<S, VEC, kHeads>(p, ptx::mov_opaque(t), local);
    if (col0 < p.rot_cols) {
      if (p.neox) impl::stage_heads<S, VEC, true, kHeads>(p, ptx::mov_opaque(t), col0, lane);
      else impl::stage_heads<S, VEC, false, kHeads>(p, ptx::mov_opaque(t), col0, lane);
    } else if (v_staged) {
      ptx::cp_async_commit();
    }
  }
  // The thread's first v vector, prefetched into L2 at the start: the v copy at the end finds
  // it there instead of making a DRAM trip of its own after the heads'. Skipped tokens' v is
  // prefetched too (their slot is not known yet: judging it here would wait for it). NOTES:
  // loading that vector into registers beside the head loads instead (after the position's wait,
  // the slot known) held it through the head loop: sm_90a VEC 8 80 -> 98 registers (Llama-8B's
  // 320-thread blocks: 1 per SM instead of 2); an L2 prefetch there still cost 6-8 registers.
  // TEJAS_TUNE rope.v_prefetch=1 turns it on (off: within noise on the H200).
  // (Not with rope.v_stage, which copies that vector itself.)
  if (p.v_prefetch && !p.v_stage && p.kv_kind != KvKind::none && impl::copies_v<VEC>(p, local)) {
    int64_t h, d0;
    impl::row_vector<VEC>(p, local, h, d0);
    ptx::prefetch_l2(static_cast<const typename S::Raw*>(p.v) + t * p.v_tok + h * p.v_head + d0);
  }
  for (int col = col0; col < p.rot_cols + p.pass_cols; col += p.col_threads) {
    const bool staged = kStage && col == col0;  // the first column's first step
    if (col >= p.rot_cols) {
      const int64_t slot = impl::slot_at(p, slot_loaded);
      if (slot >= 0) impl::copy_k_tail<S, VEC>(p, t, col - p.rot_cols, lane, slot);
    } else if (p.neox) impl::rotate_column<S, VEC, true, kHeads>(p, t, col, lane, slot_loaded, staged);
    else impl::rotate_column<S, VEC, false, kHeads>(p, t, col, lane, slot_loaded, staged);
  }
  const int64_t slot = impl::slot_at(p, slot_loaded);
  if constexpr (kStage) {
    if (slot >= 0) impl::copy_v<S, VEC, kHeads>(p, t, local, group, slot, 0.0f, v_staged);
    else if (v_staged) ptx::cp_async_wait<0>();  // a skipped token's staged v: nothing left pending at exit
  } else {
    if (slot >= 0) impl::copy_v<S, VEC>(p, t, local, group, slot, 0.0f);
  }
}

// The rope.pipeline variant (config.cpp's pipe_eligible: 16-byte q/k accesses, one rotary column
// and one head step per thread; with a cache (kKv, rope_kv_cache_write) rotary == D, so no k tail
// columns): a persistent grid whose token groups
// walk tokens t, t + step, ... (step = gridDim.x x tokens_per_block). While a thread rotates
// token t from its slots (stage s), token t + step's heads are already on their way into the
// other stage's slots (cp.async, one group per token) and its position into a register, so
// each token's exposed trip is its cos/sin row alone; rope_kernel's threads wait for two trips
// in a row (heads and position, then cos/sin) with nothing else in flight. Slots: 2 x kHeads
// heads per thread (the stages), read back only by the thread that copied them, so the waits
// order them: no barrier. A stage's slots are refilled (next-next token) only after this thread's
// ld.shared of them, in program order (the cp.async wrapper's memory clobber). kKv: the token's
// slot is loaded one token ahead as its position is, its k rows go to the cache as rope_kernel's
// do, its first v vector per thread is staged with its heads (rope.v_stage: one v slot per stage
// after both stages' head slots), and the group copies its v rows after the rotation.
template <class S, int VEC, int kHeads, bool kKv = false>
__global__ void __launch_bounds__(kMaxGroupThreads, 1) rope_pipe_kernel(const RopeParams p) {
  dev::begin_dependent_grid();
  // stage_heads commits a group only for 16-byte accesses; the one-group-per-token count (the
  // wait for all but the newest group) relies on it.
  static_assert(VEC * sizeof(typename S::Raw) == kMaxAccessBytes, "16-byte head accesses");
  const int group = static_cast<int>(p.group_div.d);
  int token, local;
  impl::group_position(p, token, local);
  int lane, col;
  impl::lane_position(p, local, lane, col);
  const int64_t step = static_cast<int64_t>(gridDim.x) * p.tokens_per_block;
  int64_t t = static_cast<int64_t>(blockIdx.x) * p.tokens_per_block + token;
  // (col_threads == rot_cols: the second test is defensive.) Threads that leave run their share of
  // clean_scales's tests first.
  const bool live = t < p.T && col < p.rot_cols;
  const auto stage = [&](int64_t tok, int head0) {
    if (p.neox) impl::stage_heads<S, VEC, true, kHeads>(p, ptx::mov_opaque(tok), col, lane, head0);
    else impl::stage_heads<S, VEC, false, kHeads>(p, ptx::mov_opaque(tok), col, lane, head0);
  };
  // The column's position row, from its first pair as in rotate_column.
  const int row = impl::position_row(
      p, static_cast<int64_t>(col) * (p.neox ? impl::kPairsPerColumn<VEC, true> : impl::kPairsPerColumn<VEC, false>));
  const bool v_staged = kKv && p.v_stage && impl::copies_v<VEC>(p, local);
  // Token tok's loads into stage st: its first v vector (kKv), then its heads (their commit closes
  // the token's group).
  const auto issue = [&](int64_t tok, int st) {
    if constexpr (kKv) {
      if (v_staged) impl::stage_v<S, VEC, 2 * kHeads>(p, ptx::mov_opaque(tok), local, st);
    }
    stage(tok, st * kHeads);
  };
  int64_t pos = 0;
  Loaded<int64_t> slot;  // kKv: the token's, loaded one token ahead; without a cache never judged
  if (live) {
    issue(t, 0);
    pos = impl::load_position(p, row, t);
    if constexpr (kKv) impl::load_slot(p, t, slot);
  }
  impl::CleanScales clean;  // kKv: once for all the block's tokens, while the first loads are out
  if constexpr (kKv) {
    Loaded<float> k_scale, v_scale;
    impl::load_scale(p, p.k_scale, k_scale);
    impl::load_scale(p, p.v_scale, v_scale);
    clean = impl::clean_scales<S>(p, k_scale, v_scale);
  }
  if (!live) return;  // no barriers below
  for (int s = 0; t < p.T; t += step, s ^= 1) {
    const int64_t next = t + step;
    int64_t pos_next = 0;
    Loaded<int64_t> slot_next;
    impl::issue_ahead(p, next, [&] {
      issue(next, s ^ 1);
      pos_next = impl::load_position(p, row, next);
      if constexpr (kKv) impl::load_slot(p, next, slot_next);
    });
    if (p.neox) impl::rotate_staged<S, VEC, true, kHeads, kKv>(p, t, col, lane, slot, s * kHeads, pos, clean.k);
    else impl::rotate_staged<S, VEC, false, kHeads, kKv>(p, t, col, lane, slot, s * kHeads, pos, clean.k);
    if constexpr (kKv) {
      const int64_t at = impl::slot_at(p, slot);
      if (at >= 0) impl::copy_v<S, VEC, 2 * kHeads, 1, true>(p, t, local, group, at, clean.v, v_staged, s);
    }
    pos = pos_next;
    if constexpr (kKv) {
      if (next < p.T) slot = slot_next;  // (unset past the last token: not copied)
    }
  }
  ptx::cp_async_wait<0>();  // the trailing empty group (and a skipped token's staged v): nothing pending at exit
}

}  // inline namespace TEJAS_BUILD_NS
}  // namespace tejas::rotary
