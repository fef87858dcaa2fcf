// Small definitions behind the public value types (DType, Status, TensorView, Backend).
#include <algorithm>
#include <cstdio>
#include <limits>
#include <sstream>

#include "tejas/context.h"
#include "tejas/dtype.h"
#include "tejas/status.h"
#include "tejas/tensor.h"
#include "tejas/version.h"

namespace tejas {

namespace {
constexpr std::string_view kDTypeNames[kNumDTypes] = {"f64",  "f32",  "f16",   "bf16", "e4m3", "e5m2",
                                                      "e2m1", "ue8m0", "i8",   "u8",   "i32",  "i64"};
}

std::string_view dtype_name(DType t) {
  auto i = static_cast<int>(t);
  return (i >= 0 && i < kNumDTypes) ? kDTypeNames[i] : std::string_view("?");
}

bool parse_dtype(std::string_view name, DType* out) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (kDTypeNames[i] == name) {
      *out = static_cast<DType>(i);
      return true;
    }
  }
  return false;
}

std::string_view status_code_name(StatusCode c) {
  switch (c) {
    case StatusCode::ok: return "ok";
    case StatusCode::invalid_argument: return "invalid_argument";
    case StatusCode::unsupported: return "unsupported";
    case StatusCode::cuda_error: return "cuda_error";
    case StatusCode::internal: return "internal";
  }
  return "?";
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  return std::string(status_code_name(code_)) + ": " + message_;
}

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::automatic: return "automatic";
    case Backend::reference: return "reference";
    case Backend::emulator: return "emulator";
    case Backend::cuda: return "cuda";
  }
  return "?";
}

TensorView TensorView::contiguous(void* data, DType dtype, int ndim, const int64_t* shape,
                                  Device device, int device_index) {
  TensorView t;
  t.data = data;
  t.dtype = dtype;
  t.ndim = ndim < 0 ? 0 : (ndim > kMaxDims ? kMaxDims : ndim);
  t.device = device;
  t.device_index = device_index;
  int64_t s = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    t.shape[d] = shape[d];
    t.stride[d] = s;
    // Saturates where hostile sizes would overflow: a stride past 2^56, refused by validation.
    if (__builtin_mul_overflow(s, shape[d], &s)) s = std::numeric_limits<int64_t>::max();
  }
  return t;
}

TensorView TensorView::contiguous(void* data, DType dtype, std::initializer_list<int64_t> shape,
                                  Device device, int device_index) {
  return contiguous(data, dtype, static_cast<int>(shape.size()), shape.begin(), device, device_index);
}

bool TensorView::has_zero_size() const {
  const int dims = std::clamp(ndim, 0, kMaxDims);  // any ndim: called before validation
  for (int d = 0; d < dims; ++d)
    if (shape[d] == 0) return true;
  return false;
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int d = 0; d < ndim; ++d) n *= shape[d];
  return n;
}

bool TensorView::is_contiguous() const {
  int64_t s = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    if (shape[d] != 1 && stride[d] != s) return false;
    s *= shape[d];
  }
  return true;
}

bool TensorView::inner_contiguous() const {
  return ndim == 0 || shape[ndim - 1] <= 1 || stride[ndim - 1] == 1;
}

void TensorView::byte_extent(int64_t* lo, int64_t* hi) const {
  int64_t first = 0, last = 0;  // element offsets
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] == 0) {
      *lo = *hi = 0;
      return;
    }
    int64_t span = (shape[d] - 1) * stride[d];
    if (span < 0) first += span; else last += span;
  }
  const int bits = dtype_bits(dtype);
  *lo = (first * bits) / 8 - ((first * bits) % 8 != 0 ? 1 : 0);
  *hi = ((last + 1) * bits + 7) / 8;
}

std::string TensorView::describe() const {
  // A view that failed validation may have any ndim: only the stored dimensions are read.
  const int shown = std::clamp(ndim, 0, kMaxDims);
  std::ostringstream os;
  os << dtype_name(dtype) << "[";
  for (int d = 0; d < shown; ++d) os << (d ? ", " : "") << shape[d];
  os << "] stride [";
  for (int d = 0; d < shown; ++d) os << (d ? ", " : "") << stride[d];
  os << "] " << (device == Device::cpu ? "cpu" : "cuda:" + std::to_string(device_index));
  if (shown != ndim) os << " (ndim " << ndim << ")";
  return os.str();
}

const char* version_string() { return "0.1.0"; }

}  // namespace tejas

#ifndef TEJAS_COMPILED_ARCHS
#define TEJAS_COMPILED_ARCHS "none"
#endif
namespace tejas {
const char* compiled_cuda_architectures() { return TEJAS_COMPILED_ARCHS; }
}  // namespace tejas
