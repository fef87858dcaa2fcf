#include "runtime/validate.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>
#include <utility>

#if TEJAS_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace tejas::detail {
namespace {
constexpr int kNoAssumedDevice = -2;
thread_local int t_assumed_device = kNoAssumedDevice;  // ScopedAssumedDevice's
}  // namespace

ScopedAssumedDevice::ScopedAssumedDevice(int device) : ScopedSet(t_assumed_device, device) {}

int current_cuda_device(Status* error) {
  if (t_assumed_device != kNoAssumedDevice) return t_assumed_device;
#if TEJAS_WITH_CUDA
  int device = 0;
  const cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) return device;
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || e == cudaErrorStubLibrary ||
      e == cudaErrorInitializationError) {
    (void)cudaGetLastError();  // no GPU here: not left for the next call to report
  } else if (error != nullptr) {
    *error = Status::CudaError(std::string("cudaGetDevice: ") + cudaGetErrorString(e));
  }
#else
  (void)error;
#endif
  return -1;
}

std::string shape_string(const TensorView& t) {
  const int shown = std::clamp(t.ndim, 0, kMaxDims);  // any ndim: only the stored dimensions are read
  std::ostringstream os;
  os << "[";
  for (int d = 0; d < shown; ++d) os << (d ? ", " : "") << t.shape[d];
  os << "]";
  if (shown != t.ndim) os << " (ndim " << t.ndim << ")";
  return os.str();
}

std::string dtype_list(std::initializer_list<DType> allowed) {
  std::string s;
  size_t i = 0;
  for (DType d : allowed) {
    if (i > 0) s += (i + 1 == allowed.size()) ? " or " : ", ";
    s += dtype_name(d);
    ++i;
  }
  return s;
}

Validator& Validator::fail(const char* name, const std::string& what) {
  if (status_.ok()) status_ = Status::InvalidArgument(std::string(op_) + ": " + name + ": " + what);
  return *this;
}

Validator& Validator::require(bool condition, const char* message) {
  if (status_.ok() && !condition) status_ = Status::InvalidArgument(std::string(op_) + ": " + message);
  return *this;
}

Validator& Validator::positive_f32(double value, const char* name) {
  constexpr double kMin = std::numeric_limits<float>::min(), kMax = std::numeric_limits<float>::max();
  if (value >= kMin && value <= kMax) return *this;  // NaN fails both
  std::ostringstream os;
  os << name << ": expected a positive normal f32 value (1.17549e-38 to 3.40282e+38), got " << value;
  return require(false, os.str().c_str());
}

bool extent_fits(const TensorView& t) {
  constexpr int64_t kMax = int64_t{1} << kMaxExtentLog2;
  // Every stride, and the product of the non-zero sizes, whatever the view holds: numel and
  // is_contiguous multiply sizes in order (an empty view's other sizes too), the alignment and
  // overlap checks multiply strides by bits (a size-1 dimension's too).
  bool empty = false;
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) {
    if (t.stride[d] > kMax || t.stride[d] < -kMax) return false;
    if (t.shape[d] == 0)
      empty = true;
    else if (__builtin_mul_overflow(n, t.shape[d], &n) || n > kMax)
      return false;
  }
  if (empty) return true;  // no elements: the extents are 0
  int64_t first = 0, last = 0;
  for (int d = 0; d < t.ndim; ++d) {
    int64_t span = 0;
    if (__builtin_mul_overflow(t.shape[d] - 1, t.stride[d], &span) || span > kMax || span < -kMax) return false;
    (span < 0 ? first : last) += span;  // each sum stays within +-2 x 2^56 before this check
    if (first < -kMax || last > kMax) return false;
  }
  return true;
}

