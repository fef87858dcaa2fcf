// rope kernels (emulator, and cuda when a GPU is present) against the reference backend on
// seeded random inputs: both styles, every dtype pair, tails (rotary_dim / 2 not a multiple of
// the vector), partial rotary, absent k, strided heads, misaligned views, T = 1 .. a few dozen,
// and one 16384-wide token; emulator counters (coalescing, compulsory bytes, no findings).
#include <gtest/gtest.h>

#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "check/cuda_mem.h"
#include "ops/common/emu_launch.h"
#include "ops/rope/plan.h"
#include "ops/rope/rope_test_util.h"
#include "runtime/tune.h"
#include "support/device_guards.h"
#include "support/op_snapshots.h"
#include "support/seed.h"
#include "tejas/rope.h"

using namespace tejas;
using check::HostTensor;
using ropetest::backend_ctx;
using ropetest::make_cache;

namespace {

constexpr int64_t kMaxPos = 64;
struct Shape {
  int64_t T, Hq, Hk, D, rotary, pad;  // Hk = 0: no k; pad: extra elements per head row
};
// Tails: rotary/2 = 1, 3, 5, 36 (vec 2), 65 (vec 1); partial rotary; padded heads; 128 x 128 = 16384 at T = 1.
constexpr Shape kShapes[] = {{1, 1, 1, 2, 2, 0},    {3, 4, 2, 64, 64, 0},   {37, 2, 1, 16, 8, 4},   {11, 1, 1, 16, 16, 0},
                             {5, 3, 0, 128, 32, 0}, {3, 2, 2, 10, 6, 6},    {2, 1, 3, 130, 130, 2},
                             {24, 4, 4, 72, 72, 0}, {1, 128, 0, 128, 128, 0},
                             // 205 heads over 64 head lanes: two steps, the last one partial
                             {2, 200, 5, 128, 128, 0},
                             // one head alone (two in flight: the step's second head absent)
                             {3, 1, 0, 64, 64, 0}};

std::string label(const Shape& s, DType qt, DType ct, RopeStyle style) {
  return ::testing::PrintToString(std::vector<int64_t>{s.T, s.Hq, s.Hk, s.D, s.rotary, s.pad}) + " " +
         std::string(dtype_name(qt)) + " cache " + std::string(dtype_name(ct)) +
         (style == RopeStyle::neox ? " neox" : " gptj");
}

struct Inputs {
  HostTensor pos, cache, q, k;
};

// Positions as far as 63 x 997 (make_cache's stride), and each head row of q and k scaled by
// 2^-20 .. 2^2: the tolerance is each pair's own (ropetest::compare_rotated), so a small row is
// held to 1 ulp too (f16's rows below 2^-14 hold subnormals).
Inputs make_inputs(check::Rng& rng, const Shape& s, DType qt, DType ct) {
  Inputs in{HostTensor(s.T % 2 ? DType::i64 : DType::i32, {s.T}), make_cache(kMaxPos, s.rotary, ct, 997),
            HostTensor(qt, {s.T, s.Hq, s.D}, s.pad), HostTensor(qt, {s.T, s.Hk ? s.Hk : 1, s.D}, s.pad)};
  check::fill_randint(in.pos, rng, 0, kMaxPos - 1);
  for (HostTensor* t : {&in.q, &in.k}) {
    check::fill_normal(*t, rng);
    for (int64_t row = 0; row < t->numel() / s.D; ++row) {
      const double scale = std::ldexp(1.0, static_cast<int>(rng.randint(-20, 2)));
      for (int64_t e = row * s.D; e < (row + 1) * s.D; ++e) t->set_flat(e, t->get_flat(e) * scale);
    }
  }
  return in;
}

// Runs rope on `backend` (emulator or cuda) and on the reference with the same inputs; compares.
void run_and_compare(check::Rng& rng, const Shape& s, DType qt, DType ct, RopeStyle style, Backend backend) {
  SCOPED_TRACE(label(s, qt, ct, style));
  Inputs in = make_inputs(rng, s, qt, ct);
  HostTensor q_ref(qt, {s.T, s.Hq, s.D}, s.pad), k_ref(qt, {s.T, s.Hk ? s.Hk : 1, s.D}, s.pad);
  q_ref.copy_from(in.q);
  k_ref.copy_from(in.k);
  const auto k_before = optest::bits_of(in.k);
  const auto kv = [&](const HostTensor& k) { return s.Hk ? k.view() : TensorView{}; };
  TEJAS_ASSERT_OK(rope(ropetest::reference_ctx(), in.pos, q_ref, kv(k_ref), in.cache, style));
  ASSERT_NO_FATAL_FAILURE(
      ropetest::rotate_on(backend, in.pos, in.q, in.k, s.Hk > 0, in.cache,
                          [&](const ExecContext& ctx, TensorView pos, TensorView q, TensorView k, TensorView cos_sin) {
                            return rope(ctx, pos, q, k, cos_sin, style);
                          }));
  if (backend == Backend::emulator && detail::tune().rope_head_stage)
    ropetest::expect_head_stage_bytes(s.T, s.Hq + s.Hk, s.rotary, qt);
  auto r = ropetest::compare_rotated(in.q, q_ref, style, s.rotary);
  EXPECT_TRUE(r.ok) << "q: " << r.message;
  if (s.Hk) {
    r = ropetest::compare_rotated(in.k, k_ref, style, s.rotary);
    EXPECT_TRUE(r.ok) << "k: " << r.message;
  } else {
    EXPECT_TRUE(optest::unchanged(in.k, k_before)) << "absent k";
  }
  EXPECT_TRUE(in.q.padding_intact() && in.k.padding_intact() && in.q.guards_intact() && in.k.guards_intact());
}

// Every shape with q / k in each dtype, the cos / sin cache in f32 and in q's dtype (one pass for
// f32 q, whose two are the same).
void run_all(check::Rng& rng, Backend backend) {
  size_t cases = 0;
  for (const Shape& s : kShapes)
    for (DType qt : {DType::bf16, DType::f16, DType::f32})
      for (int pass = 0; pass < (qt == DType::f32 ? 1 : 2); ++pass) {
        const DType ct = pass == 0 ? DType::f32 : qt;
        for (RopeStyle style : {RopeStyle::neox, RopeStyle::gptj}) {
          run_and_compare(rng, s, qt, ct, style, backend);
          ++cases;
        }
      }
  EXPECT_EQ(cases, std::size(kShapes) * 5 * 2) << "bf16 and f16 q with two caches, f32 q with one; two styles";
}

TEST(RopeKernel, EmulatorMatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  run_all(rng, Backend::emulator);
}

TEST(RopeKernel, CudaMatchesReference) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  run_all(rng, Backend::cuda);
}

