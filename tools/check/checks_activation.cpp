// silu_mul (plain and gpt-oss clamped) and gelu_tanh_mul cases: odd widths (vector tails),
// padded token rows, every dtype; clamped inputs spread past the limit on both sides.
#include "check/op_checks.h"
#include "check/tolerances.h"
#include "tejas/activation.h"
#include "tejas/quant.h"

namespace tejas::check {
namespace {
// Clamped SwiGLU: stddev 5 puts many gate/up values beyond the default limit of 7.
constexpr double kClampedStddev = 5.0;

enum class Act { silu, silu_clamped, gelu };

Case act_case(Rng& rng, Act act, DType dt, int64_t T, int64_t F, int64_t pad) {
  const char* name = act == Act::gelu ? "gelu_tanh_mul" : "silu_mul";
  Case c(name, cat(dtype_name(dt), " [", T, ", 2x", F, "]", act == Act::silu_clamped ? " clamped" : "",
                   pad ? cat(" (row stride ", 2 * F + pad, ")") : ""));
  fill_normal(c.in("x", dt, {T, 2 * F}, pad), rng, 0.0, act == Act::silu_clamped ? kClampedStddev : 1.0);
  c.out("out", dt, {T, F}, float_rule(dt));
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
  return v;
}

std::vector<Case> gelu_tanh_mul_cases(Rng& rng) {
  std::vector<Case> v;
  v.push_back(act_case(rng, Act::gelu, DType::bf16, 7, 300, 0));
  v.push_back(act_case(rng, Act::gelu, DType::f16, 3, 64, 8));
  v.push_back(act_case(rng, Act::gelu, DType::f32, 2, 33, 0));
  return v;
}


namespace {
// Codes may sit one step away at rounding ties (f32 vs float64 y); f32 scales within 2 ulps;
// power-of-two and e4m3 scales one step at ties of amax (the kernel's amax is an f32 value).
Case fused_fp8_case(Rng& rng, DType dt, DType scale, int64_t T, int64_t F, bool clamped) {
  Case c("silu_mul_quant_fp8_group", cat(dtype_name(dt), " [", T, ", 2x", F, "] scales ", dtype_name(scale),
                                         clamped ? " clamped" : ""));
  fill_normal(c.in("x", dt, {T, 2 * F}), rng, 0.0, clamped ? kClampedStddev : 1.0);
  c.out("q", DType::e4m3, {T, F}, code_rule());
  c.out("scales", scale, {T, F / kSiluQuantFp8Group}, scale == DType::f32 ? computed_scale_rule() : code_rule());
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
  c.out("q", DType::e2m1, {T, F}, code_rule());
  c.out("scales", f == MxFormat::nvfp4 ? DType::e4m3 : DType::ue8m0, {T, F / block}, code_rule());
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
  return v;
}

std::vector<Case> silu_mul_quant_mx_cases(Rng& rng) {
  std::vector<Case> v;
  v.push_back(fused_mx_case(rng, MxFormat::mxfp4, DType::bf16, 5, 256));
  v.push_back(fused_mx_case(rng, MxFormat::nvfp4, DType::bf16, 3, 160));
  v.push_back(fused_mx_case(rng, MxFormat::nvfp4, DType::f16, 1, 48));
  return v;
}

}  // namespace tejas::check
