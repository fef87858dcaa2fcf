// kv_cache_write (the paged KV-cache write alone): every backend against independent expectations
// - cache rows from the slot arithmetic, fp8 codes of the exact quotient (long double), skipped
// tokens' and untouched rows kept poisoned, k and v unchanged - across dtypes, cache formats and
// shapes with tails (D of 3, 6, 130: the one-element and 4-byte paths) and the widest row (Hk x D =
// 16384); NaN / Inf / out-of-range values under each poison byte; the emulator's counters
// (compulsory bytes, sector-ideal requests, no bank conflicts); validation naming the argument;
// index contents.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "check/cuda_mem.h"
#include "ops/common/emu_launch.h"
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

namespace {

constexpr int64_t kMaxPos = 8;  // make_kv_buffers builds a cos/sin cache kv_cache_write never reads

// {T, Hq (unused), Hk, D, rotary (unused), num_blocks, block_size}.
constexpr KvShape kShapes[] = {{1, 1, 1, 8, 2, 1, 1},
                               {5, 1, 2, 128, 2, 2, 4},
                               {21, 1, 3, 6, 2, 4, 8},
                               {7, 1, 1, 3, 2, 3, 3},
                               {9, 1, 4, 130, 2, 3, 5},
                               {3, 1, 8, 72, 2, 1, 16},
                               {2, 1, 600, 16, 2, 1, 2},  // 600 heads: more than one per head lane
                               // Rows of more vectors than a group has threads, with column counts
                               // that are not powers of two (kv_write_kernel's general loop: 65
                               // 4-byte columns x 100 heads, 9 16-byte columns x 80 heads).
                               {3, 1, 100, 130, 2, 2, 3},
                               {4, 1, 80, 72, 2, 2, 5},
                               // The widest row the issue names: Hk x D = 128 x 128 = 16384.
                               {2, 1, 128, 128, 2, 2, 2}};

// kv_cache_write of b's k and v into b's caches on `backend` (cuda: through device copies, the
// caches downloaded after).
void write_caches(KvBuffers& b, Backend backend) {
  ExecContext ctx;
  ctx.backend = backend;
  if (backend != Backend::cuda) {
    ASSERT_TRUE(kv_cache_write(ctx, b.k, b.v, b.slots, b.paged()).ok());
    return;
  }
  ropetest::DeviceKv d;
  TEJAS_ASSERT_OK(d.upload(b));
  ASSERT_TRUE(kv_cache_write(ctx, d.k.view(), d.v.view(), d.slots.view(), d.paged(b)).ok());
  ASSERT_TRUE(check::device_synchronize().ok());
  d.download(b);  // k and v come back too: run() checks they are unchanged
}

// kv_cache_write of k and v into `cache` on the emulator: the launch's report (nullptr, and a
// failure, if the call failed).
const emu::LaunchReport* emulate_write(const TensorView& k, const TensorView& v, const TensorView& slots,
                                       const PagedKvCache& cache) {
  ExecContext ctx;
  ctx.backend = Backend::emulator;
  const Status st = kv_cache_write(ctx, k, v, slots, cache);
  EXPECT_TRUE(st.ok()) << st.message();
  return st.ok() ? &detail::last_emulator_reports().at(0) : nullptr;
}

// A write's counters: no findings, `read` and `written` unique global bytes, every request
// sector-ideal, no shared-memory bank conflicts (the pipelined kernel stages rows there).
void expect_counters(const emu::LaunchReport& rep, uint64_t read, uint64_t written) {
  EXPECT_TRUE(rep.ok()) << rep.summary();
  EXPECT_EQ(rep.counters.global_bytes_read_unique, read);
  EXPECT_EQ(rep.counters.global_bytes_written_unique, written);
  EXPECT_EQ(rep.counters.excess_load_sectors(), 0u);
  EXPECT_EQ(rep.counters.excess_store_sectors(), 0u);
  EXPECT_EQ(rep.counters.bank_conflict_wavefronts(), 0u);
}

void run(check::Rng& rng, const KvShape& s, DType dt, DType cache_dt, Backend backend) {
  const std::string what = ::testing::PrintToString(std::vector<int64_t>{s.T, s.Hk, s.D, s.num_blocks, s.block_size}) +
                           " " + std::string(dtype_name(dt)) + " -> " + std::string(dtype_name(cache_dt)) + " on " +
                           backend_name(backend);
  SCOPED_TRACE(what);
  KvBuffers b = ropetest::make_kv_buffers(rng, s, dt, cache_dt, DType::f32, kMaxPos, 3);
  b.k_cache.poison();
  b.v_cache.poison();
  const HostTensor k_in = ropetest::gather(b.k.view()), v_in = ropetest::gather(b.v.view());
  write_caches(b, backend);
  ropetest::check_caches(b, s);
  for (int64_t i = 0; i < b.k.numel(); ++i) {
    ASSERT_EQ(b.k.bits_flat(i), k_in.bits_flat(i)) << "k changed";
    ASSERT_EQ(b.v.bits_flat(i), v_in.bits_flat(i)) << "v changed";
  }
  for (const HostTensor* t : {&b.k_cache, &b.v_cache}) EXPECT_TRUE(t->guards_intact());
}

void run_all(check::Rng& rng, Backend backend) {
  for (const KvShape& s : kShapes)
    for (DType dt : {DType::bf16, DType::f16})
      for (DType cache_dt : {dt, DType::e4m3, DType::e5m2}) run(rng, s, dt, cache_dt, backend);
}

TEST(KvCacheWrite, ReferenceMatchesExpectation) {
  TEJAS_SEEDED_TEST_RNG();
  run_all(rng, Backend::reference);
}

TEST(KvCacheWrite, EmulatorMatchesExpectation) {
  TEJAS_SEEDED_TEST_RNG();
  run_all(rng, Backend::emulator);
}

TEST(KvCacheWrite, CudaMatchesExpectation) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  run_all(rng, Backend::cuda);
}

