#include "ops/rope/reference.h"

#include <cmath>
#include <sstream>
#include <string>
#include <unordered_map>

#include "ops/common/ref_numeric.h"
#include "runtime/validate.h"

namespace tejas::ref {
namespace {

// Messages through a stream: GCC 12 flags `"literal" + std::string` chains (-Wrestrict, bug 105329).
template <class... A>
Status invalid(const A&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return Status::InvalidArgument(os.str());
}

// Position row of frequency pair i: rope has one row; mrope's sections pick one of three.
struct PairRows {
  int64_t end0, end1;  // first pair of rows 1 and 2
  int row(int64_t i) const { return i < end0 ? 0 : i < end1 ? 1 : 2; }
};

int64_t position_of(const TensorView& positions, int row, int64_t t) {
  return positions.ndim == 1 ? detail::read_index(positions, {t}) : detail::read_index(positions, {row, t});
}

// Rotates every head of token t of x [T, H, D].
void rotate_token(const TensorView& x, int64_t t, const TensorView& cache, const TensorView& positions,
                  const PairRows& rows, RopeStyle style) {
  const int64_t half = cache.shape[1] / 2;
  for (int64_t i = 0; i < half; ++i) {
    const int64_t p = position_of(positions, rows.row(i), t);
    const double c = at(cache, p, i), s = at(cache, p, half + i);
    const int64_t ia = style == RopeStyle::neox ? i : 2 * i;
    const int64_t ib = style == RopeStyle::neox ? i + half : 2 * i + 1;
    for (int64_t h = 0; h < x.shape[1]; ++h) {
      const double a = at(x, t, h, ia), b = at(x, t, h, ib);
      put(x, t, h, ia, a * c - b * s);
      put(x, t, h, ib, b * c + a * s);
    }
  }
}

Status rotate_all(const char* op, const TensorView& positions, const TensorView& q, const TensorView& k,
                  const TensorView& cache, const PairRows& rows, RopeStyle style) {
  TEJAS_RETURN_IF_ERROR(check_rope_positions(op, positions, cache.shape[0]));  // before any write
  for (int64_t t = 0; t < q.shape[0]; ++t) {
    rotate_token(q, t, cache, positions, rows, style);
    if (k.defined()) rotate_token(k, t, cache, positions, rows, style);
  }
  return Status::Ok();
}

// One token's rows of x [T, H, D] into cache [num_blocks, block_size, H, D]: the bits for a cache
// of x's dtype, encode(x / scale) for fp8.
void write_rows(const TensorView& x, int64_t t, const TensorView& cache, int64_t slot, const TensorView& scale) {
  const int64_t blk = slot / cache.shape[1], off = slot % cache.shape[1];
  const double sc = scale.defined() ? at(scale, 0) : 1.0;
  for (int64_t h = 0; h < x.shape[1]; ++h)
    for (int64_t d = 0; d < x.shape[2]; ++d) {
      const int64_t src[] = {t, h, d}, dst[] = {blk, off, h, d};
      if (cache.dtype == x.dtype) store_bits(cache, dst, load_bits(x, src));
      else store(cache, dst, load(x, src) / sc);
    }
}

}  // namespace

Status check_rope_positions(const char* op, const TensorView& positions, int64_t max_pos) {
  const int64_t rows = positions.ndim == 1 ? 1 : positions.shape[0];
  const int64_t T = positions.shape[positions.ndim - 1];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t t = 0; t < T; ++t) {
      const int64_t p = position_of(positions, static_cast<int>(r), t);
      if (p < 0 || p >= max_pos) {
        if (positions.ndim == 1)
          return invalid(op, ": positions: expected values in [0, ", max_pos, ") (cos_sin_cache rows), got ", p,
                         " at index ", t);
        return invalid(op, ": positions: expected values in [0, ", max_pos, ") (cos_sin_cache rows), got ", p,
                       " at index [", r, ", ", t, "]");
      }
    }
  return Status::Ok();
}

