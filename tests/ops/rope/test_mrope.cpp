// mrope: the reference against an independent long-double rotation (each pair's angle taken from
// its section's position row), equivalence with rope when the three rows agree, validation rules
// (invalid_argument naming the argument, nothing written), and the kernels (emulator; cuda when
// present) against the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "check/cuda_mem.h"
#include "ops/common/emu_launch.h"
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
using ropetest::reference_ctx;

namespace {

constexpr int64_t kMaxPos = 96;
constexpr int64_t kRows = 3;

// Expected x after M-RoPE, from the definition: pair i in section r rotates by the angle of
// positions[r, t] (cos and sin read from the cache as given), computed in long double.
HostTensor expected(const HostTensor& x, const HostTensor& pos, const HostTensor& cache, const MropeSection& s) {
  const int64_t T = x.shape()[0], H = x.shape()[1], half = cache.shape()[1] / 2;
  HostTensor want(x.dtype(), x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) want.set_bits_flat(i, x.bits_flat(i));
  const int64_t bounds[kRows] = {s.temporal, s.temporal + s.height, half};
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < half; ++i) {
      int64_t r = 0;
      while (i >= bounds[r]) ++r;
      const auto p = static_cast<int64_t>(pos.get({r, t}));
      const long double c = cache.get({p, i}), sn = cache.get({p, half + i});
      for (int64_t h = 0; h < H; ++h) {
        const long double a = x.get({t, h, i}), b = x.get({t, h, i + half});
        want.set({t, h, i}, static_cast<double>(a * c - b * sn));
        want.set({t, h, i + half}, static_cast<double>(b * c + a * sn));
      }
    }
  return want;
}

struct Shape {
  int64_t T, Hq, Hk, D, rotary;
  MropeSection section;
  int64_t pad = 0;  // extra elements per head row of q and k (never read or written)
};
// Qwen2-VL (16/24/24 of 64 pairs); partial rotary; sections not multiples of 8 (vec 2 and 1);
// an empty section (each of the three); T = 1 with 16384 = 128 x 128 hidden; padded head rows,
// 16-byte aligned (pad 8) and not (pad 3: narrower vectors).
const Shape kShapes[] = {
    {5, 4, 2, 128, 128, {16, 24, 24}},   {3, 2, 1, 96, 64, {8, 12, 12}},       {17, 3, 1, 32, 20, {3, 4, 3}},
    {2, 2, 2, 16, 16, {0, 4, 4}},        {3, 2, 1, 32, 32, {8, 0, 8}},         {4, 1, 2, 48, 40, {12, 8, 0}},
    {1, 128, 0, 128, 128, {16, 24, 24}}, {4, 3, 2, 128, 128, {16, 24, 24}, 8}, {3, 2, 1, 96, 64, {8, 12, 12}, 3}};

struct Inputs {
  HostTensor pos, cache, q, k;
};

Inputs make_inputs(check::Rng& rng, const Shape& s, DType qt, DType ct, DType pt) {
  Inputs in{HostTensor(pt, {kRows, s.T}), make_cache(kMaxPos, s.rotary, ct), HostTensor(qt, {s.T, s.Hq, s.D}, s.pad),
            HostTensor(qt, {s.T, s.Hk ? s.Hk : 1, s.D}, s.pad)};
  check::fill_randint(in.pos, rng, 0, kMaxPos - 1);
  check::fill_normal(in.q, rng);
  check::fill_normal(in.k, rng);
  return in;
}

TEST(Mrope, ReferenceMatchesSectionedRotation) {
  TEJAS_SEEDED_TEST_RNG();
  for (const Shape& s : kShapes)
    for (DType qt : {DType::bf16, DType::f32}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(qt) << " T=" << s.T << " D=" << s.D << " rotary=" << s.rotary);
      Inputs in = make_inputs(rng, s, qt, DType::f32, DType::i64);
      const HostTensor want_q = expected(in.q, in.pos, in.cache, s.section);
      const HostTensor want_k = expected(in.k, in.pos, in.cache, s.section);
      TEJAS_ASSERT_OK(mrope(reference_ctx(), in.pos, in.q, s.Hk ? in.k.view() : TensorView{}, in.cache, s.section));
      const check::Tolerance one_rounding{0.0, 0.0, 1};
      auto r = check::compare(in.q, want_q, one_rounding);
      EXPECT_TRUE(r.ok) << "q: " << r.message;
      if (s.Hk) {
        r = check::compare(in.k, want_k, one_rounding);
        EXPECT_TRUE(r.ok) << "k: " << r.message;
      }
    }
}

