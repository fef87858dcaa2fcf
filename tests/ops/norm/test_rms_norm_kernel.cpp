// rms_norm kernels (emulator backend; cuda when a GPU is present) against the reference backend:
// every dtype pairing, short rows (one warp per row) and long ones (one CTA per row), tails,
// padded and misaligned rows, in place, fp8 outputs, non-finite rows, and the emulator's
// counters (coalescing, compulsory bytes, bank conflicts).
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "ops/common/emu_launch.h"
#include "ops/norm/kernel_cases.h"
#include "support/backends.h"
#include "support/poison.h"
#include "support/seed.h"

using namespace tejas;
using namespace tejas::normtest;
using check::HostTensor;

namespace {

struct DTypes {
  DType x, w;
};
constexpr DTypes kDTypes[] = {{DType::bf16, DType::bf16}, {DType::bf16, DType::f32}, {DType::f16, DType::f16},
                              {DType::f16, DType::f32},   {DType::f32, DType::f32}};

struct Shape {
  int64_t T, H, pad;
};
// T = 1, 3, a few dozen; H = 1, odd, a multiple of 8 (warp per row), tails past a vector, CTA rows.
constexpr Shape kShapes[] = {{1, 1, 0}, {3, 7, 0}, {37, 200, 0}, {3, 1003, 5}, {2, 4104, 8}};

std::vector<NormCase> plain_cases() {
  std::vector<NormCase> v;
  for (const DTypes& d : kDTypes)
    for (const Shape& s : kShapes) v.push_back({d.x, d.w, d.x, s.T, s.H, s.pad});
  return v;
}

std::vector<NormCase> fp8_cases() {
  std::vector<NormCase> v;
  for (DType x : {DType::bf16, DType::f16, DType::f32})
    for (Fp8ScaleMode m : {Fp8ScaleMode::dynamic_per_token, Fp8ScaleMode::static_per_tensor})
      for (const Shape& s : {Shape{3, 33, 0}, Shape{5, 2056, 3}}) {
        NormCase c{x, DType::f32, DType::e4m3, s.T, s.H, s.pad};
        c.mode = m;
        v.push_back(c);
      }
  return v;
}

// Views 1 element (2 or 4 bytes) into their storage, and odd token strides: narrower vectors.
std::vector<NormCase> misaligned_cases() {
  std::vector<NormCase> v;
  for (const DTypes& d : kDTypes) {
    NormCase c{d.x, d.w, d.x, 3, 1040, 1};
    c.shift = 1;
    v.push_back(c);
  }
  NormCase half_row{DType::bf16, DType::bf16, DType::bf16, 4, 512, 2};  // 4-byte aligned rows: vec 2
  v.push_back(half_row);
  NormCase fp8{DType::bf16, DType::bf16, DType::e4m3, 3, 300, 1};
  fp8.shift = 1;
  v.push_back(fp8);
  return v;
}

void run_all(Backend b, const std::vector<NormCase>& cases) {
  TEJAS_SEEDED_TEST_RNG();
  for (const NormCase& c : cases) check_norm_case(b, c, rng);
}

TEST(RmsNormKernel, MatchesReference) { run_all(Backend::emulator, plain_cases()); }
TEST(RmsNormKernel, Fp8MatchesReference) { run_all(Backend::emulator, fp8_cases()); }
TEST(RmsNormKernel, MisalignedViews) { run_all(Backend::emulator, misaligned_cases()); }

TEST(RmsNormKernel, InPlace) {
  std::vector<NormCase> v;
  for (DType x : {DType::bf16, DType::f16, DType::f32}) {
    NormCase c{x, DType::f32, x, 5, 96, 4};
    c.in_place = true;
    v.push_back(c);
  }
  run_all(Backend::emulator, v);
}

// The widest row, every x dtype, and the fp8 output (one scale over 16384 values, both modes);
// on the GPU too (RmsNormKernelCuda.MatchesReference).
std::vector<NormCase> largest_cases() {
  std::vector<NormCase> v = {{DType::bf16, DType::bf16, DType::bf16, 1, 16384, 0},
                             {DType::f16, DType::f16, DType::f16, 2, 16384, 0},
                             {DType::f32, DType::f32, DType::f32, 1, 16384, 0}};
  for (Fp8ScaleMode m : {Fp8ScaleMode::dynamic_per_token, Fp8ScaleMode::static_per_tensor}) {
    NormCase c{DType::bf16, DType::f32, DType::e4m3, 2, 16384, 0};
    c.mode = m;
    v.push_back(c);
  }
  return v;
}

TEST(RmsNormKernel, LargestHidden) { run_all(Backend::emulator, largest_cases()); }

TEST(RmsNormKernel, AboveLargestHiddenIsUnsupported) {
  HostTensor x(DType::bf16, {1, 16392}), w(DType::bf16, {16392}), out(DType::bf16, {1, 16392});
  const auto before = optest::bits_of(out);
  const Status s = rms_norm(ctx_for(Backend::emulator), x, w, kEps, out);
  EXPECT_EQ(s.code(), StatusCode::unsupported) << s.to_string();
  EXPECT_TRUE(optest::unchanged(out, before));
}

// NaN poisons its row (scale NaN, codes NaN); Inf gives NaN at its place and zeros elsewhere.
// Run under each poison byte (tests/support/poison.h): with the default 0xFF an unwritten output
// already reads as NaN, so the NaN rows pass only if the kernel wrote them under 0x00 / 0x55. The
// GPU too when present.
TEST(RmsNormKernel, NonFiniteRows) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t T = 3, H = 40, kNanRow = 0, kInfRow = 1, kCol = 17;
  const std::vector<Backend> backends = testsupport::kernel_backends();
  for (Backend backend : backends)
    for (DType out_dt : {DType::bf16, DType::e4m3}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(out_dt) << " on " << backend_name(backend));
      HostTensor x(DType::bf16, {T, H}), w(DType::bf16, {H});
      fill_rows(x, rng);
      check::fill_normal(w, rng, 1.0, 0.5);
      x.set({kNanRow, kCol}, std::numeric_limits<double>::quiet_NaN());
      x.set({kInfRow, kCol}, std::numeric_limits<double>::infinity());
      testsupport::for_each_poison([&] {
        HostTensor out(out_dt, {T, H}), scale(DType::f32, {T});
        const bool fp8 = out_dt == DType::e4m3;
        TEJAS_ASSERT_OK(
            run_backend(backend, {&x, &w, &out, fp8 ? &scale : nullptr},
                        [](const ExecContext& ctx, const std::vector<TensorView>& v) {
                          return rms_norm(ctx, v[0], v[1], kEps, v[2], {v[3], Fp8ScaleMode::dynamic_per_token});
                        }));
        for (int64_t h = 0; h < H; ++h) {
          const uint64_t nan_bits = out.bits_flat(kNanRow * H + h), inf_bits = out.bits_flat(kInfRow * H + h);
          if (out_dt == DType::e4m3) {  // the NaN y (Inf * 0) makes the row's scale NaN: all codes NaN
            EXPECT_TRUE(optest::e4m3_is_nan(nan_bits)) << h;
            EXPECT_TRUE(optest::e4m3_is_nan(inf_bits)) << h;
          } else {
            EXPECT_TRUE(std::isnan(out.get({kNanRow, h}))) << h;
            if (h == kCol)
              EXPECT_TRUE(std::isnan(out.get({kInfRow, h})));
            else
              EXPECT_EQ(out.get({kInfRow, h}), 0.0) << h;
          }
          const bool finite_row_nan =
              out_dt == DType::e4m3 ? optest::e4m3_is_nan(out.bits_flat(2 * H + h)) : std::isnan(out.get({2, h}));
          EXPECT_FALSE(finite_row_nan) << "row 2 is finite, h=" << h;
        }
        if (out_dt == DType::e4m3) {
          EXPECT_TRUE(std::isnan(scale.get({kNanRow})));
          EXPECT_TRUE(std::isnan(scale.get({kInfRow})));
          EXPECT_GT(scale.get({2}), 0.0);
        }
      });
    }
}

