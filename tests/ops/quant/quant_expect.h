// Expected quantization results computed in the test, independently of src/ops/quant: input
// values decoded from their bits by field formulas, long double arithmetic, exponents found by
// stepping powers of two, codes found by nearest-value table search (tests/ops/common).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "check/host_tensor.h"
#include "ops/common/independent_fp.h"
#include "tejas/quant.h"

namespace tejas::quanttest {

namespace fp = tejas::testfp;
using check::HostTensor;

inline constexpr long double kMaxE4m3 = 448.0L;
inline constexpr long double kMaxE2m1 = 6.0L;
inline constexpr int kUe8m0Bias = 127;
inline constexpr int kMinScaleExp = -127;
inline constexpr uint64_t kUe8m0NaN = 0xFF;
inline constexpr uint64_t kE4m3NaN = 0x7F;
inline constexpr uint64_t kE2m1NaNStandIn = 0x7;  // +6: e2m1 has no NaN
inline constexpr uint64_t kF32NaN = 0x7FC00000;

inline long double max_finite_of(DType t) {
  switch (t) {
    case DType::f32: return std::numeric_limits<float>::max();
    case DType::bf16: return fp::decode(DType::bf16, 0x7F7F);
    case DType::f16: return fp::decode(DType::f16, 0x7BFF);
    default: return fp::kNaN;
  }
}

// Element i (row-major logical) of x, from its bits; +-Inf becomes +-max finite (documented).
inline long double x_value(const HostTensor& x, int64_t i) {
  const long double v = fp::decode(x.dtype(), x.bits_flat(i));
  return std::isinf(v) ? std::copysign(max_finite_of(x.dtype()), v) : v;
}

struct Expect {
  std::vector<uint64_t> q;       // row-major over x's shape
  std::vector<uint64_t> scales;  // row-major over scales' shape
};

struct BlockScale {
  uint64_t code;     // the scale code to store
  long double divisor;  // x / divisor is quantized; 0 means every q of the block is +0
};

// Walks x in blocks along its innermost dim; `rule(amax)` gives the scale of a NaN-free block.
template <class Rule>
Expect expect_blocks(const HostTensor& x, DType q_dtype, int64_t block, uint64_t nan_scale, Rule rule) {
  const int64_t K = x.shape().back(), n = x.numel();
  const int64_t rows = K > 0 ? n / K : 0, blocks = K / block;
  const uint64_t nan_q = q_dtype == DType::e4m3 ? kE4m3NaN : kE2m1NaNStandIn;
  Expect e;
  e.q.assign(static_cast<size_t>(n), 0);
  e.scales.assign(static_cast<size_t>(rows * blocks), 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t first = r * K + b * block;
      long double amax = 0;
      bool nan = false;
      for (int64_t i = first; i < first + block; ++i) {
        const long double v = x_value(x, i);
        if (std::isnan(v)) nan = true;
        else amax = std::max(amax, std::fabs(v));
      }
      const auto s = static_cast<size_t>(r * blocks + b);
      if (nan) {
        e.scales[s] = nan_scale;
        for (int64_t i = first; i < first + block; ++i) e.q[static_cast<size_t>(i)] = nan_q;
        continue;
      }
      const BlockScale bs = rule(amax);
      e.scales[s] = bs.code;
      for (int64_t i = first; i < first + block; ++i)
        e.q[static_cast<size_t>(i)] = bs.divisor == 0 ? 0 : fp::nearest_code(q_dtype, x_value(x, i) / bs.divisor);
    }
  }
  return e;
}

inline uint64_t f32_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

inline Expect expect_fp8_group(const HostTensor& x, DType scale_dtype, int64_t group) {
  const uint64_t nan_scale = scale_dtype == DType::f32 ? kF32NaN : kUe8m0NaN;
  return expect_blocks(x, DType::e4m3, group, nan_scale, [&](long double amax) {
    const long double wanted = std::max(amax, static_cast<long double>(kFp8MinAmax)) / kMaxE4m3;
    if (scale_dtype == DType::f32) {
      const auto s = static_cast<float>(wanted);
      return BlockScale{f32_bits(s), s};
    }
    const int e = fp::ceil_log2(wanted);
    return BlockScale{static_cast<uint64_t>(e + kUe8m0Bias), fp::pow2(e)};
  });
}

