// The kernel backends a test runs its cases on: the emulator always, the GPU when one is present.
#pragma once
#include <vector>

#include "check/cuda_mem.h"
#include "tejas/context.h"

namespace tejas::testsupport {

inline std::vector<Backend> kernel_backends() {
  std::vector<Backend> b = {Backend::emulator};
  if (check::cuda_available()) b.push_back(Backend::cuda);
  return b;
}

}  // namespace tejas::testsupport
