// One randomized rms_norm / fused_add_rms_norm case run on a kernel backend (emulator or cuda)
// and on the reference backend, outputs judged by kernel_harness.h's rules. Shared by
// test_rms_norm_kernel.cpp and test_fused_add_rms_norm_kernel.cpp.
#pragma once
#include <cstdint>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "ops/norm/kernel_harness.h"
#include "ops/norm/norm_math.h"
#include "support/op_snapshots.h"
#include "support/seed.h"
#include "tejas/norm.h"

namespace tejas::normtest {

inline constexpr double kEps = 1e-6;
// y ~ N(0, 1) * w with w ~ N(1, 0.5): |y| reaches ~5, so y / s reaches ~320 and the largest
// saturate now and then.
inline constexpr double kStaticScale = 1.0 / 64;

struct NormCase {
  DType x = DType::bf16, w = DType::bf16, out = DType::bf16;
  int64_t T = 1, H = 1;
  int64_t pad = 0;     // extra elements per row of x, residual and out (token stride H + pad)
  int64_t shift = 0;   // views start this many elements into their storage (misaligned)
  bool fused = false;  // fused_add_rms_norm with a residual of dtype `res`
  DType res = DType::bf16;
  Fp8ScaleMode mode = Fp8ScaleMode::dynamic_per_token;
  bool in_place = false;  // out is x (rms_norm only)
  double static_scale = kStaticScale;  // Fp8ScaleMode::static_per_tensor's scale
  bool zero_first = false;  // element 0 of every row of x (and of the residual) is 0: y = 0 there
};

inline std::string describe(const NormCase& c) {
  std::ostringstream os;
  os << (c.fused ? "fused_add_rms_norm" : "rms_norm") << " x " << dtype_name(c.x) << " w " << dtype_name(c.w)
     << " out " << dtype_name(c.out) << (c.out == DType::e4m3 ? (c.mode == Fp8ScaleMode::dynamic_per_token ? " dynamic" : " static") : "")
     << (c.fused ? std::string(" res ") + std::string(dtype_name(c.res)) : std::string()) << " T=" << c.T << " H=" << c.H
     << " pad=" << c.pad << " shift=" << c.shift << (c.in_place ? " in place" : "");
  return os.str();
}

// Rows with magnitudes spread over 10^-2 .. 10^2, so the rms differs row to row.
inline void fill_rows(check::HostTensor& t, check::Rng& rng) {
  for (int64_t r = 0; r < t.shape()[0]; ++r) {
    const double row_scale = std::pow(10.0, rng.uniform(-2.0, 2.0));
    for (int64_t h = 0; h < t.shape()[1]; ++h) t.set({r, h}, rng.normal(0.0, row_scale));
  }
}

// e4m3 codes of `q` against the exact y / s, s being the kernel's own scale (per row or static).
inline void expect_codes(const check::HostTensor& q, const check::HostTensor& rows_source, const check::HostTensor& w,
                         const std::vector<double>& row_scale) {
  const int64_t T = q.shape()[0], H = q.shape()[1];
  int bad = 0;
  for (int64_t t = 0; t < T; ++t) {
    const auto y = rms_row(row_of(rows_source, t), w, kEps);
    const long double s = row_scale[static_cast<size_t>(t)];
    for (int64_t h = 0; h < H && bad < 5; ++h) {
      const auto r = e4m3_code_ok(q.bits_flat(t * H + h), y[static_cast<size_t>(h)] / s);
      if (!r) ++bad;
      EXPECT_TRUE(r) << "at [" << t << ", " << h << "]";
    }
  }
}

// Runs the case on `b` and on the reference backend; expects the kernel's outputs to agree.
inline void check_norm_case(Backend b, const NormCase& c, check::Rng& rng) {
  SCOPED_TRACE(describe(c));
  using check::HostTensor;
  const bool fp8 = c.out == DType::e4m3, dynamic = fp8 && c.mode == Fp8ScaleMode::dynamic_per_token;
  HostTensor x = shifted(c.x, c.T, c.H, c.pad, c.shift), w(c.w, {c.H});
  fill_rows(x, rng);
  check::fill_normal(w, rng, 1.0, 0.5);
  HostTensor res_ref, res_got;
  if (c.zero_first)
    for (int64_t t = 0; t < c.T; ++t) x.set({t, 0}, 0.0);
  if (c.fused) {
    res_ref = HostTensor(c.res, {c.T, c.H}, c.pad);
    res_got = shifted(c.res, c.T, c.H, c.pad, c.shift);
    fill_rows(res_ref, rng);
    if (c.zero_first)
      for (int64_t t = 0; t < c.T; ++t) res_ref.set({t, 0}, 0.0);
    res_got.copy_from(res_ref);
  }
  HostTensor out_ref(c.out, {c.T, c.H}, c.pad), out_got = shifted(c.out, c.T, c.H, c.pad, c.shift);
  HostTensor sc_ref, sc_got;
  if (fp8) {
    sc_ref = HostTensor(DType::f32, {dynamic ? c.T : 1});
    sc_got = HostTensor(DType::f32, {dynamic ? c.T : 1});
    if (!dynamic) {
      sc_ref.set_flat(0, c.static_scale);
      sc_got.set_flat(0, c.static_scale);
    }
  }
  const HostTensor x_in = [&] {
    HostTensor copy(c.x, {c.T, c.H});
    copy.copy_from(x);
    return copy;
  }();
  const auto x_before = optest::bits_of(x);
  const Fp8ScaleMode mode = c.mode;
  const bool fused = c.fused;
  auto call = [mode, fused](const ExecContext& ctx, const std::vector<TensorView>& v) {
    const Fp8Scale sc{v[4], mode};
    return fused ? fused_add_rms_norm(ctx, v[0], v[1], v[2], kEps, v[3], sc) : rms_norm(ctx, v[0], v[2], kEps, v[3], sc);
  };
  auto opt = [](HostTensor& t) { return t.view().defined() ? &t : nullptr; };
  TEJAS_ASSERT_OK(run_backend(Backend::reference, {&x, opt(res_ref), &w, &out_ref, opt(sc_ref)}, call));
  HostTensor* out_arg = c.in_place ? &x : &out_got;
  TEJAS_ASSERT_OK(run_backend(b, {&x, opt(res_got), &w, out_arg, opt(sc_got)}, call));
  const HostTensor& got = c.in_place ? x : out_got;
  if (!c.in_place) {
    EXPECT_TRUE(optest::bits_of(x) == x_before) << "x is an input";
  }
  if (!c.in_place && c.shift == 0) {
    EXPECT_TRUE(out_got.padding_intact() && out_got.guards_intact()) << "out: wrote outside its rows";
  }
  if (c.fused && c.shift == 0) {
    EXPECT_TRUE(res_got.padding_intact() && res_got.guards_intact()) << "residual: wrote outside its rows";
  }
  if (dynamic) {
    EXPECT_TRUE(sc_got.guards_intact()) << "scale: wrote outside it";
  }
  if (c.fused) {
    const auto r = check::compare_exact(res_got, res_ref);
    EXPECT_TRUE(r.ok) << "residual: " << r.message;
  }
  if (!fp8) {
    const auto r = check::compare(got, out_ref, tolerance_for(c.x));
    EXPECT_TRUE(r.ok) << "out: " << r.message;
    return;
  }
  std::vector<double> s(static_cast<size_t>(c.T));
  for (int64_t t = 0; t < c.T; ++t) {
    s[static_cast<size_t>(t)] = sc_got.get_flat(dynamic ? t : 0);
    if (dynamic) {
      EXPECT_TRUE(f32_close(s[static_cast<size_t>(t)], sc_ref.get_flat(t), kScaleRel)) << "scale of row " << t;
    }
  }
  expect_codes(got, c.fused ? res_ref : x_in, w, s);
}

}  // namespace tejas::normtest
