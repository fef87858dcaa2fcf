// The emulator's GPU-bounded math (src/device/math.h -> emu::gpu_expf / gpu_rsqrtf): results stay
// within CUDA's documented maximum error of the correctly rounded value (checked against a float64
// reference), special values are exact, equal inputs give equal results, `exact` mode is correctly
// rounded, and `gpu` mode really moves results.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "device/math.h"
#include "device/prelude.h"
#include "device/ptx/ex2.h"
#include "device/ptx/ld_st.h"
#include "emu_test_util.h"
#include "support/seed.h"

using tejas::emu::testing::DevBuf;
namespace emu = tejas::emu;
namespace dev = tejas::dev;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kMinSubnormal = std::numeric_limits<float>::denorm_min();
constexpr float kMaxFinite = std::numeric_limits<float>::max();

uint32_t bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
float from_bits(uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

// Representable floats between a and b (same sign; both finite).
int64_t steps(float a, float b) {
  auto key = [](float v) {
    const int64_t m = bits(v) & 0x7fffffffu;
    return std::signbit(v) ? -m : m;
  };
  return key(a) > key(b) ? key(a) - key(b) : key(b) - key(a);
}

// The float64 value rounded to f32, and whether that rounding is unsure: the exact result may lie
// on the other side of an f32 midpoint when the double is within 2^-45 (relative) of it (the
// double references are within a few 2^-53). Such inputs are skipped, and counted.
struct Ref {
  float rounded;
  bool ambiguous;
};
Ref round_ref(double d) {
  const float r = static_cast<float>(d);
  if (!std::isfinite(r) || r == 0.0f) return {r, false};
  const float other = d > static_cast<double>(r) ? std::nextafter(r, kInf) : std::nextafter(r, -kInf);
  const double mid = (static_cast<double>(r) + static_cast<double>(other)) / 2.0;
  return {r, std::fabs(d - mid) <= std::ldexp(std::fabs(d), -45)};
}
Ref exp_ref(float x) { return round_ref(std::exp(static_cast<double>(x))); }
Ref rsqrt_ref(float x) { return round_ref(1.0 / std::sqrt(static_cast<double>(x))); }

// Random inputs over the whole useful range of each function, plus its edges.
std::vector<float> exp_inputs(tejas::check::Rng& rng, int n) {
  std::vector<float> v = {1e-30f, -1e-30f, 1e-7f, -1e-7f, 0.5f, -0.5f, 1.0f, -1.0f, 10.0f, -10.0f,
                          88.0f, 88.72f, -87.3f, -87.34f, -100.0f, -103.0f, -103.97f,
                          from_bits(0x42b17217u) /* largest x with a finite result */};
  for (int i = 0; i < n; ++i) {
    const int kind = static_cast<int>(rng.randint(0, 3));
    if (kind == 0) v.push_back(static_cast<float>(rng.uniform(-104.0, 89.0)));
    if (kind == 1) v.push_back(static_cast<float>(rng.uniform(-1.0, 1.0)));
    if (kind == 2) v.push_back(static_cast<float>(rng.uniform(-104.0, -87.0)));  // subnormal results
    if (kind == 3) v.push_back(static_cast<float>(std::ldexp(rng.uniform(-1.0, 1.0), -static_cast<int>(rng.randint(0, 60)))));
  }
  return v;
}
std::vector<float> rsqrt_inputs(tejas::check::Rng& rng, int n) {
  std::vector<float> v = {kMinSubnormal, 1e-40f, std::numeric_limits<float>::min(), 1.0f, 4.0f, 2.0f, 0.25f,
                          kMaxFinite, 1e30f, 1e-30f};
  for (int i = 0; i < n; ++i) {
    // Random positive bit patterns: every binade, subnormals included.
    v.push_back(from_bits(static_cast<uint32_t>(rng.randint(1, 0x7f7fffff))));
  }
  return v;
}

class EmuMath : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = emu::math_mode(); }
  void TearDown() override { emu::set_math_mode(saved_); }
  emu::MathMode saved_ = emu::MathMode::gpu;
};

constexpr int kRandomInputs = 200000;
constexpr uint64_t kProbeSeeds[] = {1, 2, 3, 0x7e1a5, 0xdeadbeefcafe};

