// Helpers of the quantization kernel tests: tensors placed at a chosen alignment inside a poisoned
// buffer (row padding, views starting a few bytes off), bitwise comparison of two runs, and the
// emulator counters of the last op call.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "check/cuda_mem.h"
#include "check/host_tensor.h"
#include "ops/common/emu_launch.h"
#include "ops/common/ref_numeric.h"
#include "runtime/tune.h"
#include "tejas/context.h"

namespace tejas::quanttest {

inline constexpr int64_t kBaseAlign = 128;  // view starts are placed relative to this alignment
inline constexpr int kBitsPerByte = 8;

// A [..., K] view inside a flat poisoned buffer (check::current_poison() at construction): rows padded by `pad` elements, the first element
// `misalign` bytes past a 128-byte boundary (fp4: a whole byte).
class PlacedTensor {
 public:
  // Not copyable: a copy's view would still point into this buffer. Moves keep the buffer.
  PlacedTensor(const PlacedTensor&) = delete;
  PlacedTensor& operator=(const PlacedTensor&) = delete;
  PlacedTensor(PlacedTensor&&) = default;
  PlacedTensor& operator=(PlacedTensor&&) = default;

  PlacedTensor(DType dt, std::vector<int64_t> shape, int64_t pad = 0, int64_t misalign = 0) : shape_(shape) {
    const int nd = static_cast<int>(shape.size());
    int64_t stride = 1, span = 1;
    std::vector<int64_t> strides(shape.size());
    for (int d = nd - 1; d >= 0; --d) {
      strides[d] = stride;
      span += (shape[d] - 1) * stride;
      stride = (d == nd - 1 ? shape[d] + pad : stride * shape[d]);
    }
    const int bits = dtype_bits(dt);
    const int64_t bytes = (span * bits + kBitsPerByte - 1) / kBitsPerByte + 2 * kBaseAlign;
    storage_ = check::HostTensor(DType::u8, {bytes});
    auto* base = static_cast<uint8_t*>(storage_.view().data);
    const auto addr = reinterpret_cast<uintptr_t>(base);
    const auto aligned = (addr + kBaseAlign - 1) / kBaseAlign * kBaseAlign;
    view_.data = base + (aligned - addr) + misalign;
    view_.dtype = dt;
    view_.ndim = nd;
    for (int d = 0; d < nd; ++d) {
      view_.shape[d] = shape[d];
      view_.stride[d] = strides[d];
    }
  }
  const TensorView& view() const { return view_; }
  operator const TensorView&() const { return view_; }
  int64_t numel() const { return view_.numel(); }
  const std::vector<int64_t>& shape() const { return shape_; }
  DType dtype() const { return view_.dtype; }

  void index(int64_t flat, int64_t* idx) const {
    for (int d = view_.ndim - 1; d >= 0; --d) {
      idx[d] = flat % view_.shape[d];
      flat /= view_.shape[d];
    }
  }
  uint64_t bits(int64_t flat) const {
    int64_t idx[kMaxDims];
    index(flat, idx);
    return ref::load_bits(view_, idx);
  }
  double value(int64_t flat) const {
    int64_t idx[kMaxDims];
    index(flat, idx);
    return ref::load(view_, idx);
  }
  void set(int64_t flat, double v) {
    int64_t idx[kMaxDims];
    index(flat, idx);
    ref::store(view_, idx, v);
  }
  void set_bits(int64_t flat, uint64_t b) {
    int64_t idx[kMaxDims];
    index(flat, idx);
    ref::store_bits(view_, idx, b);
  }
  // Every byte of the buffer outside the view's elements still holds the poison (the byte the
  // buffer was made with, check::ScopedPoison), and the guards are intact. fp4 views cover whole
  // bytes here (K even, rows on bytes).
  bool outside_untouched() const {
    std::vector<bool> inside(static_cast<size_t>(storage_.numel()), false);
    const auto* base = static_cast<const uint8_t*>(storage_.view().data);
    const int bits = dtype_bits(view_.dtype);
    int64_t idx[kMaxDims];
    for (int64_t i = 0; i < numel(); ++i) {
      index(i, idx);
      int64_t off = 0;
      for (int d = 0; d < view_.ndim; ++d) off += idx[d] * view_.stride[d];
      const int64_t first = off * bits / kBitsPerByte;
      const int64_t n = std::max<int64_t>(1, bits / kBitsPerByte);
      for (int64_t b = 0; b < n; ++b)
        inside[static_cast<size_t>(static_cast<const uint8_t*>(view_.data) - base + first + b)] = true;
    }
    for (int64_t i = 0; i < storage_.numel(); ++i)
      if (!inside[static_cast<size_t>(i)] && base[i] != storage_.poison_byte()) return false;
    return storage_.guards_intact();
  }
  // Bytes the view spans (contiguous views: its compulsory traffic).
  int64_t bytes() const { return numel() * dtype_bits(view_.dtype) / kBitsPerByte; }
  // The whole poisoned buffer the view lies in (mirrored whole to the device by run_kernel).
  const check::HostTensor& storage() const { return storage_; }
  check::HostTensor& storage() { return storage_; }

