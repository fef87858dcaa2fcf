// CUDA backend of the RMSNorm family: the kernels of instances.h compiled by nvcc.
#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <tuple>

#include "ops/common/cuda_check.h"
#include "ops/norm/instances.h"
#include "ops/norm/launch.h"
#include "ops/norm/reference.h"
#include "runtime/device_copy.h"
#include "runtime/validate.h"
#include "runtime/tune.h"

namespace tejas::norm {
namespace {

// Debug-check mode: the static scale's value, copied to the host (synchronizes the stream).
Status check_static_scale(const char* op, const ExecContext& ctx, const NormArgs& a) {
  std::vector<uint8_t> storage;
  TensorView host;
  TEJAS_RETURN_IF_ERROR(detail::copy_view_to_host(op, ctx, a.scale, &storage, &host));
  return ref::check_static_fp8_scale(op, host);
}

// The norm.pipeline kernels' residency, asked once per (device, kernel, threads, shared memory)
// so that timed launches query nothing: CTAs per SM (occupancy API, after the kernel was given
// the opt-in shared-memory maximum and the max-shared carveout: the weight, at most 32 KiB, still
// fits the L1 left beside it) times the SMs. 0 (the default kernel runs) when the shared memory
// exceeds the device's opt-in limit or a query fails: the variant is an optimization, so a
// failing query is cleared from the runtime's error state (the next launch would report it
// otherwise) and remembered, not reported.
std::mutex g_mutex;
std::map<std::tuple<int, const void*, int, size_t>, int64_t> g_resident;
std::map<std::pair<int, const void*>, int> g_optin;  // per (device, kernel) once raised: the opt-in limit (0: failed)

int64_t query_resident(int device, NormKernel kernel, int threads, size_t smem) {
  const void* fn = reinterpret_cast<const void*>(kernel);
  auto optin = g_optin.find({device, fn});
  if (optin == g_optin.end()) {
    int limit = 0;
    const bool ok =
        cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) == cudaSuccess &&
        cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, limit) == cudaSuccess &&
        cudaFuncSetAttribute(fn, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared) ==
            cudaSuccess;
    if (!ok) (void)cudaGetLastError();
    optin = g_optin.emplace(std::make_pair(device, fn), ok ? limit : 0).first;
  }
  if (smem > static_cast<size_t>(optin->second)) return 0;
  int per_sm = 0, sms = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return int64_t{per_sm} * sms;
}

int64_t resident_ctas(NormKernel kernel, int threads, size_t smem) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  const std::lock_guard<std::mutex> lock(g_mutex);
  const auto key = std::make_tuple(device, reinterpret_cast<const void*>(kernel), threads, smem);
  auto it = g_resident.find(key);
  if (it == g_resident.end()) it = g_resident.emplace(key, query_resident(device, kernel, threads, smem)).first;
  return it->second;
}

}  // namespace

Status launch_norm_cuda(const char* op, const ExecContext& ctx, const NormArgs& a) {
  const auto stream = static_cast<cudaStream_t>(ctx.stream);
  if (a.out_kind == OutKind::fp8_static && detail::debug_checks_enabled(ctx))
    TEJAS_RETURN_IF_ERROR(check_static_scale(op, ctx, a));
  NormLaunch l = plan_norm(a);
  int64_t resident = 0;
  const int stages = detail::tune().norm_pipeline;
  if (stages > 0 && pipeline_eligible(l.problem, l.config)) {
    const NormKernel pipe = pick_pipe_kernel(a.x.dtype, l.config.vec, l.config.elems_per_thread);
    if (pipe == nullptr) return Status::Internal(std::string(op) + ": no pipelined kernel instantiated for this config");
    const auto smem = static_cast<size_t>(pipeline_smem_bytes(l.config, l.problem.residual.present, stages));
    resident = resident_ctas(pipe, l.config.threads, smem);
  }
  finish_plan(op, resident, &l);
  if (!l.config.supported) return detail::backend_unsupported(op, Backend::cuda, "H above 16384");
  const NormKernel kernel = kernel_for(a.x.dtype, l.config);
  if (kernel == nullptr) return Status::Internal(std::string(op) + ": no kernel instantiated for this config");
  void* args[] = {&l.params};
  const cudaError_t e = cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(static_cast<unsigned>(l.config.grid)),
                                         dim3(static_cast<unsigned>(l.config.threads)), args, l.smem_bytes, stream);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // clear it, so the next op does not report this launch's error
    return detail::cuda_status(op, e);
  }
  return detail::cuda_launch_status(op);
}

}  // namespace tejas::norm