// k and v with their own padded strides (8 and 24 extra elements per head row), and the two
// caches with their own (16 and 40 extra per cache row: distinct head, slot and block strides), so
// a kernel that read or wrote one through the other's strides fails; the default kernel and the
// pipelined one (rope.pipeline=3), on the emulator with 7 tokens per 3 CTAs.
TEST(KvCacheWrite, DistinctStridesForKAndV) {
  TEJAS_SEEDED_TEST_RNG();
  for (int pipeline : {detail::Tune{}.rope_pipeline, 3}) {
    detail::Tune t;
    t.rope_pipeline = pipeline;
    const detail::ScopedTuneOverride tune(t);
    for (DType cache_dt : {DType::bf16, DType::e4m3}) {
      SCOPED_TRACE(::testing::Message() << "rope.pipeline=" << pipeline << " -> " << dtype_name(cache_dt));
      const KvShape s{300, 1, 3, 72, 2, 40, 8};
      KvBuffers b = ropetest::make_kv_buffers(rng, s, DType::bf16, cache_dt, DType::f32, kMaxPos, 3);
      HostTensor k(DType::bf16, {s.T, s.Hk, s.D}, 8), v(DType::bf16, {s.T, s.Hk, s.D}, 24);
      k.copy_from(b.k);
      v.copy_from(b.v);
      HostTensor kc(cache_dt, b.k_cache.shape(), 16), vc(cache_dt, b.v_cache.shape(), 40);
      kc.poison();
      vc.poison();
      const bool fp8 = dtype_is_fp8(cache_dt);
      const PagedKvCache cache{kc.view(), vc.view(), fp8 ? b.k_scale.view() : TensorView{},
                               fp8 ? b.v_scale.view() : TensorView{}};
      ASSERT_NE(emulate_write(k, v, b.slots, cache), nullptr);
      EXPECT_EQ(rotary::last_launch().pipeline, pipeline == 3);
      if (pipeline == 3) {
        EXPECT_GT(rotary::last_launch().config.blocks, rotary::kEmuResidentCtas) << "CTAs walk tokens";
      }
      ropetest::check_cache(kc, k, b.slots, b.k_scale, s, "k_cache");
      ropetest::check_cache(vc, v, b.slots, b.v_scale, s, "v_cache");
      EXPECT_TRUE(k.padding_intact() && v.padding_intact());
      EXPECT_TRUE(kc.padding_intact() && vc.padding_intact());
    }
  }
}

// Llama-3.1-8B's kv heads (8 x 128), e4m3 caches, 6 tokens, every third skipped: the cache rows
// written once (the compulsory writes), the slots and scales read once, every request sector-ideal, no findings. k and v:
// the loads-first kernel (rope.kv_loads_first=1, the default) reads every token's rows once,
// the skipped tokens' too (its loads go out before the slot is known), and prefetches nothing;
// the rope kernel's kv-only path (0) reads the cached tokens' rows only, and prefetches only with
// rope.v_prefetch=1. Each mode must run its own kernel (last_launch).
TEST(KvCacheWrite, EmulatorCounters) {
  TEJAS_SEEDED_TEST_RNG();
  for (int loads_first : {1, 0}) {
    for (int v_prefetch : {0, 1}) {
      detail::Tune tune;  // the defaults, whatever TEJAS_TUNE says; then the variants
      tune.rope_kv_loads_first = loads_first;
      tune.rope_v_prefetch = v_prefetch;
      const detail::ScopedTuneOverride override_tune(tune);
      SCOPED_TRACE(::testing::Message() << "rope.kv_loads_first=" << loads_first << " rope.v_prefetch=" << v_prefetch);
      const KvShape s{6, 1, 8, 128, 2, 2, 16};
      KvBuffers b = ropetest::make_kv_buffers(rng, s, DType::bf16, DType::e4m3, DType::f32, kMaxPos, 3);
      const emu::LaunchReport* rep = emulate_write(b.k, b.v, b.slots, b.paged());
      ASSERT_NE(rep, nullptr);
      EXPECT_EQ(rotary::last_launch().params.kv_loads_first, loads_first == 1);
      const uint64_t cached = 4, row = s.Hk * s.D, read_rows = loads_first ? s.T : cached;
      expect_counters(*rep, 2 * read_rows * row * 2 + s.T * 8 + 2 * 4, 2 * cached * row);
      // rope.v_prefetch=1 (rope kernel): each token's v vectors once (skipped tokens' too); a
      // prefetch moves no bytes.
      EXPECT_EQ(rep->counters.global_prefetches, v_prefetch && !loads_first ? s.T * s.Hk * (s.D / 8) : 0u);
    }
  }
}

// The rope family's tune knobs that reach this op (rope.kv_loads_first=0: the rope kernel's
// kv-only path, with rope.heads and rope.v_prefetch on top) change no result.
TEST(KvCacheWrite, TunedVariantsMatchExpectation) {
  TEJAS_SEEDED_TEST_RNG();
  testsupport::BackendRngs rngs(rng);  // the GPU cases' draws apart from the emulator's
  for (int heads : {1, 2}) {
    detail::Tune t = heads == 2 ? ropetest::two_heads() : detail::Tune{};
    t.rope_v_prefetch = 1;
    t.rope_kv_loads_first = 0;
    const detail::ScopedTuneOverride variants(t);
    SCOPED_TRACE(::testing::Message() << "rope.kv_loads_first=0 rope.heads=" << heads);
    run_all(rng, Backend::emulator);
    if (check::cuda_available()) run_all(rngs(Backend::cuda), Backend::cuda);
  }
}

