// Validation rules shared by the attention ops that the generic Validator does not offer.
// Messages keep the "<op>: <argument>: expected ..., got ..." form.
#pragma once
#include <utility>
#include <cmath>
#include <sstream>
#include <string>

#include "runtime/validate.h"
#include "tejas/tensor.h"

namespace tejas::attn {

// Shortest round-trip-ish text for a parameter value in a message ("nan", "-inf", "0.125").
inline std::string format_value(double x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

// True when no two in-bounds indices address the same element. Sorted by stride, each
// dimension's stride must clear the span of all smaller-stride dimensions (sufficient, and
// exact for every layout built from padding or slicing). Assumes strides >= 0.
inline bool layout_non_overlapping(const TensorView& t) {
  int dims[kMaxDims];
  int n = 0;
  for (int d = 0; d < t.ndim; ++d)
    if (t.shape[d] > 1) dims[n++] = d;
  // Insertion sort by stride (at most kMaxDims entries; std::sort trips GCC's -Warray-bounds).
  for (int i = 1; i < n; ++i)
    for (int k = i; k > 0 && t.stride[dims[k]] < t.stride[dims[k - 1]]; --k) std::swap(dims[k], dims[k - 1]);
  int64_t span = 0;  // largest offset reachable through the dimensions seen so far
  for (int i = 0; i < n; ++i) {
    const int d = dims[i];
    if (t.stride[d] <= span) return false;
    span += t.stride[d] * (t.shape[d] - 1);
  }
  return true;
}

// An output must not write one element twice (a zero or too-small stride would race on the GPU).
inline void require_no_self_overlap(detail::Validator& v, const TensorView& t, const char* name) {
  if (!v.ok() || !t.defined()) return;
  v.require(layout_non_overlapping(t), std::string(name) +
                                           ": expected a layout where no two elements share memory, got " +
                                           t.describe());
}

// A double parameter that must be finite and >= 0.
inline void require_finite_nonnegative(detail::Validator& v, double x, const char* name, const char* note) {
  v.require(std::isfinite(x) && x >= 0.0,
            std::string(name) + ": expected a finite value >= 0" + note + ", got " + format_value(x));
}

}  // namespace tejas::attn
