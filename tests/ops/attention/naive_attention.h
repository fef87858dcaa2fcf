// Naive long-double attention for the attention tests, written independently of the
// reference backend: explicit key lists, no max subtraction (long double's exponent range,
// up to e^11356, holds every logit these tests make), plain sums.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "check/host_tensor.h"

namespace attn_test {

using Real = long double;
using Row = std::vector<Real>;

static_assert(std::numeric_limits<Real>::max_exponent >= 16384,
              "the naive softmax relies on an extended exponent range (x86 or quad long double)");

// Attention state of one query over a key set: out [D] and lse (natural log).
struct State {
  Row out;
  Real lse = 0;
};

struct Logits {
  Real scale = 1;     // multiplies <q, k>
  Real soft_cap = 0;  // 0: off
  bool has_sink = false;
  Real sink = 0;
};

inline Real dot(const Row& a, const Row& b) {
  Real s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// softmax(s)-weighted sum of `values`, the sink adding exp(sink) to the denominator only.
// An empty key set without a sink is the empty state: out = 0, lse = -inf.
inline State attend(const Row& q, const std::vector<Row>& keys, const std::vector<Row>& values, const Logits& lg,
                    size_t head_dim) {
  State st;
  st.out.assign(head_dim, 0);
  Real denom = lg.has_sink ? std::exp(lg.sink) : 0;
  std::vector<Real> e(keys.size());
  for (size_t k = 0; k < keys.size(); ++k) {
    Real s = lg.scale * dot(q, keys[k]);
    if (lg.soft_cap > 0) s = lg.soft_cap * std::tanh(s / lg.soft_cap);
    e[k] = std::exp(s);
    denom += e[k];
  }
  if (denom == 0 && keys.empty()) {
    st.lse = -std::numeric_limits<Real>::infinity();
    return st;
  }
  for (size_t k = 0; k < keys.size(); ++k)
    for (size_t d = 0; d < head_dim; ++d) st.out[d] += e[k] / denom * values[k][d];
  st.lse = std::log(denom);
  return st;
}

// Largest |x| over a tensor's finite elements (scales absolute tolerances).
inline double max_abs(const tejas::check::HostTensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double x = std::fabs(t.get_flat(i));
    if (std::isfinite(x) && x > m) m = x;
  }
  return m;
}

// Every element still holds the poison, and neither guards nor padding were touched.
inline bool untouched(const tejas::check::HostTensor& t) {
  const uint64_t poison = t.poison_code();
  for (int64_t i = 0; i < t.numel(); ++i)
    if (t.bits_flat(i) != poison) return false;
  return t.guards_intact() && t.padding_intact();
}

// Tolerance for an output rounded once from float64 (the reference) against the same value
// rounded once from long double (the test): the float64 evaluation error is ~1e-13 of the
// result's scale, far under half an ulp of f32/f16/bf16, so the two roundings agree or land on
// neighbouring codes (1 ulp). Results that cancel to near zero have tiny ulps; there the
// absolute bound, relative to the largest expected value, applies.
inline constexpr double kRoundingAbsRel = 1e-9;
inline tejas::check::Tolerance once_rounded(const tejas::check::HostTensor& want) {
  return tejas::check::Tolerance{kRoundingAbsRel * max_abs(want), 0.0, 1};
}

}  // namespace attn_test
