// Quantization kernels: quant_fp8_group / quant_mx (x -> codes + scales) and dequant_fp8_group /
// dequant_mx (codes + scales -> out). Thread mappings: src/ops/quant/config.h. Rounding: every
// code and output equals the float64 reference bit for bit (src/ops/quant/quant_math.h).
#pragma once
#include "device/prelude.h"
#include "device/grid_dependency.h"

#include <cstring>
#include <type_traits>

#include "device/math.h"
#include "device/numeric/clean_multiplier.h"
#include "device/numeric/convert.h"
#include "device/numeric/packed_half.h"
#include "device/numeric/storage.h"
#include "device/probe.h"
#include "device/ptx/ld_st.h"
#include "device/smem.h"
#include "device/unroll.h"
#include "ops/quant/config.h"
#include "ops/quant/params.h"
#include "ops/quant/quant_math.h"
#include "tejas/norm.h"  // kFp8MinAmax, kE4m3Max

// Loops over register arrays must unroll (or the arrays go to local memory); the host compiler
// of the emulator build needs no hint.
#if TEJAS_EMULATION
#define TEJAS_QUANT_UNROLL
#else
#define TEJAS_QUANT_UNROLL _Pragma("unroll")
#endif

namespace tejas::quant_kernel {
inline namespace TEJAS_BUILD_NS {  // nvcc and emulator builds apart (device/prelude.h)

// ---- element types: device/numeric/storage.h ----------------------------------------------------
using num::Bf16;
using num::F16;
using num::F32;

template <int N>
struct alignas(N) Bytes {
  uint8_t b[N];
};

inline constexpr unsigned kFullMask = 0xFFFFFFFFu;
inline constexpr uint32_t kF32NaNBits = 0x7FC00000u;
inline constexpr uint8_t kUe8m0NaN = 0xFF;
inline constexpr uint8_t kUe8m0Bias = 127;
inline constexpr int kNibbleBits = 4;
inline constexpr float kE2m1Max = CodeTraits<CodeFormat::e2m1>::kMax;
// f32(kFp8MinAmax / 448), rounded once as the reference rounds it.
inline constexpr float kFp8MinScale = static_cast<float>(kFp8MinAmax / kE4m3Max);
// The ue8m0 rule on kFp8MinAmax itself: no power of two lies between f32(1e-10) / 448 and
// 1e-10 / 448, so the f32 constant gives the reference's 2^-42.
inline constexpr float kFp8MinAmaxF = static_cast<float>(kFp8MinAmax);

inline constexpr uint32_t kF32InfBits = 0x7F800000u;
// Two bf16 / f16 canonical NaNs (what from_f32 gives for NaN in both formats): the packed dequant
// path's output for a NaN scale.
inline constexpr uint32_t kNaNPair16 = 0x7FFF7FFFu;
__device__ __forceinline__ bool is_nan(float v) { return (__float_as_uint(v) & kF32AbsMask) > kF32InfBits; }
__device__ __forceinline__ bool is_inf(float v) { return (__float_as_uint(v) & kF32AbsMask) == kF32InfBits; }

// +-Inf counts as the largest finite value of x's dtype (for amax and for its own code).
template <class X>
__device__ __forceinline__ float load_finite(typename X::Raw s) {
  const float v = X::to_f32(s);
  return is_inf(v) ? copysignf(X::kMaxFinite, v) : v;
}

// What quantizing one group needs once its amax is known.
struct GroupScale {
  uint32_t bits = 0;   // the scale as stored (f32 bits, or a ue8m0 / e4m3 code)
  float inv = 1.0f;    // ~ 1 / divisor
  float a = 1.0f, b = 1.0f;  // divisor = a * b exactly (a * midpoint exact in f32)
  bool pow2 = false;   // x * inv needs no midpoint test: a power-of-two divisor (exact), or version 7's clean multiplier
  bool zero = false;   // every code of the group is +0 (nvfp4 block_scale 0)
  bool nan = false;
};

// nvfp4's group from its block-scale code: the divisor bs * ts, and 1 / (bs * ts), or (version 7)
// a clean multiplier c for it (x * c needs no midpoint test: pow2).
__device__ __forceinline__ void set_nvfp4_scale(GroupScale& g, uint8_t code, float ts, float clean = 0.0f) {
  const float bs = num::e4m3_to_f32(code);
  g.bits = code;
  g.zero = bs == 0.0f;
  g.pow2 = clean != 0.0f;
  g.inv = g.pow2 ? clean : 1.0f / (bs * ts);
  g.a = bs;
  g.b = ts;
}

template <CodeFormat F>
__device__ __forceinline__ GroupScale group_scale(ScaleRule rule, float amax, bool nan, float ts, float inv_6ts) {
  GroupScale g;
  g.nan = nan;
  if (nan) {
    g.bits = rule == ScaleRule::fp8_f32 ? kF32NaNBits : rule == ScaleRule::nvfp4 ? CodeTraits<CodeFormat::e4m3>::kNaN : kUe8m0NaN;
    return g;
  }
  const bool tiny = static_cast<double>(amax) < kFp8MinAmax;  // once per group
  switch (rule) {
    case ScaleRule::fp8_f32: {
      const float s = tiny ? kFp8MinScale : amax / static_cast<float>(kE4m3Max);
      g.bits = __float_as_uint(s);
      g.inv = 1.0f / s;
      g.b = s;
      break;
    }
    case ScaleRule::fp8_ue8m0: {
      const uint8_t code = ue8m0_ceil_scale(tiny ? kFp8MinAmaxF : amax);
      g.bits = code;
      g.inv = pow2f(kUe8m0Bias - code);
      g.pow2 = true;
      break;
    }
    case ScaleRule::mx: {
      const int e = mx_scale_exponent<F>(amax);
      g.bits = static_cast<uint32_t>(e + kUe8m0Bias);
      g.inv = mx_inverse_scale(e);
      g.pow2 = true;
      break;
    }
    case ScaleRule::nvfp4: set_nvfp4_scale(g, quantize_exact<CodeFormat::e4m3>(amax, inv_6ts, kE2m1Max, ts), ts); break;
  }
  return g;
}

template <CodeFormat F>
__device__ __forceinline__ uint8_t code_of(float v, const GroupScale& g) {
  if (g.nan) return CodeTraits<F>::kNaN;
  if (g.zero) return 0;
  if (g.pow2) return CodeTraits<F>::encode(v * g.inv);
  return quantize_exact<F>(v, g.inv, g.a, g.b);
}

// store_scale, load_tensor_scale and load_scale take their caller's site (TEJAS_CALLER_PARAM,
// device/prelude.h): each call is its own request site under emulation, as on the GPU.
__device__ __forceinline__ void store_scale(void* scales, int64_t index, ScaleRule rule,
                                            uint32_t bits TEJAS_CALLER_PARAM) {
  if (rule == ScaleRule::fp8_f32)
    ptx::st_global(static_cast<float*>(scales) + index, __uint_as_float(bits) TEJAS_NESTED_SITE);
  else
    ptx::st_global(static_cast<uint8_t*>(scales) + index, static_cast<uint8_t>(bits) TEJAS_NESTED_SITE);
}

__device__ __forceinline__ float load_tensor_scale(const float* ts TEJAS_CALLER_PARAM) {
  return ts != nullptr ? ptx::ld_global_nc(ts TEJAS_NESTED_SITE) : 1.0f;
}

// 1 / (6 * tensor_scale): nvfp4's block-scale quotient, within ~2 ulps (resolved exactly).
__device__ __forceinline__ float inverse_6ts(float ts) { return 1.0f / (kE2m1Max * ts); }

// Packs n codes (n even for e2m1: element 0 in the low nibble) into bytes.
template <CodeFormat F, int N>
__device__ __forceinline__ void pack_codes(const uint8_t (&codes)[N], uint8_t* out) {
  if constexpr (F == CodeFormat::e4m3) {
TEJAS_QUANT_UNROLL
    for (int i = 0; i < N; ++i) out[i] = codes[i];
  } else {
TEJAS_QUANT_UNROLL
    for (int i = 0; i < N / 2; ++i) out[i] = static_cast<uint8_t>(codes[2 * i] | (codes[2 * i + 1] << kNibbleBits));
  }
}

// A group index as (row, group in the row), per_row dividing by the groups per row
// (QuantParams::row_div); advancing by n groups divides only on a row wrap. NOTES: with `g / groups_per_row` and `%` (64-bit) each warp step paid
// ~25 instructions (a 32-bit reciprocal path beside a division call), and each tile's advance
// carried a call (SASS sm_90a).
struct GroupAt {
  int64_t row, gi;
  __device__ __forceinline__ static GroupAt of(int64_t g, const dev::FastDiv& per_row) {
    const auto row = static_cast<int64_t>(dev::fast_div(static_cast<uint64_t>(g), per_row));
    return {row, g - row * static_cast<int64_t>(per_row.d)};
  }
  __device__ __forceinline__ void advance(int64_t n, const dev::FastDiv& per_row) {
    gi += n;
    if (gi >= static_cast<int64_t>(per_row.d)) {
      const GroupAt more = of(gi, per_row);
      row += more.row;
      gi = more.gi;
    }
  }
};

// The vectorized kernel's walk over groups, for any row strides (GroupAt: row and group in the
// row) or, kLinear (QuantConfig::linear), for rows laid end to end in x, q and the scales, where
// the group index alone places everything: x at g * group elements, the codes at g * group code
// bytes / vec, the scale at g. NOTES: the row walk's 64-bit advance, its row test and the
// row x stride + gi x group products of x's, q's and the scale's addresses were ~40 of the ~140
// SASS instructions of a one-chunk tile (mxfp8 from bf16, sm_90a) and ~30 of each tile's load;
// the linear walk is a 64-bit add, a compare and one 64 x 32-bit product per address.
template <bool kLinear>
struct GroupWalk;

template <>
struct GroupWalk<false> {
  GroupAt at;
  __device__ __forceinline__ static GroupWalk of(int64_t g, const QuantParams& p) {
    return {GroupAt::of(g, p.row_div)};
  }
  __device__ __forceinline__ void advance(int64_t n, const QuantParams& p) { at.advance(n, p.row_div); }
  __device__ __forceinline__ bool live(const QuantParams& p, int64_t) const { return at.row < p.rows; }
  __device__ __forceinline__ int64_t x_elem(const QuantParams& p) const {
    return at.row * p.x_row_stride + at.gi * p.group;
  }
  __device__ __forceinline__ int64_t q_byte(const QuantParams& p, int64_t group_bytes) const {
    return at.row * p.q_row_stride_bytes + at.gi * group_bytes;
  }
  __device__ __forceinline__ int64_t scale_index(const QuantParams& p) const {
    return at.row * p.s_row_stride + at.gi;
  }
};

template <>
struct GroupWalk<true> {
  int64_t g;
  __device__ __forceinline__ static GroupWalk of(int64_t g, const QuantParams&) { return {g}; }
  __device__ __forceinline__ void advance(int64_t n, const QuantParams&) { g += n; }
  __device__ __forceinline__ bool live(const QuantParams&, int64_t total) const { return g < total; }
  __device__ __forceinline__ int64_t x_elem(const QuantParams& p) const {
    return g * static_cast<int32_t>(p.group);  // group <= 32 lanes x 4 chunks x 8 elements
  }
  __device__ __forceinline__ int64_t q_byte(const QuantParams&, int64_t group_bytes) const {
    return g * static_cast<int32_t>(group_bytes);
  }
  __device__ __forceinline__ int64_t scale_index(const QuantParams&) const { return g; }
};

// ---- quantization, vectorized: a group in registers across lanes_per_group lanes ---------------
// Absolute-value bits of x's elements, compared as unsigned integers: the order of |x| for
// non-negative floats, with +Inf above every finite value and NaN above +Inf. A group's amax and
// its NaN / Inf flags come from one integer maximum (and one shuffle per level).
template <class X>
struct AbsBits {
  static constexpr bool kPacked = sizeof(typename X::Raw) == 2;  // two elements per 32-bit word
  // The largest abs bits of the 4 words of a 16-byte chunk: packed formats keep the low and high
  // halves apart (the high half in place) and merge them at the end (merge()).
  static constexpr uint32_t kLowMask = kPacked ? 0x7FFFu : kF32AbsMask;
  static constexpr uint32_t kHighMask = 0x7FFF0000u;
  static constexpr uint32_t kInf = X::kInfBits;
  __device__ __forceinline__ static uint32_t umax(uint32_t a, uint32_t b) { return a > b ? a : b; }
  __device__ __forceinline__ static void add(uint32_t w, uint32_t& lo, uint32_t& hi) {
    lo = umax(lo, w & kLowMask);
    if constexpr (kPacked) hi = umax(hi, w & kHighMask);
  }
  __device__ __forceinline__ static uint32_t merge(uint32_t lo, uint32_t hi) {
    if constexpr (kPacked) return umax(lo, hi >> 16);
    else return lo;
  }
  // amax as f32 from the merged bits (not NaN): +Inf counts as x's largest finite value.
  __device__ __forceinline__ static float amax(uint32_t bits) {
    if (bits >= kInf) return X::kMaxFinite;
    if constexpr (kPacked) return X::to_f32(static_cast<typename X::Raw>(bits));
    else return __uint_as_float(bits);
  }
};

// Two elements' codes (e4m3: 16 bits, element 0 in the low byte; e2m1: 8 bits, element 0 in the
// low nibble); neither is NaN.
template <CodeFormat F>
__device__ __forceinline__ uint32_t encode_pair(float lo, float hi) {
  if constexpr (F == CodeFormat::e4m3) return num::f32x2_to_e4m3x2(lo, hi);
  else return num::f32x2_to_e2m1x2_not_nan(lo, hi);
}

// +-Inf elements of a 16-byte chunk replaced by +-x's largest finite value, whose bits are Inf's
// minus one in each format (0x7F80 -> 0x7F7F, 0x7C00 -> 0x7BFF, 0x7F800000 -> FLT_MAX).
template <class X>
__device__ __forceinline__ uint32_t clamp_inf_word(uint32_t w) {
  using Abs = AbsBits<X>;
  if constexpr (Abs::kPacked) {
    if ((w & Abs::kLowMask) == Abs::kInf) w -= 1u;
    if ((w & Abs::kHighMask) == Abs::kInf << 16) w -= 1u << 16;
  } else if ((w & Abs::kLowMask) == Abs::kInf) {
    w -= 1u;
  }
  return w;
}

// Version 4: one kernel per scale rule (R), the amax from integer bits, codes encoded in pairs
// with no per-element branch: NaN and all-zero groups replace whole code words, a group holding
// +-Inf clamps its raw chunks first, and for the non-power-of-two divisors (fp8_f32, nvfp4) the
// values x * (1 / D) that lie near a code midpoint move off it (num::nudge_off_midpoint) before
// encoding, in one branch per chunk.
// Blocks of the vectorized quant kernels resident per SM, which caps their registers (launch
// bounds): 4 x 256 threads at <= 64 registers. NOTES: without the cap the nvfp4 kernels took 63-67
// registers on sm_90a (3 blocks: a quarter fewer loads in flight); on sm_80 the cap of 64 spilled 4
// bytes in the bf16 / f16 nvfp4 kernels, so the fallback architecture keeps 3.
inline constexpr int kQuantBlocksPerSm = TEJAS_ARCH == 0 || TEJAS_ARCH >= 900 ? 4 : 3;

// Version 5 (kPacked, 16-bit x to e2m1 with MX scales): each pair of elements is scaled and
// rounded as a packed bf16 / f16 pair (num::half2_to_e2m1_lanes, src/device/numeric/
// packed_half.h) instead of element by element in f32: the scale 2^-e is exact in x's format,
// so x * 2^-e is the same value either way except where the 16-bit product underflows (only
// far below e2m1's smallest step), and the codes are bit for bit the same.
template <class X>
struct PackedMxScale {
  uint32_t m1 = 0, m2 = 0;  // 2^-e = m1 * m2, each a pair of x's format (m2 unused for bf16)
};
// From the scale's ue8m0 code (e + 127): bf16 holds 2^-e for every MX exponent of a bf16 group
// (-125 <= -e <= 127); f16's 2^-e reaches 2^127 (an all-zero group) but f16 stops at 2^15, so
// it is applied in two steps, the first exact (x * 2^15 <= 8 when -e > 15).
template <class X>
__device__ __forceinline__ PackedMxScale<X> packed_mx_scale(uint32_t code) {
  constexpr uint32_t kTwo = 0x00010001u;
  PackedMxScale<X> s;
  const int ne = kUe8m0Bias - static_cast<int>(code);  // -e
  if constexpr (std::is_same_v<X, Bf16>) {
    s.m1 = (static_cast<uint32_t>(ne + 127) << 7) * kTwo;
  } else {
    const int e1 = ne < 15 ? ne : 15;
    const int e2 = ne - e1 < 15 ? ne - e1 : 15;  // > 0 only for groups below 2^-13 (all-zero: 112)
    s.m1 = (static_cast<uint32_t>(e1 + 15) << 10) * kTwo;
    s.m2 = (static_cast<uint32_t>(e2 + 15) << 10) * kTwo;
  }
  return s;
}
template <class X>
__device__ __forceinline__ uint32_t packed_mx_codes(uint32_t w, const PackedMxScale<X>& s) {
  uint32_t v = num::hmul2<X>(w, s.m1);
  if constexpr (!std::is_same_v<X, Bf16>) v = num::hmul2<X>(v, s.m2);
  return num::half2_to_e2m1_lanes<X>(v);
}

// Version 7 (config.clean_table; nvfp4 from 16-bit x, with kFast): clean multipliers
// (device/numeric/clean_multiplier.h) for every divisor the tensor scale ts allows. A block
// builds, once, a table in shared memory: for each positive e4m3 block-scale code b, a c whose
// RN(x c) converts to sat_rne_e2m1(x / (bs ts)) for every 16-bit x, or 0 where none of the
// candidates is (divisors whose quotients have exact ties that no multiplier lands on, such as
// bs = 3 at ts = 1, or a product outside the checked range); and c6, the same for the block
// scale's own code sat_rne_e4m3(amax / (6 ts)) (amax is a 16-bit value too). A group with a
// clean c then takes t = x c with no near-midpoint filter (num::near_key) and no reciprocal;
// its block scale, where c6 is clean, one product and one conversion. Groups without one keep
// version 5's path. The table's 7 x 126 e2m1 tests and c6's 126 e4m3 tests are shared over the
// block's 256 threads (two threads per code, each at most 4 tests; one e4m3 test per thread),
// about 220 instructions (the 16 copies' stores included) and one or three barriers, run after
// the block's first loads are issued; planned (config.cpp's with_clean_table) on a persistent grid where each block has at
// least kCleanMinSteps warp steps to spread that over.
// The table is read at each group's own block-scale code: one copy of 128 floats put a warp's 16
// groups in one bank wherever their codes were 32 apart (a 16x spread of amax within 256
// elements; up to 4-way conflicts, data-dependent). So it holds a copy per group slot of the warp
// (kCleanCopies, 8 KB), entry [code][slot] at word 16 code + slot: bank slot + 16 (code & 1), a
// different bank for each slot whatever the codes, one address per slot (a group's 2 lanes read
// the same code). A lane reads byte code x 64 | slot x 4 (clean_group_scale): as many
// instructions as one copy's code x 4. The build's stores are conflict-free too (below).
struct Nvfp4CleanTable {
  // by e4m3 code, then group slot: 0 none; code 0 (block scale 0: codes replaced by +0) 1; 127 (NaN) 0
  float c[128][kCleanCopies];
};
static_assert(sizeof(Nvfp4CleanTable) == kCleanTableBytes, "config.h's size of the table");
inline constexpr int kCleanCodes = 0x7E;  // positive finite e4m3 codes 1 .. 126 (448)
static_assert(kThreads >= 2 * kCleanCodes && kThreads >= num::kCleanItems<CodeFormat::e4m3>,
              "every test of the clean table has a thread");
// dev::count_event names (the emulator's report; tests check the verdicts).
__device__ __forceinline__ const char* clean_table_event(int candidate) {
  switch (candidate) {
    case 0: return "nvfp4 clean table: block scale code, candidate 0";
    case 1: return "nvfp4 clean table: block scale code, candidate 1";
    case 2: return "nvfp4 clean table: block scale code, candidate 2";
    default: return "nvfp4 clean table: block scale code, none";
  }
}
// Every thread of the block calls it (barriers); returns c6 (0: none).
template <class X>
__device__ __forceinline__ float build_clean_table(Nvfp4CleanTable* table, float ts) {
  using num::CleanCandidates;
  constexpr int kItems = num::kCleanItems<CodeFormat::e2m1>;
  constexpr int kHalf = (kItems + 1) / 2;
  constexpr int kCands = num::kCleanCandidates;
  const int tid = static_cast<int>(threadIdx.x);
  // Two threads per code: midpoints [0, kHalf) and [kHalf, kItems). (2.5, 3.5 and 5 are twice
  // 1.25, 1.75 and 2.5, and doubling x and t is exact, so their tests repeat those except where
  // 2 x leaves x's range; they are kept: the second thread of the pair runs them at no extra
  // time.)
  const int code = tid / 2 + 1, half = tid % 2;
  const bool mine = tid < 2 * kCleanCodes;
  const float bs = num::e4m3_to_f32(static_cast<uint8_t>(mine ? code : 1));
  const float d = bs * ts;
  const bool in = mine && num::clean_scale_range(d);
  const CleanCandidates cand = num::clean_candidates(d, dev::fdividef(1.0f, d));
  uint32_t misses = 0;
  if (in) {
    for (int i = half * kHalf; i < (half + 1) * kHalf && i < kItems; ++i)
      misses |= num::clean_misses<CodeFormat::e2m1, X>(bs, ts, i, cand);
  }
  misses |= __shfl_xor_sync(kFullMask, misses, 1);  // the code's other half (same warp)
  if (mine) {
    // Both threads of the pair know j; each writes half of the code's copies. Store i of the
    // warp's lane 2k + half (code k + const) goes to copy (2 i + half + code) mod 16: lanes with
    // the same copy have codes 1 apart (odd: the other 16 banks), so no store conflicts either.
    const int j = in ? num::first_clean_index(misses) : kCands;
    const float mult = num::clean_candidate(cand, j);
#pragma unroll
    for (int i = 0; i < kCleanCopies / 2; ++i)
      ptx::st_shared(&table->c[code][(2 * i + half + code) % kCleanCopies], mult);
    if (half == 0)
      dev::count_event(j < kCands ? "nvfp4 clean table: codes with a clean multiplier"
                                  : "nvfp4 clean table: codes without");
  }
  // Codes 0 and 0x7F in every copy: banks 0-15 and 16-31, one store.
  if (tid < 2 * kCleanCopies)
    ptx::st_shared(&table->c[tid < kCleanCopies ? 0 : 0x7F][tid % kCleanCopies], tid < kCleanCopies ? 1.0f : 0.0f);
  // c6: one e4m3 test per thread; the first barrier also publishes the table.
  const float d6 = kE2m1Max * ts;
  const bool in6 = num::clean_scale_range(d6);
  const CleanCandidates cand6 = num::clean_candidates(d6, dev::fdividef(1.0f, d6));
  const uint32_t misses6 =
      in6 && tid < num::kCleanItems<CodeFormat::e4m3> ? num::clean_misses<CodeFormat::e4m3, X>(kE2m1Max, ts, tid, cand6) : 0u;
  uint32_t any = 0;
  if (__syncthreads_or(static_cast<int>(misses6 & 1u)) != 0) {
    #pragma unroll 1
    for (int j = 1; j < kCands; ++j) any |= static_cast<uint32_t>(__syncthreads_or(static_cast<int>(misses6 >> j & 1u)) != 0) << j;
    any |= 1u;
  }
  const int j6 = in6 ? num::first_clean_index(any) : kCands;
  if (tid == 0) dev::count_event(clean_table_event(j6));
  return num::clean_candidate(cand6, j6);
}
// Version 7's GroupScale for nvfp4: the block scale's code from c6 where it is clean, the
// divisor's clean multiplier from the table (pow2 set: x * inv needs no midpoint test), else
// group_scale's exact forms (1 / (6 ts) per group where c6 is 0: a few-bit tensor scale).
// slot_bytes: the byte offset of the lane's copy of the table (its group slot in the warp x 4).
__device__ __forceinline__ GroupScale clean_group_scale(float amax, bool nan, float ts, float c6,
                                                        const Nvfp4CleanTable* table, int slot_bytes) {
  GroupScale g;
  g.nan = nan;
  if (nan) {
    g.bits = CodeTraits<CodeFormat::e4m3>::kNaN;
    return g;
  }
  const uint8_t code = c6 != 0.0f ? num::f32_to_e4m3(amax * c6)
                                  : quantize_exact<CodeFormat::e4m3>(amax, inverse_6ts(ts), kE2m1Max, ts);
  // Byte offset code x 64 | slot x 4: one shift and one masked OR, the shared base folded into
  // the load's address (as c[code] alone took; a float index took one more LEA, sm_90a).
  const int at = static_cast<int>(code) * static_cast<int>(sizeof(table->c[0])) | slot_bytes;
  set_nvfp4_scale(g, code, ts,
                  ptx::ld_shared(reinterpret_cast<const float*>(reinterpret_cast<const char*>(table) + at)));
  if (g.pow2) dev::count_event("nvfp4 clean table: group-lanes quantized with a clean multiplier");
  return g;
}

// kFast: version 5 (config.fast_convert; e2m1 codes, or the fp8_f32 rule). kTieBias: version 6
// (config.tie_bias; the fp8_f32 rule for 16-bit x, with kFast): the codes of x / s from
// quant_math.h's tie_biased_quotient, no near-midpoint test (below the amax clamp too: checked
// on every bf16 value there, QuantMath.TieBiasBelowTheClamp). NOTES: version 5's filter (num::near_key) passes code values
// too, so the group's largest element (x / s ~ 448) alone sent most chunks into the correction
// branch: a host simulation of random normal bf16 data, group 128 (8 groups per warp, 4 chunks
// per lane) had some lane of the warp take it in 99.8 % of chunk steps (61.6 % with
// near_midpoint, which tells midpoints from code values: groups with s = amax / 448 exactly, and
// the ties of q0 = 448 x / amax that rho moves by 2^-24, quant_math.h).
template <class X, CodeFormat F, ScaleRule R, bool kFast = false, bool kTieBias = false, bool kClean = false,
          bool kLinear = false>
__global__ void __launch_bounds__(kThreads, kQuantBlocksPerSm) quant_vec_kernel(QuantParams p) {
  dev::begin_dependent_grid();
  using S = typename X::Raw;
  using Abs = AbsBits<X>;
  constexpr int kVec = kVecBytes / static_cast<int>(sizeof(S));
  constexpr int kCodeBytes = F == CodeFormat::e4m3 ? kVec : kVec / 2;
  using CodeWord = typename num::AccessWord<kCodeBytes>::type;
  constexpr int kPairBits = F == CodeFormat::e4m3 ? 16 : 8;
  // 32-bit words of codes per chunk (2 for bf16 / f16 e4m3, else 1: f32 e2m1 fills half of one).
  constexpr int kCodeWords = kCodeBytes >= 4 ? kCodeBytes / 4 : 1;
  constexpr int kPairsPerWord = kVec / 2 / kCodeWords;
  constexpr uint32_t kNaNWord = F == CodeFormat::e4m3 ? 0x7F7F7F7Fu : 0x77777777u;
  // MX scales saturate x's largest finite value already; the other rules see +-Inf as it.
  constexpr bool kClampInf = R != ScaleRule::mx;
  // Divisors that are not powers of two: x * (1 / D) is not exact (num::round_quotient).
  constexpr bool kInexact = R == ScaleRule::fp8_f32 || R == ScaleRule::nvfp4;
  static_assert(kPairsPerWord * kPairBits <= 32, "a word holds its pairs");
  static_assert(!kFast || F == CodeFormat::e2m1 || R == ScaleRule::fp8_f32, "version 5: e2m1, or fp8 f32 scales");
  static_assert(!kTieBias || (kFast && R == ScaleRule::fp8_f32 && sizeof(S) == 2), "version 6: fp8 f32 scales, 16-bit x");
  static_assert(!kClean || (kFast && R == ScaleRule::nvfp4 && sizeof(S) == 2), "version 7: nvfp4, 16-bit x");
  // e2m1 codes: 16-bit x with MX scales: x * 2^-e and its codes as packed 16-bit pairs; the
  // other e2m1 kernels: the f32 values x * (1 / D) (nudged off midpoints), converted in pairs
  // through bf16 rounded to odd (num::f32x2_to_e2m1_lanes). The inexact rules (nvfp4, fp8_f32):
  // the chunk's near-midpoint branch decided by num::near_key.
  constexpr bool kPacked = kFast && F == CodeFormat::e2m1;
  constexpr bool kPacked16 = kPacked && sizeof(S) == 2 && R == ScaleRule::mx;
  using Walk = GroupWalk<kLinear>;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int L = p.lanes_per_group;
  const int seg = lane / L, sub = lane % L;
  const int64_t groups_per_row = static_cast<int64_t>(p.row_div.d);
  const int64_t total = p.rows * groups_per_row;
  const int64_t groups_per_warp = kWarp / L;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int64_t num_warps = static_cast<int64_t>(gridDim.x) * blockDim.x / kWarp;
  // A tile: the groups_per_warp groups the warp quantizes at once. A warp step covers p.steps
  // consecutive tiles (steps > 1 only with one chunk per lane), all their loads issued first.
  const int64_t step_groups = groups_per_warp * p.steps;
  // Unit u of this lane: chunk u of group base + seg (steps 1), or the one chunk of group
  // base + u * groups_per_warp + seg (steps > 1). NOTES: every load is issued before the first
  // use (predicated, no branch between them), so a lane has chunks x steps x 16 bytes in flight;
  // with the loads inside the amax loop ptxas issued them one after another.
  uint4 raw[kMaxChunks];
  const auto load_step = [&](int64_t base) {
    const int64_t g0 = base + seg;
    Walk at = Walk::of(g0, p);  // past the last row: an idle segment
TEJAS_QUANT_UNROLL
    for (int u = 0; u < kMaxChunks; ++u) {
      raw[u] = make_uint4(0u, 0u, 0u, 0u);
      if (p.steps > 1 && u > 0) at.advance(groups_per_warp, p);
      const int c = p.steps > 1 ? 0 : u;
      if (u < p.chunks * p.steps && at.live(p, total)) {
        const S* xg = static_cast<const S*>(p.x) + at.x_elem(p);
        raw[u] = ptx::ld_global_nc(reinterpret_cast<const uint4*>(xg + (c * L + sub) * kVec));
      }
    }
  };
  // Version 7: the block's clean table, built while its first step's loads are out (every thread
  // of the block: barriers).
  [[maybe_unused]] Nvfp4CleanTable* const table = kClean ? dev::dynamic_smem<Nvfp4CleanTable>() : nullptr;
  // The lane's copy: its group slot's (seg < kCleanCopies: 2 lanes per group, config.cpp's group_lanes).
  [[maybe_unused]] const int slot_bytes = seg % kCleanCopies * static_cast<int>(sizeof(float));
  [[maybe_unused]] float c6 = 0.0f;
  const int64_t first_base = warp * step_groups;
  if constexpr (kClean) {
    load_step(first_base);
    c6 = build_clean_table<X>(table, load_tensor_scale(p.tensor_scale));
  }
  // Uniform per warp: every lane takes part in the shuffles, idle segments with amax 0.
  for (int64_t base = first_base; base < total; base += num_warps * step_groups) {
    if (!kClean || base != first_base) load_step(base);
    const int64_t g0 = base + seg;
    // nvfp4's tensor scale, loaded after the step's x loads (one address: an L1 hit after the
    // first step on an SM). NOTES: loaded at the kernel's start, as before, 1 / (6 ts) and ts's
    // move to a uniform register made every thread wait for it before its first x load (SASS,
    // sm_90a): one more DRAM trip at the head of every nvfp4 quant chain. ptx::mov_opaque did not
    // keep ptxas from hoisting that move.
    const float ts = R == ScaleRule::nvfp4 ? load_tensor_scale(p.tensor_scale) : 1.0f;
    // (Version 7: computed per group where c6 is not clean, clean_group_scale. NOTES: computed
    // here per step instead, for those calls, f16's kernel spilled 4 bytes at sm_90a's 64.)
    const float inv_6ts = R == ScaleRule::nvfp4 && !kClean ? inverse_6ts(ts) : 1.0f;
    Walk at = Walk::of(g0, p);
    // NOTES: tile and chunk are compile-time constants in each copy (dev::static_for), so raw[]
    // stays in registers; under `#pragma unroll` alone the e2m1 kernels (and e4m3 on sm_80) kept
    // the tile loop rolled, raw[] went to local memory, and each 16-byte load waited for its data
    // before the STL that spilled it: the step's loads went one DRAM round trip at a time.
    dev::static_for<kMaxChunks>([&](auto tile_c) {
      constexpr int tile = decltype(tile_c)::value;
      if (tile >= p.steps) return;
      if (tile > 0) at.advance(groups_per_warp, p);
      const bool active = at.live(p, total);
      // This tile's chunks are raw[tile, tile + chunks): with steps > 1 a tile has one chunk
      // (config.cpp), so only tile 0 needs code for more.
      constexpr int kTileChunks = tile == 0 ? kMaxChunks : 1;
      uint32_t lo = 0, hi = 0;  // abs bits (idle segments and chunks: 0)
      dev::static_for<kTileChunks>([&](auto c_c) {
        constexpr int c = decltype(c_c)::value;
        if (c >= p.chunks) return;
        const uint4 w = raw[tile + c];
        Abs::add(w.x, lo, hi);
        Abs::add(w.y, lo, hi);
        Abs::add(w.z, lo, hi);
        Abs::add(w.w, lo, hi);
      });
      uint32_t bits = Abs::merge(lo, hi);
      for (int off = L / 2; off > 0; off >>= 1) bits = Abs::umax(bits, __shfl_xor_sync(kFullMask, bits, off));
      if (!active) return;
      const bool nan = bits > Abs::kInf;
      const float amax = Abs::amax(bits);
      GroupScale gs;
      if constexpr (kClean) gs = clean_group_scale(amax, nan, ts, c6, table, slot_bytes);
      else gs = group_scale<F>(R, amax, nan, ts, inv_6ts);
      // Version 6: the group's biased reciprocal (unused for NaN groups, whose codes are replaced).
      [[maybe_unused]] TieBias tb;
      if constexpr (kTieBias) tb = tie_bias(amax, __uint_as_float(gs.bits), gs.inv);
      if (sub == 0) store_scale(p.scales, at.scale_index(p), R, gs.bits);
      if (gs.zero) gs.inv = 0.0f;  // nvfp4 block scale 0: codes +0 (replaced below), no Inf * 0
      if constexpr (kClampInf) {
        if (bits == Abs::kInf) {  // the group's largest element is +-Inf (rare: a branch)
          dev::static_for<kTileChunks>([&](auto c_c) {
            constexpr int c = decltype(c_c)::value;
            uint4& w = raw[tile + c];
            w = make_uint4(clamp_inf_word<X>(w.x), clamp_inf_word<X>(w.y), clamp_inf_word<X>(w.z),
                           clamp_inf_word<X>(w.w));
          });
        }
      }
      uint8_t* qg = p.q + at.q_byte(p, p.group * kCodeBytes / kVec);
      if constexpr (kPacked16) {
        const PackedMxScale<X> ms = packed_mx_scale<X>(gs.bits);
        dev::static_for<kTileChunks>([&](auto c_c) {
          constexpr int c = decltype(c_c)::value;
          if (c >= p.chunks) return;
          const uint4 w = raw[tile + c];
          const uint32_t word = num::pack_e2m1_lanes(packed_mx_codes<X>(w.x, ms), packed_mx_codes<X>(w.y, ms),
                                                     packed_mx_codes<X>(w.z, ms), packed_mx_codes<X>(w.w, ms));
          ptx::st_global_cs(reinterpret_cast<uint32_t*>(qg + (c * L + sub) * kCodeBytes), gs.nan ? kNaNWord : word);
        });
        return;
      }
      dev::static_for<kTileChunks>([&](auto c_c) {
        constexpr int c = decltype(c_c)::value;
        if (c >= p.chunks) return;
        S e[kVec];
        memcpy(e, &raw[tile + c], sizeof(e));
        float t[kVec];
        [[maybe_unused]] bool near = false;
        if constexpr (kTieBias) {
          // fp8_f32 from 16-bit x, version 6: every quotient on its tie's side, no test.
TEJAS_QUANT_UNROLL
          for (int i = 0; i < kVec; ++i) t[i] = tie_biased_quotient(X::to_f32(e[i]), tb);
        } else if constexpr (kFast && kInexact) {
          // nvfp4 and fp8_f32, version 5: the wider, cheaper filter (num::near_key) for the
          // chunk's branch; version 7's groups with a clean multiplier (gs.pow2): none.
          if (kClean && gs.pow2) {
TEJAS_QUANT_UNROLL
            for (int i = 0; i < kVec; ++i) t[i] = X::to_f32(e[i]) * gs.inv;
          } else {
            uint32_t key = ~0u;
TEJAS_QUANT_UNROLL
            for (int i = 0; i < kVec; ++i) {
              t[i] = X::to_f32(e[i]) * gs.inv;
              const uint32_t k = num::near_key<F>(t[i]);
              key = k < key ? k : key;
            }
            near = key <= num::kNearKeyMax<F>;
          }
        } else {
TEJAS_QUANT_UNROLL
          for (int i = 0; i < kVec; ++i) {
            t[i] = X::to_f32(e[i]) * gs.inv;  // exact for power-of-two scales
            if constexpr (kInexact) near |= near_midpoint<F>(t[i]);
          }
        }
        // NOTES: a branch around the whole chunk, taken by some lane of a warp in 61 % of fp8-group
        // chunks of random normal bf16 data with near_midpoint (groups whose f32 scale amax / 448
        // is exact, amax a multiple of 7, hold true ties), 99.8 % with near_key (version 6, above,
        // has none for 16-bit x), and in 99 % of nvfp4 chunks when tensor_scale is a power
        // of two (1.0), but in none of 20,000 warps with a production-like tensor_scale (host
        // simulation). Without the branch (every element paying for the correction) the nvfp4
        // chunk took about 285 SASS instructions (sm_90a, bf16) against 187, or 332 with the
        // branch taken, so the branch stays.
        if constexpr (kInexact && !kTieBias) {
          if (near) {
TEJAS_QUANT_UNROLL
            for (int i = 0; i < kVec; ++i)
              if (near_midpoint<F>(t[i])) t[i] = nudge_off_midpoint<F>(X::to_f32(e[i]), t[i], gs.a, gs.b);
          }
        }
        uint32_t words[kCodeWords];
        if constexpr (kPacked) {
          static_assert(kCodeWords == 1 && (kVec == 8 || kVec == 4), "one word of nibbles per chunk");
          uint32_t lanes[kVec / 2];
TEJAS_QUANT_UNROLL
          for (int pi = 0; pi < kVec / 2; ++pi) lanes[pi] = num::f32x2_to_e2m1_lanes(t[2 * pi], t[2 * pi + 1]);
          uint32_t word;
          if constexpr (kVec == 8) word = num::pack_e2m1_lanes(lanes[0], lanes[1], lanes[2], lanes[3]);
          else word = num::pack_e2m1_lanes(lanes[0], lanes[1]);
          words[0] = gs.nan ? kNaNWord : gs.zero ? 0u : word;
        } else {
TEJAS_QUANT_UNROLL
          for (int wi = 0; wi < kCodeWords; ++wi) {
            uint32_t word = 0;
TEJAS_QUANT_UNROLL
            for (int pi = 0; pi < kPairsPerWord; ++pi) {
              const int i = (wi * kPairsPerWord + pi) * 2;
              word |= encode_pair<F>(t[i], t[i + 1]) << (kPairBits * pi);
            }
            words[wi] = gs.nan ? kNaNWord : gs.zero ? 0u : word;
          }
        }
        CodeWord packed;
        memcpy(&packed, words, sizeof(packed));
        ptx::st_global_cs(reinterpret_cast<CodeWord*>(qg + (c * L + sub) * kCodeBytes), packed);
      });
    });
  }
}

// ---- quantization, generic: a warp per group, two passes ---------------------------------------
template <class X, CodeFormat F>
__global__ void __launch_bounds__(kThreads) quant_generic_kernel(QuantParams p) {
  dev::begin_dependent_grid();
  using S = typename X::Raw;
  constexpr int kPer = F == CodeFormat::e4m3 ? 1 : 2;  // elements per code byte
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int64_t groups_per_row = static_cast<int64_t>(p.row_div.d);
  const int64_t total = p.rows * groups_per_row;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int64_t num_warps = static_cast<int64_t>(gridDim.x) * blockDim.x / kWarp;
  const float ts = load_tensor_scale(p.tensor_scale);
  // nvfp4 (the only rule with a tensor scale) has e2m1 codes. NOTES: computed in the e4m3 kernels
  // too, the reciprocal's slow-path call made ptxas spill 4 bytes around it (f32 x, sm_90a).
  const float inv_6ts = F == CodeFormat::e2m1 ? inverse_6ts(ts) : 1.0f;
  for (int64_t g = warp; g < total; g += num_warps) {
    const auto [row, gi] = GroupAt::of(g, p.row_div);
    const S* xg = static_cast<const S*>(p.x) + row * p.x_row_stride + gi * p.group;
    float amax = 0.0f;
    int nan = 0;
    for (int64_t k = lane * kPer; k < p.group; k += kWarp * kPer) {
TEJAS_QUANT_UNROLL
      for (int j = 0; j < kPer; ++j) {
        const float v = load_finite<X>(ptx::ld_global_nc(xg + k + j));
        nan |= is_nan(v);
        amax = fmaxf(amax, fabsf(v));
      }
    }
    for (int off = kWarp / 2; off > 0; off >>= 1) {
      amax = fmaxf(amax, __shfl_xor_sync(kFullMask, amax, off));
      nan |= __shfl_xor_sync(kFullMask, nan, off);
    }
    const GroupScale gs = group_scale<F>(p.rule, amax, nan != 0, ts, inv_6ts);
    if (lane == 0) store_scale(p.scales, row * p.s_row_stride + gi, p.rule, gs.bits);
    uint8_t* qg = p.q + row * p.q_row_stride_bytes + gi * p.group / kPer;
    // Second pass: re-reads the group (just read by this warp: L1 / L2, not HBM).
    for (int64_t k = lane * kPer; k < p.group; k += kWarp * kPer) {
      uint8_t codes[kPer];
TEJAS_QUANT_UNROLL
      for (int j = 0; j < kPer; ++j) codes[j] = code_of<F>(load_finite<X>(ptx::ld_global_nc(xg + k + j)), gs);
      uint8_t packed[1];
      pack_codes<F>(codes, packed);
      ptx::st_global_cs(qg + k / kPer, packed[0]);
    }
  }
}

// ---- dequantization ---------------------------------------------------------------------------
// A scale's stored bits (f32 bits, or the ue8m0 / e4m3 byte), and their value. Split so that a
// kernel with several loads in flight decodes only after issuing them all.
// NOTES: with the decode next to its load (one switch), ptxas put each byte scale's conversion
// right after its LDG, in the same branch: the thread waited for the scale before issuing its
// code load and the next step's loads, one DRAM round trip per load (SASS, sm_90a).
__device__ __forceinline__ uint32_t load_scale_bits(const DequantParams& p, int64_t index TEJAS_CALLER_PARAM) {
  if (p.scale_kind == ScaleKind::f32)
    return ptx::ld_global_nc(static_cast<const uint32_t*>(p.scales) + index TEJAS_NESTED_SITE);
  return ptx::ld_global_nc(static_cast<const uint8_t*>(p.scales) + index TEJAS_NESTED_SITE);
}

__device__ __forceinline__ float decode_scale(ScaleKind kind, uint32_t bits) {
  switch (kind) {
    case ScaleKind::f32: return __uint_as_float(bits);
    case ScaleKind::ue8m0: return num::ue8m0_to_f32(static_cast<uint8_t>(bits));
    case ScaleKind::e4m3: return num::e4m3_to_f32(static_cast<uint8_t>(bits));
  }
  return 0.0f;
}

__device__ __forceinline__ float load_scale(const DequantParams& p, int64_t index TEJAS_CALLER_PARAM) {
  return decode_scale(p.scale_kind, load_scale_bits(p, index TEJAS_NESTED_SITE));
}

template <CodeFormat F>
__device__ __forceinline__ float decode_code(const uint8_t* bytes, int i) {
  if constexpr (F == CodeFormat::e4m3) return CodeTraits<F>::decode(bytes[i]);
  else return CodeTraits<F>::decode(static_cast<uint8_t>(bytes[i / 2] >> (kNibbleBits * (i % 2))));
}

// code * scale (* ts for nvfp4) rounded once to O. Written as a * b with a exact in f32: (code,
// scale), or (code * block_scale, ts) for nvfp4, whose e4m3 * e2m1 product is exact.
template <class O>
__device__ __forceinline__ typename O::Raw dequant_value(float code, float scale, float ts, bool nvfp4) {
  const float a = nvfp4 ? code * scale : code;
  const float b = nvfp4 ? ts : scale;
  if constexpr (O::kNarrow) return O::from_f32(mul_round_odd(a, b));
  else return O::from_f32(a * b);
}

// Two f32 products as O's pair (element a in the low half), each rounded once.
template <class O>
__device__ __forceinline__ uint32_t pack_pair(float a, float b) {
  if constexpr (std::is_same_v<O, Bf16>) return num::f32x2_to_bf16x2(a, b);
  else return num::f32x2_to_f16x2(a, b);
}

// Whether f32 products lie on bf16 rounding midpoints (low 16 bits 0x8000). An f32 product
// p = RN(x) that is not on a midpoint lies strictly on x's side of every midpoint (they are f32
// values and rounding is monotone), so rounding p to bf16 rounds x correctly; only p on a
// midpoint needs x's rounding to odd (mul_round_odd). A vector's products are judged together:
// each pair's low halves as one word of 16-bit lanes (one byte permute, one XOR), a lane 0 where
// its product is on a midpoint; the lanes' running minimum (num::min_u16x2) per vector; then
// one test (midpoint_hit).
__device__ __forceinline__ uint32_t midpoint_lanes_bf16(float a, float b) {
  return __byte_perm(num::f32_bits(a), num::f32_bits(b), 0x5410) ^ 0x80008000u;
}
// The same for f16 out: on f16's normal range an f32 value on a midpoint has low 13 bits 0x1000
// (f16 keeps 10 of f32's 23 fraction bits; the overflow midpoint 65520 too). In f16's subnormal
// range (0 < |p| < 2^-14) the midpoints are the odd multiples of 2^-25, at a bit position that
// depends on p's exponent, so every nonzero product there counts as on one (its vector rounds to
// odd per output: exact, just slower).
__device__ __forceinline__ uint32_t midpoint_lanes_f16(float a, float b) {
  constexpr uint32_t kF16MinNormalBits = 0x38800000u;  // 2^-14 as f32 bits
  const uint32_t ua = num::f32_bits(a), ub = num::f32_bits(b);
  const bool sub = (ua & 0x7FFFFFFFu) - 1u < kF16MinNormalBits - 1u || (ub & 0x7FFFFFFFu) - 1u < kF16MinNormalBits - 1u;
  return sub ? 0u : (__byte_perm(ua, ub, 0x5410) & 0x1FFF1FFFu) ^ 0x10001000u;
}
__device__ __forceinline__ bool midpoint_hit(uint32_t lanes_min) {
  return (lanes_min & 0xFFFFu) == 0 || (lanes_min >> 16) == 0;
}

// ---- dequantization, MX e2m1 to 16-bit out as packed pairs (config.fast_convert) --------------------
// A code's magnitude m (0-7) placed at the mantissa's top bit of a bf16 / f16 word, m << (kMant -
// 1), is the e2m1 value times 2^(1 - bias) exactly (m = 1 lands on the format's subnormal 2^-bias:
// e2m1's subnormal 0.5 continues its grid the same way). Two or three packed multiplies by powers
// of two then give value * 2^e rounded once: the first (2^a, a >= 0) is exact, and of the others
// exactly one rounds (to +-Inf or a subnormal where the result needs it; f16's third factor is
// 2^0 whenever its second rounds), as the f32 path's one conversion does. bf16: a + b = bias - 1 + e with 0 <= a <= 127. f16: e is first clamped to [-28, 17]
// (below, every result rounds to +-0; above, every nonzero one overflows, as they do unclamped),
// and 14 + e splits into 2^a * 2^b * 2^c, each within f16's exponents.
template <class O>
struct PackedMxOut {
  uint32_t m1 = 0, m2 = 0, m3 = 0;  // pairs of O's format (m3 for f16 only)
  bool nan = false;                  // ue8m0 0xFF: every output NaN
};
template <class O>
__device__ __forceinline__ PackedMxOut<O> packed_mx_out_scale(uint32_t code) {
  constexpr uint32_t kTwo = 0x00010001u;
  PackedMxOut<O> s;
  s.nan = code == kUe8m0NaN;
  const int e = static_cast<int>(code) - kUe8m0Bias;
  if constexpr (std::is_same_v<O, Bf16>) {
    const int t = 126 + e;  // -1 .. 253
    const int a = t < 0 ? 0 : (t > 127 ? 127 : t);
    s.m1 = (static_cast<uint32_t>(a + 127) << 7) * kTwo;
    s.m2 = (static_cast<uint32_t>(t - a + 127) << 7) * kTwo;
  } else {
    const int ec = e < -28 ? -28 : (e > 17 ? 17 : e);
    const int t = 14 + ec;  // -14 .. 31
    const int a = t < 0 ? 0 : (t > 15 ? 15 : t);
    const int b = t - a < 15 ? t - a : 15;  // -14 .. 15
    s.m1 = (static_cast<uint32_t>(a + 15) << 10) * kTwo;
    s.m2 = (static_cast<uint32_t>(b + 15) << 10) * kTwo;
    s.m3 = (static_cast<uint32_t>(t - a - b + 15) << 10) * kTwo;  // 2^0 or 2^1
  }
  return s;
}
// w: element 0's code in bits 0-3, element 1's in bits 16-19 (other bits ignored).
template <class O>
__device__ __forceinline__ uint32_t packed_mx_decode(uint32_t w, const PackedMxOut<O>& s) {
  constexpr int kMant = num::E2m1Pack<O>::kMant;
  uint32_t v = num::hmul2<O>((w & 0x00070007u) << (kMant - 1), s.m1);
  v = num::hmul2<O>(v, s.m2);
  if constexpr (!std::is_same_v<O, Bf16>) v = num::hmul2<O>(v, s.m3);
  return v | ((w & 0x00080008u) << 12);  // the sign: -0 for code 0x8, as the f32 path gives
}

// Pair i (0-3) of a word of eight e2m1 codes: element 2i's code in bits 0-3, element 2i + 1's in
// bits 16-19 (other bits ignored). The even and odd codes' nibbles are split once per word
// (EvenOdd), then one byte permute per pair.
struct EvenOdd {
  uint32_t ev, od;  // codes 0, 2, 4, 6 / 1, 3, 5, 7 in the low nibbles of their bytes
  __device__ __forceinline__ explicit EvenOdd(uint32_t codes) : ev(codes & 0x0F0F0F0Fu), od((codes >> 4) & 0x0F0F0F0Fu) {}
  __device__ __forceinline__ uint32_t pair(int i) const {
    return __byte_perm(ev, od, static_cast<uint32_t>(i | (i << 4) | ((4 + i) << 8) | ((4 + i) << 12)));
  }
};

// nvfp4 to bf16 as packed pairs: code * block_scale is exact in bf16 (at most 2 + 4 significant
// bits, within [2^-10, 2688]), so it is made as packed pairs like the MX path (the pattern times
// 2^126, then times the block scale), widened to f32 (a shift or a mask) and multiplied by the
// tensor scale in f32. That product p rounds once more to bf16, which is exact unless f32's
// rounding put p on a bf16 rounding midpoint (its low 16 bits 0x8000: it cannot step across
// one, a midpoint being an f32 value); the vector then takes mul_round_odd per output. Whether
// that happens depends on the tensor scale: the 16 codes times a block scale's mantissas give a
// fixed set of low bits, so for about 1 tensor scale in 5,000 (a host simulation) some
// combination lands on a midpoint, and every vector holding it takes the branch (tensor scales
// with few significant bits make exact ties, which take it harmlessly); for the others no vector
// does. Outputs equal the f32 path's bit for bit.
// w: element 0's code in bits 0-3, element 1's in bits 16-19 (other bits ignored); bs2 the
// block scale as a bf16 pair (its sign included). Returns code * block_scale of both (bf16 pair).
__device__ __forceinline__ uint32_t packed_nvfp4_products(uint32_t w, uint32_t bs2) {
  constexpr uint32_t kTwo126 = 0x7E807E80u;  // 2^126 in both lanes
  const uint32_t v = num::hmul2<Bf16>(num::hmul2<Bf16>((w & 0x00070007u) << 6, kTwo126), bs2);
  return v ^ ((w & 0x00080008u) << 12);  // XOR: a block scale code may be negative
}

// kPacked (config.fast_convert), 16-bit out, e2m1 codes: ue8m0 scales (version 4 of the MX
// path) or, with kNvfp4, e4m3 block scales and a tensor scale to bf16.
// kPacked, 16-bit out, e4m3 codes (version 3 of the fp8 path): codes decoded in pairs, the
// products packed in pairs (one cvt per two outputs), and mul_round_odd only where it can
// matter: never for ue8m0 scales (exact products); for f32 scales, only in a vector with a
// product on a midpoint of the output format (midpoint_lanes_bf16 / _f16: about 1 vector in
// 8,000 for a scale with a full mantissa, plus, for f16, vectors with a product in f16's
// subnormal range; exact ties take it harmlessly). NOTES: version 2 ran mul_round_odd on every
// output (a product, its fma residual, two compares and the fix-up: ~10 instructions per
// element, most on the ALU pipe) and one cvt per output.
// kLinear (config.linear): out's, q's and the scales' rows end to end and group / vec a power of
// two: a thread's flat vector index j alone places its outputs (j x vec), codes (j x code bytes)
// and scale (j >> group_shift), as quant_vec_kernel's GroupWalk<true> does for groups.
template <class O, CodeFormat F, bool kPacked = false, bool kNvfp4 = false, bool kLinear = false>
__global__ void __launch_bounds__(kThreads, kNvfp4 ? kDequantNvfp4MinCtas : 0) dequant_vec_kernel(DequantParams p) {
  dev::begin_dependent_grid();
  using S = typename O::Raw;
  constexpr int kVec = kVecBytes / static_cast<int>(sizeof(S));
  constexpr int kCodeBytes = F == CodeFormat::e4m3 ? kVec : kVec / 2;
  // Vectors per row: row_div's divisor (dequant_launch sets it to K / vec), the one source of it.
  const int64_t vecs_per_row = static_cast<int64_t>(p.row_div.d);
  const bool nvfp4 = p.scale_kind == ScaleKind::e4m3;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  // The thread's flat vector index j, as (row, vector in the row: < vecs_per_row < 2^31), from
  // one dev::fast_div; a grid-stride step moves it by stride's own split, the thread's whole
  // iteration (p.steps steps) by that of steps x stride, each with at most one carry.
  // NOTES: each step's j used to be split by a 64-bit fast_div, twice (in the loads' loop and
  // again in the stores'): with the offsets, ~65 of a step's ~100 SASS instructions (sm_90a,
  // mxfp4 to bf16) were index arithmetic, at 78 % of issue slots (ncu).
  struct Split {
    int64_t rows;
    int32_t vecs;
  };
  const auto split = [&](int64_t j) {
    const int64_t r = static_cast<int64_t>(dev::fast_div(static_cast<uint64_t>(j), p.row_div));
    return Split{r, static_cast<int32_t>(j - r * vecs_per_row)};
  };
  const int32_t row_vecs = static_cast<int32_t>(vecs_per_row);
  const int64_t first_j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t total_vecs = p.rows * vecs_per_row;  // kLinear's bound
  const Split first = kLinear ? Split{0, 0} : split(first_j);
  const Split step = kLinear ? Split{0, 0} : split(stride);
  const Split iteration = kLinear ? Split{0, 0} : split(stride * p.steps);
  int64_t row = first.rows;
  int32_t kv = first.vecs;
  int64_t j = first_j;  // kLinear: the walk itself
  const auto live = [&] { return kLinear ? j < total_vecs : row < p.rows; };
  const auto next = [&] {
    if constexpr (kLinear) j += stride * p.steps;
    else walk_advance(row, kv, iteration.rows, iteration.vecs, row_vecs);
  };
  // NOTES: a thread takes p.steps grid-stride steps at once (each step's warp request stays
  // contiguous) and issues all their code and scale loads before the first store, so each
  // thread has steps x (code bytes + scale) in flight instead of one step's.
  for (; live(); next()) {
    // f(st, row, k) for each of the thread's steps that lies in the tensor (k: its first column;
    // kLinear: row 0 and k the flat index of its first element, for rows laid end to end).
    const auto each_step = [&](auto&& f) {
      if constexpr (kLinear) {
        int64_t jj = j;
TEJAS_QUANT_UNROLL
        for (int st = 0; st < kMaxDequantSteps; ++st) {
          if (st < p.steps && jj < total_vecs) f(st, int64_t{0}, jj * kVec);
          jj += stride;
        }
      } else {
        int64_t r = row;
        int32_t v = kv;
TEJAS_QUANT_UNROLL
        for (int st = 0; st < kMaxDequantSteps; ++st) {
          if (st < p.steps && r < p.rows) f(st, r, static_cast<int64_t>(v) * kVec);
          if (st + 1 < kMaxDequantSteps) walk_advance(r, v, step.rows, step.vecs, row_vecs);
        }
      }
    };
    // The codes as loaded words, split into bytes only in the second loop. NOTES: as a byte array
    // (Bytes<N>) each word was split right after its load, and the split waited for the data
    // before the next step's loads (SASS, sm_90a).
    using CodeWord = typename num::AccessWord<kCodeBytes>::type;
    CodeWord codes[kMaxDequantSteps] = {};
    uint32_t scale_bits[kMaxDequantSteps] = {};
    each_step([&](int st, int64_t row, int64_t k) {
      // The group by dev::fast_div of the vector's index in its row (< 2^31). NOTES: `k / p.group`
      // (64-bit) compiled to ~25 instructions per step (a 32-bit reciprocal path beside a call),
      // as the row's division did.
      const int64_t g =
          kLinear ? (k / kVec) >> p.group_shift : dev::fast_div(static_cast<uint32_t>(k / kVec), p.group_div);
      scale_bits[st] = load_scale_bits(p, row * p.s_row_stride + g);
      codes[st] = ptx::ld_global_nc(
          reinterpret_cast<const CodeWord*>(p.q + row * p.q_row_stride_bytes + k * kCodeBytes / kVec));
    });
    if constexpr (kPacked && kNvfp4) {
      static_assert(std::is_same_v<O, Bf16> && F == CodeFormat::e2m1, "bf16 outputs of nvfp4 codes");
      const float ts = load_tensor_scale(p.tensor_scale);  // after the steps' loads
      each_step([&](int st, int64_t row, int64_t k) {
        // An e4m3 value is a bf16 value: its f32 bits' top half.
        const uint32_t bs2 = (num::f32_bits(num::e4m3_to_f32(static_cast<uint8_t>(scale_bits[st]))) >> 16) * 0x00010001u;
        const EvenOdd eo(codes[st]);
        uint32_t v[4];
        float prod[8];
        uint32_t key = ~0u;  // a lane 0 when some product's low 16 bits are 0x8000
TEJAS_QUANT_UNROLL
        for (int i = 0; i < 4; ++i) {
          v[i] = packed_nvfp4_products(eo.pair(i), bs2);
          prod[2 * i] = num::bits_f32(v[i] << 16) * ts;
          prod[2 * i + 1] = num::bits_f32(v[i] & 0xFFFF0000u) * ts;
          key = num::min_u16x2(key, midpoint_lanes_bf16(prod[2 * i], prod[2 * i + 1]));
        }
        uint32_t out[4];
        if (midpoint_hit(key)) {  // rare: round to odd, then to bf16 (dequant_value)
TEJAS_QUANT_UNROLL
          for (int i = 0; i < 4; ++i)
            out[i] = static_cast<uint32_t>(Bf16::from_f32(mul_round_odd(num::bits_f32(v[i] << 16), ts))) |
                     (static_cast<uint32_t>(Bf16::from_f32(mul_round_odd(num::bits_f32(v[i] & 0xFFFF0000u), ts))) << 16);
        } else {
TEJAS_QUANT_UNROLL
          for (int i = 0; i < 4; ++i) out[i] = pack_pair<Bf16>(prod[2 * i], prod[2 * i + 1]);
        }
        ptx::st_global_cs(reinterpret_cast<uint4*>(static_cast<S*>(p.out) + row * p.out_row_stride + k),
                          make_uint4(out[0], out[1], out[2], out[3]));
      });
      continue;
    } else if constexpr (kPacked && F == CodeFormat::e4m3) {
      static_assert(sizeof(S) == 2, "16-bit outputs of e4m3 codes");
      // ue8m0 scales: every product is exact in f32 (or +-Inf, as the exact one rounds), so
      // one rounding to O is the only one.
      const bool exact = p.scale_kind == ScaleKind::ue8m0;
      each_step([&](int st, int64_t row, int64_t k) {
        const float scale = decode_scale(p.scale_kind, scale_bits[st]);
        const uint32_t words[2] = {codes[st].x, codes[st].y};
        float prod[kVec];
        uint32_t key = ~0u;  // a lane 0 when some product is on a midpoint of O
TEJAS_QUANT_UNROLL
        for (int i = 0; i < kVec / 2; ++i) {
          const num::F32x2 c = num::e4m3x2_to_f32x2(static_cast<uint16_t>(words[i / 2] >> (16 * (i % 2))));
          prod[2 * i] = c.lo * scale;
          prod[2 * i + 1] = c.hi * scale;
          if constexpr (std::is_same_v<O, Bf16>) key = num::min_u16x2(key, midpoint_lanes_bf16(prod[2 * i], prod[2 * i + 1]));
          else key = num::min_u16x2(key, midpoint_lanes_f16(prod[2 * i], prod[2 * i + 1]));
        }
        uint32_t out[kVec / 2];
        if (!exact && midpoint_hit(key)) {  // rare: as dequant_value
TEJAS_QUANT_UNROLL
          for (int i = 0; i < kVec; ++i) {
            const S o = O::from_f32(mul_round_odd(decode_code<F>(reinterpret_cast<const uint8_t*>(words), i), scale));
            if (i % 2 == 0) out[i / 2] = o;
            else out[i / 2] |= static_cast<uint32_t>(o) << 16;
          }
        } else {
TEJAS_QUANT_UNROLL
          for (int i = 0; i < kVec / 2; ++i) out[i] = pack_pair<O>(prod[2 * i], prod[2 * i + 1]);
        }
        ptx::st_global_cs(reinterpret_cast<uint4*>(static_cast<S*>(p.out) + row * p.out_row_stride + k),
                          make_uint4(out[0], out[1], out[2], out[3]));
      });
      continue;
    } else if constexpr (kPacked) {
      static_assert(sizeof(S) == 2 && F == CodeFormat::e2m1, "16-bit outputs of e2m1 codes");
      each_step([&](int st, int64_t row, int64_t k) {
        const PackedMxOut<O> ms = packed_mx_out_scale<O>(scale_bits[st]);
        const EvenOdd eo(codes[st]);
        uint32_t out[4];
TEJAS_QUANT_UNROLL
        for (int i = 0; i < 4; ++i) out[i] = packed_mx_decode<O>(eo.pair(i), ms);
        // NOTES: selected per word after all four are decoded; with the NaN test inside the loop
        // (`ms.nan ? NaN : decode`) nvcc branched around each word's decode and recomputed the
        // scale factors in every branch (SASS sm_90a).
        if (ms.nan) out[0] = out[1] = out[2] = out[3] = kNaNPair16;
        ptx::st_global_cs(reinterpret_cast<uint4*>(static_cast<S*>(p.out) + row * p.out_row_stride + k),
                          make_uint4(out[0], out[1], out[2], out[3]));
      });
      continue;
    }
    // nvfp4's tensor scale after the steps' loads (as in quant_vec_kernel: loaded first, the
    // bf16 / f16 e2m1 kernels waited for it before their first code load).
    const float ts = load_tensor_scale(p.tensor_scale);
    each_step([&](int st, int64_t row, int64_t k) {
      const float scale = decode_scale(p.scale_kind, scale_bits[st]);
      Bytes<kCodeBytes> bytes;
      memcpy(bytes.b, &codes[st], kCodeBytes);
      S out[kVec];
TEJAS_QUANT_UNROLL
      for (int i = 0; i < kVec; ++i) out[i] = dequant_value<O>(decode_code<F>(bytes.b, i), scale, ts, nvfp4);
      uint4 packed;
      memcpy(&packed, out, sizeof(packed));
      ptx::st_global_cs(reinterpret_cast<uint4*>(static_cast<S*>(p.out) + row * p.out_row_stride + k), packed);
    });
  }
}

template <class O, CodeFormat F>
__global__ void __launch_bounds__(kThreads) dequant_generic_kernel(DequantParams p) {
  dev::begin_dependent_grid();
  using S = typename O::Raw;
  constexpr int kPer = F == CodeFormat::e4m3 ? 1 : 2;  // elements per code byte
  const int64_t bytes_per_row = p.K / kPer;
  const int64_t total = p.rows * bytes_per_row;
  const float ts = load_tensor_scale(p.tensor_scale);
  const bool nvfp4 = p.scale_kind == ScaleKind::e4m3;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < total; j += stride) {
    const int64_t row = j / bytes_per_row, kb = j % bytes_per_row;
    const uint8_t byte = ptx::ld_global_nc(p.q + row * p.q_row_stride_bytes + kb);
    S* out = static_cast<S*>(p.out) + row * p.out_row_stride + kb * kPer;
TEJAS_QUANT_UNROLL
    for (int i = 0; i < kPer; ++i) {
      const int64_t k = kb * kPer + i;
      const float scale = load_scale(p, row * p.s_row_stride + k / p.group);
      ptx::st_global_cs(out + i, dequant_value<O>(decode_code<F>(&byte, i), scale, ts, nvfp4));
    }
  }
}

}  // inline namespace TEJAS_BUILD_NS
}  // namespace tejas::quant_kernel
