// Public entry points of the RMSNorm family: validation, backend choice, dispatch.
#include <string>

#include "ops/norm/launch.h"
#include "ops/norm/reference.h"
#include "runtime/validate.h"
#include "tejas/norm.h"

namespace tejas {
namespace {

constexpr const char* kRmsNorm = "rms_norm";
constexpr const char* kFusedAddRmsNorm = "fused_add_rms_norm";
constexpr const char* kFusedQuant = "fused_add_rms_norm_quant_fp8_group";
constexpr const char* kScaleName = "out_scale.scale";

// Layout rules every tensor argument shares: non-negative strides, contiguous innermost
// dimension, data aligned to the element size.
void check_layout(detail::Validator& v, const TensorView& t, const char* name) {
  v.nonnegative_strides(t, name).inner_contiguous(t, name).element_aligned(t, name);
}


// Shared by both ops; `residual` is absent for rms_norm.
Status validate(const char* op, const TensorView& x, const TensorView& residual, bool fused, const TensorView& weight,
                double eps, const TensorView& out, const Fp8Scale& sc) {
  detail::Validator v(op);
  v.defined(x, "x");
  if (fused) v.defined(residual, "residual");
  v.defined(weight, "weight").defined(out, "out");
  if (!v.ok()) return v.status();

  const DType xt = x.dtype;
  v.dtype_in(x, "x", {DType::bf16, DType::f16, DType::f32});
  if (xt == DType::f32) v.dtype_in(weight, "weight", {DType::f32});
  else v.dtype_in(weight, "weight", {xt, DType::f32});
  v.dtype_in(residual, "residual", {DType::bf16, DType::f16, DType::f32});
  v.dtype_in(out, "out", {xt, DType::e4m3});

  v.rank(x, "x", 2).rank(residual, "residual", 2).rank(weight, "weight", 1).rank(out, "out", 2);
  v.dim_min(x, "x", 1, 1);  // T = 0 is allowed: nothing to do
  v.same_shape(residual, "residual", x, "x").same_shape(out, "out", x, "x");
  if (v.ok()) v.dim_eq(weight, "weight", 0, x.shape[1], "x's H");
  for (const detail::NamedTensor& nt : {detail::NamedTensor{"x", &x}, {"residual", &residual}, {"weight", &weight},
                                        {"out", &out}})
    check_layout(v, *nt.t, nt.name);

  const bool fp8 = out.dtype == DType::e4m3;
  const bool dynamic = sc.mode == Fp8ScaleMode::dynamic_per_token;
  if (fp8) {
    v.require(dynamic || sc.mode == Fp8ScaleMode::static_per_tensor, [&] {
      return "out_scale.mode: expected dynamic_per_token or static_per_tensor, got " +
             std::to_string(static_cast<int>(sc.mode));
    });
    v.defined(sc.scale, kScaleName).dtype_in(sc.scale, kScaleName, {DType::f32}).rank(sc.scale, kScaleName, 1);
    v.dim_eq(sc.scale, kScaleName, 0, dynamic ? x.shape[0] : 1, dynamic ? "x's T: dynamic per-token scale" : "static scale");
    check_layout(v, sc.scale, kScaleName);
  } else {
    v.require(!sc.scale.defined(), [&] {
      return std::string(kScaleName) + ": expected none (out is " + std::string(dtype_name(out.dtype)) +
             ", not e4m3), got " + sc.scale.describe();
    });
  }
  v.positive_f32(eps, "eps");
  v.same_device({{"x", &x}, {"residual", &residual}, {"weight", &weight}, {"out", &out}, {kScaleName, &sc.scale}});

  const TensorView none;
  const TensorView& out_scale = fp8 && dynamic ? sc.scale : none;  // an output only when dynamic
  v.distinct_elements(out, "out");
  v.distinct_elements(residual, "residual");
  v.distinct_elements(out_scale, kScaleName);
  v.no_overlap(out, "out", x, "x", /*allow_identical=*/true)
      .no_overlap(out, "out", weight, "weight")
      .no_overlap(out, "out", residual, "residual")
      .no_overlap(out, "out", sc.scale, kScaleName)
      .no_overlap(residual, "residual", x, "x")
      .no_overlap(residual, "residual", weight, "weight")
      .no_overlap(residual, "residual", sc.scale, kScaleName)
      .no_overlap(out_scale, kScaleName, x, "x")
      .no_overlap(out_scale, kScaleName, weight, "weight");
  return v.status();
}

// The validated call on the chosen kernel backend.
Status run_kernel(const char* op, const ExecContext& ctx, Backend backend, const norm::NormArgs& args) {
  if (args.x.shape[0] == 0) return detail::empty_kernel_call(op, backend);
  TEJAS_RETURN_IF_ERROR(detail::check_kernel_rows(op, backend, "x", args.x.shape[0]));
  if (backend == Backend::emulator) return norm::launch_norm_emulator(op, ctx, args);
#if TEJAS_WITH_CUDA
  return norm::launch_norm_cuda(op, ctx, args);
#else
  return detail::cuda_not_built(op, backend);
#endif
}

Status resolve(const char* op, const ExecContext& ctx, const TensorView& x, const TensorView& residual,
               const TensorView& weight, const TensorView& out, const TensorView& scale, Backend* backend) {
  return detail::resolve_backend(
      op, ctx, {{"x", &x}, {"residual", &residual}, {"weight", &weight}, {"out", &out}, {kScaleName, &scale}}, backend);
}

Status run(const char* op, const ExecContext& ctx, const TensorView& x, const TensorView& residual, bool fused,
           const TensorView& weight, double eps, const TensorView& out, const Fp8Scale& sc) {
  TEJAS_RETURN_IF_ERROR(validate(op, x, residual, fused, weight, eps, out, sc));
  Backend backend;
  TEJAS_RETURN_IF_ERROR(resolve(op, ctx, x, residual, weight, out, sc.scale, &backend));
  if (backend == Backend::reference)
    return fused ? ref::fused_add_rms_norm(x, residual, weight, eps, out, sc) : ref::rms_norm(x, weight, eps, out, sc);
  norm::NormArgs args{x, residual, weight, out, sc.scale, eps, norm::OutKind::same};
  if (out.dtype == DType::e4m3)
    args.out_kind = sc.mode == Fp8ScaleMode::dynamic_per_token ? norm::OutKind::fp8_dynamic : norm::OutKind::fp8_static;
  return run_kernel(op, ctx, backend, args);
}

Status validate_quant(const TensorView& x, const TensorView& residual, const TensorView& weight, double eps,
                      const TensorView& q, const TensorView& scales) {
  constexpr const char* kScales = "scales";
  detail::Validator v(kFusedQuant);
  v.defined(x, "x").defined(residual, "residual").defined(weight, "weight").defined(q, "q").defined(scales, kScales);
  if (!v.ok()) return v.status();

  v.dtype_in(x, "x", {DType::bf16, DType::f16, DType::f32});
  if (x.dtype == DType::f32) v.dtype_in(weight, "weight", {DType::f32});
  else v.dtype_in(weight, "weight", {x.dtype, DType::f32});
  v.dtype_in(residual, "residual", {DType::bf16, DType::f16, DType::f32});
  v.dtype_in(q, "q", {DType::e4m3}).dtype_in(scales, kScales, {DType::f32, DType::ue8m0});

  v.rank(x, "x", 2).rank(residual, "residual", 2).rank(weight, "weight", 1).rank(q, "q", 2).rank(scales, kScales, 2);
  v.dim_min(x, "x", 1, 1);  // T = 0 is allowed: nothing to do
  if (v.ok())
    v.require(x.shape[1] % kNormQuantGroup == 0, [&] {
      return "x: expected H a multiple of " + std::to_string(kNormQuantGroup) + " (the quantization group), got " +
             std::to_string(x.shape[1]);
    });
  v.same_shape(residual, "residual", x, "x").same_shape(q, "q", x, "x");
  if (v.ok()) {
    v.dim_eq(weight, "weight", 0, x.shape[1], "x's H");
    v.shape(scales, kScales, {x.shape[0], x.shape[1] / kNormQuantGroup});
  }
  for (const detail::NamedTensor& nt :
       {detail::NamedTensor{"x", &x}, {"residual", &residual}, {"weight", &weight}, {"q", &q}})
    check_layout(v, *nt.t, nt.name);
  v.nonnegative_strides(scales, kScales).element_aligned(scales, kScales);
  v.positive_f32(eps, "eps");
  v.same_device({{"x", &x}, {"residual", &residual}, {"weight", &weight}, {"q", &q}, {kScales, &scales}});

  v.distinct_elements(residual, "residual");
  v.distinct_elements(q, "q");
  v.distinct_elements(scales, kScales);
  v.no_overlap(q, "q", x, "x")
      .no_overlap(q, "q", weight, "weight")
      .no_overlap(q, "q", residual, "residual")
      .no_overlap(q, "q", scales, kScales)
      .no_overlap(residual, "residual", x, "x")
      .no_overlap(residual, "residual", weight, "weight")
      .no_overlap(residual, "residual", scales, kScales)
      .no_overlap(scales, kScales, x, "x")
      .no_overlap(scales, kScales, weight, "weight");
  return v.status();
}

}  // namespace

Status rms_norm(const ExecContext& ctx, const TensorView& x, const TensorView& weight, double eps,
                const TensorView& out, const Fp8Scale& out_scale) {
  return run(kRmsNorm, ctx, x, TensorView{}, /*fused=*/false, weight, eps, out, out_scale);
}

Status fused_add_rms_norm(const ExecContext& ctx, const TensorView& x, const TensorView& residual,
                          const TensorView& weight, double eps, const TensorView& out, const Fp8Scale& out_scale) {
  return run(kFusedAddRmsNorm, ctx, x, residual, /*fused=*/true, weight, eps, out, out_scale);
}

Status fused_add_rms_norm_quant_fp8_group(const ExecContext& ctx, const TensorView& x, const TensorView& residual,
                                          const TensorView& weight, double eps, const TensorView& q,
                                          const TensorView& scales) {
  TEJAS_RETURN_IF_ERROR(validate_quant(x, residual, weight, eps, q, scales));
  Backend backend;
  TEJAS_RETURN_IF_ERROR(detail::resolve_backend(
      kFusedQuant, ctx, {{"x", &x}, {"residual", &residual}, {"weight", &weight}, {"q", &q}, {"scales", &scales}},
      &backend));
  if (backend == Backend::reference) return ref::fused_add_rms_norm_quant_fp8_group(x, residual, weight, eps, q, scales);
  return run_kernel(kFusedQuant, ctx, backend, norm::NormArgs{x, residual, weight, q, scales, eps, norm::OutKind::fp8_group});
}

}  // namespace tejas
