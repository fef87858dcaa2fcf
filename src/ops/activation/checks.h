// Argument checks shared by the activation ops (rules: tejas/activation.h).
#pragma once
#include <cstdint>
#include <string>

#include "ops/activation/config.h"
#include "runtime/validate.h"
#include "tejas/activation.h"

namespace tejas::act {

// Non-negative strides, contiguous innermost, data aligned to the element (byte for fp4).
inline void check_layout(detail::Validator& v, const TensorView& t, const char* name) {
  v.nonnegative_strides(t, name).inner_contiguous(t, name).element_aligned(t, name);
}

// x: defined, rank 2, [T >= 0, even >= 2] (T = 0: the ops return before any launch). Returns F
// (0 when x is unusable).
inline int64_t check_gate_up(detail::Validator& v, const TensorView& x) {
  v.defined(x, "x").rank(x, "x", 2);
  if (!v.ok()) return 0;
  const int64_t two_f = x.shape[1];
  v.require(two_f >= 2 && two_f % 2 == 0,
            [&] { return "x: expected an even dim 1 >= 2 ([gate | up]), got " + std::to_string(two_f); });
  return v.ok() ? two_f / 2 : 0;
}

inline void check_options(detail::Validator& v, const SiluMulOptions& o) {
  if (!o.clamped) return;
  v.positive_f32(o.limit, "options.limit").positive_f32(o.alpha, "options.alpha");
}

inline ActOptions to_act_options(const SiluMulOptions& o) {
  return ActOptions{o.clamped, static_cast<float>(o.limit), static_cast<float>(o.alpha)};
}

}  // namespace tejas::act
