// The norm kernels' config function: vector width from dtypes and alignment, warp-per-row for
// short rows, CTA sizes, fp8-group granules, the H limit.
#include <gtest/gtest.h>

#include "ops/norm/config.h"

using namespace tejas;
using namespace tejas::norm;

namespace {

// Operands carry the alignment detail::access_alignment gives their views (address and token
// stride in bytes; tests/runtime/test_alignment.cpp): here made up, 16 unless a case says.
Operand aligned(DType dt) { return {true, dt, kMaxVecBytes}; }

NormProblem bf16_problem(int64_t T, int64_t H) {
  NormProblem p;
  p.T = T;
  p.H = H;
  p.x = aligned(DType::bf16);
  p.out = aligned(DType::bf16);
  p.weight = aligned(DType::bf16);
  return p;
}

TEST(NormConfig, WidestVectorForAlignedBf16) {
  const NormConfig c = choose_config(bf16_problem(16, 4096));
  EXPECT_TRUE(c.supported);
  EXPECT_EQ(c.vec, 8);  // 16 bytes
  EXPECT_EQ(c.elems_per_thread, kLargeE);
  EXPECT_EQ(c.threads, 256);  // 512 vectors, 2 per thread
  EXPECT_FALSE(c.warp_per_row);
  EXPECT_EQ(c.grid, 16);
}

TEST(NormConfig, WidestOperandSetsTheVector) {
  NormProblem p = bf16_problem(4, 4096);
  p.weight = aligned(DType::f32);  // 4 f32 = 16 bytes
  EXPECT_EQ(choose_config(p).vec, 4);
  p = bf16_problem(4, 4096);
  p.out = aligned(DType::e4m3);  // 8 e4m3 = 8 bytes: no constraint
  EXPECT_EQ(choose_config(p).vec, 8);
  p.x = aligned(DType::f32);
  EXPECT_EQ(choose_config(p).vec, 4);
}

TEST(NormConfig, MisalignedAddressOrStrideNarrowsTheVector) {
  NormProblem p = bf16_problem(4, 4096);
  p.x.align = 2;  // x starts 2 bytes past a 16-byte boundary
  EXPECT_EQ(choose_config(p).vec, 1);
  p.x.align = 4;
  EXPECT_EQ(choose_config(p).vec, 2);
  p = bf16_problem(4, 4096);
  p.out.align = 8;  // token stride 4096 + 4: rows 8 bytes apart from 16-byte alignment
  EXPECT_EQ(choose_config(p).vec, 4);
  p.out.align = kMaxVecBytes;  // token stride 0 (one row repeated): only the address counts
  EXPECT_EQ(choose_config(p).vec, 8);
  p.residual = {false, DType::f32, 1};  // absent: ignored whatever it holds
  EXPECT_EQ(choose_config(p).vec, 8);
}

TEST(NormConfig, ShortRowsUseOneWarpPerRow) {
  NormConfig c = choose_config(bf16_problem(37, 200));
  EXPECT_TRUE(c.warp_per_row);
  EXPECT_EQ(c.rows_per_block, kWarpRowsPerBlock);
  EXPECT_EQ(c.threads, kWarpRowsPerBlock * kWarpSize);
  EXPECT_EQ(c.grid, 10);  // ceil(37 / 4)
  c = choose_config(bf16_problem(1, 7));
  EXPECT_TRUE(c.warp_per_row);
  EXPECT_EQ(c.rows_per_block, 1);
  EXPECT_EQ(c.threads, kWarpSize);
}

TEST(NormConfig, LargestRowFitsOneCta) {
  NormConfig c = choose_config(bf16_problem(1, kMaxH));
  EXPECT_TRUE(c.supported);
  EXPECT_EQ(c.threads, kMaxThreads);
  NormProblem p = bf16_problem(1, kMaxH);
  p.x.align = 2;  // vec 1: still 16 elements per thread
  c = choose_config(p);
  EXPECT_EQ(c.vec, 1);
  EXPECT_EQ(c.threads, kMaxThreads);
  EXPECT_FALSE(choose_config(bf16_problem(1, kMaxH + 8)).supported);
}

TEST(NormConfig, Fp8GroupsAlignWithThreads) {
  NormProblem p = bf16_problem(3, 384);
  p.out = aligned(DType::e4m3);
  p.out_kind = OutKind::fp8_group;
  NormConfig c = choose_config(p);
  EXPECT_EQ(c.vec, 8);  // 16 lanes per group: fits a warp
  EXPECT_FALSE(c.warp_per_row);  // 48 vectors > 32
  EXPECT_EQ(c.threads % kWarpSize, 0);
  p.x.align = 2;  // vec 1: 128-lane groups, CTAs a multiple of 128
  c = choose_config(p);
  EXPECT_EQ(c.vec, 1);
  EXPECT_FALSE(c.warp_per_row);
  EXPECT_EQ(c.threads % kQuantGroup, 0);
  EXPECT_GE(c.threads * (c.elems_per_thread / c.vec), 384);
}

// The kernel's fp8-group branch has a __syncthreads for groups wider than a warp (vec 1, 2): it
// relies on such configs never being warp-per-row (where whole warps return early).
TEST(NormConfig, WideFp8GroupsNeverWarpPerRow) {
  for (int64_t H = kQuantGroup; H <= kMaxH; H += kQuantGroup) {
    for (int align : {16, 8, 4, 2}) {
      for (int64_t T : {1, 3, 64}) {
        NormProblem p = bf16_problem(T, H);
        p.out = aligned(DType::e4m3);
        p.out_kind = OutKind::fp8_group;
        p.x.align = align;
        const NormConfig c = choose_config(p);
        if (kQuantGroup / c.vec > kWarpSize) {
          EXPECT_FALSE(c.warp_per_row) << "H=" << H << " align=" << align;
          EXPECT_EQ(c.threads % (kQuantGroup / c.vec), 0) << "H=" << H;  // whole groups per CTA
        }
      }
    }
  }
}

// Every config covers its row: threads x items >= vectors, tail within the threads.
TEST(NormConfig, EveryRowIsCovered) {
  for (int64_t H = 1; H <= kMaxH; H += H < 64 ? 1 : 97) {
    for (int align : {16, 2, 4, 8}) {  // x shifted 0, 2, 4, 8 bytes past 16-byte alignment
      NormProblem p = bf16_problem(5, H);
      p.x.align = align;
      const NormConfig c = choose_config(p);
      const int64_t nvec = H / c.vec, per_row_threads = c.warp_per_row ? kWarpSize : c.threads;
      EXPECT_GE(per_row_threads * (c.elems_per_thread / c.vec), nvec) << "H=" << H;
      EXPECT_GT(per_row_threads, H % c.vec) << "H=" << H;
      EXPECT_LE(c.threads, kMaxThreads);
    }
  }
}

}  // namespace