Validator& Validator::defined(const TensorView& t, const char* name) {
  if (!ok()) return *this;
  if (!t.defined()) return fail(name, "expected a tensor, got none (null data)");
  if (t.ndim < 0 || t.ndim > kMaxDims)
    return fail(name, "expected 0.." + std::to_string(kMaxDims) + " dimensions, got " + std::to_string(t.ndim));
  for (int d = 0; d < t.ndim; ++d)
    if (t.shape[d] < 0) return fail(name, "expected non-negative sizes, got shape " + shape_string(t));
  if (!extent_fits(t))
    return fail(name, "expected an element count and element offsets of at most 2^" + std::to_string(kMaxExtentLog2) +
                          ", got " + t.describe());
  return *this;
}

Validator& Validator::dtype_in(const TensorView& t, const char* name, std::initializer_list<DType> allowed) {
  if (!ok() || !t.defined()) return *this;
  for (DType d : allowed)
    if (t.dtype == d) return *this;
  return fail(name, "expected dtype " + dtype_list(allowed) + ", got " + std::string(dtype_name(t.dtype)));
}

Validator& Validator::same_dtype(const TensorView& t, const char* name, const TensorView& ref, const char* ref_name) {
  if (!ok() || !t.defined() || !ref.defined()) return *this;
  if (t.dtype != ref.dtype)
    return fail(name, "expected dtype " + std::string(dtype_name(ref.dtype)) + " (as " + ref_name + "), got " +
                          std::string(dtype_name(t.dtype)));
  return *this;
}

Validator& Validator::rank(const TensorView& t, const char* name, int ndim) {
  if (!ok() || !t.defined()) return *this;
  if (t.ndim != ndim)
    return fail(name, "expected " + std::to_string(ndim) + " dimensions, got " + std::to_string(t.ndim) +
                          " (shape " + shape_string(t) + ")");
  return *this;
}

Validator& Validator::rank_between(const TensorView& t, const char* name, int lo, int hi) {
  if (!ok() || !t.defined()) return *this;
  if (t.ndim < lo || t.ndim > hi)
    return fail(name, "expected " + std::to_string(lo) + " to " + std::to_string(hi) + " dimensions, got " +
                          std::to_string(t.ndim));
  return *this;
}

Validator& Validator::dim_eq(const TensorView& t, const char* name, int d, int64_t expected, const char* why) {
  if (!ok() || !t.defined()) return *this;
  if (d < 0 || d >= t.ndim) return fail(name, "expected a dimension " + std::to_string(d));
  if (t.shape[d] != expected)
    return fail(name, "expected dim " + std::to_string(d) + " = " + std::to_string(expected) + " (" + why +
                          "), got " + std::to_string(t.shape[d]) + " (shape " + shape_string(t) + ")");
  return *this;
}

Validator& Validator::dim_min(const TensorView& t, const char* name, int d, int64_t at_least) {
  if (!ok() || !t.defined()) return *this;
  if (d < 0 || d >= t.ndim) return fail(name, "expected a dimension " + std::to_string(d));
  if (t.shape[d] < at_least)
    return fail(name, "expected dim " + std::to_string(d) + " >= " + std::to_string(at_least) + ", got " +
                          std::to_string(t.shape[d]));
  return *this;
}

Validator& Validator::shape(const TensorView& t, const char* name, std::initializer_list<int64_t> expected) {
  if (!ok() || !t.defined()) return *this;
  bool match = t.ndim == static_cast<int>(expected.size());
  int d = 0;
  for (int64_t e : expected) {
    if (!match) break;
    if (e >= 0 && t.shape[d] != e) match = false;
    ++d;
  }
  if (!match) {
    std::string want = "[";
    d = 0;
    for (int64_t e : expected) want += (d++ ? ", " : "") + (e >= 0 ? std::to_string(e) : std::string("*"));
    want += "]";
    return fail(name, "expected shape " + want + ", got " + shape_string(t));
  }
  return *this;
}

Validator& Validator::same_shape(const TensorView& t, const char* name, const TensorView& ref, const char* ref_name) {
  if (!ok() || !t.defined() || !ref.defined()) return *this;
  bool match = t.ndim == ref.ndim;
  for (int d = 0; match && d < t.ndim; ++d) match = t.shape[d] == ref.shape[d];
  if (!match)
    return fail(name, "expected shape " + shape_string(ref) + " (as " + ref_name + "), got " + shape_string(t));
  return *this;
}

