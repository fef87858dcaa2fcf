// RMSNorm family.
//
//   rms_norm:           out[t, :] = x[t, :] * rsqrt(mean_h(x[t, h]^2) + eps) * weight
//   fused_add_rms_norm: residual[t, :] += x[t, :]            (rounded to residual's dtype, stored)
//                       out[t, :] = rms_norm(residual[t, :]) (computed from the stored residual)
//
// Shapes: x, out [T, H]; residual [T, H]; weight [H]. T >= 0 (T = 0 does nothing), H >= 1.
// Dtypes: x in {bf16, f16, f32}; weight in {x's dtype, f32}; residual in {bf16, f16, f32};
//         out in {x's dtype, e4m3}. An e4m3 `out` needs `out_scale` (below); any other `out`
//         needs `out_scale.scale` absent.
// eps: a positive normal f32 value, 2^-126 to FLT_MAX (the kernels use it as f32).
// Strides: non-negative; innermost dimension contiguous; the token stride is free (views into a
//          wider buffer are fine; inputs may even repeat rows, stride 0). Outputs (out, residual,
//          a dynamic scale) must not overlap themselves. `out` may be exactly `x` (same data and
//          strides: in place); any other overlap between an output and another argument is
//          rejected. Every data pointer is aligned to its element size; all on one device.
// Math: float64 in the reference; one rounding to the output dtype at the end.
// Non-finite values follow IEEE arithmetic of the formula, row by row: a NaN in x[t, :] (or in
//   the stored residual row) makes out[t, :] all NaN; an Inf there gives rsqrt(...) = 0, so out
//   is NaN where the row holds +-Inf (Inf * 0) and +-0 elsewhere. Other rows are unaffected.
//
// FP8 output: y = rms_norm(...) (float64, unrounded) is quantized as out = sat_rne_e4m3(y / s),
//   where s is the f32 scale value (rounded to f32 first; the division is in float64):
//   dynamic_per_token: s[t] = f32(max(amax_h |y[t, h]|, kFp8MinAmax) / 448), written to
//                      out_scale.scale (f32 [T], an output). A row whose y holds a NaN gets a
//                      NaN scale and all-NaN codes (0x7F / 0xFF); an all-zero row gets
//                      s = f32(kFp8MinAmax / 448) and zero codes. (vLLM's fused
//                      norm + quant floors s at 1 / (448 * 512), so rows with amax below 1/512
//                      get a smaller scale and larger codes here than there.)
//   static_per_tensor: s = out_scale.scale[0] (f32 [1], an input). It must be finite and > 0:
//                      checked by the reference backend always, by the others only in
//                      debug-check mode (ExecContext::debug_checks) and on calls with tokens
//                      (T = 0 reads nothing: docs/using.md). A NaN y gives a NaN code;
//                      |y / s| beyond 448 saturates to +-448.
//
// fused_add_rms_norm_quant_fp8_group: fused_add_rms_norm followed by quant_fp8_group in one pass:
//   residual[t, :] += x[t, :]                  (rounded to residual's dtype, stored)
//   y[t, :] = rms_norm(residual[t, :])         (float64 from the stored residual, NOT rounded to
//                                               an activation dtype: the fused kernel quantizes
//                                               its f32 y directly, so the reference does not
//                                               round either; the unfused pair rounds y to x's
//                                               dtype first and may pick other codes)
//   for each group g of kNormQuantGroup (128) consecutive elements of a row, quant_fp8_group's
//   rules (tejas/quant.h) applied to y, with y first clamped to +-FLT_MAX (so an Inf, from an
//   infinite weight, saturates like an f32 input there):
//     scales f32:   s = f32(max(amax_g |y|, kFp8MinAmax) / 448)
//     scales ue8m0: s = 2^ceil(log2(max(amax_g |y|, kFp8MinAmax) / 448))
//     q = sat_rne_e4m3(y / s), s as stored. A NaN in the group: NaN scale (f32 NaN / ue8m0
//     0xFF) and every code of the group 0x7F (or 0xFF).
// Shapes: x, residual, q [T, H] with H a multiple of 128; weight [H]; scales [T, H / 128].
// Dtypes: x, weight, residual as fused_add_rms_norm; q e4m3; scales f32 or ue8m0.
// Strides: x, residual, q as above. scales: any non-negative strides whose elements are
//   distinct, e.g. a column-major view (strides [1, T_pad]) for GEMMs that read MN-major scales.
// Outputs (residual, q, scales) overlap neither each other nor the inputs.
//
// Kernels (emulator and cuda backends; H <= 16384 and T <= 2^31 - 1, beyond either returns
// unsupported there): one row
// per CTA (one warp per row for short rows), the row held in registers between the reductions
// and the write; f32 arithmetic. bf16 / f16 outputs are within 1 ulp of the reference, f32
// outputs within a few f32 ulps; fp8 codes match except one code apart where y / s lies within
// f32 rounding of a midpoint between codes; dynamic scales within f32 rounding (ue8m0 scales one
// step apart where amax / 448 is within f32 rounding of a power of two). The sum of squares is
// accumulated in f32: rows with |x| above ~1.8e19 overflow it (out 0 / NaN as for an Inf row)
// where the float64 reference stays finite.
#pragma once
#include "tejas/context.h"
#include "tejas/status.h"
#include "tejas/tensor.h"

namespace tejas {

// Elements per scale of fused_add_rms_norm_quant_fp8_group.
inline constexpr int kNormQuantGroup = 128;

enum class Fp8ScaleMode : uint8_t { dynamic_per_token, static_per_tensor };

struct Fp8Scale {
  TensorView scale;  // absent unless `out` is e4m3
  Fp8ScaleMode mode = Fp8ScaleMode::dynamic_per_token;
};

Status rms_norm(const ExecContext& ctx, const TensorView& x, const TensorView& weight, double eps,
                const TensorView& out, const Fp8Scale& out_scale = {});

Status fused_add_rms_norm(const ExecContext& ctx, const TensorView& x, const TensorView& residual,
                          const TensorView& weight, double eps, const TensorView& out,
                          const Fp8Scale& out_scale = {});

Status fused_add_rms_norm_quant_fp8_group(const ExecContext& ctx, const TensorView& x, const TensorView& residual,
                                          const TensorView& weight, double eps, const TensorView& q,
                                          const TensorView& scales);

}  // namespace tejas
