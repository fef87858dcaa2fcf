#include "ops/quant/checks.h"

#include <cmath>
#include <sstream>
#include <utility>

#include "ops/common/ref_numeric.h"

namespace tejas::quant_detail {

using detail::Validator;

namespace {
std::string block_what(int64_t block, const char* mx_format) {
  const std::string n = std::to_string(block);
  return mx_format == nullptr ? "group_size (" + n + ")" : std::string("the ") + mx_format + " block size (" + n + ")";
}
}  // namespace

void check_layout(Validator& v, const TensorView& data, const char* data_name, const TensorView& q,
                  const TensorView& scales, int64_t block, const char* mx_format) {
  v.rank_between(data, data_name, 1, kMaxDims);
  if (!v.ok()) return;
  const int last = data.ndim - 1;
  const int64_t K = data.shape[last];
  v.require(K % block == 0, [&] {
    return std::string(data_name) + ": expected an innermost dim that is a multiple of " +
           block_what(block, mx_format) + ", got " + std::to_string(K) + " (shape " + detail::shape_string(data) + ")";
  });
  v.same_shape(q, "q", data, data_name);
  v.rank(scales, "scales", data.ndim);
  for (int d = 0; d < last; ++d)
    v.dim_eq(scales, "scales", d, data.shape[d], [&] { return std::string(data_name) + "'s leading dims"; });
  v.dim_eq(scales, "scales", last, K / block,
           [&] { return std::string(data_name) + "'s K / " + block_what(block, mx_format); });
  for (const auto& [t, name] : {std::pair{&data, data_name}, {&q, "q"}, {&scales, "scales"}})
    v.inner_contiguous(*t, name).nonnegative_strides(*t, name).element_aligned(*t, name);
  if (q.dtype == DType::e2m1) {
    bool even = true;
    for (int d = 0; d < last; ++d) even = even && (q.shape[d] <= 1 || q.stride[d] % 2 == 0);
    v.require(even, [&] {
      return "q: expected even outer strides for e2m1 (every row starts on a byte), got " + q.describe();
    });
  }
}

bool valid_format(MxFormat f) { return f == MxFormat::mxfp8 || f == MxFormat::mxfp4 || f == MxFormat::nvfp4; }

void check_tensor_scale(Validator& v, MxFormat f, const TensorView& ts) {
  if (!v.ok()) return;
  if (f != MxFormat::nvfp4) {
    v.require(!ts.defined(), [&] {
      return std::string("tensor_scale: expected none for ") + mx_format_name(f) + " (only nvfp4 takes one), got " +
             ts.describe();
    });
    return;
  }
  v.defined(ts, "tensor_scale").dtype_in(ts, "tensor_scale", {DType::f32}).shape(ts, "tensor_scale", {1});
  v.element_aligned(ts, "tensor_scale");  // the kernels load it as one f32
}

namespace {

bool tensor_scale_in_range(double value) { return value >= kMinTensorScale && value <= kMaxTensorScale; }

std::string tensor_scale_message(double value) {
  std::ostringstream got;
  got << value;
  return "tensor_scale: expected a value in [2^-64, 2^64], got " + got.str();
}

}  // namespace

void check_tensor_scale_value(Validator& v, const TensorView& ts) {
  if (!v.ok() || !ts.defined() || ts.device != Device::cpu) return;
  const double value = ref::at(ts, 0);
  v.require(tensor_scale_in_range(value), [&] { return tensor_scale_message(value); });  // NaN fails both bounds
}

Status tensor_scale_value_status(const char* op, double value) {
  if (tensor_scale_in_range(value)) return Status::Ok();
  return Status::InvalidArgument(std::string(op) + ": " + tensor_scale_message(value));
}

}  // namespace tejas::quant_detail