// The other side of the rope.heads / rope.head_stage A/B (the defaults: two heads in flight, the
// first step staged): the GPU picks the default by timing both, so both must be right. One and
// two heads, loaded after the position and cos/sin. run_all's head counts include odd ones (a
// last step with one head) and one head alone.
TEST(RopeKernel, UnstagedVariantsMatchReference) {
  TEJAS_SEEDED_TEST_RNG();
  ropetest::run_tuned(rng, {ropetest::unstaged(1), ropetest::unstaged(2)}, [&](Backend b) { run_all(rng, b); });
}

// rope.head_prefetch=1 (first head rows into L2 before the position load) changes no result, with
// one and two heads in flight.
TEST(RopeKernel, HeadPrefetchVariantMatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  ropetest::run_tuned(rng, {ropetest::head_prefetch(1), ropetest::head_prefetch(2)},
                      [&](Backend b) { run_all(rng, b); });
}

// rope.head_stage=1 (the first step's heads through shared memory) changes no result: every
// shape, dtype and style of run_all (the 16-byte accesses stage, each rotary byte through
// cp.async once; the narrower paths plan no staging), one and two heads in flight.
TEST(RopeKernel, HeadStageVariantMatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  ropetest::run_tuned(rng, {ropetest::head_stage(1), ropetest::head_stage(2)}, [&](Backend b) {
    ropetest::staged_cases() = 0;
    run_all(rng, b);
    if (b == Backend::emulator) {
      EXPECT_GT(ropetest::staged_cases(), 20) << "the staging kernels must run";
    }
  });
}