// fp8 caches hold the exact quotient's code on the values where an f32 division and conversion
// rounds twice (ropetest::double_rounding_values: every bf16 / f16 value scanned for the scale),
// both signs, and at extreme scales (subnormal, tiny with normal reciprocals, near 2^127), for
// both kernels: the loads-first one (its vectors' values tested together by num::near_key, the
// near ones resolved one by one) and the rope kernel's kv-only path. The hard values go in two
// layouts: every element hard, and one hard element per 8-element vector among values far from
// any code midpoint (code values times the scale), so that a vector's filter must find its one
// hard value on its own.
void fp8_hard_values(check::Rng& rng, int loads_first, Backend backend, int pipeline = detail::Tune{}.rope_pipeline) {
  detail::Tune t;
  t.rope_kv_loads_first = loads_first;
  t.rope_pipeline = pipeline;
  const detail::ScopedTuneOverride variant(t);
  constexpr int64_t Hk = 2, D = 8;
  for (DType qt : {DType::bf16, DType::f16}) {
    for (DType cache_dt : {DType::e4m3, DType::e5m2}) {
      const ropetest::HardValues h = ropetest::hard_values(qt, cache_dt);
      const float scale = h.scale;
      const std::vector<double>& hard = h.values;
      ASSERT_FALSE(hard.empty());
      for (bool sparse : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "rope.kv_loads_first=" << loads_first << " " << dtype_name(qt) << " -> "
                                          << dtype_name(cache_dt) << " scale " << scale << ": " << hard.size()
                                          << " values" << (sparse ? ", one per vector" : ""));
        const int64_t per_token = sparse ? Hk : Hk * D;  // hard values per token
        const int64_t T = std::min<int64_t>(64, (static_cast<int64_t>(hard.size()) + per_token - 1) / per_token);
        const KvShape s{T, 1, Hk, D, D, T, 1};
        KvBuffers b = ropetest::make_kv_buffers(rng, s, qt, cache_dt, DType::f32, kMaxPos, 0, scale, scale);
        ropetest::fill_hard(b.k, b.v, hard);
        if (sparse) {
          const double codes[] = {0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0};
          int64_t next = 0;
          for (int64_t i = 0; i < b.k.numel(); ++i) {
            if (i % D == (i / D) % D) {  // the vector's hard element, at a different place in each
              const double x = hard[static_cast<size_t>(next++) % hard.size()];
              b.k.set_flat(i, (i / 3) % 2 ? -x : x);
              b.v.set_flat(i, (i / 5) % 2 ? -x : x);
            } else {
              const double c = codes[rng.randint(0, 8)] * scale * (rng.randint(0, 1) ? 1 : -1);
              b.k.set_flat(i, c);
              b.v.set_flat(i, -c);
            }
          }
        }
        write_caches(b, backend);
        EXPECT_EQ(rotary::last_launch().params.kv_loads_first, loads_first == 1);
        ropetest::check_caches(b, s);
      }
    }
  }
  for (DType cache_dt : {DType::e4m3, DType::e5m2}) {
    for (float scale : {1e-39f, 4.1e-39f, 8.5e-39f, std::bit_cast<float>(0x003C3C3Cu), 1.2e38f, 3e38f, 3.4e38f}) {
      SCOPED_TRACE(::testing::Message() << "rope.kv_loads_first=" << loads_first << " bf16 -> " << dtype_name(cache_dt)
                                        << " scale " << scale);
      const KvShape s{8, 1, Hk, D, D, 8, 1};
      KvBuffers b = ropetest::make_kv_buffers(rng, s, DType::bf16, cache_dt, DType::f32, kMaxPos, 0, scale, scale);
      const double top = cache_dt == DType::e4m3 ? 600.0 : 70000.0;
      for (int64_t i = 0; i < b.k.numel(); ++i) {
        b.k.set_flat(i, static_cast<double>(scale) * rng.uniform(-top, top));
        b.v.set_flat(i, static_cast<double>(scale) * std::ldexp(rng.uniform(-1.0, 1.0), static_cast<int>(rng.randint(-12, 16))));
      }
      b.v.set_flat(0, std::ldexp(1.0, -127));  // 0x003C3C3C: just above an e4m3 midpoint
      write_caches(b, backend);
      ropetest::check_caches(b, s);
    }
  }
}

TEST(KvCacheWrite, Fp8CachesRoundTheExactQuotient) {
  TEJAS_SEEDED_TEST_RNG();
  fp8_hard_values(rng, 1, Backend::emulator);
  fp8_hard_values(rng, 0, Backend::emulator);
}

TEST(KvCacheWrite, CudaFp8CachesRoundTheExactQuotient) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  fp8_hard_values(rng, 1, Backend::cuda);
  fp8_hard_values(rng, 0, Backend::cuda);
}

