// make_quant_config / make_dequant_config (pure functions) and the exact-rounding helpers of
// src/ops/quant/quant_math.h against independent math (tests/ops/common/independent_fp.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "device/numeric/storage.h"
#include "ops/common/independent_fp.h"
#include "ops/quant/config.h"
#include "ops/quant/quant_math.h"
#include "support/seed.h"

using namespace tejas;
using namespace tejas::quant_kernel;
namespace fp = tejas::testfp;

namespace {

// Alignment of rows `row_bytes` apart from a 32-byte aligned start (what detail::access_alignment
// with cap 32 gives such views; tests/runtime/test_alignment.cpp): the largest power of two <= 32
// dividing it.
int row_align(int64_t row_bytes) {
  int a = 1;
  while (a < kSectorBytes && row_bytes % (2 * a) == 0) a *= 2;
  return a;
}

QuantProblem quant_problem(int x_bytes, int code_bits, int64_t rows, int64_t K, int64_t group) {
  QuantProblem p;
  p.x_bytes = x_bytes;
  p.code_bits = code_bits;
  p.rows = rows;
  p.K = K;
  p.group = group;
  p.x_align = row_align(K * x_bytes);  // contiguous rows
  p.q_align = row_align(K * code_bits / 8);
  return p;
}

}  // namespace

TEST(QuantConfig, VectorizedSplits) {
  struct Want {
    int x_bytes, code_bits;
    int64_t group;
    int vec, lanes, chunks;
  };
  const Want wants[] = {
      {2, 8, 128, 8, 4, 4},   {4, 8, 128, 4, 8, 4},   {2, 8, 32, 8, 4, 1},   {2, 4, 16, 8, 2, 1},
      {4, 4, 16, 4, 4, 1},    {2, 8, 192, 8, 8, 3},   {2, 8, 1024, 8, 32, 4}, {2, 8, 8, 8, 1, 1},
  };
  for (const Want& w : wants) {
    SCOPED_TRACE(testing::Message() << w.x_bytes << "-byte x, " << w.code_bits << "-bit codes, group " << w.group);
    const QuantConfig c = make_quant_config(quant_problem(w.x_bytes, w.code_bits, 100, w.group * 6, w.group));
    ASSERT_TRUE(c.vectorized) << c.to_string();
    EXPECT_EQ(c.vec, w.vec);
    EXPECT_EQ(c.lanes_per_group, w.lanes);
    EXPECT_EQ(c.chunks, w.chunks);
    EXPECT_EQ(c.steps, w.chunks == 1 ? kMaxChunks : 1);  // one chunk per lane: 4 tiles per warp step
    EXPECT_EQ(c.groups_per_warp, kWarp / w.lanes);
    const int64_t groups = 100 * 6;
    const int64_t per_block = c.groups_per_warp * c.steps * (c.threads / kWarp);
    EXPECT_EQ(c.grid, (groups + per_block - 1) / per_block);
  }
}

// Fewer lanes per group = more bytes in flight per lane, but only while every request still
// fills whole sectors: L x 16 bytes of x and L x (codes of a chunk) bytes of q >= 32.
// Version 7 (with_clean_table): nvfp4 from 16-bit x with fast_convert, the tune on, a known
// resident CTA count, and at least kCleanMinSteps block steps per resident CTA: the persistent
// grid and the table's shared memory; any condition missing leaves the config as it was.
TEST(QuantConfig, CleanTableOnlyForLongNvfp4Runs) {
  const int64_t resident = 528;
  const auto nvfp4 = [](int x_bytes, int64_t rows) {
    QuantProblem p = quant_problem(x_bytes, 4, rows, 7168, 16);
    p.nvfp4_scales = true;
    return p;
  };
  // DeepSeek-V3's K: 448 groups per row, 512 per block step (16 groups x 4 tiles x 8 warps).
  const QuantProblem big = nvfp4(2, 16384);
  const QuantConfig base = make_quant_config(big);
  ASSERT_TRUE(base.vectorized && base.fast_convert);
  EXPECT_EQ(base.grid, 16384 * 448 / 512);
  const QuantConfig c = with_clean_table(big, base, resident);
  EXPECT_TRUE(c.clean_table);
  EXPECT_EQ(c.grid, resident);
  EXPECT_EQ(smem_bytes(c), kCleanTableBytes);
  EXPECT_NE(c.to_string().find("clean table"), std::string::npos);
  // The threshold: kCleanMinSteps x resident block steps.
  const int64_t rows_at = kCleanMinSteps * resident * 512 / 448 + 1;
  EXPECT_TRUE(with_clean_table(nvfp4(2, rows_at), make_quant_config(nvfp4(2, rows_at)), resident).clean_table);
  EXPECT_FALSE(with_clean_table(nvfp4(2, rows_at - 2), make_quant_config(nvfp4(2, rows_at - 2)), resident).clean_table);
  const auto unchanged = [&](const QuantProblem& p, int64_t r, const char* why) {
    const QuantConfig before = make_quant_config(p), after = with_clean_table(p, before, r);
    EXPECT_FALSE(after.clean_table) << why;
    EXPECT_EQ(after.grid, before.grid) << why;
    EXPECT_EQ(smem_bytes(after), 0) << why;
  };
  unchanged(big, 0, "resident CTAs unknown");
  unchanged(nvfp4(4, 16384), resident, "f32 x");
  unchanged(nvfp4(2, 1), resident, "one row");
  QuantProblem p = big;
  p.clean_table = false;
  unchanged(p, resident, "quant.clean_table=0");
  p = big;
  p.fast_convert = false;
  unchanged(p, resident, "quant.fast_convert=0");
  p = big;
  p.nvfp4_scales = false;
  unchanged(p, resident, "mxfp4 (ue8m0 scales)");
  unchanged(quant_problem(2, 8, 16384, 7168, 128), resident, "fp8 groups");
}