// rope.pipeline=1 (persistent CTAs: 3 on the emulator, so that these shapes' CTAs walk up to a
// dozen token groups each, the next token's heads staged while the current one rotates) changes
// no result: shapes that pipeline (one rotary column and one head step per thread: partial
// rotary, odd head counts, q without k, T of 1 and not a multiple of the grid), then run_all's,
// most of which plan the default kernels. One and two heads in flight.
TEST(RopeKernel, PipelineVariantMatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  const Shape pipe_shapes[] = {{64, 4, 2, 64, 64, 0}, {45, 3, 1, 128, 64, 8}, {97, 8, 8, 128, 128, 0},
                               {7, 1, 0, 16, 16, 0},  {1, 2, 1, 32, 32, 0},   {130, 5, 0, 64, 48, 0}};
  for (int heads : {1, 2}) {
    detail::Tune t = ropetest::head_stage(heads);
    t.rope_pipeline = 1;
    ropetest::run_tuned(rng, {t}, [&](Backend b) {
      int pipelined = 0, cases = 0;
      for (const Shape& s : pipe_shapes)
        for (DType qt : {DType::bf16, DType::f16, DType::f32})
          for (RopeStyle style : {RopeStyle::neox, RopeStyle::gptj}) {
            run_and_compare(rng, s, qt, DType::f32, style, b);
            ++cases;
            pipelined += rotary::last_launch().pipeline;
          }
      EXPECT_EQ(pipelined, cases) << "every one of these shapes pipelines";
      // On a GPU the shapes above fit in one wave (a token group per CTA); this one has ~1000
      // blocks of 256 threads, more than an H200 holds at once, so its CTAs walk tokens too.
      if (b == Backend::cuda) {
        run_and_compare(rng, {32768, 2, 1, 64, 64, 0}, DType::bf16, DType::f32, RopeStyle::neox, b);
        EXPECT_TRUE(rotary::last_launch().pipeline) << "32768 tokens";
      }
      run_all(rng, b);
    });
  }
}

// The pipelined kernel's wide step (config.h's kPipeWideHeads): DeepSeek-V3's rope shape (128 q
// heads and one k head of D = 64, gptj) has 8 columns of 16-bit pairs, so 64 lanes of two heads
// (128) need a second step and 43 lanes of three make one: under the defaults bf16 and f16 are
// planned pipelined with three heads and match the reference (the emulator's 3 CTAs walk its 20
// tokens, one per block); neox's 4 columns keep two heads in one step; f32 (16 columns: 96 heads
// at three) is not pipelined. The wide plan's occupancy fallback (rotary::without_pipeline, forced
// by ScopedPipelineFallback as on a GPU whose query failed: the staged kernel with three heads and
// one stage of slots, walking the heads past its first step) matches too. On the GPU too when
// present.
TEST(RopeKernel, WideStepPipelinesManyHeads) {
  TEJAS_SEEDED_TEST_RNG();
  const detail::ScopedTuneOverride defaults(detail::Tune{});
  const Shape s{20, 128, 1, 64, 64, 0};
  for (DType qt : {DType::bf16, DType::f16}) {
    run_and_compare(rng, s, qt, DType::f32, RopeStyle::gptj, Backend::emulator);
    const rotary::RopeLaunch wide = rotary::last_launch();
    EXPECT_TRUE(wide.pipeline) << dtype_name(qt);
    EXPECT_EQ(wide.config.heads_in_flight, rotary::kPipeWideHeads) << dtype_name(qt);
    run_and_compare(rng, s, qt, qt, RopeStyle::neox, Backend::emulator);
    EXPECT_TRUE(rotary::last_launch().pipeline);
    EXPECT_EQ(rotary::last_launch().config.heads_in_flight, rotary::kMaxHeadsInFlight);
    const rotary::ScopedPipelineFallback fallback;
    run_and_compare(rng, s, qt, DType::f32, RopeStyle::gptj, Backend::emulator);
    const rotary::RopeLaunch l = rotary::last_launch();
    EXPECT_FALSE(l.pipeline) << dtype_name(qt);
    EXPECT_TRUE(l.params.head_stage);
    EXPECT_EQ(l.config.heads_in_flight, rotary::kPipeWideHeads);
    EXPECT_EQ(l.smem_bytes, wide.smem_bytes / 2) << "one stage of slots";
  }
  run_and_compare(rng, s, DType::f32, DType::f32, RopeStyle::gptj, Backend::emulator);
  EXPECT_FALSE(rotary::last_launch().pipeline);
  EXPECT_EQ(rotary::last_launch().config.heads_in_flight, rotary::kMaxHeadsInFlight);
  // The widest plan: 384 heads of D = 64, neox (4 columns): 128 lanes of three heads, 512
  // threads. Without its pipeline, one stage of its slots is 512 x 3 x 2 x 16 bytes = 48 KiB,
  // exactly CUDA's default limit for a kernel whose limit is not raised (launch.cu raises only
  // the pipelined kernels'), which the emulator holds such launches to.
  const Shape widest{2, 383, 1, 64, 64, 0};
  run_and_compare(rng, widest, DType::bf16, DType::f32, RopeStyle::neox, Backend::emulator);
  EXPECT_TRUE(rotary::last_launch().pipeline);
  EXPECT_EQ(rotary::last_launch().config.heads_in_flight, rotary::kPipeWideHeads);
  EXPECT_EQ(rotary::last_launch().config.threads, 512);
  EXPECT_EQ(rotary::last_launch().smem_bytes, 2 * emu::kDefaultMaxDynamicSmem);
  {
    const rotary::ScopedPipelineFallback fallback;
    run_and_compare(rng, widest, DType::bf16, DType::f32, RopeStyle::neox, Backend::emulator);
    EXPECT_FALSE(rotary::last_launch().pipeline);
    EXPECT_EQ(rotary::last_launch().smem_bytes, emu::kDefaultMaxDynamicSmem);
  }
  if (!check::cuda_available()) return;
  // The same plans on the GPU (after the emulator's, so a seed replays them alike with or without
  // one): wide, two heads, widest, each pipelined (the GPU's occupancy query must not have
  // fallen back) and under the forced fallback.
  for (bool fallback : {false, true}) {
    SCOPED_TRACE(fallback ? "cuda, fallback forced" : "cuda");
    std::optional<rotary::ScopedPipelineFallback> forced;
    if (fallback) forced.emplace();
    const auto expect_plan = [&](int heads) {
      EXPECT_EQ(rotary::last_launch().pipeline, !fallback);
      EXPECT_EQ(rotary::last_launch().config.heads_in_flight, heads);
    };
    for (DType qt : {DType::bf16, DType::f16}) {
      run_and_compare(rng, s, qt, DType::f32, RopeStyle::gptj, Backend::cuda);
      expect_plan(rotary::kPipeWideHeads);
      run_and_compare(rng, s, qt, qt, RopeStyle::neox, Backend::cuda);
      expect_plan(rotary::kMaxHeadsInFlight);
    }
    run_and_compare(rng, widest, DType::bf16, DType::f32, RopeStyle::neox, Backend::cuda);
    expect_plan(rotary::kPipeWideHeads);
  }
}

