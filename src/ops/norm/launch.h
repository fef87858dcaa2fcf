// Backend launchers of the RMSNorm family (arguments already validated by op.cpp).
#pragma once
#include <cstddef>

#include "ops/norm/config.h"
#include "ops/norm/params.h"
#include "tejas/context.h"
#include "tejas/status.h"
#include "tejas/tensor.h"

namespace tejas::norm {

// The validated public arguments, one shape for all three ops.
struct NormArgs {
  TensorView x, residual, weight, out;  // residual absent for rms_norm
  TensorView scale;                     // fp8 scale(s); absent for OutKind::same
  double eps = 0;
  OutKind out_kind = OutKind::same;
};

struct NormLaunch {
  NormConfig config;
  NormParams params;
  size_t smem_bytes = sizeof(NormSmem);
};

// Problem -> config (printed when TEJAS_PRINT_CONFIG=1) and kernel parameters.
NormLaunch plan_norm(const char* op, const NormArgs& a);

// Each returns unsupported for H above kMaxH; in debug-check mode a static fp8 scale's value is
// checked first (invalid_argument naming out_scale.scale).
Status launch_norm_emulator(const char* op, const ExecContext& ctx, const NormArgs& a);
Status launch_norm_cuda(const char* op, const ExecContext& ctx, const NormArgs& a);  // TEJAS_WITH_CUDA only

}  // namespace tejas::norm