// Text tokens: the three rows hold one position, so mrope is rope (neox), bit for bit.
TEST(Mrope, EqualRowsAreRope) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t T = 6, H = 3, D = 64;
  const HostTensor cache = make_cache(kMaxPos, D, DType::f32);
  HostTensor pos3(DType::i32, {kRows, T}), pos1(DType::i32, {T}), a(DType::bf16, {T, H, D}), b(DType::bf16, {T, H, D});
  check::fill_randint(pos1, rng, 0, kMaxPos - 1);
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t t = 0; t < T; ++t) pos3.set({r, t}, pos1.get({t}));
  check::fill_normal(a, rng);
  b.copy_from(a);
  TEJAS_ASSERT_OK(mrope(reference_ctx(), pos3, a, TensorView{}, cache, MropeSection{8, 12, 12}));
  TEJAS_ASSERT_OK(rope(reference_ctx(), pos1, b, TensorView{}, cache, RopeStyle::neox));
  EXPECT_TRUE(optest::unchanged(a, optest::bits_of(b)));
}

// ---- validation: one rule each; nothing written --------------------------------------------
struct BadCase {
  const char* name;
  void (*break_it)(TensorView& pos, TensorView& q, TensorView& k, TensorView& cache, MropeSection& s);
  const char* needle;
};

const BadCase kBad[] = {
    {"PositionsRank1", [](TensorView& p, TensorView&, TensorView&, TensorView&, MropeSection&) { p.ndim = 1; p.shape[0] = 4; p.stride[0] = 1; },
     "mrope: positions: expected 2 dimensions"},
    {"PositionsTwoRows", [](TensorView& p, TensorView&, TensorView&, TensorView&, MropeSection&) { p.shape[0] = 2; },
     "mrope: positions: expected dim 0 = 3"},
    {"PositionsDtype", [](TensorView& p, TensorView&, TensorView&, TensorView&, MropeSection&) { p.dtype = DType::f32; },
     "mrope: positions: expected dtype"},
    {"QTokens", [](TensorView&, TensorView& q, TensorView&, TensorView&, MropeSection&) { q.shape[0] = 3; },
     "mrope: q: expected dim 0 = 4"},
    {"SectionSum", [](TensorView&, TensorView&, TensorView&, TensorView&, MropeSection& s) { s.width = 5; },
     "mrope: section: expected three sizes >= 0 summing to rotary_dim / 2 = 8"},
    {"SectionNegative", [](TensorView&, TensorView&, TensorView&, TensorView&, MropeSection& s) { s.temporal = -1; s.height = 7; },
     "mrope: section: expected three sizes >= 0"},
    // Two huge sizes whose int64 sum wraps around to rotary_dim / 2 must not pass.
    {"SectionSumWraps", [](TensorView&, TensorView&, TensorView&, TensorView&, MropeSection& s) {
       s.temporal = INT64_MAX; s.height = INT64_MAX; s.width = 10; },
     "mrope: section: expected three sizes >= 0"},
    {"KDtype", [](TensorView&, TensorView&, TensorView& k, TensorView&, MropeSection&) { k.dtype = DType::f16; },
     "mrope: k: expected dtype bf16 (as q)"},
    {"KIsQ", [](TensorView&, TensorView& q, TensorView& k, TensorView&, MropeSection&) { k = q; },
     "mrope: q: expected no overlap with k"},
    {"CacheRotaryOdd", [](TensorView&, TensorView&, TensorView&, TensorView& c, MropeSection&) { c.shape[1] = 7; },
     "mrope: cos_sin_cache: expected an even rotary_dim"},
};

