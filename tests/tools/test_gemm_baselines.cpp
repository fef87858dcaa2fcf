// The cuBLASLt GEMM baselines' host-side arithmetic: kind names, scale-tensor sizes (cuBLAS docs
// 3.1.4.4.2 / 3.1.4.5.1), architecture and shape support, floors, the gemm suite rows, and that
// prepare_gemm validates its arguments and answers unsupported without a GPU.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "bench/cublaslt.h"
#include "bench/suites.h"
#include "check/cuda_mem.h"
#include "support/seed.h"

namespace tejas::bench {
namespace {

// Counts blocks of `block` along `extent` by walking it (no division), as the tests' own math.
int64_t count_blocks(int64_t extent, int64_t block) {
  int64_t n = 0;
  for (int64_t start = 0; start < extent; start += block) ++n;
  return n;
}
// Smallest multiple of `m` that is >= v, by stepping.
int64_t next_multiple(int64_t v, int64_t m) {
  int64_t r = 0;
  while (r < v) r += m;
  return r;
}

TEST(GemmBaselines, KindNamesAreDistinctAndStable) {
  std::set<std::string> names;
  for (GemmKind k : kAllGemmKinds) names.insert(gemm_kind_name(k));
  EXPECT_EQ(names.size(), std::size(kAllGemmKinds));
  EXPECT_STREQ(gemm_kind_name(GemmKind::bf16), "bf16");
  EXPECT_STREQ(gemm_kind_name(GemmKind::fp8_per_tensor), "fp8_per_tensor");
  EXPECT_STREQ(gemm_kind_name(GemmKind::fp8_block128), "fp8_block128");
  EXPECT_STREQ(gemm_kind_name(GemmKind::mxfp8), "mxfp8");
  EXPECT_STREQ(gemm_kind_name(GemmKind::nvfp4), "nvfp4");
  EXPECT_EQ(gemm_input_dtype(GemmKind::bf16), DType::bf16);
  EXPECT_EQ(gemm_input_dtype(GemmKind::fp8_block128), DType::e4m3);
  EXPECT_EQ(gemm_input_dtype(GemmKind::mxfp8), DType::e4m3);
  EXPECT_EQ(gemm_input_dtype(GemmKind::nvfp4), DType::e2m1);
}

TEST(GemmBaselines, Block128ScalesWorkedExamples) {
  // DeepSeek-V3 q_b at decode: M=1 (run as 4 tokens), N=24576, K=1536 -> 12 K blocks, 192 N blocks.
  GemmScales s = gemm_scales(GemmKind::fp8_block128, 1, 24576, 1536);
  EXPECT_EQ(s.dtype, DType::f32);
  EXPECT_EQ(s.k_block, 128);
  EXPECT_EQ(gemm_run_tokens(GemmKind::fp8_block128, 1), 4);
  EXPECT_EQ(s.act_alloc, 4 * 12);     // [4 tokens x 12], tokens contiguous
  EXPECT_EQ(s.weight_alloc, 12 * 192);  // [12 (a multiple of 4) x 192]
  EXPECT_EQ(s.act_logical, 12);
  EXPECT_EQ(s.weight_logical, 12 * 192);
  // kv_a: N=576 is 4.5 blocks -> 5; K=7168 -> 56 blocks.
  s = gemm_scales(GemmKind::fp8_block128, 64, 576, 7168);
  EXPECT_EQ(s.act_alloc, 64 * 56);
  EXPECT_EQ(s.weight_alloc, 56 * 5);
  // K=640: 5 K blocks, the weight scales' column stride rounds up to 8.
  s = gemm_scales(GemmKind::fp8_block128, 6, 256, 640);
  EXPECT_EQ(gemm_run_tokens(GemmKind::fp8_block128, 6), 8);
  EXPECT_EQ(s.act_alloc, 8 * 5);
  EXPECT_EQ(s.act_logical, 6 * 5);
  EXPECT_EQ(s.weight_alloc, 8 * 2);
  EXPECT_EQ(s.weight_logical, 5 * 2);
}

TEST(GemmBaselines, MxScalesWorkedExamples) {
  // mxfp8, M=1, N=7168, K=2048: 64 scales per row; tiles of 128 rows x 4 scales.
  GemmScales s = gemm_scales(GemmKind::mxfp8, 1, 7168, 2048);
  EXPECT_EQ(s.dtype, DType::ue8m0);
  EXPECT_EQ(s.k_block, 32);
  EXPECT_EQ(gemm_run_tokens(GemmKind::mxfp8, 1), 1);
  EXPECT_EQ(s.act_alloc, 128 * 64);
  EXPECT_EQ(s.weight_alloc, 7168 * 64);
  EXPECT_EQ(s.act_logical, 64);
  EXPECT_EQ(s.weight_logical, 7168 * 64);
  // nvfp4, M=200, N=576, K=96: 6 scales per row -> 8; rows 256 and 640.
  s = gemm_scales(GemmKind::nvfp4, 200, 576, 96);
  EXPECT_EQ(s.dtype, DType::e4m3);
  EXPECT_EQ(s.k_block, 16);
  EXPECT_EQ(s.act_alloc, 256 * 8);
  EXPECT_EQ(s.weight_alloc, 640 * 8);
  EXPECT_EQ(s.act_logical, 200 * 6);
  EXPECT_EQ(s.weight_logical, 576 * 6);
}

TEST(GemmBaselines, ScaleSizesMatchLayoutsOnRandomShapes) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int kCases = 200;
  constexpr int64_t kMaxDim = 5000;
  for (int i = 0; i < kCases; ++i) {
    const int64_t M = rng.randint(1, kMaxDim), N = rng.randint(1, kMaxDim), K = rng.randint(1, kMaxDim);
    SCOPED_TRACE("M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K));
    // 128 blocks: activations [next_multiple(M, 4) x L]; weights [next_multiple(L, 4) x N blocks].
    const int64_t L = count_blocks(K, 128);
    GemmScales s = gemm_scales(GemmKind::fp8_block128, M, N, K);
    EXPECT_EQ(s.act_alloc, next_multiple(M, 4) * L);
    EXPECT_EQ(s.weight_alloc, next_multiple(L, 4) * count_blocks(N, 128));
    EXPECT_EQ(s.act_logical, M * L);
    EXPECT_EQ(s.weight_logical, L * count_blocks(N, 128));
    EXPECT_GE(s.act_alloc, s.act_logical);
    EXPECT_GE(s.weight_alloc, s.weight_logical);
    // MX tiles: rows padded to 128, scales per row padded to 4.
    for (GemmKind k : {GemmKind::mxfp8, GemmKind::nvfp4}) {
      const int64_t block = k == GemmKind::mxfp8 ? 32 : 16;
      const int64_t per_row = count_blocks(K, block);
      s = gemm_scales(k, M, N, K);
      EXPECT_EQ(s.act_alloc, next_multiple(M, 128) * next_multiple(per_row, 4));
      EXPECT_EQ(s.weight_alloc, next_multiple(N, 128) * next_multiple(per_row, 4));
      EXPECT_EQ(s.act_logical, M * per_row);
      EXPECT_EQ(s.weight_logical, N * per_row);
    }
  }
}

TEST(GemmBaselines, NoScalesForBf16OneEachForPerTensor) {
  const GemmScales b = gemm_scales(GemmKind::bf16, 16, 4096, 4096);
  EXPECT_EQ(b.act_alloc + b.weight_alloc + b.act_logical + b.weight_logical, 0);
  const GemmScales p = gemm_scales(GemmKind::fp8_per_tensor, 16, 4096, 4096);
  EXPECT_EQ(p.dtype, DType::f32);
  EXPECT_EQ(p.act_alloc, 1);
  EXPECT_EQ(p.weight_alloc, 1);
  EXPECT_EQ(p.k_block, 0);
}

TEST(GemmBaselines, ArchitectureSupport) {
  struct Case {
    GemmKind kind;
    int major, minor;
    bool ok;
  };
  const Case cases[] = {
      {GemmKind::bf16, 8, 0, true},          {GemmKind::bf16, 7, 5, false},
      {GemmKind::fp8_per_tensor, 8, 9, true}, {GemmKind::fp8_per_tensor, 8, 0, false},
      {GemmKind::fp8_per_tensor, 9, 0, true}, {GemmKind::fp8_block128, 9, 0, true},
      {GemmKind::fp8_block128, 8, 9, false},  {GemmKind::fp8_block128, 10, 0, false},
      {GemmKind::mxfp8, 9, 0, false},         {GemmKind::mxfp8, 10, 0, true},
      {GemmKind::nvfp4, 9, 0, false},         {GemmKind::nvfp4, 10, 0, true},
      {GemmKind::nvfp4, 12, 0, true},
  };
  for (const Case& c : cases) {
    const std::string why = gemm_arch_unsupported(c.kind, c.major, c.minor);
    EXPECT_EQ(why.empty(), c.ok) << gemm_kind_name(c.kind) << " on " << c.major << "." << c.minor << ": " << why;
    if (!c.ok) {
      EXPECT_NE(why.find(gemm_kind_name(c.kind)), std::string::npos) << why;
      EXPECT_NE(why.find(std::to_string(c.major) + "." + std::to_string(c.minor)), std::string::npos) << why;
    }
  }
  // The H200 answer names the Blackwell requirement.
  EXPECT_NE(gemm_arch_unsupported(GemmKind::nvfp4, 9, 0).find("10.0+"), std::string::npos);
}

TEST(GemmBaselines, ShapeSupport) {
  EXPECT_EQ(gemm_shape_unsupported(GemmKind::bf16, 3, 7, 5), "");
  EXPECT_EQ(gemm_shape_unsupported(GemmKind::fp8_block128, 1, 576, 7168), "");
  EXPECT_EQ(gemm_shape_unsupported(GemmKind::nvfp4, 1, 7168, 2048), "");
  // fp8 rows must be 16-byte aligned: K multiple of 16; fp4: K multiple of 32; bf16 D: N of 8.
  EXPECT_NE(gemm_shape_unsupported(GemmKind::fp8_per_tensor, 16, 4096, 72).find("K = 72"), std::string::npos);
  EXPECT_NE(gemm_shape_unsupported(GemmKind::nvfp4, 16, 4096, 48).find("K = 48"), std::string::npos);
  EXPECT_EQ(gemm_shape_unsupported(GemmKind::mxfp8, 16, 4096, 48), "");
  EXPECT_NE(gemm_shape_unsupported(GemmKind::mxfp8, 16, 4100, 64).find("N = 4100"), std::string::npos);
}

TEST(GemmBaselines, CostAddsLogicalScaleBytes) {
  const int64_t M = 64, N = 576, K = 7168;
  const double mnk = 2.0 * M * N * K;
  // fp8 block128: A and W one byte each, D bf16, f32 scales: M * 56 + 56 * 5.
  Cost c = gemm_cost(GemmKind::fp8_block128, M, N, K);
  EXPECT_EQ(c.unit, MathUnit::fp8_tensor);
  EXPECT_DOUBLE_EQ(c.flops, mnk);
  EXPECT_DOUBLE_EQ(c.bytes, double(M * K + N * K + 2 * M * N + 4 * (M * 56 + 56 * 5)));
  // nvfp4: half a byte per value, one byte per 16 values.
  c = gemm_cost(GemmKind::nvfp4, M, N, K);
  EXPECT_EQ(c.unit, MathUnit::fp4_tensor);
  EXPECT_DOUBLE_EQ(c.bytes, double(M * K / 2 + N * K / 2 + 2 * M * N + (M + N) * (K / 16)));
  // mxfp8: one byte per 32 values.
  c = gemm_cost(GemmKind::mxfp8, M, N, K);
  EXPECT_DOUBLE_EQ(c.bytes, double(M * K + N * K + 2 * M * N + (M + N) * (K / 32)));
  // bf16 has no scales: exactly cost_gemm.
  EXPECT_DOUBLE_EQ(gemm_cost(GemmKind::bf16, M, N, K).bytes, double(2 * M * K + 2 * N * K + 2 * M * N));
}

TEST(GemmBaselines, PrepareValidatesDimensionsFirst) {
  DeviceArena arena(1);
  std::function<Status()> launch;
  TEJAS_EXPECT_INVALID(prepare_gemm(GemmKind::fp8_block128, 0, 128, 128, arena, &launch), "M");
  TEJAS_EXPECT_INVALID(prepare_gemm(GemmKind::nvfp4, 4, -1, 128, arena, &launch), "N");
  TEJAS_EXPECT_INVALID(prepare_gemm(GemmKind::bf16, 4, 128, 0, arena, &launch), "K");
  EXPECT_FALSE(launch);
  EXPECT_EQ(arena.allocated(), 0u);
}

TEST(GemmBaselines, PrepareWithoutGpuIsUnsupported) {
  if (check::cuda_available()) GTEST_SKIP() << "a GPU is present";
  for (GemmKind k : kAllGemmKinds) {
    DeviceArena arena(1);
    std::function<Status()> launch;
    const Status s = prepare_gemm(k, 64, 7168, 2048, arena, &launch);
    EXPECT_EQ(s.code(), StatusCode::unsupported) << gemm_kind_name(k) << ": " << s.to_string();
    EXPECT_FALSE(launch) << gemm_kind_name(k);
    EXPECT_EQ(arena.allocated(), 0u) << gemm_kind_name(k);
  }
  // A shape cuBLASLt cannot take is unsupported before any device question.
  DeviceArena arena(1);
  std::function<Status()> launch;
  const Status s = prepare_gemm(GemmKind::nvfp4, 64, 7168, 48, arena, &launch);
  EXPECT_EQ(s.code(), StatusCode::unsupported);
  EXPECT_NE(s.message().find("K = 48"), std::string::npos) << s.message();
}

TEST(GemmBaselines, DeepSeekRowsAreBlockScaled) {
  std::vector<Workload> rows;
  add_gemm_rows(*find_model("deepseek-v3"), rows);
  // 3 token counts x 9 projections x 3 kinds.
  ASSERT_EQ(rows.size(), 3u * 9u * 3u);
  std::set<std::string> ops;
  for (const auto& w : rows) {
    ops.insert(w.op);
    EXPECT_EQ(w.suite, "gemm");
    EXPECT_EQ(w.model, "deepseek-v3");
    EXPECT_TRUE(w.prepare);
    EXPECT_GT(w.cost.flops, 0);
  }
  EXPECT_EQ(ops, (std::set<std::string>{"gemm_fp8_block128_cublaslt", "gemm_mxfp8_cublaslt", "gemm_nvfp4_cublaslt"}));
  // The decode q_b row: shape, padding note and floor bytes including the scales.
  const Workload* qb = nullptr;
  for (const auto& w : rows)
    if (w.op == "gemm_fp8_block128_cublaslt" && w.shape.rfind("q_b M=1 ", 0) == 0) qb = &w;
  ASSERT_NE(qb, nullptr);
  EXPECT_EQ(qb->shape, "q_b M=1 N=24576 K=1536 e4m3 1x128/128x128 f32 scales (cuBLASLt runs M=4)");
  EXPECT_DOUBLE_EQ(qb->cost.bytes, double(1536 + 24576 * 1536 + 2 * 24576 + 4 * (12 + 12 * 192)));
  // Every DeepSeek-V3 projection passes the alignment rules of every kind it is listed with.
  for (int64_t N : {1536, 24576, 576, 32768, 7168, 36864, 4096})
    for (int64_t K : {7168, 1536, 512, 16384, 18432, 2048})
      for (GemmKind k : {GemmKind::fp8_block128, GemmKind::mxfp8, GemmKind::nvfp4})
        EXPECT_EQ(gemm_shape_unsupported(k, 1, N, K), "") << N << " " << K;
}

TEST(GemmBaselines, DenseModelRowsKeepTheirNames) {
  std::vector<Workload> rows;
  add_gemm_rows(*find_model("llama-3.1-8b"), rows);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0].op, "gemm_bf16_cublaslt");
  EXPECT_EQ(rows[0].shape, "qkv M=1 N=6144 K=4096 bf16");
  EXPECT_EQ(rows[1].op, "gemm_fp8_cublaslt");
  EXPECT_EQ(rows[1].shape, "qkv M=1 N=6144 K=4096 e4m3 per-tensor");
  EXPECT_EQ(peak_gemm(true).op, "gemm_fp8_cublaslt");
  EXPECT_DOUBLE_EQ(peak_gemm(false).cost.flops, 2.0 * 8192.0 * 8192.0 * 8192.0);
}

}  // namespace
}  // namespace tejas::bench
