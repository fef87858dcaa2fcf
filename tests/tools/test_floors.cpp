// Floor arithmetic against hand-computed examples (every number below worked out on paper from
// the definitions in bench/floors.h), plus the ceilings and workload tables.
#include <gtest/gtest.h>

#include "bench/floors.h"
#include "bench/workloads.h"

using namespace tejas;
using namespace tejas::bench;

namespace {
const GpuCeilings& gpu(const char* name) {
  const GpuCeilings* g = find_gpu(name);
  EXPECT_NE(g, nullptr) << name;
  return *g;
}
}  // namespace

TEST(Floors, Ceilings) {
  EXPECT_DOUBLE_EQ(gpu("h200").hbm.value, 4.3e12);
  EXPECT_DOUBLE_EQ(gpu("h200").hbm.datasheet, 4.8e12);
  EXPECT_DOUBLE_EQ(gpu("h200").bf16_tensor.value, 780e12);
  EXPECT_DOUBLE_EQ(gpu("h200").bf16_tensor.datasheet, 989e12);
  EXPECT_DOUBLE_EQ(gpu("h200").fp8_tensor.value, 1979e12);
  EXPECT_DOUBLE_EQ(gpu("h100").hbm.value, 3.35e12);
  EXPECT_DOUBLE_EQ(gpu("b200").hbm.value, 8e12);
  EXPECT_DOUBLE_EQ(gpu("b200").bf16_tensor.value, 2250e12);
  EXPECT_DOUBLE_EQ(gpu("b200").fp8_tensor.value, 4500e12);
  EXPECT_DOUBLE_EQ(gpu("b200").fp4_tensor.value, 9000e12);
  EXPECT_EQ(gpu("h200").fp4_tensor.value, 0.0);  // Hopper has no fp4 tensor cores
  EXPECT_EQ(find_gpu("a100"), nullptr);
}

TEST(Floors, RmsNormOneTokenIsMemoryBound) {
  // x 4096 bf16 (8192 B) + weight 4096 bf16 (8192 B) + out (8192 B) = 24576 B; 4 FLOPs x 4096.
  const Cost c = cost_rms_norm(1, 4096, DType::bf16, DType::bf16, DType::bf16, false);
  EXPECT_DOUBLE_EQ(c.bytes, 24576);
  EXPECT_DOUBLE_EQ(c.flops, 16384);
  EXPECT_EQ(c.unit, MathUnit::fp32_simt);
  // 24576 / 4.3e12 = 5.7153488e-9 s; 16384 / 67e12 = 2.4e-10 s.
  EXPECT_NEAR(floor_seconds(c, gpu("h200")), 5.7153488372e-9, 1e-18);
  EXPECT_STREQ(floor_bound(c, gpu("h200")), "memory");
  EXPECT_NEAR(arithmetic_intensity(c), 16384.0 / 24576.0, 1e-15);
}

TEST(Floors, FusedAddNormFp8Out) {
  // T=2, H=8: x bf16 32 B, residual f32 read + written 2 x 64 B, weight bf16 16 B, out e4m3 16 B,
  // dynamic scales 2 x f32 8 B = 200 B; 5 FLOPs x 16 = 80.
  const Cost c = cost_fused_add_rms_norm(2, 8, DType::bf16, DType::f32, DType::bf16, DType::e4m3, true);
  EXPECT_DOUBLE_EQ(c.bytes, 200);
  EXPECT_DOUBLE_EQ(c.flops, 80);
}

TEST(Floors, GemmPeakIsComputeBound) {
  // 2 * 8192^3 = 1.099511627776e12 FLOPs; bytes 3 * 8192^2 * 2 = 402653184.
  const Cost c = cost_gemm(8192, 8192, 8192, DType::bf16, DType::bf16, DType::bf16);
  EXPECT_DOUBLE_EQ(c.flops, 1.099511627776e12);
  EXPECT_DOUBLE_EQ(c.bytes, 402653184);
  EXPECT_EQ(c.unit, MathUnit::bf16_tensor);
  // 1.099511627776e12 / 780e12 = 1.40963029202e-3 s (memory: 9.36e-5 s).
  EXPECT_NEAR(floor_seconds(c, gpu("h200")), 1.40963029202e-3, 1e-13);
  EXPECT_STREQ(floor_bound(c, gpu("h200")), "compute");
  // h100 uses the datasheet 989: 1.11173066e-3 s.
  EXPECT_NEAR(floor_seconds(c, gpu("h100")), 1.099511627776e12 / 989e12, 1e-15);
  EXPECT_EQ(cost_gemm(16, 16, 16, DType::e4m3, DType::e4m3, DType::bf16).unit, MathUnit::fp8_tensor);
}

