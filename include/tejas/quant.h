// Quantization to FP8 / FP4 formats and back.
//
// All conversions round to nearest, ties to even, and saturate to the format's largest finite
// value (e4m3 448, e2m1 6). Scales multiply on dequantization: x ~= code * scale.
//
// quant_fp8_group: x[M, K] -> q[M, K] e4m3, scales[M, K / group_size]; group_size 128 (the
//   default; any positive divisor of K is accepted).
//   scales f32:   s = max(amax_group, kFp8MinAmax) / 448
//   scales ue8m0: s = 2^ceil(log2(max(amax_group, kFp8MinAmax) / 448))  (rounded up: never saturates)
//   q = sat_rne_e4m3(x / s).
// dequant_fp8_group: out[M, K] = q * s (out in {bf16, f16, f32}).
//
// quant_mx: x[M, K] -> q[M, K], scales[M, K / block]
//   mxfp8: q e4m3, block 32, scales ue8m0
//   mxfp4: q e2m1, block 32, scales ue8m0
//   nvfp4: q e2m1, block 16, scales e4m3, plus tensor_scale f32 [1] (input, > 0)
//   MX (OCP Microscaling v1.0): X = 2^(floor(log2(amax_block)) - emax_elem), emax_elem = 8
//     (e4m3) or 2 (e2m1); an all-zero block gets X = 2^-127. q = sat_rne(x / X).
//   NVFP4: block_scale = sat_rne_e4m3(amax_block / (6 * tensor_scale));
//     q = sat_rne_e2m1(x / (block_scale * tensor_scale)) (q = 0 when block_scale is 0).
//     Dequantization: x ~= q * block_scale * tensor_scale. A caller picks
//     tensor_scale = amax_tensor / (448 * 6) to use the e4m3 scale range fully.
// dequant_mx: the inverse, out in {bf16, f16, f32}.
//
// Shapes: x/out [M, K] (or any rank >= 1: leading dims flatten); K a multiple of the block
// (group) size; e2m1 tensors need an even, contiguous innermost dimension. Strides: innermost
// contiguous. NaN inputs give a NaN scale for their group; Inf saturates.
#pragma once
#include "tejas/context.h"
#include "tejas/status.h"
#include "tejas/tensor.h"

namespace tejas {

Status quant_fp8_group(const ExecContext& ctx, const TensorView& x, const TensorView& q,
                       const TensorView& scales, int group_size = 128);

Status dequant_fp8_group(const ExecContext& ctx, const TensorView& q, const TensorView& scales,
                         const TensorView& out, int group_size = 128);

enum class MxFormat : uint8_t { mxfp8, mxfp4, nvfp4 };

const char* mx_format_name(MxFormat f);
int mx_block_size(MxFormat f);  // 32, 32, 16

Status quant_mx(const ExecContext& ctx, MxFormat format, const TensorView& x, const TensorView& q,
                const TensorView& scales, const TensorView& tensor_scale = {});

Status dequant_mx(const ExecContext& ctx, MxFormat format, const TensorView& q,
                  const TensorView& scales, const TensorView& tensor_scale, const TensorView& out);

}  // namespace tejas
