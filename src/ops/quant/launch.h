// Backend launchers of the quantization ops (arguments already validated). The emulator
// launchers run the kernels of kernel.cuh on the CPU; the cuda launchers exist in CUDA builds
// (TEJAS_WITH_CUDA) only.
#pragma once
#include "ops/quant/launch_plan.h"
#include "tejas/context.h"
#include "tejas/status.h"

namespace tejas::quant_kernel {

// `plan` comes from plan_quant / plan_dequant (it also names the op's tensors, which the emulator
// launchers register: inputs read-only, outputs write-only).
Status run_quant_emu(const char* op, const ExecContext& ctx, const QuantPlan& plan);
Status run_dequant_emu(const char* op, const ExecContext& ctx, const DequantPlan& plan);

#if TEJAS_WITH_CUDA
// check_tensor_scale: debug-check mode: copy the device tensor_scale to the host (synchronizing
// the stream) and reject a value outside [2^-64, 2^64] before anything is written.
Status run_quant_cuda(const char* op, const ExecContext& ctx, const QuantPlan& plan, bool check_tensor_scale);
Status run_dequant_cuda(const char* op, const ExecContext& ctx, const DequantPlan& plan, bool check_tensor_scale);
#endif

}  // namespace tejas::quant_kernel
