// Host side shared by the norm launchers: problem description, config choice and kernel
// parameters from the validated arguments.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "runtime/alignment.h"
#include "runtime/print_config.h"
#include "runtime/tune.h"
#include "ops/norm/launch.h"
#include "tejas/norm.h"

namespace tejas::norm {
namespace {

Operand operand(const TensorView& t) {
  if (!t.defined()) return {};
  return {true, t.dtype, detail::access_alignment(t, kMaxVecBytes)};
}

}  // namespace

std::string describe(const NormConfig& c) {
  std::ostringstream os;
  if (!c.supported) return "unsupported (H > 16384)";
  os << "vec " << c.vec << ", E " << c.elems_per_thread << ", " << c.threads << " threads, ";
  if (c.pipeline_stages > 0 && c.warp_per_row) {
    os << "persistent CTAs of " << c.rows_per_block << " warps, a warp per row (" << c.pipeline_stages
       << " row(s) ahead by cp.async), grid " << c.grid;
    return os.str();
  }
  if (c.pipeline_stages > 0) {
    os << "persistent CTAs walking the rows (" << c.pipeline_stages << " row(s) ahead by cp.async), grid " << c.grid;
    return os.str();
  }
  os << (c.warp_per_row ? "warp per row, " : "CTA per row, ") << c.rows_per_block << " row(s)/CTA, grid " << c.grid;
  if (c.fp8_one_reduction) os << ", amax in the sum-of-squares reduction";
  return os.str();
}

void maybe_print_config(const char* op, const NormProblem& p, const NormConfig& c) {
  if (!detail::print_config_enabled()) return;
  detail::print_config(op, "T=" + std::to_string(p.T) + " H=" + std::to_string(p.H) + " x=" +
                               std::string(dtype_name(p.x.dtype)) + " -> " + describe(c));
}

NormLaunch plan_norm(const NormArgs& a) {
  NormProblem prob;
  prob.T = a.x.shape[0];
  prob.H = a.x.shape[1];
  prob.out_kind = a.out_kind;
  prob.x = operand(a.x);
  prob.residual = operand(a.residual);
  prob.weight = operand(a.weight);
  prob.out = operand(a.out);

  NormLaunch l;
  l.problem = prob;
  l.config = choose_config(prob);

  NormParams& p = l.params;
  p.x = a.x.data;
  p.weight = a.weight.data;
  p.residual = a.residual.data;
  p.out = a.out.data;
  p.scale = a.scale.data;
  p.x_stride = a.x.stride[0];
  p.res_stride = a.residual.defined() ? a.residual.stride[0] : 0;
  p.out_stride = a.out.stride[0];
  if (a.out_kind == OutKind::fp8_group) {
    p.scale_stride_t = a.scale.stride[0];
    p.scale_stride_g = a.scale.stride[1];
    p.scale_dtype = a.scale.dtype;
  }
  p.T = prob.T;
  p.H = static_cast<int>(prob.H < kMaxH ? prob.H : kMaxH);
  p.eps = static_cast<float>(a.eps);
  p.min_scale = static_cast<float>(kFp8MinAmax / kE4m3Max);
  p.w_dtype = a.weight.dtype;
  p.res_dtype = a.residual.defined() ? a.residual.dtype : DType::f32;
  p.out_kind = a.out_kind;
  p.warp_per_row = l.config.warp_per_row;
  p.prefetch_rows = detail::tune().norm_prefetch_rows;
  p.packed_add = detail::tune().norm_packed_add != 0 && a.residual.defined() && a.residual.dtype == a.x.dtype &&
                 (a.x.dtype == DType::bf16 || a.x.dtype == DType::f16);
  return l;
}

namespace {
thread_local NormConfig g_last_config;
thread_local int64_t g_last_resident = 0;
}  // namespace

NormConfig last_config() { return g_last_config; }
int64_t last_resident_ctas() { return g_last_resident; }

int pipeline_stages_for(OutKind out) {
  const detail::Tune& t = detail::tune();
  return out == OutKind::same ? t.norm_pipeline : t.norm_pipeline_fp8;
}

static_assert(detail::kTuneMaxNormWarpItems == kMaxWarpPipeItems, "norm.warp_items's range is the kernel's");

int warp_pipeline_items() { return detail::tune().norm_warp_items; }

namespace {
thread_local int64_t g_warp_resident_cap = 0;
}  // namespace

ScopedWarpResidentCap::ScopedWarpResidentCap(int64_t ctas) : ScopedSet(g_warp_resident_cap, ctas) {}
int64_t warp_resident_ctas_capped(int64_t measured) {
  return g_warp_resident_cap > 0 && measured > g_warp_resident_cap ? g_warp_resident_cap : measured;
}

void finish_plan(const char* op, int64_t resident_ctas, NormLaunch* l, int64_t resident_warp_ctas) {
  const int stages = pipeline_stages_for(l->problem.out_kind);
  const NormConfig warp = with_warp_pipeline(l->problem, l->config, stages, warp_pipeline_items(), resident_warp_ctas);
  const bool by_warp = warp.pipeline_stages > 0;
  l->config = by_warp ? warp : with_pipeline(l->problem, l->config, stages, resident_ctas);
  l->config = with_fp8_one_reduction(l->problem, l->config, detail::tune().norm_fp8_one_reduction != 0);
  if (l->config.pipeline_stages > 0) {
    l->params.pipeline_stages = l->config.pipeline_stages;
    l->params.warp_per_row = l->config.warp_per_row;
    l->smem_bytes = static_cast<size_t>(by_warp ? warp_pipeline_smem_bytes(l->problem, stages)
                                                : pipeline_smem_bytes(l->config, l->problem.residual.present, stages));
  }
  maybe_print_config(op, l->problem, l->config);
  g_last_config = l->config;
  g_last_resident = resident_warp_ctas > 0 ? resident_warp_ctas : resident_ctas;
}

}  // namespace tejas::norm