// Inputs for planning only (never run): 2 tokens, 4 q and 3 k heads of 64, bf16, an f32 cache.
struct PlanInputs {
  HostTensor pos{DType::i32, {2}}, q{DType::bf16, {2, 4, 64}}, k{DType::bf16, {2, 3, 64}};
  HostTensor cache = make_cache(4, 64, DType::f32);
  rotary::RopeArgs args() {
    rotary::RopeArgs a;
    a.positions = pos;
    a.q = q;
    a.k = k;
    a.cos_sin = cache;
    return a;
  }
};

// The occupancy fallback of every pipelined plan (rotary::without_pipeline, as launch.cu runs it
// when the GPU's occupancy query fails): the staged kernel of the same config with one stage of
// slots (rope_pipe_kernel's plans, rope.pipeline=1 here), the loads-first kernel without shared
// memory (kv_pipe_kernel's, test_kv_cache_write.cpp); plans that do not pipeline unchanged.
TEST(RopeKernel, PipelineFallbackMatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  const detail::ScopedTuneOverride defaults(detail::Tune{});
  detail::Tune t = ropetest::head_stage(2);  // (rope_tune turns the pipeline off)
  t.rope_pipeline = 1;
  ropetest::run_tuned(rng, {t}, [&](Backend b) {
    for (const Shape& s : {Shape{64, 4, 2, 64, 64, 0}, Shape{45, 3, 1, 128, 64, 8}})
      for (DType qt : {DType::bf16, DType::f16}) {
        run_and_compare(rng, s, qt, DType::f32, RopeStyle::neox, b);
        EXPECT_TRUE(rotary::last_launch().pipeline) << "the case must plan the pipeline to test its fallback";
        const rotary::ScopedPipelineFallback fallback;
        run_and_compare(rng, s, qt, DType::f32, RopeStyle::neox, b);
        EXPECT_FALSE(rotary::last_launch().pipeline);
        EXPECT_TRUE(rotary::last_launch().params.head_stage);
      }
  });
  PlanInputs in;
  const rotary::RopeLaunch planned = rotary::plan_launch(in.args());
  ASSERT_TRUE(planned.pipeline);
  const rotary::RopeLaunch l = rotary::without_pipeline(planned);
  EXPECT_FALSE(l.pipeline);
  EXPECT_EQ(l.smem_bytes, planned.smem_bytes / 2);
  EXPECT_EQ(l.config.blocks, planned.config.blocks);
  EXPECT_EQ(l.config.heads_in_flight, planned.config.heads_in_flight);
  const rotary::RopeLaunch again = rotary::without_pipeline(l);
  EXPECT_EQ(again.smem_bytes, l.smem_bytes) << "a plan without a pipeline is its own fallback";
}