TEST_F(EmuMath, ExpfWithinTwoUlpsOfCorrectlyRounded) {
  TEJAS_SEEDED_TEST_RNG();
  int skipped = 0, moved = 0, checked = 0;
  for (float x : exp_inputs(rng, kRandomInputs)) {
    const Ref ref = exp_ref(x);
    if (ref.ambiguous) {
      ++skipped;
      continue;
    }
    EXPECT_EQ(bits(emu::correctly_rounded_expf(x)), bits(ref.rounded)) << "x = " << x;
    for (uint64_t s : kProbeSeeds) {
      const float r = emu::perturbed_expf(x, s);
      ++checked;
      if (ref.rounded == 0.0f || std::isinf(ref.rounded)) {
        ASSERT_EQ(bits(r), bits(ref.rounded)) << "x = " << x << " seed " << s << ": 0 and Inf are exact";
        continue;
      }
      ASSERT_TRUE(std::isfinite(r) && r > 0.0f) << "x = " << x << " seed " << s << " gave " << r;
      const int64_t d = steps(r, ref.rounded);
      ASSERT_LE(d, emu::kExpfMaxUlps) << "x = " << x << " seed " << s << ": " << r << " vs " << ref.rounded;
      moved += d != 0;
    }
  }
  EXPECT_LT(skipped, 10) << "inputs too close to an f32 midpoint for the float64 reference";
  // Uniform offsets in [-2, 2] move 4 of 5 results (fewer where clamped at the smallest subnormal).
  EXPECT_GT(moved, checked / 2) << "gpu-mode expf must move most results";
}

TEST_F(EmuMath, RsqrtfWithinTwoUlpsOfCorrectlyRounded) {
  TEJAS_SEEDED_TEST_RNG();
  int skipped = 0, moved = 0, checked = 0;
  for (float x : rsqrt_inputs(rng, kRandomInputs)) {
    const Ref ref = rsqrt_ref(x);
    if (ref.ambiguous) {
      ++skipped;
      continue;
    }
    EXPECT_EQ(bits(emu::correctly_rounded_rsqrtf(x)), bits(ref.rounded)) << "x = " << x;
    for (uint64_t s : kProbeSeeds) {
      const float r = emu::perturbed_rsqrtf(x, s);
      ++checked;
      ASSERT_TRUE(std::isfinite(r) && r > 0.0f) << "x = " << x << " seed " << s << " gave " << r;
      const int64_t d = steps(r, ref.rounded);
      ASSERT_LE(d, emu::kRsqrtfMaxUlps) << "x = " << x << " seed " << s << ": " << r << " vs " << ref.rounded;
      moved += d != 0;
    }
  }
  EXPECT_LT(skipped, 10) << "inputs too close to an f32 midpoint for the float64 reference";
  EXPECT_GT(moved, checked / 2) << "gpu-mode rsqrtf must move most results";
}

// Every binade's edge for rsqrtf: powers of two (exact roots for even exponents) and their
// neighbours, where the ulp size changes under the result.
TEST_F(EmuMath, RsqrtfBinadeEdges) {
  for (int e = -149; e <= 127; ++e) {
    const float p = std::ldexp(1.0f, e);
    for (float x : {std::nextafter(p, 0.0f), p, std::nextafter(p, kInf)}) {
      if (x == 0.0f || std::isinf(x)) continue;
      const Ref ref = rsqrt_ref(x);
      if (ref.ambiguous) continue;
      EXPECT_EQ(bits(emu::correctly_rounded_rsqrtf(x)), bits(ref.rounded)) << "x = " << x;
      for (uint64_t s : kProbeSeeds) {
        EXPECT_LE(steps(emu::perturbed_rsqrtf(x, s), ref.rounded), emu::kRsqrtfMaxUlps) << "x = " << x;
      }
    }
  }
}

