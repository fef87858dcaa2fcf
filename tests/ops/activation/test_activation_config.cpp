// The activation kernels' config functions: access width from alignment, lanes per row, grid.
#include <gtest/gtest.h>

#include <algorithm>

#include "ops/activation/config.h"

using namespace tejas;
using namespace tejas::act;

namespace {

// Alignment of rows `row_bytes` apart from a 16-byte aligned start (what detail::access_alignment
// gives such views): the largest power of two <= 16 dividing it.
int row_align(uint64_t row_bytes) {
  int a = 1;
  while (a < kMaxVecBytes && row_bytes % (2 * a) == 0) a *= 2;
  return a;
}

// x rows `row_bytes` apart with up `up_bytes` into each, out rows `up_bytes` apart (x at 0x1000,
// out at 0x2000): the alignments x_halves_alignment / access_alignment give.
struct Aligns {
  int x, out;
};
Aligns aligned_rows(uint64_t row_bytes, uint64_t up_bytes) {
  return {std::min(row_align(row_bytes), row_align(up_bytes)), row_align(up_bytes)};
}
GatedProblem gated(int elem_bytes, int64_t T, int64_t F, Aligns a) { return {elem_bytes, T, F, a.x, a.out}; }
QuantProblem quant(int64_t T, int64_t F, int group, int q_bits, Aligns a) { return {T, F, group, q_bits, a.x, a.out}; }

// x's gate and up halves: the lowest set bit of x's address, row stride and up offset, at most 16.
TEST(ActivationConfig, XAlignmentCoversBothHalves) {
  auto x_at = [](uintptr_t addr, int64_t row_elems) {
    TensorView x = TensorView::contiguous(reinterpret_cast<void*>(addr), DType::bf16, {4, 0x80});
    x.stride[0] = row_elems;  // never dereferenced: only the address bits count
    return x;
  };
  EXPECT_EQ(x_halves_alignment(x_at(0x1000, 0x80), 0x40), 16);  // rows 0x100 B apart, up 0x80 B in
  EXPECT_EQ(x_halves_alignment(x_at(0x1008, 0x80), 0x40), 8);
  EXPECT_EQ(x_halves_alignment(x_at(0x1000, 0x80), 0x41), 2);   // up 0x82 B in
  EXPECT_EQ(x_halves_alignment(x_at(0x1000, 0x84), 0x40), 8);   // rows 0x108 B apart
  EXPECT_EQ(x_halves_alignment(TensorView{}, 1), kMaxVecBytes);
}

TEST(ActivationConfig, GatedWidthFollowsAlignment) {
  GatedProblem p = gated(2, 16, 4096, aligned_rows(16384, 8192));
  GatedConfig c = make_gated_config(p);
  EXPECT_EQ(c.vec_bytes, 16);
  EXPECT_EQ(c.vec, 8);
  p.F = 4100;  // up starts 8200 bytes in: 8-byte aligned
  p.x_align = aligned_rows(16400, 8200).x;
  EXPECT_EQ(make_gated_config(p).vec_bytes, 8);
  p.x_align = 2;  // misaligned view: one element per access
  c = make_gated_config(p);
  EXPECT_EQ(c.vec_bytes, 2);
  EXPECT_EQ(c.vec, 1);
  GatedProblem f32 = gated(4, 3, 7, aligned_rows(56, 28));
  EXPECT_EQ(make_gated_config(f32).vec_bytes, 4);
}

TEST(ActivationConfig, GatedLanesAndGrid) {
  // Large rows: one row per block, the row split over column blocks.
  GatedConfig c = make_gated_config(gated(2, 1, 16384, aligned_rows(65536, 32768)));
  EXPECT_EQ(c.threads_per_row, kThreads);
  EXPECT_EQ(c.rows_per_block, 1);
  EXPECT_EQ(c.grid_x, 1);
  EXPECT_EQ(c.grid_y, 16384 / 8 / kThreads);
  // Short rows share a block: 3 chunks -> 4 lanes, 64 rows per block.
  c = make_gated_config(gated(2, 1000, 24, aligned_rows(96, 48)));
  EXPECT_EQ(c.threads_per_row, 4);
  EXPECT_EQ(c.rows_per_block, 64);
  EXPECT_EQ(c.grid_x, 16);
  EXPECT_EQ(c.grid_y, 1);
  // Rows too long for gridDim.y: capped, lanes loop.
  c = make_gated_config(gated(4, 1, int64_t{1} << 26, aligned_rows(uint64_t{1} << 29, uint64_t{1} << 28)));
  EXPECT_EQ(c.grid_y, kMaxGridY);
}

TEST(ActivationConfig, QuantGroupsSpanWholeLaneSets) {
  QuantProblem p = quant(5, 128, kFp8Group, 8, aligned_rows(512, 256));
  QuantConfig c = make_quant_config(p);
  EXPECT_TRUE(c.vectorized);
  EXPECT_EQ(c.lanes_per_group, 16);
  EXPECT_EQ(c.threads_per_row, 16);
  EXPECT_EQ(c.rows_per_block, 16);
  p = quant(1, 32, kMxfp4Block, 4, aligned_rows(128, 64));
  c = make_quant_config(p);
  EXPECT_EQ(c.lanes_per_group, 4);
  EXPECT_EQ(c.threads_per_row, 4);
  p = quant(1, 16, kNvfp4Block, 4, aligned_rows(64, 32));
  EXPECT_EQ(make_quant_config(p).lanes_per_group, 2);
  p = quant(1, 16384, kFp8Group, 8, aligned_rows(65536, 32768));
  c = make_quant_config(p);
  EXPECT_EQ(c.threads_per_row, kThreads);
  EXPECT_EQ(c.grid_y, 16384 / kQuantElems / kThreads);
}

// TEJAS_TUNE activation.max_grid_y caps the column blocks (lanes loop); 0 leaves CUDA's limit.
TEST(ActivationConfig, MaxGridYCapsColumnBlocks) {
  for (int cap : {1, 3, 999}) {
    GatedProblem g = gated(2, 1, 16384, aligned_rows(65536, 32768));  // 8 column blocks uncapped
    g.max_grid_y = cap;
    EXPECT_EQ(make_gated_config(g).grid_y, std::min(cap, 8));
    QuantProblem q = quant(1, 16384, kFp8Group, 8, aligned_rows(65536, 32768));
    q.max_grid_y = cap;
    EXPECT_EQ(make_quant_config(q).grid_y, std::min(cap, 8));
  }
  GatedProblem huge = gated(4, 1, int64_t{1} << 26, aligned_rows(uint64_t{1} << 29, uint64_t{1} << 28));
  huge.max_grid_y = 0;
  EXPECT_EQ(make_gated_config(huge).grid_y, kMaxGridY);
}

// TEJAS_TUNE activation.steps: chunks per lane at once on the 16-byte path, the column blocks
// fewer by as much (rounded up); narrower paths keep one.
TEST(ActivationConfig, StepsShrinkColumnBlocksOn16BytePaths) {
  GatedProblem g = gated(2, 1, 14336, aligned_rows(57344, 28672));  // 1792 chunks: 7 blocks of 256
  EXPECT_EQ(make_gated_config(g).grid_y, 7);
  for (int steps : {2, 3, 4}) {
    g.steps = steps;
    const GatedConfig c = make_gated_config(g);
    EXPECT_EQ(c.steps, steps);
    EXPECT_EQ(c.grid_y, (1792 / steps + (1792 % steps != 0) + 255) / 256) << steps;
    EXPECT_GE(c.grid_y * c.threads_per_row * c.steps, 1792) << "every chunk has a lane";
  }
  g.steps = 9;
  EXPECT_EQ(make_gated_config(g).steps, kMaxGatedSteps);
  GatedProblem narrow = gated(2, 1, 4100, aligned_rows(16400, 8200));  // 8-byte accesses
  narrow.steps = 4;
  EXPECT_EQ(make_gated_config(narrow).vec_bytes, 8);
  EXPECT_EQ(make_gated_config(narrow).steps, 1);
}

TEST(ActivationConfig, QuantFallsBackToElementAccesses) {
  QuantProblem p = quant(2, 256, kFp8Group, 8, aligned_rows(1024, 512));
  p.x_align = 2;  // x not 16-byte aligned
  EXPECT_FALSE(make_quant_config(p).vectorized);
  p = quant(2, 256, kFp8Group, 8, aligned_rows(1024, 512));
  p.q_align = 4;  // q rows 260 bytes apart, 4-byte aligned: below e4m3's 8 bytes per lane
  EXPECT_FALSE(make_quant_config(p).vectorized);
  p.q_bits = 4;  // e2m1: 4 bytes per lane suffice
  EXPECT_TRUE(make_quant_config(p).vectorized);
}

}  // namespace

