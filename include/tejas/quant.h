// Quantization to FP8 / FP4 formats and back.
//
// All conversions round to nearest, ties to even, and saturate to the format's largest finite
// value (e4m3 448, e2m1 6). Scales multiply on dequantization: x ~= code * scale.
//
// quant_fp8_group: x[M, K] -> q[M, K] e4m3, scales[M, K / group_size]; group_size 128 (the
//   default; any positive divisor of K is accepted).
//   scales f32:   s = f32(max(amax_group, kFp8MinAmax) / 448)
//   scales ue8m0: s = 2^ceil(log2(max(amax_group, kFp8MinAmax) / 448))  (rounded up: never saturates)
//   (kFp8MinAmax = 1e-10 is vLLM's / SGLang's eps; DeepGEMM's reference clamps amax at 1e-4, so
//   groups with amax below 1e-4 get smaller scales here than there.)
//   q = sat_rne_e4m3(x / s), s being the scale as stored (after its rounding to f32 / ue8m0).
// dequant_fp8_group: out[M, K] = q * s (out in {bf16, f16, f32}).
//
// quant_mx: x[M, K] -> q[M, K], scales[M, K / block]
//   mxfp8: q e4m3, block 32, scales ue8m0
//   mxfp4: q e2m1, block 32, scales ue8m0
//   nvfp4: q e2m1, block 16, scales e4m3, plus tensor_scale f32 [1] (input, in [2^-64, 2^64])
//   MX (OCP Microscaling v1.0): X = 2^(floor(log2(amax_block)) - emax_elem), emax_elem = 8
//     (e4m3) or 2 (e2m1); exponents below -127 clamp to -127, so an all-zero block (and any
//     block with amax_block < 2^(emax_elem - 126)) gets X = 2^-127 (code 0). q = sat_rne(x / X):
//     |x| / X reaches up to just under 2^(emax_elem + 1) (512, 8), so the largest values of a
//     block may saturate (to 448, 6), as the OCP rule implies. (Transformer Engine's and
//     FlashInfer's activation quantizers round the scale up instead - "RCEIL" - so their codes
//     differ from these at the top of a block; dequantization of either is the same formula.)
//   NVFP4: block_scale = sat_rne_e4m3(amax_block / (6 * tensor_scale));
//     q = sat_rne_e2m1(x / (block_scale * tensor_scale)), block_scale as stored; every q of a
//     block is code 0 (+0) when block_scale is 0 (amax_block too small for e4m3).
//     Dequantization: x ~= q * block_scale * tensor_scale. A caller picks
//     tensor_scale = amax_tensor / (448 * 6) to use the e4m3 scale range fully. This is the
//     decode scale: the reciprocal of vLLM's input_global_scale / TensorRT-LLM's SFScale
//     (448 * 6 / amax).
// dequant_mx: the inverse, out in {bf16, f16, f32}. tensor_scale is required for nvfp4 and must
//   be absent (default TensorView) for mxfp8 / mxfp4.
//
// Dtypes: x and out in {bf16, f16, f32}.
// Shapes: x/out [M, K] or any rank >= 1: leading dims flatten; q has x's shape; scales has x's
// leading dims and K / block (group) last. K a multiple of the block (group) size; M or K may
// be 0 (nothing to do).
// Strides (in elements of each tensor, fp4 in nibbles): innermost contiguous, all non-negative;
// outputs must not map two indices to one element; e2m1 tensors need even outer strides (every
// row starts on a byte; element 0 of a byte is its low nibble). Outputs (q, scales / out) must
// not overlap the inputs or each other. All tensors on one device.
// tensor_scale's value must lie in [kMinTensorScale, kMaxTensorScale] = [2^-64, 2^64]; it is
// validated when it is a host tensor, and on the cuda backend in debug-check mode (a device read
// that synchronizes the stream; not made by a call with no elements, which reads nothing). The
// bound keeps 1 / (6 * tensor_scale) and 1 / (block_scale * tensor_scale) normal f32 numbers,
// which the kernels' exact rounding needs; realistic scales (amax_tensor / 2688) are far inside
// it. Outside it, without debug checks, the cuda backend's codes are unspecified (never a write
// outside the outputs).
//
// Non-finite inputs, per group (block):
//   NaN anywhere in it: its scale is NaN (f32 NaN, ue8m0 0xFF, e4m3 0x7F) and every q of the
//     group is the positive NaN code of q's dtype: e4m3 0x7F; e2m1 has no NaN, so 0x7 (+6),
//     which the NaN scale turns back into NaN on dequantization.
//   +-Inf (no NaN): treated as the largest finite value of x's dtype with its sign, for the
//     group's amax and for its own code (f32 x: +-448 with f32 scales, +-256 with ue8m0 scales
//     that round up; +-max code in the MX formats). Dequantizing that code may round back to
//     +-Inf in out's dtype.
// A zero input keeps its sign in q (-0 -> e4m3 0x80, e2m1 0x8).
// Dequantized values are rounded once to out's dtype (f16/bf16 overflow to Inf, NaN stays NaN).
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

const char* mx_format_name(MxFormat f);  // "mxfp8", "mxfp4", "nvfp4" ("?" when out of range)
// nvfp4's tensor_scale range (see above).
inline constexpr double kMinTensorScale = 0x1p-64;
inline constexpr double kMaxTensorScale = 0x1p64;

int mx_block_size(MxFormat f);           // 32, 32, 16 (0 when out of range)

Status quant_mx(const ExecContext& ctx, MxFormat format, const TensorView& x, const TensorView& q,
                const TensorView& scales, const TensorView& tensor_scale = {});

Status dequant_mx(const ExecContext& ctx, MxFormat format, const TensorView& q,
                  const TensorView& scales, const TensorView& tensor_scale, const TensorView& out);

}  // namespace tejas