TEST_F(EmuMath, SpecialValuesAreExact) {
  for (emu::MathMode m : {emu::MathMode::gpu, emu::MathMode::exact}) {
    emu::set_math_mode(m);
    SCOPED_TRACE(m == emu::MathMode::gpu ? "gpu" : "exact");
    EXPECT_TRUE(std::isnan(emu::gpu_expf(kNaN)));
    EXPECT_EQ(emu::gpu_expf(kInf), kInf);
    EXPECT_EQ(bits(emu::gpu_expf(-kInf)), bits(0.0f));
    EXPECT_EQ(emu::gpu_expf(0.0f), 1.0f);
    EXPECT_EQ(emu::gpu_expf(-0.0f), 1.0f);
    EXPECT_EQ(emu::gpu_expf(89.0f), kInf);              // overflow stays Inf
    EXPECT_EQ(bits(emu::gpu_expf(-104.0f)), bits(0.0f));  // underflow stays +0
    EXPECT_TRUE(std::isnan(emu::gpu_rsqrtf(kNaN)));
    EXPECT_TRUE(std::isnan(emu::gpu_rsqrtf(-1.0f)));
    EXPECT_TRUE(std::isnan(emu::gpu_rsqrtf(-kMinSubnormal)));
    EXPECT_TRUE(std::isnan(emu::gpu_rsqrtf(-kInf)));
    EXPECT_EQ(emu::gpu_rsqrtf(0.0f), kInf);
    EXPECT_EQ(emu::gpu_rsqrtf(-0.0f), -kInf);
    EXPECT_EQ(bits(emu::gpu_rsqrtf(kInf)), bits(0.0f));
  }
}

// Finite results never reach 0 or Inf, whatever the seed: the largest finite expf, the smallest
// subnormal one, and the extremes of rsqrtf.
TEST_F(EmuMath, PerturbationNeverLeavesTheFiniteRange) {
  const float x_max = from_bits(0x42b17217u);   // e^x just below FLT_MAX
  const float x_tiny = -103.2789f;              // e^x about the smallest subnormal
  ASSERT_TRUE(std::isfinite(emu::correctly_rounded_expf(x_max)));
  ASSERT_GT(emu::correctly_rounded_expf(x_tiny), 0.0f);
  for (uint64_t s = 1; s <= 2000; ++s) {
    const float hi = emu::perturbed_expf(x_max, s), lo = emu::perturbed_expf(x_tiny, s);
    ASSERT_TRUE(std::isfinite(hi)) << "seed " << s;
    ASSERT_GT(lo, 0.0f) << "seed " << s;
    ASSERT_TRUE(std::isfinite(emu::perturbed_rsqrtf(kMinSubnormal, s))) << "seed " << s;
    ASSERT_GT(emu::perturbed_rsqrtf(kMaxFinite, s), 0.0f) << "seed " << s;
  }
}

TEST_F(EmuMath, ExactModeIsCorrectlyRounded) {
  TEJAS_SEEDED_TEST_RNG();
  emu::set_math_mode(emu::MathMode::exact);
  for (float x : exp_inputs(rng, 20000)) {
    const Ref ref = exp_ref(x);
    if (!ref.ambiguous) {
      ASSERT_EQ(bits(emu::gpu_expf(x)), bits(ref.rounded)) << "x = " << x;
    }
  }
  for (float x : rsqrt_inputs(rng, 20000)) {
    const Ref ref = rsqrt_ref(x);
    if (!ref.ambiguous) {
      ASSERT_EQ(bits(emu::gpu_rsqrtf(x)), bits(ref.rounded)) << "x = " << x;
    }
  }
}

TEST_F(EmuMath, ParsesTheModeSwitch) {
  emu::MathMode m = emu::MathMode::exact;
  EXPECT_TRUE(emu::parse_math_mode("gpu", &m));
  EXPECT_EQ(m, emu::MathMode::gpu);
  EXPECT_TRUE(emu::parse_math_mode("exact", &m));
  EXPECT_EQ(m, emu::MathMode::exact);
  EXPECT_FALSE(emu::parse_math_mode("GPU", &m));
  EXPECT_FALSE(emu::parse_math_mode("", &m));
  EXPECT_EQ(m, emu::MathMode::exact) << "a rejected value leaves the mode alone";
}

// Kernels reach the model through dev::expf / dev::rsqrtf, seeded by the launch.
__global__ void math_kernel(const float* in, float* out_exp, float* out_rsqrt, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const float x = tejas::ptx::ld_global(in + i);
    tejas::ptx::st_global(out_exp + i, dev::expf(x));
    tejas::ptx::st_global(out_rsqrt + i, dev::rsqrtf(std::fabs(x) + 1.0f));
  }
}

struct KernelRun {
  std::vector<float> e, r;
};
KernelRun run_kernel(const std::vector<float>& in, uint64_t seed) {
  const int n = static_cast<int>(in.size());
  DevBuf<float> din(in.size(), "in"), de(in.size(), "exp"), dr(in.size(), "rsqrt");
  din.upload(in);
  emu::LaunchOptions o;
  o.block = dim3(64);
  o.seed = seed;
  const auto rep = emu::launch(o, math_kernel, din.get(), de.get(), dr.get(), n);
  EXPECT_TRUE(rep.ok()) << rep.summary();
  return {de.download(), dr.download()};
}

