// The norm.warp_items variant (TEJAS_TUNE; norm_warp_pipe_kernel): the pipelined rows of at most
// N 16-byte vectors per lane (default 8: H <= 2048) go one warp per row, CTAs of 4 warps walking
// the rows with 1 or 2 rows ahead in shared memory. On the emulator (kEmuResidentCtas = 3 CTAs,
// 12 warps) every case must match the reference as the other kernels do (kernel_harness.h's
// rules), with T above 12 so that warps walk several rows and reuse their buffers, and which
// kernel runs follows the key (the bytes moved: NormPipelineKernel.CopiesEachRowOnce). cuda: the
// same cases, sized from the kernel's resident CTAs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "ops/norm/kernel_cases.h"
#include "check/cuda_mem.h"
#include "ops/norm/launch.h"
#include "runtime/tune.h"
#include "support/seed.h"

using namespace tejas;
using namespace tejas::normtest;
using check::HostTensor;

namespace {

detail::Tune warp_tune(int stages, int items) {
  detail::Tune t;
  t.norm_pipeline = stages;
  t.norm_pipeline_fp8 = stages;
  t.norm_warp_items = items;
  return t;
}

// Which kernel the last launch ran: the warp-row pipeline at `stages`, or not.
void expect_warp_pipeline(bool taken, int stages, const std::string& what) {
  const norm::NormConfig c = norm::last_config();
  if (taken) {
    EXPECT_TRUE(c.warp_per_row && c.pipeline_stages == stages && c.threads == norm::kWarpPipeThreads)
        << what << ": " << norm::describe(c);
  } else {
    EXPECT_FALSE(c.warp_per_row && c.pipeline_stages > 0) << what << ": " << norm::describe(c);
  }
}

struct Shape {
  int64_t T, H, pad;
};

// H: one vector (lane 0 alone), 33 vectors (a second item of one lane), the default kernel's
// warp-per-row size (one whole item), SigLIP's 1152 (4.5 items: the last half a warp), 2048 padded
// (8 items, the default key's largest). T > 12 (the emulator's warps), not a multiple of them:
// 14-31 rows walk 2-3 per warp (at S = 1 the second and third reuse a buffer); 61 and 64, 5-6 per
// warp, so that at S = 2 the fourth row and after refill buffers too.
constexpr Shape kShapes[] = {{25, 8, 0},     {29, 264, 0}, {26, 256, 0}, {14, 1152, 0},
                             {31, 2048, 8}, {61, 8, 0},   {64, 264, 0}};

std::vector<NormCase> cases_for(DType x, const Shape& s) {
  std::vector<NormCase> v;
  v.push_back({x, x, x, s.T, s.H, s.pad});  // rms_norm
  NormCase f{x, x, x, s.T, s.H, s.pad};
  f.fused = true;
  for (DType res : {DType::bf16, DType::f16}) {  // packed (same dtype) and per-element adds
    f.res = res;
    v.push_back(f);
  }
  return v;
}

// Each case on the emulator at one and two rows ahead (both keys, the default 8 items), and the
// warp-row kernel checked to have run it.
void check_at_both_depths(const std::vector<NormCase>& cases, check::Rng& rng) {
  for (int stages : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << "norm.pipeline=norm.pipeline_fp8=" << stages);
    const detail::ScopedTuneOverride variant(warp_tune(stages, 8));
    for (const NormCase& c : cases) {
      check_norm_case(Backend::emulator, c, rng);
      expect_warp_pipeline(true, stages, describe(c));
    }
  }
}

TEST(NormWarpPipelineKernel, MatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  std::vector<NormCase> cases;
  for (DType x : {DType::bf16, DType::f16})
    for (const Shape& s : kShapes)
      for (const NormCase& c : cases_for(x, s)) cases.push_back(c);
  check_at_both_depths(cases, rng);
}

// fp8 outputs (dynamic: a second pass for max |y|; static), rms_norm and fused, and in place.
TEST(NormWarpPipelineKernel, Fp8OutputsAndInPlace) {
  TEJAS_SEEDED_TEST_RNG();
  std::vector<NormCase> cases;
  for (Fp8ScaleMode m : {Fp8ScaleMode::dynamic_per_token, Fp8ScaleMode::static_per_tensor})
    for (bool fused : {false, true}) {
      NormCase c{DType::bf16, DType::bf16, DType::e4m3, 27, 1152, 0};
      c.mode = m;
      c.fused = fused;
      cases.push_back(c);
    }
  NormCase in_place{DType::f16, DType::f16, DType::f16, 23, 2048, 0};
  in_place.in_place = true;
  cases.push_back(in_place);
  check_at_both_depths(cases, rng);
}