// The harness's f32 comparison: equal values pass (the same infinity too, where Inf - Inf is
// NaN), NaN meets only NaN, and other values need the relative bound.
TEST(NormHarness, F32CloseHandlesInfinitiesAndNaN) {
  constexpr double kInf = std::numeric_limits<double>::infinity(), kNaN = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(f32_close(kInf, kInf, 0.0));
  EXPECT_TRUE(f32_close(-kInf, -kInf, 1e-6));
  EXPECT_FALSE(f32_close(kInf, -kInf, 1e-6));
  EXPECT_FALSE(f32_close(1e30, kInf, 1e-6));
  EXPECT_FALSE(f32_close(kInf, 1e30, 1e-6));
  EXPECT_TRUE(f32_close(kNaN, kNaN, 0.0));
  EXPECT_FALSE(f32_close(kNaN, 1.0, 1e-6));
  EXPECT_FALSE(f32_close(1.0, kNaN, 1e-6));
  EXPECT_FALSE(f32_close(kNaN, kInf, 1e-6));
  EXPECT_TRUE(f32_close(1.0, 1.0, 0.0));
  EXPECT_TRUE(f32_close(1.0 + 1e-7, 1.0, 2e-7));
  EXPECT_FALSE(f32_close(1.0 + 1e-5, 1.0, 2e-7));
}