// rope.head_stage is planned only with the tune on (the default) and 16-byte accesses, with its
// slots' bytes.
TEST(RopeKernel, HeadStagePlannedFor16ByteAccessesOnly) {
  PlanInputs in;
  HostTensor buf(DType::bf16, {2 * 4 * 64 + 8});
  rotary::RopeArgs args = in.args();
  {
    const detail::ScopedTuneOverride off(ropetest::unstaged(2));
    const rotary::RopeLaunch l = rotary::plan_launch(args);
    EXPECT_FALSE(l.params.head_stage);
    EXPECT_EQ(l.smem_bytes, 0u);
  }
  for (int heads : {1, 2}) {
    const detail::ScopedTuneOverride stage(ropetest::head_stage(heads));
    const rotary::RopeLaunch l = rotary::plan_launch(args);
    EXPECT_TRUE(l.params.head_stage);
    EXPECT_EQ(l.smem_bytes, static_cast<size_t>(l.config.threads) * heads * 2 * 16);  // neox: 2 accesses of 16 B
  }
  const detail::ScopedTuneOverride defaults(detail::Tune{});  // the defaults, whatever TEJAS_TUNE says
  rotary::RopeLaunch l = rotary::plan_launch(args);
  EXPECT_TRUE(l.params.head_stage);
  EXPECT_TRUE(l.pipeline);  // rope.pipeline=1: two stages of slots
  EXPECT_EQ(l.smem_bytes, static_cast<size_t>(l.config.threads) * 2 * 2 * 2 * 16);  // two heads in flight
  args.q = ropetest::view_at(buf, 2, {2, 4, 64});  // 4 bytes off alignment: the 4-byte path
  l = rotary::plan_launch(args);
  EXPECT_EQ(l.config.vec, 2);
  EXPECT_FALSE(l.params.head_stage);
  EXPECT_EQ(l.smem_bytes, 0u);
}

// rope.pipeline is planned only with the tune on (1, the default, for this op without caches),
// staging on, and one rotary column and one head step per thread; its slots are two stages of
// the staged kernel's.
TEST(RopeKernel, PipelinePlannedWhereEligibleOnly) {
  PlanInputs in;
  rotary::RopeArgs args = in.args();
  detail::Tune t = ropetest::head_stage(2);
  {
    const detail::ScopedTuneOverride off(t);  // ropetest's tunes: rope.pipeline=0
    EXPECT_FALSE(rotary::plan_launch(args).pipeline);
  }
  {
    const detail::ScopedTuneOverride defaults(detail::Tune{});  // the default, whatever TEJAS_TUNE says
    EXPECT_TRUE(rotary::plan_launch(args).pipeline);
  }
  for (int setting : {1, 2, 3}) {  // 3 differs from 2 for kv_cache_write only
    t.rope_pipeline = setting;
    const detail::ScopedTuneOverride on(t);
    EXPECT_TRUE(rotary::plan_launch(args).pipeline) << "rope.pipeline=" << setting;
  }
  t.rope_pipeline = 1;
  {
    const detail::ScopedTuneOverride on(t);
    const rotary::RopeLaunch l = rotary::plan_launch(args);
    EXPECT_TRUE(l.pipeline);
    EXPECT_EQ(l.config.col_threads, l.config.rot_cols);
    EXPECT_EQ(l.smem_bytes, static_cast<size_t>(l.config.threads) * 2 * 2 * 2 * 16);  // 2 stages x 2 heads x 2 accesses
    EXPECT_EQ(rotary::pipe_blocks(l.config, 1000), l.config.blocks);
    EXPECT_EQ(rotary::pipe_blocks(l.config, 0), 1);
  }
  detail::Tune unstaged = ropetest::unstaged(2);
  unstaged.rope_pipeline = 1;
  {
    const detail::ScopedTuneOverride on(unstaged);
    EXPECT_FALSE(rotary::plan_launch(args).pipeline) << "staging off";
  }
  const detail::ScopedTuneOverride on(t);
  rotary::RopeConfig c = rotary::plan_launch(args).config;
  rotary::RopeProblem pr = rotary::plan_launch(args).problem;
  EXPECT_TRUE(rotary::pipe_eligible(pr, c));
  c.col_threads = c.rot_cols / 2;  // columns outnumber the column threads
  EXPECT_FALSE(rotary::pipe_eligible(pr, c));
  c = rotary::plan_launch(args).config;
  c.head_lanes = 1;  // 7 heads, 2 in flight on 1 lane: several steps
  EXPECT_FALSE(rotary::pipe_eligible(pr, c));
  c = rotary::plan_launch(args).config;
  pr.kv_cache_elem_bytes = 1;  // a KV-cache write (fp8 cache): bf16 q, rotary == D
  EXPECT_TRUE(rotary::pipe_eligible(pr, c));
  c.pass_cols = 2;  // k tail columns (partial rotary with a cache)
  EXPECT_FALSE(rotary::pipe_eligible(pr, c));
  c = rotary::plan_launch(args).config;
  pr.elem_bytes = 4;  // f32 q with a cache: no pipelined kernel (nor does the op take it)
  EXPECT_FALSE(rotary::pipe_eligible(pr, c));
}

