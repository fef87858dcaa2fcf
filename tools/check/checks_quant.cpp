// quant_fp8_group / dequant_fp8_group and quant_mx / dequant_mx (mxfp8, mxfp4, nvfp4) cases:
// several rows with one all-zero row (the zero-amax rule), f32 and ue8m0 scales, group 64 and
// 128; dequantization from random finite codes and scales. Every output is compared bit for
// bit (exact_rule): the kernels round exactly by design (src/ops/quant/quant_math.h), codes,
// f32 / ue8m0 / e4m3 scales and dequantized values alike, and their unit tests hold them to it.
#include <cmath>

#include "check/op_checks.h"
#include "check/tolerances.h"
#include "tejas/quant.h"

namespace tejas::check {
namespace {
constexpr uint64_t kE4m3MaxFiniteMag = 0x7E;  // 0x7F is NaN
constexpr uint64_t kE4m3Sign = 0x80;
constexpr uint64_t kE2m1MaxCode = 0xF;        // every fp4 code is finite
constexpr uint64_t kUe8m0Lo = 120, kUe8m0Hi = 134;  // scales 2^-7 .. 2^7
constexpr uint64_t kE4m3ScaleLo = 0x20, kE4m3ScaleHi = 0x60;  // positive e4m3 scales 2^-3 .. 2^5
constexpr double kF32ScaleLo = 1e-3, kF32ScaleHi = 1.0;
constexpr double kNvfp4ScaleRange = 448.0 * 6.0;  // e4m3 max * e2m1 max
constexpr int64_t kZeroRow = 1;

std::string mk(int64_t M, int64_t K) { return cat("[", M, ", ", K, "]"); }

void fill_e4m3_codes(HostTensor& t, Rng& rng) {
  for (int64_t i = 0, n = t.numel(); i < n; ++i)
    t.set_bits_flat(i, static_cast<uint64_t>(rng.randint(0, kE4m3MaxFiniteMag)) | (rng.randint(0, 1) ? kE4m3Sign : 0));
}

// Normal values with one all-zero row, so a block with amax 0 is always covered.
void fill_quant_input(HostTensor& x, Rng& rng) {
  fill_normal(x, rng);
  const int64_t K = x.shape()[1];
  if (x.shape()[0] > kZeroRow)
    for (int64_t k = 0; k < K; ++k) x.set({kZeroRow, k}, 0.0);
}

Case quant_fp8(Rng& rng, DType x, DType scale, int64_t M, int64_t K, int64_t group) {
  Case c("quant_fp8_group", cat(dtype_name(x), " ", mk(M, K), " group ", group, " scales ", dtype_name(scale)));
  fill_quant_input(c.in("x", x, {M, K}), rng);
  c.out("q", DType::e4m3, {M, K}, exact_rule());
  c.out("scales", scale, {M, K / group}, exact_rule());
  c.set_call([group](const ExecContext& ctx, const Args& a) {
    return quant_fp8_group(ctx, a["x"], a["q"], a["scales"], static_cast<int>(group));
  });
  return c;
}

Case dequant_fp8(Rng& rng, DType scale, DType out, int64_t M, int64_t K, int64_t group) {
  Case c("dequant_fp8_group",
         cat("e4m3 ", mk(M, K), " group ", group, " scales ", dtype_name(scale), " -> ", dtype_name(out)));
  fill_e4m3_codes(c.in("q", DType::e4m3, {M, K}), rng);
  HostTensor& s = c.in("scales", scale, {M, K / group});
  if (scale == DType::f32) fill_uniform(s, rng, kF32ScaleLo, kF32ScaleHi);
  else fill_codes(s, rng, kUe8m0Lo, kUe8m0Hi);
  c.out("out", out, {M, K}, exact_rule());
  c.set_call([group](const ExecContext& ctx, const Args& a) {
    return dequant_fp8_group(ctx, a["q"], a["scales"], a["out"], static_cast<int>(group));
  });
  return c;
}

DType mx_code_dtype(MxFormat f) { return f == MxFormat::mxfp8 ? DType::e4m3 : DType::e2m1; }
DType mx_scale_dtype(MxFormat f) { return f == MxFormat::nvfp4 ? DType::e4m3 : DType::ue8m0; }

Case quant_mx_case(Rng& rng, MxFormat f, DType x, int64_t M, int64_t K) {
  Case c("quant_mx", cat(mx_format_name(f), " ", dtype_name(x), " ", mk(M, K)));
  HostTensor& xt = c.in("x", x, {M, K});
  fill_quant_input(xt, rng);
  const int64_t block = mx_block_size(f);
  c.out("q", mx_code_dtype(f), {M, K}, exact_rule());
  c.out("scales", mx_scale_dtype(f), {M, K / block}, exact_rule());
  if (f == MxFormat::nvfp4) {  // amax over the e4m3 x e2m1 range; 1 / range with no elements
    const double amax = xt.numel() > 0 ? max_abs(xt) : 1.0;
    c.in("tensor_scale", DType::f32, {1}).set_flat(0, amax / kNvfp4ScaleRange);
  }
  c.set_call([f](const ExecContext& ctx, const Args& a) {
    return quant_mx(ctx, f, a["x"], a["q"], a["scales"], a["tensor_scale"]);
  });
  return c;
}

Case dequant_mx_case(Rng& rng, MxFormat f, DType out, int64_t M, int64_t K) {
  Case c("dequant_mx", cat(mx_format_name(f), " ", mk(M, K), " -> ", dtype_name(out)));
  HostTensor& q = c.in("q", mx_code_dtype(f), {M, K});
  if (f == MxFormat::mxfp8) fill_e4m3_codes(q, rng);
  else fill_codes(q, rng, 0, kE2m1MaxCode);
  HostTensor& s = c.in("scales", mx_scale_dtype(f), {M, K / mx_block_size(f)});
  if (f == MxFormat::nvfp4) {
    fill_codes(s, rng, kE4m3ScaleLo, kE4m3ScaleHi);
    fill_uniform(c.in("tensor_scale", DType::f32, {1}), rng, kF32ScaleLo, kF32ScaleHi);
  } else {
    fill_codes(s, rng, kUe8m0Lo, kUe8m0Hi);
  }
  c.out("out", out, {M, K}, exact_rule());
  c.set_call([f](const ExecContext& ctx, const Args& a) {
    return dequant_mx(ctx, f, a["q"], a["scales"], a["tensor_scale"], a["out"]);
  });
  return c;
}
}  // namespace

std::vector<Case> quant_fp8_group_cases(Rng& rng) {
  std::vector<Case> v;
  v.push_back(quant_fp8(rng, DType::bf16, DType::f32, 5, 384, 128));
  v.push_back(quant_fp8(rng, DType::f16, DType::ue8m0, 3, 256, 128));
  v.push_back(quant_fp8(rng, DType::f32, DType::f32, 4, 192, 64));
  v.push_back(quant_fp8(rng, DType::bf16, DType::ue8m0, 0, 384, 128));
  return v;
}

std::vector<Case> dequant_fp8_group_cases(Rng& rng) {
  std::vector<Case> v;
  v.push_back(dequant_fp8(rng, DType::f32, DType::bf16, 5, 384, 128));
  v.push_back(dequant_fp8(rng, DType::ue8m0, DType::f32, 3, 256, 128));
  v.push_back(dequant_fp8(rng, DType::f32, DType::f16, 2, 128, 64));
  v.push_back(dequant_fp8(rng, DType::f32, DType::bf16, 0, 256, 128));
  return v;
}

std::vector<Case> quant_mx_cases(Rng& rng) {
  std::vector<Case> v;
  v.push_back(quant_mx_case(rng, MxFormat::mxfp8, DType::bf16, 4, 256));
  v.push_back(quant_mx_case(rng, MxFormat::mxfp4, DType::bf16, 3, 128));
  v.push_back(quant_mx_case(rng, MxFormat::nvfp4, DType::bf16, 4, 128));
  v.push_back(quant_mx_case(rng, MxFormat::mxfp4, DType::f32, 2, 96));
  v.push_back(quant_mx_case(rng, MxFormat::nvfp4, DType::bf16, 0, 128));
  return v;
}

std::vector<Case> dequant_mx_cases(Rng& rng) {
  std::vector<Case> v;
  v.push_back(dequant_mx_case(rng, MxFormat::mxfp8, DType::bf16, 4, 256));
  v.push_back(dequant_mx_case(rng, MxFormat::mxfp4, DType::f32, 3, 128));
  v.push_back(dequant_mx_case(rng, MxFormat::nvfp4, DType::bf16, 4, 128));
  v.push_back(dequant_mx_case(rng, MxFormat::mxfp8, DType::f16, 0, 256));
  return v;
}

}  // namespace tejas::check
