#include "runtime/print_config.h"
#include "ops/quant/launch_plan.h"

#include <cstdint>
#include <string>

namespace tejas::quant_kernel {
namespace {

constexpr int kBitsPerByte = 8;
constexpr int kNumLayoutTensors = 3;  // data (x / out), q, scales

// Leading dims of the three tensors after merging dims that step uniformly in all of them.
struct Collapsed {
  int n = 0;
  int64_t size[kMaxDims] = {};
  int64_t stride[kMaxDims][kNumLayoutTensors] = {};  // elements (q: nibbles for e2m1)
};

Collapsed collapse(const TensorView* t[kNumLayoutTensors]) {
  Collapsed c;
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

int elem_bytes(DType t) { return dtype_bits(t) / kBitsPerByte; }

// Byte offset of the slice's first element in each tensor, for outer index `outer` (row-major
// over the collapsed dims except the innermost), and the innermost dim's rows / strides.
struct Slice {
  int64_t offset[kNumLayoutTensors] = {};  // elements (q: nibbles)
  int64_t rows = 1;
  int64_t row_stride[kNumLayoutTensors] = {};
};

std::vector<Slice> slices(const TensorView* t[kNumLayoutTensors]) {
  const Collapsed c = collapse(t);
  std::vector<Slice> out;
  if (c.n == 0) {
    out.push_back(Slice{});
    return out;
  }
  int64_t outer = 1;
  for (int j = 0; j + 1 < c.n; ++j) outer *= c.size[j];
  for (int64_t o = 0; o < outer; ++o) {
    Slice s;
    int64_t rem = o;
    for (int j = c.n - 2; j >= 0; --j) {
      const int64_t idx = rem % c.size[j];
      rem /= c.size[j];
      for (int i = 0; i < kNumLayoutTensors; ++i) s.offset[i] += idx * c.stride[j][i];
    }
    s.rows = c.size[c.n - 1];
    for (int i = 0; i < kNumLayoutTensors; ++i) s.row_stride[i] = c.stride[c.n - 1][i];
    out.push_back(s);
  }
  return out;
}

int64_t q_bytes(int64_t elems, CodeFormat f) { return f == CodeFormat::e4m3 ? elems : elems / 2; }

CodeFormat code_format(DType q) { return q == DType::e4m3 ? CodeFormat::e4m3 : CodeFormat::e2m1; }

ScaleKind scale_kind(DType s) {
  return s == DType::f32 ? ScaleKind::f32 : s == DType::ue8m0 ? ScaleKind::ue8m0 : ScaleKind::e4m3;
}

bool empty(const TensorView& t) { return t.numel() == 0; }

}  // namespace

QuantPlan plan_quant(const TensorView& x, const TensorView& q, const TensorView& scales,
                     const TensorView& tensor_scale, int64_t group, ScaleRule rule) {
  QuantPlan plan;
  plan.x_dtype = x.dtype;
  plan.code = code_format(q.dtype);
  plan.tensors[0] = &x;
  plan.tensors[1] = &q;
  plan.tensors[2] = &scales;
  plan.tensors[3] = &tensor_scale;
  if (empty(x)) return plan;
  const TensorView* layout[kNumLayoutTensors] = {&x, &q, &scales};
  const int xb = elem_bytes(x.dtype), sb = elem_bytes(scales.dtype);
  const int64_t K = x.shape[x.ndim - 1];
  for (const Slice& s : slices(layout)) {
    QuantParams p;
    p.x = static_cast<const uint8_t*>(x.data) + s.offset[0] * xb;
    p.q = static_cast<uint8_t*>(q.data) + q_bytes(s.offset[1], plan.code);
    p.scales = static_cast<uint8_t*>(scales.data) + s.offset[2] * sb;
    p.tensor_scale = tensor_scale.defined() ? static_cast<const float*>(tensor_scale.data) : nullptr;
    p.rows = s.rows;
    p.K = K;
    p.group = group;
    p.x_row_stride = s.row_stride[0];
    p.q_row_stride_bytes = q_bytes(s.row_stride[1], plan.code);
    p.s_row_stride = s.row_stride[2];
    p.rule = rule;
    QuantProblem prob;
    prob.x_bytes = xb;
    prob.code_bits = dtype_bits(q.dtype);
    prob.rows = p.rows;
    prob.K = K;
    prob.group = group;
    prob.align = {reinterpret_cast<uint64_t>(p.x), static_cast<uint64_t>(p.x_row_stride * xb),
                  reinterpret_cast<uint64_t>(p.q), static_cast<uint64_t>(p.q_row_stride_bytes)};
    const QuantConfig cfg = make_quant_config(prob);
    p.lanes_per_group = cfg.lanes_per_group;
    p.chunks = cfg.chunks;
    plan.launches.push_back(p);
    plan.configs.push_back(cfg);
  }
  return plan;
}

DequantPlan plan_dequant(const TensorView& q, const TensorView& scales, const TensorView& tensor_scale,
                         const TensorView& out, int64_t group) {
  DequantPlan plan;
  plan.out_dtype = out.dtype;
  plan.code = code_format(q.dtype);
  plan.tensors[0] = &q;
  plan.tensors[1] = &scales;
  plan.tensors[2] = &tensor_scale;
  plan.tensors[3] = &out;
  if (empty(out)) return plan;
  const TensorView* layout[kNumLayoutTensors] = {&out, &q, &scales};
  const int ob = elem_bytes(out.dtype), sb = elem_bytes(scales.dtype);
  const int64_t K = out.shape[out.ndim - 1];
  for (const Slice& s : slices(layout)) {
    DequantParams p;
    p.out = static_cast<uint8_t*>(out.data) + s.offset[0] * ob;
    p.q = static_cast<const uint8_t*>(q.data) + q_bytes(s.offset[1], plan.code);
    p.scales = static_cast<const uint8_t*>(scales.data) + s.offset[2] * sb;
    p.tensor_scale = tensor_scale.defined() ? static_cast<const float*>(tensor_scale.data) : nullptr;
    p.rows = s.rows;
    p.K = K;
    p.group = group;
    p.out_row_stride = s.row_stride[0];
    p.q_row_stride_bytes = q_bytes(s.row_stride[1], plan.code);
    p.s_row_stride = s.row_stride[2];
    p.scale_kind = scale_kind(scales.dtype);
    DequantProblem prob;
    prob.out_bytes = ob;
    prob.code_bits = dtype_bits(q.dtype);
    prob.rows = p.rows;
    prob.K = K;
    prob.group = group;
    prob.align = {reinterpret_cast<uint64_t>(p.out), static_cast<uint64_t>(p.out_row_stride * ob),
                  reinterpret_cast<uint64_t>(p.q), static_cast<uint64_t>(p.q_row_stride_bytes)};
    plan.launches.push_back(p);
    plan.configs.push_back(make_dequant_config(prob));
  }
  return plan;
}

void print_plan(const char* op, const QuantPlan& plan) {
  if (!detail::print_config_enabled()) return;
  for (const QuantConfig& c : plan.configs) detail::print_config(op, c.to_string());
}

void print_plan(const char* op, const DequantPlan& plan) {
  if (!detail::print_config_enabled()) return;
  for (const DequantConfig& c : plan.configs) detail::print_config(op, c.to_string());
}

}  // namespace tejas::quant_kernel
