// Public entry points of silu_mul_quant_fp8_group and silu_mul_quant_mx: validation, backend
// choice, dispatch (rules: tejas/activation.h).
#include <string>

#include "ops/activation/checks.h"
#include "ops/activation/launch.h"
#include "ops/activation/reference.h"
#include "ops/quant/checks.h"
#include "runtime/validate.h"
#include "tejas/activation.h"

namespace tejas {
namespace {

constexpr const char* kFp8Op = "silu_mul_quant_fp8_group";
constexpr const char* kMxOp = "silu_mul_quant_mx";

// Shapes, layouts, options, devices and overlaps of x -> (q, scales[, tensor_scale]).
// `group` > 0; dtypes are checked by the caller first.
void check_fused(detail::Validator& v, const TensorView& x, const TensorView& q, const TensorView& scales,
                 const TensorView& tensor_scale, int group, const SiluMulOptions& options) {
  v.rank(q, "q", 2).rank(scales, "scales", 2);
  const int64_t F = act::check_gate_up(v, x);
  if (!v.ok()) return;
  v.require(F % group == 0, [&] {
    return "x: expected dim 1 = 2F with F a multiple of the group size " + std::to_string(group) + ", got " +
           std::to_string(2 * F);
  });
  const int64_t T = x.shape[0];
  v.dim_eq(q, "q", 0, T, "x's T").dim_eq(q, "q", 1, F, "half of x's dim 1");
  v.dim_eq(scales, "scales", 0, T, "x's T").dim_eq(scales, "scales", 1, F / group, "F / group size");
  act::check_layout(v, x, "x");
  act::check_layout(v, q, "q");
  act::check_layout(v, scales, "scales");
  if (q.dtype == DType::e2m1)
    v.require(q.shape[0] <= 1 || q.stride[0] % 2 == 0, [&] {
      return "q: expected an even row stride for e2m1 (every row starts on a byte), got " + q.describe();
    });
  act::check_options(v, options);
  v.same_device({{"x", &x}, {"q", &q}, {"scales", &scales}, {"tensor_scale", &tensor_scale}});
  v.distinct_elements(q, "q").distinct_elements(scales, "scales");
  v.no_overlap(q, "q", x, "x").no_overlap(scales, "scales", x, "x").no_overlap(scales, "scales", q, "q");
  if (tensor_scale.defined())
    v.no_overlap(q, "q", tensor_scale, "tensor_scale").no_overlap(scales, "scales", tensor_scale, "tensor_scale");
  quant_detail::check_tensor_scale_value(v, tensor_scale);
}

void check_defined(detail::Validator& v, const TensorView& x, const TensorView& q, const TensorView& scales) {
  v.defined(x, "x").defined(q, "q").defined(scales, "scales");
  v.dtype_in(x, "x", {DType::bf16, DType::f16});
}

Status run(const char* op, const ExecContext& ctx, const act::QuantArgs& a, const SiluMulOptions& options,
           MxFormat format) {
  const TensorView& ts = *a.tensor_scale;
  Backend backend;
  TEJAS_RETURN_IF_ERROR(detail::resolve_backend(
      op, ctx, {{"x", a.x}, {"q", a.q}, {"scales", a.scales}, {"tensor_scale", &ts}}, &backend));
  if (backend != Backend::reference) {
    if (a.x->shape[0] == 0) return detail::empty_kernel_call(op, backend);
    TEJAS_RETURN_IF_ERROR(detail::check_kernel_rows(op, backend, "x", a.x->shape[0]));
  }
  switch (backend) {
    case Backend::reference:
      if (a.kind == act::QuantKind::fp8_f32 || a.kind == act::QuantKind::fp8_ue8m0)
        ref::silu_mul_quant_fp8_group(*a.x, *a.q, *a.scales, options);
      else
        ref::silu_mul_quant_mx(format, *a.x, *a.q, *a.scales, ts, options);
      return Status::Ok();
    case Backend::emulator:
      return act::launch_silu_quant_emu(op, ctx, a);
    case Backend::cuda:
#if TEJAS_WITH_CUDA
      return act::launch_silu_quant_cuda(op, ctx, a);
#else
      return detail::cuda_not_built(op, backend);
#endif
    case Backend::automatic:  // resolved above; listed for -Wswitch
      break;
  }
  return Status::Internal(std::string(op) + ": unresolved backend");
}

}  // namespace

Status silu_mul_quant_fp8_group(const ExecContext& ctx, const TensorView& x, const TensorView& q,
                                const TensorView& scales, const SiluMulOptions& options) {
  detail::Validator v(kFp8Op);
  check_defined(v, x, q, scales);
  v.dtype_in(q, "q", {DType::e4m3}).dtype_in(scales, "scales", {DType::f32, DType::ue8m0});
  if (v.ok()) check_fused(v, x, q, scales, TensorView{}, kSiluQuantFp8Group, options);
  TEJAS_RETURN_IF_ERROR(v.status());
  const act::QuantKind kind = scales.dtype == DType::f32 ? act::QuantKind::fp8_f32 : act::QuantKind::fp8_ue8m0;
  const TensorView none;
  return run(kFp8Op, ctx, {kind, &x, &q, &scales, &none, act::to_act_options(options)}, options, MxFormat::mxfp8);
}

Status silu_mul_quant_mx(const ExecContext& ctx, MxFormat format, const TensorView& x, const TensorView& q,
                         const TensorView& scales, const TensorView& tensor_scale, const SiluMulOptions& options) {
  detail::Validator v(kMxOp);
  const bool nvfp4 = format == MxFormat::nvfp4;
  v.require(format == MxFormat::mxfp4 || nvfp4,
            [&] { return std::string("format: expected mxfp4 or nvfp4, got ") + mx_format_name(format); });
  check_defined(v, x, q, scales);
  v.dtype_in(q, "q", {DType::e2m1}).dtype_in(scales, "scales", {nvfp4 ? DType::e4m3 : DType::ue8m0});
  quant_detail::check_tensor_scale(v, format, tensor_scale);
  if (v.ok()) check_fused(v, x, q, scales, tensor_scale, mx_block_size(format), options);
  TEJAS_RETURN_IF_ERROR(v.status());
  const act::QuantKind kind = nvfp4 ? act::QuantKind::nvfp4 : act::QuantKind::mxfp4;
  return run(kMxOp, ctx, {kind, &x, &q, &scales, &tensor_scale, act::to_act_options(options)}, options, format);
}

}  // namespace tejas
