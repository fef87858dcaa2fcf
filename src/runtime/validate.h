// Argument validation shared by every public op. Each check names the op and the argument:
//   "rms_norm: weight: expected shape [4096] (x's hidden size), got [4095]".
// The first failed check is kept; later checks are skipped. Nothing here touches tensor data
// except the debug-check helpers at the end, which read host index tensors.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>

#include "runtime/scoped_set.h"
#include "tejas/context.h"
#include "tejas/status.h"
#include "tejas/tensor.h"

namespace tejas::detail {

struct NamedTensor {
  const char* name;
  const TensorView* t;
};

class Validator {
 public:
  explicit Validator(const char* op) : op_(op) {}

  Validator& defined(const TensorView& t, const char* name);
  // Absent (data == null) tensors pass every check below except `defined`.
  Validator& dtype_in(const TensorView& t, const char* name, std::initializer_list<DType> allowed);
  Validator& same_dtype(const TensorView& t, const char* name, const TensorView& ref, const char* ref_name);
  Validator& rank(const TensorView& t, const char* name, int ndim);
  Validator& rank_between(const TensorView& t, const char* name, int lo, int hi);
  // Dimension d must equal `expected`; `why` says where the expectation comes from ("x's H").
  Validator& dim_eq(const TensorView& t, const char* name, int d, int64_t expected, const char* why);
  // The same, with `why` built (a callable returning the std::string) only when the rule fails.
  template <class F>
    requires std::is_invocable_r_v<std::string, F&>
  Validator& dim_eq(const TensorView& t, const char* name, int d, int64_t expected, F&& why) {
    if (!ok() || !t.defined() || (d >= 0 && d < t.ndim && t.shape[d] == expected)) return *this;
    return dim_eq(t, name, d, expected, why().c_str());
  }
  Validator& dim_min(const TensorView& t, const char* name, int d, int64_t at_least);
  // Exact shape; -1 entries match anything.
  Validator& shape(const TensorView& t, const char* name, std::initializer_list<int64_t> expected);
  Validator& same_shape(const TensorView& t, const char* name, const TensorView& ref, const char* ref_name);
  Validator& inner_contiguous(const TensorView& t, const char* name);
  Validator& contiguous(const TensorView& t, const char* name);
  Validator& nonnegative_strides(const TensorView& t, const char* name);
  Validator& aligned(const TensorView& t, const char* name, int bytes);
  // Data aligned to the element size (1 byte for fp4 and 8-bit types).
  Validator& element_aligned(const TensorView& t, const char* name);
  // No two indices address the same element (an output written through such a view would be
  // written twice). Sufficient rule, not necessary: exotic disjoint interleavings are rejected.
  // Expects non-negative strides.
  Validator& distinct_elements(const TensorView& t, const char* name);
  // Outputs must not overlap inputs or each other. `allow_identical` lets the two be exactly
  // the same view (same data, dtype, shape and strides): documented in-place use.
  Validator& no_overlap(const TensorView& a, const char* a_name, const TensorView& b, const char* b_name,
                        bool allow_identical = false);
  // no_overlap of every output with every input, in that order (outputs outer): each view's byte
  // extent is found once, not once per pair (an op with 4 outputs and 6 inputs asks 24 pairs).
  Validator& no_overlap_each(std::initializer_list<NamedTensor> outputs, std::initializer_list<NamedTensor> inputs);
  // Every defined tensor on one device (and device index).
  Validator& same_device(std::initializer_list<NamedTensor> tensors);
  // Custom rule: `message` is appended after "op: ". A message built from values is passed as a
  // callable returning the std::string ([&] { return "x: expected ... got " + ...; }): it is
  // built only when the rule fails, so a passing call builds no string (every op validates on
  // every call: `tejas overhead`). A std::string argument does not compile, on purpose.
  Validator& require(bool condition, const char* message);
  template <class F>
    requires std::is_invocable_r_v<std::string, F&>
  Validator& require(bool condition, F&& message) {
    if (status_.ok() && !condition) require(false, message().c_str());
    return *this;
  }
  // A scalar parameter the kernels take as f32 (eps, clamp limits): it must be a positive normal
  // f32 number, [2^-126, FLT_MAX], so that the conversion only rounds it (a smaller value
  // would flush toward 0, a larger one become Inf). "eps: expected a positive normal f32 ...".
  Validator& positive_f32(double value, const char* name);

