// Public entry points of the quantization ops: validation, then backend dispatch.
#include <string>

#include "ops/quant/checks.h"
#include "ops/quant/launch.h"
#include "ops/quant/reference.h"
#include "runtime/validate.h"
#include "tejas/quant.h"

namespace tejas {

using detail::Validator;
using quant_detail::check_layout;

namespace {

constexpr int kMxBlock = 32;     // OCP MX block size (mxfp8, mxfp4)
constexpr int kNvfp4Block = 16;  // NVFP4 block size

using quant_kernel::ScaleRule;

// The kernel backends (emulator, cuda); `ts` is tensor_scale (absent unless nvfp4).
Status run_quant_kernels(const char* op, const ExecContext& ctx, Backend b, const TensorView& x, const TensorView& q,
                         const TensorView& scales, const TensorView& ts, int64_t group, ScaleRule rule) {
  if (x.has_zero_size()) return detail::empty_kernel_call(op, b);
  const quant_kernel::QuantPlan plan = quant_kernel::plan_quant(x, q, scales, ts, group, rule);
  if (b == Backend::emulator) return quant_kernel::run_quant_emu(op, ctx, plan);
#if TEJAS_WITH_CUDA
  return quant_kernel::run_quant_cuda(op, ctx, plan, ts.defined() && detail::debug_checks_enabled(ctx));
#else
  return detail::cuda_not_built(op, b);
#endif
}

Status run_dequant_kernels(const char* op, const ExecContext& ctx, Backend b, const TensorView& q,
                           const TensorView& scales, const TensorView& ts, const TensorView& out, int64_t group) {
  if (q.has_zero_size()) return detail::empty_kernel_call(op, b);
  const quant_kernel::DequantPlan plan = quant_kernel::plan_dequant(q, scales, ts, out, group);
  if (b == Backend::emulator) return quant_kernel::run_dequant_emu(op, ctx, plan);
#if TEJAS_WITH_CUDA
  return quant_kernel::run_dequant_cuda(op, ctx, plan, ts.defined() && detail::debug_checks_enabled(ctx));
#else
  return detail::cuda_not_built(op, b);
#endif
}

ScaleRule mx_rule(MxFormat f) { return f == MxFormat::nvfp4 ? ScaleRule::nvfp4 : ScaleRule::mx; }

DType mx_code_dtype(MxFormat f) { return f == MxFormat::mxfp8 ? DType::e4m3 : DType::e2m1; }
DType mx_scale_dtype(MxFormat f) { return f == MxFormat::nvfp4 ? DType::e4m3 : DType::ue8m0; }

// Dtype checks of the MX family; the format must already be valid.
void check_mx_dtypes(Validator& v, MxFormat f, const TensorView& data, const char* data_name, const TensorView& q,
                     const TensorView& scales) {
  v.dtype_in(data, data_name, {DType::bf16, DType::f16, DType::f32})
      .dtype_in(q, "q", {mx_code_dtype(f)})
      .dtype_in(scales, "scales", {mx_scale_dtype(f)});
}

}  // namespace

const char* mx_format_name(MxFormat f) {
  switch (f) {
    case MxFormat::mxfp8: return "mxfp8";
    case MxFormat::mxfp4: return "mxfp4";
    case MxFormat::nvfp4: return "nvfp4";
  }
  return "?";
}

int mx_block_size(MxFormat f) {
  switch (f) {
    case MxFormat::mxfp8: return kMxBlock;
    case MxFormat::mxfp4: return kMxBlock;
    case MxFormat::nvfp4: return kNvfp4Block;
  }
  return 0;
}

Status quant_fp8_group(const ExecContext& ctx, const TensorView& x, const TensorView& q, const TensorView& scales,
                       int group_size) {
  constexpr const char* kOp = "quant_fp8_group";
  Validator v(kOp);
  v.defined(x, "x").defined(q, "q").defined(scales, "scales");
  v.dtype_in(x, "x", {DType::bf16, DType::f16, DType::f32})
      .dtype_in(q, "q", {DType::e4m3})
      .dtype_in(scales, "scales", {DType::f32, DType::ue8m0});
  v.require(group_size > 0, [&] { return "group_size: expected > 0, got " + std::to_string(group_size); });
  if (v.ok()) check_layout(v, x, "x", q, scales, group_size);
  v.distinct_elements(q, "q");
  v.distinct_elements(scales, "scales");
  v.same_device({{"x", &x}, {"q", &q}, {"scales", &scales}});
  v.no_overlap(q, "q", x, "x").no_overlap(scales, "scales", x, "x").no_overlap(scales, "scales", q, "q");
  TEJAS_RETURN_IF_ERROR(v.status());
  Backend b;
  TEJAS_RETURN_IF_ERROR(detail::resolve_backend(kOp, ctx, {{"x", &x}, {"q", &q}, {"scales", &scales}}, &b));
  if (b != Backend::reference) {
    const ScaleRule rule = scales.dtype == DType::f32 ? ScaleRule::fp8_f32 : ScaleRule::fp8_ue8m0;
    return run_quant_kernels(kOp, ctx, b, x, q, scales, TensorView{}, group_size, rule);
  }
  ref::quant_fp8_group(x, q, scales, group_size);
  return Status::Ok();
}

Status dequant_fp8_group(const ExecContext& ctx, const TensorView& q, const TensorView& scales,
                         const TensorView& out, int group_size) {
  constexpr const char* kOp = "dequant_fp8_group";
  Validator v(kOp);
  v.defined(q, "q").defined(scales, "scales").defined(out, "out");
  v.dtype_in(q, "q", {DType::e4m3})
      .dtype_in(scales, "scales", {DType::f32, DType::ue8m0})
      .dtype_in(out, "out", {DType::bf16, DType::f16, DType::f32});
  v.require(group_size > 0, [&] { return "group_size: expected > 0, got " + std::to_string(group_size); });
  if (v.ok()) check_layout(v, out, "out", q, scales, group_size);
  v.distinct_elements(out, "out");
  v.same_device({{"q", &q}, {"scales", &scales}, {"out", &out}});
  v.no_overlap(out, "out", q, "q").no_overlap(out, "out", scales, "scales");
  TEJAS_RETURN_IF_ERROR(v.status());
  Backend b;
  TEJAS_RETURN_IF_ERROR(detail::resolve_backend(kOp, ctx, {{"q", &q}, {"scales", &scales}, {"out", &out}}, &b));
  if (b != Backend::reference) return run_dequant_kernels(kOp, ctx, b, q, scales, TensorView{}, out, group_size);
  ref::dequant_fp8_group(q, scales, out, group_size);
  return Status::Ok();
}

Status quant_mx(const ExecContext& ctx, MxFormat format, const TensorView& x, const TensorView& q,
                const TensorView& scales, const TensorView& tensor_scale) {
  constexpr const char* kOp = "quant_mx";
  Validator v(kOp);
  v.require(quant_detail::valid_format(format),
            [&] { return "format: expected mxfp8, mxfp4 or nvfp4, got " + std::to_string(static_cast<int>(format)); });
  v.defined(x, "x").defined(q, "q").defined(scales, "scales");
  if (v.ok()) check_mx_dtypes(v, format, x, "x", q, scales);
  if (v.ok()) check_layout(v, x, "x", q, scales, mx_block_size(format), mx_format_name(format));
  v.distinct_elements(q, "q");
  v.distinct_elements(scales, "scales");
  quant_detail::check_tensor_scale(v, format, tensor_scale);
  v.same_device({{"x", &x}, {"q", &q}, {"scales", &scales}, {"tensor_scale", &tensor_scale}});
  v.no_overlap(q, "q", x, "x").no_overlap(scales, "scales", x, "x").no_overlap(scales, "scales", q, "q");
  v.no_overlap(q, "q", tensor_scale, "tensor_scale").no_overlap(scales, "scales", tensor_scale, "tensor_scale");
  quant_detail::check_tensor_scale_value(v, tensor_scale);
  TEJAS_RETURN_IF_ERROR(v.status());
  Backend b;
  TEJAS_RETURN_IF_ERROR(detail::resolve_backend(
      kOp, ctx, {{"x", &x}, {"q", &q}, {"scales", &scales}, {"tensor_scale", &tensor_scale}}, &b));
  if (b != Backend::reference)
    return run_quant_kernels(kOp, ctx, b, x, q, scales, tensor_scale, mx_block_size(format), mx_rule(format));
  ref::quant_mx(format, x, q, scales, tensor_scale);
  return Status::Ok();
}

Status dequant_mx(const ExecContext& ctx, MxFormat format, const TensorView& q, const TensorView& scales,
                  const TensorView& tensor_scale, const TensorView& out) {
  constexpr const char* kOp = "dequant_mx";
  Validator v(kOp);
  v.require(quant_detail::valid_format(format),
            [&] { return "format: expected mxfp8, mxfp4 or nvfp4, got " + std::to_string(static_cast<int>(format)); });
  v.defined(q, "q").defined(scales, "scales").defined(out, "out");
  if (v.ok()) check_mx_dtypes(v, format, out, "out", q, scales);
  if (v.ok()) check_layout(v, out, "out", q, scales, mx_block_size(format), mx_format_name(format));
  v.distinct_elements(out, "out");
  quant_detail::check_tensor_scale(v, format, tensor_scale);
  v.same_device({{"q", &q}, {"scales", &scales}, {"tensor_scale", &tensor_scale}, {"out", &out}});
  v.no_overlap(out, "out", q, "q").no_overlap(out, "out", scales, "scales");
  v.no_overlap(out, "out", tensor_scale, "tensor_scale");
  quant_detail::check_tensor_scale_value(v, tensor_scale);
  TEJAS_RETURN_IF_ERROR(v.status());
  Backend b;
  TEJAS_RETURN_IF_ERROR(detail::resolve_backend(
      kOp, ctx, {{"q", &q}, {"scales", &scales}, {"tensor_scale", &tensor_scale}, {"out", &out}}, &b));
  if (b != Backend::reference)
    return run_dequant_kernels(kOp, ctx, b, q, scales, tensor_scale, out, mx_block_size(format));
  ref::dequant_mx(format, q, scales, tensor_scale, out);
  return Status::Ok();
}

}  // namespace tejas
