// The activation kernels' config functions: access width from alignment, lanes per row, grid.
#include <gtest/gtest.h>

#include "ops/activation/config.h"

using namespace tejas::act;

namespace {

Alignment aligned_rows(uint64_t row_bytes, uint64_t up_bytes) { return {0x1000, row_bytes, up_bytes, 0x2000, up_bytes}; }

TEST(ActivationConfig, CommonAlignmentIsTheLowestSetBit) {
  EXPECT_EQ(common_alignment({0x1000, 0x100, 0x80, 0x2000, 0x80}, 16), 16);
  EXPECT_EQ(common_alignment({0x1008, 0x100, 0x80, 0x2000, 0x80}, 16), 8);
  EXPECT_EQ(common_alignment({0x1000, 0x100, 0x82, 0x2000, 0x80}, 16), 2);
  EXPECT_EQ(common_alignment({0, 0, 0, 0, 0}, 16), 16);
}

TEST(ActivationConfig, GatedWidthFollowsAlignment) {
  GatedProblem p{2, 16, 4096, aligned_rows(16384, 8192)};
  GatedConfig c = make_gated_config(p);
  EXPECT_EQ(c.vec_bytes, 16);
  EXPECT_EQ(c.vec, 8);
  p.F = 4100;  // up starts 8200 bytes in: 8-byte aligned
  p.align = aligned_rows(16400, 8200);
  EXPECT_EQ(make_gated_config(p).vec_bytes, 8);
  p.align.x_addr += 2;  // misaligned view: one element per access
  c = make_gated_config(p);
  EXPECT_EQ(c.vec_bytes, 2);
  EXPECT_EQ(c.vec, 1);
  GatedProblem f32{4, 3, 7, aligned_rows(56, 28)};
  EXPECT_EQ(make_gated_config(f32).vec_bytes, 4);
}

TEST(ActivationConfig, GatedLanesAndGrid) {
  // Large rows: one row per block, the row split over column blocks.
  GatedConfig c = make_gated_config({2, 1, 16384, aligned_rows(65536, 32768)});
  EXPECT_EQ(c.threads_per_row, kThreads);
  EXPECT_EQ(c.rows_per_block, 1);
  EXPECT_EQ(c.grid_x, 1);
  EXPECT_EQ(c.grid_y, 16384 / 8 / kThreads);
  // Short rows share a block: 3 chunks -> 4 lanes, 64 rows per block.
  c = make_gated_config({2, 1000, 24, aligned_rows(96, 48)});
  EXPECT_EQ(c.threads_per_row, 4);
  EXPECT_EQ(c.rows_per_block, 64);
  EXPECT_EQ(c.grid_x, 16);
  EXPECT_EQ(c.grid_y, 1);
  // Rows too long for gridDim.y: capped, lanes loop.
  c = make_gated_config({4, 1, int64_t{1} << 26, aligned_rows(uint64_t{1} << 29, uint64_t{1} << 28)});
  EXPECT_EQ(c.grid_y, kMaxGridY);
}

TEST(ActivationConfig, QuantGroupsSpanWholeLaneSets) {
  QuantProblem p{5, 128, kFp8Group, 8, aligned_rows(512, 256)};
  QuantConfig c = make_quant_config(p);
  EXPECT_TRUE(c.vectorized);
  EXPECT_EQ(c.lanes_per_group, 16);
  EXPECT_EQ(c.threads_per_row, 16);
  EXPECT_EQ(c.rows_per_block, 16);
  p = {1, 32, kMxfp4Block, 4, aligned_rows(128, 64)};
  c = make_quant_config(p);
  EXPECT_EQ(c.lanes_per_group, 4);
  EXPECT_EQ(c.threads_per_row, 4);
  p = {1, 16, kNvfp4Block, 4, aligned_rows(64, 32)};
  EXPECT_EQ(make_quant_config(p).lanes_per_group, 2);
  p = {1, 16384, kFp8Group, 8, aligned_rows(65536, 32768)};
  c = make_quant_config(p);
  EXPECT_EQ(c.threads_per_row, kThreads);
  EXPECT_EQ(c.grid_y, 16384 / kQuantElems / kThreads);
}

TEST(ActivationConfig, QuantFallsBackToElementAccesses) {
  QuantProblem p{2, 256, kFp8Group, 8, aligned_rows(1024, 512)};
  p.align.x_addr += 2;  // x not 16-byte aligned
  EXPECT_FALSE(make_quant_config(p).vectorized);
  p.align = aligned_rows(1024, 512);
  p.align.out_row_stride_bytes = 260;  // q rows 4-byte aligned: below e4m3's 8 bytes per lane
  EXPECT_FALSE(make_quant_config(p).vectorized);
  p.q_bits = 4;  // e2m1: 4 bytes per lane suffice
  EXPECT_TRUE(make_quant_config(p).vectorized);
}

}  // namespace
