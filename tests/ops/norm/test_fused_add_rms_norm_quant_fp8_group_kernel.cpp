// fused_add_rms_norm_quant_fp8_group kernels (emulator; cuda when a GPU is present) against the
// reference backend: stored residual exact; f32 scales within f32 rounding, ue8m0 scales exact
// but for power-of-two ties; e4m3 codes exact but for rounding ties (judged on the exact y over
// the kernel's own scale). Groups narrower than a warp (shuffles) and wider (shared memory, on
// misaligned views), warp-per-row and CTA-per-row, column-major scales, counters.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <vector>

#include "check/cuda_mem.h"
#include "ops/common/emu_launch.h"
#include "ops/norm/kernel_harness.h"
#include "ops/norm/launch.h"
#include "ops/norm/quant_math.h"
#include "runtime/tune.h"
#include "support/poison.h"
#include "support/seed.h"
#include "tejas/norm.h"

using namespace tejas;
using namespace tejas::normtest;
using check::HostTensor;

namespace {

constexpr double kEps = 1e-6;

struct QCase {
  DType x, w, res, scales;
  int64_t T, H, pad = 0, shift = 0;
  bool column_major = false;
};

std::string describe(const QCase& c) {
  std::ostringstream os;
  os << "x " << dtype_name(c.x) << " w " << dtype_name(c.w) << " res " << dtype_name(c.res) << " scales "
     << dtype_name(c.scales) << " T=" << c.T << " H=" << c.H << " pad=" << c.pad << " shift=" << c.shift
     << (c.column_major ? " column-major" : "");
  return os.str();
}

// ue8m0: equal, or one step apart where the exact amax / 448 is within the tie window of the
// power of two between them.
::testing::AssertionResult ue8m0_ok(double got, long double raw) {
  const long double want = pow2_ceil(raw);
  if (got == static_cast<double>(want)) return ::testing::AssertionSuccess();
  const long double lo = std::fmin(got, want), hi = std::fmax(got, want);
  if (hi == 2 * lo && std::fabs(raw / lo - 1) <= kTieWindow) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "ue8m0 scale " << got << ", want " << static_cast<double>(want);
}

// Changes the random inputs (x, residual, weight) before the runs: non-finite values, zero rows.
using Poke = std::function<void(HostTensor& x, HostTensor& res, HostTensor& w)>;

void check_case(Backend b, const QCase& c, check::Rng& rng, const Poke& poke = {}) {
  SCOPED_TRACE(describe(c));
  const int64_t G = c.H / kGroup;
  HostTensor x = shifted(c.x, c.T, c.H, c.pad, c.shift), w(c.w, {c.H});
  HostTensor res_ref(c.res, {c.T, c.H}, c.pad), res_got = shifted(c.res, c.T, c.H, c.pad, c.shift);
  HostTensor q_ref(DType::e4m3, {c.T, c.H}, c.pad), q_got = shifted(DType::e4m3, c.T, c.H, c.pad, c.shift);
  // Column-major: [G, T] storage viewed as [T, G] with strides [1, T].
  HostTensor s_ref(c.scales, {c.T, G}), s_got = c.column_major ? HostTensor(c.scales, {G, c.T}) : HostTensor(c.scales, {c.T, G});
  check::fill_normal(x, rng, 0.0, 2.0);
  check::fill_normal(res_ref, rng, 0.0, 2.0);
  check::fill_normal(w, rng, 1.0, 0.5);
  if (poke) poke(x, res_ref, w);
  res_got.copy_from(res_ref);
  TensorView sv = s_got.view();
  if (c.column_major) {
    sv.shape[0] = c.T;
    sv.shape[1] = G;
    sv.stride[0] = 1;
    sv.stride[1] = c.T;
  }
  bool column_major = false;  // the reference run writes row-major s_ref
  auto call = [&sv, &column_major](const ExecContext& ctx, const std::vector<TensorView>& v) {
    TensorView scales = v[4];
    if (column_major) {  // the same strides on whichever copy (host or device) v[4] is
      scales.shape[0] = sv.shape[0];
      scales.shape[1] = sv.shape[1];
      scales.stride[0] = sv.stride[0];
      scales.stride[1] = sv.stride[1];
    }
    return fused_add_rms_norm_quant_fp8_group(ctx, v[0], v[1], v[2], kEps, v[3], scales);
  };
  const auto x_before = optest::bits_of(x);
  TEJAS_ASSERT_OK(run_backend(Backend::reference, {&x, &res_ref, &w, &q_ref, &s_ref}, call));
  column_major = c.column_major;
  TEJAS_ASSERT_OK(run_backend(b, {&x, &res_got, &w, &q_got, &s_got}, call));
  EXPECT_TRUE(optest::bits_of(x) == x_before) << "x is an input";
  // Nothing written outside the outputs' elements: row padding (unshifted views), the bytes
  // around each buffer, and the [G, T] storage of column-major scales has no gaps to check.
  if (c.shift == 0) {
    EXPECT_TRUE(res_got.padding_intact() && q_got.padding_intact()) << "residual / q: wrote into row padding";
  }
  EXPECT_TRUE(res_got.guards_intact() && q_got.guards_intact() && s_got.guards_intact()) << "wrote past a buffer";
  // Bit for bit; with non-finite inputs, equal values (a NaN's sign and payload are not part of
  // the contract: the kernel's f32 add keeps x's, the float64 reference's rounding its own).
  const auto r = poke ? check::compare(res_got, res_ref, check::Tolerance{}) : check::compare_exact(res_got, res_ref);
  ASSERT_TRUE(r.ok) << "residual: " << r.message;
  for (int64_t t = 0; t < c.T; ++t) {
    const auto y = clamped_y(res_ref, w, t, kEps);
    for (int64_t g = 0; g < G; ++g) {
      const double got_s = scale_at(sv, t, g);
      if (std::isnan(scale_at(s_ref.view(), t, g))) {  // a NaN in the group: NaN scale, NaN codes
        ASSERT_TRUE(std::isnan(got_s)) << "scale [" << t << ", " << g << "] should be NaN";
        for (int64_t h = g * kGroup; h < (g + 1) * kGroup; ++h)
          ASSERT_EQ(q_got.bits_flat(t * c.H + h) & 0x7F, 0x7Fu) << "q [" << t << ", " << h << "] should be NaN";
        continue;
      }
      const long double raw = raw_scale(group_amax(y, g * kGroup));
      if (c.scales == DType::ue8m0) {
        ASSERT_TRUE(ue8m0_ok(got_s, raw)) << "scale [" << t << ", " << g << "]";
      } else {
        ASSERT_TRUE(f32_close(got_s, scale_at(s_ref.view(), t, g), kScaleRel)) << "scale [" << t << ", " << g << "]";
      }
      for (int64_t h = g * kGroup; h < (g + 1) * kGroup; ++h)
        ASSERT_TRUE(e4m3_code_ok(q_got.bits_flat(t * c.H + h), y[static_cast<size_t>(h)] / got_s))
            << "q [" << t << ", " << h << "]";
    }
  }
}

std::vector<QCase> cases() {
  return {
      {DType::bf16, DType::bf16, DType::bf16, DType::f32, 1, 128},
      {DType::bf16, DType::bf16, DType::bf16, DType::ue8m0, 37, 256},     // warp per row
      {DType::bf16, DType::f32, DType::f32, DType::f32, 3, 384, 8},      // vec 4: 32-lane groups
      {DType::f16, DType::f16, DType::bf16, DType::ue8m0, 3, 2048, 0},   // CTA per row
      {DType::f32, DType::f32, DType::bf16, DType::f32, 2, 1152, 4},
      {DType::bf16, DType::bf16, DType::bf16, DType::f32, 3, 1024, 1, 1},  // vec 1: 128-lane groups (smem)
      {DType::bf16, DType::bf16, DType::f32, DType::ue8m0, 2, 640, 2, 2},   // vec 2: 64-lane groups (smem)
      {DType::bf16, DType::bf16, DType::bf16, DType::f32, 5, 512, 0, 0, true},
  };
}

void run_all(Backend b, const std::vector<QCase>& list) {
  TEJAS_SEEDED_TEST_RNG();
  for (const QCase& c : list) check_case(b, c, rng);
}

TEST(FusedAddRmsNormQuantFp8GroupKernel, MatchesReference) { run_all(Backend::emulator, cases()); }

// The widest row in each x dtype, ue8m0 scales misaligned by one element; on the GPU too.
std::vector<QCase> largest_cases() {
  return {{DType::bf16, DType::bf16, DType::bf16, DType::f32, 1, 16384},
          {DType::bf16, DType::bf16, DType::bf16, DType::ue8m0, 1, 16384, 0, 1},
          {DType::f16, DType::f16, DType::f32, DType::f32, 2, 16384},
          {DType::f32, DType::f32, DType::bf16, DType::ue8m0, 1, 16384}};
}

TEST(FusedAddRmsNormQuantFp8GroupKernel, LargestHidden) { run_all(Backend::emulator, largest_cases()); }

// The reference's non-finite rules on every kernel path: a NaN in x (row 0: the sum of squares
// is NaN, so every group of the row gets a NaN scale and NaN codes), an infinite weight column
// (row 1: y clamped to +-FLT_MAX, its group's scale FLT_MAX / 448), an all-zero row (row 2: floor
// scales and zero codes, NaN in the group where 0 * Inf). Warp per row, CTA per row, and the
// wide groups of vec 1 / 2 whose maxima meet in shared memory (NaN must survive that max too).
std::vector<QCase> non_finite_cases() {
  return {
      {DType::bf16, DType::f32, DType::bf16, DType::f32, 3, 256},
      {DType::bf16, DType::f32, DType::bf16, DType::ue8m0, 3, 2048},
      {DType::f16, DType::f32, DType::f32, DType::f32, 4, 4096, 0, 0},
      {DType::bf16, DType::f32, DType::bf16, DType::f32, 3, 1024, 1, 1},   // vec 1
      {DType::bf16, DType::f32, DType::f32, DType::ue8m0, 3, 640, 2, 2},  // vec 2
  };
}

void poke_non_finite(HostTensor& x, HostTensor& res, HostTensor& w) {
  constexpr int64_t kInfCol = 130;
  const int64_t H = x.shape()[1];
  x.set({0, 5}, std::numeric_limits<double>::quiet_NaN());
  w.set({kInfCol}, std::numeric_limits<double>::infinity());
  x.set({1, kInfCol}, 1.0);  // a nonzero stored residual under the infinite weight
  res.set({1, kInfCol}, 0.5);
  for (int64_t h = 0; h < H; ++h) {
    x.set({2, h}, 0.0);
    res.set({2, h}, 0.0);
  }
}

// Under each poison byte: with the default 0xFF an unwritten scale or code already reads as NaN.
TEST(FusedAddRmsNormQuantFp8GroupKernel, NonFiniteAndZeroRows) {
  TEJAS_SEEDED_TEST_RNG();
  testsupport::for_each_poison([&] {
    for (const QCase& c : non_finite_cases()) check_case(Backend::emulator, c, rng, poke_non_finite);
  });
}

TEST(FusedAddRmsNormQuantFp8GroupKernelCuda, NonFiniteAndZeroRows) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  testsupport::for_each_poison([&] {
    for (const QCase& c : non_finite_cases()) check_case(Backend::cuda, c, rng, poke_non_finite);
  });
}