// Power-of-two scales, the kernels' exact path (no midpoint test: the conversion's own rounding),
// and the fast reciprocal's path beside it: every finite bf16 and f16 value at scale 1 (ties to
// even among them), at 0.37 and at 1 + 2^-23 (not powers of two: the quotients through
// dev::fdividef's reciprocal, which the emulator moves by up to its 2 ulps, must still round as
// the exact quotient), and at each scale of ropetest::kPowerOfTwoScales (the extreme ones, 2^-126
// and below, 2^126 and 2^127, take the scaled divisor) and at the fast reciprocal's range edges
// (1.5 x 2^-125, 1.9 x 2^124) values on code values and exact midpoints and spread past the
// codes' range; both kernels, both fp8 formats, every code the exact quotient's. Blocks of 16
// slots (the block divisor's general path) and, for the scaled values, every fifth token skipped.
void fp8_power_of_two_scales(check::Rng& rng, int loads_first, Backend backend,
                             int pipeline = detail::Tune{}.rope_pipeline) {
  detail::Tune t;
  t.rope_kv_loads_first = loads_first;
  t.rope_pipeline = pipeline;
  const detail::ScopedTuneOverride variant(t);
  for (DType cache_dt : {DType::e4m3, DType::e5m2}) {
    for (DType qt : {DType::bf16, DType::f16}) {
      for (float scale : {1.0f, 0.37f, 0x1.000002p0f}) {
        SCOPED_TRACE(::testing::Message() << "rope.kv_loads_first=" << loads_first << " every " << dtype_name(qt)
                                          << " value -> " << dtype_name(cache_dt) << " at scale " << scale);
        const KvShape s{2048, 1, 2, 16, 16, 128, 16};  // 65536 values per tensor
        KvBuffers b = ropetest::make_kv_buffers(rng, s, qt, cache_dt, DType::f32, kMaxPos, 0, scale, scale);
        ropetest::fill_every_value(b.k, b.v, qt);
        write_caches(b, backend);
        ropetest::check_caches(b, s);
      }
    }
    std::vector<float> scales(std::begin(ropetest::kPowerOfTwoScales), std::end(ropetest::kPowerOfTwoScales));
    scales.push_back(0x1.8p-125f);
    scales.push_back(0x1.e66666p124f);
    for (float scale : scales) {
      SCOPED_TRACE(::testing::Message() << "rope.kv_loads_first=" << loads_first << " bf16 -> " << dtype_name(cache_dt)
                                        << " scale " << scale);
      const KvShape s{20, 1, 2, 8, 8, 2, 16};
      KvBuffers b = ropetest::make_kv_buffers(rng, s, DType::bf16, cache_dt, DType::f32, kMaxPos, 5, scale, scale);
      ropetest::fill_scaled_ties(b.k, b.v, scale, rng);
      write_caches(b, backend);
      EXPECT_EQ(rotary::last_launch().params.kv_loads_first, loads_first == 1);
      ropetest::check_caches(b, s);
    }
  }
}

// Clean multipliers (kernel.cuh's clean_scales, planned for the loads-first and pipelined
// kernels' 256-thread blocks here): every finite bf16 and f16 value (2047 tokens: kv_write_kernel's
// last block has tail threads, which take part in the check and leave; the pipelined kernel's
// partial blocks are PartialBlockRunsEveryScaleTest's) at k and v scales that differ and cover
// each verdict for e4m3 on both (test_clean_multiplier.cpp: 0.05 the second candidate, 0.02 the
// third, 7 / 128 none, so the per-value path; fp8_power_of_two_scales's 0.37 the first), and at
// 0.05 again with the check off (rope.clean_scales=0: the per-value path where its corrections are
// frequent), both fp8 formats, every code the exact quotient's, the check planned where it is on,
// and on the emulator every block's verdicts the host's and each clean cache's vectors stored
// with its multiplier (the report's dev::count_event tallies).
void fp8_clean_scales(check::Rng& rng, Backend backend, int pipeline) {
  struct Case {
    float k, v;
    int check;
  };
  for (DType cache_dt : {DType::e4m3, DType::e5m2}) {
    for (DType qt : {DType::bf16, DType::f16}) {
      for (const Case& c : {Case{0.05f, 0.02f, 1}, Case{0.02f, 0.0546875f, 1}, Case{0.0546875f, 0.05f, 1},
                            Case{0.05f, 0.05f, 0}}) {
        detail::Tune t;
        t.rope_pipeline = pipeline;
        t.rope_clean_scales = c.check;
        const detail::ScopedTuneOverride variant(t);
        SCOPED_TRACE(::testing::Message() << "rope.pipeline=" << pipeline << " rope.clean_scales=" << c.check
                                          << " every " << dtype_name(qt) << " value -> " << dtype_name(cache_dt)
                                          << " at scales k " << c.k << ", v " << c.v);
        const KvShape s{2047, 1, 2, 16, 16, 128, 16};  // >= 65504 values per tensor: every finite one
        KvBuffers b = ropetest::make_kv_buffers(rng, s, qt, cache_dt, DType::f32, kMaxPos, 0, c.k, c.v);
        ropetest::fill_every_value(b.k, b.v, qt);
        write_caches(b, backend);
        EXPECT_EQ(rotary::last_launch().params.clean_scales, c.check == 1);
        if (backend == Backend::emulator) ropetest::expect_clean_events(b);
        ropetest::check_caches(b, s);
      }
    }
  }
}

TEST(KvCacheWrite, Fp8CachesAtCleanScales) {
  TEJAS_SEEDED_TEST_RNG();
  fp8_clean_scales(rng, Backend::emulator, detail::Tune{}.rope_pipeline);
  if (check::cuda_available()) fp8_clean_scales(rng, Backend::cuda, detail::Tune{}.rope_pipeline);
}

// kv_pipe_kernel, and its occupancy fallback (rotary::without_pipeline, forced as on a GPU whose
// query failed: kv_write_kernel, which checks its scales too).
TEST(KvCacheWrite, PipelineVariantAtCleanScales) {
  TEJAS_SEEDED_TEST_RNG();
  testsupport::BackendRngs rngs(rng);
  for (bool fallback : {false, true}) {
    std::optional<rotary::ScopedPipelineFallback> forced;
    if (fallback) forced.emplace();
    fp8_clean_scales(rng, Backend::emulator, 3);
    if (check::cuda_available()) fp8_clean_scales(rngs(Backend::cuda), Backend::cuda, 3);
    EXPECT_EQ(rotary::last_launch().pipeline, !fallback);
  }
}