// TEJAS_TUNE's rope.heads reaches the launch: the default (0: per op) takes 2 where q is rotated,
// halving the head lanes; 1 and 2 when set.
TEST(RopeKernel, HeadsInFlightFollowTheTune) {
  PlanInputs in;
  const rotary::RopeArgs args = in.args();
  {
    const detail::ScopedTuneOverride defaults(detail::Tune{});  // the defaults, whatever TEJAS_TUNE says
    const rotary::RopeConfig c = rotary::plan_launch(args).config;
    EXPECT_EQ(c.heads_in_flight, 2);
    EXPECT_EQ(c.head_lanes, 4);  // ceil(7 / 2)
  }
  {
    const detail::ScopedTuneOverride one(ropetest::unstaged(1));
    const rotary::RopeConfig c = rotary::plan_launch(args).config;
    EXPECT_EQ(c.heads_in_flight, 1);
    EXPECT_EQ(c.head_lanes, 7);
  }
  const detail::ScopedTuneOverride two(ropetest::two_heads());
  const rotary::RopeConfig c = rotary::plan_launch(args).config;
  EXPECT_EQ(c.heads_in_flight, 2);
  EXPECT_EQ(c.head_lanes, 4);
}

// Views starting 2 and 4 bytes into a buffer (bf16): the one-element and 4-byte paths.
TEST(RopeKernel, MisalignedViewsTakeNarrowerVectors) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t T = 5, Hq = 3, Hk = 2, D = 64;
  const HostTensor cache = make_cache(kMaxPos, D, DType::f32);
  for (int64_t offset : {1, 2}) {
    for (RopeStyle style : {RopeStyle::neox, RopeStyle::gptj}) {
      SCOPED_TRACE(::testing::Message() << "offset " << offset << " elements");
      HostTensor pos(DType::i32, {T}), qbuf(DType::bf16, {T * Hq * D + 8}), kbuf(DType::bf16, {T * Hk * D + 8});
      check::fill_randint(pos, rng, 0, kMaxPos - 1);
      check::fill_normal(qbuf, rng);
      check::fill_normal(kbuf, rng);
      const TensorView q = ropetest::view_at(qbuf, offset, {T, Hq, D}), k = ropetest::view_at(kbuf, offset, {T, Hk, D});
      HostTensor q_ref = ropetest::gather(q), k_ref = ropetest::gather(k);
      const auto qbuf_before = optest::bits_of(qbuf);
      TEJAS_ASSERT_OK(rope(ropetest::reference_ctx(), pos, q_ref, k_ref, cache, style));
      TEJAS_ASSERT_OK(rope(backend_ctx(Backend::emulator), pos, q, k, cache, style));
      auto r = ropetest::compare_rotated(ropetest::gather(q), q_ref, style, D);
      EXPECT_TRUE(r.ok) << "q: " << r.message;
      r = ropetest::compare_rotated(ropetest::gather(k), k_ref, style, D);
      EXPECT_TRUE(r.ok) << "k: " << r.message;
      EXPECT_TRUE(qbuf.guards_intact() && kbuf.guards_intact());
      for (int64_t i = 0; i < qbuf.numel(); ++i) {  // elements outside the view keep their bits
        const bool outside = i < offset || i >= offset + T * Hq * D;
        if (outside) {
          EXPECT_EQ(qbuf.bits_flat(i), qbuf_before[static_cast<size_t>(i)]) << i;
        }
      }
    }
  }
}

