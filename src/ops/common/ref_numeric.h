// Reference numerics: every dtype's value set, in float64, written from the format definitions
// (not from the CUDA headers), so that the device conversions can be checked against it.
//
// encode(): round to nearest, ties to even.
//   f16, bf16: IEEE overflow to +-Inf; NaN stays NaN.
//   e4m3 (fn), e5m2, e2m1: saturate to +-max finite (the SATFINITE rule of cvt); NaN -> the
//     format's NaN code (e4m3 0x7F, e5m2 0x7E, sign kept); e2m1 has no NaN: NaN -> 0x7 (+6)
//     [quant ops propagate NaN through their scales instead].
//   ue8m0: rounds *up* to a power of two (scales must not make values saturate); values at or
//     below 2^-127 -> 0x00; above 2^127 -> 0xFE; NaN -> 0xFF.
//   integers: round to nearest (ties to even), saturate to the type's range; NaN -> 0.
#pragma once
#include <cstdint>

#include "tejas/tensor.h"

namespace tejas::ref {

double decode(DType t, uint64_t bits);
uint64_t encode(DType t, double x);
// Rounds x to the nearest value of dtype t (encode then decode).
inline double round_to(DType t, double x) { return decode(t, encode(t, x)); }

// Largest finite value of a float dtype (f64: DBL_MAX).
double max_finite(DType t);

// Element access by multi-index on a host tensor of any dtype (fp4 nibbles included).
double load(const TensorView& t, const int64_t* idx);
void store(const TensorView& t, const int64_t* idx, double v);  // encode() rules
uint64_t load_bits(const TensorView& t, const int64_t* idx);
void store_bits(const TensorView& t, const int64_t* idx, uint64_t bits);

// Convenience for 1-4 dims.
inline double at(const TensorView& t, int64_t i0) { int64_t i[] = {i0}; return load(t, i); }
inline double at(const TensorView& t, int64_t i0, int64_t i1) { int64_t i[] = {i0, i1}; return load(t, i); }
inline double at(const TensorView& t, int64_t i0, int64_t i1, int64_t i2) { int64_t i[] = {i0, i1, i2}; return load(t, i); }
inline double at(const TensorView& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  int64_t i[] = {i0, i1, i2, i3};
  return load(t, i);
}
inline void put(const TensorView& t, int64_t i0, double v) { int64_t i[] = {i0}; store(t, i, v); }
inline void put(const TensorView& t, int64_t i0, int64_t i1, double v) { int64_t i[] = {i0, i1}; store(t, i, v); }
inline void put(const TensorView& t, int64_t i0, int64_t i1, int64_t i2, double v) {
  int64_t i[] = {i0, i1, i2};
  store(t, i, v);
}
inline void put(const TensorView& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3, double v) {
  int64_t i[] = {i0, i1, i2, i3};
  store(t, i, v);
}

}  // namespace tejas::ref