TEST(KvCacheWrite, Fp8CachesAtPowerOfTwoScales) {
  TEJAS_SEEDED_TEST_RNG();
  fp8_power_of_two_scales(rng, 1, Backend::emulator);
  fp8_power_of_two_scales(rng, 0, Backend::emulator);
}

// A partial last block runs every test of the scale check: 65 tokens in 256-thread blocks of 64
// tokens, so the second block has 4 live threads, and the 252 tests of the e4m3 check are shared
// over all 256 (the others take part before they leave: a thread that left first would not be
// waited for at the barrier, and its tests would silently not run). Every value is one whose
// product with 20 (the first candidate for scale 0.05) lies on a code midpoint with the odd code
// below it, where that candidate rounds up but the exact quotient (just below the midpoint) down:
// +-3 x 2^-12 (20 x = 15 x 2^-10, between codes 7 and 8), the only such bf16 values. A check that
// ran only its live threads' tests (of the four smallest midpoints) would pick that candidate and
// write them wrong. Both kernels that check; the GPU too when present (whose threads really leave).
TEST(KvCacheWrite, PartialBlockRunsEveryScaleTest) {
  TEJAS_SEEDED_TEST_RNG();
  std::vector<double> values;  // bf16 x with 20 x on an e4m3 midpoint above an odd code
  HostTensor one(DType::bf16, {1});
  for (uint32_t bits = 0; bits < 0x8000u; ++bits) {
    one.set_bits_flat(0, bits);
    const double x = one.get_flat(0), t = 20.0 * x;
    if (!(t > 0.0 && t < 448.0)) continue;
    const uint64_t lo = ref::encode(DType::e4m3, t);  // rounds a tie to the even code
    const double a = ref::decode(DType::e4m3, lo), b = ref::decode(DType::e4m3, lo + (t > a ? 1 : -1));
    if (t == (a + b) / 2 && ((t > a ? lo : lo - 1) & 1u)) values.push_back(x);
  }
  ASSERT_FALSE(values.empty());
  for (int pipeline : {detail::Tune{}.rope_pipeline, 3}) {
    detail::Tune t;
    t.rope_pipeline = pipeline;
    const detail::ScopedTuneOverride variant(t);
    SCOPED_TRACE(::testing::Message() << "rope.pipeline=" << pipeline << ", " << values.size() << " values");
    const KvShape s{65, 1, 2, 16, 16, 5, 16};
    KvBuffers b = ropetest::make_kv_buffers(rng, s, DType::bf16, DType::e4m3, DType::f32, kMaxPos, 0, 0.05, 0.05);
    for (int64_t i = 0; i < b.k.numel(); ++i) {
      const double x = values[static_cast<size_t>(i) % values.size()];
      b.k.set_flat(i, x);
      b.v.set_flat(i, -x);
    }
    if (check::cuda_available()) {
      SCOPED_TRACE("cuda");
      KvBuffers g = b;
      ASSERT_NO_FATAL_FAILURE(write_caches(g, Backend::cuda));
      ropetest::check_caches(g, s);
    }
    write_caches(b, Backend::emulator);
    const rotary::RopeLaunch l = rotary::last_launch();
    EXPECT_TRUE(l.params.clean_scales);
    EXPECT_EQ(l.config.threads, 256);
    EXPECT_EQ(l.config.tokens_per_block, 64);
    EXPECT_EQ(ropetest::emulated_blocks(l), 2);
    ropetest::expect_clean_events(b);
    EXPECT_EQ(ropetest::clean_verdict(DType::bf16, DType::e4m3, 0.05f), 1) << "the second candidate";
    ropetest::check_caches(b, s);
  }
}