// The key's reach: rows of at most N vectors per lane. 2056 (257 vectors, 9 per lane) stays on
// the CTA-per-row pipeline at the default 8 and goes by warp at 9; 4096 (16 per lane) at 16, the
// largest; 0 turns the variant off (the CTA-per-row pipeline, or the default kernel for the rows
// it does not take: H <= 256).
TEST(NormWarpPipelineKernel, ItemsLimitAndOff) {
  TEJAS_SEEDED_TEST_RNG();
  struct Case {
    int64_t T, H;
    int items;
    bool warp;
  };
  const Case list[] = {{17, 2056, 8, false}, {17, 2056, 9, true}, {15, 4096, 16, true}, {15, 4096, 15, false},
                       {29, 264, 0, false},  {26, 256, 0, false}};
  for (const Case& k : list) {
    const detail::ScopedTuneOverride variant(warp_tune(1, k.items));
    for (bool fused : {false, true}) {
      NormCase c{DType::bf16, DType::bf16, DType::bf16, k.T, k.H, 0};
      c.fused = fused;
      check_norm_case(Backend::emulator, c, rng);
      const std::string what = describe(c) + " norm.warp_items=" + std::to_string(k.items);
      expect_warp_pipeline(k.warp, 1, what);
      if (!k.warp) {  // the CTA-per-row pipeline where it applies (not the warp-per-row rows)
        EXPECT_EQ(norm::last_config().pipeline_stages, k.H > 256 ? 1 : 0) << what;
      }
    }
  }
}

// The residual in the other 16-bit dtype (the per-element add; x's slots then hold the sum in the
// residual's dtype) at the edges: exact cancellation to +0, -0 + -0, sums past the residual's
// largest value (Inf stored), +Inf + -Inf and NaN operands (NaN), subnormal sums of the residual,
// and random values; the stored residual equal to the reference's (NaN where NaN), the output
// within 1 ulp (NaN and infinities where the reference has them). Rows 0-2 hold the edges, T = 29
// walks the emulator's warps.
void run_mixed_edges(Backend b, check::Rng& rng, int64_t T) {
  for (DType x_dt : {DType::bf16, DType::f16}) {
    const DType r_dt = x_dt == DType::bf16 ? DType::f16 : DType::bf16;
    SCOPED_TRACE(::testing::Message() << "x " << dtype_name(x_dt) << " residual " << dtype_name(r_dt) << " T=" << T);
    const int64_t H = 264;
    HostTensor x(x_dt, {T, H}), w(x_dt, {H}), res_ref(r_dt, {T, H}), res_got(r_dt, {T, H});
    HostTensor out_ref(x_dt, {T, H}), out_got(x_dt, {T, H});
    fill_rows(x, rng);
    fill_rows(res_ref, rng);
    check::fill_normal(w, rng, 1.0, 0.5);
    const double inf = std::numeric_limits<double>::infinity();
    const double r_big = r_dt == DType::f16 ? 65504.0 : 3.3895313892515355e38;  // the residual's largest
    const double r_tiny = r_dt == DType::f16 ? 0x1p-24 : 0x1p-133;             // its smallest subnormal
    for (int64_t h = 0; h < H; ++h) {
      x.set({1, h}, 0.0);  // row 1: +-0 and subnormal sums, so its rms is tiny but finite
      res_ref.set({1, h}, (h % 2 ? 3 : 1) * r_tiny);
    }
    x.set({0, 0}, 1.5), res_ref.set({0, 0}, -1.5);  // +0
    x.set({1, 1}, -0.0), res_ref.set({1, 1}, -0.0);  // -0
    x.set({2, 2}, r_big), res_ref.set({2, 2}, r_big);  // Inf stored: the row's rms is Inf
    x.set({0, 3}, inf), res_ref.set({0, 3}, -inf);  // NaN
    x.set({0, 4}, std::numeric_limits<double>::quiet_NaN());
    res_got.copy_from(res_ref);
    auto call = [](const ExecContext& ctx, const std::vector<TensorView>& v) {
      return fused_add_rms_norm(ctx, v[0], v[1], v[2], kEps, v[3]);
    };
    TEJAS_ASSERT_OK(run_backend(Backend::reference, {&x, &res_ref, &w, &out_ref}, call));
    TEJAS_ASSERT_OK(run_backend(b, {&x, &res_got, &w, &out_got}, call));
    expect_warp_pipeline(true, 1, "mixed dtypes");
    ASSERT_TRUE(std::isnan(res_ref.get({0, 3})) && std::isinf(res_ref.get({2, 2})) && res_ref.get({0, 0}) == 0.0 &&
                std::signbit(res_ref.get({1, 1})) && std::isnan(out_ref.get({0, 5})))
        << "the reference no longer makes the values this test is about";
    auto r = check::compare(res_got, res_ref, check::Tolerance{});  // equal values, NaN where NaN
    EXPECT_TRUE(r.ok) << "residual: " << r.message;
    for (int64_t h = 0; h < H; ++h)
      ASSERT_EQ(res_got.bits_flat(H + h), res_ref.bits_flat(H + h)) << "row 1's signed zeros and subnormals, [1, " << h << "]";
    r = check::compare(out_got, out_ref, tolerance_for(x_dt));
    EXPECT_TRUE(r.ok) << "out: " << r.message;
  }
}

