// silu_mul_quant_fp8_group / silu_mul_quant_mx kernel: y = silu_mul(x) in f32 registers,
// clamped to x's largest finite value, then quantized per group with the rules of
// quant_fp8_group / quant_mx (tejas/quant.h). A lane owns kQuantElems consecutive elements of
// a row (one 16-byte load of gate, one of up); the group's lanes (group / kQuantElems,
// aligned within the warp) reduce their amax with xor shuffles, so the row's values stay in
// registers between the reduction and the quantized store: x is read once, q and scales are
// written once.
#pragma once
#include <cstring>

#include "device/prelude.h"
#include "device/grid_dependency.h"
#include "device/numeric/packed_half.h"
#include "device/ptx/ld_st.h"
#include "device/ptx/minmax.h"
#include "device/reduce.cuh"
#include "ops/activation/act_math.cuh"
#include "ops/activation/config.h"
#include "ops/quant/quant_math.h"

namespace tejas::act {
inline namespace TEJAS_BUILD_NS {

inline constexpr float kE4m3MaxF = 448.0f;
inline constexpr float kE2m1MaxF = 6.0f;
inline constexpr int kE2m1Emax = 2;           // floor(log2(6)): OCP emax of e2m1
inline constexpr int kF32ExpShift = 23;       // f32 exponent field position
inline constexpr uint32_t kF32ExpMask = 0xFF;
inline constexpr uint8_t kUe8m0NaN = 0xFF;
inline constexpr uint8_t kE4m3NaN = 0x7F;
inline constexpr uint8_t kE2m1NaNPair = 0x77;  // two +6 codes: e2m1 has no NaN (tejas/quant.h)
inline constexpr uint32_t kF32QuietNaN = 0x7FC00000u;

struct QuantParams {
  const void* x;              // [T, 2F] bf16/f16 (gate | up), row stride x_stride elements
  void* q;                    // [T, F] e4m3 bytes or e2m1 nibble pairs; row stride q_stride_bytes
  void* scales;               // [T, F / group] f32, ue8m0 or e4m3; row stride scale_stride elements
  const float* tensor_scale;  // [1] nvfp4 only; null otherwise
  int64_t T, F;
  int64_t x_stride, q_stride_bytes, scale_stride;
  int threads_per_row;        // power of two, a multiple of lanes_per_group
  int lanes_per_group;        // group / kQuantElems: 16, 4 or 2
  QuantKind kind;
  ActOptions options;
};


// Loads kQuantElems gate and up values of one lane. The helpers take their caller's site
// (TEJAS_CALLER_PARAM, device/prelude.h): each call is its own request site under emulation.
// kClampPairs (the fast kernels): on the 16-byte path, clamped SwiGLU's clamps on the loaded
// words (act_math.cuh's clamp_pairs) where o allows; returns whether they were applied.
template <class S, bool kVec, bool kClampPairs = false>
__device__ __forceinline__ bool load_lane(const typename S::Raw* gate, const typename S::Raw* up, float (&g)[kQuantElems],
                                          float (&u)[kQuantElems], const ActOptions& o TEJAS_CALLER_PARAM) {
  if constexpr (kVec) {
    const uint4 gv = ptx::ld_global_nc(reinterpret_cast<const uint4*>(gate) TEJAS_NESTED_SITE);
    const uint4 uv = ptx::ld_global_nc(reinterpret_cast<const uint4*>(up) TEJAS_NESTED_SITE);
    static_assert(sizeof(gv) == kQuantElems * sizeof(typename S::Raw), "one 16-byte access per lane");
    uint32_t gw[4], uw[4];
    memcpy(gw, &gv, sizeof(gv));
    memcpy(uw, &uv, sizeof(uv));
    bool clamped = false;
    if constexpr (kClampPairs) clamped = clamp_pairs<S>(gw, uw, o);
    for (int k = 0; k < kQuantElems / 2; ++k) {  // both lanes of a word at once
      const num::F32x2 gp = S::to_f32x2(gw[k]), upair = S::to_f32x2(uw[k]);
      g[2 * k] = gp.lo;
      g[2 * k + 1] = gp.hi;
      u[2 * k] = upair.lo;
      u[2 * k + 1] = upair.hi;
    }
    return clamped;
  } else {
    for (int i = 0; i < kQuantElems; ++i) g[i] = S::to_f32(ptx::ld_global_nc(gate + i TEJAS_NESTED_SITE));
    for (int i = 0; i < kQuantElems; ++i) u[i] = S::to_f32(ptx::ld_global_nc(up + i TEJAS_NESTED_SITE));
    return false;
  }
}

// Stores kBytes code bytes of one lane.
template <int kBytes, bool kVec>
__device__ __forceinline__ void store_codes(uint8_t* dst, const uint8_t (&codes)[kBytes] TEJAS_CALLER_PARAM) {
  if constexpr (kVec) {
    using V = typename num::AccessWord<kBytes>::type;
    V v;
    memcpy(&v, codes, kBytes);
    ptx::st_global_cs(reinterpret_cast<V*>(dst), v TEJAS_NESTED_SITE);
  } else {
    for (int i = 0; i < kBytes; ++i) ptx::st_global_cs(dst + i, codes[i] TEJAS_NESTED_SITE);
  }
}

// The group's scale (stored by its first lane) and this lane's codes, fp8 group rules. One store
// site per scale kind, NaN groups included (as quantize_fp4's): a warp holding a NaN group and a
// finite one stores its scales in one request.
template <bool kVec>
__device__ __forceinline__ void quantize_fp8(const QuantParams& p, const float (&y)[kQuantElems], float amax,
                                             uint8_t* q, void* scale_slot, bool writes_scale TEJAS_CALLER_PARAM) {
  uint8_t codes[kQuantElems];
  const bool nan_group = amax != amax;
  // Rounding is monotonic: f32(max(amax, m) / 448) = max(f32(amax / 448), f32(m / 448)). A NaN
  // amax gives kFp8MinScale (fmaxf drops the NaN): inv stays finite; the NaN group's scale and
  // codes are NaN below.
  const float s = fmaxf(amax / kE4m3MaxF, kFp8MinScale);
  // y * (1 / s): exact for ue8m0 scales, within ~1.5 f32 ulps of y / s for f32 scales
  // (s >= kFp8MinScale ~ 2^-42: 1 / s is normal) - far inside the 2^-15 tie window of the
  // accuracy rule (docs/kernels/silu_mul_quant.md). NOTES: an f32 division per element is ~10
  // instructions with a slow-path call.
  float inv;
  if (p.kind == QuantKind::fp8_ue8m0) {
    const uint8_t code = num::f32_to_ue8m0(s);  // rounds up: never saturates
    // 1 / 2^(code - 127) = 2^(127 - code) (quant's pow2f: the f32 bits), a normal number, since
    // kFp8MinScale <= s <= (x's largest value) / 448 puts code in [85, 247]. NOTES: computed as
    // 1.0f / ue8m0_to_f32(code), the same value took an f32 division (SASS sm_90a).
    inv = quant_kernel::pow2f(num::kF32Bias - code);
    // uint8_t{...}: a copy of kUe8m0NaN, no ODR-use on device
    if (writes_scale)
      ptx::st_global(static_cast<uint8_t*>(scale_slot), nan_group ? uint8_t{kUe8m0NaN} : code TEJAS_NESTED_SITE);
  } else {
    inv = 1.0f / s;
    if (writes_scale)
      ptx::st_global(static_cast<float*>(scale_slot), nan_group ? __uint_as_float(kF32QuietNaN) : s TEJAS_NESTED_SITE);
  }
  if (nan_group) {
    for (int i = 0; i < kQuantElems; ++i) codes[i] = kE4m3NaN;
  } else {
    for (int i = 0; i < kQuantElems; i += 2) {
      const uint16_t pair = num::f32x2_to_e4m3x2(y[i] * inv, y[i + 1] * inv);
      codes[i] = static_cast<uint8_t>(pair);
      codes[i + 1] = static_cast<uint8_t>(pair >> 8);
    }
  }
  store_codes<kQuantElems, kVec>(q, codes TEJAS_NESTED_SITE);
}

// The block's scale and this lane's e2m1 codes, mxfp4 / nvfp4 rules. kPacked (the
// activation.packed_fp4 default): the codes in pairs through bf16 rounded to odd
// (num::f32x2_to_e2m1_lanes, src/device/numeric/packed_half.h; the same codes, about 40 % fewer
// integer-pipe instructions than the f32 conversion, which ncu showed saturated).
template <bool kVec, bool kPacked>
__device__ __forceinline__ void quantize_fp4(const QuantParams& p, const float (&y)[kQuantElems], float amax, float ts,
                                             uint8_t* q, uint8_t* scale_slot, bool writes_scale TEJAS_CALLER_PARAM) {
  constexpr int kBytes = kQuantElems / 2;
  uint8_t codes[kBytes];
  uint8_t scale_code;
  // y * inv, inv = 1 / the block's scale: exact for MX (a power of two 2^e, e in [-127, 125]
  // with y saturated to x's largest finite value, whose inverse is normal); within ~1.5 f32
  // ulps for nvfp4 (tensor_scale in [2^-64, 2^64] keeps 1 / divisor normal). 0: every code of
  // the block is +0 (nvfp4's block scale 0).
  float inv = 0.0f;
  if (amax != amax) {
    scale_code = p.kind == QuantKind::mxfp4 ? kUe8m0NaN : kE4m3NaN;
  } else if (p.kind == QuantKind::mxfp4) {
    // X = 2^(floor(log2 amax) - 2), exponent clamped at -127: code = max(biased exp - 2, 0)
    // (subnormal or zero amax has biased exponent 0). X = 1 / 2^-e (2^-127 is an f32
    // subnormal); y / X is exact.
    const int biased = static_cast<int>((__float_as_uint(amax) >> kF32ExpShift) & kF32ExpMask);
    scale_code = static_cast<uint8_t>(biased > kE2m1Emax ? biased - kE2m1Emax : 0);
    // 1 / X = 2^(127 - code) (pow2f), normal (code <= 252). NOTES: as
    // 1.0f / (1.0f / that), the same value, it took two f32 divisions per lane and chunk.
    inv = quant_kernel::pow2f(num::kF32Bias - scale_code);
  } else {
    scale_code = num::f32_to_e4m3(amax / (kE2m1MaxF * ts));
    const float divisor = num::e4m3_to_f32(scale_code) * ts;
    inv = divisor == 0.0f ? 0.0f : 1.0f / divisor;
  }
  if (amax != amax) {
    for (int i = 0; i < kBytes; ++i) codes[i] = kE2m1NaNPair;
  } else {
    if constexpr (kPacked) {
      static_assert(kBytes == 4, "eight codes: one word");
      uint32_t lanes[kBytes];
      for (int i = 0; i < kBytes; ++i) lanes[i] = num::f32x2_to_e2m1_lanes(y[2 * i] * inv, y[2 * i + 1] * inv);
      const uint32_t word = inv == 0.0f ? 0u : num::pack_e2m1_lanes(lanes[0], lanes[1], lanes[2], lanes[3]);
      memcpy(codes, &word, sizeof(word));
    } else {
      for (int i = 0; i < kBytes; ++i)
        codes[i] = inv == 0.0f ? 0 : num::f32x2_to_e2m1x2(y[2 * i] * inv, y[2 * i + 1] * inv);
    }
  }
  if (writes_scale) ptx::st_global(scale_slot, scale_code TEJAS_NESTED_SITE);
  store_codes<kBytes, kVec>(q, codes TEJAS_NESTED_SITE);
}

// S: Bf16 or F16; kVec: 16-byte x loads and whole-lane q stores (config.h); kFast: the
// activation.fast_math_quant variant's sigmoid (act_math.cuh: <= ~1.2e-5 relative error in y,
// below the tie band the codes are judged with); kPacked: the packed e2m1 conversion
// (activation.packed_fp4; quantize_fp4).
template <class S, bool kVec, bool kFast = false, bool kPacked = false>
__global__ void __launch_bounds__(kThreads) silu_quant_kernel(QuantParams p) {
  dev::begin_dependent_grid();
  using Raw = typename S::Raw;
  // threads_per_row is a power of two (config.cpp): shifts, not two 32-bit divisions (~15 SASS
  // instructions each) per thread.
  const int row_shift = __ffs(p.threads_per_row) - 1;
  const int lane = static_cast<int>(threadIdx.x) & (p.threads_per_row - 1);
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x >> row_shift) + (threadIdx.x >> row_shift);
  const bool row_active = row < p.T;
  const bool fp4 = p.kind == QuantKind::mxfp4 || p.kind == QuantKind::nvfp4;
  const int64_t chunks = p.F / kQuantElems;
  const int64_t step = static_cast<int64_t>(gridDim.y) * p.threads_per_row;
  // A chunk's group: lanes_per_group is a power of two (config.cpp). NOTES: as `c /
  // p.lanes_per_group` and `%` (64-bit) every chunk paid ~25 instructions (a 32-bit reciprocal
  // path beside a division call; SASS sm_90a).
  const int group_shift = __ffs(p.lanes_per_group) - 1;
  // Every lane of the block runs the same iterations (the shuffles need the whole warp);
  // lanes past the row's end or the last row only skip the memory accesses.
  for (int64_t c0 = static_cast<int64_t>(blockIdx.y) * p.threads_per_row; c0 < chunks; c0 += step) {
    const int64_t c = c0 + lane;
    const bool active = row_active && c < chunks;
    float y[kQuantElems] = {};  // set where active, read only there (GCC cannot tell)
    float amax = 0.0f;
    float ts = 1.0f;  // nvfp4 only
    if (active) {
      const Raw* gate = static_cast<const Raw*>(p.x) + row * p.x_stride + c * kQuantElems;
      float g[kQuantElems], u[kQuantElems], v[kQuantElems];
      const bool clamped = load_lane<S, kVec, kFast>(gate, gate + p.F, g, u, p.options);
      // nvfp4's tensor scale, issued with the gate / up loads. NOTES: loaded where it is used,
      // after the amax shuffles, it cost the chunk a second trip (an L1 hit but for an SM's
      // first warps).
      if (p.kind == QuantKind::nvfp4) ts = ptx::ld_global_nc(p.tensor_scale);
      if constexpr (kFast) {
        const auto in = [&](int i, float& gi, float& ui) {
          gi = g[i];
          ui = u[i];
        };
        const auto out = [&](int k, float v0, float v1) {
          v[2 * k] = v0;
          v[2 * k + 1] = v1;
        };
        if (clamped) gated_fast<Act::silu, false, kQuantElems>(in, out, p.options);
        else gated_fast<Act::silu, true, kQuantElems>(in, out, p.options);
      } else {
        for (int i = 0; i < kQuantElems; ++i) v[i] = gated<Act::silu>(g[i], u[i], p.options);
      }
      for (int i = 0; i < kQuantElems; ++i) {
        // Beyond x's range (Inf included) counts as x's largest finite value (quant rules): a
        // clamp by max / min.NaN (NaN stays NaN, -0 stays -0), two instructions where the
        // compare, copysign and select took three (sm_90a).
        y[i] = ptx::min_nan_f32(ptx::max_nan_f32(v[i], -S::kMaxFinite), S::kMaxFinite);
        amax = ptx::max_nan_f32(amax, fabsf(y[i]));
      }
    }
    for (int offset = p.lanes_per_group / 2; offset > 0; offset >>= 1)
      amax = ptx::max_nan_f32(amax, __shfl_xor_sync(dev::kFullWarpMask, amax, offset));
    if (!active) continue;
    const int64_t group = c >> group_shift;
    const bool writes_scale = (c & (p.lanes_per_group - 1)) == 0;
    uint8_t* q = static_cast<uint8_t*>(p.q) + row * p.q_stride_bytes + c * (fp4 ? kQuantElems / 2 : kQuantElems);
    if (fp4) {
      quantize_fp4<kVec, kPacked>(p, y, amax, ts, q, static_cast<uint8_t*>(p.scales) + row * p.scale_stride + group,
                         writes_scale);
    } else {
      const int scale_bytes = p.kind == QuantKind::fp8_f32 ? 4 : 1;
      void* slot = static_cast<uint8_t*>(p.scales) + (row * p.scale_stride + group) * scale_bytes;
      quantize_fp8<kVec>(p, y, amax, q, slot, writes_scale);
    }
  }
}

}  // namespace TEJAS_BUILD_NS
}  // namespace tejas::act
