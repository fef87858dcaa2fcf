// Attention over a paged KV cache, and merging of partial attention states.
//
// paged_decode_attention: for request b, query token j (of Q, 1 <= Q <= 8) and head h:
//   the request's keys are positions 0 .. L-1 (L = seq_lens[b]); its queries are the last Q of
//   them, so query j sits at position p = L - Q + j and sees keys k <= p (causal among the
//   queries), and with window_left >= 0 only keys k >= p - window_left (window_left = 0: the
//   query sees only its own key). Every query therefore sees at least one key.
//   Key k lives in physical block block_table[b, k / block_size], row k % block_size.
//   s_k = softmax_scale * <q, K_k>;  soft cap c > 0: s_k = c * tanh(s_k / c)
//   out = sum_k softmax(s)_k V_k, where a sink adds exp(sinks[h]) to the softmax denominator
//   (one extra logit per head that attends to nothing; sinks are neither scaled nor capped).
//   lse = log(sum_k exp(s_k) [+ exp(sinks[h])]) (natural log, sink included; FlashInfer's lse is
//   base 2: multiply it by ln 2 before mixing the two). A key set with no
//   visible key (which valid seq_lens rule out here, but a kernel's split of the keys can
//   produce) is the state out = 0, lse = -inf, which merge_attention_states treats as empty.
//   Non-finite inputs propagate: a NaN in q[b, j, h, :] makes out[b, j, h, :] and lse[b, j, h]
//   NaN; a sink of -inf is no sink; a sink of +inf or NaN gives NaN for that head.
// GQA: head h reads kv head h / (Hq / Hkv).
//
// Shapes: q, out [B, Q, Hq, D]; k_cache, v_cache [num_blocks, block_size, Hkv, D];
//   block_table [B, max_blocks] i32; seq_lens [B] i32 with Q <= L <= max_blocks * block_size;
//   sinks [Hq] f32 (may be absent); lse [B, Q, Hq] f32 (may be absent).
//   B >= 0 (B = 0 does nothing); Hq a multiple of Hkv >= 1; D, block_size, num_blocks,
//   max_blocks >= 1.
// Dtypes: q, out in {bf16, f16, f32} (same); caches in {bf16, f16, e4m3, e5m2} (same dtype for
//   k and v); fp8 caches dequantize as code * k_scale (v_scale); k_scale, v_scale must be finite
//   and > 0 for fp8 caches and exactly 1 otherwise.
// Params: softmax_scale finite >= 0; window_left >= -1; logits_soft_cap finite >= 0.
// Strides: every tensor's innermost dimension contiguous, all strides >= 0, outputs laid out so
//   that no two elements share memory; outputs must not overlap any input or each other.
// Head dims 64, 128, 256 at least; block sizes 16, 32, 64 at least (the reference takes any).
// Index contents: the blocks a request uses are those holding a key that one of its queries
//   sees: keys [max(0, L - Q - window_left), L) with a window, [0, L) without. Those
//   block_table entries must lie in [0, num_blocks); the other entries are never read (may be
//   -1). seq_lens and these entries are checked by the reference backend always (invalid_argument
//   naming seq_lens or block_table, nothing written) and by the other backends only in
//   debug-check mode (ExecContext::debug_checks or TEJAS_DEBUG_CHECKS=1); otherwise bad indices
//   are undefined behaviour there.
//
// merge_attention_states: two partial states over disjoint key sets, (v_a, lse_a), (v_b, lse_b)
//   -> out = (e^lse_a v_a + e^lse_b v_b) / (e^lse_a + e^lse_b), out_lse = log(e^lse_a + e^lse_b).
//   A part with lse = -inf contributes nothing (its v is not used, may hold anything); if both
//   are -inf, out = 0 and out_lse = -inf. A NaN or +inf lse gives NaN out and out_lse.
//   Shapes: v_a, v_b, out [N, H, D]; lse_a, lse_b, out_lse [N, H] f32; out_lse may be absent.
//   Dtypes: v_a, v_b, out in {bf16, f16, f32}, all the same.
//   In place: out may be exactly v_a and out_lse exactly lse_a (same data and strides); any
//   other overlap of an output with an input or the other output is rejected.
//   When split parts come from a kernel with sinks, only one part may carry the sink term.
//   vLLM's merge_attn_states maps an lse of +inf to an empty state; here it gives NaN.
// merge_attention_states_n: S >= 1 parts at once: v_parts [S, N, H, D], lse_parts [S, N, H];
//   out [N, H, D], out_lse [N, H]; same rules (no in-place form).
// Strides (both merges): innermost dimension contiguous, strides >= 0, outputs non-self-overlapping.
#pragma once
#include "tejas/context.h"
#include "tejas/status.h"
#include "tejas/tensor.h"

namespace tejas {

inline constexpr int kMaxDecodeQueries = 8;  // Q per request in paged_decode_attention

struct PagedDecodeParams {
  double softmax_scale = 0.0;    // 0 selects 1/sqrt(D)
  int window_left = -1;          // -1: no window; HF sliding_window = W is window_left = W - 1
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