// The fast kernels clamp x's 16-bit words only where the limit is exactly a value of x's dtype:
// then min(x, limit) in that dtype is the f32 clamp. Elsewhere (and for f32 x, or unclamped
// silu) limit_pair is 0 and they clamp in f32, keeping the limit's own value.
TEST(ActivationConfig, LimitPairOnlyWhereTheLimitIsExact) {
  const auto pair = [](float limit, DType dt, bool clamped = true) {
    act::ActOptions o;
    o.clamped = clamped;
    o.limit = limit;
    return act::with_limit_pair(o, dt).limit_pair;
  };
  EXPECT_EQ(pair(7.0f, DType::bf16), 0x40E040E0u);
  EXPECT_EQ(pair(7.0f, DType::f16), 0x47004700u);
  EXPECT_EQ(pair(3.5f, DType::bf16), 0x40604060u);
  EXPECT_EQ(pair(6.9f, DType::bf16), 0u);  // bf16 6.90625 and f16 6.8984375 are not 6.9
  EXPECT_EQ(pair(6.9f, DType::f16), 0u);
  EXPECT_EQ(pair(7.0078125f, DType::bf16), 0u);  // an f16 value (7 + 2^-7) but not a bf16 one
  EXPECT_EQ(pair(7.0078125f, DType::f16), 0x47024702u);
  EXPECT_EQ(pair(1e5f, DType::f16), 0u);  // beyond f16's range
  EXPECT_EQ(pair(7.0f, DType::f32), 0u);
  EXPECT_EQ(pair(7.0f, DType::bf16, false), 0u);
  act::ActOptions stale;  // a pair left from another dtype is recomputed
  stale.clamped = true;
  stale.limit_pair = 0x47004700u;
  EXPECT_EQ(act::with_limit_pair(stale, DType::bf16).limit_pair, 0x40E040E0u);
}