TEST_F(EmuMath, KernelsSeeTheLaunchSeedAndEqualInputsAgree) {
  TEJAS_SEEDED_TEST_RNG();
  emu::set_math_mode(emu::MathMode::gpu);
  // Each value twice (read by different threads): equal inputs must give equal bits.
  std::vector<float> in;
  for (int i = 0; i < 256; ++i) in.push_back(static_cast<float>(rng.uniform(-20.0, 20.0)));
  const size_t half = in.size();
  for (size_t i = 0; i < half; ++i) in.push_back(in[i]);
  const KernelRun a = run_kernel(in, 11), a2 = run_kernel(in, 11), b = run_kernel(in, 12);
  int differ = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const float y = std::fabs(in[i]) + 1.0f;
    ASSERT_EQ(bits(a.e[i]), bits(emu::perturbed_expf(in[i], 11))) << "x = " << in[i];
    ASSERT_EQ(bits(a.r[i]), bits(emu::perturbed_rsqrtf(y, 11))) << "x = " << y;
    ASSERT_EQ(bits(a.e[i]), bits(a.e[i % half])) << "equal inputs, equal results";
    ASSERT_EQ(bits(a.e[i]), bits(a2.e[i])) << "same seed, same results";
    ASSERT_EQ(bits(a.r[i]), bits(a2.r[i]));
    differ += bits(a.e[i]) != bits(b.e[i]);
  }
  EXPECT_GT(differ, static_cast<int>(in.size()) / 4) << "another seed must probe other errors";

  emu::set_math_mode(emu::MathMode::exact);
  const KernelRun x = run_kernel(in, 11);
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(bits(x.e[i]), bits(emu::correctly_rounded_expf(in[i])));
    ASSERT_EQ(bits(x.r[i]), bits(emu::correctly_rounded_rsqrtf(std::fabs(in[i]) + 1.0f)));
  }
}

// __expf's model: within 2 + floor(|1.173 x|) ulps of the correctly rounded e^x, subnormal
// results flushed to +0, special values exact; __fdividef's: within 2 ulps of the correctly
// rounded quotient for |y| in [2^-126, 2^126], 0 above, equal operands giving equal results.
TEST_F(EmuMath, FastIntrinsicsWithinTheirBounds) {
  TEJAS_SEEDED_TEST_RNG();
  emu::set_math_mode(emu::MathMode::gpu);
  int moved = 0;
  for (int i = 0; i < 20000; ++i) {
    const float x = static_cast<float>(rng.uniform(-100.0, 80.0));
    const float want = emu::correctly_rounded_expf(x), got = emu::gpu_fast_expf(x);
    if (want < 1.17549435e-38f) {
      EXPECT_EQ(bits(got), bits(0.0f)) << "x = " << x << ": a subnormal result flushes to +0";
      continue;
    }
    if (got == 0.0f) {  // moved below 2^-126 by the error, then flushed: only next to the bound
      EXPECT_LE(steps(want, 1.17549435e-38f), emu::fast_expf_max_ulps(x)) << "x = " << x;
      continue;
    }
    const int64_t d = steps(got, want);
    EXPECT_LE(d, emu::fast_expf_max_ulps(x)) << "x = " << x;
    moved += d != 0;
    const float a = static_cast<float>(rng.uniform(-1e3, 1e3)), y = static_cast<float>(rng.uniform(1.0, 2.0));
    const float q = emu::gpu_fdividef(a, y);
    EXPECT_LE(steps(q, a / y), emu::kFdividefMaxUlps) << a << " / " << y;
    EXPECT_EQ(bits(q), bits(emu::gpu_fdividef(a, y))) << "equal operands, equal results";
  }
  EXPECT_GT(moved, 1000) << "gpu mode must probe the error";
  EXPECT_EQ(emu::fast_expf_max_ulps(80.0f), 2 + 93);
  EXPECT_TRUE(std::isnan(emu::gpu_fast_expf(kNaN)));
  EXPECT_EQ(emu::gpu_fast_expf(kInf), kInf);
  EXPECT_EQ(bits(emu::gpu_fast_expf(-kInf)), bits(0.0f));
  EXPECT_EQ(emu::gpu_fast_expf(0.0f), 1.0f);
  EXPECT_EQ(bits(emu::gpu_fdividef(1.0f, 1e38f)), bits(0.0f));   // 2^126 < |y|: 0
  EXPECT_EQ(bits(emu::gpu_fdividef(1.0f, -1e38f)), bits(-0.0f));
  EXPECT_EQ(emu::gpu_fdividef(3.0f, kInf), 0.0f);
  EXPECT_TRUE(std::isnan(emu::gpu_fdividef(kInf, 1e38f)));     // CUDA: NaN there
  EXPECT_EQ(emu::fast_expf_max_ulps(3e38f), 2 + 1000000);       // clamped, no overflow
  emu::set_math_mode(emu::MathMode::exact);
  EXPECT_EQ(bits(emu::gpu_fast_expf(1.5f)), bits(emu::correctly_rounded_expf(1.5f)));
  EXPECT_EQ(bits(emu::gpu_fdividef(1.0f, 3.0f)), bits(1.0f / 3.0f));
}

