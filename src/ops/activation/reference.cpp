#include "ops/activation/reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/common/ref_numeric.h"
#include "ops/quant/reference.h"

namespace tejas::ref {
namespace {

constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2 / pi)
constexpr double kGeluCubic = 0.044715;

// The limit of g * sigmoid(a g) as g -> -Inf (a > 0); the formulas below would give -Inf / Inf.
constexpr double kNegInfLimit = -0.0;

bool is_neg_inf(double g) { return std::isinf(g) && g < 0; }

// out[t, f] = act(x[t, f], x[t, F + f]) for a [T, 2F] -> [T, F] pair of views.
template <class Act>
void gated(const TensorView& x, const TensorView& out, Act act) {
  const int64_t T = out.shape[0], F = out.shape[1];
  for (int64_t t = 0; t < T; ++t)
    for (int64_t f = 0; f < F; ++f) put(out, t, f, act(at(x, t, f), at(x, t, F + f)));
}

double silu_mul_one(double g, double u, const SiluMulOptions& o);

// y[T, F] = silu_mul(x) in float64, saturated to x's finite range (NaN kept), row-major.
std::vector<double> silu_mul_unrounded(const TensorView& x, const SiluMulOptions& o) {
  const int64_t T = x.shape[0], F = x.shape[1] / 2;
  const double m = max_finite(x.dtype);
  std::vector<double> y(static_cast<size_t>(T * F));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t f = 0; f < F; ++f) {
      const double v = silu_mul_one(at(x, t, f), at(x, t, F + f), o);
      y[static_cast<size_t>(t * F + f)] = std::isnan(v) ? v : std::clamp(v, -m, m);
    }
  return y;
}

}  // namespace

double silu(double g) {
  if (is_neg_inf(g)) return kNegInfLimit;
  return g / (1.0 + std::exp(-g));
}

// 0.5 g (1 + tanh(z)) = g / (1 + exp(-2z)): the same function without the cancellation in
// 1 + tanh(z) for negative z, so small results keep their relative accuracy.
double gelu_tanh(double g) {
  if (is_neg_inf(g)) return kNegInfLimit;
  const double z = kSqrt2OverPi * (g + kGeluCubic * g * g * g);
  return g / (1.0 + std::exp(-2.0 * z));
}

double clamped_swiglu(double gate, double up, double limit, double alpha) {
  if (std::isnan(gate) || std::isnan(up)) return std::numeric_limits<double>::quiet_NaN();  // clamps must not hide NaN
  const double g = gate > limit ? limit : gate;  // from above only
  const double u = up > limit ? limit : (up < -limit ? -limit : up);
  const double glu = is_neg_inf(g) ? kNegInfLimit : g / (1.0 + std::exp(-alpha * g));
  return glu * (u + 1.0);
}

namespace {
double silu_mul_one(double g, double u, const SiluMulOptions& o) {
  return o.clamped ? clamped_swiglu(g, u, o.limit, o.alpha) : silu(g) * u;
}
}  // namespace

void silu_mul(const TensorView& x, const TensorView& out, const SiluMulOptions& o) {
  gated(x, out, [&](double g, double u) { return silu_mul_one(g, u, o); });
}

void gelu_tanh_mul(const TensorView& x, const TensorView& out) {
  gated(x, out, [](double g, double u) { return gelu_tanh(g) * u; });
}

void silu_mul_quant_fp8_group(const TensorView& x, const TensorView& q, const TensorView& scales,
                              const SiluMulOptions& options) {
  std::vector<double> y = silu_mul_unrounded(x, options);
  const TensorView yv = TensorView::contiguous(y.data(), DType::f64, {q.shape[0], q.shape[1]});
  quant_fp8_group(yv, q, scales, kSiluQuantFp8Group);
}

void silu_mul_quant_mx(MxFormat format, const TensorView& x, const TensorView& q, const TensorView& scales,
                       const TensorView& tensor_scale, const SiluMulOptions& options) {
  std::vector<double> y = silu_mul_unrounded(x, options);
  const TensorView yv = TensorView::contiguous(y.data(), DType::f64, {q.shape[0], q.shape[1]});
  quant_mx(format, yv, q, scales, tensor_scale);
}

}  // namespace tejas::ref
