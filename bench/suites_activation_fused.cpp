// Workload rows of the fused silu_mul + quantization ops (the input of an FP8 / FP4 down
// projection): DeepSeek-V3 / Qwen experts -> fp8 1x128 groups, gpt-oss (clamped SwiGLU) -> mxfp4,
// Llama -> nvfp4. Rows are T * top_k for MoE models. Each row's baseline is the unfused
// sequence (silu_mul, then the quantization) timed beside it.
#include <algorithm>
#include <sstream>

#include "bench/suites.h"
#include "tejas/tejas.h"

namespace tejas::bench {
namespace {

constexpr float kNvfp4TensorScale = 1.0f / (448.0f * 6.0f);  // amax ~1 activations

enum class Fused { fp8_group, mxfp4, nvfp4 };

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

MxFormat mx_format(Fused kind) { return kind == Fused::mxfp4 ? MxFormat::mxfp4 : MxFormat::nvfp4; }
int64_t group_of(Fused kind) { return kind == Fused::fp8_group ? kSiluQuantFp8Group : mx_block_size(mx_format(kind)); }
DType code_dtype(Fused kind) { return kind == Fused::fp8_group ? DType::e4m3 : DType::e2m1; }
DType scale_dtype(Fused kind) {
  return kind == Fused::nvfp4 ? DType::e4m3 : (kind == Fused::fp8_group ? DType::f32 : DType::ue8m0);
}

// silu (or clamped SwiGLU) flops of the activation plus the quantization's; bytes: x read once,
// codes and scales written once (+ the nvfp4 tensor scale).
Cost cost_fused(int64_t rows, int64_t F, Fused kind, bool clamped) {
  Cost c = cost_gated_act(rows, F, DType::bf16, clamped ? GatedAct::silu_clamped : GatedAct::silu);
  const Cost quant = cost_quant_group(rows, F, group_of(kind), DType::bf16, code_dtype(kind), scale_dtype(kind),
                                     kind == Fused::nvfp4);
  c.flops += quant.flops;
  c.bytes = tensor_bytes(DType::bf16, rows * 2 * F) + quant.bytes - tensor_bytes(DType::bf16, rows * F);
  return c;
}

std::string unfused_name(Fused kind) {
  if (kind == Fused::fp8_group) return "unfused: silu_mul + quant_fp8_group";
  return cat("unfused: silu_mul + quant_mx (", mx_format_name(mx_format(kind)), ")");
}

// The tensors both the fused op and its unfused sequence read and write.
struct FusedTensors {
  TensorView x, q, s, ts;  // ts: nvfp4 only
};

Status prepare_tensors(int64_t rows, int64_t F, Fused kind, DeviceArena& a, FusedTensors* t) {
  TEJAS_RETURN_IF_ERROR(a.random(DType::bf16, {rows, 2 * F}, &t->x));
  TEJAS_RETURN_IF_ERROR(a.empty(code_dtype(kind), {rows, F}, &t->q));
  TEJAS_RETURN_IF_ERROR(a.empty(scale_dtype(kind), {rows, F / group_of(kind)}, &t->s));
  if (kind == Fused::nvfp4) {
    check::HostTensor h(DType::f32, {1});
    h.set_flat(0, kNvfp4TensorScale);
    TEJAS_RETURN_IF_ERROR(a.upload(h, &t->ts));
  }
  return Status::Ok();
}

SiluMulOptions options(bool clamped) {
  SiluMulOptions o;
  o.clamped = clamped;
  return o;
}

// The same work as two Tejas ops: silu_mul writes the bf16 activation, which the quantization
// reads back (the round trip through HBM the fusion removes).
Status prepare_unfused(int64_t rows, int64_t F, Fused kind, bool clamped, DeviceArena& a,
                       std::function<Status()>* launch) {
  FusedTensors t;
  TEJAS_RETURN_IF_ERROR(prepare_tensors(rows, F, kind, a, &t));
  TensorView y;
  TEJAS_RETURN_IF_ERROR(a.empty(DType::bf16, {rows, F}, &y));
  *launch = [=] {
    TEJAS_RETURN_IF_ERROR(silu_mul(cuda_ctx(), t.x, y, options(clamped)));
    if (kind == Fused::fp8_group) return quant_fp8_group(cuda_ctx(), y, t.q, t.s, kSiluQuantFp8Group);
    return quant_mx(cuda_ctx(), mx_format(kind), y, t.q, t.s, t.ts);
  };
  return Status::Ok();
}

Status prepare_fused(int64_t rows, int64_t F, Fused kind, bool clamped, DeviceArena& a,
                     std::function<Status()>* launch) {
  FusedTensors t;
  TEJAS_RETURN_IF_ERROR(prepare_tensors(rows, F, kind, a, &t));
  *launch = [=] {
    if (kind == Fused::fp8_group) return silu_mul_quant_fp8_group(cuda_ctx(), t.x, t.q, t.s, options(clamped));
    return silu_mul_quant_mx(cuda_ctx(), mx_format(kind), t.x, t.q, t.s, t.ts, options(clamped));
  };
  return Status::Ok();
}

}  // namespace

void add_activation_fused_rows(const ModelShape& m, std::vector<Workload>& out) {
  const std::string name = m.name;
  Fused kind;
  if (starts_with(name, "deepseek") || starts_with(name, "qwen")) kind = Fused::fp8_group;
  else if (name == "gpt-oss-120b") kind = Fused::mxfp4;
  else if (starts_with(name, "llama")) kind = Fused::nvfp4;
  else return;
  const bool clamped = kind == Fused::mxfp4;
  const int64_t F = m.ffn;
  if (F % group_of(kind) != 0) return;
  const char* op = kind == Fused::fp8_group ? "silu_mul_quant_fp8_group" : "silu_mul_quant_mx";
  const char* what = kind == Fused::fp8_group ? "e4m3 g128 f32 scales" : (kind == Fused::mxfp4 ? "mxfp4" : "nvfp4");
  for (int64_t T : token_counts()) {
    const int64_t rows = T * std::max<int64_t>(m.top_k, 1);
    Workload w;
    w.suite = "activation";
    w.op = op;
    w.model = m.name;
    w.shape = cat("rows=", rows, " F=", F, " bf16 -> ", what, clamped ? " clamped" : "");
    w.cost = cost_fused(rows, F, kind, clamped);
    w.check_op = op;
    w.prepare = [=](DeviceArena& a, std::function<Status()>* launch) {
      return prepare_fused(rows, F, kind, clamped, a, launch);
    };
    w.baseline = unfused_name(kind);
    w.baseline_prepare = [=](DeviceArena& a, std::function<Status()>* launch) {
      return prepare_unfused(rows, F, kind, clamped, a, launch);
    };
    out.push_back(std::move(w));
  }
}

}  // namespace tejas::bench
