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

template <class... A>
std::string cat(const A&... a) {
  std::ostringstream os;
  (os << ... << a);
  return os.str();
}

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// silu (or clamped SwiGLU) flops of the activation plus the quantization's; bytes: x read once,
// codes and scales written once (+ the nvfp4 tensor scale).
Cost cost_fused(int64_t rows, int64_t F, Fused kind, bool clamped) {
  const int64_t group = kind == Fused::fp8_group ? kSiluQuantFp8Group : mx_block_size(kind == Fused::mxfp4 ? MxFormat::mxfp4 : MxFormat::nvfp4);
  const DType q = kind == Fused::fp8_group ? DType::e4m3 : DType::e2m1;
  const DType s = kind == Fused::nvfp4 ? DType::e4m3 : (kind == Fused::fp8_group ? DType::f32 : DType::ue8m0);
  Cost c = cost_gated_act(rows, F, DType::bf16, clamped ? GatedAct::silu_clamped : GatedAct::silu);
  const Cost quant = cost_quant_group(rows, F, group, DType::bf16, q, s, kind == Fused::nvfp4);
  c.flops += quant.flops;
  c.bytes = tensor_bytes(DType::bf16, rows * 2 * F) + quant.bytes - tensor_bytes(DType::bf16, rows * F);
  return c;
}

MxFormat mx_format(Fused kind) { return kind == Fused::mxfp4 ? MxFormat::mxfp4 : MxFormat::nvfp4; }

std::string unfused_name(Fused kind) {
  if (kind == Fused::fp8_group) return "unfused: silu_mul + quant_fp8_group";
  return cat("unfused: silu_mul + quant_mx (", mx_format_name(mx_format(kind)), ")");
}

// The same work as two Tejas ops: silu_mul writes the bf16 activation, which the quantization
// reads back (the round trip through HBM the fusion removes).
Status prepare_unfused(int64_t rows, int64_t F, Fused kind, bool clamped, DeviceArena& a,
                       std::function<Status()>* launch) {
  const int64_t group = kind == Fused::fp8_group ? kSiluQuantFp8Group : mx_block_size(mx_format(kind));
  TensorView x, y, q, s, ts;
  TEJAS_RETURN_IF_ERROR(a.random(DType::bf16, {rows, 2 * F}, &x));
  TEJAS_RETURN_IF_ERROR(a.empty(DType::bf16, {rows, F}, &y));
  TEJAS_RETURN_IF_ERROR(a.empty(kind == Fused::fp8_group ? DType::e4m3 : DType::e2m1, {rows, F}, &q));
  const DType sd = kind == Fused::nvfp4 ? DType::e4m3 : (kind == Fused::fp8_group ? DType::f32 : DType::ue8m0);
  TEJAS_RETURN_IF_ERROR(a.empty(sd, {rows, F / group}, &s));
  if (kind == Fused::nvfp4) {
    check::HostTensor h(DType::f32, {1});
    h.set_flat(0, kNvfp4TensorScale);
    TEJAS_RETURN_IF_ERROR(a.upload(h, &ts));
  }
  *launch = [=] {
    ExecContext ctx;
    ctx.backend = Backend::cuda;
    SiluMulOptions o;
    o.clamped = clamped;
    TEJAS_RETURN_IF_ERROR(silu_mul(ctx, x, y, o));
    if (kind == Fused::fp8_group) return quant_fp8_group(ctx, y, q, s, kSiluQuantFp8Group);
    return quant_mx(ctx, mx_format(kind), y, q, s, ts);
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
  const int group = kind == Fused::fp8_group ? kSiluQuantFp8Group : (kind == Fused::mxfp4 ? 32 : 16);
  if (F % group != 0) return;
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
      TensorView x, q, s, ts;
      TEJAS_RETURN_IF_ERROR(a.random(DType::bf16, {rows, 2 * F}, &x));
      TEJAS_RETURN_IF_ERROR(a.empty(kind == Fused::fp8_group ? DType::e4m3 : DType::e2m1, {rows, F}, &q));
      const DType sd = kind == Fused::nvfp4 ? DType::e4m3 : (kind == Fused::fp8_group ? DType::f32 : DType::ue8m0);
      TEJAS_RETURN_IF_ERROR(a.empty(sd, {rows, F / group}, &s));
      if (kind == Fused::nvfp4) {
        check::HostTensor h(DType::f32, {1});
        h.set_flat(0, kNvfp4TensorScale);
        TEJAS_RETURN_IF_ERROR(a.upload(h, &ts));
      }
      *launch = [=] {
        ExecContext ctx;
        ctx.backend = Backend::cuda;
        SiluMulOptions o;
        o.clamped = clamped;
        if (kind == Fused::fp8_group) return silu_mul_quant_fp8_group(ctx, x, q, s, o);
        return silu_mul_quant_mx(ctx, kind == Fused::mxfp4 ? MxFormat::mxfp4 : MxFormat::nvfp4, x, q, s, ts, o);
      };
      return Status::Ok();
    };
    w.baseline = unfused_name(kind);
    w.baseline_prepare = [=](DeviceArena& a, std::function<Status()>* launch) {
      return prepare_unfused(rows, F, kind, clamped, a, launch);
    };
    out.push_back(std::move(w));
  }
}

}  // namespace tejas::bench