TEST(FusedAddRmsNormQuantFp8GroupKernel, EmulatorCounters) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t T = 3, H = 4096, G = H / kGroup;
  HostTensor x(DType::bf16, {T, H}), res(DType::bf16, {T, H});
  HostTensor q(DType::e4m3, {T, H}), w(DType::bf16, {1, H});
  HostTensor scales(DType::f32, {T, G});
  check::fill_normal(x, rng);
  check::fill_normal(res, rng);
  check::fill_normal(w, rng, 1.0, 0.5);
  TensorView w1 = w.view();  // [1, H] -> [H]
  w1.ndim = 1;
  w1.shape[0] = H;
  w1.stride[0] = 1;
  TEJAS_ASSERT_OK(fused_add_rms_norm_quant_fp8_group(ctx_for(Backend::emulator), x, res, w1, kEps, q, scales));
  const auto& reps = detail::last_emulator_reports();
  ASSERT_EQ(reps.size(), 1u);
  const emu::Counters& k = reps[0].counters;
  EXPECT_DOUBLE_EQ(k.sectors_per_load_request(), 16.0);  // x, residual, weight: 16-byte lanes
  EXPECT_EQ(k.global_bytes_read_unique, static_cast<uint64_t>(2 * T * H * 2 + H * 2));
  EXPECT_EQ(k.global_bytes_written_unique, static_cast<uint64_t>(T * H * 2 + T * H + T * G * 4));
  EXPECT_EQ(k.bank_conflict_wavefronts(), 0u);
}

