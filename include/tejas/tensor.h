// TensorView: a non-owning view of a strided tensor on the CPU or on a CUDA device.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>

#include "tejas/dtype.h"

namespace tejas {

inline constexpr int kMaxDims = 6;

enum class Device : uint8_t { cpu, cuda };

struct TensorView {
  void* data = nullptr;  // first element; null: "absent" (optional arguments), see defined()
  DType dtype = DType::f32;
  int ndim = 0;                // 0..kMaxDims (0 = scalar when data != null)
  int64_t shape[kMaxDims] = {};
  int64_t stride[kMaxDims] = {};  // in elements (fp4: in fp4 elements); may be 0 for broadcast dims
  Device device = Device::cpu;
  int device_index = 0;  // cuda: the GPU holding the data, which must be current at the call

  // A row-major contiguous view. `shape` must have at most kMaxDims entries.
  static TensorView contiguous(void* data, DType dtype, std::initializer_list<int64_t> shape,
                               Device device = Device::cpu, int device_index = 0);
  static TensorView contiguous(void* data, DType dtype, int ndim, const int64_t* shape,
                               Device device = Device::cpu, int device_index = 0);

  // Present: non-null data, or an empty view (a size of 0) whatever its data, since PyTorch and
  // DLPack hand empty tensors over with a null pointer. Absent: null data otherwise (a default
  // TensorView{}, say), which only optional arguments accept.
  bool defined() const { return data != nullptr || has_zero_size(); }
  // Some size is 0 (of the first min(ndim, kMaxDims) dimensions): the view holds no element.
  bool has_zero_size() const;
  int64_t size(int dim) const { return shape[dim < 0 ? dim + ndim : dim]; }
  int64_t numel() const;
  // Row-major contiguous (size-1 dims may have any stride).
  bool is_contiguous() const;
  // Innermost dimension has stride 1 (or the tensor has at most one element along it).
  bool inner_contiguous() const;
  // Byte span [lo, hi) touched by the view, relative to `data` (lo <= 0 with negative strides).
  void byte_extent(int64_t* lo, int64_t* hi) const;
  // "bf16[4, 4104] stride [4104, 1] cuda:0"
  std::string describe() const;
};

}  // namespace tejas
