// rope_kv_cache_write kernels (emulator; cuda when present) against the reference: q and k within
// one unit of the reference, cache rows equal to the kernel's own stored k (and v) - bit for bit
// for bf16/f16 caches, fp8 codes exactly sat_rne(x / scale), ties and double-rounding cases
// included (the v cache equals the reference's bit for bit) - and rows of skipped tokens and
// unused slots untouched. Shapes with tails, partial rotary, both styles, misaligned views, one
// 16384-wide token; emulator counters: compulsory bytes only, coalesced stores, no findings.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "check/cuda_mem.h"
#include "ops/common/emu_launch.h"
#include "ops/common/ref_numeric.h"
#include "ops/rope/kv_cache_test_util.h"
#include "runtime/tune.h"
#include "support/backends.h"
#include "support/device_guards.h"
#include "support/op_snapshots.h"
#include "support/poison.h"
#include "support/seed.h"

using namespace tejas;
using check::HostTensor;
using ropetest::KvBuffers;
using ropetest::KvShape;

using ropetest::check_cache;

namespace {

constexpr int64_t kMaxPos = 40;

// rope_kv_cache_write on `backend` (cuda: on device copies of b, the results downloaded into b and
// every copy's device guards checked; defined below).
void write_fused(KvBuffers& b, Backend backend, RopeStyle style = RopeStyle::neox);

// A copy of the inputs (caches still poisoned) through the GPU when one is present, before the
// emulator's call: its caches checked as the emulator's are, against the inputs' k. Every caller
// sets positions 0, so k comes back unrotated, bit for bit.
void check_on_gpu(const KvBuffers& inputs, const KvShape& s) {
  if (!check::cuda_available()) return;
  SCOPED_TRACE("cuda");
  KvBuffers g = inputs;
  ASSERT_NO_FATAL_FAILURE(write_fused(g, Backend::cuda));
  for (int64_t i = 0; i < g.k.numel(); ++i)
    ASSERT_EQ(g.k.bits_flat(i), inputs.k.bits_flat(i)) << "cuda: k rotated at 0";
  ropetest::check_caches(g, s);
}

struct Variant {
  DType qt, cache, cos;
  RopeStyle style;
};

// The kernel backend's q, k and caches against the reference run on copies of the same inputs.
void run_case(check::Rng& rng, const KvShape& s, const Variant& var, Backend backend) {
  SCOPED_TRACE(::testing::Message() << "T=" << s.T << " Hq=" << s.Hq << " Hk=" << s.Hk << " D=" << s.D << " rotary="
                                    << s.rotary << " blocks=" << s.num_blocks << "x" << s.block_size << " "
                                    << dtype_name(var.qt) << " cache " << dtype_name(var.cache) << " cos "
                                    << dtype_name(var.cos) << (var.style == RopeStyle::neox ? " neox" : " gptj"));
  KvBuffers b = ropetest::make_kv_buffers(rng, s, var.qt, var.cache, var.cos, kMaxPos, 4);
  HostTensor q_ref(var.qt, b.q.shape()), k_ref(var.qt, b.k.shape());
  q_ref.copy_from(b.q);
  k_ref.copy_from(b.k);
  HostTensor kc_ref(var.cache, b.k_cache.shape()), vc_ref(var.cache, b.v_cache.shape());
  const PagedKvCache ref_cache{kc_ref.view(), vc_ref.view(), b.paged().k_scale, b.paged().v_scale};
  TEJAS_ASSERT_OK(rope_kv_cache_write(ropetest::reference_ctx(), b.pos, q_ref, k_ref, b.v, b.cache, var.style, b.slots,
                                      ref_cache));
  ASSERT_NO_FATAL_FAILURE(write_fused(b, backend, var.style));
  // (The split's halves: SplitMovesOnlyCompulsoryBytes counts their bytes.)
  if (backend == Backend::emulator && detail::tune().rope_head_stage && !rotary::last_launch().k_half)
    ropetest::expect_head_stage_bytes(s.T, s.Hq + s.Hk, s.rotary, var.qt);
  auto r = ropetest::compare_rotated(b.q, q_ref, var.style, s.rotary);
  EXPECT_TRUE(r.ok) << "q: " << r.message;
  r = ropetest::compare_rotated(b.k, k_ref, var.style, s.rotary);
  EXPECT_TRUE(r.ok) << "k: " << r.message;
  ropetest::check_caches(b, s);
  // v is not rotated: its cache is the reference's bit for bit, unwritten rows included.
  for (int64_t i = 0; i < b.v_cache.numel(); ++i)
    ASSERT_EQ(b.v_cache.bits_flat(i), vc_ref.bits_flat(i)) << "v_cache element " << i << " vs the reference";
  for (const HostTensor* t : {&b.q, &b.k, &b.k_cache, &b.v_cache}) EXPECT_TRUE(t->guards_intact());
}

// Tails: rotary/2 of 3 (vec 1 on neox), 36 (vec 2); partial rotary with tails that force vec 2;
// Llama-like heads; a partial rotary of 64 in D = 132; one token with 128 q heads of 128 (16384);
// more k than q heads with a partial rotary (with two heads in flight: 3 head lanes, so the k-tail
// copy walks two heads on some lanes); a 16-byte neox partial rotary with k-tail columns (the
// head-staging kernels beside tail columns).
constexpr KvShape kShapes[] = {{1, 1, 1, 8, 8, 1, 1},        {3, 4, 2, 64, 64, 2, 4},  {21, 2, 1, 16, 6, 4, 8},
                               {9, 3, 3, 72, 72, 3, 5},      {6, 4, 2, 132, 64, 2, 16}, {1, 128, 8, 128, 128, 1, 16},
                               {4, 1, 5, 16, 8, 2, 4},       {5, 3, 2, 96, 64, 2, 8}};

// Each q dtype, cache dtype and style, the cos/sin cache f32 on neox and q's dtype on gptj; then
// (appended, so that the tests picking variants()[i] keep theirs) the other way round where the
// KV cache is q's dtype (the cos dtype is a runtime branch of the same kernels).
std::vector<Variant> variants() {
  std::vector<Variant> v;
  for (DType qt : {DType::bf16, DType::f16})
    for (DType cache : {qt, DType::e4m3, DType::e5m2})
      for (RopeStyle style : {RopeStyle::neox, RopeStyle::gptj})
        v.push_back({qt, cache, style == RopeStyle::neox ? DType::f32 : qt, style});
  for (DType qt : {DType::bf16, DType::f16})
    for (RopeStyle style : {RopeStyle::neox, RopeStyle::gptj})
      v.push_back({qt, qt, style == RopeStyle::neox ? qt : DType::f32, style});
  return v;
}

void run_all(check::Rng& rng, Backend backend) {
  for (const KvShape& s : kShapes)
    for (const Variant& var : variants()) run_case(rng, s, var, backend);
}

TEST(RopeKvCacheWriteKernel, EmulatorMatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  run_all(rng, Backend::emulator);
}

TEST(RopeKvCacheWriteKernel, CudaMatchesReference) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  run_all(rng, Backend::cuda);
}

