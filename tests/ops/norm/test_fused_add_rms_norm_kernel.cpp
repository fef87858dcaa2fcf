// fused_add_rms_norm kernels (emulator; cuda when a GPU is present) against the reference
// backend: residual dtypes beside every x dtype (the stored residual must match exactly: one
// rounding of the exact sum), short and long rows, tails, padded and misaligned rows, fp8
// outputs, and the emulator's counters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/common/emu_launch.h"
#include "ops/norm/kernel_cases.h"
#include "ops/norm/launch.h"
#include "runtime/tune.h"
#include "support/backends.h"
#include "support/poison.h"
#include "support/seed.h"

using namespace tejas;
using namespace tejas::normtest;
using check::HostTensor;

namespace {

struct Shape {
  int64_t T, H, pad;
};
constexpr Shape kShapes[] = {{1, 1, 0}, {3, 9, 2}, {37, 256, 0}, {3, 1001, 0}, {2, 4096, 8}};

NormCase fused(DType x, DType w, DType res, DType out, const Shape& s) {
  NormCase c{x, w, out, s.T, s.H, s.pad};
  c.fused = true;
  c.res = res;
  return c;
}

std::vector<NormCase> plain_cases() {
  std::vector<NormCase> v;
  for (DType x : {DType::bf16, DType::f16, DType::f32})
    for (DType res : {DType::bf16, DType::f16, DType::f32})
      for (const Shape& s : kShapes) v.push_back(fused(x, x == DType::f32 ? DType::f32 : x, res, x, s));
  v.push_back(fused(DType::bf16, DType::f32, DType::f32, DType::bf16, {5, 520, 0}));
  return v;
}

std::vector<NormCase> fp8_and_misaligned_cases() {
  std::vector<NormCase> v;
  for (Fp8ScaleMode m : {Fp8ScaleMode::dynamic_per_token, Fp8ScaleMode::static_per_tensor}) {
    NormCase c = fused(DType::bf16, DType::bf16, DType::bf16, DType::e4m3, {4, 2048, 0});
    c.mode = m;
    v.push_back(c);
  }
  v.push_back(fused(DType::f16, DType::f32, DType::f32, DType::e4m3, {3, 72, 3}));
  // f32 x into fp8 (norm.h allows it): a short row and a CTA row, both scale modes.
  for (Fp8ScaleMode m : {Fp8ScaleMode::dynamic_per_token, Fp8ScaleMode::static_per_tensor})
    for (const Shape& s : {Shape{3, 72, 3}, Shape{2, 2056, 0}}) {
      NormCase c = fused(DType::f32, DType::f32, DType::f32, DType::e4m3, s);
      c.mode = m;
      v.push_back(c);
    }
  // Static scales whose reciprocal is not a normal f32 number (Inf, subnormal): the kernel
  // divides there instead of multiplying by 1 / s (every code saturates, or is 0). y = 0 in
  // element 0 of each row: 0 * (1 / 1e-39) would be NaN, 0 / 1e-39 is 0.
  for (double s : {1e-39, 3e38}) {
    NormCase c = fused(DType::bf16, DType::bf16, DType::bf16, DType::e4m3, {2, 256, 0});
    c.mode = Fp8ScaleMode::static_per_tensor;
    c.static_scale = s;
    c.zero_first = true;
    v.push_back(c);
  }
  for (DType x : {DType::bf16, DType::f32}) {
    NormCase c = fused(x, DType::f32, DType::bf16, x, {3, 1030, 1});
    c.shift = 1;
    v.push_back(c);
  }
  return v;
}

void run_all(Backend b, const std::vector<NormCase>& cases) {
  TEJAS_SEEDED_TEST_RNG();
  for (const NormCase& c : cases) check_norm_case(b, c, rng);
}

TEST(FusedAddRmsNormKernel, MatchesReference) { run_all(Backend::emulator, plain_cases()); }
TEST(FusedAddRmsNormKernel, Fp8AndMisaligned) { run_all(Backend::emulator, fp8_and_misaligned_cases()); }
// The widest row: bf16, f16 (with an f32 residual) and f32, and bf16 into fp8; on the GPU too
// (FusedAddRmsNormKernelCuda.MatchesReference).
std::vector<NormCase> largest_cases() {
  return {fused(DType::bf16, DType::bf16, DType::bf16, DType::bf16, {1, 16384, 0}),
          fused(DType::f16, DType::f16, DType::f32, DType::f16, {2, 16384, 0}),
          fused(DType::f32, DType::f32, DType::f32, DType::f32, {1, 16384, 0}),
          fused(DType::bf16, DType::f32, DType::bf16, DType::e4m3, {2, 16384, 0})};
}

TEST(FusedAddRmsNormKernel, LargestHidden) { run_all(Backend::emulator, largest_cases()); }

// f32 x into a bf16 residual: the sum must round once. x = a bf16 midpoint (1 + 2^-8 between 1
// and 1 + 2^-7) and residual = 2^-30: the exact sum lies just above the midpoint, so it rounds up
// to 1 + 2^-7; an f32 sum (exactly the midpoint) would round to even, down to 1. The GPU too
// when present.
TEST(FusedAddRmsNormKernel, F32IntoBf16ResidualRoundsOnce) {
  constexpr double kMid = 1.0 + 0x1p-8, kTiny = 0x1p-30, kUp = 1.0 + 0x1p-7;
  const std::vector<Backend> backends = testsupport::kernel_backends();
  for (Backend backend : backends) {
    SCOPED_TRACE(backend_name(backend));
    HostTensor x(DType::f32, {1, 8}), res(DType::bf16, {1, 8}), w(DType::f32, {8}), out(DType::f32, {1, 8});
    for (int64_t h = 0; h < 8; ++h) {
      x.set({0, h}, h % 2 ? kMid : -kMid);
      res.set({0, h}, h % 2 ? kTiny : -kTiny);
      w.set({h}, 1.0);
    }
    TEJAS_ASSERT_OK(
        run_backend(backend, {&x, &res, &w, &out}, [](const ExecContext& ctx, const std::vector<TensorView>& v) {
          return fused_add_rms_norm(ctx, v[0], v[1], v[2], kEps, v[3]);
        }));
    for (int64_t h = 0; h < 8; ++h) EXPECT_EQ(res.get({0, h}), h % 2 ? kUp : -kUp) << h;
  }
}

// Non-finite rows on each kernel path (warp per row, CTA per row, misaligned vec 1): a NaN in x
// (row 0: NaN residual element, all-NaN output row), a sum that overflows the residual's dtype
// (row 1: Inf stored; rsqrt(Inf) = 0 makes the row 0, with NaN = Inf * 0 at that column), an Inf
// weight (column 3 of every row: +-Inf or NaN output there), finite rows unharmed. Kernel against reference: the same
// values (NaN where NaN, the same infinities), finite outputs within 1 ulp. The caller runs it
// under each poison byte: under the default 0xFF an unwritten output already reads as NaN.
void run_non_finite(Backend b, check::Rng& rng) {
  struct Case {
    int64_t T, H, shift;
  };
  for (const Case& s : {Case{4, 40, 0}, Case{4, 2048, 0}, Case{3, 4100, 1}}) {
    SCOPED_TRACE(::testing::Message() << "T=" << s.T << " H=" << s.H << " shift=" << s.shift);
    HostTensor x = shifted(DType::bf16, s.T, s.H, 0, s.shift), w(DType::f32, {s.H});
    HostTensor res_ref(DType::bf16, {s.T, s.H}), res_got = shifted(DType::bf16, s.T, s.H, 0, s.shift);
    HostTensor out_ref(DType::bf16, {s.T, s.H}), out_got = shifted(DType::bf16, s.T, s.H, 0, s.shift);
    fill_rows(x, rng);
    fill_rows(res_ref, rng);
    check::fill_normal(w, rng, 1.0, 0.5);
    x.set({0, 7}, std::numeric_limits<double>::quiet_NaN());
    x.set({1, 1}, 3.0e38);  // bf16 max is ~3.39e38: the sum overflows
    res_ref.set({1, 1}, 3.0e38);
    w.set({3}, std::numeric_limits<double>::infinity());
    res_got.copy_from(res_ref);
    auto call = [](const ExecContext& ctx, const std::vector<TensorView>& v) {
      return fused_add_rms_norm(ctx, v[0], v[1], v[2], kEps, v[3]);
    };
    TEJAS_ASSERT_OK(run_backend(Backend::reference, {&x, &res_ref, &w, &out_ref}, call));
    TEJAS_ASSERT_OK(run_backend(b, {&x, &res_got, &w, &out_got}, call));
    ASSERT_TRUE(std::isnan(out_ref.get({0, 0})) && std::isinf(res_ref.get({1, 1})) && out_ref.get({1, 0}) == 0.0 &&
                std::isnan(out_ref.get({1, 1})) && std::isinf(out_ref.get({2, 3})))
        << "the reference no longer makes the rows this test is about";
    auto r = check::compare(res_got, res_ref, check::Tolerance{});  // equal values, NaN where NaN
    EXPECT_TRUE(r.ok) << "residual: " << r.message;
    r = check::compare(out_got, out_ref, tolerance_for(DType::bf16));
    EXPECT_TRUE(r.ok) << "out: " << r.message;
  }
}

// The static fp8 scale's value (zero, negative, Inf, NaN): rejected by the reference always and by
// the emulator in debug-check mode, naming it, before any work: the residual (updated in place by
// the op) and the output keep their bytes.
TEST(FusedAddRmsNormKernel, StaticScaleContentsChecked) {
  TEJAS_SEEDED_TEST_RNG();
  HostTensor x(DType::bf16, {2, 64}), res(DType::bf16, {2, 64}), w(DType::bf16, {64}), out(DType::e4m3, {2, 64});
  HostTensor scale(DType::f32, {1});
  check::fill_normal(x, rng);
  check::fill_normal(res, rng);
  check::fill_normal(w, rng);
  const auto res_before = optest::bits_of(res), out_before = optest::bits_of(out);
  ExecContext debug = ctx_for(Backend::emulator);
  debug.debug_checks = true;
  for (double bad : {0.0, -1.0, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    SCOPED_TRACE(bad);
    scale.set_flat(0, bad);
    for (const ExecContext& ctx : {ctx_for(Backend::reference), debug}) {
      TEJAS_EXPECT_INVALID(
          fused_add_rms_norm(ctx, x, res, w, kEps, out, {scale.view(), Fp8ScaleMode::static_per_tensor}),
          "fused_add_rms_norm: out_scale.scale: expected");
      EXPECT_TRUE(optest::unchanged(res, res_before) && optest::unchanged(out, out_before));
    }
  }
}

TEST(FusedAddRmsNormKernel, NonFiniteRows) {
  TEJAS_SEEDED_TEST_RNG();
  testsupport::for_each_poison([&] { run_non_finite(Backend::emulator, rng); });
}

// x and the residual in one 16-bit dtype (the packed add, NormParams::packed_add) on sums at the
// edges: exact cancellation (+0, and -0 + -0), subnormal operands and results, sums that round
// at or just below the overflow boundary (f16 65504 + 16 is the midpoint to 65536: Inf; + 8 is
// not), operands 2^-30 apart, random values across the exponent range, and in row 0 +Inf + -Inf
// and a NaN operand; every kernel path (warp per row, CTA per row, the pipelined CTA at T >= 6 on
// the emulator's 3 resident CTAs, packed pairs beside a tail, misaligned vec 1 and 2). The stored
// residual must equal the reference's bits (one rounding of the exact sum; NaN where NaN), with
// norm.packed_add on and off.
// Returns how many cases ran the pipelined kernel (emulator runs).
int run_hard_sums(Backend b, check::Rng& rng) {
  int pipelined = 0;
  struct Case {
    int64_t T, H, shift, pad = 0;
  };
  for (DType dt : {DType::bf16, DType::f16}) {
    const double big = dt == DType::f16 ? 65504.0 : 3.3895313892515355e38;  // the largest finite
    const double ulp_big = dt == DType::f16 ? 32.0 : 0x1p120;              // its spacing
    const double tiny = dt == DType::f16 ? 0x1p-24 : 0x1p-133;             // the smallest subnormal
    // {T, H, shift, pad}: 1030 + pad 2 is a 16-byte row of 128 vectors and a tail of 6.
    for (const Case& s : {Case{3, 40, 0}, Case{3, 2048, 0}, Case{5, 4096, 0}, Case{7, 4096, 0}, Case{8, 2048, 0},
                          Case{3, 1030, 0, 2}, Case{3, 1030, 1}, Case{3, 516, 2}}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(dt) << " T=" << s.T << " H=" << s.H << " shift=" << s.shift
                                        << " pad=" << s.pad);
      HostTensor x = shifted(dt, s.T, s.H, s.pad, s.shift), w(dt, {s.H});
      HostTensor res_ref(dt, {s.T, s.H}), res_got = shifted(dt, s.T, s.H, s.pad, s.shift);
      HostTensor out_ref(dt, {s.T, s.H}), out_got = shifted(dt, s.T, s.H, s.pad, s.shift);
      check::fill_normal(w, rng, 1.0, 0.5);
      for (int64_t t = 0; t < s.T; ++t) {
        for (int64_t h = 0; h < s.H; ++h) {
          double a = 0, r = 0;
          const double sign = rng.randint(0, 1) ? 1.0 : -1.0;
          switch ((t * s.H + h) % 8) {
            case 0: a = sign * rng.uniform(0.5, 2.0); r = -a; break;                            // exact 0
            case 1: a = sign * tiny * static_cast<double>(rng.randint(1, 100)); r = sign * tiny * 3; break;
            case 2: a = sign * big; r = sign * ulp_big / 2; break;                              // a midpoint
            case 3: a = sign * big; r = sign * ulp_big / 4; break;                              // below it
            case 4: a = sign * rng.uniform(1.0, 2.0); r = sign * rng.uniform(1.0, 2.0) * 0x1p-30; break;
            case 5: a = -0.0; r = -0.0; break;
            default:
              a = sign * rng.uniform(1.0, 2.0) * std::ldexp(1.0, static_cast<int>(rng.randint(-12, 12)));
              r = (rng.randint(0, 1) ? 1.0 : -1.0) * rng.uniform(1.0, 2.0) *
                  std::ldexp(1.0, static_cast<int>(rng.randint(-12, 12)));
          }
          if (t == 0 && h == 6) a = std::numeric_limits<double>::infinity(), r = -a;  // NaN sum
          if (t == 0 && h == 7) a = std::numeric_limits<double>::quiet_NaN();
          x.set({t, h}, a);  // rounded to dt (cases 0-3 and 5 are exact in both dtypes)
          res_ref.set({t, h}, r);
        }
      }
      res_got.copy_from(res_ref);
      auto call = [](const ExecContext& ctx, const std::vector<TensorView>& v) {
        return fused_add_rms_norm(ctx, v[0], v[1], v[2], kEps, v[3]);
      };
      EXPECT_TRUE(run_backend(Backend::reference, {&x, &res_ref, &w, &out_ref}, call).ok());
      EXPECT_TRUE(run_backend(b, {&x, &res_got, &w, &out_got}, call).ok());
      if (b == Backend::emulator) pipelined += norm::last_config().pipeline_stages > 0;
      for (int64_t t = 0; t < s.T; ++t)
        for (int64_t h = 0; h < s.H; ++h) {
          const uint64_t got = res_got.bits_flat(t * s.H + h), want = res_ref.bits_flat(t * s.H + h);
          if (got != want && !(std::isnan(res_got.get({t, h})) && std::isnan(res_ref.get({t, h})))) {
            ADD_FAILURE() << "residual [" << t << ", " << h << "]: got 0x" << std::hex << got << " want 0x" << want;
            return pipelined;
          }
        }
      const auto r = check::compare(out_got, out_ref, tolerance_for(dt));
      EXPECT_TRUE(r.ok) << "out: " << r.message;
    }
  }
  return pipelined;
}

TEST(FusedAddRmsNormKernel, PackedAddHardSums) {
  TEJAS_SEEDED_TEST_RNG();
  for (int on : {1, 0}) {
    for (int stages : {1, 0}) {
      SCOPED_TRACE(::testing::Message() << "norm.packed_add=" << on << " norm.pipeline=" << stages);
      detail::Tune t;
      t.norm_packed_add = on;
      t.norm_pipeline = stages;
      const detail::ScopedTuneOverride variant(t);
      const int pipelined = run_hard_sums(Backend::emulator, rng);
      if (stages > 0) {
        EXPECT_GE(pipelined, 4) << "the T >= 6 rows of whole vectors pipeline (bf16 and f16)";
      } else {
        EXPECT_EQ(pipelined, 0);
      }
    }
  }
  detail::Tune t;
  t.norm_packed_add = 0;  // the per-element add on every other case
  const detail::ScopedTuneOverride variant(t);
  for (const NormCase& c : plain_cases()) check_norm_case(Backend::emulator, c, rng);
  for (const NormCase& c : fp8_and_misaligned_cases()) check_norm_case(Backend::emulator, c, rng);
}

TEST(FusedAddRmsNormKernelCuda, PackedAddHardSums) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  run_hard_sums(Backend::cuda, rng);
}