TEST(QuantConfig, MostChunksPerLaneThatKeepSectorsFull) {
  // fp8 group 128, bf16: 4 lanes x 4 chunks (fewer lanes would need more than 4 chunks).
  QuantConfig c = make_quant_config(quant_problem(2, 8, 10, 768, 128));
  EXPECT_EQ(c.lanes_per_group, 4);
  EXPECT_EQ(c.chunks, 4);
  // mxfp4 / mxfp8 group 32: 2 lanes would leave 8- / 16-byte runs: the whole group per warp
  // segment (4 lanes, 1 chunk) instead.
  c = make_quant_config(quant_problem(2, 4, 10, 768, 32));
  EXPECT_EQ(c.lanes_per_group, 4);
  c = make_quant_config(quant_problem(2, 8, 10, 768, 32));
  EXPECT_EQ(c.lanes_per_group, 4);
  // Group 64 fp8 (nvec 8): 2 lanes x 4 chunks would store 16-byte runs; 4 lanes x 2 chunks.
  c = make_quant_config(quant_problem(2, 8, 10, 768, 64));
  EXPECT_EQ(c.lanes_per_group, 4);
  EXPECT_EQ(c.chunks, 2);
}

// Rows only 16-byte aligned (e.g. a view starting 16 bytes into a buffer): groups no longer start
// on sector bounds, so a multi-chunk split would split sectors on every request: one chunk per
// lane (the whole group per warp segment) instead.
TEST(QuantConfig, RowsOffSectorBoundsKeepOneChunkPerLane) {
  QuantProblem p = quant_problem(2, 8, 10, 768, 128);
  p.x_align = 16;
  EXPECT_EQ(make_quant_config(p).lanes_per_group, 16);
  p = quant_problem(2, 8, 10, 768, 128);
  p.q_align = 16;
  EXPECT_EQ(make_quant_config(p).lanes_per_group, 16);
  p = quant_problem(2, 8, 10, 768 + 8, 128);  // rows 1552 bytes apart: 16-byte aligned only
  EXPECT_EQ(p.x_align, 16);
  EXPECT_EQ(make_quant_config(p).lanes_per_group, 16);
}

// TEJAS_TUNE quant.max_chunks caps chunks per lane (1: the widest split, one chunk per lane).
TEST(QuantConfig, MaxChunksCapsTheSplit) {
  for (int m = 1; m <= kMaxChunks; ++m) {
    QuantProblem p = quant_problem(2, 8, 10, 768, 128);
    p.max_chunks = m;
    const QuantConfig c = make_quant_config(p);
    EXPECT_LE(c.chunks, m);
    EXPECT_EQ(c.lanes_per_group * c.chunks, 16);  // 16 chunks of 8 bf16 per group of 128
  }
  QuantProblem p = quant_problem(2, 8, 10, 768, 128);
  p.max_chunks = 1;
  EXPECT_EQ(make_quant_config(p).lanes_per_group, 16);
  p = quant_problem(2, 8, 10, 6 * 192, 192);  // 24 chunks: 8 lanes x 3 even when capped at 1
  p.max_chunks = 1;
  EXPECT_EQ(make_quant_config(p).chunks, 3);
}

