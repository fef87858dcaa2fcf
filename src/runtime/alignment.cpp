#include "runtime/alignment.h"

#include <cstdint>

namespace tejas::detail {

namespace {
constexpr int64_t kBitsPerByte = 8;
}  // namespace

int access_alignment(const TensorView& t, int cap) {
  if (!t.defined()) return cap;
  uint64_t bits = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(t.data)) | static_cast<uint64_t>(cap);
  const int64_t elem_bits = dtype_bits(t.dtype);
  for (int d = 0; d + 1 < t.ndim; ++d) {
    if (t.shape[d] <= 1) continue;
    const int64_t stride_bits = t.stride[d] * elem_bits;
    if (stride_bits % kBitsPerByte != 0) return 0;
    bits |= static_cast<uint64_t>(stride_bits / kBitsPerByte);  // negative: same lowest set bit
  }
  return static_cast<int>(bits & (~bits + 1));  // lowest set bit
}

}  // namespace tejas::detail
