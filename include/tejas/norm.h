// RMSNorm family.
//
//   rms_norm:           out[t, :] = x[t, :] * rsqrt(mean_h(x[t, h]^2) + eps) * weight
//   fused_add_rms_norm: residual[t, :] += x[t, :]            (rounded to residual's dtype, stored)
//                       out[t, :] = rms_norm(residual[t, :]) (computed from the stored residual)
//
// Shapes: x, out [T, H]; residual [T, H]; weight [H]. T >= 1, H >= 1.
// Dtypes: x in {bf16, f16, f32}; weight in {x's dtype, f32}; residual in {bf16, f16, f32};
//         out in {x's dtype, e4m3}. An e4m3 `out` needs `out_scale` (below); any other `out`
//         needs `out_scale.scale` absent.
// eps: finite and > 0.
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
//                      s = f32(kFp8MinAmax / 448) and zero codes.
//   static_per_tensor: s = out_scale.scale[0] (f32 [1], an input). It must be finite and > 0:
//                      checked by the reference backend always, by the others only in
//                      debug-check mode (ExecContext::debug_checks). A NaN y gives a NaN code;
//                      |y / s| beyond 448 saturates to +-448.
#pragma once
#include "tejas/context.h"
#include "tejas/status.h"
#include "tejas/tensor.h"

namespace tejas {

// Floor on the amax used for dynamic FP8 scales, so an all-zero row gets a finite, nonzero scale.
inline constexpr double kFp8MinAmax = 1e-10;
inline constexpr double kE4m3Max = 448.0;

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

}  // namespace tejas