Status check_slot_mapping(const char* op, const TensorView& slot_mapping, int64_t num_slots) {
  std::unordered_map<int64_t, int64_t> first_token;  // slot -> the token that claimed it
  for (int64_t t = 0; t < slot_mapping.shape[0]; ++t) {
    const int64_t s = detail::read_index(slot_mapping, {t});
    if (s < 0) continue;  // skipped token
    if (s >= num_slots)
      return invalid(op, ": slot_mapping: expected values < ", num_slots, " (num_blocks * block_size) or negative, got ",
                     s, " at index ", t);
    const auto [it, fresh] = first_token.emplace(s, t);
    if (!fresh)
      return invalid(op, ": slot_mapping: expected distinct non-negative slots, got ", s, " at indices ", it->second,
                     " and ", t);
  }
  return Status::Ok();
}

Status check_cache_scale(const char* op, const char* name, const TensorView& scale) {
  const double s = at(scale, 0);
  if (!(std::isfinite(s) && s > 0))
    return invalid(op, ": ", name, ": expected a finite value > 0, got ", s);
  return Status::Ok();
}

Status rope(const TensorView& positions, const TensorView& q, const TensorView& k, const TensorView& cos_sin_cache,
            RopeStyle style) {
  const int64_t half = cos_sin_cache.shape[1] / 2;
  return rotate_all("rope", positions, q, k, cos_sin_cache, PairRows{half, half}, style);
}

Status mrope(const TensorView& positions, const TensorView& q, const TensorView& k, const TensorView& cos_sin_cache,
             const MropeSection& section) {
  const PairRows rows{section.temporal, section.temporal + section.height};
  return rotate_all("mrope", positions, q, k, cos_sin_cache, rows, RopeStyle::neox);
}

namespace {

// Slots and scales (before anything is written), as both cache-writing ops check them.
Status check_cache_args(const char* op, const TensorView& slot_mapping, const PagedKvCache& cache) {
  const TensorView& kc = cache.k_cache;
  TEJAS_RETURN_IF_ERROR(check_slot_mapping(op, slot_mapping, kc.shape[0] * kc.shape[1]));
  if (cache.k_scale.defined()) TEJAS_RETURN_IF_ERROR(check_cache_scale(op, "k_scale", cache.k_scale));
  if (cache.v_scale.defined()) TEJAS_RETURN_IF_ERROR(check_cache_scale(op, "v_scale", cache.v_scale));
  return Status::Ok();
}

// Every cached token's k and v rows (k as it is now).
void write_cache(const TensorView& k, const TensorView& v, const TensorView& slot_mapping, const PagedKvCache& cache) {
  for (int64_t t = 0; t < k.shape[0]; ++t) {
    const int64_t slot = detail::read_index(slot_mapping, {t});
    if (slot < 0) continue;
    write_rows(k, t, cache.k_cache, slot, cache.k_scale);
    write_rows(v, t, cache.v_cache, slot, cache.v_scale);
  }
}

}  // namespace

Status rope_kv_cache_write(const TensorView& positions, const TensorView& q, const TensorView& k,
                           const TensorView& v, const TensorView& cos_sin_cache, RopeStyle style,
                           const TensorView& slot_mapping, const PagedKvCache& cache) {
  constexpr const char* kOp = "rope_kv_cache_write";
  TEJAS_RETURN_IF_ERROR(check_cache_args(kOp, slot_mapping, cache));
  const int64_t half = cos_sin_cache.shape[1] / 2;
  TEJAS_RETURN_IF_ERROR(rotate_all(kOp, positions, q, k, cos_sin_cache, PairRows{half, half}, style));
  write_cache(k, v, slot_mapping, cache);
  return Status::Ok();
}

Status kv_cache_write(const TensorView& k, const TensorView& v, const TensorView& slot_mapping,
                      const PagedKvCache& cache) {
  TEJAS_RETURN_IF_ERROR(check_cache_args("kv_cache_write", slot_mapping, cache));
  write_cache(k, v, slot_mapping, cache);
  return Status::Ok();
}

}  // namespace tejas::ref