// rope.v_prefetch=1 and rope.head_prefetch=1 (the A/B's other sides) change no result: the
// prefetches only move lines to L2.
// Both prefetches, on the defaults (staged) and unstaged.
TEST(RopeKvCacheWriteKernel, PrefetchVariantsMatchReference) {
  TEJAS_SEEDED_TEST_RNG();
  detail::Tune staged = ropetest::rope_tune(0, 1, 1), unstaged = ropetest::rope_tune(0, 0, 1);
  staged.rope_v_prefetch = unstaged.rope_v_prefetch = 1;
  ropetest::run_tuned(rng, {staged, unstaged}, [&](Backend b) { run_all(rng, b); });
}

TEST(RopeKvCacheWriteKernel, HeadStageVariantMatchesReference) {  // rope.head_stage=1, one and two heads
  TEJAS_SEEDED_TEST_RNG();
  ropetest::run_tuned(rng, {ropetest::head_stage(1), ropetest::head_stage(2)}, [&](Backend b) {
    ropetest::staged_cases() = 0;
    run_all(rng, b);
    if (b == Backend::emulator) {
      EXPECT_GT(ropetest::staged_cases(), 0) << "the staging kernels must run";
    }
  });
}

// rope.pipeline=1 (persistent CTAs, 3 on the emulator; each token's slot and position loaded one
// token ahead, its first v vectors staged per stage): shapes with rotary == D pipeline (several
// tokens per CTA, skipped tokens among them), with v staged and not; every run_all case runs
// under the tune too (partial rotary ones plan the default kernels).
TEST(RopeKvCacheWriteKernel, PipelineVariantMatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  const KvShape pipe_shapes[] = {{40, 4, 2, 64, 64, 6, 8}, {29, 8, 2, 128, 128, 4, 16}, {1, 2, 1, 64, 64, 1, 4},
                                 {33, 3, 3, 32, 32, 5, 8}};
  for (int heads : {1, 2}) {
    for (int v_stage : {1, 0}) {
      detail::Tune t = ropetest::head_stage(heads);
      t.rope_pipeline = 2;  // 1 (the default) pipelines only the ops without caches
      t.rope_v_stage = v_stage;
      SCOPED_TRACE(::testing::Message() << "rope.heads=" << heads << " rope.v_stage=" << v_stage);
      ropetest::run_tuned(rng, {t}, [&](Backend b) {
        int pipelined = 0, cases = 0;
        for (const KvShape& s : pipe_shapes)
          for (const Variant& var : variants()) {
            run_case(rng, s, var, b);
            ++cases;
            pipelined += rotary::last_launch().pipeline;
          }
        EXPECT_EQ(pipelined, cases) << "every one of these shapes pipelines";
        // On a GPU the shapes above fit in one wave; this one's ~1000 blocks do not, so its CTAs
        // walk tokens (second stage, slot handoff, v slots refilled) there too.
        if (b == Backend::cuda) {
          run_case(rng, {32768, 2, 1, 64, 64, 2048, 16}, variants()[2], b);
          EXPECT_TRUE(rotary::last_launch().pipeline) << "32768 tokens";
        }
        if (v_stage) run_all(rng, b);
      });
    }
  }
  // rope.pipeline=3 (kv_cache_write's pipelined kernel too) pipelines this op as 2 does.
  {
    detail::Tune t = ropetest::head_stage(2);
    t.rope_pipeline = 3;
    const detail::ScopedTuneOverride tune(t);
    for (const Variant& var : variants()) {
      run_case(rng, pipe_shapes[1], var, Backend::emulator);
      EXPECT_TRUE(rotary::last_launch().pipeline) << "rope.pipeline=3";
    }
  }
  // rope.pipeline=1 (the default) keeps the cache write on the one-token-per-thread kernel (the
  // H200 timed it within noise pipelined, 1.04 of the time, 1.09 with fp8 caches).
  for (int setting : {-1, 1}) {
    detail::Tune t = ropetest::head_stage(2);
    t.rope_pipeline = setting < 0 ? detail::Tune{}.rope_pipeline : setting;
    const detail::ScopedTuneOverride tune(t);
    run_case(rng, pipe_shapes[0], variants()[0], Backend::emulator);
    EXPECT_FALSE(rotary::last_launch().pipeline) << "rope.pipeline=" << t.rope_pipeline;
  }
}

TEST(RopeKvCacheWriteKernel, UnstagedVariantsMatchReference) {  // rope.head_stage=0, one and two heads
  TEJAS_SEEDED_TEST_RNG();
  ropetest::run_tuned(rng, {ropetest::unstaged(1), ropetest::unstaged(2)}, [&](Backend b) { run_all(rng, b); });
}

