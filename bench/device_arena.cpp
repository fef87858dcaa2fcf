#include "bench/device_arena.h"

#include <algorithm>

#include "check/cuda_mem.h"

namespace tejas::bench {
namespace {
// Random values are generated on the host for one tile and repeated: generating every element of
// a multi-GB cache on one CPU core would take longer than the benchmark.
constexpr int64_t kTileElems = int64_t{1} << 16;
}  // namespace

DeviceArena::~DeviceArena() {
  for (void* p : blocks_) check::device_free(p);
}

Status DeviceArena::alloc(size_t n, void** out) {
  TEJAS_RETURN_IF_ERROR(check::device_alloc(out, std::max<size_t>(n, 1)));
  blocks_.push_back(*out);
  allocated_ += n;
  return Status::Ok();
}

Status DeviceArena::bytes(size_t n, void** out) { return alloc(n, out); }

Status DeviceArena::empty(DType dt, std::vector<int64_t> shape, TensorView* out) {
  void* p = nullptr;
  *out = TensorView::contiguous(nullptr, dt, static_cast<int>(shape.size()), shape.data(), Device::cuda,
                                check::current_device_index());
  TEJAS_RETURN_IF_ERROR(alloc(static_cast<size_t>(dtype_bytes(dt, out->numel())), &p));
  out->data = p;
  return Status::Ok();
}

Status DeviceArena::random(DType dt, std::vector<int64_t> shape, TensorView* out, double stddev) {
  TEJAS_RETURN_IF_ERROR(empty(dt, shape, out));
  const int64_t n = out->numel();
  // Whole tiles of an even element count keep fp4 nibbles byte-aligned.
  check::HostTensor tile(dt, {std::min(n, kTileElems)});
  check::fill_normal(tile, rng_, 0.0, stddev);
  const size_t total = static_cast<size_t>(dtype_bytes(dt, n));
  const size_t tile_bytes = static_cast<size_t>(dtype_bytes(dt, tile.numel()));
  auto* base = static_cast<uint8_t*>(out->data);
  TEJAS_RETURN_IF_ERROR(check::copy_to_device(base, tile.view().data, std::min(tile_bytes, total)));
  // Double the filled prefix with device copies: log2(total / tile) copies instead of one
  // host transfer per tile (a 40 GB cache would otherwise take seconds to fill).
  for (size_t filled = tile_bytes; filled < total; filled *= 2)
    TEJAS_RETURN_IF_ERROR(check::copy_device_to_device(base + filled, base, std::min(filled, total - filled)));
  return Status::Ok();
}

Status DeviceArena::upload(const check::HostTensor& h, TensorView* out) {
  TEJAS_RETURN_IF_ERROR(empty(h.dtype(), h.shape(), out));
  return check::copy_to_device(out->data, h.view().data, check::payload_bytes(h.view()));
}

}  // namespace tejas::bench