// With one chunk per lane (MX 32, NVFP4 16, small fp8 groups) a warp step loads up to
// kMaxChunks tiles, so a lane keeps 4 x 16 bytes in flight as the 4-chunk splits do; TEJAS_TUNE
// quant.max_steps caps it (1: one tile per step). Multi-chunk splits never take steps.
TEST(QuantConfig, OneChunkSplitsTakeTilesPerStep) {
  for (int m = 1; m <= kMaxChunks; ++m) {
    SCOPED_TRACE(testing::Message() << "max_steps " << m);
    QuantProblem p = quant_problem(2, 4, 1000, 2048, 16);  // nvfp4: 2 lanes x 1 chunk, 16 groups a tile
    p.max_steps = m;
    QuantConfig c = make_quant_config(p);
    EXPECT_EQ(c.chunks, 1);
    EXPECT_EQ(c.steps, m);
    EXPECT_EQ(c.grid, (1000 * 128 + 16 * m * 8 - 1) / (16 * m * 8)) << c.to_string();
    p = quant_problem(2, 8, 1000, 2048, 128);  // fp8 group 128: 4 lanes x 4 chunks, no steps
    p.max_steps = m;
    c = make_quant_config(p);
    EXPECT_EQ(c.chunks, 4);
    EXPECT_EQ(c.steps, 1);
    p.max_chunks = 1;  // the widest split (16 lanes x 1 chunk) takes the steps again
    c = make_quant_config(p);
    EXPECT_EQ(c.chunks, 1);
    EXPECT_EQ(c.steps, m);
  }
  QuantProblem p = quant_problem(2, 4, 10, 64, 16);
  p.max_steps = 0;  // out of range (tune parsing never gives it): clamped, not trusted
  EXPECT_EQ(make_quant_config(p).steps, 1);
  p.max_steps = 9;
  EXPECT_EQ(make_quant_config(p).steps, kMaxChunks);
}

TEST(QuantConfig, GenericWhenTheGroupDoesNotSplitOrRowsAreMisaligned) {
  EXPECT_FALSE(make_quant_config(quant_problem(2, 8, 4, 12, 3)).vectorized);     // group 3
  EXPECT_FALSE(make_quant_config(quant_problem(2, 8, 4, 2048, 2048)).vectorized);  // 8 chunks > kMaxChunks
  QuantProblem p = quant_problem(2, 8, 4, 256, 128);
  p.x_align = 2;  // x starts 2 bytes off
  EXPECT_FALSE(make_quant_config(p).vectorized);
  p = quant_problem(2, 8, 4, 256, 128);
  p.q_align = 4;  // q rows 260 bytes apart: not 8-byte aligned
  EXPECT_FALSE(make_quant_config(p).vectorized);
  const QuantConfig g = make_quant_config(quant_problem(2, 4, 4, 64, 16));
  EXPECT_TRUE(g.vectorized);
  QuantProblem e2 = quant_problem(2, 4, 4, 64, 16);
  e2.x_align = 2;  // x rows 130 bytes apart
  const QuantConfig ge = make_quant_config(e2);
  EXPECT_FALSE(ge.vectorized);
  EXPECT_EQ(ge.elems_per_lane, 2);  // one code byte per lane
  EXPECT_EQ(ge.grid, 2);            // 16 groups, a warp each, 8 warps per block
}

// QuantProblem::linear (rows end to end in x, q and the scales) reaches the vectorized kernels
// only: the generic one walks groups a warp each, by row.
TEST(QuantConfig, LinearWalkForTheVectorizedKernelsOnly) {
  for (bool linear : {false, true}) {
    QuantProblem p = quant_problem(2, 8, 4, 256, 128);
    p.linear = linear;
    const QuantConfig c = make_quant_config(p);
    ASSERT_TRUE(c.vectorized);
    EXPECT_EQ(c.linear, linear);
    EXPECT_EQ(c.to_string().find("linear walk") != std::string::npos, linear) << c.to_string();
    p.x_align = 2;  // x starts 2 bytes off: generic
    const QuantConfig g = make_quant_config(p);
    ASSERT_FALSE(g.vectorized);
    EXPECT_FALSE(g.linear);
  }
}

// DequantProblem::linear reaches the vectorized kernels where group / vec is a power of two (the
// scale's index a shift of the flat vector index): MX 32, nvfp4 16 and fp8 128 are; 96 is not.
TEST(DequantConfig, LinearWalkWherePowerOfTwoGroupsOnly) {
  for (int64_t group : {16, 32, 128, 96}) {
    DequantProblem p;
    p.out_bytes = 2;
    p.code_bits = 8;
    p.rows = 4;
    p.K = 384;
    p.group = group;
    p.linear = true;
    const DequantConfig c = make_dequant_config(p);
    ASSERT_TRUE(c.vectorized) << group;
    EXPECT_EQ(c.linear, group != 96) << group;
    EXPECT_EQ(c.to_string().find("linear walk") != std::string::npos, c.linear) << c.to_string();
    p.linear = false;
    EXPECT_FALSE(make_dequant_config(p).linear);
    p.linear = true;
    p.out_align = 2;  // out rows off 16 bytes: generic
    EXPECT_FALSE(make_dequant_config(p).linear);
  }
}