  bool ok() const { return status_.ok(); }
  Status status() const { return status_; }
  const char* op() const { return op_; }

 private:
  Validator& fail(const char* name, const std::string& what);
  const char* op_;
  Status status_;
};

std::string shape_string(const TensorView& t);
std::string dtype_list(std::initializer_list<DType> allowed);

// True when the two views may share a byte. Exact for disjoint byte ranges and for views with
// the same outermost stride whose rows occupy disjoint windows (q/k/v slices of one qkv
// buffer); conservative (true) otherwise.
bool views_may_overlap(const TensorView& a, const TensorView& b);
bool views_identical(const TensorView& a, const TensorView& b);
bool elements_distinct(const TensorView& t);
// The most elements (the product of the non-zero sizes), the largest stride and the farthest
// element offset from a view's base either way a view may have (log2), which Validator::defined
// checks: numel, byte_extent and the overlap checks multiply sizes, strides and bits in int64,
// exact below it (2^56 elements x 64 bits < 2^63). A hostile view past it (sizes whose product
// wraps to 0, say) is rejected, never mis-sized.
inline constexpr int kMaxExtentLog2 = 56;
bool extent_fits(const TensorView& t);

// Picks the backend: automatic -> cuda for device tensors, reference for host tensors.
// reference and emulator need host tensors, cuda needs device tensors; a mismatch is
// invalid_argument naming the first offending tensor. The cuda backend launches on the calling
// thread's current device, so a present tensor whose device_index names another device is
// invalid_argument too, before anything is read or launched (a kernel would read another GPU's
// memory: a fault, or peer traffic). Not checked where there is no device to ask; a failure of
// the question itself is returned (cuda_error).
Status resolve_backend(const char* op, const ExecContext& ctx, std::initializer_list<NamedTensor> tensors,
                       Backend* out);

// The calling thread's current CUDA device (cudaGetDevice), or -1 where there is none to ask: a
// host-only build, or no device or driver (that error is cleared, as the occupancy questions clear
// it). Any other failure also gives -1, with the error in *error when given (not cleared: the
// runtime may report it again, an earlier launch's perhaps). Under a ScopedAssumedDevice, its
// device instead (tests without a GPU).
int current_cuda_device(Status* error = nullptr);
class ScopedAssumedDevice : ScopedSet<int> {
 public:
  explicit ScopedAssumedDevice(int device);
};

// "rms_norm: the emulator backend has no kernel for this op yet" (unsupported).
Status backend_unsupported(const char* op, Backend b, const std::string& detail = "");
// The cuda backend asked of a host-only build (TEJAS_HOST_ONLY): unsupported, saying so.
Status cuda_not_built(const char* op, Backend b);

// A kernel backend's call with nothing to do (no tokens, or no elements): ok without a launch or
// any debug-mode read (the kernels would read nothing), except that the cuda backend of a
// host-only build answers unsupported as for any call. The reference backend runs such calls
// through its usual path instead (its checks of scale values included).
Status empty_kernel_call(const char* op, Backend b);

// The row-wise kernels (norm, rope, activation) put rows (tokens) on gridDim.x, whose limit is
// 2^31 - 1 blocks: beyond kMaxKernelRows rows a kernel backend answers unsupported, naming
// `tensor` (the reference backend runs any count). Ok otherwise.
inline constexpr int64_t kMaxKernelRows = (int64_t{1} << 31) - 1;
Status check_kernel_rows(const char* op, Backend b, const char* tensor, int64_t rows);

// ExecContext::debug_checks or TEJAS_DEBUG_CHECKS=1 (the environment read once, at the first call).
bool debug_checks_enabled(const ExecContext& ctx);

// Reads an integer element (i32 or i64) of a host tensor; used for index validation.
int64_t read_index(const TensorView& t, std::initializer_list<int64_t> idx);

}  // namespace tejas::detail
