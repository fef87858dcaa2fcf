// The norm.pipeline variant (TEJAS_TUNE; norm_pipe_kernel): persistent CTAs that keep 1 or 2 rows
// ahead in flight through cp.async. On the emulator (kEmuResidentCtas = 3 CTAs) every case must
// match the reference exactly as the default kernels do (kernel_harness.h's rules), the copies
// must move each row of x (and the residual) exactly once, the compulsory bytes stay the
// compulsory bytes, and configs the variant does not take (short T, tails, f32 operands, warp
// rows) must run the default kernel. cuda: the same cases, sized to engage it on a real GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "ops/common/emu_launch.h"
#include "ops/norm/kernel_cases.h"
#include "check/cuda_mem.h"
#include "ops/norm/launch.h"
#include "runtime/tune.h"
#include "support/seed.h"

using namespace tejas;
using namespace tejas::normtest;
using check::HostTensor;

namespace {

struct Shape {
  int64_t T, H, pad;
};

// T >= 2 x 3 so that the emulator pipelines; T not a multiple of 3, so CTAs walk unequal row
// counts. H: one item per thread with a partial last warp (264: 33 vectors on 64 threads), E 8 at
// its largest (2048), E 16 with a partial second item (2056: 257 vectors on 160 threads), a
// padded 4096 row.
constexpr Shape kShapes[] = {{6, 264, 0}, {7, 2048, 0}, {8, 2056, 0}, {13, 4096, 8}};

// Rows that make a GPU pipeline: more than twice the resident CTAs of the pipelined kernel for
// this case's config, read from a two-row call of the same case under the variant (the launcher
// queries the occupancy at any T). The host side (inputs, float64 reference, comparison) costs
// ~1 us per element on a loaded 16-core GPU machine: sizing by the device's most CTAs per SM
// instead (2048 threads) doubled the rows of the register-bound E-16 configs and took these
// tests past a 70 s budget there.
int64_t gpu_rows(NormCase c, check::Rng& rng) {
  c.T = 2;
  check_norm_case(Backend::cuda, c, rng);
  const int64_t resident = norm::last_resident_ctas();
  EXPECT_GT(resident, 0) << describe(c);
  return 2 * resident + 1;
}

struct PipeCase {
  NormCase c;
  bool pipelined;  // the variant takes it (vec 8); an f32 weight makes vec 4: the default kernel
};

std::vector<PipeCase> pipeline_cases(const std::vector<DType>& xs) {
  std::vector<PipeCase> v;
  for (DType x : xs)
    for (const Shape& s : kShapes) {
      const int64_t T = s.T;
      v.push_back({{x, x, x, T, s.H, s.pad}, true});                // rms_norm
      v.push_back({{x, DType::f32, x, T, s.H, s.pad}, false});      // an f32 weight
      NormCase f{x, x, x, T, s.H, s.pad};
      f.fused = true;
      for (DType res : {DType::bf16, DType::f16}) {
        f.res = res;
        v.push_back({f, true});
      }
    }
  for (Fp8ScaleMode m : {Fp8ScaleMode::dynamic_per_token, Fp8ScaleMode::static_per_tensor}) {
    NormCase c{DType::bf16, DType::bf16, DType::e4m3, 7, 2048, 0};
    c.mode = m;
    v.push_back({c, true});
    c.fused = true;
    v.push_back({c, true});
  }
  NormCase in_place{DType::bf16, DType::bf16, DType::bf16, 7, 4096, 0};
  in_place.in_place = true;
  v.push_back({in_place, true});
  return v;
}

// Runs the case and checks which kernel ran.
void check_pipe_case(Backend b, const PipeCase& k, int stages, check::Rng& rng) {
  check_norm_case(b, k.c, rng);
  if (b == Backend::emulator) {
    EXPECT_EQ(norm::last_resident_ctas(), norm::kEmuResidentCtas);
  }
  EXPECT_EQ(norm::last_config().pipeline_stages, k.pipelined ? stages : 0) << describe(k.c);
}

// Both keys: the fp8 outputs take norm.pipeline_fp8, the others norm.pipeline (both 1 by default).
// norm.warp_items=0: the short rows stay on this kernel (the warp-row pipeline, which takes them
// by default, has test_norm_warp_pipeline_kernel.cpp).
detail::Tune pipeline_tune(int stages) {
  detail::Tune t;
  t.norm_pipeline = stages;
  t.norm_pipeline_fp8 = stages;
  t.norm_warp_items = 0;
  return t;
}

TEST(NormPipelineKernel, MatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  for (int stages : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << "norm.pipeline=" << stages);
    const detail::ScopedTuneOverride variant(pipeline_tune(stages));
    for (const PipeCase& k : pipeline_cases({DType::bf16, DType::f16})) check_pipe_case(Backend::emulator, k, stages, rng);
  }
}