Validator& Validator::inner_contiguous(const TensorView& t, const char* name) {
  if (!ok() || !t.defined()) return *this;
  if (!t.inner_contiguous())
    return fail(name, "expected a contiguous innermost dimension (stride 1), got stride " +
                          std::to_string(t.stride[t.ndim - 1]));
  return *this;
}

Validator& Validator::contiguous(const TensorView& t, const char* name) {
  if (!ok() || !t.defined()) return *this;
  if (!t.is_contiguous()) return fail(name, "expected a contiguous tensor, got " + t.describe());
  return *this;
}

Validator& Validator::nonnegative_strides(const TensorView& t, const char* name) {
  if (!ok() || !t.defined()) return *this;
  for (int d = 0; d < t.ndim; ++d)
    if (t.stride[d] < 0) return fail(name, "expected non-negative strides, got " + t.describe());
  return *this;
}

Validator& Validator::aligned(const TensorView& t, const char* name, int bytes) {
  if (!ok() || !t.defined()) return *this;
  if (reinterpret_cast<uintptr_t>(t.data) % static_cast<uintptr_t>(bytes) != 0)
    return fail(name, "expected data aligned to " + std::to_string(bytes) + " bytes");
  // Strides must keep every row aligned too (only outer dims; inner elements are packed).
  const int bits = dtype_bits(t.dtype);
  for (int d = 0; d + 1 < t.ndim; ++d) {
    if (t.shape[d] > 1 && (t.stride[d] * bits / 8) % bytes != 0)
      return fail(name, "expected dim " + std::to_string(d) + " stride of a multiple of " + std::to_string(bytes) +
                            " bytes, got " + std::to_string(t.stride[d]) + " elements");
  }
  return *this;
}

Validator& Validator::element_aligned(const TensorView& t, const char* name) {
  const int bytes = dtype_bits(t.dtype) / 8;
  return bytes > 1 ? aligned(t, name, bytes) : *this;
}

bool elements_distinct(const TensorView& t) {
  int dims[kMaxDims];
  int n = 0;
  for (int d = 0; d < t.ndim; ++d)
    if (t.shape[d] > 1) dims[n++] = d;
  // Insertion sort by stride (at most kMaxDims entries).
  for (int i = 1; i < n; ++i)
    for (int j = i; j > 0 && t.stride[dims[j]] < t.stride[dims[j - 1]]; --j) std::swap(dims[j], dims[j - 1]);
  int64_t reach = 0;  // furthest element offset reachable through the dimensions seen so far
  for (int k = 0; k < n; ++k) {
    const int d = dims[k];
    if (t.stride[d] <= reach) return false;
    reach += (t.shape[d] - 1) * t.stride[d];
  }
  return true;
}

Validator& Validator::distinct_elements(const TensorView& t, const char* name) {
  if (!ok() || !t.defined() || t.numel() == 0) return *this;  // an empty output writes nothing
  if (!elements_distinct(t))
    return fail(name, "expected every element at its own address (an output view must not repeat elements), got " +
                          t.describe());
  return *this;
}

bool views_identical(const TensorView& a, const TensorView& b) {
  if (a.data != b.data || a.dtype != b.dtype || a.ndim != b.ndim || a.device != b.device) return false;
  for (int d = 0; d < a.ndim; ++d)
    if (a.shape[d] != b.shape[d] || (a.shape[d] > 1 && a.stride[d] != b.stride[d])) return false;
  return true;
}

