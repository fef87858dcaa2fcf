// Public entry point of rotary embedding: validation, backend choice, dispatch.
#include <string>

#include "ops/norm/layout_checks.h"
#include "ops/rope/reference.h"
#include "runtime/validate.h"
#include "tejas/rope.h"

namespace tejas {
namespace {

constexpr const char* kOp = "rope";
constexpr const char* kCache = "cos_sin_cache";

void check_layout(detail::Validator& v, const TensorView& t, const char* name) {
  v.nonnegative_strides(t, name).inner_contiguous(t, name).aligned(t, name, detail::element_bytes(t));
}

Status validate(const TensorView& positions, const TensorView& q, const TensorView& k, const TensorView& cache,
                RopeStyle style) {
  detail::Validator v(kOp);
  v.defined(positions, "positions").defined(q, "q").defined(cache, kCache);
  if (k.data != nullptr) v.defined(k, "k");  // k is optional; when given, sizes must be sane
  if (!v.ok()) return v.status();

  v.dtype_in(positions, "positions", {DType::i32, DType::i64});
  v.dtype_in(q, "q", {DType::bf16, DType::f16, DType::f32});
  v.same_dtype(k, "k", q, "q");
  if (q.dtype == DType::f32) v.dtype_in(cache, kCache, {DType::f32});
  else v.dtype_in(cache, kCache, {DType::f32, q.dtype});

  v.rank(positions, "positions", 1).rank(q, "q", 3).rank(k, "k", 3).rank(cache, kCache, 2);
  v.dim_min(positions, "positions", 0, 1);
  if (!v.ok()) return v.status();
  const int64_t T = positions.shape[0], D = q.shape[2];
  v.dim_eq(q, "q", 0, T, "positions' T").dim_min(q, "q", 1, 1);
  v.dim_eq(k, "k", 0, T, "positions' T").dim_min(k, "k", 1, 1).dim_eq(k, "k", 2, D, "q's head dim");
  v.dim_min(cache, kCache, 0, 1);
  const int64_t rotary_dim = cache.shape[1];
  v.require(rotary_dim >= 2 && rotary_dim % 2 == 0 && rotary_dim <= D,
            std::string(kCache) + ": expected an even rotary_dim (dim 1) in [2, " + std::to_string(D) +
                "] (q's head dim), got " + std::to_string(rotary_dim));
  for (const detail::NamedTensor& nt :
       {detail::NamedTensor{"positions", &positions}, {"q", &q}, {"k", &k}, {kCache, &cache}})
    check_layout(v, *nt.t, nt.name);
  v.require(style == RopeStyle::neox || style == RopeStyle::gptj,
            "style: expected neox or gptj, got " + std::to_string(static_cast<int>(style)));
  v.same_device({{"positions", &positions}, {"q", &q}, {"k", &k}, {kCache, &cache}});

  for (const detail::NamedTensor& nt : {detail::NamedTensor{"q", &q}, {"k", &k}})
    if (nt.t->defined())
      v.require(detail::elements_distinct(*nt.t), std::string(nt.name) +
                                                      ": expected an output whose elements do not overlap each "
                                                      "other, got " + nt.t->describe());
  v.no_overlap(q, "q", k, "k")
      .no_overlap(q, "q", positions, "positions")
      .no_overlap(q, "q", cache, kCache)
      .no_overlap(k, "k", positions, "positions")
      .no_overlap(k, "k", cache, kCache);
  return v.status();
}

}  // namespace

Status rope(const ExecContext& ctx, const TensorView& positions, const TensorView& q, const TensorView& k,
            const TensorView& cos_sin_cache, RopeStyle style) {
  TEJAS_RETURN_IF_ERROR(validate(positions, q, k, cos_sin_cache, style));
  Backend backend;
  TEJAS_RETURN_IF_ERROR(detail::resolve_backend(
      kOp, ctx, {{"positions", &positions}, {"q", &q}, {"k", &k}, {kCache, &cos_sin_cache}}, &backend));
  switch (backend) {
    case Backend::reference:
      return ref::rope(positions, q, k, cos_sin_cache, style);  // checks positions always
    case Backend::emulator:
      // Host tensors: the debug-check mode can read positions directly.
      if (detail::debug_checks_enabled(ctx))
        TEJAS_RETURN_IF_ERROR(ref::check_rope_positions(positions, cos_sin_cache.shape[0]));
      return detail::backend_unsupported(kOp, backend);
    case Backend::cuda:
      // Kernels plug in here; in debug-check mode positions are copied to the host and checked.
      return detail::backend_unsupported(kOp, backend);
    case Backend::automatic:  // resolved above; listed for -Wswitch
      break;
  }
  return Status::Internal(std::string(kOp) + ": unresolved backend");
}

}  // namespace tejas