// TEJAS_TUNE norm.pipeline (persistent CTAs, rows copied ahead by cp.async): the same rules, on
// rows the variant takes (T >= 2 x the emulator's 3 CTAs, whole 16-byte vectors), f32 and ue8m0
// scales, row- and column-major; each row of x and the residual copied exactly once. The rows of
// H <= 2048 go one warp per row by default (norm.warp_items, norm_warp_pipe_kernel: a group is
// half a warp's item, H = 384's second item is half a warp, T = 29 walks the emulator's 12
// warps twice and more) and one CTA per row at norm.warp_items=0.
TEST(FusedAddRmsNormQuantFp8GroupKernel, PipelineVariant) {
  TEJAS_SEEDED_TEST_RNG();
  const std::vector<QCase> list = {
      {DType::bf16, DType::bf16, DType::bf16, DType::f32, 7, 2048},
      {DType::f16, DType::f16, DType::f16, DType::ue8m0, 8, 4096, 8},
      {DType::bf16, DType::bf16, DType::bf16, DType::f32, 7, 1152, 0, 0, true},
      {DType::bf16, DType::bf16, DType::bf16, DType::ue8m0, 29, 384},
      {DType::f16, DType::f16, DType::bf16, DType::f32, 27, 1152, 0, 0, true},  // the per-element add
  };
  {
    const detail::ScopedTuneOverride defaults(detail::Tune{});  // one row ahead by default
    check_case(Backend::emulator, list[0], rng);
    EXPECT_EQ(norm::last_config().pipeline_stages, 1);
  }
  {
    detail::Tune off;
    off.norm_pipeline_fp8 = 0;
    const detail::ScopedTuneOverride variant(off);
    check_case(Backend::emulator, list[0], rng);
    EXPECT_EQ(norm::last_config().pipeline_stages, 0);
  }
  for (int items : {8, 0})
    for (int stages : {1, 2}) {
      SCOPED_TRACE(::testing::Message() << "norm.pipeline=" << stages << " norm.warp_items=" << items);
      detail::Tune t;
      t.norm_pipeline_fp8 = stages;  // the fp8 outputs' key
      t.norm_warp_items = items;
      const detail::ScopedTuneOverride variant(t);
      for (const QCase& c : list) {
        check_case(Backend::emulator, c, rng);
        const auto& reps = detail::last_emulator_reports();
        ASSERT_EQ(reps.size(), 1u);
        EXPECT_EQ(reps[0].counters.cp_async_bytes, static_cast<uint64_t>(2 * c.T * c.H * 2)) << describe(c);
        EXPECT_EQ(reps[0].counters.bank_conflict_wavefronts(), 0u) << describe(c);
        EXPECT_EQ(norm::last_config().pipeline_stages, stages) << describe(c);
        EXPECT_EQ(norm::last_config().warp_per_row, items > 0 && c.H <= 2048) << describe(c);
      }
    }
}