namespace {
// The absolute bytes [lo, hi) a view touches; lo == hi when none (absent, or no elements: else
// the extent spans at least a byte). Two views whose ranges are disjoint cannot overlap.
struct ByteRange {
  intptr_t lo = 0, hi = 0;
  bool empty() const { return lo == hi; }
  bool disjoint(const ByteRange& o) const { return empty() || o.empty() || hi <= o.lo || o.hi <= lo; }
};
ByteRange byte_range(const TensorView& t) {
  if (!t.defined()) return {};
  int64_t lo = 0, hi = 0;
  t.byte_extent(&lo, &hi);
  if (hi == lo) return {};
  const auto base = reinterpret_cast<intptr_t>(t.data);
  return {base + lo, base + hi};
}
}  // namespace

bool views_may_overlap(const TensorView& a, const TensorView& b) {
  if (!a.defined() || !b.defined()) return false;
  if (a.device != b.device || a.device_index != b.device_index) return false;
  if (byte_range(a).disjoint(byte_range(b))) return false;
  const auto abase = reinterpret_cast<intptr_t>(a.data), bbase = reinterpret_cast<intptr_t>(b.data);
  // Same positive outermost byte stride, and each view's rows narrower than it: compare the row
  // windows modulo the stride.
  if (a.ndim >= 2 && b.ndim >= 2 && a.stride[0] > 0 && b.stride[0] > 0) {
    const int64_t sa = a.stride[0] * dtype_bits(a.dtype), sb = b.stride[0] * dtype_bits(b.dtype);
    if (sa == sb && sa % 8 == 0) {
      const int64_t S = sa / 8;
      TensorView ra = a, rb = b;  // one row of each
      ra.shape[0] = 1;
      rb.shape[0] = 1;
      int64_t rlo_a, rhi_a, rlo_b, rhi_b;
      ra.byte_extent(&rlo_a, &rhi_a);
      rb.byte_extent(&rlo_b, &rhi_b);
      const int64_t wa = rhi_a - rlo_a, wb = rhi_b - rlo_b;
      if (rlo_a >= 0 && rlo_b >= 0 && wa <= S && wb <= S) {
        const int64_t delta = (bbase + rlo_b) - (abase + rlo_a);
        const int64_t m = ((delta % S) + S) % S;
        return m < wa || m + wb > S;
      }
    }
  }
  return true;
}

Validator& Validator::no_overlap(const TensorView& a, const char* a_name, const TensorView& b, const char* b_name,
                                 bool allow_identical) {
  if (!ok() || !a.defined() || !b.defined()) return *this;
  if (allow_identical && views_identical(a, b)) return *this;
  if (views_may_overlap(a, b))
    return fail(a_name, std::string("expected no overlap with ") + b_name +
                            (allow_identical ? " (only the exact same view is allowed, for in-place use)" : ""));
  return *this;
}

Validator& Validator::no_overlap_each(std::initializer_list<NamedTensor> outputs,
                                      std::initializer_list<NamedTensor> inputs) {
  if (!ok()) return *this;
  constexpr size_t kMaxInputs = 16;  // past it, an input's range is found per pair
  ByteRange in_range[kMaxInputs];
  size_t n = 0;
  for (const NamedTensor& in : inputs)
    if (n < kMaxInputs) in_range[n++] = byte_range(*in.t);
  for (const NamedTensor& out : outputs) {
    const ByteRange o = byte_range(*out.t);
    size_t i = 0;
    for (const NamedTensor& in : inputs) {
      const ByteRange e = i < n ? in_range[i] : byte_range(*in.t);
      ++i;
      if (o.disjoint(e)) continue;  // else the full rule decides
      no_overlap(*out.t, out.name, *in.t, in.name);
      if (!ok()) return *this;
    }
  }
  return *this;
}

Validator& Validator::same_device(std::initializer_list<NamedTensor> tensors) {
  if (!ok()) return *this;
  const NamedTensor* first = nullptr;
  for (const NamedTensor& nt : tensors) {
    if (!nt.t->defined()) continue;
    if (!first) {
      first = &nt;
      continue;
    }
    if (nt.t->device != first->t->device || nt.t->device_index != first->t->device_index) {
      auto where = [](const TensorView& t) {
        return t.device == Device::cpu ? std::string("cpu") : "cuda:" + std::to_string(t.device_index);
      };
      return fail(nt.name, "expected device " + where(*first->t) + " (as " + first->name + "), got " + where(*nt.t));
    }
  }
  return *this;
}

