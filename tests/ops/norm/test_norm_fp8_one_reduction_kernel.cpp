// The norm.fp8_one_reduction variant (TEJAS_TUNE; config.h's with_fp8_one_reduction): fp8
// outputs with a dynamic per-token scale on 16-byte rows take the row's amax as
// inv_rms x max|v w| from the sum of squares' block reduction. Every case against the reference
// under the same rules as the default kernel (kernel_harness.h: scales within 32 f32 ulps, codes
// against the kernel's own scale), the config each launch ran with checked, the rows whose
// |v w| overflows f32 (the fallback to a second reduction), and the configs it does not take.
#include <gtest/gtest.h>

#include <vector>

#include "check/cuda_mem.h"
#include "ops/norm/kernel_cases.h"
#include "ops/norm/launch.h"
#include "runtime/tune.h"
#include "support/seed.h"

using namespace tejas;
using namespace tejas::normtest;
using check::HostTensor;

namespace {

detail::Tune one_reduction() {
  detail::Tune t;
  t.norm_fp8_one_reduction = 1;
  return t;
}

NormCase dynamic_case(DType x, int64_t T, int64_t H, int64_t pad, bool fused, DType res = DType::bf16) {
  NormCase c{x, x, DType::e4m3, T, H, pad};
  c.fused = fused;
  c.res = res;
  return c;
}

// Warp-per-row rows (H = 64, 200), CTA rows of E 8 (264, 2048) and E 16 with a padded row
// (4096 + 8) and the largest (16384); rms_norm and the fused op, bf16 and f16, residuals of
// either 16-bit dtype; rows of zeros first.
std::vector<NormCase> taken_cases() {
  std::vector<NormCase> v;
  for (DType x : {DType::bf16, DType::f16}) {
    for (bool fused : {false, true}) {
      v.push_back(dynamic_case(x, 5, 64, 0, fused));
      v.push_back(dynamic_case(x, 3, 200, 0, fused, DType::f16));
      v.push_back(dynamic_case(x, 4, 264, 0, fused));
      v.push_back(dynamic_case(x, 3, 2048, 0, fused));
      v.push_back(dynamic_case(x, 3, 4096, 8, fused));
    }
  }
  v.push_back(dynamic_case(DType::bf16, 2, norm::kMaxH, 0, true));
  NormCase zeros = dynamic_case(DType::bf16, 3, 2048, 0, true);
  zeros.zero_first = true;
  v.push_back(zeros);
  return v;
}

void run_taken(Backend b, check::Rng& rng) {
  for (const NormCase& c : taken_cases()) {
    check_norm_case(b, c, rng);
    EXPECT_TRUE(norm::last_config().fp8_one_reduction) << describe(c);
  }
}

TEST(NormFp8OneReduction, MatchesReference) {
  TEJAS_SEEDED_TEST_RNG();
  const detail::ScopedTuneOverride variant(one_reduction());
  run_taken(Backend::emulator, rng);
}

TEST(NormFp8OneReductionCuda, MatchesReference) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  const detail::ScopedTuneOverride variant(one_reduction());
  run_taken(Backend::cuda, rng);
}

