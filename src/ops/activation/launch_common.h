// Host-side pieces shared by launch.cu and launch_emu.cpp: problem -> config -> kernel params,
// and the curated instantiations (one table, so both backends run the same kernels).
#pragma once
#include <cstdint>

#include "ops/activation/config.h"
#include "ops/activation/kernel.cuh"
#include "ops/activation/launch.h"
#include "ops/activation/quant_kernel.cuh"
#include "runtime/alignment.h"
#include "runtime/tune.h"

namespace tejas::act {
inline namespace TEJAS_BUILD_NS {

inline GatedProblem gated_problem(const TensorView& x, const TensorView& out) {
  GatedProblem p;
  p.elem_bytes = static_cast<int>(dtype_bytes(x.dtype, 1));
  p.T = out.shape[0];
  p.F = out.shape[1];
  p.x_align = x_halves_alignment(x, p.F);
  p.out_align = detail::access_alignment(out, kMaxVecBytes);
  p.max_grid_y = detail::tune().activation_max_grid_y;
  p.steps = detail::tune().activation_steps;
  p.fast_math = detail::tune().activation_fast_math != 0;
  return p;
}

inline GatedConfig gated_config(const TensorView& x, const TensorView& out) {
  return make_gated_config(gated_problem(x, out));
}

inline GatedParams gated_params(const TensorView& x, const TensorView& out, const ActOptions& o,
                                const GatedConfig& c) {
  return GatedParams{x.data,        out.data,          out.shape[0],
                     out.shape[1],  x.stride[0],       out.stride[0],
                     c.threads_per_row, with_limit_pair(o, x.dtype), c.steps,
                     c.pipeline_stages};
}

using GatedKernel = void (*)(GatedParams);

static_assert(kMaxGatedSteps == detail::kTuneMaxActivationSteps, "activation.steps' bound is the kernel's");

// steps > 1: the 16-byte kernel sized for kMaxGatedSteps (config.cpp allows it only there).
// fast: the activation.fast_math kernel (16-bit S at 16 bytes, one step: config.cpp).
template <class S, Act kAct>
GatedKernel gated_kernel_by_width(int vec_bytes, int steps, bool fast) {
  if constexpr (sizeof(typename S::Raw) == 2) {
    if (fast && vec_bytes == kMaxVecBytes && steps == 1) return gated_kernel<S, kMaxVecBytes, kAct, 1, true>;
  }
  if (vec_bytes == kMaxVecBytes && steps > 1) return gated_kernel<S, kMaxVecBytes, kAct, kMaxGatedSteps>;
  if (vec_bytes == kMaxVecBytes) return gated_kernel<S, kMaxVecBytes, kAct>;
  if (vec_bytes == 8) return gated_kernel<S, 8, kAct>;
  return gated_kernel<S, sizeof(typename S::Raw), kAct>;
}

template <Act kAct>
GatedKernel gated_kernel_by_dtype(DType t, int vec_bytes, int steps, bool fast) {
  if (t == DType::bf16) return gated_kernel_by_width<Bf16, kAct>(vec_bytes, steps, fast);
  if (t == DType::f16) return gated_kernel_by_width<F16, kAct>(vec_bytes, steps, fast);
  return gated_kernel_by_width<F32, kAct>(vec_bytes, steps, false);
}

// The activation.pipeline kernel (16-byte path) for the activation and dtype.
inline GatedKernel gated_pipe_kernel_for(Act act, DType t) {
  if (act == Act::silu) {
    if (t == DType::bf16) return gated_pipe_kernel<Bf16, Act::silu>;
    if (t == DType::f16) return gated_pipe_kernel<F16, Act::silu>;
    return gated_pipe_kernel<F32, Act::silu>;
  }
  if (t == DType::bf16) return gated_pipe_kernel<Bf16, Act::gelu_tanh>;
  if (t == DType::f16) return gated_pipe_kernel<F16, Act::gelu_tanh>;
  return gated_pipe_kernel<F32, Act::gelu_tanh>;
}

inline GatedKernel gated_kernel_for(Act act, DType t, const GatedConfig& c) {
  if (c.pipeline_stages > 0) return gated_pipe_kernel_for(act, t);
  return act == Act::silu ? gated_kernel_by_dtype<Act::silu>(t, c.vec_bytes, c.steps, c.fast_math)
                          : gated_kernel_by_dtype<Act::gelu_tanh>(t, c.vec_bytes, c.steps, c.fast_math);
}

// The launch shape of a config: the persistent grid and its slots' shared memory for the
// pipelined kernel, else grid_x x grid_y and none.
inline dim3 gated_grid(const GatedConfig& c) {
  if (c.pipeline_stages > 0) return dim3(static_cast<unsigned>(c.pipe_blocks));
  return dim3(static_cast<unsigned>(c.grid_x), static_cast<unsigned>(c.grid_y));
}
inline size_t gated_smem(const GatedConfig& c) {
  return c.pipeline_stages > 0 ? static_cast<size_t>(gated_pipe_smem_bytes(c.pipeline_stages)) : 0;
}

// ---- fused quant ------------------------------------------------------------------------------
inline QuantConfig quant_config(const QuantArgs& a) {
  const TensorView &x = *a.x, &q = *a.q;
  QuantProblem p;
  p.T = q.shape[0];
  p.F = q.shape[1];
  p.group = quant_group(a.kind);
  p.q_bits = dtype_bits(q.dtype);
  p.x_align = x_halves_alignment(x, p.F);
  p.q_align = detail::access_alignment(q, kMaxVecBytes);
  p.max_grid_y = detail::tune().activation_max_grid_y;
  p.fast_math = detail::tune().activation_fast_math_quant != 0;
  p.packed_fp4 = detail::tune().activation_packed_fp4 != 0;
  return make_quant_config(p);
}

inline QuantParams quant_params(const QuantArgs& a, const QuantConfig& c) {
  const TensorView &x = *a.x, &q = *a.q, &s = *a.scales;
  const float* ts = a.tensor_scale && a.tensor_scale->defined() ? static_cast<const float*>(a.tensor_scale->data)
                                                                 : nullptr;
  return QuantParams{x.data,      q.data,      s.data,
                     ts,          q.shape[0],  q.shape[1],
                     x.stride[0], dtype_bytes(q.dtype, q.stride[0]), s.stride[0],
                     c.threads_per_row, c.lanes_per_group, a.kind,
                     with_limit_pair(a.options, x.dtype)};
}

using QuantKernel = void (*)(QuantParams);

template <bool kFast, bool kPacked>
QuantKernel quant_kernel_for(DType x_dtype, bool vectorized) {
  if (x_dtype == DType::bf16)
    return vectorized ? silu_quant_kernel<Bf16, true, kFast, kPacked> : silu_quant_kernel<Bf16, false, kFast, kPacked>;
  return vectorized ? silu_quant_kernel<F16, true, kFast, kPacked> : silu_quant_kernel<F16, false, kFast, kPacked>;
}

inline QuantKernel quant_kernel_for(DType x_dtype, const QuantConfig& c) {
  if (c.packed_fp4)
    return c.fast_math ? quant_kernel_for<true, true>(x_dtype, c.vectorized) : quant_kernel_for<false, true>(x_dtype, c.vectorized);
  return c.fast_math ? quant_kernel_for<true, false>(x_dtype, c.vectorized) : quant_kernel_for<false, false>(x_dtype, c.vectorized);
}

}  // namespace TEJAS_BUILD_NS
}  // namespace tejas::act