TEST(FusedAddRmsNormQuantFp8GroupKernelCuda, MatchesReference) {
  TEJAS_REQUIRE_CUDA();
  auto all = cases();
  for (const QCase& c : largest_cases()) all.push_back(c);
  run_all(Backend::cuda, all);
}

// On a GPU: T above twice the pipelined kernel's resident CTAs for the case (read from a
// two-row call under the variant; the launcher queries the occupancy at any T), so the variant
// runs on any GPU without the host side (~1 us per element on a loaded GPU machine) growing
// past its budget.
TEST(FusedAddRmsNormQuantFp8GroupKernelCuda, PipelineVariant) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  detail::Tune t;
  t.norm_pipeline_fp8 = 2;  // the fp8 outputs' key
  t.norm_warp_items = 0;    // a CTA per row here (H = 2048 would take the warp-row kernel: below)
  {
    const detail::ScopedTuneOverride variant(t);
    for (QCase c : {QCase{DType::bf16, DType::bf16, DType::bf16, DType::f32, 2, 2048},
                    QCase{DType::f16, DType::f16, DType::f16, DType::ue8m0, 2, 4096, 8}}) {
      check_case(Backend::cuda, c, rng);
      const int64_t resident = norm::last_resident_ctas();
      ASSERT_GT(resident, 0) << describe(c);
      c.T = 2 * resident + 1;
      check_case(Backend::cuda, c, rng);
      EXPECT_EQ(norm::last_config().pipeline_stages, 2) << describe(c);
      EXPECT_FALSE(norm::last_config().warp_per_row) << describe(c);
    }
  }
  t.norm_warp_items = detail::Tune{}.norm_warp_items;
  const detail::ScopedTuneOverride variant(t);
  // The warp-row pipeline (H <= 2048) capped at 8 resident CTAs: 197 rows on 32 warps, so every
  // warp walks 6-7 rows and refills its three buffers on the hardware.
  const norm::ScopedWarpResidentCap cap(8);
  for (const QCase& c : {QCase{DType::bf16, DType::bf16, DType::bf16, DType::ue8m0, 197, 384},
                         QCase{DType::f16, DType::f16, DType::bf16, DType::f32, 197, 1152, 0, 0, true}}) {
    check_case(Backend::cuda, c, rng);
    EXPECT_TRUE(norm::last_config().warp_per_row && norm::last_config().pipeline_stages == 2) << describe(c);
    EXPECT_EQ(norm::last_config().grid, 8) << describe(c);
  }
}

}  // namespace