TEST(Floors, Fp4GemmWithoutFp4UnitsUsesMemoryOnly) {
  // 64x64x64 e2m1: A and B 4096 nibbles = 2048 B each, D bf16 8192 B = 12288 B. H200 has no fp4
  // ceiling, so only the memory term counts: 12288 / 4.3e12.
  const Cost c = cost_gemm(64, 64, 64, DType::e2m1, DType::e2m1, DType::bf16);
  EXPECT_DOUBLE_EQ(c.bytes, 12288);
  EXPECT_NEAR(floor_seconds(c, gpu("h200")), 12288 / 4.3e12, 1e-20);
  // b200: compute 524288 / 9e15 = 5.8e-11 s vs memory 12288 / 8e12 = 1.536e-9 s.
  EXPECT_NEAR(floor_seconds(c, gpu("b200")), 1.536e-9, 1e-20);
}

TEST(Floors, PagedDecode) {
  // Requests of 3 and 5 keys, Q=1, Hq=4, Hkv=2, D=8, pages of 4, bf16, lse written.
  DecodeShape s;
  s.seq_lens = {3, 5};
  s.Hq = 4;
  s.Hkv = 2;
  s.D = 8;
  s.block_size = 4;
  s.lse = true;
  const Cost c = cost_paged_decode(s);
  // Pairs: 3 + 5 = 8 per head; FLOPs 4 * D * 8 * Hq = 1024.
  EXPECT_DOUBLE_EQ(c.flops, 1024);
  // K and V: 8 keys x 2 heads x 8 dims x 2 B x 2 = 512; q and out 64 elements x 2 B x 2 = 256;
  // pages 1 + 2 plus 2 seq_lens, 4 B each = 20; lse 8 x 4 B = 32. Total 820.
  EXPECT_DOUBLE_EQ(c.bytes, 820);
  EXPECT_EQ(c.unit, MathUnit::bf16_tensor);
  // Q = 2: query j of a 3-key request sees 2 then 3 keys, of a 5-key one 4 then 5: 14 pairs.
  s.Q = 2;
  EXPECT_DOUBLE_EQ(cost_paged_decode(s).flops, 4.0 * 8 * 14 * 4);
  s.kv = DType::e4m3;
  EXPECT_EQ(cost_paged_decode(s).unit, MathUnit::fp8_tensor);
}