// On by default (where the pipelined kernel does not take the rows: T below twice the
// resident CTAs, 3 on the emulator), off at 0; under the key, the configs it does not take run
// the default kernel: a static scale, an output in x's dtype, a tail (H % 8), an f32 weight
// (vec 4), f32 x, and a misaligned view (vec 1).
TEST(NormFp8OneReduction, TakenOnlyWhereItApplies) {
  TEJAS_SEEDED_TEST_RNG();
  {
    const detail::ScopedTuneOverride defaults(detail::Tune{});
    check_norm_case(Backend::emulator, dynamic_case(DType::bf16, 3, 2048, 0, true), rng);
    EXPECT_TRUE(norm::last_config().fp8_one_reduction);
    check_norm_case(Backend::emulator, dynamic_case(DType::bf16, 7, 2048, 0, true), rng);
    EXPECT_FALSE(norm::last_config().fp8_one_reduction) << "T = 7: the pipelined kernel's rows";
    EXPECT_EQ(norm::last_config().pipeline_stages, 1);
  }
  {
    detail::Tune off;
    off.norm_fp8_one_reduction = 0;
    const detail::ScopedTuneOverride variant(off);
    check_norm_case(Backend::emulator, dynamic_case(DType::bf16, 3, 2048, 0, true), rng);
    EXPECT_FALSE(norm::last_config().fp8_one_reduction);
  }
  const detail::ScopedTuneOverride variant(one_reduction());
  NormCase fixed = dynamic_case(DType::bf16, 3, 2048, 0, false);
  fixed.mode = Fp8ScaleMode::static_per_tensor;
  NormCase same{DType::bf16, DType::bf16, DType::bf16, 3, 2048, 0};
  NormCase f32_weight = dynamic_case(DType::bf16, 3, 2048, 0, false);
  f32_weight.w = DType::f32;
  NormCase f32_x = dynamic_case(DType::f32, 3, 2048, 0, false);
  f32_x.w = DType::f32;
  NormCase shifted_view = dynamic_case(DType::bf16, 3, 2048, 0, false);
  shifted_view.shift = 1;
  for (const NormCase& c : {fixed, same, dynamic_case(DType::bf16, 3, 2052, 0, true), f32_weight, f32_x, shifted_view}) {
    check_norm_case(Backend::emulator, c, rng);
    EXPECT_FALSE(norm::last_config().fp8_one_reduction) << describe(c);
  }
}

// A row whose |v w| overflows f32 while y does not (|v| = 2^56, so the sum of squares, 2^123,
// stays finite; one weight 2^73: v w = 2^129, inv_rms = 2^-56, y = 2^73): the amax from the shared reduction would be Inf (every code 0);
// the kernel reduces max|y| instead. Judged against the reference like every case.
TEST(NormFp8OneReduction, OverflowingProductsFallBack) {
  TEJAS_SEEDED_TEST_RNG();
  const detail::ScopedTuneOverride variant(one_reduction());
  constexpr int64_t T = 2, H = 2048;
  for (Backend b : {Backend::emulator, Backend::cuda}) {
    if (b == Backend::cuda && !check::cuda_available()) continue;
    SCOPED_TRACE(b == Backend::cuda ? "cuda" : "emulator");
    HostTensor x(DType::bf16, {T, H}), w(DType::bf16, {H}), out_ref(DType::e4m3, {T, H}), out(DType::e4m3, {T, H});
    HostTensor sc_ref(DType::f32, {T}), sc(DType::f32, {T});
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h) x.set({t, h}, (h % 3 == 0 ? -1.0 : 1.0) * std::ldexp(1.0, 56 - static_cast<int>(t)));
    for (int64_t h = 0; h < H; ++h) w.set({h}, h == 7 ? std::ldexp(1.0, 73) : rng.normal(1.0, 0.5));
    auto call = [](const ExecContext& ctx, const std::vector<TensorView>& v) {
      return rms_norm(ctx, v[0], v[1], kEps, v[2], Fp8Scale{v[3], Fp8ScaleMode::dynamic_per_token});
    };
    TEJAS_ASSERT_OK(run_backend(Backend::reference, {&x, &w, &out_ref, &sc_ref}, call));
    TEJAS_ASSERT_OK(run_backend(b, {&x, &w, &out, &sc}, call));
    EXPECT_TRUE(norm::last_config().fp8_one_reduction);
    std::vector<double> s(T);
    for (int64_t t = 0; t < T; ++t) {
      s[static_cast<size_t>(t)] = sc.get_flat(t);
      EXPECT_TRUE(f32_close(s[static_cast<size_t>(t)], sc_ref.get_flat(t), kScaleRel))
          << "scale of row " << t << ": " << s[static_cast<size_t>(t)] << " want " << sc_ref.get_flat(t);
    }
    expect_codes(out, x, w, s);
  }
}

}  // namespace
