#include "runtime/device_copy.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <string>

#include "ops/common/cuda_check.h"

namespace tejas::detail {

Status copy_view_to_host(const char* op, const ExecContext& ctx, const TensorView& device,
                         std::vector<uint8_t>* storage, TensorView* host) {
  int64_t lo = 0, hi = 0;
  device.byte_extent(&lo, &hi);
  storage->assign(static_cast<size_t>(hi - lo), 0);
  auto* stream = static_cast<cudaStream_t>(ctx.stream);
  const char* src = static_cast<const char*>(device.data) + lo;
  TEJAS_RETURN_IF_ERROR(cuda_status(
      op, cudaMemcpyAsync(storage->data(), src, storage->size(), cudaMemcpyDeviceToHost, stream), "debug-check copy"));
  TEJAS_RETURN_IF_ERROR(cuda_status(op, cudaStreamSynchronize(stream), "debug-check copy"));
  *host = device;
  host->data = storage->data() - lo;
  host->device = Device::cpu;
  host->device_index = 0;
  return Status::Ok();
}

Status read_device_f32(const char* op, const ExecContext& ctx, const TensorView& t, float* value) {
  std::vector<uint8_t> storage;
  TensorView host;
  TEJAS_RETURN_IF_ERROR(copy_view_to_host(op, ctx, t, &storage, &host));
  std::memcpy(value, host.data, sizeof(*value));
  return Status::Ok();
}

}  // namespace tejas::detail
