// rms_norm and fused_add_rms_norm cases: odd hidden sizes (vector tails), padded rows, every
// input dtype, weight in x's dtype and f32, fp8 output with dynamic and static scales.
// Rules (tejas/norm.h's accuracy statement): bf16 / f16 outputs 1 ulp; f32 outputs and dynamic
// f32 scales kNormF32Rel / kNormScaleRel; the stored residual bit-exact (x + residual rounded
// once); e4m3 codes tie-aware (kNormTieRel) on the float64 y over the backend's stored scale;
// ue8m0 scales tie-aware on amax / 448 (one step only where it lies next to a power of two).
#include <algorithm>
#include <cmath>
#include <limits>

#include "check/op_checks.h"
#include "check/tolerances.h"
#include "ops/common/ref_numeric.h"
#include "tejas/norm.h"

namespace tejas::check {
namespace {
constexpr double kEps = 1e-6;
constexpr double kE4m3Max = 448.0;
// Static fp8 scale: y ~ N(0, 1) * w, so y / s spans about +-400, inside e4m3's +-448 and with
// a few values saturating at the tails.
constexpr double kStaticFp8Scale = 1.0 / 100.0;

// y[t, :] = src[t, :] * rsqrt(mean(src[t, :]^2) + eps) * weight in float64: the value the
// kernels round (src: x, or the stored residual of the fused ops).
std::vector<double> norm_row(const TensorView& src, const TensorView& weight, int64_t t) {
  const int64_t H = src.shape[1];
  double sum_sq = 0.0;
  for (int64_t h = 0; h < H; ++h) sum_sq += ref::at(src, t, h) * ref::at(src, t, h);
  const double inv_rms = 1.0 / std::sqrt(sum_sq / static_cast<double>(H) + kEps);
  std::vector<double> y(static_cast<size_t>(H));
  for (int64_t h = 0; h < H; ++h) y[static_cast<size_t>(h)] = ref::at(src, t, h) * inv_rms * ref::at(weight, h);
  return y;
}

// Tie-aware e4m3 `out` codes: y / s, s the backend's stored dynamic scale or the static input.
Rule fp8_out_rule(const char* src, Fp8ScaleMode mode) {
  const std::string src_name = src;
  return tie_rule(
      [src_name, mode](const Args& want, const Args& got, double r) {
        const TensorView& x = want[src_name];  // the reference's stored residual when fused
        std::vector<double> v;
        for (int64_t t = 0; t < x.shape[0]; ++t) {
          const double s = mode == Fp8ScaleMode::dynamic_per_token ? ref::at(got["scale"], t) : ref::at(want["scale"], 0);
          for (double y : norm_row(x, want["weight"], t)) v.push_back(y / s);
        }
        return encode_all(DType::e4m3, v, r);
      },
      kNormTieRel);
}

struct NormShape {
  DType x, weight, out;
  int64_t T, H, pad;  // pad: extra elements per row of x and out (strided views)
};

std::string label(const NormShape& s, const char* extra) {
  return cat(dtype_name(s.x), " [", s.T, ", ", s.H, "] weight ", dtype_name(s.weight), " -> ", dtype_name(s.out),
             s.pad ? cat(" (row stride ", s.H + s.pad, ")") : "", extra);
}

// Adds x, weight and the out/scale arguments shared by both ops; returns the scale mode.
// `src`: the tensor y is computed from ("x", or "residual" for fused_add_rms_norm).
void add_common(Case& c, Rng& rng, const NormShape& s, Fp8ScaleMode mode, const char* src) {
  fill_normal(c.in("x", s.x, {s.T, s.H}, s.pad), rng);
  fill_uniform(c.in("weight", s.weight, {s.H}), rng, 0.5, 1.5);
  if (s.out == DType::e4m3) {
    c.out("out", s.out, {s.T, s.H}, fp8_out_rule(src, mode), s.pad);
    if (mode == Fp8ScaleMode::dynamic_per_token) {
      c.out("scale", DType::f32, {s.T}, computed_scale_rule(kNormScaleRel));
    } else {
      c.in("scale", DType::f32, {1}).set_flat(0, kStaticFp8Scale);
    }
  } else if (s.out == DType::f32) {
    c.out("out", s.out, {s.T, s.H}, f32_rule(kNormF32Rel), s.pad);
  } else {
    c.out("out", s.out, {s.T, s.H}, float_rule(s.out), s.pad);
  }
}

Fp8Scale scale_arg(const Args& a, Fp8ScaleMode mode) { return Fp8Scale{a["scale"], mode}; }

Case rms_case(Rng& rng, const NormShape& s, Fp8ScaleMode mode = Fp8ScaleMode::dynamic_per_token) {
  const char* extra = s.out != DType::e4m3 ? "" : mode == Fp8ScaleMode::dynamic_per_token ? " dynamic" : " static";
  Case c("rms_norm", label(s, extra));
  add_common(c, rng, s, mode, "x");
  c.set_call([mode](const ExecContext& ctx, const Args& a) {
    return rms_norm(ctx, a["x"], a["weight"], kEps, a["out"], scale_arg(a, mode));
  });
  return c;
}

Case fused_case(Rng& rng, const NormShape& s, DType residual) {
  Case c("fused_add_rms_norm", cat(label(s, ""), ", residual ", dtype_name(residual)));
  const auto mode = Fp8ScaleMode::dynamic_per_token;
  add_common(c, rng, s, mode, "residual");
  // residual += x is one rounding of an exact sum (tejas/norm.h): bit-exact.
  fill_normal(c.inout("residual", residual, {s.T, s.H}, exact_rule(), s.pad), rng);
  c.set_call([mode](const ExecContext& ctx, const Args& a) {
    return fused_add_rms_norm(ctx, a["x"], a["residual"], a["weight"], kEps, a["out"], scale_arg(a, mode));
  });
  return c;
}
}  // namespace

std::vector<Case> norm_rms_cases(Rng& rng) {
  std::vector<Case> v;
  v.push_back(rms_case(rng, {DType::bf16, DType::bf16, DType::bf16, 5, 200, 0}));
  v.push_back(rms_case(rng, {DType::f16, DType::f32, DType::f16, 3, 64, 8}));
  v.push_back(rms_case(rng, {DType::f32, DType::f32, DType::f32, 2, 33, 0}));
  v.push_back(rms_case(rng, {DType::bf16, DType::bf16, DType::bf16, 1, 4096, 0}));
  v.push_back(rms_case(rng, {DType::bf16, DType::bf16, DType::e4m3, 4, 256, 0}, Fp8ScaleMode::dynamic_per_token));
  v.push_back(rms_case(rng, {DType::bf16, DType::f32, DType::e4m3, 3, 128, 0}, Fp8ScaleMode::static_per_tensor));
  v.push_back(rms_case(rng, {DType::bf16, DType::f32, DType::e4m3, 0, 128, 0}, Fp8ScaleMode::static_per_tensor));
  v.push_back(rms_case(rng, {DType::f16, DType::f16, DType::f16, 0, 64, 8}));
  return v;
}

std::vector<Case> norm_fused_add_cases(Rng& rng) {
  std::vector<Case> v;
  v.push_back(fused_case(rng, {DType::bf16, DType::bf16, DType::bf16, 5, 200, 0}, DType::bf16));
  v.push_back(fused_case(rng, {DType::f16, DType::f32, DType::f16, 3, 96, 8}, DType::f32));
  v.push_back(fused_case(rng, {DType::f32, DType::f32, DType::f32, 2, 33, 0}, DType::f32));
  v.push_back(fused_case(rng, {DType::bf16, DType::bf16, DType::e4m3, 4, 256, 0}, DType::bf16));
  v.push_back(fused_case(rng, {DType::bf16, DType::bf16, DType::bf16, 0, 200, 0}, DType::f32));
  return v;
}

}  // namespace tejas::check