 private:
  std::vector<int64_t> shape_;
  check::HostTensor storage_;
  TensorView view_;
};

inline ExecContext backend_ctx(Backend b) {
  ExecContext ctx;
  ctx.backend = b;
  return ctx;
}

// Bitwise equality of every element (NaN: any NaN where want is NaN, for float dtypes: the CUDA
// conversions' canonical NaN differs from the reference encoder's, docs/device-layer.md).
inline void expect_same_bits(const PlacedTensor& got, const PlacedTensor& want, const char* name) {
  ASSERT_EQ(got.numel(), want.numel());
  int64_t bad = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const uint64_t g = got.bits(i), w = want.bits(i);
    if (g == w) continue;
    const bool is_float = got.dtype() == DType::f32 || got.dtype() == DType::bf16 || got.dtype() == DType::f16;
    if (is_float && std::isnan(got.value(i)) && std::isnan(want.value(i))) continue;
    if (bad++ < 8)
      ADD_FAILURE() << name << " [" << i << "]: got 0x" << std::hex << g << " want 0x" << w << std::dec << " ("
                    << got.value(i) << " vs " << want.value(i) << ")";
  }
  EXPECT_EQ(bad, 0) << name << ": " << bad << " of " << got.numel() << " differ";
}

// The backend the shared check helpers of the quant kernel tests run the kernel on: the emulator,
// or cuda inside a ScopedKernelBackend (the Cuda* tests reuse every emulator case that way).
inline Backend& kernel_backend_slot() {
  static thread_local Backend b = Backend::emulator;
  return b;
}
inline Backend kernel_backend() { return kernel_backend_slot(); }
class ScopedKernelBackend {
 public:
  explicit ScopedKernelBackend(Backend b) : saved_(kernel_backend_slot()) { kernel_backend_slot() = b; }
  ~ScopedKernelBackend() { kernel_backend_slot() = saved_; }
  ScopedKernelBackend(const ScopedKernelBackend&) = delete;
  ScopedKernelBackend& operator=(const ScopedKernelBackend&) = delete;

 private:
  Backend saved_;
};

// Calls `call` on kernel_backend() with the views of `inputs` then `outputs` (null: an absent
// tensor). Emulator: the host views. cuda: each tensor's whole buffer mirrored to the device (its
// address mod 256 kept, so misaligned views stay misaligned), the views moved onto the mirrors,
// the outputs' buffers copied back whole (outside_untouched() then judges the device's writes),
// the inputs' buffers compared with what was uploaded, and every mirror's guards checked (a write
// into an input or past a buffer is an error status).
using PlacedCall = std::function<Status(const ExecContext&, const std::vector<TensorView>&)>;
inline Status run_kernel(const std::vector<const PlacedTensor*>& inputs, const std::vector<PlacedTensor*>& outputs,
                         const PlacedCall& call) {
  ExecContext ctx;
  ctx.backend = kernel_backend();
  std::vector<const PlacedTensor*> all(inputs);
  all.insert(all.end(), outputs.begin(), outputs.end());
  std::vector<TensorView> views;
  if (ctx.backend != Backend::cuda) {
    for (const PlacedTensor* t : all) views.push_back(t ? t->view() : TensorView{});
    return call(ctx, views);
  }
  std::vector<std::unique_ptr<check::DeviceMirror>> mirrors;
  for (const PlacedTensor* t : all) {
    if (!t) {
      mirrors.emplace_back();
      views.emplace_back();
      continue;
    }
    mirrors.push_back(std::make_unique<check::DeviceMirror>());
    TEJAS_RETURN_IF_ERROR(mirrors.back()->upload(t->storage()));
    TensorView v = t->view();
    const auto offset = static_cast<const char*>(t->view().data) - static_cast<const char*>(t->storage().view().data);
    v.data = static_cast<char*>(mirrors.back()->view().data) + offset;
    v.device = Device::cuda;
    v.device_index = check::current_device_index();
    views.push_back(v);
  }
  // A failed call is still checked for writes: a rejected call must leave every byte alone.
  const Status called = call(ctx, views);
  TEJAS_RETURN_IF_ERROR(check::device_synchronize());
  for (size_t i = 0; i < all.size(); ++i) {
    if (!mirrors[i]) continue;
    if (i >= inputs.size()) {
      TEJAS_RETURN_IF_ERROR(mirrors[i]->download(outputs[i - inputs.size()]->storage()));
    } else {
      check::HostTensor after = all[i]->storage();  // same shape and alignment; overwritten below
      TEJAS_RETURN_IF_ERROR(mirrors[i]->download(after));
      for (int64_t b = 0; b < after.numel(); ++b)
        if (after.bits_flat(b) != all[i]->storage().bits_flat(b))
          return Status::Internal("input " + std::to_string(i) + ": the kernel wrote into it (byte " + std::to_string(b) + ")");
    }
    bool intact = false;
    TEJAS_RETURN_IF_ERROR(mirrors[i]->guards_intact(&intact));
    if (!intact) return Status::Internal("tensor " + std::to_string(i) + ": device bytes outside its buffer were written");
  }
  return called;
}