// Llama-3-8B-like heads, 4 tokens, one skipped: only the compulsory bytes move - q and k rotary
// dims read and written once, v read once for cached tokens, one cos/sin row per distinct
// position, one slot and position per token - and stores are whole 16-byte vectors in full sectors.
TEST(RopeKvCacheWriteKernel, EmulatorMovesOnlyCompulsoryBytes) {
  TEJAS_SEEDED_TEST_RNG();
  detail::Tune v_prefetch, head_prefetch, two_prefetch = ropetest::two_heads(), v_unstaged;
  v_prefetch.rope_v_prefetch = 1;
  head_prefetch.rope_head_prefetch = 1;
  two_prefetch.rope_head_prefetch = 1;
  v_unstaged.rope_v_stage = 0;
  detail::Tune v_prefetch_only = v_unstaged;  // the prefetch where v is not staged
  v_prefetch_only.rope_v_prefetch = 1;
  const KvShape s{4, 8, 2, 128, 128, 2, 16};
  uint64_t load_sectors_v_staged = 0, load_sectors_v_loaded = 0;
  for (const detail::Tune& tune : {detail::Tune{}, ropetest::unstaged(1), ropetest::unstaged(2), v_prefetch,
                                   head_prefetch, two_prefetch, ropetest::head_stage(1), v_unstaged,
                                   v_prefetch_only}) {
    const detail::ScopedTuneOverride override_tune(tune);
    SCOPED_TRACE(::testing::Message() << "rope.heads=" << tune.rope_heads << " rope.v_prefetch="
                                      << tune.rope_v_prefetch << " rope.head_prefetch=" << tune.rope_head_prefetch
                                      << " rope.head_stage=" << tune.rope_head_stage
                                      << " rope.v_stage=" << tune.rope_v_stage);
    KvBuffers b = ropetest::make_kv_buffers(rng, s, DType::bf16, DType::e4m3, DType::f32, kMaxPos, 4);
    for (int64_t t = 0; t < s.T; ++t) b.pos.set({t}, static_cast<double>(3 * t + 1));  // distinct
    TEJAS_ASSERT_OK(rope_kv_cache_write(ropetest::backend_ctx(Backend::emulator), b.pos, b.q, b.k, b.v, b.cache,
                                        RopeStyle::neox, b.slots, b.paged()));
    const emu::LaunchReport& rep = detail::last_emulator_reports().at(0);
    EXPECT_TRUE(rep.ok()) << rep.summary();
    const uint64_t cached = s.T - 1;  // make_kv_buffers skips every 4th token
    // rope.v_stage (with head staging): every token's v is read, the skipped one's too (staged
    // before the slot is known); else only the cached tokens'.
    const bool v_staged = tune.rope_head_stage && tune.rope_v_stage;
    const uint64_t qk = s.T * (s.Hq + s.Hk) * s.D * 2, v = (v_staged ? s.T : cached) * s.Hk * s.D * 2;
    const uint64_t cos = s.T * s.rotary * 4, idx = s.T * (8 + 8), scales = 2 * 4;
    EXPECT_EQ(rep.counters.global_bytes_read_unique, qk + v + cos + idx + scales);
    EXPECT_EQ(rep.counters.global_bytes_written_unique, qk + 2 * cached * s.Hk * s.D);  // + fp8 k and v rows
    EXPECT_EQ(rep.counters.bank_conflict_wavefronts(), 0u);
    // Prefetches move no bytes of their own in the counters. rope.v_prefetch=1: each token's v
    // vectors once, at the start (skipped tokens' too: the slot is not judged there), unless
    // rope.v_stage copies them (then none);
    // rope.head_prefetch=1: every head row's two 16-byte halves of every column once (each
    // thread's first step holds all its heads here: 10 or 5 head lanes for 10 heads).
    const uint64_t v_prefetches = tune.rope_v_prefetch && !v_staged ? s.T * s.Hk * (s.D / 8) : 0;
    const uint64_t head_prefetches = tune.rope_head_prefetch ? s.T * (s.Hq + s.Hk) * (s.rotary / 8) : 0;
    EXPECT_EQ(rep.counters.global_prefetches, v_prefetches + head_prefetches);
    // rope.head_stage=1: the same head rows' rotary dims through cp.async, each byte once (and
    // still read once: the unique bytes above); rope.v_stage=1 too: every token's v row.
    const uint64_t staged = tune.rope_head_stage ? s.T * (s.Hq + s.Hk) * s.rotary * 2 : 0;
    EXPECT_EQ(rep.counters.cp_async_bytes, staged + (v_staged ? s.T * s.Hk * s.D * 2 : 0));
    // The staged v is copied from shared memory: v is read once per token, by the cp.async
    // (whose sectors the load counters include), not loaded again. Against rope.v_stage=0,
    // otherwise the same kernel, that is the skipped token's v sectors more, no others.
    if (tune.rope_head_stage && tune.rope_heads == 0 && !tune.rope_v_prefetch && !tune.rope_head_prefetch)
      (v_staged ? load_sectors_v_staged : load_sectors_v_loaded) = rep.counters.global_load_sectors;
  }
  ASSERT_GT(load_sectors_v_staged, 0u);
  EXPECT_EQ(load_sectors_v_staged - load_sectors_v_loaded, static_cast<uint64_t>(1 * s.Hk * s.D * 2 / 32));
}

// fp8 caches at the hard cases: every bf16 / f16 value whose f32 quotient by the scale rounds to
// another code than the exact quotient. Positions 0 leave k unrotated (cos 1, sin 0), so k and v
// both carry these values into the caches; each code must be the exact quotient's.
TEST(RopeKvCacheWriteKernel, Fp8CachesRoundTheExactQuotient) {
  TEJAS_SEEDED_TEST_RNG();
  for (DType qt : {DType::bf16, DType::f16}) {
    for (DType cache_dt : {DType::e4m3, DType::e5m2}) {
      // The first scale (non-powers of two) with such values.
      const ropetest::HardValues h = ropetest::hard_values(qt, cache_dt);
      const float scale = h.scale;
      const std::vector<double>& hard = h.values;
      SCOPED_TRACE(::testing::Message() << dtype_name(qt) << " -> " << dtype_name(cache_dt) << " scale " << scale
                                        << ": " << hard.size() << " double-rounding values");
      ASSERT_FALSE(hard.empty()) << "no value to test: the scan found none for any scale";
      constexpr int64_t Hk = 2, D = 8;
      const int64_t T = std::min<int64_t>(64, (static_cast<int64_t>(hard.size()) + Hk * D - 1) / (Hk * D));
      const KvShape s{T, 1, Hk, D, D, T, 1};
      KvBuffers b = ropetest::make_kv_buffers(rng, s, qt, cache_dt, DType::f32, kMaxPos, 0, scale, scale);
      ropetest::fill_hard(b.k, b.v, hard);  // both signs
      for (int64_t t = 0; t < s.T; ++t) b.pos.set({t}, 0.0);
      const HostTensor k_in = ropetest::gather(b.k.view());
      check_on_gpu(b, s);  // before the emulator mutates b (and its launch record is read)
      TEJAS_ASSERT_OK(rope_kv_cache_write(ropetest::backend_ctx(Backend::emulator), b.pos, b.q, b.k, b.v, b.cache,
                                          RopeStyle::neox, b.slots, b.paged()));
      for (int64_t i = 0; i < b.k.numel(); ++i) ASSERT_EQ(b.k.bits_flat(i), k_in.bits_flat(i)) << "k rotated at 0";
      ropetest::check_caches(b, s);
    }
  }
}

