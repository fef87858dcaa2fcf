// Independent long-double RMSNorm math for the tests (divides by the rms rather than
// multiplying by its reciprocal, and accumulates in long double).
#pragma once
#include <cstdint>
#include <cmath>
#include <vector>

#include "check/host_tensor.h"

namespace tejas::normtest {

// y[h] = v[h] * w[h] / sqrt(sum(v^2) / H + eps)
inline std::vector<long double> rms_row(const std::vector<long double>& v, const check::HostTensor& weight,
                                        double eps) {
  long double mean_sq = 0.0L;
  for (long double e : v) mean_sq += e * e / static_cast<long double>(v.size());
  const long double rms = std::sqrt(mean_sq + static_cast<long double>(eps));
  std::vector<long double> y;
  for (size_t h = 0; h < v.size(); ++h) y.push_back(v[h] * static_cast<long double>(weight.get({static_cast<int64_t>(h)})) / rms);
  return y;
}

inline std::vector<long double> row_of(const check::HostTensor& t, int64_t row) {
  std::vector<long double> v;
  for (int64_t h = 0; h < t.shape()[1]; ++h) v.push_back(t.get({row, h}));
  return v;
}

// The f32 dynamic scale: max(amax, 1e-10) / 448 rounded to float; NaN when the row holds NaN.
inline float dynamic_scale(const std::vector<long double>& y) {
  constexpr long double kMinAmax = 1e-10L, kMax = 448.0L;
  long double amax = kMinAmax;
  for (long double e : y) {
    if (std::isnan(e)) return std::nanf("");
    if (std::fabs(e) > amax) amax = std::fabs(e);
  }
  return static_cast<float>(amax / kMax);
}

}  // namespace tejas::normtest
