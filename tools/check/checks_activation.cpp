// silu_mul (plain and gpt-oss clamped) and gelu_tanh_mul cases: odd widths (vector tails),
// padded token rows, every dtype; clamped inputs spread past the limit on both sides.
#include "check/op_checks.h"
#include "check/tolerances.h"
#include "tejas/activation.h"

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

}  // namespace tejas::check
