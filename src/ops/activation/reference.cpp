#include "ops/activation/reference.h"

#include <cmath>
#include <limits>

#include "ops/common/ref_numeric.h"

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

void silu_mul(const TensorView& x, const TensorView& out, const SiluMulOptions& o) {
  if (o.clamped) gated(x, out, [&](double g, double u) { return clamped_swiglu(g, u, o.limit, o.alpha); });
  else gated(x, out, [](double g, double u) { return silu(g) * u; });
}

void gelu_tanh_mul(const TensorView& x, const TensorView& out) {
  gated(x, out, [](double g, double u) { return gelu_tanh(g) * u; });
}

}  // namespace tejas::ref
