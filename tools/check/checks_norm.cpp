// rms_norm and fused_add_rms_norm cases: odd hidden sizes (vector tails), padded rows, every
// input dtype, weight in x's dtype and f32, fp8 output with dynamic and static scales.
#include "check/op_checks.h"
#include "check/tolerances.h"
#include "tejas/norm.h"

namespace tejas::check {
namespace {
constexpr double kEps = 1e-6;
// Static fp8 scale: y ~ N(0, 1) * w, so y / s spans about +-400, inside e4m3's +-448 and with
// a few values saturating at the tails.
constexpr double kStaticFp8Scale = 1.0 / 100.0;

struct NormShape {
  DType x, weight, out;
  int64_t T, H, pad;  // pad: extra elements per row of x and out (strided views)
};

std::string label(const NormShape& s, const char* extra) {
  return cat(dtype_name(s.x), " [", s.T, ", ", s.H, "] weight ", dtype_name(s.weight), " -> ", dtype_name(s.out),
             s.pad ? cat(" (row stride ", s.H + s.pad, ")") : "", extra);
}

// Adds x, weight and the out/scale arguments shared by both ops; returns the scale mode.
void add_common(Case& c, Rng& rng, const NormShape& s, Fp8ScaleMode mode) {
  fill_normal(c.in("x", s.x, {s.T, s.H}, s.pad), rng);
  fill_uniform(c.in("weight", s.weight, {s.H}), rng, 0.5, 1.5);
  if (s.out == DType::e4m3) {
    c.out("out", s.out, {s.T, s.H}, code_rule(), s.pad);
    if (mode == Fp8ScaleMode::dynamic_per_token) {
      c.out("scale", DType::f32, {s.T}, float_rule(DType::f32));
    } else {
      c.in("scale", DType::f32, {1}).set_flat(0, kStaticFp8Scale);
    }
  } else {
    c.out("out", s.out, {s.T, s.H}, float_rule(s.out), s.pad);
  }
}

Fp8Scale scale_arg(const Args& a, Fp8ScaleMode mode) { return Fp8Scale{a["scale"], mode}; }

Case rms_case(Rng& rng, const NormShape& s, Fp8ScaleMode mode = Fp8ScaleMode::dynamic_per_token) {
  const char* extra = s.out != DType::e4m3 ? "" : mode == Fp8ScaleMode::dynamic_per_token ? " dynamic" : " static";
  Case c("rms_norm", label(s, extra));
  add_common(c, rng, s, mode);
  c.set_call([mode](const ExecContext& ctx, const Args& a) {
    return rms_norm(ctx, a["x"], a["weight"], kEps, a["out"], scale_arg(a, mode));
  });
  return c;
}

Case fused_case(Rng& rng, const NormShape& s, DType residual) {
  Case c("fused_add_rms_norm", cat(label(s, ""), ", residual ", dtype_name(residual)));
  const auto mode = Fp8ScaleMode::dynamic_per_token;
  add_common(c, rng, s, mode);
  fill_normal(c.inout("residual", residual, {s.T, s.H}, float_rule(residual), s.pad), rng);
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
  return v;
}

std::vector<Case> norm_fused_add_cases(Rng& rng) {
  std::vector<Case> v;
  v.push_back(fused_case(rng, {DType::bf16, DType::bf16, DType::bf16, 5, 200, 0}, DType::bf16));
  v.push_back(fused_case(rng, {DType::f16, DType::f32, DType::f16, 3, 96, 8}, DType::f32));
  v.push_back(fused_case(rng, {DType::f32, DType::f32, DType::f32, 2, 33, 0}, DType::f32));
  v.push_back(fused_case(rng, {DType::bf16, DType::bf16, DType::e4m3, 4, 256, 0}, DType::bf16));
  return v;
}

}  // namespace tejas::check

namespace tejas::check {
namespace {
// y ~ N(0, 1) * w per group of 128; f32 or ue8m0 scales; a column-major scale view.
Case fused_quant_case(Rng& rng, DType x, DType residual, DType scales, int64_t T, int64_t H) {
  Case c("fused_add_rms_norm_quant_fp8_group",
         cat(dtype_name(x), " [", T, ", ", H, "], residual ", dtype_name(residual), ", scales ", dtype_name(scales)));
  fill_normal(c.in("x", x, {T, H}), rng);
  fill_uniform(c.in("weight", x, {H}), rng, 0.5, 1.5);
  fill_normal(c.inout("residual", residual, {T, H}, float_rule(residual)), rng);
  c.out("q", DType::e4m3, {T, H}, code_rule());
  c.out("scales", scales, {T, H / kNormQuantGroup}, scales == DType::f32 ? computed_scale_rule() : code_rule());
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
  return v;
}

}  // namespace tejas::check
