// Public entry points of the gated activations: validation, backend choice, dispatch.
#include <cmath>
#include <sstream>
#include <string>

#include "ops/activation/reference.h"
#include "ops/norm/layout_checks.h"
#include "runtime/validate.h"
#include "tejas/activation.h"

namespace tejas {
namespace {

constexpr const char* kSiluMul = "silu_mul";
constexpr const char* kGeluTanhMul = "gelu_tanh_mul";

std::string number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

void check_layout(detail::Validator& v, const TensorView& t, const char* name) {
  v.nonnegative_strides(t, name).inner_contiguous(t, name).aligned(t, name, detail::element_bytes(t));
}

Status validate(const char* op, const TensorView& x, const TensorView& out, const SiluMulOptions* options) {
  detail::Validator v(op);
  v.defined(x, "x").defined(out, "out");
  v.dtype_in(x, "x", {DType::bf16, DType::f16, DType::f32}).same_dtype(out, "out", x, "x");
  v.rank(x, "x", 2).rank(out, "out", 2);
  if (!v.ok()) return v.status();
  const int64_t T = x.shape[0], two_f = x.shape[1];
  v.dim_min(x, "x", 0, 1);
  v.require(two_f >= 2 && two_f % 2 == 0,
            "x: expected an even dim 1 >= 2 ([gate | up]), got " + std::to_string(two_f));
  v.dim_eq(out, "out", 0, T, "x's T").dim_eq(out, "out", 1, two_f / 2, "half of x's dim 1");
  check_layout(v, x, "x");
  check_layout(v, out, "out");
  if (options && options->clamped) {
    v.require(std::isfinite(options->limit) && options->limit > 0,
              "options.limit: expected a finite value > 0, got " + number(options->limit));
    v.require(std::isfinite(options->alpha) && options->alpha > 0,
              "options.alpha: expected a finite value > 0, got " + number(options->alpha));
  }
  v.same_device({{"x", &x}, {"out", &out}});
  v.require(!out.defined() || detail::elements_distinct(out),
            "out: expected an output whose elements do not overlap each other, got " + out.describe());
  v.no_overlap(out, "out", x, "x");
  return v.status();
}

// `options` is null for gelu_tanh_mul.
Status run(const char* op, const ExecContext& ctx, const TensorView& x, const TensorView& out,
           const SiluMulOptions* options) {
  TEJAS_RETURN_IF_ERROR(validate(op, x, out, options));
  Backend backend;
  TEJAS_RETURN_IF_ERROR(detail::resolve_backend(op, ctx, {{"x", &x}, {"out", &out}}, &backend));
  switch (backend) {
    case Backend::reference:
      if (options) ref::silu_mul(x, out, *options);
      else ref::gelu_tanh_mul(x, out);
      return Status::Ok();
    case Backend::emulator:
    case Backend::cuda:
      return detail::backend_unsupported(op, backend);  // kernels plug in here
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
