// paged_decode_attention: argument validation, index checks and backend dispatch.
#include <cmath>
#include <string>

#include "ops/attention/common/checks.h"
#include "ops/attention/paged_decode/indices.h"
#include "ops/attention/paged_decode/reference.h"
#include "runtime/validate.h"
#include "tejas/attention.h"

namespace tejas {
namespace {

using detail::NamedTensor;

constexpr const char* kOp = "paged_decode_attention";

Status validate(const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                const TensorView& block_table, const TensorView& seq_lens, const TensorView& sinks,
                const PagedDecodeParams& params, const TensorView& out, const TensorView& lse) {
  detail::Validator v(kOp);
  v.defined(q, "q").defined(k_cache, "k_cache").defined(v_cache, "v_cache");
  v.defined(block_table, "block_table").defined(seq_lens, "seq_lens").defined(out, "out");
  if (sinks.defined()) v.defined(sinks, "sinks");  // optional; when given, sizes must be sane
  if (lse.defined()) v.defined(lse, "lse");

  v.dtype_in(q, "q", {DType::bf16, DType::f16, DType::f32}).same_dtype(out, "out", q, "q");
  v.dtype_in(k_cache, "k_cache", {DType::bf16, DType::f16, DType::e4m3, DType::e5m2});
  v.same_dtype(v_cache, "v_cache", k_cache, "k_cache");
  v.dtype_in(block_table, "block_table", {DType::i32}).dtype_in(seq_lens, "seq_lens", {DType::i32});
  v.dtype_in(sinks, "sinks", {DType::f32}).dtype_in(lse, "lse", {DType::f32});

  v.rank(q, "q", 4).rank(k_cache, "k_cache", 4).rank(v_cache, "v_cache", 4);
  v.rank(block_table, "block_table", 2).rank(seq_lens, "seq_lens", 1);
  v.rank(sinks, "sinks", 1).rank(out, "out", 4).rank(lse, "lse", 3);
  if (!v.ok()) return v.status();

  const int64_t B = q.shape[0], Q = q.shape[1], Hq = q.shape[2], D = q.shape[3];
  v.dim_min(q, "q", 1, 1).require(Q <= kMaxDecodeQueries, [&] {
    return "q: expected dim 1 (queries per request) <= " + std::to_string(kMaxDecodeQueries) + ", got " +
           std::to_string(Q);
  });
  v.dim_min(q, "q", 2, 1).dim_min(q, "q", 3, 1);
  v.dim_min(k_cache, "k_cache", 0, 1).dim_min(k_cache, "k_cache", 1, 1).dim_min(k_cache, "k_cache", 2, 1);
  if (!v.ok()) return v.status();
  const int64_t Hkv = k_cache.shape[2];
  v.require(Hq % Hkv == 0, [&] {
    return "k_cache: expected dim 2 (kv heads) dividing q's " + std::to_string(Hq) + " heads, got " +
           std::to_string(Hkv);
  });
  v.dim_eq(k_cache, "k_cache", 3, D, "q's head dim").same_shape(v_cache, "v_cache", k_cache, "k_cache");
  v.dim_eq(block_table, "block_table", 0, B, "q's batch").dim_min(block_table, "block_table", 1, 1);
  v.shape(seq_lens, "seq_lens", {B}).shape(sinks, "sinks", {Hq});
  v.same_shape(out, "out", q, "q").shape(lse, "lse", {B, Q, Hq});

  const NamedTensor all[] = {{"q", &q},         {"k_cache", &k_cache}, {"v_cache", &v_cache},
                             {"block_table", &block_table}, {"seq_lens", &seq_lens}, {"sinks", &sinks},
                             {"out", &out},     {"lse", &lse}};
  for (const NamedTensor& t : all) v.inner_contiguous(*t.t, t.name).nonnegative_strides(*t.t, t.name);
  v.distinct_elements(out, "out");
  v.distinct_elements(lse, "lse");

  attn::require_finite_nonnegative(v, params.softmax_scale, "params.softmax_scale", " (0 selects 1/sqrt(D))");
  v.require(params.window_left >= -1, [&] {
    return "params.window_left: expected >= -1 (-1: no window), got " + std::to_string(params.window_left);
  });
  attn::require_finite_nonnegative(v, params.logits_soft_cap, "params.logits_soft_cap", " (0: off)");
  if (v.ok()) {
    const bool fp8 = dtype_is_fp8(k_cache.dtype);
    const char* rule = fp8 ? " (fp8 cache: finite and > 0)" : " (exactly 1: the cache is not fp8)";
    auto scale_ok = [&](float s) { return fp8 ? std::isfinite(s) && s > 0.0f : s == 1.0f; };
    v.require(scale_ok(params.k_scale), [&] {
      return std::string("params.k_scale: expected a scale") + rule + ", got " + attn::format_value(params.k_scale);
    });
    v.require(scale_ok(params.v_scale), [&] {
      return std::string("params.v_scale: expected a scale") + rule + ", got " + attn::format_value(params.v_scale);
    });
  }

  v.same_device({{"q", &q}, {"k_cache", &k_cache}, {"v_cache", &v_cache}, {"block_table", &block_table},
                 {"seq_lens", &seq_lens}, {"sinks", &sinks}, {"out", &out}, {"lse", &lse}});
  const NamedTensor inputs[] = {{"q", &q},
                                {"k_cache", &k_cache},
                                {"v_cache", &v_cache},
                                {"block_table", &block_table},
                                {"seq_lens", &seq_lens},
                                {"sinks", &sinks}};
  for (const NamedTensor& t : inputs) v.no_overlap(out, "out", *t.t, t.name).no_overlap(lse, "lse", *t.t, t.name);
  v.no_overlap(lse, "lse", out, "out");
  return v.status();
}

}  // namespace

Status paged_decode_attention(const ExecContext& ctx, const TensorView& q, const TensorView& k_cache,
                              const TensorView& v_cache, const TensorView& block_table, const TensorView& seq_lens,
                              const TensorView& sinks, const PagedDecodeParams& params, const TensorView& out,
                              const TensorView& lse) {
  TEJAS_RETURN_IF_ERROR(validate(q, k_cache, v_cache, block_table, seq_lens, sinks, params, out, lse));
  Backend backend;
  TEJAS_RETURN_IF_ERROR(detail::resolve_backend(kOp, ctx,
                                                {{"q", &q},
                                                 {"k_cache", &k_cache},
                                                 {"v_cache", &v_cache},
                                                 {"block_table", &block_table},
                                                 {"seq_lens", &seq_lens},
                                                 {"sinks", &sinks},
                                                 {"out", &out},
                                                 {"lse", &lse}},
                                                &backend));
  const attn::PagedGeometry geom{q.shape[1], k_cache.shape[1], k_cache.shape[0], params.window_left};
  // Index contents live in host memory for the reference and emulator backends; the cuda
  // backend will copy them to the host for this check in debug mode.
  if (backend == Backend::reference || (backend == Backend::emulator && detail::debug_checks_enabled(ctx)))
    TEJAS_RETURN_IF_ERROR(attn::check_paged_indices(kOp, block_table, seq_lens, geom));
  if (backend != Backend::reference) return detail::backend_unsupported(kOp, backend);
  attn::paged_decode_reference(q, k_cache, v_cache, block_table, seq_lens, sinks, params, out, lse);
  return Status::Ok();
}

}  // namespace tejas
