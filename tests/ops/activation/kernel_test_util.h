// Shared by the activation kernel tests: views with padded or misaligned rows, the comparison
// of a kernel's output with the reference backend's, and the emulator's counters against the
// ideal for the access pattern.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "check/cuda_mem.h"
#include "check/host_tensor.h"
#include "ops/common/emu_launch.h"
#include "ops/common/ref_numeric.h"
#include "tejas/activation.h"

namespace tejas::acttest {

// A [rows, cols] view into `h` (storage [rows, cols + lead + pad]) starting `lead` elements
// into each row: lead = 1 misaligns every row start by one element.
inline TensorView sub_view(check::HostTensor& h, int64_t cols, int64_t lead) {
  TensorView v = h.view();
  v.data = static_cast<char*>(v.data) + dtype_bytes(v.dtype, lead);
  v.shape[1] = cols;
  return v;
}

// One element of a 2-D host view as (value, bits).
inline double value_at(const TensorView& v, int64_t t, int64_t f) { return ref::at(v, t, f); }
inline uint64_t bits_at(const TensorView& v, int64_t t, int64_t f) {
  const int64_t idx[] = {t, f};
  return ref::load_bits(v, idx);
}

// The argument of the sigmoid inside each activation (see act_math.cuh): the f32 kernel's
// relative error grows with it.
enum class Which { silu, silu_clamped, gelu };
inline double sigmoid_arg(Which w, double g, const SiluMulOptions& o) {
  constexpr double kSqrt2OverPi = 0.7978845608028654, kCubic = 0.044715;
  if (w == Which::gelu) return 2.0 * kSqrt2OverPi * (g + kCubic * g * g * g);
  if (w == Which::silu_clamped) return o.alpha * std::min(g, o.limit);
  return g;
}

// f32 outputs: a few roundings (expf <= 2 ulp on the GPU, the division, the product) plus the
// rounding of the sigmoid's argument a (relative 2^-24, up to 2^-23 for gelu's polynomial)
// amplified |a| times by the exponential; and 2^-140 absolute for results in the f32 subnormal
// range, where a product rounds to a subnormal's few bits (then times |u + 1| <= 8 for the
// clamped form: 2^-147). The kernels keep e^a itself normal (act_math.cuh: below a = -80 they
// use e^(a + 64) 2^-64); an e^-|a| left subnormal once gave 1.5e-4 relative error at gate -55
// (clamped, alpha 1.702: e^a ~ 2e-41; seed 13784555906301246053), far outside this bound.
inline constexpr double kF32Ulp = 0x1p-24, kF32FewUlps = 8.0, kArgAmplification = 4.0, kSubnormalAbs = 0x1p-140;

// got (kernel) vs want (reference backend): bf16/f16 within 1 ulp (both are roundings of f32 /
// float64 values within far less than an ulp of each other); f32 as above; NaN exactly where
// the reference has NaN; infinities equal.
inline ::testing::AssertionResult matches_reference(const TensorView& got, const TensorView& want, const TensorView& x,
                                                    Which which, const SiluMulOptions& o = {}) {
  const int64_t T = got.shape[0], F = got.shape[1];
  for (int64_t t = 0; t < T; ++t)
    for (int64_t f = 0; f < F; ++f) {
      const double g = value_at(got, t, f), w = value_at(want, t, f);
      bool good;
      if (std::isnan(w) || std::isnan(g)) good = std::isnan(w) && std::isnan(g);
      else if (std::isinf(w) || std::isinf(g)) good = g == w;
      else if (got.dtype == DType::f32) {
        const double a_raw = sigmoid_arg(which, value_at(x, t, f), o);
        const double a = std::isfinite(a_raw) ? a_raw : 0.0;  // infinite arguments: exact limits
        const double rel = (kF32FewUlps + kArgAmplification * std::fabs(a)) * kF32Ulp;
        good = std::fabs(g - w) <= rel * std::fabs(w) + kSubnormalAbs;
      } else {
        good = check::ulp_distance(got.dtype, bits_at(got, t, f), bits_at(want, t, f)) <= 1;
      }
      if (!good)
        return ::testing::AssertionFailure() << "at [" << t << ", " << f << "]: got " << g << " want " << w
                                             << " (gate " << value_at(x, t, f) << ", up " << value_at(x, t, F + f) << ")";
    }
  return ::testing::AssertionSuccess();
}

// Requests and sectors of the warp-wide accesses of one [T, chunks x vec_bytes] row walk where
// 32 consecutive lanes take 32 consecutive chunks (the kernels' mapping when a row has >= 32
// lanes): each request costs the 32-byte segments its active lanes span. `per_request`: the
// chunks one warp request covers (32; fewer where only some lanes store, e.g. one scale per
// quantization group).
struct Traffic {
  uint64_t requests = 0, sectors = 0;
};
inline Traffic ideal_traffic(const void* base, int64_t T, int64_t row_stride_bytes, int64_t chunks, int vec_bytes,
                             int64_t per_request = 32) {
  constexpr int64_t kSector = 32;
  Traffic tr;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c0 = 0; c0 < chunks; c0 += per_request) {
      const auto lo = static_cast<int64_t>(reinterpret_cast<uintptr_t>(base)) + t * row_stride_bytes + c0 * vec_bytes;
      const int64_t hi = lo + std::min(per_request, chunks - c0) * vec_bytes;
      tr.requests += 1;
      tr.sectors += static_cast<uint64_t>((hi - 1) / kSector - lo / kSector + 1);
    }
  return tr;
}

// The last op call's single launch: no findings, no shared-memory traffic conflicts, and
// exactly the compulsory bytes read and written.
inline void expect_clean_launch(uint64_t bytes_read, uint64_t bytes_written) {
  const auto& reports = detail::last_emulator_reports();
  ASSERT_EQ(reports.size(), 1u);
  const emu::Counters& c = reports[0].counters;
  EXPECT_TRUE(reports[0].ok()) << reports[0].summary();
  EXPECT_EQ(c.global_bytes_read_unique, bytes_read);
  EXPECT_EQ(c.global_bytes_written_unique, bytes_written);
  EXPECT_EQ(c.bank_conflict_wavefronts(), 0u);
}

inline ExecContext ctx_of(Backend b) {
  ExecContext ctx;
  ctx.backend = b;
  return ctx;
}

}  // namespace tejas::acttest
