#include "ops/rope/checks.h"

#include <string>

#include "ops/rope/plan.h"
#include "runtime/device_copy.h"

namespace tejas::rotary {

void check_layout(detail::Validator& v, const TensorView& t, const char* name) {
  v.nonnegative_strides(t, name).inner_contiguous(t, name).element_aligned(t, name);
}

void check_qk_cache(detail::Validator& v, int64_t T, const TensorView& positions, const TensorView& q,
                    const TensorView& k, const TensorView& cache, std::initializer_list<DType> q_dtypes) {
  v.dtype_in(q, "q", q_dtypes);
  v.same_dtype(k, "k", q, "q");
  if (q.dtype == DType::f32) v.dtype_in(cache, kCacheName, {DType::f32});
  else v.dtype_in(cache, kCacheName, {DType::f32, q.dtype});
  v.rank(q, "q", 3).rank(k, "k", 3).rank(cache, kCacheName, 2);
  if (!v.ok()) return;
  const int64_t D = q.shape[2];
  v.dim_eq(q, "q", 0, T, "positions' T").dim_min(q, "q", 1, 1);
  v.dim_eq(k, "k", 0, T, "positions' T").dim_min(k, "k", 1, 1).dim_eq(k, "k", 2, D, "q's head dim");
  v.dim_min(cache, kCacheName, 0, 1);
  // Each at most 2^56 (Validator::defined's extent rule): the sum cannot wrap.
  const int64_t heads = q.shape[1] + (k.defined() ? k.shape[1] : 0);
  v.require(heads <= kMaxHeads, [&] {
    return "q, k: expected at most " + std::to_string(kMaxHeads) + " heads in all (q's dim 1 plus k's), got " +
           std::to_string(heads);
  });
  v.require(D <= kMaxHeadDim, [&] {
    return "q: expected a head dim (dim 2) of at most " + std::to_string(kMaxHeadDim) + ", got " + std::to_string(D);
  });
  const int64_t rotary_dim = cache.shape[1];
  v.require(rotary_dim >= 2 && rotary_dim % 2 == 0 && rotary_dim <= D, [&] {
    return std::string(kCacheName) + ": expected an even rotary_dim (dim 1) in [2, " + std::to_string(D) +
           "] (q's head dim), got " + std::to_string(rotary_dim);
  });
  for (const detail::NamedTensor& nt :
       {detail::NamedTensor{"positions", &positions}, {"q", &q}, {"k", &k}, {kCacheName, &cache}})
    check_layout(v, *nt.t, nt.name);
  v.distinct_elements(q, "q").distinct_elements(k, "k");
  v.no_overlap(q, "q", k, "k")
      .no_overlap(q, "q", positions, "positions")
      .no_overlap(q, "q", cache, kCacheName)
      .no_overlap(k, "k", positions, "positions")
      .no_overlap(k, "k", cache, kCacheName);
}

Status host_view(const char* op, const ExecContext& ctx, Backend backend, const TensorView& t,
                 std::vector<uint8_t>* storage, TensorView* host) {
  if (backend != Backend::cuda) {
    *host = t;
    return Status::Ok();
  }
#if TEJAS_WITH_CUDA
  return detail::copy_view_to_host(op, ctx, t, storage, host);
#else
  (void)ctx;
  (void)storage;
  (void)host;
  return detail::backend_unsupported(op, backend, "debug checks in a host-only build (no CUDA)");
#endif
}

}  // namespace tejas::rotary