TEST(NormWarpPipelineKernel, MixedDtypeResidualEdges) {
  TEJAS_SEEDED_TEST_RNG();
  const detail::ScopedTuneOverride variant(warp_tune(1, 8));
  run_mixed_edges(Backend::emulator, rng, 29);
}

// norm::ScopedWarpResidentCap (the GPU tests' way to make warps walk rows) caps the persistent
// grid on the emulator too: 2 CTAs, 8 warps, 3-4 rows each at T = 29; a cap above the emulator's
// 3 leaves 3.
TEST(NormWarpPipelineKernel, ResidentCapShrinksTheGrid) {
  TEJAS_SEEDED_TEST_RNG();
  const detail::ScopedTuneOverride variant(warp_tune(2, 8));
  NormCase c{DType::bf16, DType::bf16, DType::bf16, 29, 1152, 0};
  c.fused = true;
  for (int64_t cap : {2, 8}) {
    const norm::ScopedWarpResidentCap scoped(cap);
    check_norm_case(Backend::emulator, c, rng);
    expect_warp_pipeline(true, 2, describe(c));
    EXPECT_EQ(norm::last_config().grid, cap < norm::kEmuResidentCtas ? cap : norm::kEmuResidentCtas);
    EXPECT_EQ(norm::last_resident_ctas(), cap < norm::kEmuResidentCtas ? cap : norm::kEmuResidentCtas);
  }
}

// Short T (below 2 x the resident CTAs) runs the default kernel, as the CTA pipeline does.
TEST(NormWarpPipelineKernel, ShortRunsTheDefaultKernel) {
  TEJAS_SEEDED_TEST_RNG();
  const detail::ScopedTuneOverride variant(warp_tune(1, 8));
  for (int64_t T : {1, 5}) {
    NormCase c{DType::bf16, DType::bf16, DType::bf16, T, 1152, 0};
    check_norm_case(Backend::emulator, c, rng);
    EXPECT_EQ(norm::last_config().pipeline_stages, 0) << describe(c);
  }
}

// Bytes moved (each row copied once, the compulsory bytes, whole sectors, no bank conflicts):
// NormPipelineKernel.CopiesEachRowOnce runs its warp-row cases.

// The launch shape: 4-warp CTAs, grid = the resident CTAs or fewer, the buffers' shared memory,
// the config line; the CTA-per-row pipeline where T < 2 x the warp kernel's resident CTAs.
TEST(NormWarpPipelineKernel, PlanUsesResidentCtasAndBuffers) {
  const detail::ScopedTuneOverride variant(warp_tune(2, 8));
  HostTensor x(DType::bf16, {100, 1152}), res(DType::bf16, {100, 1152}), out(DType::bf16, {100, 1152}),
      w(DType::bf16, {1152});
  norm::NormArgs a{x.view(), res.view(), w.view(), out.view(), TensorView{}, kEps, norm::OutKind::same};
  norm::NormLaunch l = norm::plan_norm(a);
  norm::finish_plan("fused_add_rms_norm", 40, &l, 20);
  EXPECT_EQ(l.config.pipeline_stages, 2);
  EXPECT_TRUE(l.config.warp_per_row);
  EXPECT_TRUE(l.params.warp_per_row);
  EXPECT_EQ(l.params.pipeline_stages, 2);
  EXPECT_EQ(l.config.threads, 128);
  EXPECT_EQ(l.config.grid, 20);
  EXPECT_EQ(norm::last_resident_ctas(), 20);
  // 4 warps x 3 buffers x 2 tensors x 5 items x 32 lanes x 16 bytes.
  EXPECT_EQ(l.smem_bytes, static_cast<size_t>(4 * 3 * 2 * 5 * 32 * 16));
  EXPECT_NE(norm::describe(l.config).find("persistent CTAs of 4 warps, a warp per row (2 row(s) ahead by cp.async), grid 20"),
            std::string::npos)
      << norm::describe(l.config);
  norm::NormLaunch few = norm::plan_norm(a);
  norm::finish_plan("fused_add_rms_norm", 40, &few, 30);  // 100 rows >= 2 x 30 : 25 CTAs fill them
  EXPECT_EQ(few.config.grid, 25);
  norm::NormLaunch cta = norm::plan_norm(a);
  norm::finish_plan("fused_add_rms_norm", 40, &cta, 51);  // 100 rows < 2 x 51: the CTA-per-row pipeline
  EXPECT_EQ(cta.config.pipeline_stages, 2);
  EXPECT_FALSE(cta.config.warp_per_row);
  EXPECT_EQ(cta.config.grid, 40);
  EXPECT_EQ(cta.smem_bytes, static_cast<size_t>(norm::pipeline_smem_bytes(cta.config, true, 2)));
}

