// CUDA backend of the RMSNorm family: the kernels of instances.h compiled by nvcc.
#include <cuda_runtime_api.h>

#include "ops/common/cuda_check.h"
#include "ops/common/launch_kernel.h"
#include "ops/common/resident.h"
#include "ops/norm/instances.h"
#include "ops/norm/launch.h"
#include "ops/norm/reference.h"
#include "runtime/device_copy.h"
#include "runtime/validate.h"

namespace tejas::norm {
namespace {

// Debug-check mode: the static scale's value, copied to the host (synchronizes the stream).
Status check_static_scale(const char* op, const ExecContext& ctx, const NormArgs& a) {
  std::vector<uint8_t> storage;
  TensorView host;
  TEJAS_RETURN_IF_ERROR(detail::copy_view_to_host(op, ctx, a.scale, &storage, &host));
  return ref::check_static_fp8_scale(op, host);
}

}  // namespace

Status launch_norm_cuda(const char* op, const ExecContext& ctx, const NormArgs& a) {
  if (a.out_kind == OutKind::fp8_static && detail::debug_checks_enabled(ctx))
    TEJAS_RETURN_IF_ERROR(check_static_scale(op, ctx, a));
  NormLaunch l = plan_norm(a);
  int64_t resident = 0, resident_warp = 0;
  const int stages = pipeline_stages_for(l.problem.out_kind);
  if (stages > 0 && warp_pipe_eligible(l.problem, l.config, warp_pipeline_items())) {
    const NormKernel pipe = pick_warp_pipe_kernel(a.x.dtype);
    if (pipe == nullptr) return Status::Internal(std::string(op) + ": no warp-row pipelined kernel for this config");
    const auto smem = static_cast<size_t>(warp_pipeline_smem_bytes(l.problem, stages));
    resident_warp = warp_resident_ctas_capped(detail::resident_ctas(reinterpret_cast<const void*>(pipe), kWarpPipeThreads, smem));
  }
  // The CTA-per-row pipeline's count only where the warp-row one does not take the rows (both
  // at decode sizes: T below twice the warp-row kernel's resident CTAs; resident_ctas keeps a
  // thread's recent answers, so neither takes its lock after the first launch).
  const bool by_warp =
      with_warp_pipeline(l.problem, l.config, stages, warp_pipeline_items(), resident_warp).pipeline_stages > 0;
  if (!by_warp && stages > 0 && pipeline_eligible(l.problem, l.config)) {
    const NormKernel pipe = pick_pipe_kernel(a.x.dtype, l.config.vec, l.config.elems_per_thread);
    if (pipe == nullptr) return Status::Internal(std::string(op) + ": no pipelined kernel instantiated for this config");
    const auto smem = static_cast<size_t>(pipeline_smem_bytes(l.config, l.problem.residual.present, stages));
    resident = detail::resident_ctas(reinterpret_cast<const void*>(pipe), l.config.threads, smem);
  }
  finish_plan(op, resident, &l, resident_warp);
  if (!l.config.supported) return detail::backend_unsupported(op, Backend::cuda, "H above 16384");
  const NormKernel kernel = kernel_for(a.x.dtype, l.config);
  if (kernel == nullptr) return Status::Internal(std::string(op) + ": no kernel instantiated for this config");
  return detail::launch_kernel(op, ctx, kernel, dim3(static_cast<unsigned>(l.config.grid)),
                               dim3(static_cast<unsigned>(l.config.threads)), l.smem_bytes, l.params);
}

}  // namespace tejas::norm
