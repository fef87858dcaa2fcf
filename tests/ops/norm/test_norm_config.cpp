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

// The norm.pipeline variant: which configs take it, the grid and the slots' shared memory.
TEST(NormConfig, PipelineTakesWholeSixteenByteRowsOnly) {
  const NormProblem p = bf16_problem(1000, 4096);
  const NormConfig c = choose_config(p);
  EXPECT_TRUE(pipeline_eligible(p, c));
  NormConfig q = with_pipeline(p, c, 2, 400);
  EXPECT_EQ(q.pipeline_stages, 2);
  EXPECT_EQ(q.grid, 400);                         // persistent: the resident CTAs
  EXPECT_EQ(q.threads, c.threads);                // the row's thread mapping unchanged
  EXPECT_EQ(with_pipeline(p, c, 2, 501).grid, 1000);  // T < 2 x resident: one CTA per row
  EXPECT_EQ(with_pipeline(p, c, 2, 501).pipeline_stages, 0);
  EXPECT_EQ(with_pipeline(p, c, 0, 400).pipeline_stages, 0);  // off
  EXPECT_EQ(with_pipeline(p, c, 1, 0).pipeline_stages, 0);    // residency unknown
  // 256 threads x 2 items x 16 bytes per stage and tensor, after NormSmem.
  EXPECT_EQ(pipeline_smem_bytes(c, false, 1), static_cast<int64_t>(sizeof(NormSmem)) + 256 * 2 * 16);
  EXPECT_EQ(pipeline_smem_bytes(c, true, 2), static_cast<int64_t>(sizeof(NormSmem)) + 4 * 256 * 2 * 16);
  // The largest: 1024 threads, fused, 2 stages: 128 KiB of slots, under the sm_80 opt-in 163 KB.
  const NormProblem big = bf16_problem(1000, kMaxH);
  EXPECT_EQ(pipeline_smem_bytes(choose_config(big), true, 2), static_cast<int64_t>(sizeof(NormSmem)) + 128 * 1024);

  NormProblem r = p;
  r.residual = aligned(DType::bf16);
  EXPECT_TRUE(pipeline_eligible(r, choose_config(r)));
  r.residual = aligned(DType::f32);  // vec 4: 8-byte x vectors
  EXPECT_FALSE(pipeline_eligible(r, choose_config(r)));
  NormProblem f = p;
  f.x = aligned(DType::f32);
  EXPECT_FALSE(pipeline_eligible(f, choose_config(f)));
  NormProblem m = p;
  m.x.align = 8;  // a misaligned view: vec 4
  EXPECT_FALSE(pipeline_eligible(m, choose_config(m)));
  const NormProblem tail = bf16_problem(1000, 4100);  // H % 8 = 4
  EXPECT_FALSE(pipeline_eligible(tail, choose_config(tail)));
  const NormProblem warp = bf16_problem(1000, 256);  // one warp per row
  EXPECT_FALSE(pipeline_eligible(warp, choose_config(warp)));
  NormProblem group = p;
  group.out = aligned(DType::e4m3);
  group.out_kind = OutKind::fp8_group;
  EXPECT_TRUE(pipeline_eligible(group, choose_config(group)));
}

}  // namespace