// The defaults (H200, docs/kernels/rms_norm.md and fused_add_rms_norm.md): one row ahead for
// every output, rms_norm and fused alike, fp8 (dynamic and static here) included;
// norm.pipeline_fp8 sets the fp8 outputs' depth apart (0: the one-CTA-per-row kernel).
TEST(NormPipelineKernel, DefaultsPipelineEveryOutput) {
  TEJAS_SEEDED_TEST_RNG();
  const detail::ScopedTuneOverride defaults(detail::Tune{});  // whatever TEJAS_TUNE says
  NormCase plain{DType::bf16, DType::bf16, DType::bf16, 7, 4096, 0};
  NormCase fused = plain;
  fused.fused = true;
  NormCase dynamic{DType::bf16, DType::bf16, DType::e4m3, 7, 4096, 0};
  NormCase fixed = dynamic;
  fixed.mode = Fp8ScaleMode::static_per_tensor;
  check_pipe_case(Backend::emulator, {plain, true}, 1, rng);
  check_pipe_case(Backend::emulator, {fused, true}, 1, rng);
  check_pipe_case(Backend::emulator, {dynamic, true}, 1, rng);
  check_pipe_case(Backend::emulator, {fixed, true}, 1, rng);
  for (int stages : {2, 0}) {
    detail::Tune fp8;
    fp8.norm_pipeline_fp8 = stages;
    const detail::ScopedTuneOverride variant(fp8);
    check_pipe_case(Backend::emulator, {dynamic, stages > 0}, stages, rng);
    check_pipe_case(Backend::emulator, {fixed, stages > 0}, stages, rng);
    check_pipe_case(Backend::emulator, {plain, true}, 1, rng);
  }
}

// norm.pipeline=0 (and norm.pipeline_fp8=0): the same cases, now long enough to pipeline, run the
// default kernel (one CTA per row), which short T and decode keep using under the defaults.
TEST(NormPipelineKernel, OffRunsTheDefaultKernel) {
  TEJAS_SEEDED_TEST_RNG();
  const detail::ScopedTuneOverride off(pipeline_tune(0));
  for (const PipeCase& k : pipeline_cases({DType::bf16})) check_pipe_case(Backend::emulator, k, 0, rng);
}

// The largest row: 1024 threads, 2 x 2 x 32 KiB of slots at 2 stages with a residual.
TEST(NormPipelineKernel, LargestHidden) {
  TEJAS_SEEDED_TEST_RNG();
  for (int stages : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << "norm.pipeline=" << stages);
    const detail::ScopedTuneOverride variant(pipeline_tune(stages));
    NormCase c{DType::bf16, DType::bf16, DType::bf16, 7, norm::kMaxH, 0};
    check_pipe_case(Backend::emulator, {c, true}, stages, rng);
    c.fused = true;
    check_pipe_case(Backend::emulator, {c, true}, stages, rng);
  }
  // Above the largest: unsupported, and the config says so.
  const detail::ScopedTuneOverride variant(pipeline_tune(2));
  HostTensor x(DType::bf16, {7, norm::kMaxH + 8}), out(DType::bf16, {7, norm::kMaxH + 8}), w(DType::bf16, {norm::kMaxH + 8});
  EXPECT_EQ(rms_norm(ctx_for(Backend::emulator), x, w, kEps, out).code(), StatusCode::unsupported);
  EXPECT_FALSE(norm::last_config().supported);
  EXPECT_EQ(norm::last_config().pipeline_stages, 0);
}

