// The norm.warp_items variant (TEJAS_TUNE; norm_warp_pipe_kernel): the pipelined rows of at most
// N 16-byte vectors per lane (default 8: H <= 2048) go one warp per row, CTAs of 4 warps walking
// the rows with 1 or 2 rows ahead in shared memory. On the emulator (kEmuResidentCtas = 3 CTAs,
// 12 warps) every case must match the reference as the other kernels do (kernel_harness.h's
// rules), with T above 12 so that warps walk several rows and reuse their buffers, and which
// kernel runs follows the key (the bytes moved: NormPipelineKernel.CopiesEachRowOnce). cuda: the
// same cases, sized from the kernel's resident CTAs.
#include <gtest/gtest.h>

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
// (8 items, the default key's largest). T > 12 (the emulator's warps), not a multiple of them.
constexpr Shape kShapes[] = {{25, 8, 0}, {29, 264, 0}, {26, 256, 0}, {14, 1152, 0}, {31, 2048, 8}};

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

TEST(NormWarpPipelineKernel, MatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  for (int stages : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << "norm.pipeline=" << stages);
    const detail::ScopedTuneOverride variant(warp_tune(stages, 8));
    for (DType x : {DType::bf16, DType::f16})
      for (const Shape& s : kShapes)
        for (const NormCase& c : cases_for(x, s)) {
          check_norm_case(Backend::emulator, c, rng);
          expect_warp_pipeline(true, stages, describe(c));
        }
  }
}

// fp8 outputs (dynamic: a second pass for max |y|; static), rms_norm and fused, and in place.
TEST(NormWarpPipelineKernel, Fp8OutputsAndInPlace) {
  TEJAS_SEEDED_TEST_RNG();
  for (int stages : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << "norm.pipeline_fp8=" << stages);
    const detail::ScopedTuneOverride variant(warp_tune(stages, 8));
    for (Fp8ScaleMode m : {Fp8ScaleMode::dynamic_per_token, Fp8ScaleMode::static_per_tensor})
      for (bool fused : {false, true}) {
        NormCase c{DType::bf16, DType::bf16, DType::e4m3, 27, 1152, 0};
        c.mode = m;
        c.fused = fused;
        check_norm_case(Backend::emulator, c, rng);
        expect_warp_pipeline(true, stages, describe(c));
      }
    NormCase in_place{DType::f16, DType::f16, DType::f16, 23, 2048, 0};
    in_place.in_place = true;
    check_norm_case(Backend::emulator, in_place, rng);
    expect_warp_pipeline(true, stages, describe(in_place));
  }
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

// On a GPU: T from the kernel's resident CTAs (a two-row call reports them): one row per resident
// warp and 3 more, so that some warps walk a second row into their next buffer; each output kind
// at the default depth, two of them at 2. The host side costs ~1 us per element (1.7-3.2 M here).
TEST(NormWarpPipelineKernelCuda, MatchesReference) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  NormCase fused{DType::bf16, DType::bf16, DType::bf16, 2, 1152, 0};
  fused.fused = true;
  NormCase mixed{DType::f16, DType::f16, DType::f16, 2, 2048, 0};
  mixed.fused = true;
  mixed.res = DType::bf16;
  NormCase fixed{DType::bf16, DType::bf16, DType::e4m3, 2, 512, 0};
  fixed.mode = Fp8ScaleMode::static_per_tensor;
  NormCase dynamic{DType::bf16, DType::bf16, DType::e4m3, 2, 264, 0};
  dynamic.fused = true;
  for (int stages : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << "norm.pipeline=" << stages);
    const detail::ScopedTuneOverride variant(warp_tune(stages, 8));
    const std::vector<NormCase> list =
        stages == 1 ? std::vector<NormCase>{{DType::bf16, DType::bf16, DType::bf16, 2, 264, 0}, fused, mixed, fixed, dynamic}
                    : std::vector<NormCase>{mixed, dynamic};
    for (NormCase c : list) {
      check_norm_case(Backend::cuda, c, rng);  // two rows: the launcher asks for the resident CTAs
      const int64_t resident = norm::last_resident_ctas();
      ASSERT_GT(resident, 0) << describe(c);
      c.T = resident * norm::kWarpPipeWarps + 3;
      check_norm_case(Backend::cuda, c, rng);
      expect_warp_pipeline(true, stages, describe(c));
    }
  }
}

}  // namespace
