// Device-layer self-test on real hardware: runs the fragment kernel (selftest_kernel.cuh: every
// mma / ldmatrix / stmatrix wrapper on integer-valued inputs) on the current GPU and compares
// with the same expected values the emulator tests use.
#pragma once
#include <string>

#include "tejas/status.h"

namespace tejas {

// ok when every fragment matches; `report` (may be null) receives the device name, the forms
// run and any mismatches. fp8 mma runs on sm_89+, stmatrix on sm_90+. Without a GPU, or in a
// build without device code, returns unsupported.
Status device_selftest_cuda(std::string* report);

}  // namespace tejas
