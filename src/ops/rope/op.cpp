// Public entry points of rope and mrope: validation, backend choice, dispatch.
#include <string>
#include <vector>

#include "ops/rope/checks.h"
#include "ops/rope/plan.h"
#include "ops/rope/reference.h"
#include "runtime/validate.h"
#include "tejas/rope.h"

namespace tejas {
namespace {

constexpr const char* kRope = "rope";
constexpr const char* kMrope = "mrope";
constexpr int64_t kMropeRows = rotary::kNumSections;

Status validate_rope(const TensorView& positions, const TensorView& q, const TensorView& k, const TensorView& cache,
                     RopeStyle style) {
  detail::Validator v(kRope);
  v.defined(positions, "positions").defined(q, "q").defined(cache, rotary::kCacheName);
  if (k.defined()) v.defined(k, "k");  // k is optional; when given, sizes must be sane
  if (!v.ok()) return v.status();
  v.dtype_in(positions, "positions", {DType::i32, DType::i64});
  v.rank(positions, "positions", 1);  // T = 0 is allowed: nothing to do
  if (!v.ok()) return v.status();
  rotary::check_qk_cache(v, positions.shape[0], positions, q, k, cache, {DType::bf16, DType::f16, DType::f32});
  v.require(style == RopeStyle::neox || style == RopeStyle::gptj,
            [&] { return "style: expected neox or gptj, got " + std::to_string(static_cast<int>(style)); });
  v.same_device({{"positions", &positions}, {"q", &q}, {"k", &k}, {rotary::kCacheName, &cache}});
  return v.status();
}

Status validate_mrope(const TensorView& positions, const TensorView& q, const TensorView& k, const TensorView& cache,
                      const MropeSection& s) {
  detail::Validator v(kMrope);
  v.defined(positions, "positions").defined(q, "q").defined(cache, rotary::kCacheName);
  if (k.defined()) v.defined(k, "k");
  if (!v.ok()) return v.status();
  v.dtype_in(positions, "positions", {DType::i32, DType::i64});
  v.rank(positions, "positions", 2)
      .dim_eq(positions, "positions", 0, kMropeRows, "temporal, height, width");  // T = 0: nothing to do
  if (!v.ok()) return v.status();
  rotary::check_qk_cache(v, positions.shape[1], positions, q, k, cache, {DType::bf16, DType::f16, DType::f32});
  if (!v.ok()) return v.status();
  const int64_t half = cache.shape[1] / 2;
  // Each size bounded before the sum: three huge sizes must not wrap around to `half`.
  const auto in_range = [half](int64_t n) { return n >= 0 && n <= half; };
  v.require(
      in_range(s.temporal) && in_range(s.height) && in_range(s.width) && s.temporal + s.height + s.width == half, [&] {
        return "section: expected three sizes >= 0 summing to rotary_dim / 2 = " + std::to_string(half) + ", got {" +
               std::to_string(s.temporal) + ", " + std::to_string(s.height) + ", " + std::to_string(s.width) + "}";
      });
  v.same_device({{"positions", &positions}, {"q", &q}, {"k", &k}, {rotary::kCacheName, &cache}});
  return v.status();
}

// Kernel backends: positions checked in debug-check mode, then the kernel.
Status run_kernels(const char* op, const ExecContext& ctx, Backend backend, const rotary::RopeArgs& a) {
  if (a.q.shape[0] == 0) return detail::empty_kernel_call(op, backend);
  TEJAS_RETURN_IF_ERROR(detail::check_kernel_rows(op, backend, "q", a.q.shape[0]));
  if (detail::debug_checks_enabled(ctx)) {
    std::vector<uint8_t> storage;
    TensorView host;
    TEJAS_RETURN_IF_ERROR(rotary::host_view(op, ctx, backend, a.positions, &storage, &host));
    TEJAS_RETURN_IF_ERROR(ref::check_rope_positions(op, host, a.cos_sin.shape[0]));
  }
  return rotary::run_kernel_backend(op, ctx, backend, a);
}

}  // namespace

Status rope(const ExecContext& ctx, const TensorView& positions, const TensorView& q, const TensorView& k,
            const TensorView& cos_sin_cache, RopeStyle style) {
  TEJAS_RETURN_IF_ERROR(validate_rope(positions, q, k, cos_sin_cache, style));
  Backend backend;
  TEJAS_RETURN_IF_ERROR(detail::resolve_backend(
      kRope, ctx, {{"positions", &positions}, {"q", &q}, {"k", &k}, {rotary::kCacheName, &cos_sin_cache}}, &backend));
  if (backend == Backend::reference) return ref::rope(positions, q, k, cos_sin_cache, style);  // checks positions
  rotary::RopeArgs a;
  a.positions = positions;
  a.q = q;
  a.k = k;
  a.cos_sin = cos_sin_cache;
  a.style = style;
  return run_kernels(kRope, ctx, backend, a);
}

Status mrope(const ExecContext& ctx, const TensorView& positions, const TensorView& q, const TensorView& k,
             const TensorView& cos_sin_cache, const MropeSection& section) {
  TEJAS_RETURN_IF_ERROR(validate_mrope(positions, q, k, cos_sin_cache, section));
  Backend backend;
  TEJAS_RETURN_IF_ERROR(detail::resolve_backend(
      kMrope, ctx, {{"positions", &positions}, {"q", &q}, {"k", &k}, {rotary::kCacheName, &cos_sin_cache}}, &backend));
  if (backend == Backend::reference) return ref::mrope(positions, q, k, cos_sin_cache, section);
  rotary::RopeArgs a;
  a.positions = positions;
  a.q = q;
  a.k = k;
  a.cos_sin = cos_sin_cache;
  a.style = RopeStyle::neox;
  a.mrope = true;
  a.sections[0] = section.temporal;
  a.sections[1] = section.height;
  a.sections[2] = section.width;
  return run_kernels(kMrope, ctx, backend, a);
}

}  // namespace tejas
