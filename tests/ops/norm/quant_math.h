// Independent long-double math of fused_add_rms_norm_quant_fp8_group's groups for the tests:
// y clamped to the f32 range, group amax, the f32 / ue8m0 scale, written apart from the
// reference (powers of two by frexp, f32 rounding by the compiler's long double -> float).
#pragma once
#include <cstdint>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "ops/norm/norm_math.h"
#include "tejas/dtype.h"

namespace tejas::normtest {

inline constexpr int64_t kGroup = 128;

// y of one row, clamped to +-FLT_MAX (NaN kept).
inline std::vector<long double> clamped_y(const check::HostTensor& residual_after, const check::HostTensor& w,
                                          int64_t row, double eps) {
  auto y = rms_row(row_of(residual_after, row), w, eps);
  const long double m = std::numeric_limits<float>::max();
  for (long double& e : y)
    if (!std::isnan(e)) e = e > m ? m : e < -m ? -m : e;
  return y;
}

// max |y| over [h0, h0 + kGroup); NaN if any is NaN.
inline long double group_amax(const std::vector<long double>& y, int64_t h0) {
  long double a = 0;
  for (int64_t h = h0; h < h0 + kGroup; ++h) {
    const long double e = y[static_cast<size_t>(h)];
    if (std::isnan(e)) return e;
    a = std::fmax(a, std::fabs(e));
  }
  return a;
}

// The scale value before storage: max(amax, 1e-10) / 448.
inline long double raw_scale(long double amax) {
  constexpr long double kMinAmax = 1e-10L, kMax = 448.0L;
  return std::isnan(amax) ? amax : std::fmax(amax, kMinAmax) / kMax;
}

// The smallest power of two >= v (v > 0).
inline long double pow2_ceil(long double v) {
  int e = 0;
  const long double m = std::frexp(v, &e);  // v = m * 2^e, m in [0.5, 1)
  return m == 0.5L ? std::ldexp(1.0L, e - 1) : std::ldexp(1.0L, e);
}

}  // namespace tejas::normtest

namespace tejas::normtest {

// Scale [t, g] of a [T, G] f32 or ue8m0 view with any strides, as a value (ue8m0 0xFF: NaN).
inline double scale_at(const TensorView& s, int64_t t, int64_t g) {
  const auto* p = static_cast<const unsigned char*>(s.data) + (t * s.stride[0] + g * s.stride[1]) * (dtype_bits(s.dtype) / 8);
  if (s.dtype == DType::f32) {
    float f;
    std::memcpy(&f, p, sizeof f);
    return f;
  }
  constexpr int kUe8m0Bias = 127, kUe8m0NaN = 0xFF;
  return *p == kUe8m0NaN ? std::numeric_limits<double>::quiet_NaN() : std::ldexp(1.0, *p - kUe8m0Bias);
}

}  // namespace tejas::normtest