// ex2.approx.ftz's model (ptx::ex2_approx_ftz_f32): within 2 ulps of the correctly rounded 2^x,
// subnormal inputs read as zero and subnormal results flushed to +0, special values exact; and
// dev::fast_expf, ex2.approx.ftz of x log2(e) on the device and under emulation alike, within
// what those two steps allow where its result is normal (the sigmoid's range, |x| <= 80).
TEST_F(EmuMath, Ex2ApproxFtzWithinItsBound) {
  TEJAS_SEEDED_TEST_RNG();
  emu::set_math_mode(emu::MathMode::gpu);
  int moved = 0;
  for (int i = 0; i < 20000; ++i) {
    const float x = static_cast<float>(rng.uniform(-125.0, 127.0));
    const float want = static_cast<float>(std::exp2(static_cast<double>(x)));
    const float got = tejas::ptx::ex2_approx_ftz_f32(x);
    const int64_t d = steps(got, want);
    EXPECT_LE(d, emu::kEx2ApproxMaxUlps) << "x = " << x;
    moved += d != 0;
    EXPECT_EQ(bits(got), bits(tejas::ptx::ex2_approx_ftz_f32(x))) << "equal inputs, equal results";
    // The composite: 2 ulp, plus the product's rounding (half an ulp of |e| log2(e), and the f32
    // log2(e)'s own 1.3e-8 relative error, times ln 2: up to 1.22 |e| result ulps), plus one for the
    // final rounding: within about a ulp of __expf's documented 2 + floor(1.173 |e|), looser.
    const float e = static_cast<float>(rng.uniform(-80.0, 80.0));
    const auto composite_ulps = static_cast<int64_t>(emu::kEx2ApproxMaxUlps + 1 + std::ceil(1.22 * std::fabs(e)));
    EXPECT_LE(steps(tejas::dev::fast_expf(e), emu::correctly_rounded_expf(e)), composite_ulps) << "e = " << e;
  }
  EXPECT_GT(moved, 1000) << "gpu mode must probe the error";
  EXPECT_EQ(tejas::ptx::ex2_approx_ftz_f32(from_bits(0x00000001u)), 1.0f);  // subnormal input: 2^0
  EXPECT_EQ(tejas::ptx::ex2_approx_ftz_f32(-0.0f), 1.0f);
  EXPECT_EQ(bits(tejas::ptx::ex2_approx_ftz_f32(-kInf)), bits(0.0f));
  EXPECT_EQ(bits(tejas::ptx::ex2_approx_ftz_f32(-130.0f)), bits(0.0f));    // subnormal result: +0
  EXPECT_EQ(tejas::ptx::ex2_approx_ftz_f32(kInf), kInf);
  EXPECT_EQ(tejas::ptx::ex2_approx_ftz_f32(128.0f), kInf);
  EXPECT_TRUE(std::isnan(tejas::ptx::ex2_approx_ftz_f32(kNaN)));
  emu::set_math_mode(emu::MathMode::exact);
  EXPECT_EQ(bits(tejas::ptx::ex2_approx_ftz_f32(0.3f)), bits(static_cast<float>(std::exp2(0.3))));
  EXPECT_EQ(bits(tejas::ptx::ex2_approx_ftz_f32(-126.0f)), bits(1.17549435e-38f));  // 2^-126: normal
  EXPECT_EQ(bits(tejas::ptx::ex2_approx_ftz_f32(-127.0f)), bits(0.0f));            // 2^-127: flushed
}

}  // namespace
