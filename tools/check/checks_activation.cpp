// silu_mul (plain and gpt-oss clamped) and gelu_tanh_mul cases: odd widths (vector tails),
// padded token rows, every dtype; clamped inputs spread past the limit on both sides.
// Rules: bf16 / f16 outputs 1 ulp; f32 outputs activation_f32_rule (no accumulation: the bound
// grows with the sigmoid's argument only); fused quantization: f32 scales kActivationScaleRel,
// codes and power-of-two / e4m3 scale codes tie-aware (kActivationTieRel) on the float64 y.
#include <algorithm>
#include <cmath>

#include "check/op_checks.h"
#include "check/tolerances.h"
#include "ops/activation/reference.h"
#include "ops/common/ref_numeric.h"
#include "tejas/activation.h"
#include "tejas/quant.h"

namespace tejas::check {
namespace {
// Clamped SwiGLU: stddev 5 puts many gate/up values beyond the default limit of 7.
constexpr double kClampedStddev = 5.0;
constexpr double kSqrt2OverPi = 0.79788456080286535588, kGeluCubic = 0.044715;

enum class Act { silu, silu_clamped, gelu };

// The argument of the sigmoid each activation evaluates for gate g (gelu_tanh(g) =
// g * sigmoid(2 sqrt(2/pi) (g + 0.044715 g^3))): the f32 error of the result grows with it.
double sigmoid_arg(Act act, double g) {
  const SiluMulOptions o;
  if (act == Act::gelu) return 2.0 * kSqrt2OverPi * (g + kGeluCubic * g * g * g);
  if (act == Act::silu_clamped) return o.alpha * std::min(g, o.limit);
  return g;
}

// max |sigmoid argument| over the gate half of x [T, 2F].
double max_sigmoid_arg(Act act, const HostTensor& x) {
  const int64_t F = x.shape()[1] / 2;
  double m = 0.0;
  for (int64_t t = 0; t < x.shape()[0]; ++t)
    for (int64_t f = 0; f < F; ++f) m = std::max(m, std::fabs(sigmoid_arg(act, x.get({t, f}))));
  return m;
}

Case act_case(Rng& rng, Act act, DType dt, int64_t T, int64_t F, int64_t pad) {
  const char* name = act == Act::gelu ? "gelu_tanh_mul" : "silu_mul";
  Case c(name, cat(dtype_name(dt), " [", T, ", 2x", F, "]", act == Act::silu_clamped ? " clamped" : "",
                   pad ? cat(" (row stride ", 2 * F + pad, ")") : ""));
  HostTensor& x = c.in("x", dt, {T, 2 * F}, pad);
  fill_normal(x, rng, 0.0, act == Act::silu_clamped ? kClampedStddev : 1.0);
  c.out("out", dt, {T, F}, dt == DType::f32 ? activation_f32_rule(max_sigmoid_arg(act, x)) : float_rule(dt));
  c.set_call([act](const ExecContext& ctx, const Args& a) {
    if (act == Act::gelu) return gelu_tanh_mul(ctx, a["x"], a["out"]);
    SiluMulOptions o;
    o.clamped = act == Act::silu_clamped;
    return silu_mul(ctx, a["x"], a["out"], o);
  });
  return c;
}
}  // namespace

std::vector<Case> silu_mul_cases(Rng& rng) {
  std::vector<Case> v;
  v.push_back(act_case(rng, Act::silu, DType::bf16, 7, 300, 0));
  v.push_back(act_case(rng, Act::silu, DType::f16, 3, 64, 0));
  v.push_back(act_case(rng, Act::silu, DType::f32, 2, 33, 0));
  v.push_back(act_case(rng, Act::silu, DType::bf16, 4, 128, 16));
  v.push_back(act_case(rng, Act::silu_clamped, DType::bf16, 5, 256, 0));
  v.push_back(act_case(rng, Act::silu_clamped, DType::f32, 3, 45, 0));
  v.push_back(act_case(rng, Act::silu, DType::bf16, 0, 128, 16));
  return v;
}

std::vector<Case> gelu_tanh_mul_cases(Rng& rng) {
  std::vector<Case> v;
  v.push_back(act_case(rng, Act::gelu, DType::bf16, 7, 300, 0));
  v.push_back(act_case(rng, Act::gelu, DType::f16, 3, 64, 8));
  v.push_back(act_case(rng, Act::gelu, DType::f32, 2, 33, 0));
  v.push_back(act_case(rng, Act::gelu, DType::f16, 0, 300, 0));
  return v;
}


namespace {
// y[T, F] = silu_mul(x) in float64 (the reference's own functions: y is the reference's value by
// definition), saturated to x's finite range (tejas/activation.h), row-major.
std::vector<double> fused_y(const TensorView& x, bool clamped) {
  const SiluMulOptions o;
  const int64_t T = x.shape[0], F = x.shape[1] / 2;
  const double m = ref::max_finite(x.dtype);
  std::vector<double> y;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t f = 0; f < F; ++f) {
      const double g = ref::at(x, t, f), u = ref::at(x, t, F + f);
      y.push_back(std::clamp(clamped ? ref::clamped_swiglu(g, u, o.limit, o.alpha) : ref::silu(g) * u, -m, m));
    }
  return y;
}

// Each group's amax of y (row-major, groups of `group` consecutive elements).
std::vector<double> group_amax(const std::vector<double>& y, int64_t group) {
  std::vector<double> a;
  for (size_t g0 = 0; g0 < y.size(); g0 += static_cast<size_t>(group)) {
    double m = 0.0;
    for (size_t i = g0; i < g0 + static_cast<size_t>(group); ++i) m = std::max(m, std::fabs(y[i]));
    a.push_back(m);
  }
  return a;
}

// Codes of type `q_dtype`: y over the backend's stored scale of its group, `divisor(scale
// code)` giving the value divided by (0: every code of the group is +0, nvfp4's zero scale).
template <class Divisor>
Rule fused_q_rule(DType q_dtype, int64_t group, bool clamped, Divisor divisor) {
  return tie_rule(
      [=](const Args& want, const Args& got, double r) {
        const std::vector<double> y = fused_y(want["x"], clamped);
        const int64_t F = want["x"].shape[1] / 2;
        std::vector<uint64_t> codes;
        for (size_t i = 0; i < y.size(); ++i) {
          const int64_t t = static_cast<int64_t>(i) / F, g = static_cast<int64_t>(i) % F / group;
          const int64_t idx[] = {t, g};
          const double d = divisor(ref::load_bits(got["scales"], idx), got);
          codes.push_back(d == 0.0 ? 0 : ref::encode(q_dtype, y[i] / d * (1.0 + r)));
        }
        return codes;
      },
      kActivationTieRel);
}

// Scale codes from each group's amax: `code(amax)`.
template <class Code>
Rule fused_scale_rule(int64_t group, bool clamped, Code code) {
  return tie_rule(
      [=](const Args& want, const Args& got, double r) {
        std::vector<uint64_t> codes;
        for (double a : group_amax(fused_y(want["x"], clamped), group)) codes.push_back(code(a * (1.0 + r), got));
        return codes;
      },
      kActivationTieRel);
}

constexpr double kE4m3Max = 448.0, kE2m1Max = 6.0;
constexpr int kUe8m0Bias = 127, kMinScaleExponent = -127, kE2m1Emax = 2;

double ue8m0_value(uint64_t code, const Args&) { return ref::decode(DType::ue8m0, code); }

Case fused_fp8_case(Rng& rng, DType dt, DType scale, int64_t T, int64_t F, bool clamped) {
  Case c("silu_mul_quant_fp8_group", cat(dtype_name(dt), " [", T, ", 2x", F, "] scales ", dtype_name(scale),
                                         clamped ? " clamped" : ""));
  fill_normal(c.in("x", dt, {T, 2 * F}), rng, 0.0, clamped ? kClampedStddev : 1.0);
  const auto f32_value = [](uint64_t code, const Args&) { return ref::decode(DType::f32, code); };
  if (scale == DType::f32) {
    c.out("q", DType::e4m3, {T, F}, fused_q_rule(DType::e4m3, kSiluQuantFp8Group, clamped, f32_value));
    c.out("scales", scale, {T, F / kSiluQuantFp8Group}, computed_scale_rule(kActivationScaleRel));
  } else {  // ue8m0: 2^ceil(log2(max(amax, kFp8MinAmax) / 448)), encode's rounding up
    c.out("q", DType::e4m3, {T, F}, fused_q_rule(DType::e4m3, kSiluQuantFp8Group, clamped, ue8m0_value));
    c.out("scales", scale, {T, F / kSiluQuantFp8Group},
          fused_scale_rule(kSiluQuantFp8Group, clamped, [](double amax, const Args&) {
            return ref::encode(DType::ue8m0, std::max(amax, kFp8MinAmax) / kE4m3Max);
          }));
  }
  c.set_call([clamped](const ExecContext& ctx, const Args& a) {
    SiluMulOptions o;
    o.clamped = clamped;
    return silu_mul_quant_fp8_group(ctx, a["x"], a["q"], a["scales"], o);
  });
  return c;
}

Case fused_mx_case(Rng& rng, MxFormat f, DType dt, int64_t T, int64_t F) {
  constexpr float kTensorScale = 0.002f;  // ~ amax(silu_mul) / (448 * 6) for unit-normal inputs
  Case c("silu_mul_quant_mx", cat(mx_format_name(f), " ", dtype_name(dt), " [", T, ", 2x", F, "]"));
  fill_normal(c.in("x", dt, {T, 2 * F}), rng);
  const int64_t block = mx_block_size(f);
  if (f == MxFormat::nvfp4) {  // block scale sat_rne_e4m3(amax / (6 ts)); q over block scale * ts
    const auto ts = [](const Args& a) { return ref::at(a["tensor_scale"], 0); };
    c.out("q", DType::e2m1, {T, F}, fused_q_rule(DType::e2m1, block, false, [ts](uint64_t code, const Args& got) {
            return ref::decode(DType::e4m3, code) * ts(got);
          }));
    c.out("scales", DType::e4m3, {T, F / block}, fused_scale_rule(block, false, [ts](double amax, const Args& got) {
            return ref::encode(DType::e4m3, amax / (kE2m1Max * ts(got)));
          }));
  } else {  // mxfp4: 2^(floor(log2(amax)) - 2), exponents clamped at -127
    c.out("q", DType::e2m1, {T, F}, fused_q_rule(DType::e2m1, block, false, ue8m0_value));
    c.out("scales", DType::ue8m0, {T, F / block}, fused_scale_rule(block, false, [](double amax, const Args&) {
            const int e = amax > 0 ? std::max(std::ilogb(amax) - kE2m1Emax, kMinScaleExponent) : kMinScaleExponent;
            return static_cast<uint64_t>(e + kUe8m0Bias);
          }));
  }
  if (f == MxFormat::nvfp4) c.in("tensor_scale", DType::f32, {1}).set_flat(0, kTensorScale);
  c.set_call([f](const ExecContext& ctx, const Args& a) {
    return silu_mul_quant_mx(ctx, f, a["x"], a["q"], a["scales"], a["tensor_scale"]);
  });
  return c;
}
}  // namespace

std::vector<Case> silu_mul_quant_fp8_group_cases(Rng& rng) {
  std::vector<Case> v;
  v.push_back(fused_fp8_case(rng, DType::bf16, DType::f32, 5, 256, false));
  v.push_back(fused_fp8_case(rng, DType::f16, DType::ue8m0, 3, 384, false));
  v.push_back(fused_fp8_case(rng, DType::bf16, DType::f32, 2, 128, true));
  v.push_back(fused_fp8_case(rng, DType::bf16, DType::ue8m0, 0, 256, false));
  return v;
}

std::vector<Case> silu_mul_quant_mx_cases(Rng& rng) {
  std::vector<Case> v;
  v.push_back(fused_mx_case(rng, MxFormat::mxfp4, DType::bf16, 5, 256));
  v.push_back(fused_mx_case(rng, MxFormat::nvfp4, DType::bf16, 3, 160));
  v.push_back(fused_mx_case(rng, MxFormat::nvfp4, DType::f16, 1, 48));
  v.push_back(fused_mx_case(rng, MxFormat::nvfp4, DType::bf16, 0, 160));
  return v;
}

}  // namespace tejas::check