// Extreme scales: a subnormal one (1e-39) and ones near 2^127 (1.2e38 .. 3.4e38), whose
// reciprocals are not normal f32 numbers (the kernel multiplies by 1 / (scale * 2^-+64), then by
// 2^-+64); and tiny scales with normal reciprocals (4.1e-39, 8.5e-39, 0x003C3C3C ~ 5.5e-39),
// where x - m * scale falls below the f32 subnormals unless computed 2^64 larger. Values
// scale * r, r spread over the code range and beyond (saturation), in bf16 (whose range covers
// these scales: subnormal values for the subnormal scale), and for 0x003C3C3C the bf16 value
// 2^-127, whose exact quotient lies 6e-8 above the midpoint 1.0625 (e4m3 1.125, not 1.0); every
// code must be the exact quotient's.
TEST(RopeKvCacheWriteKernel, Fp8CachesAtExtremeScales) {
  TEJAS_SEEDED_TEST_RNG();
  for (DType qt : {DType::bf16}) {
    for (DType cache_dt : {DType::e4m3, DType::e5m2}) {
      for (float scale : {1e-39f, 4.1e-39f, 8.5e-39f, std::bit_cast<float>(0x003C3C3Cu), 1.2e38f, 3e38f, 3.4e38f}) {
        SCOPED_TRACE(::testing::Message() << dtype_name(qt) << " -> " << dtype_name(cache_dt) << " scale " << scale);
        constexpr int64_t T = 8, Hk = 2, D = 8;
        const KvShape s{T, 1, Hk, D, D, T, 1};
        KvBuffers b = ropetest::make_kv_buffers(rng, s, qt, cache_dt, DType::f32, kMaxPos, 0, scale, scale);
        const double top = cache_dt == DType::e4m3 ? 600.0 : 70000.0;
        for (int64_t i = 0; i < b.k.numel(); ++i) {
          b.k.set_flat(i, static_cast<double>(scale) * rng.uniform(-top, top));
          b.v.set_flat(i, static_cast<double>(scale) * std::ldexp(rng.uniform(-1.0, 1.0), static_cast<int>(rng.randint(-12, 16))));
        }
        b.v.set_flat(0, std::ldexp(1.0, -127));  // 0x003C3C3C: just above an e4m3 midpoint
        for (int64_t t = 0; t < s.T; ++t) b.pos.set({t}, 0.0);
        check_on_gpu(b, s);  // before the emulator mutates b (and its launch record is read)
        TEJAS_ASSERT_OK(rope_kv_cache_write(ropetest::backend_ctx(Backend::emulator), b.pos, b.q, b.k, b.v, b.cache,
                                            RopeStyle::neox, b.slots, b.paged()));
        ropetest::check_caches(b, s);
      }
    }
  }
}

void write_fused(KvBuffers& b, Backend backend, RopeStyle style) {
  if (backend != Backend::cuda) {
    TEJAS_ASSERT_OK(
        rope_kv_cache_write(ropetest::backend_ctx(backend), b.pos, b.q, b.k, b.v, b.cache, style, b.slots, b.paged()));
    return;
  }
  ropetest::DeviceKv d;
  TEJAS_ASSERT_OK(d.upload(b));
  TEJAS_ASSERT_OK(rope_kv_cache_write(ropetest::backend_ctx(backend), d.pos.view(), d.q.view(), d.k.view(), d.v.view(),
                                      d.cos.view(), style, d.slots.view(), d.paged(b)));
  TEJAS_ASSERT_OK(check::device_synchronize());
  d.download(b);
}

// Power-of-two scales, the exact path (the conversion's own rounding, no midpoint test): every
// finite bf16 value at scale 1, and ropetest::kPowerOfTwoScales with values on code values and
// exact midpoints (ties to even) and past the codes' range; positions 0 leave k unrotated, so
// both caches carry these values; every code the exact quotient's, on the GPU too when present.
TEST(RopeKvCacheWriteKernel, Fp8CachesAtPowerOfTwoScales) {
  TEJAS_SEEDED_TEST_RNG();
  const std::vector<Backend> backends = testsupport::kernel_backends();
  for (Backend backend : backends) {
    for (DType cache_dt : {DType::e4m3, DType::e5m2}) {
      for (float scale : {0.0f, 0x1p-149f, 0x1p-127f, 0x1p-126f, 0x1p-125f, 0x1p-8f, 1.0f, 0x1p9f, 0x1p125f, 0x1p126f, 0x1p127f}) {
        const bool every = scale == 0.0f;  // every bf16 value, at scale 1
        SCOPED_TRACE(::testing::Message() << (backend == Backend::cuda ? "cuda " : "emulator ") << dtype_name(cache_dt)
                                          << (every ? " every bf16 value at scale 1" : " scale 2^") << (every ? 0 : std::ilogb(scale)));
        const KvShape s = every ? KvShape{2048, 1, 2, 16, 16, 128, 16} : KvShape{16, 1, 2, 8, 8, 2, 16};
        const double sc = every ? 1.0 : static_cast<double>(scale);
        KvBuffers b = ropetest::make_kv_buffers(rng, s, DType::bf16, cache_dt, DType::f32, kMaxPos, 0, sc, sc);
        if (every) ropetest::fill_every_value(b.k, b.v, DType::bf16);
        else ropetest::fill_scaled_ties(b.k, b.v, scale, rng);
        for (int64_t t = 0; t < s.T; ++t) b.pos.set({t}, 0.0);
        write_fused(b, backend);
        ropetest::check_caches(b, s);
      }
    }
  }
}

// The pipelined kernel with caches (rope.pipeline=2; D = 16, so 16-byte columns and one head step
// per thread: eligible), `heads` per thread (Hq 1, Hk 3: with two, lane 1 holds two k heads, both
// turns of its loop storing to the k cache; lane 0 the q head and a k head), on `fill`'s values at
// `scale` (v's: v_scale, or `scale` when 0): positions 0 leave k unrotated; every code the exact
// quotient's, the case planned pipelined, and (clean) the scale check planned, every block's
// verdicts the host's and each clean cache's vectors stored with its multiplier.
template <class Fill>
void run_pipelined(check::Rng& rng, int heads, DType qt, DType cache_dt, const KvShape& s, float scale,
                   const char* what, const Fill& fill, bool clean = false, float v_scale = 0.0f) {
  detail::Tune t = ropetest::head_stage(heads);
  t.rope_pipeline = 2;
  const detail::ScopedTuneOverride tune(t);
  SCOPED_TRACE(::testing::Message() << "rope.heads=" << heads << " " << dtype_name(qt) << " -> " << dtype_name(cache_dt)
                                    << " " << what << " at scale " << scale << ", v " << v_scale);
  KvBuffers b = ropetest::make_kv_buffers(rng, s, qt, cache_dt, DType::f32, kMaxPos, 0, scale,
                                          v_scale != 0.0f ? v_scale : scale);
  fill(b);
  for (int64_t tok = 0; tok < s.T; ++tok) b.pos.set({tok}, 0.0);
  TEJAS_ASSERT_OK(rope_kv_cache_write(ropetest::backend_ctx(Backend::emulator), b.pos, b.q, b.k, b.v, b.cache,
                                      RopeStyle::neox, b.slots, b.paged()));
  EXPECT_TRUE(rotary::last_launch().pipeline) << "planned the pipelined kernel";
  if (clean) {
    EXPECT_TRUE(rotary::last_launch().params.clean_scales) << "planned the check";
    ropetest::expect_clean_events(b);
  }
  ropetest::check_caches(b, s);
}