// On a GPU, two sizes. With the planner capped at 8 resident CTAs (32 warps;
// norm::ScopedWarpResidentCap) and T = 197, every warp walks 6-7 rows, so each buffer is
// refilled at S = 1 and 2 on the hardware; each output kind at both depths. Then at the GPU's own
// residency (a two-row call reports it): one row per resident warp and 3 more, for two kinds. The
// host side costs ~1 us per element (0.05-0.4 M capped, 1.7-3.2 M uncapped).
TEST(NormWarpPipelineKernelCuda, MatchesReference) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  NormCase fused{DType::bf16, DType::bf16, DType::bf16, 197, 1152, 0};
  fused.fused = true;
  NormCase mixed{DType::f16, DType::f16, DType::f16, 197, 2048, 0};
  mixed.fused = true;
  mixed.res = DType::bf16;
  NormCase fixed{DType::bf16, DType::bf16, DType::e4m3, 197, 512, 0};
  fixed.mode = Fp8ScaleMode::static_per_tensor;
  NormCase dynamic{DType::bf16, DType::bf16, DType::e4m3, 197, 264, 0};
  dynamic.fused = true;
  const NormCase plain{DType::bf16, DType::bf16, DType::bf16, 197, 264, 0};
  for (int stages : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << "norm.pipeline=" << stages);
    const detail::ScopedTuneOverride variant(warp_tune(stages, 8));
    {
      const norm::ScopedWarpResidentCap cap(8);
      for (const NormCase& c : {plain, fused, mixed, fixed, dynamic}) {
        check_norm_case(Backend::cuda, c, rng);
        expect_warp_pipeline(true, stages, describe(c));
        EXPECT_EQ(norm::last_config().grid, 8) << describe(c);
      }
      if (stages == 1) run_mixed_edges(Backend::cuda, rng, 197);
    }
    for (NormCase c : {fused, dynamic}) {
      c.T = 2;
      check_norm_case(Backend::cuda, c, rng);  // two rows: the launcher asks for the resident CTAs
      const int64_t resident = norm::last_resident_ctas();
      ASSERT_GT(resident, 8) << describe(c);
      c.T = resident * norm::kWarpPipeWarps + 3;
      check_norm_case(Backend::cuda, c, rng);
      expect_warp_pipeline(true, stages, describe(c));
    }
  }
}

// The pipelined kernels launched from a CUDA graph (ScopedGraphCapture: run_backend captures
// each call on a new stream and runs the graph), as a serving engine's decode graphs run them:
// the warp-row kernel with 64 and 96 KiB of shared memory (above the 48 KiB default: its raised
// limit must hold for a graph's launch too) and the CTA-per-row one (norm.warp_items=0). The
// small check cases of OpChecks.CudaGraphCaptureNeverFails launch neither.
TEST(NormWarpPipelineKernelCuda, FromACapturedGraph) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  NormCase mixed{DType::f16, DType::f16, DType::f16, 197, 2048, 0};
  mixed.fused = true;
  mixed.res = DType::bf16;
  const ScopedGraphCapture graph;
  for (int stages : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << "norm.pipeline=" << stages);
    const detail::ScopedTuneOverride variant(warp_tune(stages, 8));
    const norm::ScopedWarpResidentCap cap(8);
    check_norm_case(Backend::cuda, mixed, rng);
    expect_warp_pipeline(true, stages, describe(mixed));
    EXPECT_EQ(norm::last_config().grid, 8);
  }
  const detail::ScopedTuneOverride cta(warp_tune(1, 0));
  NormCase c{DType::bf16, DType::bf16, DType::bf16, 2, 4096, 0};
  c.fused = true;
  check_norm_case(Backend::cuda, c, rng);  // two rows: the launcher asks for the resident CTAs
  const int64_t resident = norm::last_resident_ctas();
  ASSERT_GT(resident, 0);
  c.T = 2 * resident + 1;
  check_norm_case(Backend::cuda, c, rng);
  EXPECT_EQ(norm::last_config().pipeline_stages, 1) << describe(c);
  EXPECT_FALSE(norm::last_config().warp_per_row) << describe(c);
}

}  // namespace