inline const emu::Counters& last_counters() {
  const auto& reps = detail::last_emulator_reports();
  EXPECT_EQ(reps.size(), 1u);
  return reps.back().counters;
}

// The layouts of the linear-walk tests (kernel.cuh's GroupWalk, dequant_vec_kernel's kLinear):
// f(padded, rows, linear) for none of the three tensors padded (padded = -1) and each alone (0:
// the data, 1: the codes, 2: the scales), at one row and at `rows`, under quant.linear 1 and 0.
// The walk is linear exactly where `walks_linearly` says.
template <class F>
void for_each_walk_layout(int64_t rows, F f) {
  for (int padded = -1; padded < 3; ++padded) {
    for (int64_t r : {int64_t{1}, rows}) {
      for (int linear : {1, 0}) {
        SCOPED_TRACE(testing::Message() << "padded " << padded << " rows " << r << " quant.linear=" << linear);
        detail::Tune t;
        t.quant_linear = linear;
        const detail::ScopedTuneOverride variant(t);
        f(padded, r, linear);
      }
    }
  }
}
inline bool walks_linearly(int padded, int64_t rows, int linear) { return linear == 1 && (padded < 0 || rows == 1); }

// The other sides of the GPU A/Bs (TEJAS_TUNE, src/runtime/tune.h): the default is picked by
// timing, so every variant must match the reference too. Runs `quant()` under each
// quant.max_chunks and each quant.max_steps below the default, under both at 1 (version 1) and
// `dequant()` under dequant.steps=1; both under quant.fast_convert=0 (the f32 e2m1 paths);
// `quant()` under quant.tie_bias=0; both under quant.linear=0 (the row walk on rows laid end to
// end, where the default walks flat indices); then both under quant.max_grid=1 (one block: every warp
// loops, the grid-stride paths the exact grids never reach).
template <class Quant, class Dequant>
void run_tuned_variants(Quant quant, Dequant dequant) {
  const auto with = [](const char* what, detail::Tune t, const auto& body) {
    SCOPED_TRACE(what);
    const detail::ScopedTuneOverride variant(t);
    body();
  };
  for (int n = 1; n < detail::kTuneMaxQuantChunks; ++n) {
    detail::Tune chunks, steps;
    chunks.quant_max_chunks = n;
    steps.quant_max_steps = n;
    with((std::string("quant.max_chunks=") + std::to_string(n)).c_str(), chunks, quant);
    with((std::string("quant.max_steps=") + std::to_string(n)).c_str(), steps, quant);
  }
  detail::Tune v1, dequant1, one_block, unpacked, no_tie_bias, row_walk;
  v1.quant_max_chunks = v1.quant_max_steps = 1;
  dequant1.dequant_steps = 1;
  one_block.quant_max_grid = 1;
  unpacked.quant_fast_convert = 0;
  no_tie_bias.quant_tie_bias = 0;
  row_walk.quant_linear = 0;
  with("quant.max_chunks=1,quant.max_steps=1", v1, quant);
  with("dequant.steps=1", dequant1, dequant);
  with("quant.fast_convert=0", unpacked, quant);
  with("quant.fast_convert=0", unpacked, dequant);
  with("quant.tie_bias=0", no_tie_bias, quant);
  with("quant.linear=0", row_walk, quant);
  with("quant.linear=0", row_walk, dequant);
  with("quant.max_grid=1", one_block, quant);
  with("quant.max_grid=1", one_block, dequant);
}

}  // namespace tejas::quanttest