// The pipelined kernel (run_pipelined) at the fp8 hard cases of the tests above: the
// double-rounding values at their scale, every bf16 / f16 value at 0.37 and at 1 + 2^-23 (two
// heads), and values on code midpoints at extreme and power-of-two scales (bf16). Without a clean
// multiplier (kernel.cuh's clean_scales) its k stores test every value (round_quotient) and its v
// stores filter (near_key) first, as kv_write_kernel's do; the every-value scans' 256-thread
// blocks check their scales, and 0.37's first candidate is clean (test_clean_multiplier.cpp).
TEST(RopeKvCacheWriteKernel, PipelinedFp8CachesRoundTheExactQuotient) {
  TEJAS_SEEDED_TEST_RNG();
  for (int heads : {1, 2}) {
    for (DType qt : {DType::bf16, DType::f16}) {
      for (DType cache_dt : {DType::e4m3, DType::e5m2}) {
        const ropetest::HardValues h = ropetest::hard_values(qt, cache_dt);
        ASSERT_FALSE(h.values.empty()) << "no value to test: the scan found none for any scale";
        const int64_t T = std::min<int64_t>(64, (static_cast<int64_t>(h.values.size()) + 47) / 48);
        run_pipelined(rng, heads, qt, cache_dt, {T, 1, 3, 16, 16, T, 1}, h.scale, "double-rounding values",
                      [&](KvBuffers& b) { ropetest::fill_hard(b.k, b.v, h.values); });
        if (heads == 2) {
          for (float scale : {0.37f, 0x1.000002p0f})
            run_pipelined(rng, heads, qt, cache_dt, {2048, 1, 3, 16, 16, 128, 16}, scale, "every value",
                          [&](KvBuffers& b) { ropetest::fill_every_value(b.k, b.v, qt); }, true);
        }
        if (qt != DType::bf16) continue;
        for (float scale : {0x1p-149f, 1e-39f, std::bit_cast<float>(0x003C3C3Cu), 0x1p-8f, 0.37f, 0x1p127f, 3.4e38f})
          run_pipelined(rng, heads, qt, cache_dt, {16, 1, 3, 16, 16, 2, 16}, scale, "values on midpoints",
                        [&](KvBuffers& b) { ropetest::fill_scaled_ties(b.k, b.v, scale, rng); });
      }
    }
  }
}

namespace {
// k and v of +-3 x 2^-12, which scale 0.05's first clean-multiplier candidate writes wrong (a
// check that skipped some threads' tests could pick it).
void fill_first_candidate_misses(KvBuffers& b) {
  for (int64_t i = 0; i < b.k.numel(); ++i) {
    b.k.set_flat(i, i % 2 ? 0x1.8p-11 : -0x1.8p-11);
    b.v.set_flat(i, i % 3 ? -0x1.8p-11 : 0x1.8p-11);
  }
}
}  // namespace

// The pipelined kernel's clean multipliers: every bf16 / f16 value (two heads per thread) at k and
// v scales that differ and take the other verdicts for e4m3 on both (test_clean_multiplier.cpp:
// 0.05 the second candidate, 0.02 the third, 7 / 128 none, so the per-value paths), both fp8
// formats; every block's verdicts the host's and each clean cache's vectors stored with its
// multiplier (run_pipelined's event check).
TEST(RopeKvCacheWriteKernel, PipelinedFp8CachesAtCleanScales) {
  TEJAS_SEEDED_TEST_RNG();
  for (DType qt : {DType::bf16, DType::f16})
    for (DType cache_dt : {DType::e4m3, DType::e5m2})
      for (const auto& [k, v] : {std::pair{0.05f, 0.02f}, {0.02f, 0.0546875f}, {0.0546875f, 0.05f}})
        run_pipelined(rng, 2, qt, cache_dt, {2047, 1, 3, 16, 16, 128, 16}, k, "every value",
                      [&](KvBuffers& b) { ropetest::fill_every_value(b.k, b.v, qt); }, true, v);
  // A partial last block runs every test (test_kv_cache_write.cpp's PartialBlockRunsEveryScaleTest):
  // 129 tokens in blocks of 128, so the second has 2 live threads; +-3 x 2^-12 at scale 0.05 is
  // written wrong by the first candidate, which a check of the live threads' tests alone would pick.
  run_pipelined(rng, 2, DType::bf16, DType::e4m3, {129, 1, 3, 16, 16, 9, 16}, 0.05f, "3 x 2^-12, a partial block",
                fill_first_candidate_misses, true);
  EXPECT_EQ(rotary::last_launch().config.tokens_per_block, 128);
}

// The pipelined kernel's occupancy fallback (rotary::without_pipeline, forced as on a GPU whose
// occupancy query failed): rope_kernel with the same config and one stage of slots, which does not
// check clean multipliers, so its k stores test every value at 0.05 (the first candidate's misses
// included: every bf16 / f16 value) - caches exact, no verdict recorded. Emulator, and the GPU
// when present.
TEST(RopeKvCacheWriteKernel, PipelineFallbackMatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  detail::Tune t = ropetest::head_stage(2);
  t.rope_pipeline = 2;
  const detail::ScopedTuneOverride tune(t);
  const KvShape s{2047, 1, 3, 16, 16, 128, 16};
  for (DType qt : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(dtype_name(qt));
    KvBuffers b = ropetest::make_kv_buffers(rng, s, qt, DType::e4m3, DType::f32, kMaxPos, 0, 0.05, 0.02);
    ropetest::fill_every_value(b.k, b.v, qt);
    for (int64_t tok = 0; tok < s.T; ++tok) b.pos.set({tok}, 0.0);
    const rotary::RopeLaunch planned = rotary::plan_launch(
        {b.pos, b.q, b.k, b.v, b.cache, b.slots, b.paged(), RopeStyle::neox, false, {0, 0, 0}});
    ASSERT_TRUE(planned.pipeline);
    ASSERT_TRUE(planned.params.clean_scales);
    const rotary::ScopedPipelineFallback fallback;
    check_on_gpu(b, s);  // before the emulator mutates b (and its launch record is read)
    TEJAS_ASSERT_OK(rope_kv_cache_write(ropetest::backend_ctx(Backend::emulator), b.pos, b.q, b.k, b.v, b.cache,
                                        RopeStyle::neox, b.slots, b.paged()));
    const rotary::RopeLaunch l = rotary::last_launch();
    EXPECT_FALSE(l.pipeline);
    EXPECT_FALSE(l.params.clean_scales) << "rope_kernel does not check";
    EXPECT_TRUE(l.params.head_stage);
    EXPECT_EQ(l.smem_bytes, planned.smem_bytes / 2);
    ropetest::expect_clean_events(b);
    ropetest::check_caches(b, s);
  }
}

