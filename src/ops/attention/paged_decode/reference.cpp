#include "ops/attention/paged_decode/reference.h"

#include <cmath>
#include <limits>
#include <vector>

#include "ops/attention/paged_decode/indices.h"
#include "ops/common/ref_numeric.h"
#include "runtime/validate.h"

namespace tejas::attn {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// One request's keys and values for one kv head, dequantized: rows [first, L) of the request.
struct GatheredKv {
  int64_t first = 0;
  std::vector<double> k, v;  // [(L - first) * D]
  const double* k_row(int64_t key, int64_t D) const { return k.data() + (key - first) * D; }
  const double* v_row(int64_t key, int64_t D) const { return v.data() + (key - first) * D; }
};

GatheredKv gather(const TensorView& k_cache, const TensorView& v_cache, const TensorView& block_table, int64_t b,
                  int64_t kv_head, int64_t first, int64_t L, double k_scale, double v_scale) {
  const int64_t block_size = k_cache.shape[1], D = k_cache.shape[3];
  GatheredKv g;
  g.first = first;
  g.k.resize(static_cast<size_t>((L - first) * D));
  g.v.resize(g.k.size());
  for (int64_t key = first; key < L; ++key) {
    const int64_t blk = detail::read_index(block_table, {b, key / block_size});
    const int64_t row = key % block_size;
    double* kr = g.k.data() + (key - first) * D;
    double* vr = g.v.data() + (key - first) * D;
    for (int64_t d = 0; d < D; ++d) {
      kr[d] = ref::at(k_cache, blk, row, kv_head, d) * k_scale;
      vr[d] = ref::at(v_cache, blk, row, kv_head, d) * v_scale;
    }
  }
  return g;
}

double capped(double s, double cap) { return cap > 0.0 ? cap * std::tanh(s / cap) : s; }

}  // namespace

void paged_decode_reference(const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                            const TensorView& block_table, const TensorView& seq_lens, const TensorView& sinks,
                            const PagedDecodeParams& params, const TensorView& out, const TensorView& lse) {
  const int64_t B = q.shape[0], Q = q.shape[1], Hq = q.shape[2], D = q.shape[3];
  const int64_t Hkv = k_cache.shape[2], group = Hq / Hkv;
  const double scale = params.softmax_scale > 0.0 ? params.softmax_scale : 1.0 / std::sqrt(static_cast<double>(D));
  // Scales only apply to fp8 caches; validation made them exactly 1 otherwise.
  const double k_scale = params.k_scale, v_scale = params.v_scale;

  std::vector<double> qv(static_cast<size_t>(D)), logits, acc(static_cast<size_t>(D));
  for (int64_t b = 0; b < B; ++b) {
    const int64_t L = detail::read_index(seq_lens, {b});
    const int64_t first = first_used_key(L, Q, params.window_left);
    for (int64_t g = 0; g < Hkv; ++g) {
      const GatheredKv kv = gather(k_cache, v_cache, block_table, b, g, first, L, k_scale, v_scale);
      for (int64_t h = g * group; h < (g + 1) * group; ++h) {
        const double sink = sinks.defined() ? ref::at(sinks, h) : kNegInf;
        for (int64_t j = 0; j < Q; ++j) {
          const int64_t p = query_position(L, Q, j);
          const int64_t lo = first_key_for(p, params.window_left);
          for (int64_t d = 0; d < D; ++d) qv[static_cast<size_t>(d)] = ref::at(q, b, j, h, d);
          logits.assign(static_cast<size_t>(p + 1 - lo), 0.0);
          // Max-subtracted softmax: logits may be far beyond exp's range. NaN logits skip the
          // max and then poison the sum, which is the documented propagation.
          double m = sink;
          for (int64_t key = lo; key <= p; ++key) {
            const double* kr = kv.k_row(key, D);
            double dot = 0.0;
            for (int64_t d = 0; d < D; ++d) dot += qv[static_cast<size_t>(d)] * kr[d];
            const double s = capped(scale * dot, params.logits_soft_cap);
            logits[static_cast<size_t>(key - lo)] = s;
            if (s > m) m = s;
          }
          double denom = sinks.defined() ? std::exp(sink - m) : 0.0;
          acc.assign(static_cast<size_t>(D), 0.0);
          for (int64_t key = lo; key <= p; ++key) {
            const double w = std::exp(logits[static_cast<size_t>(key - lo)] - m);
            denom += w;
            const double* vr = kv.v_row(key, D);
            for (int64_t d = 0; d < D; ++d) acc[static_cast<size_t>(d)] += w * vr[d];
          }
          // Every query sees its own key (L >= Q), so denom holds at least one term.
          for (int64_t d = 0; d < D; ++d) ref::put(out, b, j, h, d, acc[static_cast<size_t>(d)] / denom);
          if (lse.defined()) ref::put(lse, b, j, h, m + std::log(denom));
        }
      }
    }
  }
}

}  // namespace tejas::attn