TEST(QuantConfig, GridCapsAndEmpty) {
  EXPECT_EQ(make_quant_config(quant_problem(2, 8, 0, 128, 128)).grid, 1);
  EXPECT_EQ(make_quant_config(quant_problem(2, 8, int64_t{1} << 30, 128, 128)).grid, kMaxGrid);
  // TEJAS_TUNE quant.max_grid caps every path's grid (warps loop over the rest); 0 = no cap.
  for (int cap : {1, 3, 999}) {
    QuantProblem p = quant_problem(2, 8, int64_t{1} << 20, 128, 128);  // vectorized
    p.max_grid = cap;
    EXPECT_EQ(make_quant_config(p).grid, cap);
    p = quant_problem(2, 8, int64_t{1} << 20, 12, 3);  // generic
    p.max_grid = cap;
    EXPECT_EQ(make_quant_config(p).grid, cap);
    DequantProblem d;
    d.rows = int64_t{1} << 20;
    d.max_grid = cap;
    EXPECT_EQ(make_dequant_config(d).grid, cap);
  }
  QuantProblem p = quant_problem(2, 8, 10, 128, 128);
  p.max_grid = 999;  // above what the problem needs: no effect
  EXPECT_EQ(make_quant_config(p).grid, 1);
}

TEST(DequantConfig, VectorWidthAndFallback) {
  DequantProblem p;
  p.out_bytes = 2;
  p.rows = 3;
  p.K = 256;
  p.group = 128;
  p.out_align = row_align(512);
  p.q_align = row_align(256);
  DequantConfig c = make_dequant_config(p);
  EXPECT_TRUE(c.vectorized);
  EXPECT_EQ(c.vec, 8);
  EXPECT_EQ(c.grid, 1);  // 96 vectors
  p.group = 4;           // groups narrower than a vector
  c = make_dequant_config(p);
  EXPECT_FALSE(c.vectorized);
  EXPECT_EQ(c.vec, 1);
  EXPECT_EQ(c.grid, 3);  // 768 codes / 256 threads
  p.group = 32;
  p.code_bits = 4;
  p.q_align = 1;  // codes start at an odd address: not 4-byte aligned
  c = make_dequant_config(p);
  EXPECT_FALSE(c.vectorized);
  EXPECT_EQ(c.vec, 2);
  // Rows of more than 2^31 - 1 vectors: the vectorized kernel's 32-bit group division (group_div)
  // would not hold a vector's index, so the generic kernel runs them.
  p.code_bits = 8;
  p.q_align = row_align(256);
  p.rows = 1;
  p.group = 128;
  p.K = kMaxDequantRowVecs * 8;
  EXPECT_TRUE(make_dequant_config(p).vectorized);
  p.K = (kMaxDequantRowVecs + 1) * 8;
  EXPECT_FALSE(make_dequant_config(p).vectorized);
}

// TEJAS_TUNE quant.tie_bias (version 6): vectorized quant with f32 scales (fp8) and 16-bit x,
// under fast_convert; nothing else.
TEST(QuantConfig, TieBiasWhereItApplies) {
  for (int x_bytes : {2, 4}) {
    for (int code_bits : {4, 8}) {
      for (bool f32_scales : {true, false}) {
        for (bool fast : {true, false}) {
          for (bool allow : {true, false}) {
            QuantProblem p = quant_problem(x_bytes, code_bits, 4, 1024, 128);
            p.fast_convert = fast;
            p.tie_bias = allow;
            p.f32_scales = f32_scales && code_bits == 8;
            const QuantConfig c = make_quant_config(p);
            EXPECT_EQ(c.tie_bias, x_bytes == 2 && p.f32_scales && fast && allow)
                << x_bytes << " " << code_bits << " " << f32_scales << " " << fast << " " << allow;
            EXPECT_EQ(c.to_string().find("tie bias") != std::string::npos, c.tie_bias);
            p.x_align = 4;  // generic path: never
            EXPECT_FALSE(make_quant_config(p).tie_bias);
          }
        }
      }
    }
  }
}

// TEJAS_TUNE quant.fast_convert: quant (version 5): vectorized, e2m1 codes (any x, any rule) or
// the fp8_f32 rule (its near_key filter); dequant: vectorized 16-bit out from e2m1 codes with MX
// (ue8m0) scales, nvfp4 to bf16 (the packed pairs), or e4m3 codes with any scale (version 3 of
// the fp8 path); nothing else.
TEST(QuantConfig, FastConvertWhereItApplies) {
  for (int x_bytes : {2, 4}) {
    for (int code_bits : {4, 8}) {
      for (bool f32_scales : {true, false}) {
        for (bool allow : {true, false}) {
          QuantProblem p = quant_problem(x_bytes, code_bits, 4, 1024, 32);
          p.fast_convert = allow;
          p.f32_scales = f32_scales && code_bits == 8;  // e2m1 has no f32-scale rule
          const QuantConfig c = make_quant_config(p);
          EXPECT_TRUE(c.vectorized);
          EXPECT_EQ(c.fast_convert, (code_bits == 4 || p.f32_scales) && allow)
              << x_bytes << " " << code_bits << " " << f32_scales << " " << allow;
          p.x_align = 4;  // generic path: never
          EXPECT_FALSE(make_quant_config(p).fast_convert);
        }
      }
      for (bool allow : {true, false}) {
        for (bool mx : {true, false}) {
          for (bool bf16 : {true, false}) {
            DequantProblem d;
            d.out_bytes = x_bytes;
            d.code_bits = code_bits;
            d.rows = 4;
            d.K = 1024;
            d.group = 32;
            d.mx_scales = mx;
            d.fast_convert = allow;
            const bool bf16_out = bf16 && x_bytes == 2;
            const std::string what = std::to_string(x_bytes) + " " + std::to_string(code_bits) + " mx " +
                                     std::to_string(mx) + " bf16 " + std::to_string(bf16) + " " + std::to_string(allow);
            // e2m1 with MX scales; e4m3 with any scale; 16-bit out only.
            const bool want = x_bytes == 2 && allow && (code_bits == 4 ? mx : true);
            EXPECT_EQ(make_dequant_config(d).fast_convert, want) << what;
            d.mx_scales = false;
            d.nvfp4_bf16 = code_bits == 4 && bf16_out;  // the planner's rule: e4m3 scales and bf16 out
            EXPECT_EQ(make_dequant_config(d).fast_convert, x_bytes == 2 && allow && (code_bits == 8 || bf16_out))
                << what;
            d.q_align = 1;
            EXPECT_FALSE(make_dequant_config(d).fast_convert) << what;
          }
        }
      }
    }
  }
}