Status resolve_backend(const char* op, const ExecContext& ctx, std::initializer_list<NamedTensor> tensors,
                       Backend* out) {
  const NamedTensor* first = nullptr;
  for (const NamedTensor& nt : tensors)
    if (nt.t->defined()) {
      first = &nt;
      break;
    }
  const Device dev = first ? first->t->device : Device::cpu;
  Backend b = ctx.backend;
  if (b == Backend::automatic) b = dev == Device::cuda ? Backend::cuda : Backend::reference;
  const Device want = b == Backend::cuda ? Device::cuda : Device::cpu;
  for (const NamedTensor& nt : tensors) {
    if (nt.t->defined() && nt.t->device != want)
      return Status::InvalidArgument(std::string(op) + ": " + nt.name + ": expected a " +
                                     (want == Device::cuda ? "cuda" : "cpu") + " tensor for the " +
                                     backend_name(b) + " backend, got a " +
                                     (nt.t->device == Device::cuda ? "cuda" : "cpu") + " tensor");
  }
  if (b == Backend::cuda && first != nullptr) {
    Status asked;
    const int current = current_cuda_device(&asked);
    if (!asked.ok()) return Status(asked.code(), std::string(op) + ": " + asked.message());
    for (const NamedTensor& nt : tensors) {
      if (current < 0 || !nt.t->defined() || nt.t->device_index == current) continue;
      return Status::InvalidArgument(
          std::string(op) + ": " + nt.name + ": expected a tensor on the current CUDA device (cuda:" +
          std::to_string(current) + "), got cuda:" + std::to_string(nt.t->device_index) +
          " (its device_index); make that device current first (cudaSetDevice, or the framework's device guard)");
    }
  }
  if (b == Backend::emulator && ctx.emulated_arch != 80 && ctx.emulated_arch != 90)
    return Status::InvalidArgument(std::string(op) + ": ctx.emulated_arch: expected 80 or 90, got " +
                                   std::to_string(ctx.emulated_arch));
  *out = b;
  return Status::Ok();
}

Status backend_unsupported(const char* op, Backend b, const std::string& detail) {
  return Status::Unsupported(std::string(op) + ": the " + backend_name(b) + " backend has no kernel for this " +
                             (detail.empty() ? std::string("op yet") : detail));
}

Status cuda_not_built(const char* op, Backend b) {
  return backend_unsupported(op, b, "op in a host-only build (no CUDA)");
}

Status empty_kernel_call(const char* op, Backend b) {
#if TEJAS_WITH_CUDA
  (void)op;
  (void)b;
  return Status::Ok();
#else
  return b == Backend::cuda ? cuda_not_built(op, b) : Status::Ok();
#endif
}

Status check_kernel_rows(const char* op, Backend b, const char* tensor, int64_t rows) {
  if (rows <= kMaxKernelRows) return Status::Ok();
  return backend_unsupported(op, b, std::string("many rows: ") + tensor + " has " + std::to_string(rows) +
                                        ", at most 2147483647 (2^31 - 1) run on a kernel backend");
}

bool debug_checks_enabled(const ExecContext& ctx) {
  if (ctx.debug_checks) return true;
  static const bool env_on = [] {  // read once: every call asks
    const char* env = std::getenv("TEJAS_DEBUG_CHECKS");
    return env && env[0] != '\0' && std::strcmp(env, "0") != 0;
  }();
  return env_on;
}

int64_t read_index(const TensorView& t, std::initializer_list<int64_t> idx) {
  int64_t off = 0;
  int d = 0;
  for (int64_t i : idx) off += i * t.stride[d++];
  if (t.dtype == DType::i64) return static_cast<const int64_t*>(t.data)[off];
  return static_cast<const int32_t*>(t.data)[off];
}

}  // namespace tejas::detail
