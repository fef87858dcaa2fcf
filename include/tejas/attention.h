// Attention over a paged KV cache, and merging of partial attention states.
//
// paged_decode_attention: for request b, query token j (of Q, 1 <= Q <= 8) and head h:
//   the request's keys are positions 0 .. L-1 (L = seq_lens[b]); its queries are the last Q of
//   them, so query j sits at position p = L - Q + j and sees keys k <= p (causal among the
//   queries), and with window_left >= 0 only keys k >= p - window_left.
//   Key k lives in physical block block_table[b, k / block_size], row k % block_size.
//   s_k = softmax_scale * <q, K_k>;  soft cap c > 0: s_k = c * tanh(s_k / c)
//   out = sum_k softmax(s)_k V_k, where a sink adds exp(sinks[h]) to the softmax denominator
//   (one extra logit per head that attends to nothing).
//   lse = log(sum_k exp(s_k) [+ exp(sinks[h])]) (natural log), or -inf when no key is visible.
//   A query that sees no key gets out = 0.
// GQA: head h reads kv head h / (Hq / Hkv).
//
// Shapes: q, out [B, Q, Hq, D]; k_cache, v_cache [num_blocks, block_size, Hkv, D];
//   block_table [B, max_blocks] i32; seq_lens [B] i32 with Q <= L <= max_blocks * block_size;
//   sinks [Hq] f32 (may be absent); lse [B, Q, Hq] f32 (may be absent).
// Dtypes: q, out in {bf16, f16, f32} (same); caches in {bf16, f16, e4m3, e5m2} (same dtype for
//   k and v); fp8 caches dequantize as code * k_scale (v_scale).
// Head dims 64, 128, 256 at least; block sizes 16, 32, 64 at least (the reference takes any).
// block_table and seq_lens contents are checked by the reference always and by the other
// backends in debug-check mode.
//
// merge_attention_states: two partial states over disjoint key sets, (v_a, lse_a), (v_b, lse_b)
//   -> out = (e^lse_a v_a + e^lse_b v_b) / (e^lse_a + e^lse_b), out_lse = log(e^lse_a + e^lse_b).
//   A part with lse = -inf contributes nothing; if both are -inf, out = 0 and out_lse = -inf.
//   Shapes: v [N, H, D], lse [N, H] f32; out_lse may be absent.
// merge_attention_states_n: S parts at once: v_parts [S, N, H, D], lse_parts [S, N, H].
#pragma once
#include "tejas/context.h"
#include "tejas/status.h"
#include "tejas/tensor.h"

namespace tejas {

struct PagedDecodeParams {
  double softmax_scale = 0.0;    // 0 selects 1/sqrt(D)
  int window_left = -1;          // -1: no window
  double logits_soft_cap = 0.0;  // 0: off
  float k_scale = 1.0f;          // fp8 caches only (must be 1 otherwise)
  float v_scale = 1.0f;
};

Status paged_decode_attention(const ExecContext& ctx, const TensorView& q,
                              const TensorView& k_cache, const TensorView& v_cache,
                              const TensorView& block_table, const TensorView& seq_lens,
                              const TensorView& sinks, const PagedDecodeParams& params,
                              const TensorView& out, const TensorView& lse = {});

Status merge_attention_states(const ExecContext& ctx, const TensorView& v_a,
                              const TensorView& lse_a, const TensorView& v_b,
                              const TensorView& lse_b, const TensorView& out,
                              const TensorView& out_lse = {});

Status merge_attention_states_n(const ExecContext& ctx, const TensorView& v_parts,
                                const TensorView& lse_parts, const TensorView& out,
                                const TensorView& out_lse = {});

}  // namespace tejas