// Views 2 bytes into their buffers (bf16): the one-element path, caches still exact.
TEST(RopeKvCacheWriteKernel, MisalignedViews) {
  TEJAS_SEEDED_TEST_RNG();
  const KvShape s{5, 2, 2, 32, 32, 2, 4};
  for (DType cache_dt : {DType::bf16, DType::e4m3}) {
    KvBuffers b = ropetest::make_kv_buffers(rng, s, DType::bf16, cache_dt, DType::f32, kMaxPos, 3);
    HostTensor kbuf(DType::bf16, {s.T * s.Hk * s.D + 1});
    check::fill_normal(kbuf, rng);
    const TensorView k = ropetest::view_at(kbuf, 1, {s.T, s.Hk, s.D});
    HostTensor k_ref = ropetest::gather(k), q_ref(DType::bf16, b.q.shape());
    q_ref.copy_from(b.q);
    HostTensor kc_ref(cache_dt, b.k_cache.shape()), vc_ref(cache_dt, b.v_cache.shape());
    const PagedKvCache rc{kc_ref.view(), vc_ref.view(), b.paged().k_scale, b.paged().v_scale};
    TEJAS_ASSERT_OK(rope_kv_cache_write(ropetest::reference_ctx(), b.pos, q_ref, k_ref, b.v, b.cache, RopeStyle::gptj,
                                        b.slots, rc));
    TEJAS_ASSERT_OK(rope_kv_cache_write(ropetest::backend_ctx(Backend::emulator), b.pos, b.q, k, b.v, b.cache,
                                        RopeStyle::gptj, b.slots, b.paged()));
    const HostTensor k_got = ropetest::gather(k);
    auto r = ropetest::compare_rotated(k_got, k_ref, RopeStyle::gptj, s.rotary);
    EXPECT_TRUE(r.ok) << "k: " << r.message;
    check_cache(b.k_cache, k_got, b.slots, b.k_scale, s, "k_cache");
    check_cache(b.v_cache, b.v, b.slots, b.v_scale, s, "v_cache");
  }
}

// NaN and out-of-range values reach fp8 caches as NaN codes and saturated codes, on the emulator
// and the GPU when present; under each poison byte (the default 0xFF is e4m3's NaN code: an
// unwritten code would read as NaN).
TEST(RopeKvCacheWriteKernel, SaturatesAndKeepsNaN) {
  TEJAS_SEEDED_TEST_RNG();
  const std::vector<Backend> backends = testsupport::kernel_backends();
  for (Backend backend : backends)
    testsupport::for_each_poison([&] {
      SCOPED_TRACE(backend_name(backend));
      const KvShape s{2, 1, 1, 8, 8, 1, 2};
      KvBuffers b = ropetest::make_kv_buffers(rng, s, DType::f16, DType::e4m3, DType::f32, kMaxPos, 0, 0.01, 0.01);
      b.v.set({0, 0, 3}, 1000.0);
      b.v.set({0, 0, 4}, -1000.0);
      b.v.set({1, 0, 5}, std::numeric_limits<double>::quiet_NaN());
      ASSERT_NO_FATAL_FAILURE(write_fused(b, backend));
      const auto slot0 = static_cast<int64_t>(b.slots.get({0})), slot1 = static_cast<int64_t>(b.slots.get({1}));
      EXPECT_EQ(b.v_cache.get({0, slot0, 0, 3}), 448.0);
      EXPECT_EQ(b.v_cache.get({0, slot0, 0, 4}), -448.0);
      EXPECT_TRUE(std::isnan(b.v_cache.get({0, slot1, 0, 5})));
      check_cache(b.v_cache, b.v, b.slots, b.v_scale, s, "v_cache");
    });
}

}  // namespace

// Without debug checks the kernel does not validate slots: one beyond the cache is skipped like
// a negative one (its q/k still rotated), so no write lands outside the caches (the emulator
// reports any out-of-bounds store). Debug-check mode rejects it before any write.
TEST(RopeKvCacheWriteKernel, SlotBeyondCacheSkippedWithoutDebugChecks) {
  TEJAS_SEEDED_TEST_RNG();
  const KvShape s{3, 2, 2, 32, 32, 2, 4};
  KvBuffers b = ropetest::make_kv_buffers(rng, s, DType::bf16, DType::bf16, DType::f32, kMaxPos, 0);
  const int64_t num_slots = s.num_blocks * s.block_size;
  b.slots.set({1}, static_cast<double>(num_slots + 5));
  KvBuffers expect = b;  // same inputs; token 1 then skipped explicitly in the reference
  expect.slots.set({1}, -1.0);
  TEJAS_ASSERT_OK(rope_kv_cache_write(ropetest::reference_ctx(), expect.pos, expect.q, expect.k, expect.v,
                                      expect.cache, RopeStyle::neox, expect.slots, expect.paged()));
  ExecContext ctx = ropetest::backend_ctx(Backend::emulator);
  ctx.debug_checks = true;
  TEJAS_EXPECT_INVALID(rope_kv_cache_write(ctx, b.pos, b.q, b.k, b.v, b.cache, RopeStyle::neox, b.slots, b.paged()),
                       "slot_mapping");
  ctx.debug_checks = false;
  TEJAS_ASSERT_OK(rope_kv_cache_write(ctx, b.pos, b.q, b.k, b.v, b.cache, RopeStyle::neox, b.slots, b.paged()));
  EXPECT_TRUE(detail::last_emulator_reports().at(0).ok());
  EXPECT_TRUE(ropetest::compare_rotated(b.q, expect.q, RopeStyle::neox, s.rotary).ok);
  EXPECT_TRUE(ropetest::compare_rotated(b.k_cache, expect.k_cache, RopeStyle::neox, s.rotary).ok);
  EXPECT_TRUE(check::compare_exact(b.v_cache, expect.v_cache).ok);
}

namespace {

// rope.kv_split=N with every other key at its default.
detail::Tune kv_split(int setting) {
  detail::Tune t;
  t.rope_kv_split = setting;
  return t;
}

// rope.kv_split=2 (split at every size), the k half on kv_rope_kernel (pipe 0) or on
// kv_rope_pipe_kernel where eligible (pipe 1: rope.kv_rope_pipe=1).
detail::Tune split_at_every_size(int pipe) {
  detail::Tune t = kv_split(2);
  t.rope_kv_rope_pipe = pipe;
  return t;
}

// The last call ran split: its q half plain rope on q alone, its k half kv_rope_kernel on k alone
// (the q half pipelined where plain rope pipelines, rotary == D among them).
void expect_split(const KvShape& s) {
  const rotary::RopeLaunch k = rotary::last_launch(), q = rotary::last_q_launch();
  EXPECT_TRUE(k.k_half) << "the k half";
  EXPECT_EQ(k.problem.Hq, 0);
  EXPECT_EQ(k.problem.Hk, s.Hk);
  EXPECT_EQ(k.problem.rotary_dim, s.rotary);
  EXPECT_FALSE(k.params.head_stage || k.params.kv_loads_first);
  if (detail::tune().rope_kv_rope_pipe == 0) {
    EXPECT_FALSE(k.pipeline) << "kv_rope_kernel";
  }
  // Blocks of about 128 threads (config.h's kKvRopeBlockThreads), or one token's group.
  const int group = k.config.col_threads * k.config.head_lanes;
  EXPECT_LE(k.config.threads, std::max(rotary::kKvRopeBlockThreads, group));
  EXPECT_FALSE(q.k_half);
  EXPECT_EQ(q.problem.Hq, s.Hq);
  EXPECT_EQ(q.problem.Hk, 0);
  EXPECT_EQ(q.params.kv_kind, rotary::KvKind::none);
}

}  // namespace

