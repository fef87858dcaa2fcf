// detail::launch_kernel: the ops' one way to launch a kernel on the cuda backend. On ctx.stream,
// with `smem` bytes of dynamic shared memory; with ctx.pdl, as a programmatic dependent launch
// where the GPU and the kernel's code allow it (programmatic_launch_available) and the stream is
// not the legacy default stream (a null ctx.stream or cudaStreamLegacy: plain order there); under
// detail::ScopedDryLaunch nothing is launched (Ok). A launch error comes back as a Status naming
// the op, and is cleared from the runtime's error state. No synchronization, no allocation: safe
// under CUDA-graph capture (a programmatic launch becomes a programmatic edge of the graph).
// CUDA builds only (launch_kernel.cu).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "tejas/context.h"
#include "tejas/status.h"

namespace tejas::detail {

Status launch_kernel_args(const char* op, const ExecContext& ctx, const void* kernel, dim3 grid, dim3 block,
                          size_t smem, void** args);

// A kernel taking one parameter struct, as every op kernel does.
template <class P>
Status launch_kernel(const char* op, const ExecContext& ctx, void (*kernel)(P), dim3 grid, dim3 block, size_t smem,
                     const P& params) {
  void* args[] = {const_cast<P*>(&params)};
  return launch_kernel_args(op, ctx, reinterpret_cast<const void*>(kernel), grid, block, smem, args);
}

// Whether `kernel` may be launched as a programmatic dependent on the current device: the device
// is sm_90 or newer and the code loaded there was compiled from sm_90 or newer
// (cudaFuncAttributes::ptxVersion >= 90), so its griddepcontrol.wait is really there (code from
// compute_80 has none, also when the driver compiles it for a newer GPU, and launched that way
// could read its inputs before the kernel before it has written them). Asked once per (device,
// kernel), in a RelaxedCaptureScope, and cached; false when a query fails (not remembered: the
// next launch asks again). Thread safe.
bool programmatic_launch_available(const void* kernel);

// Successful launches made as programmatic dependents since the process started, over all
// threads (tests: a GPU run with ExecContext::pdl must really have made some).
int64_t programmatic_launches();

}  // namespace tejas::detail