// kv_cache_write's pipelined kernel (rope.pipeline=3: kv_pipe_kernel): every shape and cache
// dtype of run_all against the expectations (few tokens: one per thread), and two longer runs of
// tokens whose planned blocks outnumber the emulator's 3 CTAs, so each thread walks several
// (every third token skipped); the eligible shapes (16-byte vectors, a token's vectors one per
// thread) planned pipelined and the others not, and (bf16) their occupancy fallback
// (rotary::without_pipeline: kv_write_kernel without shared memory); the fp8 hard values and the power-of-two and
// every-value scans through it (the every-value scans walk tokens too); the GPU too when
// present, with a case of more blocks than one wave. Counters (Llama-3.1-8B's kv heads, 40 tokens): each token's k and v rows
// copied through cp.async exactly once, the skipped tokens' too, the cache rows written once,
// sector-ideal requests, no findings.
TEST(KvCacheWrite, PipelineVariantMatchesExpectation) {
  TEJAS_SEEDED_TEST_RNG();
  const std::vector<Backend> backends = testsupport::kernel_backends();
  testsupport::BackendRngs rngs(rng);
  for (Backend backend : backends) {
    detail::Tune t;
    t.rope_pipeline = 3;
    const detail::ScopedTuneOverride tune(t);
    std::vector<KvShape> shapes(std::begin(kShapes), std::end(kShapes));
    const KvShape walks[] = {{200, 1, 2, 64, 2, 25, 8}, {2000, 1, 1, 8, 2, 290, 7}};
    shapes.insert(shapes.end(), std::begin(walks), std::end(walks));
    if (backend == Backend::cuda) shapes.push_back({65536, 1, 1, 64, 2, 8192, 16});
    for (const KvShape& s : shapes) {
      const bool eligible = s.D % 8 == 0 && s.Hk * (s.D / 8) <= 512;
      for (DType dt : {DType::bf16, DType::f16})
        for (DType cache_dt : {dt, DType::e4m3, DType::e5m2}) {
          run(rngs(backend), s, dt, cache_dt, backend);
          EXPECT_EQ(rotary::last_launch().pipeline, eligible)
              << "T " << s.T << " Hk " << s.Hk << " D " << s.D << " on " << backend_name(backend);
          if (eligible && dt == DType::bf16) {  // the occupancy fallback: kv_write_kernel, no shared memory
            const rotary::ScopedPipelineFallback fallback;
            run(rngs(backend), s, dt, cache_dt, backend);
            const rotary::RopeLaunch l = rotary::last_launch();
            EXPECT_FALSE(l.pipeline);
            EXPECT_TRUE(l.params.kv_loads_first);
            EXPECT_EQ(l.smem_bytes, 0u);
          }
          if (backend == Backend::emulator && s.T >= 200) {
            EXPECT_GT(rotary::last_launch().config.blocks, rotary::kEmuResidentCtas) << "T " << s.T << ": CTAs walk tokens";
          }
        }
    }
  }
  for (Backend backend : backends) {
    fp8_hard_values(rngs(backend), 1, backend, 3);
    fp8_power_of_two_scales(rngs(backend), 1, backend, 3);
  }
  detail::Tune t;
  t.rope_pipeline = 3;
  const detail::ScopedTuneOverride tune(t);
  const KvShape s{40, 1, 8, 128, 2, 4, 16};
  KvBuffers b = ropetest::make_kv_buffers(rng, s, DType::bf16, DType::e4m3, DType::f32, kMaxPos, 3);
  const emu::LaunchReport* rep = emulate_write(b.k, b.v, b.slots, b.paged());
  ASSERT_NE(rep, nullptr);
  ASSERT_TRUE(rotary::last_launch().pipeline);
  ropetest::check_caches(b, s);
  const int64_t cached = ropetest::cached_tokens(b);
  const uint64_t row_bytes = s.Hk * s.D * 2;
  EXPECT_LT(cached, s.T) << "some tokens skipped";
  EXPECT_EQ(rep->counters.cp_async_bytes, 2 * s.T * row_bytes);
  expect_counters(*rep, 2 * s.T * row_bytes + s.T * 8 + 2 * 4, 2 * static_cast<uint64_t>(cached) * s.Hk * s.D);
}

// Rows of more vectors than a token's group has threads (the long shapes of kShapes) run
// kv_write_kernel's general loop: several k and v vectors per thread, split by the vector index.
TEST(KvCacheWrite, LongRowsTakeTheGeneralLoop) {
  TEJAS_SEEDED_TEST_RNG();
  for (const KvShape& s : {kShapes[7], kShapes[8]}) {
    run(rng, s, DType::bf16, DType::e4m3, Backend::emulator);
    const rotary::RopeLaunch l = rotary::last_launch();
    EXPECT_TRUE(l.params.kv_loads_first);
    EXPECT_LT(int64_t{l.config.col_threads} * l.config.head_lanes, s.Hk * (s.D / l.config.vec)) << "Hk " << s.Hk << " D " << s.D;
  }
}

// NaN, +-Inf and values past the fp8 range in k and v: caches in k's dtype receive the bits;
// fp8 caches NaN codes (sign unspecified) and saturated +-max codes, as the reference writes.
// On the default kernel (rope.pipeline=1: kv_write_kernel) and the pipelined one
// (rope.pipeline=3: kv_pipe_kernel), the GPU too when present, under
// each poison byte: the default 0xFF is a NaN in every cache dtype, so an unwritten element
// would pass there.
TEST(KvCacheWrite, NonFiniteValuesAsReference) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN(), kInf = std::numeric_limits<double>::infinity();
  const KvShape s{3, 1, 2, 64, 2, 2, 4};  // 8 slots, every token cached; 16 vectors of 8 per token
  const std::vector<Backend> backends = testsupport::kernel_backends();
  testsupport::BackendRngs rngs(rng);
  for (int pipeline : {1, 3}) {
    detail::Tune t;
    t.rope_pipeline = pipeline;
    const detail::ScopedTuneOverride tune(t);
    testsupport::for_each_poison([&] {
      for (Backend backend : backends)
        for (DType dt : {DType::bf16, DType::f16})
          for (DType cache_dt : {dt, DType::e4m3, DType::e5m2}) {
            SCOPED_TRACE(::testing::Message() << dtype_name(dt) << " -> " << dtype_name(cache_dt) << " on "
                                              << backend_name(backend) << " rope.pipeline=" << pipeline);
            KvBuffers b = ropetest::make_kv_buffers(rngs(backend), s, dt, cache_dt, DType::f32, kMaxPos, 0);
            for (int64_t tok = 0; tok < s.T; ++tok) {
              b.k.set({tok, 0, 1 + tok}, kNaN);
              b.k.set({tok, 1, 7}, kInf);
              b.v.set({tok, 0, 2}, -kInf);
              b.v.set({tok, 1, 60 - tok}, kNaN);
              b.v.set({tok, 1, 9}, tok % 2 ? -6e4 : 6e4);  // finite in f16 / bf16; past fp8's max x 0.02
            }
            KvBuffers want = b;
            TEJAS_ASSERT_OK(kv_cache_write(ropetest::reference_ctx(), want.k, want.v, want.slots, want.paged()));
            write_caches(b, backend);
            if (backend == Backend::emulator) {
              EXPECT_EQ(rotary::last_launch().pipeline, pipeline == 3);
            }
            for (auto [got, exp, name] :
                 {std::tuple{&b.k_cache, &want.k_cache, "k_cache"}, {&b.v_cache, &want.v_cache, "v_cache"}}) {
              int bad = 0;
              for (int64_t i = 0; i < got->numel() && bad < 5; ++i) {
                const uint64_t g = got->bits_flat(i), w = exp->bits_flat(i);
                if (g == w || (std::isnan(got->get_flat(i)) && std::isnan(exp->get_flat(i)))) continue;
                ++bad;
                ADD_FAILURE() << name << " element " << i << ": got 0x" << std::hex << g << " want 0x" << w;
              }
              EXPECT_TRUE(got->guards_intact()) << name;
            }
            // The reference's rules, stated: NaN stays NaN, Inf and 6e4 saturate (fp8) or copy.
            const double big = cache_dt == dt ? kInf : cache_dt == DType::e4m3 ? 448.0 : 57344.0;
            for (int64_t tok = 0; tok < s.T; ++tok) {
              const auto slot = static_cast<int64_t>(b.slots.get({tok}));
              const int64_t blk = slot / s.block_size, off = slot % s.block_size;
              EXPECT_TRUE(std::isnan(b.k_cache.get({blk, off, 0, 1 + tok}))) << tok;
              EXPECT_TRUE(std::isnan(b.v_cache.get({blk, off, 1, 60 - tok}))) << tok;
              EXPECT_EQ(b.k_cache.get({blk, off, 1, 7}), big) << tok;
              EXPECT_EQ(b.v_cache.get({blk, off, 0, 2}), -big) << tok;
              if (cache_dt != dt) {
                EXPECT_EQ(b.v_cache.get({blk, off, 1, 9}), tok % 2 ? -big : big) << tok;
              }
            }
          }
    });
  }
}

