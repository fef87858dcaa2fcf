// Shared by the activation tests: inputs, long-double expectations and a closeness check that
// allows one rounding (long double vs the float64 reference may straddle a tie).
#pragma once
#include <cstdint>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "check/host_tensor.h"
#include "support/op_snapshots.h"
#include "support/seed.h"
#include "ops/common/ref_numeric.h"
#include "tejas/context.h"

namespace tejas::acttest {

inline ExecContext reference_ctx() {
  ExecContext ctx;
  ctx.backend = Backend::reference;
  return ctx;
}

// One expected element: the value in long double and how far the test's own formula may be off
// in absolute terms (0 unless it suffers cancellation).
struct Expected {
  long double value;
  long double abs_err = 0.0L;
};

using GatedFn = std::function<Expected(long double gate, long double up)>;

// Expectation for out [T, F] from x [T, 2F] = [gate | up].
inline std::vector<Expected> expected_gated(const check::HostTensor& x, const GatedFn& fn) {
  const int64_t T = x.shape()[0], F = x.shape()[1] / 2;
  std::vector<Expected> want;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t f = 0; f < F; ++f) want.push_back(fn(x.get({t, f}), x.get({t, F + f})));
  return want;
}

// got must hold NaN exactly where want is NaN, equal infinities, and elsewhere be within one
// ulp of want rounded to got's dtype (or within want's own absolute error).
inline ::testing::AssertionResult within_one_rounding(const check::HostTensor& got, const std::vector<Expected>& want) {
  for (int64_t i = 0; i < got.numel(); ++i) {
    const Expected& w = want[static_cast<size_t>(i)];
    const double g = got.get_flat(i);
    const double wv = static_cast<double>(w.value);
    bool good;
    if (std::isnan(wv) || std::isnan(g)) good = std::isnan(wv) && std::isnan(g);
    else if (std::isinf(wv) || std::isinf(g)) good = ref::round_to(got.dtype(), wv) == g;
    else
      good = check::ulp_distance(got.dtype(), got.bits_flat(i), ref::encode(got.dtype(), wv)) <= 1 ||
             std::fabs(static_cast<long double>(g) - w.value) <= w.abs_err;
    if (!good)
      return ::testing::AssertionFailure() << "at " << check::index_string(got.shape(), i) << ": got " << g
                                           << " want " << wv << " (+- " << static_cast<double>(w.abs_err) << ")";
  }
  return ::testing::AssertionSuccess();
}

// x [T, 2F]: gate ~ N(0, gate_sd), up ~ N(0, 2).
inline void fill_gate_up(check::HostTensor& x, check::Rng& rng, double gate_sd) {
  const int64_t F = x.shape()[1] / 2;
  for (int64_t t = 0; t < x.shape()[0]; ++t)
    for (int64_t f = 0; f < F; ++f) {
      x.set({t, f}, rng.normal(0.0, gate_sd));
      x.set({t, F + f}, rng.normal(0.0, 2.0));
    }
}

struct Shape {
  int64_t T, F, pad;
};
// T = 1, 3, 1023 (small F for the large T); F = 1, odd, 4104; padded token strides.
inline constexpr Shape kShapes[] = {{1, 1, 0}, {3, 7, 0}, {1023, 3, 2}, {2, 4104, 0}, {3, 33, 5}};

// For every dtype and kShapes entry: x with gates ~ N(0, gate_sd), `call(x, out)` (an op on the
// reference backend) within one rounding of expected_gated(x, fn), x unchanged, out's padding and
// guards intact.
template <class Call>
void expect_gated_reference(check::Rng& rng, double gate_sd, const Call& call, const GatedFn& fn) {
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    for (const Shape& s : kShapes) {
      SCOPED_TRACE(::testing::Message() << dtype_name(dt) << " T=" << s.T << " F=" << s.F << " pad=" << s.pad);
      check::HostTensor x(dt, {s.T, 2 * s.F}, s.pad), out(dt, {s.T, s.F}, s.pad);
      fill_gate_up(x, rng, gate_sd);
      const auto x_before = optest::bits_of(x);
      TEJAS_ASSERT_OK(call(x, out));
      EXPECT_TRUE(within_one_rounding(out, expected_gated(x, fn)));
      EXPECT_TRUE(optest::unchanged(x, x_before)) << "x is an input";
      EXPECT_TRUE(out.padding_intact() && out.guards_intact());
    }
  }
}

}  // namespace tejas::acttest