// rope.kv_split=2 (the op as two launches at every size; by default from 16 MiB,
// test_rope_config.cpp's KvSplitFromSixteenMiB): every shape and variant of run_all, and shapes
// whose k half walks: 67 kv heads of 8 columns (64 head lanes: three lanes take two heads), one
// head of D = 16384 (1024 rotary columns over 512 threads: two each), and of D = 16384 with a
// rotary of 8192 (512 rotary and 1024 tail columns over 512 threads), and D = 9 with a rotary of 8
// (one-element columns: gptj's pairs loaded as two scalars, one tail column). Emulator, and the
// GPU when present.
TEST(RopeKvCacheWriteKernel, SplitMatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  const KvShape walking[] = {{3, 2, 67, 128, 128, 2, 4}, {2, 1, 1, 16384, 16384, 2, 1}, {3, 2, 1, 16384, 8192, 2, 2},
                             {5, 2, 3, 9, 8, 2, 4}};
  ropetest::run_tuned(rng, {kv_split(2)}, [&](Backend b) {
    for (const KvShape& s : kShapes)
      for (const Variant& var : variants()) {
        run_case(rng, s, var, b);
        expect_split(s);
      }
    for (const KvShape& s : walking)
      for (const Variant& var : variants()) {
        run_case(rng, s, var, b);
        expect_split(s);
      }
    // Tokens across many blocks on the GPU (~1000 of 32 tokens), skipped ones among them.
    if (b == Backend::cuda) run_case(rng, {32768, 2, 1, 64, 64, 2048, 16}, variants()[2], b);
  });
  // The walks happen: lanes and columns fewer than the heads and the columns.
  const detail::ScopedTuneOverride tune(kv_split(2));
  run_case(rng, walking[0], variants()[0], Backend::emulator);
  EXPECT_LT(rotary::last_launch().config.head_lanes, 67);
  run_case(rng, walking[2], variants()[0], Backend::emulator);
  EXPECT_LT(rotary::last_launch().config.col_threads, rotary::last_launch().config.rot_cols +
                                                          rotary::last_launch().config.pass_cols);
}

// rope.kv_split=0, and the default below 16 MiB (every emulator shape here): one launch.
TEST(RopeKvCacheWriteKernel, SplitOffAndBelowItsThreshold) {
  TEJAS_SEEDED_TEST_RNG();
  for (const detail::Tune& t : {kv_split(0), detail::Tune{}}) {
    const detail::ScopedTuneOverride tune(t);
    for (const KvShape& s : kShapes) {
      run_case(rng, s, variants()[1], Backend::emulator);
      EXPECT_FALSE(rotary::last_launch().k_half) << "rope.kv_split=" << t.rope_kv_split;
      EXPECT_EQ(detail::last_emulator_reports().size(), 1u);
    }
  }
}

// The split's two launches move the compulsory bytes of their halves (Llama-3-8B-like heads, 4
// tokens, one skipped, e4m3 caches): the q half reads q, the positions and one cos/sin row per
// token and writes q; the k half reads k and v whole (v's skipped token too: its loads go out
// before the slot is known), the positions and cos/sin rows again, the slots and the scales, and
// writes k and the cached tokens' k and v rows. So the split reads T x (rotary x 2 + 8) bytes
// more than the fused kernel (the second half's positions and bf16 cos/sin rows) and, at most,
// the skipped tokens' v. No bank conflicts, no findings; loads and stores at the ideal sectors
// (f32 cos/sin rows are not, in either half as in the fused kernel: half-used sectors that the
// next request finds in L1, test_sectors_at_ideal.cpp).
TEST(RopeKvCacheWriteKernel, SplitMovesOnlyCompulsoryBytes) {
  TEJAS_SEEDED_TEST_RNG();
  for (int pipe : {0, 1}) {
    SCOPED_TRACE(::testing::Message() << "rope.kv_rope_pipe=" << pipe);
    const detail::ScopedTuneOverride tune(split_at_every_size(pipe));
    const KvShape s{4, 8, 2, 128, 128, 2, 16};
    KvBuffers b = ropetest::make_kv_buffers(rng, s, DType::bf16, DType::e4m3, DType::bf16, kMaxPos, 4);
    for (int64_t t = 0; t < s.T; ++t) b.pos.set({t}, static_cast<double>(3 * t + 1));  // distinct
    TEJAS_ASSERT_OK(rope_kv_cache_write(ropetest::backend_ctx(Backend::emulator), b.pos, b.q, b.k, b.v, b.cache,
                                        RopeStyle::neox, b.slots, b.paged()));
    const std::vector<emu::LaunchReport>& reps = detail::last_emulator_reports();
    ASSERT_EQ(reps.size(), 2u) << "two launches";
    const uint64_t cached = s.T - 1, row = s.D * 2;  // bf16 rows; make_kv_buffers skips every 4th token
    const uint64_t cos = s.T * s.rotary * 2, pos = s.T * 8;  // bf16 rows, i64 positions (make_kv_buffers)
    const emu::Counters& q = reps[0].counters;
    EXPECT_TRUE(reps[0].ok()) << reps[0].summary();
    EXPECT_EQ(q.global_bytes_read_unique, s.T * s.Hq * row + cos + pos);
    EXPECT_EQ(q.global_bytes_written_unique, s.T * s.Hq * row);
    const emu::Counters& k = reps[1].counters;
    EXPECT_TRUE(reps[1].ok()) << reps[1].summary();
    EXPECT_EQ(k.global_bytes_read_unique, 2 * s.T * s.Hk * row + cos + pos + s.T * 8 + 2 * 4);
    EXPECT_EQ(k.global_bytes_written_unique, s.T * s.Hk * row + 2 * cached * s.Hk * s.D);  // k, then fp8 rows
    EXPECT_EQ(rotary::last_launch().pipeline, pipe == 1);
    for (const emu::LaunchReport& r : reps) {
      EXPECT_EQ(r.counters.bank_conflict_wavefronts(), 0u);
      // The q half stages q; the persistent k half copies k and v through its slots, each byte once.
      EXPECT_EQ(r.counters.cp_async_bytes, &r == &reps[0] ? s.T * s.Hq * s.rotary * 2 : pipe * 2 * s.T * s.Hk * row);
    }
    // Both halves' loads and stores at the ideal sectors: k and v's 16-byte columns read by
    // consecutive threads (a head's 8 columns: 128 contiguous bytes of each half), the cache rows
    // written the same way.
    for (const emu::LaunchReport& r : reps) {
      EXPECT_EQ(r.counters.excess_load_sectors(), 0u);
      EXPECT_EQ(r.counters.excess_store_sectors(), 0u);
    }
  }
}