TEST(Floors, RopeActivationQuantMergeCopy) {
  // rope: T=2, 4+1 heads, 64 rotated dims: 640 elements, read + written as bf16 = 2560 B;
  // cache rows 2 x 64 f32 = 512 B; positions 2 x i32 = 8 B. FLOPs 3 x 640.
  Cost c = cost_rope(2, 4, 1, 64, DType::bf16, DType::f32, DType::i32);
  EXPECT_DOUBLE_EQ(c.bytes, 3080);
  EXPECT_DOUBLE_EQ(c.flops, 1920);
  // silu_mul: x [3, 10] bf16 = 60 B, out [3, 5] = 30 B; 4 FLOPs x 15.
  c = cost_gated_act(3, 5, DType::bf16, GatedAct::silu);
  EXPECT_DOUBLE_EQ(c.bytes, 90);
  EXPECT_DOUBLE_EQ(c.flops, 60);
  EXPECT_DOUBLE_EQ(cost_gated_act(3, 5, DType::bf16, GatedAct::gelu_tanh).flops, 150);
  // mxfp4: x [2, 64] bf16 = 256 B, q 128 nibbles = 64 B, 4 ue8m0 scales = 4 B.
  c = cost_quant_group(2, 64, 32, DType::bf16, DType::e2m1, DType::ue8m0, false);
  EXPECT_DOUBLE_EQ(c.bytes, 324);
  EXPECT_DOUBLE_EQ(c.flops, 384);
  // nvfp4: x [1, 16] bf16 32 B, q 8 B, one e4m3 scale 1 B, tensor scale f32 4 B.
  EXPECT_DOUBLE_EQ(cost_quant_group(1, 16, 16, DType::bf16, DType::e2m1, DType::e4m3, true).bytes, 45);
  // dequant fp8 group: q [2, 256] 512 B, scales [2, 2] f32 16 B, out bf16 1024 B; 2 FLOPs each
  // (decode, scale).
  c = cost_dequant_group(2, 256, 128, DType::e4m3, DType::f32, DType::bf16, false);
  EXPECT_DOUBLE_EQ(c.bytes, 1552);
  EXPECT_DOUBLE_EQ(c.flops, 1024);
  // dequant nvfp4: q [1, 32] 16 B, 2 e4m3 scales 2 B, tensor scale 4 B, out bf16 64 B.
  c = cost_dequant_group(1, 32, 16, DType::e2m1, DType::e4m3, DType::bf16, true);
  EXPECT_DOUBLE_EQ(c.bytes, 86);
  EXPECT_DOUBLE_EQ(c.flops, 64);
  // merge: S=2, N=3, H=2, D=4 bf16: v parts 96 B, lse parts 48 B, out 48 B, out lse 24 B;
  // FLOPs 6 x (2*2*4 + 4) = 120.
  c = cost_merge_states(2, 3, 2, 4, DType::bf16, DType::bf16, true);
  EXPECT_DOUBLE_EQ(c.bytes, 216);
  EXPECT_DOUBLE_EQ(c.flops, 120);
  // Copy of 1 GiB moves 2 GiB; on h100 2^31 / 3.35e12 s.
  c = cost_copy(int64_t{1} << 30);
  EXPECT_DOUBLE_EQ(c.bytes, 2147483648.0);
  EXPECT_DOUBLE_EQ(c.flops, 0);
  EXPECT_NEAR(floor_seconds(c, gpu("h100")), 2147483648.0 / 3.35e12, 1e-15);
}

TEST(Workloads, ModelsAndShapes) {
  const ModelShape* m = find_model("llama-3.1-8b");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->hidden, 4096);
  EXPECT_EQ(m->q_heads, 32);
  EXPECT_EQ(m->kv_heads, 8);
  EXPECT_EQ(m->ffn, 14336);
  EXPECT_EQ(find_model("gpt-oss-120b")->head_dim, 64);
  EXPECT_EQ(find_model("deepseek-v3")->experts, 256);
  EXPECT_EQ(find_model("siglip-so400m")->head_dim, 72);
  EXPECT_EQ(find_model("nope"), nullptr);
  EXPECT_EQ(models().size(), 12u);
  EXPECT_TRUE(is_mla(*find_model("deepseek-v3")));
  EXPECT_FALSE(is_mla(*find_model("llama-3.1-70b-tp8")));  // one kv head per rank, but GQA
  const ModelShape* tp4 = find_model("llama-3.1-70b-tp4");  // 70B's heads and FFN over 4 ranks
  ASSERT_NE(tp4, nullptr);
  EXPECT_EQ(tp4->tp, 4);
  EXPECT_EQ(tp4->q_heads * tp4->tp, find_model("llama-3.1-70b")->q_heads);
  EXPECT_EQ(tp4->kv_heads * tp4->tp, find_model("llama-3.1-70b")->kv_heads);
  EXPECT_EQ(tp4->ffn * tp4->tp, find_model("llama-3.1-70b")->ffn);
  const ModelShape* tp8 = find_model("llama-3.1-70b-tp8");
  ASSERT_NE(tp8, nullptr);
  EXPECT_EQ(tp8->q_heads * tp8->tp, 64);
  EXPECT_EQ(tp8->kv_heads * tp8->tp, 8);
  EXPECT_EQ(tp8->ffn * tp8->tp, 28672);
  EXPECT_EQ(token_counts().front(), 1);
  EXPECT_EQ(token_counts().back(), 16384);
  // QKV of Llama-3.1-8B at 16 tokens: N = (32 + 2 * 8) * 128 = 6144, K = 4096.
  const auto g = layer_gemms(*m, 16);
  ASSERT_EQ(g.size(), 4u);
  EXPECT_EQ(g[0].M, 16);
  EXPECT_EQ(g[0].N, 6144);
  EXPECT_EQ(g[0].K, 4096);
  EXPECT_EQ(g[2].N, 2 * 14336);  // gate + up
  EXPECT_EQ(g[3].K, 14336);      // down
}