TEST(MropeValidation, EachRuleRejectedAndNothingWritten) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t T = 4, H = 2, D = 16;
  for (const BadCase& bad : kBad) {
    SCOPED_TRACE(bad.name);
    HostTensor pos(DType::i32, {kRows, T}), q(DType::bf16, {T, H, D}), k(DType::bf16, {T, 1, D});
    const HostTensor cache = make_cache(kMaxPos, D, DType::f32);
    check::fill_randint(pos, rng, 0, kMaxPos - 1);
    check::fill_normal(q, rng);
    check::fill_normal(k, rng);
    const auto qb = optest::bits_of(q), kb = optest::bits_of(k);
    TensorView p = pos.view(), qv = q.view(), kv = k.view(), cv = cache.view();
    MropeSection s{2, 3, 3};
    bad.break_it(p, qv, kv, cv, s);
    for (Backend b : {Backend::reference, Backend::emulator})
      TEJAS_EXPECT_INVALID(mrope(backend_ctx(b), p, qv, kv, cv, s), bad.needle);
    EXPECT_TRUE(optest::unchanged(q, qb));
    EXPECT_TRUE(optest::unchanged(k, kb));
  }
}

TEST(MropeValidation, OutOfRangePositionInAnyRow) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t T = 3, D = 16;
  const HostTensor cache = make_cache(kMaxPos, D, DType::f32);
  HostTensor pos(DType::i64, {kRows, T}), q(DType::f32, {T, 1, D});
  check::fill_randint(pos, rng, 0, kMaxPos - 1);
  pos.set({2, 1}, static_cast<double>(kMaxPos));  // the width row
  check::fill_normal(q, rng);
  const auto before = optest::bits_of(q);
  ExecContext debug = backend_ctx(Backend::emulator);
  debug.debug_checks = true;
  for (const ExecContext& ctx : {reference_ctx(), debug})
    TEJAS_EXPECT_INVALID(mrope(ctx, pos, q, TensorView{}, cache, MropeSection{2, 3, 3}),
                         "mrope: positions: expected values in [0, 96) (cos_sin_cache rows), got 96 at index [2, 1]");
  EXPECT_TRUE(optest::unchanged(q, before));
}

// ---- kernels -------------------------------------------------------------------------------
// *pipelined (when given) counts the cases that ran the pipelined kernel (rope.pipeline).
void kernel_vs_reference(check::Rng& rng, Backend backend, std::span<const Shape> shapes = kShapes,
                         int* pipelined = nullptr) {
  for (const Shape& s : shapes)
    for (DType qt : {DType::bf16, DType::f16, DType::f32})
      for (DType ct : {DType::f32, qt}) {
        SCOPED_TRACE(::testing::Message() << dtype_name(qt) << " cache " << dtype_name(ct) << " T=" << s.T << " Hq="
                                          << s.Hq << " D=" << s.D << " rotary=" << s.rotary << " pad=" << s.pad);
        Inputs in = make_inputs(rng, s, qt, ct, qt == DType::f16 ? DType::i32 : DType::i64);
        HostTensor q_ref(qt, in.q.shape()), k_ref(qt, in.k.shape());
        q_ref.copy_from(in.q);
        k_ref.copy_from(in.k);
        const auto kv = [&](const HostTensor& k) { return s.Hk ? k.view() : TensorView{}; };
        TEJAS_ASSERT_OK(mrope(reference_ctx(), in.pos, q_ref, kv(k_ref), in.cache, s.section));
        ASSERT_NO_FATAL_FAILURE(
            ropetest::rotate_on(backend, in.pos, in.q, in.k, s.Hk > 0, in.cache,
                                [&](const ExecContext& ctx, TensorView pos, TensorView q, TensorView k,
                                    TensorView cos_sin) { return mrope(ctx, pos, q, k, cos_sin, s.section); }));
        if (backend == Backend::emulator && detail::tune().rope_head_stage)
          ropetest::expect_head_stage_bytes(s.T, s.Hq + s.Hk, s.rotary, qt);
        if (pipelined != nullptr) *pipelined += rotary::last_launch().pipeline;
        auto r = ropetest::compare_rotated(in.q, q_ref, RopeStyle::neox, s.rotary);
        EXPECT_TRUE(r.ok) << "q: " << r.message;
        if (s.Hk) {
          r = ropetest::compare_rotated(in.k, k_ref, RopeStyle::neox, s.rotary);
          EXPECT_TRUE(r.ok) << "k: " << r.message;
        }
        EXPECT_TRUE(in.q.padding_intact() && in.k.padding_intact()) << "wrote into head-row padding";
        EXPECT_TRUE(in.q.guards_intact() && in.k.guards_intact()) << "wrote past q or k";
      }
}