// The split's fp8 k half at the hard cases: the double-rounding values at their scale, values on
// code midpoints at extreme and power-of-two scales, and every bf16 / f16 value at k and v scales
// with each clean-multiplier verdict (the k half's 128-thread blocks check their scales, as
// kv_write_kernel's do: test_clean_multiplier.cpp's 0.05, 0.02 and 7 / 128). Positions 0 leave k
// unrotated, so k and v both carry the values into the caches; every code is the exact quotient's.
TEST(RopeKvCacheWriteKernel, SplitFp8CachesRoundTheExactQuotient) {
  TEJAS_SEEDED_TEST_RNG();
  for (int pipe : {0, 1}) {
    SCOPED_TRACE(::testing::Message() << "rope.kv_rope_pipe=" << pipe);
    const detail::ScopedTuneOverride tune(split_at_every_size(pipe));
    const auto run = [&](DType qt, DType cache_dt, const KvShape& s, float k_scale, float v_scale, const auto& fill,
                         bool clean) {
      SCOPED_TRACE(::testing::Message() << dtype_name(qt) << " -> " << dtype_name(cache_dt) << " T=" << s.T
                                        << " scales " << k_scale << ", " << v_scale);
      KvBuffers b = ropetest::make_kv_buffers(rng, s, qt, cache_dt, DType::f32, kMaxPos, 0, k_scale, v_scale);
      fill(b);
      for (int64_t tok = 0; tok < s.T; ++tok) b.pos.set({tok}, 0.0);
      check_on_gpu(b, s);  // before the emulator mutates b (and its launch record is read)
      TEJAS_ASSERT_OK(rope_kv_cache_write(ropetest::backend_ctx(Backend::emulator), b.pos, b.q, b.k, b.v, b.cache,
                                          RopeStyle::neox, b.slots, b.paged()));
      EXPECT_TRUE(rotary::last_launch().k_half);
      EXPECT_EQ(rotary::last_launch().pipeline, pipe == 1) << "D = 16: eligible";
      EXPECT_EQ(rotary::last_launch().params.clean_scales, clean) << "the check planned";
      ropetest::expect_clean_events(b);
      ropetest::check_caches(b, s);
    };
    for (DType qt : {DType::bf16, DType::f16})
      for (DType cache_dt : {DType::e4m3, DType::e5m2}) {
        const ropetest::HardValues h = ropetest::hard_values(qt, cache_dt);
        ASSERT_FALSE(h.values.empty()) << "no value to test: the scan found none for any scale";
        const int64_t T = std::min<int64_t>(64, (static_cast<int64_t>(h.values.size()) + 47) / 48);
        run(qt, cache_dt, {T, 1, 3, 16, 16, T, 1}, h.scale, h.scale,
            [&](KvBuffers& b) { ropetest::fill_hard(b.k, b.v, h.values); }, false);
        for (const auto& [ks, vs] : {std::pair{0.05f, 0.02f}, {0.02f, 0.0546875f}, {0.0546875f, 0.05f}})
          run(qt, cache_dt, {2048, 1, 2, 16, 16, 128, 16}, ks, vs,
              [&](KvBuffers& b) { ropetest::fill_every_value(b.k, b.v, qt); }, true);
        if (qt != DType::bf16) continue;
        for (float scale : {0x1p-149f, 1e-39f, std::bit_cast<float>(0x003C3C3Cu), 0x1p-8f, 0.37f, 0x1p127f, 3.4e38f})
          run(qt, cache_dt, {16, 1, 3, 16, 16, 2, 16}, scale, scale,
              [&](KvBuffers& b) { ropetest::fill_scaled_ties(b.k, b.v, scale, rng); }, false);
      }
    // A partial last block runs every test (as PipelinedFp8CachesAtCleanScales's): 129 tokens in
    // blocks of 64 (2 threads each), the third with one live token; +-3 x 2^-12 at scale 0.05 is
    // written wrong by the first candidate, which a check of the live threads' tests alone would pick.
    run(DType::bf16, DType::e4m3, {129, 1, 2, 16, 16, 9, 16}, 0.05f, 0.05f, fill_first_candidate_misses, true);
    EXPECT_EQ(rotary::last_launch().config.tokens_per_block, 64);
  }
}

// rope.kv_rope_pipe=1 (the split's k half persistent: 3 CTAs on the emulator, so these shapes
// walk several tokens per CTA, skipped tokens among them; rotary == D and 16-byte vectors, both
// styles): every such case plans kv_rope_pipe_kernel; every run_all case runs under the tune too
// (partial rotary and narrower vectors plan kv_rope_kernel). Then the occupancy fallback
// (rotary::without_pipeline, as on a GPU whose query failed): kv_rope_kernel, no shared memory,
// the clean-multiplier check kept. Emulator, and the GPU when present.
TEST(RopeKvCacheWriteKernel, SplitPipelineMatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  const KvShape pipe_shapes[] = {{40, 4, 2, 64, 64, 6, 8}, {29, 8, 2, 128, 128, 4, 16}, {1, 2, 1, 64, 64, 1, 4},
                                 {33, 3, 3, 32, 32, 5, 8}};
  const detail::Tune t = split_at_every_size(1);
  ropetest::run_tuned(rng, {t}, [&](Backend b) {
    int pipelined = 0, cases = 0;
    for (const KvShape& s : pipe_shapes)
      for (const Variant& var : variants()) {
        run_case(rng, s, var, b);
        expect_split(s);
        ++cases;
        pipelined += rotary::last_launch().pipeline;
      }
    EXPECT_EQ(pipelined, cases) << "every one of these shapes pipelines its k half";
    // ~1000 blocks' worth of tokens on the GPU: its CTAs walk tokens there too.
    if (b == Backend::cuda) {
      run_case(rng, {32768, 2, 1, 64, 64, 2048, 16}, variants()[2], b);
      EXPECT_TRUE(rotary::last_launch().k_half && rotary::last_launch().pipeline) << "32768 tokens";
    }
    run_all(rng, b);
  });
  const detail::ScopedTuneOverride tune(t);
  const rotary::ScopedPipelineFallback fallback;
  for (const Variant& var : variants()) {
    run_case(rng, pipe_shapes[1], var, Backend::emulator);
    const rotary::RopeLaunch l = rotary::last_launch();
    EXPECT_TRUE(l.k_half);
    EXPECT_FALSE(l.pipeline);
    EXPECT_EQ(l.smem_bytes, 0u);
  }
}
