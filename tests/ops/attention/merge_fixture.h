// Random partial attention states and the naive long-double merge, for test_merge_states*.cpp.
#pragma once
#include <cstdint>
#include <cmath>
#include <limits>
#include <vector>

#include "check/host_tensor.h"
#include "ops/attention/naive_attention.h"

namespace attn_test {

using tejas::DType;
using tejas::check::HostTensor;
using tejas::check::Rng;

// S parts of states over N rows, H heads, head dim D, stacked as v [S, N, H, D], lse [S, N, H]
// (the two-part op takes views of parts 0 and 1).
struct MergeProblem {
  int64_t S, N, H, D;
  HostTensor v, lse, out, out_lse;
  MergeProblem(DType dt, int64_t s, int64_t n, int64_t h, int64_t d, int64_t pad = 0)
      : S(s), N(n), H(h), D(d), v(dt, {s, n, h, d}, pad), lse(DType::f32, {s, n, h}), out(dt, {n, h, d}, pad),
        out_lse(DType::f32, {n, h}) {}
  // Part s of a stacked tensor as a view with the leading dimension dropped.
  static tejas::TensorView part(const HostTensor& t, int64_t s) {
    tejas::TensorView p = t.view();
    p.ndim -= 1;
    for (int d = 0; d < p.ndim; ++d) {
      p.shape[d] = t.view().shape[d + 1];
      p.stride[d] = t.view().stride[d + 1];
    }
    p.data = static_cast<char*>(t.view().data) + s * t.view().stride[0] * tejas::dtype_bits(t.dtype()) / 8;
    return p;
  }
};

inline void fill_states(MergeProblem& m, Rng& rng, double lse_std) {
  fill_normal(m.v, rng);
  fill_normal(m.lse, rng, 0.0, lse_std);
}

// Naive merge of the stored states: sum e^lse v / sum e^lse in long double, no max subtraction;
// -inf parts skipped (their v is never read).
struct NaiveMerged {
  HostTensor out, out_lse;
};

inline NaiveMerged naive_merge(const MergeProblem& m) {
  NaiveMerged r{HostTensor(m.out.dtype(), {m.N, m.H, m.D}), HostTensor(DType::f32, {m.N, m.H})};
  for (int64_t n = 0; n < m.N; ++n)
    for (int64_t h = 0; h < m.H; ++h) {
      Real denom = 0;
      std::vector<Real> num(static_cast<size_t>(m.D), 0);
      for (int64_t s = 0; s < m.S; ++s) {
        const Real l = m.lse.get({s, n, h});
        if (std::isinf(l) && l < 0) continue;
        const Real w = std::exp(l);
        denom += w;
        for (int64_t d = 0; d < m.D; ++d) num[static_cast<size_t>(d)] += w * Real(m.v.get({s, n, h, d}));
      }
      for (int64_t d = 0; d < m.D; ++d)
        r.out.set({n, h, d}, denom == 0 ? 0.0 : static_cast<double>(num[static_cast<size_t>(d)] / denom));
      r.out_lse.set({n, h}, static_cast<double>(std::log(denom)));  // log(0) = -inf: all parts empty
    }
  return r;
}

}  // namespace attn_test
