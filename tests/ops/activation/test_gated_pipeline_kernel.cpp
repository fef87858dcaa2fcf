// The activation.pipeline variant (TEJAS_TUNE; gated_pipe_kernel): persistent blocks walking
// 256-chunk tiles of the flattened [T, chunks] space, 1 or 2 tiles ahead in flight through
// cp.async. On the emulator (3 stand-in resident blocks) every case must match the reference by
// the same rules as the default kernels (kernel_test_util.h), move exactly the compulsory bytes,
// copy each gate and up byte through cp.async exactly once, write nothing outside out's view,
// and run the pipelined kernel where it applies (the config each launch ran with says so) and
// the default one elsewhere. cuda: the same, with T sized to pipeline on any GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ops/activation/gated_kernel_cases.h"
#include "ops/activation/launch.h"
#include "runtime/tune.h"

using namespace tejas;
using namespace tejas::acttest;

namespace {

GatedCall call_for(Which which, const SiluMulOptions& o = {}) {
  if (which == Which::gelu)
    return [](const ExecContext& ctx, const TensorView& x, const TensorView& out) { return gelu_tanh_mul(ctx, x, out); };
  return [o](const ExecContext& ctx, const TensorView& x, const TensorView& out) { return silu_mul(ctx, x, out, o); };
}

detail::Tune pipeline_tune(int stages) {
  detail::Tune t;
  t.activation_pipeline = stages;
  return t;
}

// At least 6 tiles of 256 chunks (2 x the 3 stand-in blocks), so the emulator pipelines: tiles
// spanning many short rows (F = 264 bf16: 33 chunks a row), rows that start mid-tile (4104: 513
// chunks), one long row, a last partial tile (1104 bf16: 138 chunks a row, 1518 in all), padded rows, and the
// 8-byte and element paths that keep the default kernel.
struct PCase {
  KCase k;
  bool pipelined;  // for bf16 / f16: the 16-byte path (aligned rows) and >= 6 tiles
};
const PCase kCases[] = {
    {{41, 264}, true},  {{3, 4104}, true}, {{1, 16384}, true}, {{11, 1104}, true},
    {{11, 1024, 0, 8, 0, 8}, true},  // padded rows of a multiple of 16 bytes
    {{11, 1024, 8, 0, 8, 0}, true},  // views starting 16 bytes (bf16) into their rows
    {{3, 4100}, false},              // the 8-byte path for 16-bit types (2F x 2 B is 8 mod 16); f32: 16 bytes
    {{3, 1025, 1, 0, 1, 0}, false},  // rows one element in: the element path
};

// Whether the variant applies: the 16-byte path (f32 takes it where 16-bit types take 8 bytes)
// and at least 6 tiles of 256 chunks.
bool expect_pipelined(const PCase& c, DType dt) {
  const KCase& k = c.k;
  const int64_t elem = dtype_bytes(dt, 1);
  const bool aligned = (2 * k.F + k.x_lead + k.x_pad) * elem % 16 == 0 && k.x_lead * elem % 16 == 0 &&
                       k.F * elem % 16 == 0 && (k.F + k.out_lead + k.out_pad) * elem % 16 == 0 &&
                       k.out_lead * elem % 16 == 0;
  const int64_t chunks = k.F / (16 / elem);
  const bool expected = aligned && (k.T * chunks + 255) / 256 >= 2 * act::kEmuResidentBlocks;
  if (elem == 2) {
    EXPECT_EQ(expected, c.pipelined) << "the case list's own expectation";
  }
  return expected;
}

int g_pipelined = 0;  // pipelined cases run, so a test can insist that some were

void run_case(check::Rng& rng, Which which, DType dt, const PCase& c, int stages) {
  const KCase& k = c.k;
  SCOPED_TRACE(::testing::Message() << "activation.pipeline=" << stages);
  const bool pipelined = stages > 0 && expect_pipelined(c, dt);
  run_gated_case(rng, which, dt, k, call_for(which), 3.0);
  const act::GatedConfig got = act::last_gated_config();
  EXPECT_EQ(got.pipeline_stages, pipelined ? stages : 0) << got.to_string();
  const uint64_t elem = dtype_bytes(dt, 1);
  const uint64_t copied = detail::last_emulator_reports().at(0).counters.cp_async_bytes;
  EXPECT_EQ(copied, pipelined ? static_cast<uint64_t>(k.T * 2 * k.F) * elem : 0u) << "gate and up bytes, once";
  if (pipelined) {
    ++g_pipelined;
    EXPECT_EQ(got.pipe_blocks, act::kEmuResidentBlocks);
    // A warp's 32 chunks are contiguous in the flattened space: one run of bytes per request,
    // or two where a row ends inside it, so at most two partial sectors over the ideal per
    // request (none when rows are whole sectors).
    const emu::Counters& n = detail::last_emulator_reports().at(0).counters;
    EXPECT_LE(n.excess_load_sectors(), 2 * n.global_load_requests);
    EXPECT_LE(n.excess_store_sectors(), 2 * n.global_store_requests);
    if ((2 * k.F * elem) % 32 == 0 && (k.F * elem) % 32 == 0 && k.x_lead == 0 && k.x_pad == 0 && k.out_lead == 0 &&
        k.out_pad == 0) {
      EXPECT_EQ(n.excess_load_sectors(), 0u);
      EXPECT_EQ(n.excess_store_sectors(), 0u);
    }
  }
}

TEST(GatedPipelineKernel, SiluMatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  g_pipelined = 0;
  for (int stages : {1, 2}) {
    const detail::ScopedTuneOverride variant(pipeline_tune(stages));
    for (DType dt : {DType::bf16, DType::f16, DType::f32})
      for (const PCase& c : kCases) run_case(rng, Which::silu, dt, c, stages);
  }
  EXPECT_GE(g_pipelined, 2 * 3 * 6) << "every 16-byte case of every dtype at both depths";
}

TEST(GatedPipelineKernel, GeluTanhMatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  for (int stages : {1, 2}) {
    const detail::ScopedTuneOverride variant(pipeline_tune(stages));
    for (DType dt : {DType::bf16, DType::f16, DType::f32})
      for (const PCase& c : kCases) run_case(rng, Which::gelu, dt, c, stages);
  }
}

// gpt-oss's clamped SwiGLU through the pipelined kernel (the options reach it).
TEST(GatedPipelineKernel, ClampedSiluMatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  SiluMulOptions o;
  o.clamped = true;
  o.limit = 7.0;
  o.alpha = 1.702;
  for (int stages : {1, 2}) {
    const detail::ScopedTuneOverride variant(pipeline_tune(stages));
    for (DType dt : {DType::bf16, DType::f16})
      for (const PCase& c : {kCases[0], kCases[2]}) {
        run_gated_case(rng, Which::silu_clamped, dt, c.k, call_for(Which::silu, o), 14.0, o);
        EXPECT_EQ(act::last_gated_config().pipeline_stages, stages);
      }
  }
}

// Below 2 tiles per stand-in block (T x chunks <= 5 x 256), and with the variant off: the
// default kernel, no cp.async.
TEST(GatedPipelineKernel, FewTilesOrOffKeepTheDefaultKernel) {
  TEJAS_SEEDED_TEST_RNG();
  {
    const detail::ScopedTuneOverride variant(pipeline_tune(2));
    run_case(rng, Which::silu, DType::bf16, {{5, 2048}, false}, 2);  // 5 x 256 chunks: 5 tiles
    run_case(rng, Which::silu, DType::bf16, {{6, 2048}, true}, 2);   // 6 tiles
  }
  const detail::ScopedTuneOverride off(pipeline_tune(0));
  run_case(rng, Which::silu, DType::bf16, {{41, 264}, false}, 0);
}

// The config: taken on the 16-byte path with at least 2 tiles per resident block.
TEST(GatedPipelineKernel, ConfigTakesSixteenByteRowsWithTwoTilesPerBlock) {
  act::GatedProblem p;
  p.elem_bytes = 2;
  p.T = 16384;
  p.F = 14336;  // Llama-3.1-8B's FFN: 1792 chunks a row
  const act::GatedConfig c = act::make_gated_config(p);
  act::GatedConfig q = act::with_gated_pipeline(p, c, 2, 660);
  EXPECT_EQ(q.pipeline_stages, 2);
  EXPECT_EQ(q.pipe_blocks, 660);
  EXPECT_NE(q.to_string().find("persistent blocks walking 256-chunk tiles (2 tile(s) ahead by cp.async), grid 660"),
            std::string::npos)
      << q.to_string();
  EXPECT_EQ(act::gated_pipe_smem_bytes(2), 2 * 2 * 256 * 16);
  p.T = 1;  // 7 tiles
  EXPECT_EQ(act::with_gated_pipeline(p, act::make_gated_config(p), 2, 4).pipeline_stages, 0);
  EXPECT_EQ(act::with_gated_pipeline(p, act::make_gated_config(p), 2, 3).pipeline_stages, 2);
  EXPECT_EQ(act::with_gated_pipeline(p, act::make_gated_config(p), 2, 0).pipeline_stages, 0);  // residency unknown
  EXPECT_EQ(act::with_gated_pipeline(p, act::make_gated_config(p), 0, 3).pipeline_stages, 0);  // off
  p.x_align = 8;  // the 8-byte path
  EXPECT_EQ(act::with_gated_pipeline(p, act::make_gated_config(p), 2, 3).pipeline_stages, 0);
}

// On a GPU: T sized past twice the blocks any GPU could hold (132-SM H200: 8 blocks of 256 per SM
// at most), so each 16-byte case pipelines; bf16 and f32, both depths.
TEST(GatedPipelineKernelCuda, MatchesReference) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  const int64_t most_blocks = 8 * int64_t{check::cuda_sm_count()};
  for (int stages : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << "activation.pipeline=" << stages);
    const detail::ScopedTuneOverride variant(pipeline_tune(stages));
    // ~8 M elements a case (the host reference's time): every dtype at 2 stages, bf16 at 1.
    const std::vector<DType> dts = stages == 2 ? std::vector<DType>{DType::bf16, DType::f16, DType::f32}
                                               : std::vector<DType>{DType::bf16};
    for (DType dt : dts)
      for (int64_t F : {int64_t{264}, int64_t{4104}}) {
        const int64_t chunks = F / (16 / dtype_bytes(dt, 1));
        const int64_t T = (2 * most_blocks * 256 + chunks - 1) / chunks + 1;
        run_gated_case_cuda(rng, dt, {T, F}, call_for(Which::silu), Which::silu, 3.0);
        EXPECT_EQ(act::last_gated_config().pipeline_stages, stages);
        if (F == 264) continue;
        run_gated_case_cuda(rng, dt, {T, F, 0, 8, 0, 8}, call_for(Which::gelu), Which::gelu, 3.0);  // padded rows
        EXPECT_EQ(act::last_gated_config().pipeline_stages, stages);
      }
  }
}

}  // namespace
