#include "ops/quant/launch_plan.h"

#include <bit>

#include "runtime/alignment.h"
#include "runtime/print_config.h"
#include "runtime/tune.h"

namespace tejas::quant_kernel {
namespace {

static_assert(detail::kTuneMaxQuantChunks == kMaxChunks && detail::kTuneMaxDequantSteps == kMaxDequantSteps,
              "TEJAS_TUNE's limits are the kernels' register arrays");

constexpr int kBitsPerByte = 8;

SliceLayout collapse(const TensorView* const t[kNumLayoutTensors]) {
  SliceLayout c;
  const int lead = t[0]->ndim - 1;
  // Innermost first, then reversed.
  int64_t size[kMaxDims];
  int64_t stride[kMaxDims][kNumLayoutTensors];
  int n = 0;
  for (int d = lead - 1; d >= 0; --d) {
    const int64_t s = t[0]->shape[d];
    if (s == 1) continue;
    bool merge = n > 0;
    for (int i = 0; i < kNumLayoutTensors && merge; ++i)
      merge = t[i]->stride[d] == stride[n - 1][i] * size[n - 1];
    if (merge) {
      size[n - 1] *= s;
      continue;
    }
    size[n] = s;
    for (int i = 0; i < kNumLayoutTensors; ++i) stride[n][i] = t[i]->stride[d];
    ++n;
  }
  c.n = n;
  for (int j = 0; j < n; ++j) {
    c.size[j] = size[n - 1 - j];
    for (int i = 0; i < kNumLayoutTensors; ++i) c.stride[j][i] = stride[n - 1 - j][i];
  }
  return c;
}

// Rows of one launch: every collapsed dim but the innermost fixed by the outer index.
int64_t num_slices(const SliceLayout& c) {
  int64_t outer = 1;
  for (int j = 0; j + 1 < c.n; ++j) outer *= c.size[j];
  return outer;
}

int elem_bytes(DType t) { return dtype_bits(t) / kBitsPerByte; }

// Slice `o` (row-major over the collapsed dims except the innermost): each tensor's offset of
// its first element, and the innermost dim's rows / strides.
struct Slice {
  int64_t offset[kNumLayoutTensors] = {};  // elements (q: nibbles)
  int64_t rows = 1;
  int64_t row_stride[kNumLayoutTensors] = {};
};

Slice slice(const SliceLayout& c, int64_t o) {
  Slice s;
  if (c.n == 0) return s;
  int64_t rem = o;
  for (int j = c.n - 2; j >= 0; --j) {
    const int64_t idx = rem % c.size[j];
    rem /= c.size[j];
    for (int i = 0; i < kNumLayoutTensors; ++i) s.offset[i] += idx * c.stride[j][i];
  }
  s.rows = c.size[c.n - 1];
  for (int i = 0; i < kNumLayoutTensors; ++i) s.row_stride[i] = c.stride[c.n - 1][i];
  return s;
}

int64_t q_bytes(int64_t elems, CodeFormat f) { return f == CodeFormat::e4m3 ? elems : elems / 2; }

CodeFormat code_format(DType q) { return q == DType::e4m3 ? CodeFormat::e4m3 : CodeFormat::e2m1; }

ScaleKind scale_kind(DType s) {
  return s == DType::f32 ? ScaleKind::f32 : s == DType::ue8m0 ? ScaleKind::ue8m0 : ScaleKind::e4m3;
}

bool empty(const TensorView& t) { return t.numel() == 0; }

// A launch's [rows, K] rows of `t` (same dtype) starting at `data`: what the alignment is of.
int rows_alignment(const TensorView& t, const void* data, int64_t rows, int64_t K, int64_t row_stride,
                   int cap = kVecBytes) {
  TensorView v = t;
  v.data = const_cast<void*>(data);
  v.ndim = 2;
  v.shape[0] = rows;
  v.shape[1] = K;
  v.stride[0] = row_stride;
  v.stride[1] = 1;
  return detail::access_alignment(v, cap);
}

Plan make_plan(const TensorView& data, const TensorView& q, const TensorView& scales, const TensorView& tensor_scale,
               int64_t group) {
  Plan plan;
  plan.t = {&data, &q, &scales, &tensor_scale};
  plan.code = code_format(q.dtype);
  plan.group = group;
  if (empty(data)) return plan;
  const TensorView* const layout[kNumLayoutTensors] = {&data, &q, &scales};
  plan.layout = collapse(layout);
  plan.num_launches = num_slices(plan.layout);
  return plan;
}

// Launch i's rows: the first byte of each layout tensor and the row strides.
struct LaunchRows {
  uint8_t* data;
  uint8_t* q;
  uint8_t* scales;
  int64_t rows, K;
  int64_t data_stride, s_stride;  // elements
  int64_t q_stride;               // elements (nibbles for e2m1)
};

LaunchRows launch_rows(const Plan& plan, int64_t i) {
  const PlanTensors& t = plan.t;
  const Slice s = slice(plan.layout, i);
  return {static_cast<uint8_t*>(t.data->data) + s.offset[0] * elem_bytes(t.data->dtype),
          static_cast<uint8_t*>(t.q->data) + q_bytes(s.offset[1], plan.code),
          static_cast<uint8_t*>(t.scales->data) + s.offset[2] * elem_bytes(t.scales->dtype),
          s.rows,
          t.data->shape[t.data->ndim - 1],
          s.row_stride[0],
          s.row_stride[2],
          s.row_stride[1]};
}

// The launch's rows lie end to end in the data, the codes and the scales (row strides K, K and
// K / group elements), or there is one row, and TEJAS_TUNE quant.linear is on: the vectorized
// kernels' linear walk (QuantProblem / DequantProblem::linear).
bool rows_end_to_end(const Plan& plan, const LaunchRows& r) {
  return detail::tune().quant_linear != 0 &&
         (r.rows == 1 || (r.data_stride == r.K && r.q_stride == r.K && r.s_stride == r.K / plan.group));
}

const float* tensor_scale_of(const Plan& plan) {
  return plan.t.tensor_scale->defined() ? static_cast<const float*>(plan.t.tensor_scale->data) : nullptr;
}

}  // namespace

// The fields a quant and a dequant launch share: codes, scales and tensor scale of the launch's
// rows, their sizes and the codes' and scales' strides.
template <class Params>
void set_shared_params(const Plan& plan, const LaunchRows& r, Params* p) {
  p->q = r.q;
  p->scales = r.scales;
  p->tensor_scale = tensor_scale_of(plan);
  p->rows = r.rows;
  p->K = r.K;
  p->group = plan.group;
  p->q_row_stride_bytes = q_bytes(r.q_stride, plan.code);
  p->s_row_stride = r.s_stride;
}

QuantPlan plan_quant(const TensorView& x, const TensorView& q, const TensorView& scales,
                     const TensorView& tensor_scale, int64_t group, ScaleRule rule) {
  QuantPlan plan;
  static_cast<Plan&>(plan) = make_plan(x, q, scales, tensor_scale, group);
  plan.rule = rule;
  return plan;
}

QuantLaunch quant_launch(const QuantPlan& plan, int64_t i) {
  const LaunchRows r = launch_rows(plan, i);
  QuantLaunch l;
  QuantParams& p = l.params;
  set_shared_params(plan, r, &p);
  p.x = r.data;
  p.x_row_stride = r.data_stride;
  p.rule = plan.rule;
  p.row_div = dev::make_fast_div(static_cast<uint64_t>(r.K / plan.group));
  QuantProblem prob;
  prob.x_bytes = elem_bytes(plan.t.data->dtype);
  prob.code_bits = dtype_bits(plan.t.q->dtype);
  prob.rows = r.rows;
  prob.K = r.K;
  prob.group = plan.group;
  prob.x_align = rows_alignment(*plan.t.data, r.data, r.rows, r.K, r.data_stride, kSectorBytes);
  prob.q_align = rows_alignment(*plan.t.q, r.q, r.rows, r.K, r.q_stride, kSectorBytes);
  prob.max_chunks = detail::tune().quant_max_chunks;
  prob.max_steps = detail::tune().quant_max_steps;
  prob.max_grid = detail::tune().quant_max_grid;
  prob.f32_scales = plan.rule == ScaleRule::fp8_f32;
  prob.fast_convert = detail::tune().quant_fast_convert != 0;
  prob.tie_bias = detail::tune().quant_tie_bias != 0;
  prob.nvfp4_scales = plan.rule == ScaleRule::nvfp4;
  prob.clean_table = detail::tune().quant_clean_table != 0;
  prob.linear = rows_end_to_end(plan, r);
  l.config = with_clean_table(prob, make_quant_config(prob), plan.resident_ctas);
  p.lanes_per_group = l.config.lanes_per_group;
  p.chunks = l.config.chunks;
  p.steps = l.config.steps;
  return l;
}

DequantPlan plan_dequant(const TensorView& q, const TensorView& scales, const TensorView& tensor_scale,
                         const TensorView& out, int64_t group) {
  DequantPlan plan;
  static_cast<Plan&>(plan) = make_plan(out, q, scales, tensor_scale, group);
  return plan;
}

DequantLaunch dequant_launch(const DequantPlan& plan, int64_t i) {
  const LaunchRows r = launch_rows(plan, i);
  DequantLaunch l;
  DequantParams& p = l.params;
  set_shared_params(plan, r, &p);
  p.out = r.data;
  p.out_row_stride = r.data_stride;
  p.scale_kind = scale_kind(plan.t.scales->dtype);
  DequantProblem prob;
  prob.out_bytes = elem_bytes(plan.t.data->dtype);
  prob.code_bits = dtype_bits(plan.t.q->dtype);
  prob.rows = r.rows;
  prob.K = r.K;
  prob.group = plan.group;
  prob.out_align = rows_alignment(*plan.t.data, r.data, r.rows, r.K, r.data_stride);
  prob.q_align = rows_alignment(*plan.t.q, r.q, r.rows, r.K, r.q_stride);
  prob.steps = detail::tune().dequant_steps;
  prob.max_grid = detail::tune().quant_max_grid;
  prob.mx_scales = p.scale_kind == ScaleKind::ue8m0;
  prob.nvfp4_bf16 = p.scale_kind == ScaleKind::e4m3 && plan.t.data->dtype == DType::bf16;
  prob.fast_convert = detail::tune().quant_fast_convert != 0;
  prob.linear = rows_end_to_end(plan, r);
  l.config = make_dequant_config(prob);
  p.steps = l.config.steps;
  p.row_div = dev::make_fast_div(static_cast<uint64_t>(l.config.vectorized ? r.K / l.config.vec : 1));
  p.group_div = dev::make_fast_div32(static_cast<uint32_t>(l.config.vectorized ? plan.group / l.config.vec : 1));
  if (l.config.linear) p.group_shift = std::countr_zero(static_cast<uint64_t>(plan.group / l.config.vec));
  return l;
}

namespace {
thread_local int64_t g_resident_override = 0;
}  // namespace

ScopedResidentCtas::ScopedResidentCtas(int64_t ctas) : ScopedSet(g_resident_override, ctas) {}
int64_t resident_ctas_or_override(int64_t measured) { return g_resident_override > 0 ? g_resident_override : measured; }

void print_plan(const char* op, const QuantPlan& plan) {
  if (!detail::print_config_enabled()) return;
  for (int64_t i = 0; i < plan.num_launches; ++i) detail::print_config(op, quant_launch(plan, i).config.to_string());
}

void print_plan(const char* op, const DequantPlan& plan) {
  if (!detail::print_config_enabled()) return;
  for (int64_t i = 0; i < plan.num_launches; ++i)
    detail::print_config(op, dequant_launch(plan, i).config.to_string());
}

}  // namespace tejas::quant_kernel
