#include "ops/norm/reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "ops/common/ref_numeric.h"

namespace tejas::ref {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// y[h] = v[h] * rsqrt(mean(v^2) + eps) * weight[h], all in float64, nothing rounded.
std::vector<double> normalize_row(const std::vector<double>& v, const TensorView& weight, double eps) {
  double sum_sq = 0.0;
  for (double e : v) sum_sq += e * e;
  const double inv_rms = 1.0 / std::sqrt(sum_sq / static_cast<double>(v.size()) + eps);
  std::vector<double> y(v.size());
  for (size_t h = 0; h < v.size(); ++h) y[h] = v[h] * inv_rms * at(weight, static_cast<int64_t>(h));
  return y;
}

// NaN when any |y| is NaN (std::max would drop it depending on argument order).
double row_amax(const std::vector<double>& y) {
  double amax = 0.0;
  for (double e : y) {
    if (std::isnan(e)) return kNaN;
    amax = std::max(amax, std::fabs(e));
  }
  return amax;
}

// Writes one output row: plain rounding, or e4m3 codes with a dynamic or static f32 scale.
void store_row(int64_t t, const std::vector<double>& y, const TensorView& out, const Fp8Scale& sc) {
  const auto H = static_cast<int64_t>(y.size());
  if (out.dtype != DType::e4m3) {
    for (int64_t h = 0; h < H; ++h) put(out, t, h, y[static_cast<size_t>(h)]);
    return;
  }
  double s;
  if (sc.mode == Fp8ScaleMode::dynamic_per_token) {
    const double amax = row_amax(y);
    const double floored = std::isnan(amax) ? kNaN : std::max(amax, kFp8MinAmax);
    s = round_to(DType::f32, floored / kE4m3Max);  // the stored value is the one used
    put(sc.scale, t, s);
  } else {
    s = at(sc.scale, 0);
  }
  for (int64_t h = 0; h < H; ++h) put(out, t, h, y[static_cast<size_t>(h)] / s);  // e4m3 encode saturates
}

// Adds x into the stored residual row t and returns the row as stored (rounded).
std::vector<double> add_residual_row(int64_t t, const TensorView& x, const TensorView& residual) {
  const int64_t H = x.shape[1];
  std::vector<double> v(static_cast<size_t>(H));
  for (int64_t h = 0; h < H; ++h) {
    put(residual, t, h, at(residual, t, h) + at(x, t, h));
    v[static_cast<size_t>(h)] = at(residual, t, h);  // the norm sees the stored (rounded) sum
  }
  return v;
}

// One group of quant_fp8_group's rules on y[h0, h0 + n), y clamped to the f32 range first.
void quantize_group(int64_t t, const std::vector<double>& y, int64_t h0, int64_t n, const TensorView& q,
                    const TensorView& scales) {
  constexpr double kF32Max = std::numeric_limits<float>::max();
  const int64_t g = h0 / n;
  std::vector<double> yg(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) yg[static_cast<size_t>(i)] = std::clamp(y[static_cast<size_t>(h0 + i)], -kF32Max, kF32Max);
  const double amax = row_amax(yg);  // NaN when the group holds one (clamp keeps NaN)
  if (std::isnan(amax)) {
    put(scales, t, g, kNaN);
    for (int64_t i = 0; i < n; ++i) put(q, t, h0 + i, kNaN);
    return;
  }
  put(scales, t, g, std::max(amax, kFp8MinAmax) / kE4m3Max);  // encode: f32 to nearest, ue8m0 up
  const double s = at(scales, t, g);                         // q uses the scale as stored
  for (int64_t i = 0; i < n; ++i) put(q, t, h0 + i, yg[static_cast<size_t>(i)] / s);
}

Status check_contents(const char* op, const TensorView& out, const Fp8Scale& sc) {
  if (out.dtype == DType::e4m3 && sc.mode == Fp8ScaleMode::static_per_tensor)
    return check_static_fp8_scale(op, sc.scale);
  return Status::Ok();
}

}  // namespace

Status check_static_fp8_scale(const char* op, const TensorView& scale) {
  const double s = at(scale, 0);
  if (std::isfinite(s) && s > 0.0) return Status::Ok();
  std::ostringstream os;
  os << op << ": out_scale.scale: expected a finite static scale > 0, got " << s;
  return Status::InvalidArgument(os.str());
}

Status rms_norm(const TensorView& x, const TensorView& weight, double eps, const TensorView& out,
                const Fp8Scale& out_scale) {
  TEJAS_RETURN_IF_ERROR(check_contents("rms_norm", out, out_scale));
  const int64_t T = x.shape[0], H = x.shape[1];
  std::vector<double> v(static_cast<size_t>(H));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < H; ++h) v[static_cast<size_t>(h)] = at(x, t, h);  // whole row first: out may be x
    store_row(t, normalize_row(v, weight, eps), out, out_scale);
  }
  return Status::Ok();
}

Status fused_add_rms_norm(const TensorView& x, const TensorView& residual, const TensorView& weight,
                          double eps, const TensorView& out, const Fp8Scale& out_scale) {
  TEJAS_RETURN_IF_ERROR(check_contents("fused_add_rms_norm", out, out_scale));
  for (int64_t t = 0; t < x.shape[0]; ++t) store_row(t, normalize_row(add_residual_row(t, x, residual), weight, eps), out, out_scale);
  return Status::Ok();
}

Status fused_add_rms_norm_quant_fp8_group(const TensorView& x, const TensorView& residual, const TensorView& weight,
                                          double eps, const TensorView& q, const TensorView& scales) {
  const int64_t T = x.shape[0], H = x.shape[1];
  for (int64_t t = 0; t < T; ++t) {
    const std::vector<double> y = normalize_row(add_residual_row(t, x, residual), weight, eps);
    for (int64_t h0 = 0; h0 < H; h0 += kNormQuantGroup) quantize_group(t, y, h0, kNormQuantGroup, q, scales);
  }
  return Status::Ok();
}

}  // namespace tejas::ref
