// One gated-activation kernel case run on the emulator (and the GPU when there is one) against
// the reference backend: shapes with tails, padded and misaligned rows, counters.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "check/cuda_mem.h"
#include "check/host_tensor.h"
#include "ops/activation/config.h"
#include "ops/activation/kernel_test_util.h"
#include "ops/activation/launch.h"
#include "runtime/alignment.h"
#include "runtime/tune.h"
#include "support/backends.h"
#include "support/device_guards.h"
#include "support/poison.h"
#include "support/seed.h"
#include "tejas/activation.h"

namespace tejas::acttest {

struct KCase {
  int64_t T, F;
  int64_t x_lead = 0, x_pad = 0;      // elements before / after each x row's view
  int64_t out_lead = 0, out_pad = 0;  // the same for out
};

// T = 1, 3, dozens; F = 1, odd, a multiple of 8 (16-byte path), 4100 (8-byte path: 2F * 2 B is
// 8 mod 16), 16384 with T = 1; padded rows; rows starting one element in (misaligned).
inline constexpr KCase kKernelCases[] = {
    {1, 1},          {3, 7},          {37, 24},           {2, 4100},          {1, 16384},
    {5, 64, 0, 8, 0, 8}, {4, 48, 0, 3, 0, 5}, {3, 64, 1, 0, 1, 0}, {2, 200, 1, 1, 0, 0},
};

using GatedCall = std::function<Status(const ExecContext&, const TensorView& x, const TensorView& out)>;

// Storage elements outside the [lead, lead + cols) window of every row are still poison.
inline bool outside_untouched(const check::HostTensor& h, int64_t lead, int64_t cols) {
  const int64_t width = h.shape()[1];
  const uint64_t poison = h.poison_code();
  for (int64_t i = 0; i < h.numel(); ++i) {
    const int64_t col = i % width;
    if ((col < lead || col >= lead + cols) && h.bits_flat(i) != poison) return false;
  }
  return h.guards_intact();
}

inline void run_gated_case(check::Rng& rng, Which which, DType dt, const KCase& k, const GatedCall& call,
                           double gate_sd, const SiluMulOptions& o = {}) {
  SCOPED_TRACE(::testing::Message() << dtype_name(dt) << " T=" << k.T << " F=" << k.F << " x lead/pad " << k.x_lead
                                    << "/" << k.x_pad << " out lead/pad " << k.out_lead << "/" << k.out_pad);
  const int64_t T = k.T, F = k.F, elem = dtype_bytes(dt, 1);
  check::HostTensor xs(dt, {T, 2 * F + k.x_lead + k.x_pad}), outs(dt, {T, F + k.out_lead + k.out_pad});
  check::HostTensor want(dt, {T, F});
  for (int64_t i = 0; i < xs.numel(); ++i)
    xs.set_flat(i, rng.normal(0.0, (i % xs.shape()[1]) < k.x_lead + F ? gate_sd : 2.0));
  const TensorView x = sub_view(xs, 2 * F, k.x_lead), out = sub_view(outs, F, k.out_lead);
  ASSERT_TRUE(call(ctx_of(Backend::reference), x, want.view()).ok());

  detail::begin_emulator_call();
  const Status s = call(ctx_of(Backend::emulator), x, out);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_TRUE(matches_reference(out, want.view(), x, which, o));
  EXPECT_TRUE(outside_untouched(outs, k.out_lead, F)) << "wrote outside out's view";
  expect_clean_launch(static_cast<uint64_t>(T * 2 * F * elem), static_cast<uint64_t>(T * F * elem));

  // Coalescing: each request touches only the sectors its lanes' bytes span (the default kernels'
  // row-by-row mapping; the activation.pipeline kernel's tiles span rows: its own test bounds it).
  if (act::last_gated_config().pipeline_stages > 0) return;
  act::GatedProblem p;
  p.elem_bytes = static_cast<int>(elem);
  p.T = T;
  p.F = F;
  p.x_align = act::x_halves_alignment(x, F);
  p.out_align = detail::access_alignment(out, act::kMaxVecBytes);
  const act::GatedConfig c = act::make_gated_config(p);
  const int64_t chunks = F / c.vec;
  if (c.threads_per_row >= 32 && chunks > 16) {
    const emu::Counters& got = detail::last_emulator_reports()[0].counters;
    const Traffic gate = ideal_traffic(x.data, T, x.stride[0] * elem, chunks, c.vec_bytes);
    const Traffic up = ideal_traffic(static_cast<char*>(x.data) + F * elem, T, x.stride[0] * elem, chunks, c.vec_bytes);
    const Traffic st = ideal_traffic(out.data, T, out.stride[0] * elem, chunks, c.vec_bytes);
    EXPECT_EQ(got.global_load_requests, gate.requests + up.requests);
    EXPECT_EQ(got.global_load_sectors, gate.sectors + up.sectors);
    EXPECT_EQ(got.global_store_requests, st.requests);
    EXPECT_EQ(got.global_store_sectors, st.sectors);
  }
}

// The same case on the GPU (device copies of x and out, padding and guards included).
inline void run_gated_case_cuda(check::Rng& rng, DType dt, const KCase& k, const GatedCall& call, Which which,
                                double gate_sd, const SiluMulOptions& o = {}) {
  SCOPED_TRACE(::testing::Message() << "cuda " << dtype_name(dt) << " T=" << k.T << " F=" << k.F);
  const int64_t T = k.T, F = k.F;
  check::HostTensor xs(dt, {T, 2 * F + k.x_lead + k.x_pad}), outs(dt, {T, F + k.out_lead + k.out_pad});
  check::HostTensor want(dt, {T, F});
  for (int64_t i = 0; i < xs.numel(); ++i) xs.set_flat(i, rng.normal(0.0, gate_sd));
  const TensorView x = sub_view(xs, 2 * F, k.x_lead);
  ASSERT_TRUE(call(ctx_of(Backend::reference), x, want.view()).ok());
  check::DeviceMirror dx, dout;
  ASSERT_TRUE(dx.upload(xs).ok());
  ASSERT_TRUE(dout.upload(outs).ok());
  TensorView gx = dx.view(), gout = dout.view();
  gx.data = static_cast<char*>(gx.data) + dtype_bytes(dt, k.x_lead);
  gx.shape[1] = 2 * F;
  gout.data = static_cast<char*>(gout.data) + dtype_bytes(dt, k.out_lead);
  gout.shape[1] = F;
  const Status s = call(ctx_of(Backend::cuda), gx, gout);
  ASSERT_TRUE(s.ok()) << s.to_string();
  ASSERT_TRUE(check::device_synchronize().ok());
  ASSERT_TRUE(dout.download(outs).ok());
  testsupport::expect_device_guards({{&dx, "x"}, {&dout, "out"}});
  EXPECT_TRUE(matches_reference(sub_view(outs, F, k.out_lead), want.view(), x, which, o));
  EXPECT_TRUE(outside_untouched(outs, k.out_lead, F));
}

// Every kKernelCases shape for each dtype on the emulator under the TEJAS_TUNE overrides `t`
// (launch-config variants: one column block, several chunks per lane).
inline void run_gated_cases_tuned(check::Rng& rng, const detail::Tune& t, Which which, std::initializer_list<DType> dts,
                                  const GatedCall& call, double gate_sd) {
  const detail::ScopedTuneOverride variant(t);
  for (DType dt : dts)
    for (const KCase& k : kKernelCases) run_gated_case(rng, which, dt, k, call, gate_sd);
}

// TEJAS_TUNE activation.fast_math=`fast` (1 is the default): every kKernelCases shape in bf16,
// f16 and f32 on the emulator (and on the GPU when there is one), each against the reference
// with the same tolerance (16-bit: one ulp); the config must take the fast kernel exactly where
// it applies (fast = 1, 16-bit elements on the 16-byte path; f32 and the narrower paths keep the
// accurate math). Returns how many emulator cases ran it.
inline int run_math_cases(check::Rng& rng, int fast_math, Which which, const GatedCall& call, double gate_sd,
                          const SiluMulOptions& o = {}) {
  detail::Tune t;
  t.activation_fast_math = fast_math;
  const detail::ScopedTuneOverride variant(t);
  testsupport::BackendRngs rngs(rng);  // the GPU cases' draws apart from the emulator's
  int fast = 0;
  for (DType dt : {DType::bf16, DType::f16, DType::f32})
    for (const KCase& k : kKernelCases) {
      run_gated_case(rng, which, dt, k, call, gate_sd, o);
      const act::GatedConfig c = act::last_gated_config();
      EXPECT_EQ(c.fast_math, fast_math == 1 && dt != DType::f32 && c.vec_bytes == act::kMaxVecBytes)
          << dtype_name(dt) << " T=" << k.T << " F=" << k.F << ": " << c.to_string();
      fast += c.fast_math ? 1 : 0;
      if (check::cuda_available()) run_gated_case_cuda(rngs(Backend::cuda), dt, k, call, which, gate_sd, o);
    }
  return fast;
}

// On the GPU when there is one: `call` on a device copy of x into a fresh (poisoned) output, judged
// against the reference's `want` element by element; returns whether it ran.
inline bool cuda_matches_reference(const GatedCall& call, const check::HostTensor& x, const check::HostTensor& want,
                                   Which which, const SiluMulOptions& o, const std::string& what) {
  if (!check::cuda_available()) return false;
  check::HostTensor got(want.dtype(), want.shape());
  check::DeviceMirror dx, dout;
  EXPECT_TRUE(dx.upload(x).ok() && dout.upload(got).ok()) << what;
  EXPECT_TRUE(call(ctx_of(Backend::cuda), dx.view(), dout.view()).ok()) << what;
  EXPECT_TRUE(check::device_synchronize().ok()) << what;
  EXPECT_TRUE(dout.download(got).ok()) << what;
  {
    SCOPED_TRACE("cuda " + what);
    testsupport::expect_device_guards({{&dx, "x"}, {&dout, "out"}});
  }
  EXPECT_TRUE(matches_reference(got.view(), want.view(), x.view(), which, o)) << "cuda " << what;
  return true;
}

// activation.fast_math=1 (the default) on one 24-element row (the 16-byte path, so the fast
// kernel runs in bf16 and f16): the header's non-finite cases, sigmoid arguments on both sides
// of the -80 switch to the accurate scaled path (silu g = -79.5 / -80.5; clamped silu,
// alpha 1.702, g = -46.9 / -47.1; gelu_tanh, 2z = -80 at g ~ -9.65: -9.6 / -9.7), tiny results;
// each element against the reference (16-bit: one ulp), on the emulator and on the GPU when
// there is one (the real __expf / __fdividef), under each poison byte (the default 0xFF already
// reads as NaN).
inline void fast_math_edge_cases(Which which, const GatedCall& call, const SiluMulOptions& o = {}) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN(), kInf = std::numeric_limits<double>::infinity();
  constexpr int64_t F = 24;
  const double gates[F] = {kNaN, 1.0,  kInf,  -kInf, -kInf, kInf,  1e30,  -1e30, 0.0,   -0.0,  -20.0, -79.5,
                           -80.5, -87.0, -9.6, -9.7,  -9.9,  -10.4, -46.9, -47.1, -60.0, 0.5,   2.0,   -3.0};
  const double ups[F] = {1.0, kNaN, 2.0, 2.0, kInf, 0.0, 1.0, 1.0, kInf, 3.0,  1.5, 1e30,
                         1e30, 1.5, 1e20, 1e20, 1.0, 1e20, 1e20, 1e20, 1e25, -1.0, 0.25, 4.0};
  detail::Tune t;
  t.activation_fast_math = 1;
  const detail::ScopedTuneOverride variant(t);
  testsupport::for_each_poison([&] {
    for (DType dt : {DType::bf16, DType::f16}) {
      check::HostTensor x(dt, {1, 2 * F}), out(dt, {1, F}), want(dt, {1, F});
      for (int64_t f = 0; f < F; ++f) {
        x.set({0, f}, gates[f]);
        x.set({0, F + f}, ups[f]);
      }
      ASSERT_TRUE(call(ctx_of(Backend::reference), x.view(), want.view()).ok());
      ASSERT_TRUE(call(ctx_of(Backend::emulator), x.view(), out.view()).ok());
      EXPECT_TRUE(act::last_gated_config().fast_math) << dtype_name(dt);
      EXPECT_TRUE(matches_reference(out.view(), want.view(), x.view(), which, o)) << dtype_name(dt);
      if (cuda_matches_reference(call, x, want, which, o, std::string(dtype_name(dt)))) {
        EXPECT_TRUE(act::last_gated_config().fast_math) << "cuda " << dtype_name(dt);
      }
    }
  });
}

}  // namespace tejas::acttest
