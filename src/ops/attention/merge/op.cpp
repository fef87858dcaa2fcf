// merge_attention_states(_n): argument validation and backend dispatch.
#include <initializer_list>
#include <string>
#include <vector>

#include "ops/attention/common/checks.h"
#include "ops/attention/merge/reference.h"
#include "runtime/validate.h"
#include "tejas/attention.h"

namespace tejas {
namespace {

using detail::NamedTensor;

constexpr const char* kOp2 = "merge_attention_states";
constexpr const char* kOpN = "merge_attention_states_n";
constexpr int kNumInputs2 = 4;  // v_a, lse_a, v_b, lse_b
constexpr int kVaIndex = 0, kLseAIndex = 1;

// Strides and output layout rules common to both merges.
void check_layouts(detail::Validator& v, std::initializer_list<NamedTensor> tensors, const TensorView& out,
                   const TensorView& out_lse) {
  for (const NamedTensor& t : tensors) v.inner_contiguous(*t.t, t.name).nonnegative_strides(*t.t, t.name);
  v.distinct_elements(out, "out");
  v.distinct_elements(out_lse, "out_lse");
}

Status validate2(const TensorView& v_a, const TensorView& lse_a, const TensorView& v_b, const TensorView& lse_b,
                 const TensorView& out, const TensorView& out_lse) {
  detail::Validator v(kOp2);
  v.defined(v_a, "v_a").defined(lse_a, "lse_a").defined(v_b, "v_b").defined(lse_b, "lse_b").defined(out, "out");
  if (out_lse.defined()) v.defined(out_lse, "out_lse");  // optional; when given, sizes must be sane
  v.dtype_in(v_a, "v_a", {DType::bf16, DType::f16, DType::f32});
  v.same_dtype(v_b, "v_b", v_a, "v_a").same_dtype(out, "out", v_a, "v_a");
  v.dtype_in(lse_a, "lse_a", {DType::f32}).dtype_in(lse_b, "lse_b", {DType::f32});
  v.dtype_in(out_lse, "out_lse", {DType::f32});
  v.rank(v_a, "v_a", 3);
  if (!v.ok()) return v.status();
  const int64_t N = v_a.shape[0], H = v_a.shape[1];
  v.same_shape(v_b, "v_b", v_a, "v_a").same_shape(out, "out", v_a, "v_a");
  v.shape(lse_a, "lse_a", {N, H}).shape(lse_b, "lse_b", {N, H}).shape(out_lse, "out_lse", {N, H});
  check_layouts(v,
                {{"v_a", &v_a}, {"lse_a", &lse_a}, {"v_b", &v_b}, {"lse_b", &lse_b}, {"out", &out},
                 {"out_lse", &out_lse}},
                out, out_lse);
  v.same_device({{"v_a", &v_a}, {"lse_a", &lse_a}, {"v_b", &v_b}, {"lse_b", &lse_b}, {"out", &out},
                 {"out_lse", &out_lse}});
  // In place is documented only as out = v_a and out_lse = lse_a.
  const NamedTensor inputs[kNumInputs2] = {{"v_a", &v_a}, {"lse_a", &lse_a}, {"v_b", &v_b}, {"lse_b", &lse_b}};
  // By position, not address: a caller may pass one view object for several arguments.
  for (int i = 0; i < kNumInputs2; ++i) {
    v.no_overlap(out, "out", *inputs[i].t, inputs[i].name, /*allow_identical=*/i == kVaIndex);
    v.no_overlap(out_lse, "out_lse", *inputs[i].t, inputs[i].name, /*allow_identical=*/i == kLseAIndex);
  }
  v.no_overlap(out_lse, "out_lse", out, "out");
  return v.status();
}

Status validate_n(const TensorView& v_parts, const TensorView& lse_parts, const TensorView& out,
                  const TensorView& out_lse) {
  detail::Validator v(kOpN);
  v.defined(v_parts, "v_parts").defined(lse_parts, "lse_parts").defined(out, "out");
  if (out_lse.defined()) v.defined(out_lse, "out_lse");
  v.dtype_in(v_parts, "v_parts", {DType::bf16, DType::f16, DType::f32});
  v.same_dtype(out, "out", v_parts, "v_parts");
  v.dtype_in(lse_parts, "lse_parts", {DType::f32}).dtype_in(out_lse, "out_lse", {DType::f32});
  v.rank(v_parts, "v_parts", 4).dim_min(v_parts, "v_parts", 0, 1);
  if (!v.ok()) return v.status();
  const int64_t S = v_parts.shape[0], N = v_parts.shape[1], H = v_parts.shape[2], D = v_parts.shape[3];
  v.shape(lse_parts, "lse_parts", {S, N, H}).shape(out, "out", {N, H, D}).shape(out_lse, "out_lse", {N, H});
  check_layouts(v, {{"v_parts", &v_parts}, {"lse_parts", &lse_parts}, {"out", &out}, {"out_lse", &out_lse}}, out,
                out_lse);
  v.same_device({{"v_parts", &v_parts}, {"lse_parts", &lse_parts}, {"out", &out}, {"out_lse", &out_lse}});
  v.no_overlap(out, "out", v_parts, "v_parts").no_overlap(out, "out", lse_parts, "lse_parts");
  v.no_overlap(out_lse, "out_lse", v_parts, "v_parts").no_overlap(out_lse, "out_lse", lse_parts, "lse_parts");
  v.no_overlap(out_lse, "out_lse", out, "out");
  return v.status();
}

}  // namespace

Status merge_attention_states(const ExecContext& ctx, const TensorView& v_a, const TensorView& lse_a,
                              const TensorView& v_b, const TensorView& lse_b, const TensorView& out,
                              const TensorView& out_lse) {
  TEJAS_RETURN_IF_ERROR(validate2(v_a, lse_a, v_b, lse_b, out, out_lse));
  Backend backend;
  TEJAS_RETURN_IF_ERROR(detail::resolve_backend(kOp2, ctx,
                                                {{"v_a", &v_a},
                                                 {"lse_a", &lse_a},
                                                 {"v_b", &v_b},
                                                 {"lse_b", &lse_b},
                                                 {"out", &out},
                                                 {"out_lse", &out_lse}},
                                                &backend));
  if (backend != Backend::reference) return detail::backend_unsupported(kOp2, backend);
  const TensorView parts_v[] = {v_a, v_b};
  const TensorView parts_lse[] = {lse_a, lse_b};
  attn::merge_states_reference(parts_v, parts_lse, out, out_lse);
  return Status::Ok();
}

Status merge_attention_states_n(const ExecContext& ctx, const TensorView& v_parts, const TensorView& lse_parts,
                                const TensorView& out, const TensorView& out_lse) {
  TEJAS_RETURN_IF_ERROR(validate_n(v_parts, lse_parts, out, out_lse));
  Backend backend;
  TEJAS_RETURN_IF_ERROR(detail::resolve_backend(
      kOpN, ctx, {{"v_parts", &v_parts}, {"lse_parts", &lse_parts}, {"out", &out}, {"out_lse", &out_lse}},
      &backend));
  if (backend != Backend::reference) return detail::backend_unsupported(kOpN, backend);
  std::vector<TensorView> parts_v, parts_lse;
  for (int64_t s = 0; s < v_parts.shape[0]; ++s) {
    parts_v.push_back(attn::part_view(v_parts, s));
    parts_lse.push_back(attn::part_view(lse_parts, s));
  }
  attn::merge_states_reference(parts_v, parts_lse, out, out_lse);
  return Status::Ok();
}

}  // namespace tejas