// Bytes moved by the copies: each row of x (and of the residual) exactly once, so no row is
// skipped or fetched twice, and the launch's unique bytes stay the compulsory ones; whole sectors
// on every copy and store of rows on sector boundaries, no bank conflicts in the slots. Without
// the variant, or where it does not apply, no cp.async runs. warp_items > 0: the warp-row
// pipeline (norm_warp_pipe_kernel; T > 12, the emulator's warps, so that warps walk rows).
TEST(NormPipelineKernel, CopiesEachRowOnce) {
  TEJAS_SEEDED_TEST_RNG();
  struct Case {
    int64_t T, H;
    bool fused;
    int stages;
    bool pipelined;
    int warp_items = 0;
  };
  const Case cases[] = {
      {7, 4096, false, 2, true},  {7, 4096, true, 2, true}, {8, 2056, true, 1, true},
      {5, 4096, false, 2, false},  // T < 2 x 3 resident CTAs: one CTA per row is better
      {7, 4100, false, 2, false},  // H % 8: a tail
      {7, 200, false, 2, false},   // warp per row
      {7, 4096, false, 0, false},  // the variant off
      {29, 264, false, 1, true, 8}, {29, 264, true, 2, true, 8}, {31, 2048, true, 1, true, 8},
      {14, 1152, false, 2, true, 8}, {25, 8, true, 1, true, 8},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(::testing::Message() << "T=" << k.T << " H=" << k.H << (k.fused ? " fused" : "") << " stages "
                                      << k.stages << " norm.warp_items=" << k.warp_items);
    detail::Tune t = pipeline_tune(k.stages);
    t.norm_warp_items = k.warp_items;
    const detail::ScopedTuneOverride variant(t);
    HostTensor x(DType::bf16, {k.T, k.H}), res(DType::bf16, {k.T, k.H}), out(DType::bf16, {k.T, k.H}),
        w(DType::bf16, {k.H});
    fill_rows(x, rng);
    fill_rows(res, rng);
    check::fill_normal(w, rng, 1.0, 0.5);
    const ExecContext ctx = ctx_for(Backend::emulator);
    TEJAS_ASSERT_OK(k.fused ? fused_add_rms_norm(ctx, x, res, w, kEps, out) : rms_norm(ctx, x, w, kEps, out));
    const auto& reps = detail::last_emulator_reports();
    ASSERT_EQ(reps.size(), 1u);
    const emu::Counters& c = reps[0].counters;
    const uint64_t row_bytes = static_cast<uint64_t>(k.T * k.H * 2), tensors = k.fused ? 2 : 1;
    EXPECT_EQ(norm::last_config().pipeline_stages, k.pipelined ? k.stages : 0);
    EXPECT_EQ(norm::last_config().warp_per_row && k.pipelined, k.warp_items > 0);
    EXPECT_EQ(c.cp_async_bytes, k.pipelined ? tensors * row_bytes : 0u);
    EXPECT_EQ(c.global_bytes_read_unique, tensors * row_bytes + static_cast<uint64_t>(k.H * 2));
    EXPECT_EQ(c.global_bytes_written_unique, tensors * row_bytes);
    EXPECT_EQ(c.bank_conflict_wavefronts(), 0u);
    if (k.pipelined && k.H * 2 % 32 == 0) {  // rows on sector boundaries: every copy's sectors whole
      EXPECT_EQ(c.excess_load_sectors(), 0u);
      EXPECT_EQ(c.excess_store_sectors(), 0u);
    }
  }
}

