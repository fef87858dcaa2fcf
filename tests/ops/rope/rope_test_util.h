// Shared by the rope tests: a cos/sin cache built in long double, and the reference context.
#pragma once
#include <cmath>

#include "check/host_tensor.h"
#include "tejas/context.h"

namespace tejas::ropetest {

inline constexpr long double kRopeBase = 10000.0L;

// [max_pos, rotary_dim]: cos(p f_i) then sin(p f_i), f_i = base^(-2i / rotary_dim).
inline check::HostTensor make_cache(int64_t max_pos, int64_t rotary_dim, DType dtype) {
  check::HostTensor cache(dtype, {max_pos, rotary_dim});
  const int64_t half = rotary_dim / 2;
  for (int64_t p = 0; p < max_pos; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const long double angle = p * std::pow(kRopeBase, -2.0L * i / rotary_dim);
      cache.set({p, i}, static_cast<double>(std::cos(angle)));
      cache.set({p, half + i}, static_cast<double>(std::sin(angle)));
    }
  return cache;
}

inline ExecContext reference_ctx() {
  ExecContext ctx;
  ctx.backend = Backend::reference;
  return ctx;
}

}  // namespace tejas::ropetest
