// Layout checks the shared Validator does not offer yet (used by the norm, rope and activation
// ops). Candidates for src/runtime/validate.h: Validator::distinct_elements and an
// element-size alignment rule.
#pragma once
#include <cstdint>
#include <utility>

#include "tejas/tensor.h"

namespace tejas::detail {

// True when no two indices of `t` address the same element, so that writing `t` is free of
// self-aliasing (an output with a token stride of 0 would be written T times per element).
// Rule: with the dimensions of size > 1 sorted by stride, each stride exceeds the furthest
// offset reachable through the smaller-stride dimensions. Sufficient, not necessary: exotic
// interleavings that happen to be disjoint are rejected too. Expects non-negative strides.
inline bool elements_distinct(const TensorView& t) {
  int dims[kMaxDims];
  int n = 0;
  for (int d = 0; d < t.ndim; ++d)
    if (t.shape[d] > 1) dims[n++] = d;
  // Insertion sort by stride (at most kMaxDims entries; std::sort trips GCC 12's -Warray-bounds).
  for (int i = 1; i < n; ++i)
    for (int j = i; j > 0 && t.stride[dims[j]] < t.stride[dims[j - 1]]; --j) std::swap(dims[j], dims[j - 1]);
  int64_t reach = 0;  // furthest element offset reachable through the dimensions seen so far
  for (int k = 0; k < n; ++k) {
    const int d = dims[k];
    if (t.stride[d] <= reach) return false;
    reach += (t.shape[d] - 1) * t.stride[d];
  }
  return true;
}

// Bytes of one element (>= 1; used for the "aligned to its element size" rule).
inline int element_bytes(const TensorView& t) {
  const int bytes = dtype_bits(t.dtype) / 8;
  return bytes > 0 ? bytes : 1;
}

}  // namespace tejas::detail
