// Kernel parameters of the RMSNorm family (rms_norm, fused_add_rms_norm,
// fused_add_rms_norm_quant_fp8_group): one plain struct shared by the host launchers and the
// device code. No CUDA types, so host code can fill it.
#pragma once
#include <cstdint>

#include "tejas/dtype.h"

namespace tejas::norm {

// What the kernel writes to `out` (and `scale`).
enum class OutKind : uint8_t {
  same,         // out in x's dtype
  fp8_dynamic,  // out e4m3, scale f32 [T] written: s[t] = max(amax_h |y|, kFp8MinAmax) / 448
  fp8_static,   // out e4m3, scale f32 [1] read
  fp8_group,    // out e4m3, scale [T, H / 128] f32 or ue8m0 written, one per group of 128
};

struct NormParams {
  const void* x;       // [T, H] x's dtype (the kernel's template dtype); row stride x_stride; may be `out`
  const void* weight;  // [H] w_dtype (bf16, f16 or f32)
  void* residual;      // [T, H] res_dtype, read then written (residual += x); null for rms_norm
  void* out;           // [T, H] x's dtype (OutKind::same) or e4m3 codes; row stride out_stride
  void* scale;         // null (same); f32 [T] (fp8_dynamic, written); f32 [1] (fp8_static, read);
                       // [T, H / 128] scale_dtype (fp8_group, written; strides scale_stride_t/_g)
  int64_t x_stride = 0, res_stride = 0, out_stride = 0;  // token strides, in elements
  int64_t scale_stride_t = 0, scale_stride_g = 0;        // fp8_group scales, in elements
  int64_t T = 0;       // rows
  int H = 0;           // row length (<= kMaxH)
  float eps = 0;
  float min_scale = 0;  // f32(kFp8MinAmax / 448): the floor of dynamic and group scales
  DType w_dtype = DType::f32, res_dtype = DType::f32, scale_dtype = DType::f32;
  OutKind out_kind = OutKind::same;
  bool warp_per_row = false;  // one warp per row (blockDim.x = 32 * rows per block); else one CTA per row
  int prefetch_rows = 0;      // > 0: also prefetch.L2 row + prefetch_rows's x and residual (TEJAS_TUNE norm.prefetch_rows)
  int pipeline_stages = 0;    // norm_pipe_kernel only: rows each CTA keeps in flight in shared memory (1 or 2)
  // residual += x as packed 16-bit adds (kernel.cuh's add_residual_packed): set when x and the
  // residual share a 16-bit dtype (and TEJAS_TUNE norm.packed_add is on); vectors of >= 2 only.
  bool packed_add = false;
};

}  // namespace tejas::norm
