#include "bench/floors.h"

#include <algorithm>

namespace tejas::bench {
namespace {
constexpr double kTera = 1e12;
constexpr double kMiB = 1024.0 * 1024.0;
constexpr const char* kDatasheet = "datasheet";

Ceiling datasheet(double v) { return {v, v, kDatasheet}; }
Ceiling measured(double v, double sheet, const char* where) { return {v, sheet, where}; }

// FLOPs per output element of each gated activation (conventions in floors.h).
constexpr double kSiluFlops = 4, kSiluClampedFlops = 9, kGeluTanhFlops = 10;
constexpr double kNormFlops = 4, kFusedAddNormFlops = 5, kRopeFlopsPerElem = 3;
constexpr double kQuantFlops = 3;
constexpr int64_t kIndexBytes = 4;  // i32 block tables, seq_lens; f32 lse, sinks, scales
}  // namespace

const char* math_unit_name(MathUnit u) {
  switch (u) {
    case MathUnit::fp32_simt: return "fp32_simt";
    case MathUnit::bf16_tensor: return "bf16_tensor";
    case MathUnit::fp8_tensor: return "fp8_tensor";
    case MathUnit::fp4_tensor: return "fp4_tensor";
  }
  return "?";
}

const Ceiling& GpuCeilings::compute(MathUnit u) const {
  switch (u) {
    case MathUnit::fp32_simt: return fp32_simt;
    case MathUnit::bf16_tensor: return bf16_tensor;
    case MathUnit::fp8_tensor: return fp8_tensor;
    case MathUnit::fp4_tensor: return fp4_tensor;
  }
  return fp32_simt;
}

const std::vector<GpuCeilings>& known_gpus() {
  // Figures from /work/shared/GPU.md and WORKLOADS.md. H200 copy bandwidth and bf16 GEMM peak
  // were measured on the lent H200 (bf16: 769-798 TFLOP/s through cuBLAS, midpoint used).
  static const std::vector<GpuCeilings> gpus = [] {
    const char* kH200Measured = "measured before on H200 (GPU.md)";
    GpuCeilings h200{"h200",
                     measured(4.3 * kTera, 4.8 * kTera, kH200Measured),
                     datasheet(67 * kTera),
                     measured(780 * kTera, 989 * kTera, kH200Measured),
                     datasheet(1979 * kTera),
                     {},
                     50 * kMiB};
    GpuCeilings h100{"h100", datasheet(3.35 * kTera), datasheet(67 * kTera), datasheet(989 * kTera),
                     datasheet(1979 * kTera), {}, 50 * kMiB};
    GpuCeilings b200{"b200", datasheet(8 * kTera), datasheet(80 * kTera), datasheet(2250 * kTera),
                     datasheet(4500 * kTera), datasheet(9000 * kTera), 126 * kMiB};
    return std::vector<GpuCeilings>{h100, h200, b200};
  }();
  return gpus;
}

const GpuCeilings* find_gpu(std::string_view name) {
  for (const auto& g : known_gpus())
    if (g.name == name) return &g;
  return nullptr;
}

double tensor_bytes(DType t, int64_t n) { return static_cast<double>(dtype_bytes(t, n)); }

double floor_seconds(const Cost& c, const GpuCeilings& g) {
  const double peak = g.compute(c.unit).value;
  const double t_compute = peak > 0 ? c.flops / peak : 0.0;
  const double t_memory = g.hbm.value > 0 ? c.bytes / g.hbm.value : 0.0;
  return std::max(t_compute, t_memory);
}

const char* floor_bound(const Cost& c, const GpuCeilings& g) {
  const double peak = g.compute(c.unit).value;
  const double t_compute = peak > 0 ? c.flops / peak : 0.0;
  const double t_memory = g.hbm.value > 0 ? c.bytes / g.hbm.value : 0.0;
  return t_compute > t_memory ? "compute" : "memory";
}

double arithmetic_intensity(const Cost& c) { return c.bytes > 0 ? c.flops / c.bytes : 0.0; }

Cost cost_rms_norm(int64_t T, int64_t H, DType x, DType weight, DType out, bool dynamic_fp8_scale) {
  Cost c;
  c.flops = kNormFlops * static_cast<double>(T * H);
  c.bytes = tensor_bytes(x, T * H) + tensor_bytes(weight, H) + tensor_bytes(out, T * H) +
            (dynamic_fp8_scale ? tensor_bytes(DType::f32, T) : 0.0);
  return c;
}

Cost cost_fused_add_rms_norm(int64_t T, int64_t H, DType x, DType residual, DType weight, DType out,
                             bool dynamic_fp8_scale) {
  Cost c;
  c.flops = kFusedAddNormFlops * static_cast<double>(T * H);
  c.bytes = tensor_bytes(x, T * H) + 2 * tensor_bytes(residual, T * H) + tensor_bytes(weight, H) +
            tensor_bytes(out, T * H) + (dynamic_fp8_scale ? tensor_bytes(DType::f32, T) : 0.0);
  return c;
}

Cost cost_rope(int64_t T, int64_t Hq, int64_t Hk, int64_t rotary_dim, DType qk, DType cache, DType pos) {
  Cost c;
  const int64_t rotated = T * (Hq + Hk) * rotary_dim;
  c.flops = kRopeFlopsPerElem * static_cast<double>(rotated);
  // In place: the rotated part of q and k is read once and written once.
  c.bytes = 2 * tensor_bytes(qk, rotated) + tensor_bytes(cache, T * rotary_dim) + tensor_bytes(pos, T);
  return c;
}

Cost cost_gated_act(int64_t T, int64_t F, DType dt, GatedAct act) {
  const double per = act == GatedAct::silu ? kSiluFlops : act == GatedAct::silu_clamped ? kSiluClampedFlops
                                                                                        : kGeluTanhFlops;
  Cost c;
  c.flops = per * static_cast<double>(T * F);
  c.bytes = tensor_bytes(dt, T * 2 * F) + tensor_bytes(dt, T * F);
  return c;
}

Cost cost_quant_group(int64_t M, int64_t K, int64_t group, DType x, DType q, DType scale, bool tensor_scale) {
  Cost c;
  c.flops = kQuantFlops * static_cast<double>(M * K);
  c.bytes = tensor_bytes(x, M * K) + tensor_bytes(q, M * K) + tensor_bytes(scale, M * (K / group)) +
            (tensor_scale ? tensor_bytes(DType::f32, 1) : 0.0);
  return c;
}

Cost cost_dequant_group(int64_t M, int64_t K, int64_t group, DType q, DType scale, DType out, bool tensor_scale) {
  Cost c;
  c.flops = 2.0 * static_cast<double>(M * K);  // decode, scale (docs/kernels/dequant_*.md)
  c.bytes = tensor_bytes(q, M * K) + tensor_bytes(scale, M * (K / group)) + tensor_bytes(out, M * K) +
            (tensor_scale ? tensor_bytes(DType::f32, 1) : 0.0);
  return c;
}

Cost cost_paged_decode(const DecodeShape& s) {
  Cost c;
  c.unit = dtype_is_fp8(s.kv) ? MathUnit::fp8_tensor : MathUnit::bf16_tensor;
  const int64_t B = static_cast<int64_t>(s.seq_lens.size());
  double pairs = 0, keys = 0, blocks = 0;
  for (int64_t L : s.seq_lens) {
    keys += static_cast<double>(L);
    blocks += static_cast<double>((L + s.block_size - 1) / s.block_size);
    // Query j (0-based of Q) sits at position L - Q + j and sees L - Q + j + 1 keys.
    for (int64_t j = 0; j < s.Q; ++j) pairs += static_cast<double>(std::max<int64_t>(L - s.Q + j + 1, 0));
  }
  c.flops = 4.0 * static_cast<double>(s.D) * pairs * static_cast<double>(s.Hq);
  const int64_t q_elems = B * s.Q * s.Hq * s.D;
  // Every visible key and value row of each kv head crosses HBM once (GQA heads share it).
  c.bytes = 2 * keys * static_cast<double>(s.Hkv * s.D) * tensor_bytes(s.kv, 1) +
            2 * tensor_bytes(s.q, q_elems) + (blocks + static_cast<double>(B)) * kIndexBytes +
            (s.lse ? tensor_bytes(DType::f32, B * s.Q * s.Hq) : 0.0) +
            (s.sinks ? tensor_bytes(DType::f32, s.Hq) : 0.0);
  return c;
}

Cost cost_merge_states(int64_t S, int64_t N, int64_t H, int64_t D, DType v, DType out, bool out_lse) {
  Cost c;
  // Per (token, head): S scaled accumulations of D values (2 FLOPs each) and one final scale.
  c.flops = static_cast<double>(N * H) * static_cast<double>(S * 2 * D + D);
  c.bytes = tensor_bytes(v, S * N * H * D) + tensor_bytes(DType::f32, S * N * H) + tensor_bytes(out, N * H * D) +
            (out_lse ? tensor_bytes(DType::f32, N * H) : 0.0);
  return c;
}

Cost cost_gemm(int64_t M, int64_t N, int64_t K, DType a, DType b, DType d) {
  Cost c;
  c.unit = a == DType::e2m1 ? MathUnit::fp4_tensor : dtype_is_fp8(a) ? MathUnit::fp8_tensor : MathUnit::bf16_tensor;
  c.flops = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  c.bytes = tensor_bytes(a, M * K) + tensor_bytes(b, K * N) + tensor_bytes(d, M * N);
  return c;
}

Cost cost_copy(int64_t bytes) {
  Cost c;
  c.bytes = 2.0 * static_cast<double>(bytes);
  return c;
}

}  // namespace tejas::bench