TEST(KvCacheWrite, CudaFp8CachesAtPowerOfTwoScales) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  fp8_power_of_two_scales(rng, 1, Backend::cuda);
  fp8_power_of_two_scales(rng, 0, Backend::cuda);
}

// One rule per case: the call fails naming the argument, and no cache byte is written.
TEST(KvCacheWrite, InvalidArgumentsNamedAndNothingWritten) {
  TEJAS_SEEDED_TEST_RNG();
  const KvShape s{4, 1, 2, 16, 2, 2, 4};
  KvBuffers b = ropetest::make_kv_buffers(rng, s, DType::bf16, DType::e4m3, DType::f32, kMaxPos, 0);
  b.k_cache.poison();
  b.v_cache.poison();
  const PagedKvCache good = b.paged();
  HostTensor k32(DType::f32, {s.T, s.Hk, s.D}), v_short(DType::bf16, {s.T, s.Hk, s.D - 2});
  HostTensor slots32(DType::i32, {s.T}), slots_short(DType::i64, {s.T - 1});
  HostTensor kc_heads(DType::e4m3, {s.num_blocks, s.block_size, s.Hk + 1, s.D});
  PagedKvCache no_scale = good, bad_heads = good, overlap = good;
  no_scale.k_scale = TensorView{};
  bad_heads.k_cache = kc_heads.view();
  overlap.v_cache = good.k_cache;  // both caches the same bytes
  // A head dim past the kernels' 32-bit column count: a view only, rejected before any access.
  TensorView huge_d = b.k.view();
  huge_d.shape[2] = (int64_t{1} << 24) + 8;
  huge_d.stride[1] = huge_d.shape[2];
  huge_d.stride[0] = huge_d.shape[2] * s.Hk;
  // Head counts past 2^24 (k and v one view: only validated).
  TensorView many_heads = b.k.view();
  many_heads.shape[1] = (int64_t{1} << 24) + 1;
  many_heads.stride[0] = many_heads.shape[1] * s.D;
  // k as a matrix, an empty head dim, v in another dtype, k's elements strided (not contiguous:
  // a view reaching past k's storage, rejected before any access).
  TensorView k2 = b.k.view(), k_no_d = b.k.view(), k_strided = b.k.view();
  k2.ndim = 2;
  k_no_d.shape[2] = 0;
  k_strided.stride[2] = 2;
  k_strided.stride[1] = 2 * s.D;
  k_strided.stride[0] = 2 * s.D * s.Hk;
  HostTensor v16(DType::f16, {s.T, s.Hk, s.D}), slots2(DType::i64, {s.T, 1});
  // Caches of block size 0; a k cache over k's own bytes; a v cache over the slot mapping's.
  HostTensor kc_empty(DType::e4m3, {s.num_blocks, 0, s.Hk, s.D}), vc_empty(DType::e4m3, {s.num_blocks, 0, s.Hk, s.D});
  PagedKvCache empty_blocks = good, over_k = good, over_slots = good;
  empty_blocks.k_cache = kc_empty.view();
  empty_blocks.v_cache = vc_empty.view();
  over_k.k_cache = TensorView::contiguous(b.k.view().data, DType::e4m3, {2, 4, s.Hk, s.D});  // 256 bytes = k's
  HostTensor shared(DType::u8, {2 * s.block_size * s.Hk * s.D});  // slot mapping, then cache bytes over it
  TensorView slots_in_shared = TensorView::contiguous(shared.view().data, DType::i64, {s.T});
  for (int64_t t = 0; t < s.T; ++t) static_cast<int64_t*>(slots_in_shared.data)[t] = t;
  over_slots.v_cache = TensorView::contiguous(shared.view().data, DType::e4m3, {2, 4, s.Hk, s.D});
  const auto k_before = optest::bits_of(b.k), v_before = optest::bits_of(b.v);
  ExecContext ctx;
  ctx.backend = Backend::emulator;
  struct Case {
    Status status;
    const char* prefix;  // the message's start: the op, the argument, what was expected
  };
  const Case cases[] = {
      {kv_cache_write(ctx, TensorView{}, b.v, b.slots, good), "kv_cache_write: k: expected a tensor"},
      {kv_cache_write(ctx, k32, b.v, b.slots, good), "kv_cache_write: k: expected dtype bf16 or f16"},
      {kv_cache_write(ctx, k2, k2, b.slots, good), "kv_cache_write: k: expected 3 dimensions"},
      {kv_cache_write(ctx, k_no_d, k_no_d, b.slots, good), "kv_cache_write: k: expected dim 2 >= 1"},
      {kv_cache_write(ctx, many_heads, many_heads, b.slots, good),
       "kv_cache_write: k: expected at most 16777216 heads"},
      {kv_cache_write(ctx, huge_d, huge_d, b.slots, good), "kv_cache_write: k: expected a head dim (dim 2) of at most"},
      {kv_cache_write(ctx, k_strided, b.v, b.slots, good), "kv_cache_write: k: expected a contiguous"},
      {kv_cache_write(ctx, b.k, v_short, b.slots, good), "kv_cache_write: v: expected"},
      {kv_cache_write(ctx, b.k, v16, b.slots, good), "kv_cache_write: v: expected dtype bf16 (as k)"},
      {kv_cache_write(ctx, b.k, b.v, slots32, good), "kv_cache_write: slot_mapping: expected dtype i64"},
      {kv_cache_write(ctx, b.k, b.v, slots2, good), "kv_cache_write: slot_mapping: expected 1 dimensions"},
      {kv_cache_write(ctx, b.k, b.v, slots_short, good), "kv_cache_write: slot_mapping: expected dim 0 = 4"},
      {kv_cache_write(ctx, b.k, b.v, b.slots, no_scale), "kv_cache_write: k_scale: expected a tensor"},
      {kv_cache_write(ctx, b.k, b.v, b.slots, bad_heads), "kv_cache_write: k_cache: expected dim 2 = 2 (k's heads)"},
      {kv_cache_write(ctx, b.k, b.v, b.slots, empty_blocks), "kv_cache_write: k_cache: expected dim 1 >= 1"},
      {kv_cache_write(ctx, b.k, b.v, b.slots, overlap), "kv_cache_write: k_cache: expected no overlap with v_cache"},
      {kv_cache_write(ctx, b.k, b.v, b.slots, over_k), "kv_cache_write: k_cache: expected no overlap with k"},
      {kv_cache_write(ctx, b.k, b.v, slots_in_shared, over_slots),
       "kv_cache_write: v_cache: expected no overlap with slot_mapping"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.status.code(), StatusCode::invalid_argument) << c.prefix << ": " << c.status.message();
    EXPECT_EQ(c.status.message().rfind(c.prefix, 0), 0u) << "want " << c.prefix << "\ngot  " << c.status.message();
  }
  for (const HostTensor* t : {&b.k_cache, &b.v_cache, &kc_empty, &vc_empty})
    for (int64_t i = 0; i < t->numel(); ++i) ASSERT_EQ(t->bits_flat(i), t->poison_code()) << "written on error";
  for (int64_t i = 0; i < 2 * 4 * s.Hk * s.D; ++i)  // the slot mapping's 32 bytes, then the poison
    ASSERT_EQ(shared.bits_flat(i), i < 32 ? (i % 8 == 0 ? static_cast<uint64_t>(i / 8) : 0u) : shared.poison_code())
        << "shared byte " << i;
  EXPECT_TRUE(optest::unchanged(b.k, k_before) && optest::unchanged(b.v, v_before)) << "k or v written";
  EXPECT_TRUE(b.k.guards_intact() && shared.guards_intact() && kc_empty.guards_intact() && vc_empty.guards_intact());
}

