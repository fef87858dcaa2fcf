// CUDA error -> Status for the ops' cuda launchers (compiled only where TEJAS_WITH_CUDA is set:
// launch.cu files and host files that include the CUDA runtime).
#pragma once
#include <cuda_runtime_api.h>

#include <cmath>
#include <string>

#include "tejas/status.h"
#include "tejas/tensor.h"

namespace tejas::detail {

inline Status cuda_status(const char* op, cudaError_t e, const char* what = "kernel launch") {
  if (e == cudaSuccess) return Status::Ok();
  return Status::CudaError(std::string(op) + ": " + what + " failed: " + cudaGetErrorName(e) + ": " +
                           cudaGetErrorString(e));
}

// Call right after a <<<>>> launch: reports configuration errors without synchronizing.
inline Status cuda_launch_status(const char* op) { return cuda_status(op, cudaGetLastError()); }

// Debug-check mode: reads a device f32 [1] scale (copy + stream synchronize) and requires it to
// be finite and > 0. An absent tensor passes.
inline Status check_device_positive_scale(const char* op, const char* name, const TensorView& t,
                                          cudaStream_t stream) {
  if (!t.defined()) return Status::Ok();
  float value = 0.0f;
  const std::string what = std::string(name) + " copy";
  TEJAS_RETURN_IF_ERROR(
      cuda_status(op, cudaMemcpyAsync(&value, t.data, sizeof(value), cudaMemcpyDeviceToHost, stream), what.c_str()));
  TEJAS_RETURN_IF_ERROR(cuda_status(op, cudaStreamSynchronize(stream), what.c_str()));
  if (std::isfinite(value) && value > 0.0f) return Status::Ok();
  return Status::InvalidArgument(std::string(op) + ": " + name + ": expected a finite value > 0, got " +
                                 std::to_string(value));
}

}  // namespace tejas::detail
