// Backend launchers of the RMSNorm family (arguments already validated by op.cpp).
#pragma once
#include <cstddef>

#include "ops/norm/config.h"
#include "ops/norm/params.h"
#include "runtime/scoped_set.h"
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
  NormProblem problem;
  NormConfig config;
  NormParams params;
  size_t smem_bytes = sizeof(NormSmem);
};

// Problem -> config and kernel parameters (the default kernels: one CTA per row).
NormLaunch plan_norm(const NormArgs& a);

// The norm.pipeline variant (TEJAS_TUNE; config.h's with_pipeline), once the launcher knows how
// many CTAs of the pipelined kernel fit on the device at once: config, parameters and shared
// memory. Then prints the config when TEJAS_PRINT_CONFIG=1. resident_ctas = 0: no pipeline.
// resident_warp_ctas: the same for the warp-row pipeline (norm.warp_items; config.h's
// with_warp_pipeline), tried first; 0: not that one.
void finish_plan(const char* op, int64_t resident_ctas, NormLaunch* l, int64_t resident_warp_ctas = 0);

// Most 16-byte vectors per lane of the warp-row pipeline (TEJAS_TUNE norm.warp_items; 0 = off).
int warp_pipeline_items();

// Tests: while one is alive, this thread's norm launches plan the warp-row pipeline with at most
// `ctas` resident CTAs on either backend (a smaller persistent grid is always valid), so that a
// call of a test's size walks several rows per warp, and refills its buffers, on a GPU too.
class ScopedWarpResidentCap : detail::ScopedSet<int64_t> {
 public:
  explicit ScopedWarpResidentCap(int64_t ctas);
};
// `measured` (the occupancy query's, or the emulator's stand-in), capped by the override above.
int64_t warp_resident_ctas_capped(int64_t measured);

// The norm.pipeline depth for an output kind: TEJAS_TUNE norm.pipeline for outputs in x's dtype,
// norm.pipeline_fp8 for the fp8 ones (src/runtime/tune.h; 0 = the default kernels).
int pipeline_stages_for(OutKind out);

// The config this thread's last norm launch (either backend) ran with: tests check which kernel
// a case reached (the pipelined one or the default).
NormConfig last_config();
// The resident CTAs of the pipelined kernel that launch's planner was given (the warp-row
// pipeline's where the config is eligible for it, else the CTA-per-row one's; cuda: 0 where the
// variant was off or the config not eligible; the emulator: kEmuResidentCtas always). Known at any T, so a GPU test can size T >= 2 x this from a
// two-row call instead of from the device's most CTAs per SM.
int64_t last_resident_ctas();

// The emulator's stand-in for a GPU's resident CTAs: small and odd, so that tests see CTAs with
// unequal row counts.
inline constexpr int64_t kEmuResidentCtas = 3;

// Each returns unsupported for H above kMaxH; in debug-check mode a static fp8 scale's value is
// checked first (invalid_argument naming out_scale.scale).
Status launch_norm_emulator(const char* op, const ExecContext& ctx, const NormArgs& a);
Status launch_norm_cuda(const char* op, const ExecContext& ctx, const NormArgs& a);  // TEJAS_WITH_CUDA only

}  // namespace tejas::norm