// A slot beyond the cache or repeated, and a non-positive scale: rejected by the reference always
// and by the kernel backends in debug-check mode, naming the argument, before any write.
TEST(KvCacheWrite, IndexContentsChecked) {
  TEJAS_SEEDED_TEST_RNG();
  const KvShape s{4, 1, 2, 16, 2, 2, 4};
  for (Backend backend : {Backend::reference, Backend::emulator}) {
    for (int c = 0; c < 3; ++c) {
      KvBuffers b = ropetest::make_kv_buffers(rng, s, DType::bf16, DType::e4m3, DType::f32, kMaxPos, 0);
      b.k_cache.poison();
      const char* name = "slot_mapping";
      if (c == 0) b.slots.set({1}, static_cast<double>(s.num_blocks * s.block_size));  // beyond the cache
      if (c == 1) b.slots.set({2}, b.slots.get({0}));                                  // repeated
      if (c == 2) b.k_scale.set_flat(0, 0.0), name = "k_scale";
      ExecContext ctx;
      ctx.backend = backend;
      ctx.debug_checks = true;
      const Status st = kv_cache_write(ctx, b.k, b.v, b.slots, b.paged());
      EXPECT_EQ(st.code(), StatusCode::invalid_argument) << backend_name(backend) << " case " << c;
      EXPECT_NE(st.message().find(name), std::string::npos) << st.message();
      for (int64_t i = 0; i < b.k_cache.numel(); ++i) ASSERT_EQ(b.k_cache.bits_flat(i), b.k_cache.poison_code());
    }
  }
}

}  // namespace
