#include "ops/rope/reference.h"

#include <string>

#include "ops/common/ref_numeric.h"
#include "runtime/validate.h"

namespace tejas::ref {
namespace {

// Rotates every head of token t of x [T, H, D] by the angles in cache row p.
void rotate_token(const TensorView& x, int64_t t, const TensorView& cache, int64_t p, RopeStyle style) {
  const int64_t half = cache.shape[1] / 2;
  for (int64_t h = 0; h < x.shape[1]; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      const int64_t ia = style == RopeStyle::neox ? i : 2 * i;
      const int64_t ib = style == RopeStyle::neox ? i + half : 2 * i + 1;
      const double c = at(cache, p, i), s = at(cache, p, half + i);
      const double a = at(x, t, h, ia), b = at(x, t, h, ib);
      put(x, t, h, ia, a * c - b * s);
      put(x, t, h, ib, b * c + a * s);
    }
  }
}

}  // namespace

Status check_rope_positions(const TensorView& positions, int64_t max_pos) {
  for (int64_t t = 0; t < positions.shape[0]; ++t) {
    const int64_t p = detail::read_index(positions, {t});
    if (p < 0 || p >= max_pos)
      return Status::InvalidArgument("rope: positions: expected values in [0, " + std::to_string(max_pos) +
                                     ") (cos_sin_cache rows), got " + std::to_string(p) + " at index " +
                                     std::to_string(t));
  }
  return Status::Ok();
}

Status rope(const TensorView& positions, const TensorView& q, const TensorView& k, const TensorView& cos_sin_cache,
            RopeStyle style) {
  TEJAS_RETURN_IF_ERROR(check_rope_positions(positions, cos_sin_cache.shape[0]));  // before any write
  for (int64_t t = 0; t < q.shape[0]; ++t) {
    const int64_t p = detail::read_index(positions, {t});
    rotate_token(q, t, cos_sin_cache, p, style);
    if (k.defined()) rotate_token(k, t, cos_sin_cache, p, style);
  }
  return Status::Ok();
}

}  // namespace tejas::ref
