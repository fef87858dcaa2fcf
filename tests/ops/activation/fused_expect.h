// Expected results of silu_mul_quant_fp8_group / silu_mul_quant_mx, computed in the test: y in
// long double from the header's formulas, scales by stepping powers of two or searching code
// tables (tests/ops/common/independent_fp.h), codes by nearest-value search.
//
// Two checks: `exact` (the reference backend: float64 y, one rounding per code) and
// `tie_aware` (kernels: y and the scale arithmetic in f32). A kernel's code may differ from the
// expectation only where the exact value lies within kTieRel (relative) of the midpoint
// between two codes: then perturbing the value by kTieRel must reach the kernel's code. Scales:
// f32 within kF32ScaleRel; power-of-two and e4m3 scale codes the same perturbation rule on the
// value they are computed from. Codes are judged against the scale the kernel stored.
#pragma once
#include <cstdint>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "check/host_tensor.h"
#include "ops/common/independent_fp.h"
#include "ops/common/ref_numeric.h"  // load_bits: raw codes of a strided view
#include "tejas/activation.h"

namespace tejas::fusedtest {

namespace fp = tejas::testfp;
using check::HostTensor;

// f32 y (a few ulps, with |alpha g| up to ~90 amplifying the rounding of the exponent's
// argument by that factor: ~2^-17 worst) and the scale's own f32 rounding: 2^-15 relative
// stays far below the spacing of any fp8/fp4 code (>= 2^-4 relative).
inline constexpr long double kTieRel = 0x1p-15L;
// f32 scales: amax of the kernel's f32 y (the error above, GPU expf's 2 ulps included) over
// 448, rounded once. 2^-16 covers it and still catches any wrong formula (448 vs 447 is 2^-9).
inline constexpr long double kF32ScaleRel = 0x1p-16L;
inline constexpr long double kMaxE4m3 = 448.0L, kMaxE2m1 = 6.0L, kMinAmax = 1e-10L;
inline constexpr int kUe8m0Bias = 127, kMinExp = -127, kE2m1Emax = 2;

enum class Kind { fp8_f32, fp8_ue8m0, mxfp4, nvfp4 };

inline int group_of(Kind k) { return k == Kind::mxfp4 ? 32 : (k == Kind::nvfp4 ? 16 : 128); }
inline DType q_dtype(Kind k) { return k == Kind::fp8_f32 || k == Kind::fp8_ue8m0 ? DType::e4m3 : DType::e2m1; }
inline DType scale_dtype(Kind k) {
  return k == Kind::fp8_f32 ? DType::f32 : (k == Kind::nvfp4 ? DType::e4m3 : DType::ue8m0);
}

inline long double max_finite_of(DType t) {
  return t == DType::bf16 ? fp::decode(DType::bf16, 0x7F7F) : fp::decode(DType::f16, 0x7BFF);
}

inline uint64_t bits_at(const TensorView& v, int64_t t, int64_t f) {
  const int64_t idx[] = {t, f};
  return ref::load_bits(v, idx);
}

// y [T, F] (row-major) = silu_mul(x) in long double, beyond x's range saturated (NaN kept).
inline std::vector<long double> y_of(const TensorView& x, const SiluMulOptions& o) {
  const int64_t T = x.shape[0], F = x.shape[1] / 2;
  const long double m = max_finite_of(x.dtype);
  std::vector<long double> y;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t f = 0; f < F; ++f) {
      long double g = fp::decode(x.dtype, bits_at(x, t, f)), u = fp::decode(x.dtype, bits_at(x, t, F + f)), a = g;
      if (o.clamped) {
        if (!std::isnan(g) && g > o.limit) g = o.limit;
        if (!std::isnan(u)) u = std::clamp<long double>(u, -o.limit, o.limit) + 1.0L;
        a = o.alpha * g;
      }
      // g sigmoid(a) with its limit -0 at a = -Inf
      const long double act = std::isinf(a) && a < 0 ? -0.0L : g / (1.0L + std::exp(-a));
      const long double v = act * u;
      y.push_back(std::isnan(v) ? v : std::clamp(v, -m, m));
    }
  return y;
}

// Streams anything into a string (GCC 12 warns falsely on "literal" + std::string chains).
template <class... A>
std::string cat(const A&... a) {
  std::ostringstream os;
  (os << ... << a);
  return os.str();
}

inline long double pow2(int e) { return fp::pow2(e); }

// The scale value a group's codes are divided by, from the stored scale code (0: all +0).
inline long double divisor_of(Kind k, uint64_t scale_bits, long double tensor_scale) {
  if (k == Kind::fp8_f32) {
    float s;
    const auto b = static_cast<uint32_t>(scale_bits);
    std::memcpy(&s, &b, sizeof s);
    return s;
  }
  if (k == Kind::nvfp4) return fp::decode(DType::e4m3, scale_bits) * tensor_scale;
  return pow2(static_cast<int>(scale_bits) - kUe8m0Bias);
}

