// CUDA error -> Status for the ops' cuda launchers (compiled only where TEJAS_WITH_CUDA is set:
// launch.cu files and host files that include the CUDA runtime).
#pragma once
#include <cuda_runtime_api.h>

#include <string>

#include "tejas/status.h"

namespace tejas::detail {

inline Status cuda_status(const char* op, cudaError_t e, const char* what = "kernel launch") {
  if (e == cudaSuccess) return Status::Ok();
  return Status::CudaError(std::string(op) + ": " + what + " failed: " + cudaGetErrorName(e) + ": " +
                           cudaGetErrorString(e));
}

}  // namespace tejas::detail