namespace tejas::check {
namespace {
// y of the stored residual, clamped to +-FLT_MAX (tejas/norm.h), row by row.
std::vector<double> clamped_rows(const Args& want) {
  constexpr double kF32Max = std::numeric_limits<float>::max();
  const TensorView& res = want["residual"];
  std::vector<double> y;
  for (int64_t t = 0; t < res.shape[0]; ++t)
    for (double v : norm_row(res, want["weight"], t)) y.push_back(std::clamp(v, -kF32Max, kF32Max));
  return y;
}

// q: y / s with the backend's stored group scale s.
Rule fused_q_rule() {
  return tie_rule(
      [](const Args& want, const Args& got, double r) {
        std::vector<double> v = clamped_rows(want);
        const int64_t H = want["residual"].shape[1];
        for (size_t i = 0; i < v.size(); ++i) {
          const auto t = static_cast<int64_t>(i) / H, g = static_cast<int64_t>(i) % H / kNormQuantGroup;
          v[i] /= ref::at(got["scales"], t, g);
        }
        return encode_all(DType::e4m3, v, r);
      },
      kNormTieRel);
}

// ue8m0 scales: 2^ceil(log2(max(amax, kFp8MinAmax) / 448)) of each group's amax.
Rule fused_ue8m0_rule() {
  return tie_rule(
      [](const Args& want, const Args&, double r) {
        const std::vector<double> y = clamped_rows(want);
        std::vector<double> raw;
        for (size_t g0 = 0; g0 < y.size(); g0 += kNormQuantGroup) {
          double amax = 0.0;
          for (size_t i = g0; i < g0 + kNormQuantGroup; ++i) amax = std::max(amax, std::fabs(y[i]));
          raw.push_back(std::max(amax, kFp8MinAmax) / kE4m3Max);
        }
        return encode_all(DType::ue8m0, raw, r);
      },
      kNormTieRel);
}

// y ~ N(0, 1) * w per group of 128; f32 or ue8m0 scales.
Case fused_quant_case(Rng& rng, DType x, DType residual, DType scales, int64_t T, int64_t H) {
  Case c("fused_add_rms_norm_quant_fp8_group",
         cat(dtype_name(x), " [", T, ", ", H, "], residual ", dtype_name(residual), ", scales ", dtype_name(scales)));
  fill_normal(c.in("x", x, {T, H}), rng);
  fill_uniform(c.in("weight", x, {H}), rng, 0.5, 1.5);
  fill_normal(c.inout("residual", residual, {T, H}, exact_rule()), rng);
  c.out("q", DType::e4m3, {T, H}, fused_q_rule());
  c.out("scales", scales, {T, H / kNormQuantGroup},
        scales == DType::f32 ? computed_scale_rule(kNormScaleRel) : fused_ue8m0_rule());
  c.set_call([](const ExecContext& ctx, const Args& a) {
    return fused_add_rms_norm_quant_fp8_group(ctx, a["x"], a["residual"], a["weight"], kEps, a["q"], a["scales"]);
  });
  return c;
}
}  // namespace

std::vector<Case> norm_fused_quant_cases(Rng& rng) {
  std::vector<Case> v;
  v.push_back(fused_quant_case(rng, DType::bf16, DType::bf16, DType::f32, 5, 256));
  v.push_back(fused_quant_case(rng, DType::bf16, DType::f32, DType::ue8m0, 3, 1024));
  v.push_back(fused_quant_case(rng, DType::f16, DType::f16, DType::f32, 1, 7168));
  v.push_back(fused_quant_case(rng, DType::bf16, DType::bf16, DType::ue8m0, 0, 256));
  return v;
}

}  // namespace tejas::check
