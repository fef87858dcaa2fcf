// CUDA launchers of the quantization kernels (the instantiations live in kernel_select.h).
#include "ops/common/cuda_check.h"
#include "ops/common/launch_kernel.h"
#include "ops/common/resident.h"
#include "runtime/device_copy.h"
#include "runtime/tune.h"
#include "ops/quant/checks.h"
#include "ops/quant/kernel_select.h"
#include "ops/quant/launch.h"

namespace tejas::quant_detail {

Status check_device_tensor_scale(const char* op, const ExecContext& ctx, const TensorView& tensor_scale) {
  if (!tensor_scale.defined()) return Status::Ok();  // mxfp8 / mxfp4 / fp8: none to check
  float value = 0.0f;
  TEJAS_RETURN_IF_ERROR(detail::read_device_f32(op, ctx, tensor_scale, &value));
  return tensor_scale_value_status(op, value);
}

}  // namespace tejas::quant_detail

namespace tejas::quant_kernel {
namespace {

// Every launch of `plan` on ctx.stream; in debug-check mode the device tensor_scale is read and
// judged first (before anything is written).
template <class Plan>
Status run_cuda(const char* op, const ExecContext& ctx, const Plan& plan, bool check_tensor_scale) {
  if (check_tensor_scale)
    TEJAS_RETURN_IF_ERROR(quant_detail::check_device_tensor_scale(op, ctx, *plan.t.tensor_scale));
  print_plan(op, plan);
  return for_each_launch(plan, [&](auto kernel, const auto& l) {
    return detail::launch_kernel(op, ctx, kernel, dim3(static_cast<unsigned>(l.config.grid)),
                                 dim3(static_cast<unsigned>(l.config.threads)),
                                 static_cast<size_t>(smem_bytes(l.config)), l.params);
  });
}

}  // namespace

Status run_quant_cuda(const char* op, const ExecContext& ctx, const QuantPlan& planned, bool check_tensor_scale) {
  QuantPlan plan = planned;
  // Version 7's persistent grid: the CTAs the GPU holds at once of its kernel (0 when the query
  // fails: version 5 instead). The driver's carveout: the 8 KiB table (kCleanTableBytes) leaves
  // the SM's L1 to the streaming x loads, as version 5 has it (the max-shared carveout would cut
  // it to 28 KiB). Not asked under quant.clean_table=0 (the plan would not use it).
  const QuantKernel clean = clean_table_kernel(plan.t.data->dtype);
  if (plan.rule == ScaleRule::nvfp4 && clean != nullptr && detail::tune().quant_clean_table != 0)
    plan.resident_ctas = resident_ctas_or_override(detail::resident_ctas(reinterpret_cast<const void*>(clean), kThreads,
                                                                         kCleanTableBytes, detail::Carveout::driver));
  return run_cuda(op, ctx, plan, check_tensor_scale);
}

Status run_dequant_cuda(const char* op, const ExecContext& ctx, const DequantPlan& plan, bool check_tensor_scale) {
  return run_cuda(op, ctx, plan, check_tensor_scale);
}

}  // namespace tejas::quant_kernel