inline Expect expect_mx(MxFormat f, const HostTensor& x, float tensor_scale = 0) {
  if (f == MxFormat::nvfp4) {
    return expect_blocks(x, DType::e2m1, 16, kE4m3NaN, [&](long double amax) {
      const uint64_t code = fp::nearest_code(DType::e4m3, amax / (kMaxE2m1 * tensor_scale));
      return BlockScale{code, fp::decode(DType::e4m3, code) * tensor_scale};
    });
  }
  const DType q_dtype = f == MxFormat::mxfp8 ? DType::e4m3 : DType::e2m1;
  const int emax = f == MxFormat::mxfp8 ? 8 : 2;  // floor(log2(448)), floor(log2(6))
  return expect_blocks(x, q_dtype, 32, kUe8m0NaN, [&](long double amax) {
    const int e = amax == 0 ? kMinScaleExp : std::max(fp::floor_log2(amax) - emax, kMinScaleExp);
    return BlockScale{static_cast<uint64_t>(e + kUe8m0Bias), fp::pow2(e)};
  });
}

// Codes of q and scales equal the expectation bit for bit (f32 NaN scales: any NaN).
inline void expect_matches(const HostTensor& q, const HostTensor& scales, const Expect& e) {
  ASSERT_EQ(static_cast<size_t>(q.numel()), e.q.size());
  ASSERT_EQ(static_cast<size_t>(scales.numel()), e.scales.size());
  int64_t bad = 0;
  for (int64_t i = 0; i < scales.numel(); ++i) {
    const uint64_t got = scales.bits_flat(i), want = e.scales[static_cast<size_t>(i)];
    const bool both_nan = scales.dtype() == DType::f32 && std::isnan(fp::decode(DType::f32, got)) &&
                          std::isnan(fp::decode(DType::f32, want));
    if (got != want && !both_nan && bad++ < 5)
      ADD_FAILURE() << "scales " << check::index_string(scales.shape(), i) << ": got 0x" << std::hex << got
                    << " want 0x" << want;
  }
  for (int64_t i = 0; i < q.numel(); ++i) {
    const uint64_t got = q.bits_flat(i), want = e.q[static_cast<size_t>(i)];
    if (got != want && bad++ < 10)
      ADD_FAILURE() << "q " << check::index_string(q.shape(), i) << ": got 0x" << std::hex << got << " want 0x"
                    << want << std::dec << " (value " << static_cast<double>(fp::decode(q.dtype(), got))
                    << " want " << static_cast<double>(fp::decode(q.dtype(), want)) << ")";
  }
  EXPECT_EQ(bad, 0);
}

// Half the distance between adjacent codes of `t` around magnitude u (u <= max): the largest
// rounding error of a non-saturated value. u just below a binade edge uses the lower binade.
inline long double half_step(DType t, long double u) {
  if (t == DType::e4m3) return u < fp::pow2(-6) ? fp::pow2(-10) : fp::pow2(fp::floor_log2(u) - 4);
  return u < 1 ? 0.25L : fp::pow2(fp::floor_log2(u) - 2);  // e2m1
}

// Unpadded outputs are wholly overwritten; padded ones keep their padding and guards.
inline void expect_only_view_written(const HostTensor& t, const char* name) {
  EXPECT_TRUE(t.guards_intact()) << name << ": wrote outside its storage";
  EXPECT_TRUE(t.padding_intact()) << name << ": wrote into padding";
}

// Every element still holds the poison it was made with.
inline bool still_poisoned(const HostTensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i)
    if (t.bits_flat(i) != t.poison_code()) return false;
  return t.padding_intact() && t.guards_intact();
}

}  // namespace tejas::quanttest
