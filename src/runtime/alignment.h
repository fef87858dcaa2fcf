// How wide may the vector accesses of a strided tensor be: the one rule every op family's
// planner uses, so that each config stays a pure function of plain byte counts.
#pragma once
#include "tejas/tensor.h"

namespace tejas::detail {

// The largest power of two <= cap (itself a power of two) that divides the byte address of
// t.data and the byte stride of every dim but the innermost: the alignment every row start of
// the view shares. Dims of extent 1 are skipped (their stride is never applied), the innermost
// dim is assumed packed (validated inner-contiguous), a stride of 0 constrains nothing.
// Absent tensors (data == null) return cap: they constrain nothing.
// Sub-byte dtypes (e2m1, 4 bits): strides count elements, so a stride whose bits are not a
// whole number of bytes puts rows mid-byte; then no access width fits and the result is 0.
int access_alignment(const TensorView& t, int cap = 16);

}  // namespace tejas::detail
