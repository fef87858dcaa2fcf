#include "bench/workloads.h"

namespace tejas::bench {

const std::vector<ModelShape>& models() {
  // name, hidden, layers, q heads, kv heads, head dim, ffn, experts, top-k, rotary dim, window.
  static const std::vector<ModelShape> m = {
      {"llama-3.1-8b", 4096, 32, 32, 8, 128, 14336, 0, 0, 128, 0, "GQA 4:1, rope theta 5e5"},
      {"llama-3.1-70b", 8192, 80, 64, 8, 128, 28672, 0, 0, 128, 0, "GQA 8:1, served at TP 4/8"},
      // One GPU's share at TP 4 (WORKLOADS.md: TP divides heads and FFN width): q/kv heads and FFN
      // / 4; QKV, gate+up column-parallel, O, down row-parallel. Norms and the hidden-size quant are not
      // sharded (no rows: the TP-1 rows are the same).
      {"llama-3.1-70b-tp4", 8192, 80, 16, 2, 128, 7168, 0, 0, 128, 0, "Llama-3.1-70B, one of 4 TP ranks", 4},
      {"llama-3.1-70b-tp8", 8192, 80, 8, 1, 128, 3584, 0, 0, 128, 0, "Llama-3.1-70B, one of 8 TP ranks", 8},
      {"mistral-small-24b", 5120, 40, 32, 8, 128, 32768, 0, 0, 128, 0, "dense mid-size"},
      {"qwen3-30b-a3b", 2048, 48, 32, 4, 128, 768, 128, 8, 128, 0, "small-expert MoE"},
      {"deepseek-v3", 7168, 61, 128, 1, 576, 2048, 256, 8, 64, 0,
       "MLA decode: q/k dim 576, v dim 512, one latent head; dense FFN 18432; FP8 128x128 weights"},
      {"gpt-oss-120b", 2880, 36, 64, 8, 64, 2880, 128, 4, 64, 128,
       "sliding window 128 on alternate layers, sinks, MXFP4 experts, clamped SwiGLU"},
      {"gemma-3-27b", 5376, 62, 32, 16, 128, 21504, 0, 0, 128, 1024, "window 1024 on 5 of 6 layers"},
      {"whisper-large-v3-encoder", 1280, 32, 20, 20, 64, 5120, 0, 0, 0, 0, "1500 positions, non-causal"},
      {"fastconformer-l", 512, 17, 8, 8, 64, 2048, 0, 0, 0, 0, "streaming, chunks of 13 frames"},
      {"siglip-so400m", 1152, 27, 16, 16, 72, 4304, 0, 0, 0, 0, "729 patches, head dim 72"},
  };
  return m;
}

const ModelShape& norm_limit_model() {
  static const ModelShape m{"llama-3.1-405b", 16384, 126, 128, 8, 128, 53248, 0, 0, 128, 0,
                            "hidden 16384: the norm kernels' limit (norm suite only)"};
  return m;
}

const ModelShape* find_model(std::string_view name) {
  for (const auto& m : models())
    if (name == m.name) return &m;
  if (name == norm_limit_model().name) return &norm_limit_model();
  return nullptr;
}

const std::vector<int64_t>& token_counts() {
  static const std::vector<int64_t> t = {1, 16, 128, 1024, 4096, 16384};
  return t;
}
const std::vector<int64_t>& decode_batches() {
  static const std::vector<int64_t> b = {1, 8, 32, 64, 128, 256};
  return b;
}
const std::vector<int64_t>& decode_contexts() {
  static const std::vector<int64_t> c = {512, 2048, 8192, 32768, 131072};
  return c;
}
const std::vector<int64_t>& page_sizes() {
  static const std::vector<int64_t> p = {16, 64};
  return p;
}

std::vector<GemmShape> layer_gemms(const ModelShape& m, int64_t tokens) {
  const int64_t qkv = (m.q_heads + 2 * m.kv_heads) * m.head_dim;
  return {
      {"qkv", tokens, qkv, m.hidden},
      {"o", tokens, m.hidden, m.q_heads * m.head_dim},
      {"gate_up", tokens, 2 * m.ffn, m.hidden},
      {"down", tokens, m.hidden, m.ffn},
  };
}

}  // namespace tejas::bench