TEST(FusedAddRmsNormKernelCuda, NonFiniteRows) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  testsupport::for_each_poison([&] { run_non_finite(Backend::cuda, rng); });
}

TEST(FusedAddRmsNormKernel, EmulatorCounters) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t T = 3, H = 4096;
  HostTensor x(DType::bf16, {T, H}), res(DType::bf16, {T, H});
  HostTensor out(DType::bf16, {T, H}), w(DType::bf16, {1, H});
  fill_rows(x, rng);
  fill_rows(res, rng);
  check::fill_normal(w, rng, 1.0, 0.5);
  TensorView w1 = w.view();  // [1, H] -> [H]
  w1.ndim = 1;
  w1.shape[0] = H;
  w1.stride[0] = 1;
  TEJAS_ASSERT_OK(fused_add_rms_norm(ctx_for(Backend::emulator), x, res, w1, kEps, out));
  const auto& reps = detail::last_emulator_reports();
  ASSERT_EQ(reps.size(), 1u);
  const emu::Counters& k = reps[0].counters;
  constexpr uint64_t kRowBytes = T * H * 2;
  EXPECT_DOUBLE_EQ(k.sectors_per_load_request(), 16.0);   // x, residual, weight: 16-byte lanes
  EXPECT_DOUBLE_EQ(k.sectors_per_store_request(), 16.0);  // residual, out
  EXPECT_EQ(k.global_bytes_read_unique, 2 * kRowBytes + H * 2);
  EXPECT_EQ(k.global_bytes_written_unique, 2 * kRowBytes);
  EXPECT_EQ(k.bank_conflict_wavefronts(), 0u);
}

