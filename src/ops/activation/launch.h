// Backend launchers of the activation kernels (arguments already validated by op.cpp).
// *_emu run the kernel source through the CPU emulator (host tensors); *_cuda launch the
// compiled kernels on ctx.stream (device tensors; defined only when TEJAS_WITH_CUDA).
#pragma once
#include "ops/activation/config.h"
#include "tejas/context.h"
#include "tejas/status.h"
#include "tejas/tensor.h"

namespace tejas::act {

// out[T, F] = act(x[T, 2F]); `o` is used by silu only.
Status launch_gated_emu(const char* op, const ExecContext& ctx, Act act, const TensorView& x, const TensorView& out,
                        const ActOptions& o);
Status launch_gated_cuda(const char* op, const ExecContext& ctx, Act act, const TensorView& x,
                         const TensorView& out, const ActOptions& o);

// The config this thread's last silu_mul / gelu_tanh_mul launch (either backend) ran with: tests
// check which kernel a case reached (the activation.pipeline kernel or the default).
GatedConfig last_gated_config();
void set_last_gated_config(const GatedConfig& c);
// The same for the fused quant kernels (silu_mul_quant_*).
QuantConfig last_quant_config();
void set_last_quant_config(const QuantConfig& c);

// The emulator's stand-in for a GPU's resident blocks (activation.pipeline): small and odd.
inline constexpr int64_t kEmuResidentBlocks = 3;

// q, scales = quantize(silu_mul(x)); tensor_scale only for nvfp4.
struct QuantArgs {
  QuantKind kind;
  const TensorView* x;
  const TensorView* q;
  const TensorView* scales;
  const TensorView* tensor_scale;  // absent unless nvfp4
  ActOptions options;
};
Status launch_silu_quant_emu(const char* op, const ExecContext& ctx, const QuantArgs& a);
Status launch_silu_quant_cuda(const char* op, const ExecContext& ctx, const QuantArgs& a);

}  // namespace tejas::act
