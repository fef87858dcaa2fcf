// Production workload shapes (the facts of /work/shared/WORKLOADS.md, encoded here so nothing is
// read at run time).
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

namespace tejas::bench {

struct ModelShape {
  const char* name;       // "llama-3.1-8b"
  int64_t hidden;
  int64_t layers;
  int64_t q_heads;
  int64_t kv_heads;       // DeepSeek-V3 MLA: 1 latent head
  int64_t head_dim;       // DeepSeek-V3 MLA decode: 576 (q/k), values 512
  int64_t ffn;            // dense FFN width, or per-expert FFN width for MoE models
  int64_t experts;        // 0 for dense models
  int64_t top_k;          // experts per token (0 dense)
  int64_t rotary_dim;     // dims rotated per head (DeepSeek-V3: the 64 rope dims)
  int64_t sliding_window; // 0 = none (the model's windowed layers)
  const char* notes;
  int tp = 1;             // tensor-parallel degree the heads and FFN width above are divided by
};

// MLA (DeepSeek-V3): one latent kv head wider than its rotary part. Not merely one kv head: a
// GQA model at a TP degree of its kv head count (Llama-3.1-70B at TP 8) has one per rank too.
inline bool is_mla(const ModelShape& m) { return m.kv_heads == 1 && m.head_dim > m.rotary_dim; }

const std::vector<ModelShape>& models();
// Llama-3.1-405B (hidden 16384, not in WORKLOADS.md): the norm kernels' largest row, benched by
// the norm suite only (with --model all, or by name), so that hidden size is timed too.
const ModelShape& norm_limit_model();
const ModelShape* find_model(std::string_view name);  // nullptr when unknown (knows both)

// Token counts for prefill / batched ops, 1 .. 16384.
const std::vector<int64_t>& token_counts();
// Decode regime.
const std::vector<int64_t>& decode_batches();   // 1, 8, 32, 64, 128, 256
const std::vector<int64_t>& decode_contexts();  // 512 .. 128k
const std::vector<int64_t>& page_sizes();       // 16, 64
inline constexpr int64_t kMaxSpeculativeTokens = 8;  // query tokens per request with MTP / spec decoding

// The GEMMs of one layer at M tokens: QKV, O, gate+up, down (dense models; MoE expert GEMMs
// use the expert FFN width).
struct GemmShape {
  const char* what;  // "qkv", "o", "gate_up", "down"
  int64_t M, N, K;
};
std::vector<GemmShape> layer_gemms(const ModelShape& m, int64_t tokens);

}  // namespace tejas::bench
