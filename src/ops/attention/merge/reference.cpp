#include "ops/attention/merge/reference.h"

#include <cmath>
#include <limits>
#include <vector>

#include "ops/common/ref_numeric.h"

namespace tejas::attn {

TensorView part_view(const TensorView& stacked, int64_t s) {
  TensorView t = stacked;
  t.ndim = stacked.ndim - 1;
  for (int d = 0; d < t.ndim; ++d) {
    t.shape[d] = stacked.shape[d + 1];
    t.stride[d] = stacked.stride[d + 1];
  }
  // Merge inputs are bf16/f16/f32, so the part offset is a whole number of bytes. An empty stack
  // may have a null pointer (no arithmetic on it) and framework strides: its parts stay empty.
  if (t.has_zero_size()) return t;
  t.data = static_cast<char*>(stacked.data) + s * stacked.stride[0] * (dtype_bits(stacked.dtype) / 8);
  return t;
}

void merge_states_reference(std::span<const TensorView> parts_v, std::span<const TensorView> parts_lse,
                            const TensorView& out, const TensorView& out_lse) {
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  const int64_t N = out.shape[0], H = out.shape[1], D = out.shape[2];
  const size_t S = parts_v.size();
  std::vector<double> lse(S), acc(static_cast<size_t>(D));
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t h = 0; h < H; ++h) {
      // Empty parts (-inf) are skipped, not weighted by 0: their v may hold anything.
      double m = kNegInf;
      bool any_nan = false;
      for (size_t s = 0; s < S; ++s) {
        lse[s] = ref::at(parts_lse[s], n, h);
        any_nan = any_nan || std::isnan(lse[s]);
        if (lse[s] > m) m = lse[s];
      }
      // +inf lse: inf - inf below makes the weights NaN, the documented result.
      double denom = any_nan ? std::numeric_limits<double>::quiet_NaN() : 0.0;
      acc.assign(static_cast<size_t>(D), denom);
      if (!any_nan && m != kNegInf) {
        for (size_t s = 0; s < S; ++s) {
          if (lse[s] == kNegInf) continue;
          const double w = std::exp(lse[s] - m);
          denom += w;
          for (int64_t d = 0; d < D; ++d) acc[static_cast<size_t>(d)] += w * ref::at(parts_v[s], n, h, d);
        }
      }
      const bool empty = !any_nan && m == kNegInf;
      for (int64_t d = 0; d < D; ++d) ref::put(out, n, h, d, empty ? 0.0 : acc[static_cast<size_t>(d)] / denom);
      if (out_lse.defined()) ref::put(out_lse, n, h, empty ? kNegInf : m + std::log(denom));
    }
  }
}

}  // namespace tejas::attn
