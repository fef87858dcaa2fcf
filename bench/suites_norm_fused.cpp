// Workload rows of the norm family's fused ops (fused_add_rms_norm_quant_fp8_group: DeepSeek-V3
// style 1 x 128 fp8 activations straight out of the residual norm), with their GPU launches.
// Hooked into the "norm" suite by the suite list (add_norm_fused_rows).
#include <sstream>

#include "bench/suites.h"
#include "tejas/tejas.h"

namespace tejas::bench {
namespace {
constexpr double kEps = 1e-6;
// FLOPs per element: the residual add + rms_norm (floors.h: 5) and the group quantization
// (abs, max, scale: 3).
constexpr double kFusedQuantFlops = 5 + 3;

constexpr const char* kUnfusedBaseline = "unfused: fused_add_rms_norm (bf16 out) + quant_fp8_group";

// The same work as two Tejas ops: the residual norm writes bf16, which the group quantization
// reads back (the round trip through HBM the fusion removes).
Status prepare_unfused(int64_t T, int64_t H, DeviceArena& a, std::function<Status()>* launch) {
  TensorView x, r, wt, y, q, s;
  TEJAS_RETURN_IF_ERROR(a.random(DType::bf16, {T, H}, &x));
  TEJAS_RETURN_IF_ERROR(a.random(DType::bf16, {T, H}, &r));
  TEJAS_RETURN_IF_ERROR(a.random(DType::bf16, {H}, &wt));
  TEJAS_RETURN_IF_ERROR(a.empty(DType::bf16, {T, H}, &y));
  TEJAS_RETURN_IF_ERROR(a.empty(DType::e4m3, {T, H}, &q));
  TEJAS_RETURN_IF_ERROR(a.empty(DType::f32, {T, H / kNormQuantGroup}, &s));
  *launch = [=] {
    TEJAS_RETURN_IF_ERROR(fused_add_rms_norm(cuda_ctx(), x, r, wt, kEps, y));
    return quant_fp8_group(cuda_ctx(), y, q, s, kNormQuantGroup);
  };
  return Status::Ok();
}
}  // namespace

// x, residual bf16 [T, H] (residual read and written), weight bf16 [H], q e4m3 [T, H], scales f32 [T, H / 128].
Cost cost_fused_add_rms_norm_quant_fp8_group(int64_t T, int64_t H) {
  Cost c;
  c.flops = kFusedQuantFlops * static_cast<double>(T * H);
  c.bytes = tensor_bytes(DType::bf16, T * H) + 2 * tensor_bytes(DType::bf16, T * H) + tensor_bytes(DType::bf16, H) +
            tensor_bytes(DType::e4m3, T * H) + tensor_bytes(DType::f32, T * H / kNormQuantGroup);
  return c;
}

void add_norm_fused_rows(const ModelShape& m, std::vector<Workload>& out) {
  const int64_t H = m.hidden;
  if (H % kNormQuantGroup != 0) return;
  for (int64_t T : token_counts()) {
    std::ostringstream shape;
    shape << "T=" << T << " H=" << H << " bf16 -> e4m3 [1x128 f32 scales]";
    Workload w;
    w.suite = "norm";
    w.op = "fused_add_rms_norm_quant_fp8_group";
    w.model = m.name;
    w.shape = shape.str();
    w.cost = cost_fused_add_rms_norm_quant_fp8_group(T, H);
    w.check_op = w.op;
    w.prepare = [T, H](DeviceArena& a, std::function<Status()>* launch) {
      TensorView x, r, wt, q, s;
      TEJAS_RETURN_IF_ERROR(a.random(DType::bf16, {T, H}, &x));
      TEJAS_RETURN_IF_ERROR(a.random(DType::bf16, {T, H}, &r));
      TEJAS_RETURN_IF_ERROR(a.random(DType::bf16, {H}, &wt));
      TEJAS_RETURN_IF_ERROR(a.empty(DType::e4m3, {T, H}, &q));
      TEJAS_RETURN_IF_ERROR(a.empty(DType::f32, {T, H / kNormQuantGroup}, &s));
      // The residual grows a little with each timed call; bf16 keeps it finite for any run count.
      *launch = [=] { return fused_add_rms_norm_quant_fp8_group(cuda_ctx(), x, r, wt, kEps, q, s); };
      return Status::Ok();
    };
    w.baseline = kUnfusedBaseline;
    w.baseline_prepare = [T, H](DeviceArena& a, std::function<Status()>* launch) {
      return prepare_unfused(T, H, a, launch);
    };
    out.push_back(std::move(w));
  }
}

}  // namespace tejas::bench
