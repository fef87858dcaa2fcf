// rope cases: neox and gptj, full and partial rotary dims, strided heads, k absent, i32 and i64
// positions, f32 caches and caches in q's dtype.
#include <cmath>

#include "check/op_checks.h"
#include "check/tolerances.h"
#include "tejas/rope.h"

namespace tejas::check {
namespace {
constexpr double kRopeBase = 10000.0;
constexpr int64_t kMaxPos = 64;
// a*cos - b*sin cancels: a result near zero keeps the f32 error of its |a| + |b| ~ 8 sized terms.
constexpr double kRopeAbs = 1e-5;

struct RopeShape {
  RopeStyle style;
  DType qk, cache, pos;
  int64_t T, Hq, Hk, D, rotary, pad;  // Hk == 0: k absent; pad: extra elements per head row
};

// The cos/sin cache of the documented layout, written from the definition: row p is
// cos(p f_0) .. cos(p f_{r/2-1}), sin(p f_0) .. sin(p f_{r/2-1}), f_i = base^(-2i/r).
void fill_cache(HostTensor& cache, int64_t rotary) {
  const int64_t half = rotary / 2;
  for (int64_t p = 0; p < kMaxPos; ++p) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) * std::pow(kRopeBase, -2.0 * static_cast<double>(i) / static_cast<double>(rotary));
      cache.set({p, i}, std::cos(angle));
      cache.set({p, half + i}, std::sin(angle));
    }
  }
}

Case rope_case(Rng& rng, const RopeShape& s) {
  Case c("rope", cat(s.style == RopeStyle::neox ? "neox " : "gptj ", dtype_name(s.qk), " T=", s.T, " Hq=", s.Hq,
                     " Hk=", s.Hk, " D=", s.D, " rotary=", s.rotary, " cache ", dtype_name(s.cache), " pos ",
                     dtype_name(s.pos), s.pad ? " strided heads" : ""));
  fill_randint(c.in("positions", s.pos, {s.T}), rng, 0, kMaxPos - 1);
  fill_cache(c.in("cos_sin_cache", s.cache, {kMaxPos, s.rotary}), s.rotary);
  fill_normal(c.inout("q", s.qk, {s.T, s.Hq, s.D}, float_rule(s.qk, kRopeAbs), s.pad), rng);
  if (s.Hk > 0) fill_normal(c.inout("k", s.qk, {s.T, s.Hk, s.D}, float_rule(s.qk, kRopeAbs), s.pad), rng);
  const RopeStyle style = s.style;
  c.set_call([style](const ExecContext& ctx, const Args& a) {
    return rope(ctx, a["positions"], a["q"], a["k"], a["cos_sin_cache"], style);
  });
  return c;
}
}  // namespace

std::vector<Case> rope_cases(Rng& rng) {
  std::vector<Case> v;
  v.push_back(rope_case(rng, {RopeStyle::neox, DType::bf16, DType::f32, DType::i64, 7, 4, 2, 128, 128, 0}));
  v.push_back(rope_case(rng, {RopeStyle::gptj, DType::f16, DType::f16, DType::i32, 5, 3, 1, 64, 64, 0}));
  v.push_back(rope_case(rng, {RopeStyle::neox, DType::bf16, DType::f32, DType::i32, 6, 4, 2, 128, 64, 8}));
  v.push_back(rope_case(rng, {RopeStyle::gptj, DType::f32, DType::f32, DType::i32, 3, 2, 0, 64, 32, 0}));
  v.push_back(rope_case(rng, {RopeStyle::neox, DType::bf16, DType::bf16, DType::i32, 9, 5, 1, 72, 72, 0}));
  return v;
}

}  // namespace tejas::check
