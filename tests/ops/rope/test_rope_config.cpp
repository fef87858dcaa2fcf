// The rope family's config function: vector width from sizes and alignments, thread mapping.
#include <gtest/gtest.h>

#include "ops/rope/config.h"
#include "runtime/alignment.h"

using namespace tejas;
using namespace tejas::rotary;

namespace {

constexpr int kBf16 = 2, kF32 = 4, kFp8 = 1;

RopeProblem llama(int64_t T) {  // Llama-3 8B: 32 q heads, 8 kv heads, D = rotary = 128, bf16, f32 cache
  RopeProblem p;
  p.elem_bytes = kBf16;
  p.cos_elem_bytes = kF32;
  p.T = T;
  p.Hq = 32;
  p.Hk = 8;
  p.D = p.rotary_dim = 128;
  p.sections[0] = 64;
  return p;
}

TEST(RopeConfig, VectorCandidates) {
  EXPECT_EQ(vec_candidate(kBf16, 0), 8);
  EXPECT_EQ(vec_candidate(kBf16, 1), 2);
  EXPECT_EQ(vec_candidate(kBf16, 2), 1);
  EXPECT_EQ(vec_candidate(kF32, 0), 4);
  EXPECT_EQ(vec_candidate(kF32, 1), 1);
  EXPECT_EQ(vec_candidate(kF32, 3), 0);
}

TEST(RopeConfig, AlignedLlamaTakesSixteenByteVectors) {
  const RopeConfig c = choose_config(llama(1));
  EXPECT_EQ(c.vec, 8);
  EXPECT_EQ(c.rot_cols, 8);  // 64 pairs / 8
  EXPECT_EQ(c.pass_cols, 0);
  EXPECT_EQ(c.col_threads, 8);
  EXPECT_EQ(c.head_lanes, 40);  // every head of the token at once
  EXPECT_EQ(c.tokens_per_block, 1);
  EXPECT_EQ(c.threads, 320);
  EXPECT_EQ(c.blocks, 1);
  EXPECT_EQ(choose_config(llama(4096)).blocks, 4096);
}

// rope.head_stage: a block's slots for its threads' first-step heads, 16-byte accesses only.
TEST(RopeConfig, HeadStageSlotsFor16ByteAccessesOnly) {
  const RopeConfig c = choose_config(llama(1));
  EXPECT_EQ(head_access_bytes(c, kBf16, false), 16);
  EXPECT_EQ(head_accesses(c, false), 2);                       // neox: one access per half
  EXPECT_EQ(head_stage_smem_bytes(c, kBf16, false), 320 * 2 * 16);  // 320 threads, 1 head, 2 accesses
  RopeProblem two = llama(1);
  two.heads_in_flight = 2;
  const RopeConfig c2 = choose_config(two);
  EXPECT_EQ(head_stage_smem_bytes(c2, kBf16, false), int64_t{c2.threads} * 2 * 2 * 16);
  RopeProblem gptj = llama(1);
  gptj.interleaved = true;
  const RopeConfig cg = choose_config(gptj);
  EXPECT_EQ(head_accesses(cg, true), 1);  // 4 interleaved pairs in one 16-byte access
  EXPECT_EQ(head_stage_smem_bytes(cg, kBf16, true), int64_t{cg.threads} * 16);
  RopeProblem narrow = llama(1);
  narrow.qk_align = 4;  // the 4-byte path: not staged
  EXPECT_EQ(head_stage_smem_bytes(choose_config(narrow), kBf16, false), 0);
  RopeProblem f32 = llama(1);
  f32.elem_bytes = kF32;
  EXPECT_EQ(head_access_bytes(choose_config(f32), kF32, false), 16);  // 4 f32
  EXPECT_GT(head_stage_smem_bytes(choose_config(f32), kF32, false), 0);
}

// rope.heads=2: a thread takes two heads per step, so half the head lanes (rounded up), still
// capped by the group; out-of-range requests are clamped to the instantiated 1..2.
TEST(RopeConfig, TwoHeadsInFlightHalveTheHeadLanes) {
  RopeProblem p = llama(1);
  p.heads_in_flight = 2;
  RopeConfig c = choose_config(p);
  EXPECT_EQ(c.heads_in_flight, 2);
  EXPECT_EQ(c.head_lanes, 20);  // 40 heads
  EXPECT_EQ(c.threads, 160);
  p.Hq = 64;  // Llama-3.1-70B: 72 heads, 36 lanes of two instead of 64 lanes (8 of them twice)
  EXPECT_EQ(choose_config(p).head_lanes, 36);
  p.Hk = 1;   // 65 heads: 33 lanes, the last one's second head absent
  EXPECT_EQ(choose_config(p).head_lanes, 33);
  p.Hq = 1000;  // capped by the 512-thread group: 64 lanes of 8 columns
  EXPECT_EQ(choose_config(p).head_lanes, 64);
  p.Hq = 1, p.Hk = 0;
  EXPECT_EQ(choose_config(p).head_lanes, 1);
  p.heads_in_flight = 7;  // clamped at the pipelined kernel's wide step (plan.cpp asks for it)
  EXPECT_EQ(choose_config(p).heads_in_flight, kPipeWideHeads);
  p.heads_in_flight = 0;
  EXPECT_EQ(choose_config(p).heads_in_flight, 1);
  EXPECT_EQ(choose_config(llama(1)).heads_in_flight, 1);  // the default
}

TEST(RopeConfig, GptjColumnsHoldHalfAVectorOfPairs) {
  RopeProblem p = llama(1);
  p.interleaved = true;
  RopeConfig c = choose_config(p);
  EXPECT_EQ(c.vec, 8);  // 8 contiguous elements = 4 interleaved pairs
  EXPECT_EQ(c.pairs, 4);
  EXPECT_EQ(c.rot_cols, 16);
  p.rotary_dim = 6;  // 3 pairs: vec 2 holds one pair
  p.sections[0] = 3;
  c = choose_config(p);
  EXPECT_EQ(c.vec, 2);
  EXPECT_EQ(c.pairs, 1);
  p.qk_align = 2;  // a pair loaded as two scalars
  c = choose_config(p);
  EXPECT_EQ(c.vec, 1);
  EXPECT_EQ(c.pairs, 1);
  EXPECT_EQ(c.rot_cols, 3);
}

TEST(RopeConfig, NarrowerVectorsForOddHalvesAndMisalignment) {
  RopeProblem p = llama(3);
  p.rotary_dim = 72;  // 36 pairs: not a multiple of 8, a multiple of 2
  p.sections[0] = 36;
  EXPECT_EQ(choose_config(p).vec, 2);
  p.rotary_dim = 70;  // 35 pairs: one element at a time
  p.sections[0] = 35;
  EXPECT_EQ(choose_config(p).vec, 1);
  p = llama(3);
  p.qk_align = 4;  // a view starting 4 bytes into a buffer
  EXPECT_EQ(choose_config(p).vec, 2);
  p.qk_align = 2;
  EXPECT_EQ(choose_config(p).vec, 1);
  p = llama(3);
  p.cos_align = 8;  // f32 cache rows 8-byte aligned: 16-byte cache loads impossible
  EXPECT_EQ(choose_config(p).vec, 2);
}

TEST(RopeConfig, MropeSectionsBoundColumns) {
  RopeProblem p = llama(5);
  p.sections[0] = 16;
  p.sections[1] = 24;
  p.sections[2] = 24;  // Qwen2-VL: every section a multiple of 8
  EXPECT_EQ(choose_config(p).vec, 8);
  p.sections[0] = 18;
  p.sections[1] = 22;  // a column of 8 would straddle rows
  EXPECT_EQ(choose_config(p).vec, 2);
}

TEST(RopeConfig, KvCacheWriteAddsTailColumns) {
  RopeProblem p = llama(2);
  p.kv_cache_elem_bytes = kFp8;
  p.rotary_dim = 64;  // partial rotary: 64 tail dims go to the cache
  p.sections[0] = 32;
  RopeConfig c = choose_config(p);
  EXPECT_EQ(c.vec, 8);
  EXPECT_EQ(c.rot_cols, 4);
  EXPECT_EQ(c.pass_cols, 8);
  p.kv_cache_align = 4;  // fp8 rows of 8 codes need 8-byte alignment
  EXPECT_EQ(choose_config(p).vec, 2);
  p = llama(2);
  p.kv_cache_elem_bytes = kBf16;
  p.D = 132;  // 4 tail dims: vec 8 does not divide them
  EXPECT_EQ(choose_config(p).vec, 2);
}

TEST(RopeConfig, SmallGroupsShareBlocksAndHugeRowsLoop) {
  RopeProblem p = llama(1000);
  p.Hq = 1;
  p.Hk = 0;
  p.D = p.rotary_dim = 16;  // one column per head
  p.sections[0] = 8;
  RopeConfig c = choose_config(p);
  EXPECT_EQ(c.threads, c.col_threads * c.head_lanes * c.tokens_per_block);
  EXPECT_EQ(c.tokens_per_block, kTargetBlockThreads);
  EXPECT_EQ(c.blocks, 4);  // ceil(1000 / 256)
  p.T = 1;
  EXPECT_EQ(choose_config(p).tokens_per_block, 1);
  p.T = 100;
  p.Hq = 48;  // a group of 48 threads: 5 tokens would leave a half warp, 4 fill 6 warps
  c = choose_config(p);
  EXPECT_EQ(c.col_threads * c.head_lanes, 48);
  EXPECT_EQ(c.tokens_per_block, 4);
  EXPECT_EQ(c.threads % kWarpSize, 0);
  p = llama(1);
  p.D = p.rotary_dim = 4098;  // 2049 pairs, odd: vec 1, more columns than threads
  p.sections[0] = 2049;
  c = choose_config(p);
  EXPECT_EQ(c.vec, 1);
  EXPECT_EQ(c.col_threads, kMaxGroupThreads);
  EXPECT_EQ(c.head_lanes, 1);
  EXPECT_LE(c.threads, kMaxGroupThreads);
}

// rope_kv_cache_write's fewest bytes (docs/kernels/rope_kv_cache_write.md's table: Llama-3.1-8B
// 27.1 KB per token with a bf16 cache, 25.1 KB with e4m3) and the split's threshold, 16 MiB:
// T = 618 tokens is the first at or above it with a bf16 cache. Settings 0 (never) and 2 (always);
// no split without a cache, q or a rotation.
TEST(RopeConfig, KvSplitFromSixteenMiB) {
  RopeProblem p = llama(1);
  p.kv_cache_elem_bytes = kBf16;
  EXPECT_EQ(kv_cache_write_bytes(p), (32 + 8) * 128 * 2 * 2 + 8 * 128 * 2 + 2 * 8 * 128 * 2 + 128 * 4 + 12);
  EXPECT_EQ(kv_cache_write_bytes(p), 27148);
  p.kv_cache_elem_bytes = kFp8;
  EXPECT_EQ(kv_cache_write_bytes(p), 27148 - 2 * 8 * 128);
  p.rotary_dim = 64;  // a k tail: read once, half of k's dims
  EXPECT_EQ(kv_cache_write_bytes(p), (32 + 8) * 64 * 2 * 2 + 8 * 64 * 2 + 8 * 128 * 2 + 2 * 8 * 128 + 64 * 4 + 12);
  p = llama(617);
  p.kv_cache_elem_bytes = kBf16;
  EXPECT_LT(kv_cache_write_bytes(p), kKvSplitMinBytes);
  EXPECT_FALSE(kv_split_planned(p, 1));
  EXPECT_TRUE(kv_split_planned(p, 2));
  p.T = 618;
  EXPECT_GE(kv_cache_write_bytes(p), kKvSplitMinBytes);
  EXPECT_TRUE(kv_split_planned(p, 1));
  EXPECT_FALSE(kv_split_planned(p, 0));
  p.T = 16384;
  EXPECT_TRUE(kv_split_planned(p, 1));
  // The k half's config (plan.cpp): no q heads, one head per thread, 128-thread blocks.
  RopeProblem k_half = p;
  k_half.Hq = 0;
  k_half.block_threads = kKvRopeBlockThreads;
  const RopeConfig c = choose_config(k_half);
  EXPECT_EQ(c.col_threads * c.head_lanes, 64);  // 8 columns x 8 kv heads
  EXPECT_EQ(c.tokens_per_block, 2);
  EXPECT_EQ(c.threads, 128);
  for (int setting : {0, 1, 2}) {
    RopeProblem none = p;
    none.kv_cache_elem_bytes = 0;  // rope, mrope
    EXPECT_FALSE(kv_split_planned(none, setting));
    RopeProblem no_q = p;
    no_q.Hq = 0;  // kv_cache_write, or a split's k half
    EXPECT_FALSE(kv_split_planned(no_q, setting));
    RopeProblem no_rotation = no_q;
    no_rotation.rotary_dim = 0;
    EXPECT_FALSE(kv_split_planned(no_rotation, setting));
  }
}

// The planner's alignments come from detail::access_alignment (tests/runtime/test_alignment.cpp);
// these are the views rope sees.
TEST(RopeConfig, AlignmentOfViews) {
  using detail::access_alignment;
  alignas(16) static uint16_t buf[64];
  TensorView t = TensorView::contiguous(buf, DType::bf16, {2, 8});
  EXPECT_EQ(access_alignment(t, kMaxAccessBytes), 16);
  t.stride[0] = 10;  // 20-byte rows
  EXPECT_EQ(access_alignment(t, kMaxAccessBytes), 4);
  t = TensorView::contiguous(buf + 1, DType::bf16, {2, 8});
  EXPECT_EQ(access_alignment(t, kMaxAccessBytes), 2);
  EXPECT_EQ(access_alignment(TensorView{}, kMaxAccessBytes), 16);
}

}  // namespace