// The pipelined launch shape: grid = the resident CTAs, the slots' shared memory, the config line.
TEST(NormPipelineKernel, PlanUsesResidentCtasAndSlots) {
  const detail::ScopedTuneOverride variant(pipeline_tune(2));
  HostTensor x(DType::bf16, {100, 4096}), res(DType::bf16, {100, 4096}), out(DType::bf16, {100, 4096}),
      w(DType::bf16, {4096});
  norm::NormArgs a{x.view(), res.view(), w.view(), out.view(), TensorView{}, kEps, norm::OutKind::same};
  norm::NormLaunch l = norm::plan_norm(a);
  EXPECT_EQ(l.config.pipeline_stages, 0);
  EXPECT_EQ(l.config.grid, 100);
  norm::finish_plan("fused_add_rms_norm", 40, &l);
  EXPECT_EQ(l.config.pipeline_stages, 2);
  EXPECT_EQ(l.params.pipeline_stages, 2);
  EXPECT_EQ(l.config.grid, 40);
  // 256 threads x 2 items x 2 tensors x 2 stages x 16 bytes after NormSmem.
  EXPECT_EQ(l.smem_bytes, sizeof(norm::NormSmem) + 256 * 2 * 2 * 2 * 16);
  EXPECT_NE(norm::describe(l.config).find("persistent CTAs walking the rows (2 row(s) ahead by cp.async), grid 40"), std::string::npos) << norm::describe(l.config);
  norm::NormLaunch l2 = norm::plan_norm(a);
  norm::finish_plan("fused_add_rms_norm", 51, &l2);  // 100 rows < 2 x 51: not pipelined
  EXPECT_EQ(l2.config.pipeline_stages, 0);
  EXPECT_EQ(l2.params.pipeline_stages, 0);
  EXPECT_EQ(l2.config.grid, 100);
  EXPECT_EQ(l2.smem_bytes, sizeof(norm::NormSmem));
}

// On a GPU: T from gpu_rows, so every case pipelines, which the config hook confirms. The
// emulator covers every combination above; here each output kind and dtype once, both depths,
// E 8 and E 16 rows, a padded row and the largest, to keep the host side near 20-30 s.
TEST(NormPipelineKernelCuda, MatchesReference) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  const auto fused = [](NormCase c, DType res) {
    c.fused = true;
    c.res = res;
    return c;
  };
  const NormCase bf16_4096{DType::bf16, DType::bf16, DType::bf16, 0, 4096, 8};  // padded, E 16
  NormCase fp8{DType::bf16, DType::bf16, DType::e4m3, 0, 2048, 0};
  NormCase in_place{DType::bf16, DType::bf16, DType::bf16, 0, 2048, 0};
  in_place.in_place = true;
  const std::vector<NormCase> two = {
      {DType::bf16, DType::bf16, DType::bf16, 0, 264, 0},          // one item, a partial warp
      fused({DType::bf16, DType::bf16, DType::bf16, 0, 2056, 0}, DType::bf16),  // a partial item
      bf16_4096,
      fused(fp8, DType::bf16),                                      // fp8 dynamic out
      in_place,
      fused({DType::f16, DType::f16, DType::f16, 0, 2048, 0}, DType::f16),
      fused({DType::bf16, DType::bf16, DType::bf16, 0, norm::kMaxH, 0}, DType::bf16)};
  const std::vector<NormCase> one = {fused(bf16_4096, DType::bf16), {DType::f16, DType::f16, DType::f16, 0, 264, 0}};
  for (int stages : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << "norm.pipeline=" << stages);
    const detail::ScopedTuneOverride variant(pipeline_tune(stages));
    for (NormCase c : stages == 2 ? two : one) {
      c.T = gpu_rows(c, rng);
      check_pipe_case(Backend::cuda, {c, true}, stages, rng);
    }
  }
}

}  // namespace