// T = 1, 28 + 4 heads of D = rotary = 128 (bf16, 256-byte aligned; an f32 cache, an i64
// position) under `tune`: the launch's counters, after what every config must keep - unique
// bytes read = q/k + one cos/sin row + the position, written = q/k, 16 sectors per store
// request, no excess store sectors, no bank conflicts, no findings.
constexpr int64_t kCountT = 1, kCountHq = 28, kCountHk = 4, kCountD = 128;
emu::Counters counters_under(check::Rng& rng, const detail::Tune& tune) {
  const detail::ScopedTuneOverride override_tune(tune);
  const HostTensor cache = make_cache(kMaxPos, kCountD, DType::f32);
  HostTensor pos(DType::i64, {kCountT}), q(DType::bf16, {kCountT, kCountHq, kCountD}),
      k(DType::bf16, {kCountT, kCountHk, kCountD});
  check::fill_randint(pos, rng, 0, kMaxPos - 1);
  check::fill_normal(q, rng);
  check::fill_normal(k, rng);
  EXPECT_TRUE(rope(backend_ctx(Backend::emulator), pos, q, k, cache, RopeStyle::neox).ok());
  const auto& reports = detail::last_emulator_reports();
  EXPECT_EQ(reports.size(), 1u);
  if (reports.empty()) return {};
  const emu::Counters& c = reports[0].counters;
  EXPECT_TRUE(reports[0].ok()) << reports[0].summary();
  const uint64_t qk_bytes = (kCountHq + kCountHk) * kCountD * 2, cache_row = kCountD * 4;
  EXPECT_EQ(c.global_bytes_read_unique, qk_bytes + cache_row + 8);  // + one i64 position
  EXPECT_EQ(c.global_bytes_written_unique, qk_bytes);
  EXPECT_DOUBLE_EQ(c.sectors_per_store_request(), 16.0);
  EXPECT_EQ(c.excess_store_sectors(), 0u);
  EXPECT_EQ(c.bank_conflict_wavefronts(), 0u);
  return c;
}

// One head in flight, unstaged: each warp covers four heads x eight 16-byte columns. Per warp,
// by the access pattern: two q/k loads of 16 sectors (4 heads x 128 contiguous bytes), cos and
// sin as two 16-byte halves each of 8 sectors (eight 32-byte column slices), one broadcast
// position (1 sector); stores: two of 16 sectors.
TEST(RopeKernel, EmulatorCountersAtTheIdeal) {
  TEJAS_SEEDED_TEST_RNG();
  const emu::Counters c = counters_under(rng, ropetest::unstaged(1));
  constexpr uint64_t kWarps = (kCountHq + kCountHk) / 4;
  EXPECT_EQ(c.global_store_requests, kWarps * 2);
  EXPECT_EQ(c.global_load_requests, kWarps * (2 + 4 + 1));
  EXPECT_EQ(c.global_load_sectors, kWarps * (2 * 16 + 4 * 8 + 1));
  // Over the ideal: only the f32 cos/sin halves. Each of those 4 requests uses 16 bytes of each
  // of its 8 sectors (128 bytes: 4 sectors' worth); the other halves come in the next request
  // (an L1 hit, not HBM traffic). q/k and the position: none. A bf16 cache: none (next test).
  EXPECT_EQ(c.excess_load_sectors(), kWarps * 4 * 4);
  EXPECT_EQ(c.cp_async_bytes, 0u);
}

// The defaults (two heads in flight, the first step staged through shared memory): every q/k
// byte through cp.async once (each thread's first step holds all its heads and columns here).
// Per warp (8 heads: 4 head lanes x 2 heads in flight): four cp.async requests of 16 sectors
// (2 heads x 2 halves), cos and sin as above (4 requests of 8 sectors, half of each over the
// ideal), one broadcast position.
TEST(RopeKernel, EmulatorCountersStagedTwoHeads) {
  TEJAS_SEEDED_TEST_RNG();
  const emu::Counters c = counters_under(rng, detail::Tune{});
  EXPECT_TRUE(rotary::last_launch().params.head_stage);
  EXPECT_EQ(rotary::last_launch().config.heads_in_flight, 2);
  constexpr uint64_t kWarps = (kCountHq + kCountHk) / 8;
  EXPECT_EQ(c.cp_async_bytes, static_cast<uint64_t>((kCountHq + kCountHk) * kCountD * 2));
  EXPECT_EQ(c.global_store_requests, kWarps * 4);
  EXPECT_EQ(c.global_load_requests, kWarps * (4 + 4 + 1));
  EXPECT_EQ(c.global_load_sectors, kWarps * (4 * 16 + 4 * 8 + 1));
  EXPECT_EQ(c.excess_load_sectors(), kWarps * 4 * 4);
}

