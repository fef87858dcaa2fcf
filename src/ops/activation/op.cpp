// Public entry points of silu_mul and gelu_tanh_mul: validation, backend choice, dispatch.
// The fused quantizing forms: op_quant.cpp.
#include <string>

#include "ops/activation/checks.h"
#include "ops/activation/launch.h"
#include "ops/activation/reference.h"
#include "runtime/validate.h"
#include "tejas/activation.h"

namespace tejas {
namespace {

constexpr const char* kSiluMul = "silu_mul";
constexpr const char* kGeluTanhMul = "gelu_tanh_mul";

Status validate(const char* op, const TensorView& x, const TensorView& out, const SiluMulOptions* options) {
  detail::Validator v(op);
  v.defined(x, "x").defined(out, "out");
  v.dtype_in(x, "x", {DType::bf16, DType::f16, DType::f32}).same_dtype(out, "out", x, "x");
  v.rank(x, "x", 2).rank(out, "out", 2);
  if (!v.ok()) return v.status();
  const int64_t T = x.shape[0];
  const int64_t F = act::check_gate_up(v, x);
  v.dim_eq(out, "out", 0, T, "x's T").dim_eq(out, "out", 1, F, "half of x's dim 1");
  act::check_layout(v, x, "x");
  act::check_layout(v, out, "out");
  if (options) act::check_options(v, *options);
  v.same_device({{"x", &x}, {"out", &out}});
  v.distinct_elements(out, "out");
  v.no_overlap(out, "out", x, "x");
  return v.status();
}

// `options` is null for gelu_tanh_mul.
Status run(const char* op, const ExecContext& ctx, const TensorView& x, const TensorView& out,
           const SiluMulOptions* options) {
  TEJAS_RETURN_IF_ERROR(validate(op, x, out, options));
  Backend backend;
  TEJAS_RETURN_IF_ERROR(detail::resolve_backend(op, ctx, {{"x", &x}, {"out", &out}}, &backend));
  const act::Act kind = options ? act::Act::silu : act::Act::gelu_tanh;
  const act::ActOptions o = options ? act::to_act_options(*options) : act::ActOptions{};
  if (backend != Backend::reference) {
    if (x.shape[0] == 0) return detail::empty_kernel_call(op, backend);
    TEJAS_RETURN_IF_ERROR(detail::check_kernel_rows(op, backend, "x", x.shape[0]));
  }
  switch (backend) {
    case Backend::reference:
      if (options) ref::silu_mul(x, out, *options);
      else ref::gelu_tanh_mul(x, out);
      return Status::Ok();
    case Backend::emulator:
      return act::launch_gated_emu(op, ctx, kind, x, out, o);
    case Backend::cuda:
#if TEJAS_WITH_CUDA
      return act::launch_gated_cuda(op, ctx, kind, x, out, o);
#else
      return detail::cuda_not_built(op, backend);
#endif
    case Backend::automatic:  // resolved above; listed for -Wswitch
      break;
  }
  return Status::Internal(std::string(op) + ": unresolved backend");
}

}  // namespace

Status silu_mul(const ExecContext& ctx, const TensorView& x, const TensorView& out, const SiluMulOptions& options) {
  return run(kSiluMul, ctx, x, out, &options);
}

Status gelu_tanh_mul(const ExecContext& ctx, const TensorView& x, const TensorView& out) {
  return run(kGeluTanhMul, ctx, x, out, nullptr);
}

}  // namespace tejas