TEST(MropeKernel, EmulatorMatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  kernel_vs_reference(rng, Backend::emulator);
}

TEST(MropeKernel, CudaMatchesReference) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  kernel_vs_reference(rng, Backend::cuda);
}

TEST(MropeKernel, UnstagedVariantsMatchReference) {  // rope.head_stage=0, one and two heads (see test_rope_kernel.cpp)
  TEJAS_SEEDED_TEST_RNG();
  ropetest::run_tuned(rng, {ropetest::unstaged(1), ropetest::unstaged(2)},
                      [&](Backend b) { kernel_vs_reference(rng, b); });
}

TEST(MropeKernel, HeadPrefetchVariantMatchesReference) {  // rope.head_prefetch=1, one and two heads
  TEJAS_SEEDED_TEST_RNG();
  ropetest::run_tuned(rng, {ropetest::head_prefetch(1), ropetest::head_prefetch(2)},
                      [&](Backend b) { kernel_vs_reference(rng, b); });
}

TEST(MropeKernel, HeadStageVariantMatchesReference) {  // rope.head_stage=1, one and two heads
  TEJAS_SEEDED_TEST_RNG();
  ropetest::run_tuned(rng, {ropetest::head_stage(1), ropetest::head_stage(2)}, [&](Backend b) {
    ropetest::staged_cases() = 0;
    kernel_vs_reference(rng, b);
    if (b == Backend::emulator) {
      EXPECT_GT(ropetest::staged_cases(), 0) << "the staging kernels must run";
    }
  });
}

// rope.pipeline=1 (persistent CTAs, 3 on the emulator: here each walks several token groups,
// every column reading its own section's position row) changes no result; the shapes of
// kShapes too (most of them plan the default kernels). One and two heads in flight.
TEST(MropeKernel, PipelineVariantMatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  const Shape pipe_shapes[] = {{40, 4, 2, 128, 128, {16, 24, 24}}, {67, 2, 1, 64, 64, {8, 16, 8}},
                               {33, 5, 0, 128, 96, {16, 16, 16}}};
  for (int heads : {1, 2}) {
    detail::Tune t = ropetest::head_stage(heads);
    t.rope_pipeline = 1;
    ropetest::run_tuned(rng, {t}, [&](Backend b) {
      int pipelined = 0;
      kernel_vs_reference(rng, b, pipe_shapes, &pipelined);
      EXPECT_EQ(pipelined, 3 * 3 * 2) << "every dtype and cache dtype pipelines";
      kernel_vs_reference(rng, b);
    });
  }
}

// Qwen2-VL shape, one token: the three position rows each feed their own cache row.
TEST(MropeKernel, EmulatorReadsOneCacheRowPerSection) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t T = 1, Hq = 4, Hk = 4, D = 128;
  const HostTensor cache = make_cache(kMaxPos, D, DType::f32);
  HostTensor pos(DType::i32, {kRows, T}), q(DType::bf16, {T, Hq, D}), k(DType::bf16, {T, Hk, D});
  for (int64_t r = 0; r < kRows; ++r) pos.set({r, 0}, static_cast<double>(10 + 7 * r));  // distinct rows
  check::fill_normal(q, rng);
  check::fill_normal(k, rng);
  const MropeSection sec{16, 24, 24};
  TEJAS_ASSERT_OK(mrope(backend_ctx(Backend::emulator), pos, q, k, cache, sec));
  const emu::LaunchReport& rep = detail::last_emulator_reports().at(0);
  EXPECT_TRUE(rep.ok()) << rep.summary();
  // Each pair's cos and sin come from one row: D / 2 pairs x 2 values x 4 bytes in all.
  const uint64_t qk = (Hq + Hk) * D * 2, cos_sin = D * 4, positions = kRows * 4;
  EXPECT_EQ(rep.counters.global_bytes_read_unique, qk + cos_sin + positions);
  EXPECT_EQ(rep.counters.global_bytes_written_unique, qk);
}

}  // namespace