// TEJAS_TUNE norm.prefetch_rows: every case still matches the reference (prefetches change no
// value), and the counter shows each row prefetching the x and residual vectors of the row that
// far ahead, where there is one (T = 3, H = 4096: 512 16-byte vectors per row and tensor), beside
// the weight prefetches of every row.
TEST(FusedAddRmsNormKernel, PrefetchRowsVariant) {
  TEJAS_SEEDED_TEST_RNG();
  for (int ahead : {1, 2, 5}) {
    SCOPED_TRACE(::testing::Message() << "norm.prefetch_rows=" << ahead);
    detail::Tune t;
    t.norm_prefetch_rows = ahead;
    const detail::ScopedTuneOverride variant(t);
    for (const NormCase& c : plain_cases()) check_norm_case(Backend::emulator, c, rng);
    for (const NormCase& c : fp8_and_misaligned_cases()) check_norm_case(Backend::emulator, c, rng);
    constexpr int64_t T = 3, H = 4096, kVecs = H / 8;
    HostTensor x(DType::bf16, {T, H}), res(DType::bf16, {T, H}), out(DType::bf16, {T, H}), w(DType::bf16, {H});
    fill_rows(x, rng);
    fill_rows(res, rng);
    check::fill_normal(w, rng, 1.0, 0.5);
    TEJAS_ASSERT_OK(fused_add_rms_norm(ctx_for(Backend::emulator), x, res, w, kEps, out));
    const auto& reps = detail::last_emulator_reports();
    ASSERT_EQ(reps.size(), 1u);
    const uint64_t rows_ahead = static_cast<uint64_t>(std::max<int64_t>(T - ahead, 0));
    EXPECT_EQ(reps[0].counters.global_prefetches, T * kVecs + rows_ahead * 2 * kVecs);
    EXPECT_EQ(reps[0].counters.global_bytes_read_unique, 2 * T * H * 2 + H * 2) << "prefetches read nothing";
  }
}

TEST(FusedAddRmsNormKernelCuda, MatchesReference) {
  TEJAS_REQUIRE_CUDA();
  std::vector<NormCase> all = plain_cases();
  for (const auto& more : {fp8_and_misaligned_cases(), largest_cases()})
    all.insert(all.end(), more.begin(), more.end());
  run_all(Backend::cuda, all);
}

}  // namespace