inline uint64_t f32_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// The scale code of a NaN-free group with maximum `amax`, scaled by (1 + r) first.
inline uint64_t scale_code(Kind k, long double amax, long double tensor_scale, long double r = 0) {
  const long double a = amax * (1.0L + r);
  switch (k) {
    case Kind::fp8_f32: return f32_bits(static_cast<float>(std::max(a, kMinAmax) / kMaxE4m3));
    case Kind::fp8_ue8m0: return static_cast<uint64_t>(fp::ceil_log2(std::max(a, kMinAmax) / kMaxE4m3) + kUe8m0Bias);
    case Kind::mxfp4: {
      const int e = a == 0 ? kMinExp : std::max(fp::floor_log2(a) - kE2m1Emax, kMinExp);
      return static_cast<uint64_t>(e + kUe8m0Bias);
    }
    case Kind::nvfp4: return fp::nearest_code(DType::e4m3, a / (kMaxE2m1 * tensor_scale));
  }
  return 0;
}

inline uint64_t nan_scale(Kind k) {
  return k == Kind::fp8_f32 ? 0x7FC00000 : (k == Kind::nvfp4 ? 0x7F : 0xFF);
}

// Compares q / scales with the expectation from y. tie_aware = false: every code exact (f32
// scales: bit-exact too).
inline void expect_fused(Kind k, const std::vector<long double>& y, int64_t T, int64_t F, const TensorView& q,
                         const TensorView& scales, bool tie_aware, long double tensor_scale = 0) {
  const int group = group_of(k);
  const DType qd = q_dtype(k);
  const uint64_t q_nan = qd == DType::e4m3 ? 0x7F : 0x7;
  int bad = 0;
  auto fail = [&](const std::string& what) {
    if (bad++ < 8) ADD_FAILURE() << what;
  };
  for (int64_t t = 0; t < T; ++t)
    for (int64_t g = 0; g < F / group; ++g) {
      const int64_t first = t * F + g * group;
      long double amax = 0;
      bool nan = false;
      for (int64_t i = first; i < first + group; ++i) {
        if (std::isnan(y[static_cast<size_t>(i)])) nan = true;
        else amax = std::max(amax, std::fabs(y[static_cast<size_t>(i)]));
      }
      const uint64_t got_s = bits_at(scales, t, g);
      const std::string where = cat("[", t, ", group ", g, "]");
      if (nan) {
        const bool ok_s = k == Kind::fp8_f32 ? std::isnan(divisor_of(k, got_s, 0)) : got_s == nan_scale(k);
        if (!ok_s) fail(cat("scale ", where, " should be NaN"));
        for (int64_t i = first; i < first + group; ++i)
          if (bits_at(q, t, i - t * F) != q_nan) fail(cat("q ", where, " should be the NaN code"));
        continue;
      }
      const uint64_t want_s = scale_code(k, amax, tensor_scale);
      bool ok_s = got_s == want_s;
      if (!ok_s && tie_aware) {
        if (k == Kind::fp8_f32) {
          const long double w = divisor_of(k, want_s, 0), gv = divisor_of(k, got_s, 0);
          ok_s = std::fabs(gv - w) <= kF32ScaleRel * w;
        } else {
          ok_s = scale_code(k, amax, tensor_scale, kTieRel) == got_s || scale_code(k, amax, tensor_scale, -kTieRel) == got_s;
        }
      }
      if (!ok_s) {
        fail(cat("scale ", where, ": got ", got_s, " want ", want_s, " (amax ", static_cast<double>(amax), ")"));
        continue;
      }
      const long double div = divisor_of(k, tie_aware ? got_s : want_s, tensor_scale);
      for (int64_t i = first; i < first + group; ++i) {
        const long double v = div == 0 ? 0.0L : y[static_cast<size_t>(i)] / div;
        const uint64_t got = bits_at(q, t, i - t * F);
        uint64_t want = fp::nearest_code(qd, v);
        if (div == 0) want = 0;  // +0 for every code of a zero-scale nvfp4 block
        const bool tie = tie_aware && div != 0 &&
                         (fp::nearest_code(qd, v * (1 + kTieRel)) == got || fp::nearest_code(qd, v * (1 - kTieRel)) == got);
        if (got != want && !tie)
          fail(cat("q [", t, ", ", i - t * F, "]: got code ", got, " want ", want, " (value ", static_cast<double>(v), ")"));
      }
    }
  EXPECT_EQ(bad, 0);
}

}  // namespace tejas::fusedtest