// Many tokens with a partial rotary: nothing outside the rotary dims is read or written (unique
// bytes), and a warp's vectors fill whole sectors on stores (head rows 32-byte aligned).
TEST(RopeKernel, EmulatorReadsAndWritesOnlyTheRotaryDims) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t T = 40, Hq = 4, Hk = 2, D = 128, kRotary = 64;
  const HostTensor cache = make_cache(T, kRotary, DType::bf16);
  HostTensor pos(DType::i32, {T}), q(DType::bf16, {T, Hq, D}), k(DType::bf16, {T, Hk, D});  // 256-byte aligned
  for (int64_t t = 0; t < T; ++t) pos.set({t}, static_cast<double>(T - 1 - t));  // distinct rows
  check::fill_normal(q, rng);
  check::fill_normal(k, rng);
  TEJAS_ASSERT_OK(rope(backend_ctx(Backend::emulator), pos, q, k, cache, RopeStyle::gptj));
  const emu::LaunchReport& rep = detail::last_emulator_reports().at(0);
  EXPECT_TRUE(rep.ok()) << rep.summary();
  const uint64_t qk = T * (Hq + Hk) * kRotary * 2;
  EXPECT_EQ(rep.counters.global_bytes_read_unique, qk + T * kRotary * 2 + T * 4);
  EXPECT_EQ(rep.counters.global_bytes_written_unique, qk);
  // gptj: 8 columns of 8 elements (4 pairs) per head = 128 contiguous bytes; a warp spans 4
  // heads: 16 sectors per request.
  EXPECT_DOUBLE_EQ(rep.counters.sectors_per_store_request(), 16.0);
  EXPECT_EQ(rep.counters.excess_load_sectors(), 0u);  // bf16 cos/sin: 16-byte columns, contiguous
  EXPECT_EQ(rep.counters.excess_store_sectors(), 0u);
}

TEST(RopeKernel, EmulatorPropagatesNonFiniteLikeTheReference) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN(), kInf = std::numeric_limits<double>::infinity();
  const HostTensor cache = make_cache(8, 16, DType::f32);
  HostTensor pos(DType::i32, {2}), q(DType::bf16, {2, 1, 16}), q_ref(DType::bf16, {2, 1, 16});
  pos.set({0}, 3.0);
  pos.set({1}, 0.0);
  for (int64_t i = 0; i < q.numel(); ++i) q.set_flat(i, 1.0);
  q.set({0, 0, 1}, kNaN);
  q.set({1, 0, 2}, kInf);
  q_ref.copy_from(q);
  TEJAS_ASSERT_OK(rope(ropetest::reference_ctx(), pos, q_ref, TensorView{}, cache, RopeStyle::neox));
  TEJAS_ASSERT_OK(rope(backend_ctx(Backend::emulator), pos, q, TensorView{}, cache, RopeStyle::neox));
  const auto r = ropetest::compare_rotated(q, q_ref, RopeStyle::neox, 16);
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_TRUE(std::isnan(q.get({1, 0, 10})));  // 1 * 1 + Inf * 0
}

TEST(RopeKernel, PositionsCheckedOnlyInDebugMode) {
  const HostTensor cache = make_cache(4, 4, DType::f32);
  HostTensor pos(DType::i32, {1}), q(DType::f32, {1, 1, 4});
  pos.set({0}, 9.0);  // out of range
  for (int64_t i = 0; i < 4; ++i) q.set_flat(i, 1.0);
  const auto before = optest::bits_of(q);
  ExecContext ctx = backend_ctx(Backend::emulator);
  ctx.debug_checks = true;
  TEJAS_EXPECT_INVALID(rope(ctx, pos, q, TensorView{}, cache, RopeStyle::neox), "rope: positions: expected values in [0, 4)");
  EXPECT_TRUE(optest::unchanged(q, before));
  ctx.backend = Backend::cuda;
  TEJAS_EXPECT_INVALID(rope(ctx, pos, q, TensorView{}, cache, RopeStyle::neox), "rope: positions: expected a cuda tensor");
}

}  // namespace