TEST(RmsNormKernel, StaticScaleContentsCheckedInDebugMode) {
  HostTensor x(DType::bf16, {2, 64}), w(DType::bf16, {64}), out(DType::e4m3, {2, 64}), scale(DType::f32, {1});
  check::Rng rng(1);
  check::fill_normal(x, rng);
  check::fill_normal(w, rng);
  const auto before = optest::bits_of(out);
  for (double bad : {0.0, -1.0, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    scale.set_flat(0, bad);
    ExecContext ctx = ctx_for(Backend::emulator);
    ctx.debug_checks = true;
    TEJAS_EXPECT_INVALID(rms_norm(ctx, x, w, kEps, out, {scale.view(), Fp8ScaleMode::static_per_tensor}),
                         "out_scale.scale");
    EXPECT_TRUE(optest::unchanged(out, before));
  }
}

// Counters of the last call: ideal sectors per request for the access width, compulsory bytes
// only, no bank conflicts (the op returning ok means no findings).
struct CounterCase {
  DType w;
  double load_sectors;   // per request. bf16 weight: 16-byte lanes (16). f32 weight: vec 4, so x
                         // uses 8-byte lanes (8) and the weight 16-byte lanes (16), as many each
  double store_sectors;  // 16-byte lanes (16) or 8-byte lanes (8)
};

TEST(RmsNormKernel, EmulatorCounters) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t T = 3, H = 4096, kPad = 64;
  for (const CounterCase& cc : {CounterCase{DType::bf16, 16.0, 16.0}, CounterCase{DType::f32, (8.0 + 16.0) / 2, 8.0}}) {
    SCOPED_TRACE(dtype_name(cc.w));
    HostTensor x(DType::bf16, {T, H}, kPad), out(DType::bf16, {T, H}, kPad);
    HostTensor w(cc.w, {1, H});
    fill_rows(x, rng);
    check::fill_normal(w, rng, 1.0, 0.5);
    TensorView w1 = w.view();  // [1, H] -> [H] (HostTensor accessors keep the 2-d shape)
    w1.ndim = 1;
    w1.shape[0] = H;
    w1.stride[0] = 1;
    TEJAS_ASSERT_OK(rms_norm(ctx_for(Backend::emulator), x, w1, kEps, out));
    const auto& reps = detail::last_emulator_reports();
    ASSERT_EQ(reps.size(), 1u);
    const emu::Counters& k = reps[0].counters;
    EXPECT_DOUBLE_EQ(k.sectors_per_load_request(), cc.load_sectors);
    EXPECT_DOUBLE_EQ(k.sectors_per_store_request(), cc.store_sectors);
    EXPECT_EQ(k.global_bytes_read_unique, static_cast<uint64_t>(T * H * 2 + H * dtype_bits(cc.w) / 8));
    EXPECT_EQ(k.global_bytes_written_unique, static_cast<uint64_t>(T * H * 2));
    EXPECT_EQ(k.bank_conflict_wavefronts(), 0u);
  }
}

TEST(RmsNormKernelCuda, MatchesReference) {
  TEJAS_REQUIRE_CUDA();
  std::vector<NormCase> all = plain_cases();
  for (const auto& list : {fp8_cases(), misaligned_cases(), largest_cases()})
    all.insert(all.end(), list.begin(), list.end());
  for (DType x : {DType::bf16, DType::f16, DType::f32}) {  // RmsNormKernel.InPlace's cases
    NormCase in_place{x, DType::f32, x, 5, 96, 4};
    in_place.in_place = true;
    all.push_back(in_place);
  }
  run_all(Backend::cuda, all);
}

}  // namespace
