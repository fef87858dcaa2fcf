// Public entry points of rope_kv_cache_write and kv_cache_write (the cache write alone, the
// former's unfused second half): validation, backend choice, dispatch.
#include <string>
#include <vector>

#include "ops/rope/checks.h"
#include "ops/rope/plan.h"
#include "ops/rope/reference.h"
#include "runtime/validate.h"
#include "tejas/rope.h"

namespace tejas {
namespace {

constexpr const char* kOp = "rope_kv_cache_write";
constexpr const char* kKvOp = "kv_cache_write";
constexpr int kCacheRank = 4;  // [num_blocks, block_size, Hk, D]

void check_scale(detail::Validator& v, const TensorView& scale, const char* name, bool fp8, DType cache_dtype) {
  if (!fp8) {
    v.require(!scale.defined(), [&] {
      return std::string(name) + ": expected none (the cache holds " + std::string(dtype_name(cache_dtype)) +
             ", not fp8), got " + scale.describe();
    });
    return;
  }
  v.defined(scale, name).dtype_in(scale, name, {DType::f32}).shape(scale, name, {1});
  rotary::check_layout(v, scale, name);
}

// The caches against k (dtype, heads, head dim), their scales, and the layouts of v, the slots and
// the caches: the rules both cache-writing ops share. False when a later rule could not be judged.
bool check_caches(detail::Validator& v, const TensorView& k, const TensorView& val, const TensorView& slots,
                  const PagedKvCache& c) {
  v.dtype_in(c.k_cache, "k_cache", {k.dtype, DType::e4m3, DType::e5m2}).same_dtype(c.v_cache, "v_cache", c.k_cache, "k_cache");
  v.rank(c.k_cache, "k_cache", kCacheRank);
  if (!v.ok()) return false;
  v.dim_min(c.k_cache, "k_cache", 0, 1).dim_min(c.k_cache, "k_cache", 1, 1);
  v.dim_eq(c.k_cache, "k_cache", 2, k.shape[1], "k's heads").dim_eq(c.k_cache, "k_cache", 3, k.shape[2], "k's head dim");
  v.same_shape(c.v_cache, "v_cache", c.k_cache, "k_cache");
  const bool fp8 = dtype_is_fp8(c.k_cache.dtype);
  check_scale(v, c.k_scale, "k_scale", fp8, c.k_cache.dtype);
  check_scale(v, c.v_scale, "v_scale", fp8, c.k_cache.dtype);
  for (const detail::NamedTensor& nt : {detail::NamedTensor{"v", &val}, {"slot_mapping", &slots},
                                        {"k_cache", &c.k_cache}, {"v_cache", &c.v_cache}})
    rotary::check_layout(v, *nt.t, nt.name);
  v.distinct_elements(c.k_cache, "k_cache").distinct_elements(c.v_cache, "v_cache");
  return true;
}

Status validate(const TensorView& positions, const TensorView& q, const TensorView& k, const TensorView& val,
                const TensorView& cos_sin, RopeStyle style, const TensorView& slots, const PagedKvCache& c) {
  detail::Validator v(kOp);
  v.defined(positions, "positions").defined(q, "q").defined(k, "k").defined(val, "v");
  v.defined(cos_sin, rotary::kCacheName).defined(slots, "slot_mapping");
  v.defined(c.k_cache, "k_cache").defined(c.v_cache, "v_cache");
  if (!v.ok()) return v.status();
  v.dtype_in(positions, "positions", {DType::i32, DType::i64});
  v.rank(positions, "positions", 1);  // T = 0 is allowed: nothing to do
  if (!v.ok()) return v.status();
  const int64_t T = positions.shape[0];
  rotary::check_qk_cache(v, T, positions, q, k, cos_sin, {DType::bf16, DType::f16});
  v.require(style == RopeStyle::neox || style == RopeStyle::gptj,
            [&] { return "style: expected neox or gptj, got " + std::to_string(static_cast<int>(style)); });
  v.same_dtype(val, "v", q, "q").same_shape(val, "v", k, "k");
  v.dtype_in(slots, "slot_mapping", {DType::i64}).rank(slots, "slot_mapping", 1);
  if (!v.ok()) return v.status();
  v.dim_eq(slots, "slot_mapping", 0, T, "positions' T");
  if (!check_caches(v, k, val, slots, c)) return v.status();
  // Outputs (q, k, the caches) against everything else.
  v.no_overlap_each({{"q", &q}, {"k", &k}, {"k_cache", &c.k_cache}, {"v_cache", &c.v_cache}},
                    {{"positions", &positions},
                     {rotary::kCacheName, &cos_sin},
                     {"v", &val},
                     {"slot_mapping", &slots},
                     {"k_scale", &c.k_scale},
                     {"v_scale", &c.v_scale}});
  v.no_overlap(c.k_cache, "k_cache", c.v_cache, "v_cache")
      .no_overlap(c.k_cache, "k_cache", q, "q")
      .no_overlap(c.k_cache, "k_cache", k, "k")
      .no_overlap(c.v_cache, "v_cache", q, "q")
      .no_overlap(c.v_cache, "v_cache", k, "k");
  v.same_device({{"positions", &positions}, {"q", &q}, {"k", &k}, {"v", &val}, {rotary::kCacheName, &cos_sin},
                 {"slot_mapping", &slots}, {"k_cache", &c.k_cache}, {"v_cache", &c.v_cache},
                 {"k_scale", &c.k_scale}, {"v_scale", &c.v_scale}});
  return v.status();
}

// kv_cache_write's arguments: k and v read, the caches written.
Status validate_kv(const TensorView& k, const TensorView& val, const TensorView& slots, const PagedKvCache& c) {
  detail::Validator v(kKvOp);
  v.defined(k, "k").defined(val, "v").defined(slots, "slot_mapping");
  v.defined(c.k_cache, "k_cache").defined(c.v_cache, "v_cache");
  if (!v.ok()) return v.status();
  v.dtype_in(k, "k", {DType::bf16, DType::f16}).rank(k, "k", 3);
  if (!v.ok()) return v.status();
  v.dim_min(k, "k", 1, 1).dim_min(k, "k", 2, 1);  // T = 0 is allowed: nothing to do
  if (k.shape[1] > rotary::kMaxHeads)
    v.require(false, [&] {
      return "k: expected at most " + std::to_string(rotary::kMaxHeads) + " heads, got " + std::to_string(k.shape[1]);
    });
  if (k.shape[2] > rotary::kMaxHeadDim)
    v.require(false, [&] {
      return "k: expected a head dim (dim 2) of at most " + std::to_string(rotary::kMaxHeadDim) + ", got " +
             std::to_string(k.shape[2]);
    });
  v.same_dtype(val, "v", k, "k").same_shape(val, "v", k, "k");
  v.dtype_in(slots, "slot_mapping", {DType::i64}).rank(slots, "slot_mapping", 1);
  if (!v.ok()) return v.status();
  v.dim_eq(slots, "slot_mapping", 0, k.shape[0], "k's T");
  if (!check_caches(v, k, val, slots, c)) return v.status();
  rotary::check_layout(v, k, "k");
  v.no_overlap_each({{"k_cache", &c.k_cache}, {"v_cache", &c.v_cache}},
                    {{"k", &k}, {"v", &val}, {"slot_mapping", &slots}, {"k_scale", &c.k_scale}, {"v_scale", &c.v_scale}});
  v.no_overlap(c.k_cache, "k_cache", c.v_cache, "v_cache");
  v.same_device({{"k", &k}, {"v", &val}, {"slot_mapping", &slots}, {"k_cache", &c.k_cache},
                 {"v_cache", &c.v_cache}, {"k_scale", &c.k_scale}, {"v_scale", &c.v_scale}});
  return v.status();
}

// Debug-check mode on a kernel backend: positions (with a rotation), slots and scales, before any
// launch.
Status debug_checks(const char* op, const ExecContext& ctx, Backend backend, const rotary::RopeArgs& a) {
  std::vector<uint8_t> storage;
  TensorView host;
  if (a.positions.defined()) {
    TEJAS_RETURN_IF_ERROR(rotary::host_view(op, ctx, backend, a.positions, &storage, &host));
    TEJAS_RETURN_IF_ERROR(ref::check_rope_positions(op, host, a.cos_sin.shape[0]));
  }
  TEJAS_RETURN_IF_ERROR(rotary::host_view(op, ctx, backend, a.slots, &storage, &host));
  const TensorView& kc = a.cache.k_cache;
  TEJAS_RETURN_IF_ERROR(ref::check_slot_mapping(op, host, kc.shape[0] * kc.shape[1]));
  for (const detail::NamedTensor& s : {detail::NamedTensor{"k_scale", &a.cache.k_scale}, {"v_scale", &a.cache.v_scale}}) {
    if (!s.t->defined()) continue;
    TEJAS_RETURN_IF_ERROR(rotary::host_view(op, ctx, backend, *s.t, &storage, &host));
    TEJAS_RETURN_IF_ERROR(ref::check_cache_scale(op, s.name, host));
  }
  return Status::Ok();
}

// The kernel backends of both cache-writing ops: the row bound (q's tokens, or k's without a
// rotation), the debug-mode index checks, the launch.
Status run_kernels(const char* op, const ExecContext& ctx, Backend backend, const rotary::RopeArgs& a) {
  const bool rotates = a.q.defined();
  if ((rotates ? a.q : a.k).shape[0] == 0) return detail::empty_kernel_call(op, backend);
  TEJAS_RETURN_IF_ERROR(detail::check_kernel_rows(op, backend, rotates ? "q" : "k", (rotates ? a.q : a.k).shape[0]));
  if (detail::debug_checks_enabled(ctx)) TEJAS_RETURN_IF_ERROR(debug_checks(op, ctx, backend, a));
  return rotary::run_kernel_backend(op, ctx, backend, a);
}

}  // namespace

Status rope_kv_cache_write(const ExecContext& ctx, const TensorView& positions, const TensorView& q,
                           const TensorView& k, const TensorView& v, const TensorView& cos_sin_cache,
                           RopeStyle style, const TensorView& slot_mapping, const PagedKvCache& cache) {
  TEJAS_RETURN_IF_ERROR(validate(positions, q, k, v, cos_sin_cache, style, slot_mapping, cache));
  Backend backend;
  TEJAS_RETURN_IF_ERROR(detail::resolve_backend(
      kOp, ctx,
      {{"positions", &positions}, {"q", &q}, {"k", &k}, {"v", &v}, {rotary::kCacheName, &cos_sin_cache},
       {"slot_mapping", &slot_mapping}, {"k_cache", &cache.k_cache}, {"v_cache", &cache.v_cache},
       {"k_scale", &cache.k_scale}, {"v_scale", &cache.v_scale}},
      &backend));
  if (backend == Backend::reference)
    return ref::rope_kv_cache_write(positions, q, k, v, cos_sin_cache, style, slot_mapping, cache);
  rotary::RopeArgs a;
  a.positions = positions;
  a.q = q;
  a.k = k;
  a.v = v;
  a.cos_sin = cos_sin_cache;
  a.slots = slot_mapping;
  a.cache = cache;
  a.style = style;
  return run_kernels(kOp, ctx, backend, a);
}

Status kv_cache_write(const ExecContext& ctx, const TensorView& k, const TensorView& v,
                      const TensorView& slot_mapping, const PagedKvCache& cache) {
  TEJAS_RETURN_IF_ERROR(validate_kv(k, v, slot_mapping, cache));
  Backend backend;
  TEJAS_RETURN_IF_ERROR(detail::resolve_backend(
      kKvOp, ctx,
      {{"k", &k}, {"v", &v}, {"slot_mapping", &slot_mapping}, {"k_cache", &cache.k_cache},
       {"v_cache", &cache.v_cache}, {"k_scale", &cache.k_scale}, {"v_scale", &cache.v_scale}},
      &backend));
  if (backend == Backend::reference) return ref::kv_cache_write(k, v, slot_mapping, cache);
  rotary::RopeArgs a;  // no q, positions or cos/sin: no rotary columns, k copied whole
  a.k = k;
  a.v = v;
  a.slots = slot_mapping;
  a.cache = cache;
  return run_kernels(kKvOp, ctx, backend, a);
}

}  // namespace tejas
