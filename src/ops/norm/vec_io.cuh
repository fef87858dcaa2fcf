// Vector loads and stores of bf16 / f16 / f32 / e4m3 elements as floats, through the device
// layer's ld/st wrappers. An access of N elements is one instruction of N * element-size bytes
// (split into 16-byte pieces if wider, which the configs never ask for). Each takes its caller's
// site (TEJAS_CALLER_PARAM, device/prelude.h): under emulation every call is its own request site,
// as every inlined call is its own instruction on the GPU.
#pragma once
#include "device/numeric/convert.h"
#include "device/numeric/exact_round.h"  // num::kF32Max
#include "device/numeric/storage.h"  // num::AccessWord
#include "device/prelude.h"
#include "device/ptx/ld_st.h"
#include "tejas/dtype.h"

#include <cstring>

namespace tejas::norm {
inline namespace TEJAS_BUILD_NS {  // nvcc and emulator builds apart (device/prelude.h)

inline constexpr int kMaxAccessBytes = 16;
using num::kF32Max;  // FLT_MAX

template <DType D>
inline constexpr int kElemBytes = dtype_bits(D) / 8;

template <DType D>
__device__ __forceinline__ float decode(const unsigned char* b) {
  if constexpr (D == DType::f32) {
    float f;
    memcpy(&f, b, sizeof f);
    return f;
  } else {
    uint16_t c;
    memcpy(&c, b, sizeof c);
    if constexpr (D == DType::bf16) return num::bf16_to_f32(c);
    else return num::f16_to_f32(c);
  }
}

template <DType D>
__device__ __forceinline__ void encode(float f, unsigned char* b) {
  if constexpr (D == DType::f32) {
    memcpy(b, &f, sizeof f);
  } else if constexpr (D == DType::e4m3) {
    *b = num::f32_to_e4m3(f);
  } else {
    const uint16_t c = D == DType::bf16 ? num::f32_to_bf16(f) : num::f32_to_f16(f);
    memcpy(b, &c, sizeof c);
  }
}

// The registers of one N-element access of dtype D as loaded (16-byte pieces if wider); stores
// go through the same layout.
// NOTES: a kernel with several accesses in flight loads them all raw first and decodes after:
// a decode next to its load lands in the load's basic block (the loads sit behind `if (j <
// nvec)` guards), ptxas keeps it there, and the thread then waits for that load before it
// issues the next one (SASS, sm_90a; docs/kernels/rms_norm.md).
template <DType D, int N>
struct RawVec {
  static constexpr int kBytes = N * kElemBytes<D>;
  static constexpr int kPiece = kBytes < kMaxAccessBytes ? kBytes : kMaxAccessBytes;
  using Chunk = typename num::AccessWord<kPiece>::type;
  Chunk c[kBytes / kPiece];
};

// Loads N elements of dtype D at p (aligned to the access size) into r, undecoded.
// kReadOnly: ld.global.nc (data nobody writes during the launch).
template <DType D, int N, bool kReadOnly>
__device__ __forceinline__ void load_raw(const void* p, RawVec<D, N>& r TEJAS_CALLER_PARAM) {
  using R = RawVec<D, N>;
#pragma unroll
  for (int i = 0; i < R::kBytes / R::kPiece; ++i) {
    const typename R::Chunk* cp = static_cast<const typename R::Chunk*>(p) + i;
    r.c[i] = kReadOnly ? ptx::ld_global_nc(cp TEJAS_NESTED_SITE) : ptx::ld_global(cp TEJAS_NESTED_SITE);
  }
}

template <DType D, int N>
__device__ __forceinline__ void decode_raw(const RawVec<D, N>& r, float (&f)[N]) {
  unsigned char b[RawVec<D, N>::kBytes];
  memcpy(b, r.c, sizeof b);
#pragma unroll
  for (int e = 0; e < N; ++e) f[e] = decode<D>(b + e * kElemBytes<D>);
}

template <DType D, int N>
__device__ __forceinline__ void store_typed(void* p, const float (&f)[N] TEJAS_CALLER_PARAM) {
  using R = RawVec<D, N>;
  unsigned char b[R::kBytes];
#pragma unroll
  for (int e = 0; e < N; ++e) encode<D>(f[e], b + e * kElemBytes<D>);
  R r;
  memcpy(r.c, b, sizeof b);
#pragma unroll
  for (int i = 0; i < R::kBytes / R::kPiece; ++i)
    ptx::st_global(static_cast<typename R::Chunk*>(p) + i, r.c[i] TEJAS_NESTED_SITE);
}

// Runtime-dtype store for the arguments whose dtype is not a template parameter (residual:
// bf16, f16 or f32; also e4m3). A uniform branch per access.
template <int N>
__device__ __forceinline__ void store_any(void* p, DType d, const float (&f)[N] TEJAS_CALLER_PARAM) {
  if (d == DType::f32) store_typed<DType::f32, N>(p, f TEJAS_NESTED_SITE);
  else if (d == DType::bf16) store_typed<DType::bf16, N>(p, f TEJAS_NESTED_SITE);
  else if (d == DType::f16) store_typed<DType::f16, N>(p, f TEJAS_NESTED_SITE);
  else store_typed<DType::e4m3, N>(p, f TEJAS_NESTED_SITE);
}

// N elements of a runtime dtype (bf16, f16 or f32) as loaded: room for f32's bytes; bf16 and
// f16 use the first half (the same access for both).
template <int N>
struct RawAny {
  RawVec<DType::f32, N> w;
};

// kZeroExtend (one element): the 16-bit value fills its word zero-extended instead of being
// merged into it (see below); for the row's items, not its tail, where the merge costs nothing
// (the tail is loaded last) and the zero-extension cost registers elsewhere (vec 4: 2 bytes
// of spill).
template <int N, bool kReadOnly = false, bool kZeroExtend = false>
__device__ __forceinline__ void load_raw_any(const void* p, DType d, RawAny<N>& r TEJAS_CALLER_PARAM) {
  if (d == DType::f32) {
    load_raw<DType::f32, N, kReadOnly>(p, r.w TEJAS_NESTED_SITE);
  } else {
    RawVec<DType::bf16, N> h;
    load_raw<DType::bf16, N, kReadOnly>(p, h TEJAS_NESTED_SITE);
    // NOTES: one element is 2 of the word's 4 bytes; copied in with memcpy it was merged into the
    // word's old upper half, and the merge waited for the load (SASS). Zero-extended, it is the
    // loaded register as is.
    if constexpr (N == 1 && kZeroExtend) r.w.c[0] = h.c[0];
    else memcpy(&r.w, &h, sizeof h);
  }
}

template <int N>
__device__ __forceinline__ void decode_any(DType d, const RawAny<N>& r, float (&f)[N]) {
  if (d == DType::f32) {
    decode_raw(r.w, f);
    return;
  }
  RawVec<DType::bf16, N> h;
  memcpy(&h, &r.w, sizeof h);
  if (d == DType::bf16) {
    decode_raw(h, f);
  } else {
    RawVec<DType::f16, N> g;
    memcpy(&g, &h, sizeof g);
    decode_raw(g, f);
  }
}

// The value `f` takes once stored in dtype d (bf16, f16 or f32).
__device__ __forceinline__ float round_to(DType d, float f) {
  if (d == DType::bf16) return num::bf16_to_f32(num::f32_to_bf16(f));
  if (d == DType::f16) return num::f16_to_f32(num::f32_to_f16(f));
  return f;
}

// a + b as an f32 that rounds (to nearest even) to the correctly rounded sum in a format of at
// most 11 significant bits (bf16, f16): the sum rounded to odd. Round-to-odd at p >= q + 2 bits
// followed by round-to-nearest at q bits equals one direct rounding; a plain f32 sum could round
// twice wrongly when an f32 x meets a narrow residual. TwoSum gives the exact error.
__device__ __forceinline__ float add_round_to_odd(float a, float b) {
  const float s = a + b;
  const float bb = s - a;
  const float err = (a - (s - bb)) + (b - bb);
  if (err == 0.0f || !(fabsf(s) <= kF32Max)) return s;  // exact, or Inf / NaN: nothing to fix
  uint32_t bits;
  memcpy(&bits, &s, sizeof bits);
  if ((err < 0.0f) != (s < 0.0f)) bits -= 1;  // |a + b| < |s|: truncation is one step toward 0
  bits |= 1u;
  float r;
  memcpy(&r, &bits, sizeof r);
  return r;
}

}  // inline namespace TEJAS_BUILD_NS
}  // namespace tejas::norm