// Vectorized dequant: `steps` vectors per thread (loads first), the grid shrinking to match;
// generic paths stay one element per step. TEJAS_TUNE dequant.steps sets p.steps (clamped 1..2).
TEST(DequantConfig, StepsPerThreadShrinkTheGrid) {
  DequantProblem p;
  p.out_bytes = 2;
  p.rows = 64;
  p.K = 4096;  // 32768 vectors of 8
  p.group = 128;
  for (int steps : {1, 2}) {
    p.steps = steps;
    const DequantConfig c = make_dequant_config(p);
    EXPECT_EQ(c.steps, steps);
    EXPECT_EQ(c.grid, 32768 / (256 * steps));
  }
  p.steps = 9;
  EXPECT_EQ(make_dequant_config(p).steps, kMaxDequantSteps);
  p.steps = 2;
  p.rows = 1;
  p.K = 8 * 300;  // 300 vectors: 150 threads -> one block, part of it idle
  EXPECT_EQ(make_dequant_config(p).grid, 1);
  p.group = 4;  // generic
  EXPECT_EQ(make_dequant_config(p).steps, 1);
}

// ---- exact rounding helpers ----------------------------------------------------------------------

namespace {

template <CodeFormat F>
DType dtype_of() { return F == CodeFormat::e4m3 ? DType::e4m3 : F == CodeFormat::e5m2 ? DType::e5m2 : DType::e2m1; }

// One past the largest pair (c, c + 1) of finite codes swept: e4m3 below 0x7E (448), e5m2 up to
// 0x7B (57344; 0x7C is Inf), e2m1 up to 0x7 (6).
template <CodeFormat F>
uint64_t sweep_end() { return F == CodeFormat::e4m3 ? 0x7Eu : F == CodeFormat::e5m2 ? 0x7Cu : 0x7u; }

// Independent: nearest code of x / (a * b) computed in long double (exact for these inputs).
template <CodeFormat F>
uint64_t want_code(float x, float a, float b) {
  return fp::nearest_code(dtype_of<F>(), static_cast<long double>(x) / (static_cast<long double>(a) * b));
}

template <CodeFormat F>
void sweep_near_midpoints(check::Rng& rng, float a, float b) {
  const DType dt = dtype_of<F>();
  const long double D = static_cast<long double>(a) * b;
  const float inv = 1.0f / (a * b);
  int64_t bad = 0;
  for (uint64_t c = 0; c + 1 < sweep_end<F>(); ++c) {
    const long double mid = (fp::decode(dt, c) + fp::decode(dt, c + 1)) / 2;
    for (int sign : {1, -1}) {
      float x = static_cast<float>(sign * mid * D);
      for (int j = 0; j < 6; ++j) {
        const uint8_t got = quantize_exact<F>(x, inv, a, b);
        if (got != want_code<F>(x, a, b) && bad++ < 5)
          ADD_FAILURE() << "x " << x << " D " << static_cast<double>(D) << " got 0x" << std::hex << int{got}
                        << " want 0x" << want_code<F>(x, a, b);
        x = std::nextafter(x, rng.randint(0, 1) ? 1e30f : -1e30f);
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

}  // namespace

TEST(QuantMath, QuantizeExactNextToEveryMidpoint) {
  TEJAS_SEEDED_TEST_RNG();
  for (int trial = 0; trial < 64; ++trial) {
    const float s = static_cast<float>(rng.uniform(1.0, 2.0) * std::ldexp(1.0, static_cast<int>(rng.randint(-30, 30))));
    sweep_near_midpoints<CodeFormat::e4m3>(rng, 1.0f, s);  // fp8 f32 scale: divisor s
    sweep_near_midpoints<CodeFormat::e5m2>(rng, 1.0f, s);  // rope's e5m2 KV cache: divisor k/v scale
    const float bs = static_cast<float>(fp::decode(DType::e4m3, static_cast<uint64_t>(rng.randint(1, 0x7E))));
    sweep_near_midpoints<CodeFormat::e2m1>(rng, bs, s);    // nvfp4: block_scale * tensor_scale
  }
}

// num::near_key, the quant kernels' wider chunk filter (nvfp4, version 5): every t within 8 f32
// ulps of an e2m1 / e4m3 midpoint passes, and every t near_midpoint accepts (next to F's
// midpoints scaled by 2^-20 .. 2^20, and among random values); zero does not; and on random values in F's
// range it passes about 17 in 2^21 (e2m1) / 2^19 (e4m3) of them, not many more (the branch it
// guards must stay rare).
template <CodeFormat F>
void near_key_covers_near_midpoint(check::Rng& rng) {
  const DType dt = dtype_of<F>();
  int64_t missed = 0, passed_random = 0;
  for (uint64_t c = 0; c + 1 < sweep_end<F>(); ++c) {
    const long double mid = (fp::decode(dt, c) + fp::decode(dt, c + 1)) / 2;
    for (int e = -20; e <= 20; ++e) {  // near_midpoint also looks at the binade (below F's normals)
      float t = static_cast<float>(std::ldexp(static_cast<double>(mid), e));
      for (int j = 0; j < 8; ++j) t = std::nextafter(t, 0.0f);
      for (int j = 0; j <= 16; ++j, t = std::nextafter(t, 1e30f)) {
        for (float v : {t, -t}) {
          const bool key = num::near_key<F>(v) <= num::kNearKeyMax<F>;
          if (e == 0 && !key && missed++ < 5) ADD_FAILURE() << "missed " << v << " (F's midpoint " << static_cast<double>(mid) << ")";
          if (num::near_midpoint<F>(v) && !key && missed++ < 5) ADD_FAILURE() << "missed " << v;
        }
      }
    }
  }
  constexpr int kSamples = 1 << 20;
  for (int i = 0; i < kSamples; ++i) {
    const float v = static_cast<float>(rng.uniform(-1.0, 1.0) * CodeTraits<F>::kMax);
    const bool key = num::near_key<F>(v) <= num::kNearKeyMax<F>;
    if (num::near_midpoint<F>(v) && !key && missed++ < 5) ADD_FAILURE() << "missed " << v;
    passed_random += key;
  }
  EXPECT_EQ(missed, 0);
  EXPECT_FALSE(num::near_key<F>(0.0f) <= num::kNearKeyMax<F>);
  EXPECT_FALSE(num::near_key<F>(-0.0f) <= num::kNearKeyMax<F>);
  const double expected = kSamples * 17.0 / std::ldexp(1.0, 23 - CodeTraits<F>::kMantissaBits - 1);
  EXPECT_LT(passed_random, 4 * expected + 16) << "the filter passes too many values";
}

TEST(QuantMath, NearKeyCoversNearMidpoint) {
  TEJAS_SEEDED_TEST_RNG();
  near_key_covers_near_midpoint<CodeFormat::e2m1>(rng);
  near_key_covers_near_midpoint<CodeFormat::e4m3>(rng);
  near_key_covers_near_midpoint<CodeFormat::e5m2>(rng);  // rope's and kv_cache_write's e5m2 caches
}

// Round-to-nearest-even of a normal value to `mbits` mantissa bits (min exponent `emin`), in
// long double: the independent model of one correct rounding to bf16 (7, -126) / f16 (10, -14).
long double round_to_bits(long double v, int mbits, int emin) {
  const int e = std::max(fp::floor_log2(std::fabs(v)), emin);
  const long double ulp = fp::pow2(e - mbits);
  return std::nearbyint(v / ulp) * ulp;  // default rounding mode: ties to even
}

TEST(QuantMath, MulRoundOddMakesTheSecondRoundingCorrect) {
  TEJAS_SEEDED_TEST_RNG();
  int64_t bad = 0;
  for (int i = 0; i < 20000; ++i) {
    const float a = static_cast<float>(fp::decode(DType::e4m3, static_cast<uint64_t>(rng.randint(1, 0x7E))));
    const float b = static_cast<float>(rng.uniform(0.5, 1.0) * std::ldexp(1.0, static_cast<int>(rng.randint(-20, 20))));
    const long double exact = static_cast<long double>(a) * b;
    const float odd = mul_round_odd(a, b);
    for (DType t : {DType::bf16, DType::f16}) {
      const bool bf = t == DType::bf16;
      const long double got = bf ? num::bf16_to_f32(num::f32_to_bf16(odd)) : num::f16_to_f32(num::f32_to_f16(odd));
      const long double want = bf ? round_to_bits(exact, 7, -126) : round_to_bits(exact, 10, -14);
      if (got != want && !(!bf && std::fabs(exact) > 65504) && bad++ < 5)
        ADD_FAILURE() << a << " * " << b << " -> " << dtype_name(t) << " got " << static_cast<double>(got)
                      << " want " << static_cast<double>(want);
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST(QuantMath, Ue8m0CeilAndMxExponent) {
  // v / 448 exactly a power of two, just above one, and values whose RN quotient lands on one.
  EXPECT_EQ(ue8m0_ceil_scale(448.0f), 127);
  EXPECT_EQ(ue8m0_ceil_scale(std::nextafter(448.0f, 1e30f)), 128);
  EXPECT_EQ(ue8m0_ceil_scale(std::nextafter(448.0f * 1024, 1e30f)), 138);
  EXPECT_EQ(ue8m0_ceil_scale(std::nextafter(448.0f, 0.0f)), 127);
  EXPECT_EQ(ue8m0_ceil_scale(static_cast<float>(1e-10)), 127 - 42);
  EXPECT_EQ(mx_scale_exponent<CodeFormat::e4m3>(448.0f), 0);
  EXPECT_EQ(mx_scale_exponent<CodeFormat::e4m3>(511.0f), 0);
  EXPECT_EQ(mx_scale_exponent<CodeFormat::e4m3>(512.0f), 1);
  EXPECT_EQ(mx_scale_exponent<CodeFormat::e2m1>(6.0f), 0);
  EXPECT_EQ(mx_scale_exponent<CodeFormat::e2m1>(0.0f), -127);
  EXPECT_EQ(mx_scale_exponent<CodeFormat::e2m1>(std::ldexp(1.0f, -126)), -127);  // -128 clamped
  EXPECT_EQ(mx_scale_exponent<CodeFormat::e2m1>(std::ldexp(1.0f, -124)), -126);
  EXPECT_EQ(mx_scale_exponent<CodeFormat::e4m3>(3.4e38f), 119);
}

namespace {

// Version 6's tie bias (quant_math.h: tie_bias, tie_biased_quotient), the fp8 f32-scale rule for
// 16-bit x without a per-value midpoint test, against the nearest e4m3 code of x / s in long
// double (ties to even, saturating): amax over every significand of the format (bf16: 2^7,
// f16: 2^10, of which every `amax_stride`-th) in each of `amax_exps`' binades, and x over every
// significand (every `x_stride`-th) at each binade from amax's down to 21 below it (q down to
// 2^-12: below e4m3's smallest step, 2^-9), both signs, only x <= amax. Both kinds of group
// occur (s = amax / 448 exactly: amax's significand a multiple of 7), and every e4m3 midpoint
// is hit exactly by some q0 = 448 x / amax. Returns the exact groups seen.
template <class S>
int64_t tie_bias_sweep(int mant_bits, std::initializer_list<int> amax_exps, int amax_stride, int x_stride) {
  constexpr float kE4m3Max = CodeTraits<CodeFormat::e4m3>::kMax;
  const int top = 1 << mant_bits;
  int64_t bad = 0, exact_groups = 0;
  for (int ea : amax_exps) {
    for (int am = top; am < 2 * top; am += amax_stride) {
      const float amax = std::ldexp(static_cast<float>(am), ea - mant_bits);
      EXPECT_EQ(S::to_f32(S::from_f32(amax)), amax) << "amax is a value of the format";
      const float s = amax / kE4m3Max, inv = 1.0f / s;
      const TieBias tb = tie_bias(amax, s, inv);
      exact_groups += tb.k != 0.0f;
      for (int d = 0; d <= 21; ++d) {
        for (int xm = top; xm < 2 * top; xm += x_stride) {
          const float v = S::to_f32(S::from_f32(std::ldexp(static_cast<float>(xm), ea - d - mant_bits)));
          if (v > amax) continue;
          for (float x : {v, -v}) {
            const uint64_t want = fp::nearest_code(DType::e4m3, static_cast<long double>(x) / s);
            const uint8_t got = CodeTraits<CodeFormat::e4m3>::encode(tie_biased_quotient(x, tb));
            if (got != want && bad++ < 5)
              ADD_FAILURE() << "amax " << amax << " x " << x << " s " << s << (tb.k != 0.0f ? " (exact)" : "")
                            << ": got 0x" << std::hex << int{got} << " want 0x" << want;
          }
        }
      }
    }
  }
  EXPECT_EQ(bad, 0);
  return exact_groups;
}

}  // namespace

// Below the amax clamp the scale is fixed (kFp8MinScale); every bf16 value there, against every
// bias direction an amax below the clamp gives, rounds as x / s does.
TEST(QuantMath, TieBiasBelowTheClamp) {
  const float s = static_cast<float>(kFp8MinAmax / 448.0), inv = 1.0f / s;
  bool up = false, down = false, exact = false;
  for (uint32_t b = 0; b < 0x7F80u; ++b) {  // positive bf16 values, ascending
    const float amax = num::Bf16::to_f32(static_cast<uint16_t>(b));
    if (!(static_cast<double>(amax) < kFp8MinAmax)) break;
    const TieBias tb = tie_bias(amax, s, inv);
    exact |= tb.k != 0.0f;
    (tb.inv > inv ? up : down) = true;
  }
  EXPECT_FALSE(exact) << "no s exact below the clamp";
  int64_t bad = 0, n = 0;
  for (bool dir_up : {true, false}) {
    // Both directions, whichever occur: a stand-in amax gives each (only the sign of amax - 448 s
    // matters).
    const TieBias tb = tie_bias(dir_up ? std::nextafter(448.0f * s, 1.0f) * 1.0000005f : 0.0f, s, inv);
    for (uint32_t b = 0; b < 0x7F80u; ++b) {
      const float v = num::Bf16::to_f32(static_cast<uint16_t>(b));
      if (!(static_cast<double>(v) < kFp8MinAmax)) break;
      for (float x : {v, -v}) {
        ++n;
        const uint64_t want = fp::nearest_code(DType::e4m3, static_cast<long double>(x) / s);
        const uint8_t got = CodeTraits<CodeFormat::e4m3>::encode(tie_biased_quotient(x, tb));
        if (got != want && bad++ < 5) ADD_FAILURE() << "x " << x << " got 0x" << std::hex << int{got} << " want 0x" << want;
      }
    }
  }
  EXPECT_TRUE(down) << "amax below the clamp: amax - 448 s < 0";
  EXPECT_FALSE(up) << "no bf16 value between 448 s and the clamp";
  EXPECT_GT(n, 20000);
  EXPECT_EQ(bad, 0);
}

TEST(QuantMath, TieBiasRoundsAsTheExactQuotient) {
  // bf16: every pair of significands, amax from just above the clamp (1e-10) to the format's top.
  const int64_t bf16_exact = tie_bias_sweep<num::Bf16>(7, {-33, -1, 0, 9, 60, 127}, 1, 1);
  EXPECT_GT(bf16_exact, 0) << "some s exact";
  EXPECT_LT(bf16_exact, 6 * 128) << "some s inexact";
  // f16: every amax significand, x's every 5th (an odd stride: each residue class mod 7 among
  // them), amax up to the format's top.
  const int64_t f16_exact = tie_bias_sweep<num::F16>(10, {-2, 0, 15}, 1, 5);
  EXPECT_GT(f16_exact, 0);
  // Zeros keep their sign (quant.h: -0 -> 0x80), in both kinds of group.
  for (float amax : {7.0f, 3.0f}) {
    const float s = amax / 448.0f;
    const TieBias tb = tie_bias(amax, s, 1.0f / s);
    EXPECT_EQ(CodeTraits<CodeFormat::e4m3>::encode(tie_biased_quotient(-0.0f, tb)), 0x80) << "amax " << amax;
    EXPECT_EQ(CodeTraits<CodeFormat::e4m3>::encode(tie_biased_quotient(0.0f, tb)), 0x00) << "amax " << amax;
  }
}

// dequant_vec_kernel's row walk (walk_advance): (r, v) moved on by (by_rows, by_vecs) equals the
// flat index r x row_vecs + v moved on by by_rows x row_vecs + by_vecs, split again, for every
// small row length and every position, and at the largest row the config allows
// (kMaxDequantRowVecs = 2^31 - 1), where v + by_vecs passes 2^31: as an int32_t sum it overflowed.
TEST(QuantMath, WalkAdvanceMatchesTheFlatIndex) {
  TEJAS_SEEDED_TEST_RNG();
  const auto check = [](int64_t row_vecs, int64_t r0, int64_t v0, int64_t by_rows, int64_t by_vecs) {
    int64_t r = r0;
    int32_t v = static_cast<int32_t>(v0);
    walk_advance(r, v, by_rows, static_cast<int32_t>(by_vecs), static_cast<int32_t>(row_vecs));
    const int64_t flat = (r0 + by_rows) * row_vecs + v0 + by_vecs;
    EXPECT_EQ(r, flat / row_vecs) << "row_vecs " << row_vecs << " v " << v0 << " by " << by_rows << "/" << by_vecs;
    EXPECT_EQ(v, flat % row_vecs) << "row_vecs " << row_vecs << " v " << v0 << " by " << by_rows << "/" << by_vecs;
  };
  for (int64_t n = 1; n <= 40; ++n)
    for (int64_t v = 0; v < n; ++v)
      for (int64_t by = 0; by < n; ++by) check(n, 3, v, 2, by);
  const int64_t big = kMaxDequantRowVecs;
  check(big, 0, big - 1, 0, big - 1);  // the largest sum: 2^32 - 4
  check(big, 7, big - 1, 1, 1);
  check(big, 7, big / 2, 0, big / 2 + 1);
  for (int i = 0; i < 10000; ++i) {
    const int64_t n = big - rng.randint(0, 1 << 20);
    check(n, rng.randint(0, 1000), rng.randint(0, 1 << 30) * 2 % n, rng.randint(0, 3), (n - 1) - rng.randint(0, 1 << 30));
  }
}
