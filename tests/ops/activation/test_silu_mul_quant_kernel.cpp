// The fused silu_mul + quantization kernel on the emulator: codes and scales against the test's
// own long-double expectation (tie-aware: f32 arithmetic may move a value across a rounding
// midpoint, nothing more), the reference backend exact against the same expectation, T = 1 / 3 /
// dozens, F up to 16384, padded and misaligned rows, NaN / Inf / zero groups, the clamped
// option, the emulator's counters; the GPU when there is one.
#include <gtest/gtest.h>

#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "check/cuda_mem.h"
#include "ops/activation/config.h"
#include "ops/activation/fused_cases.h"
#include "ops/activation/gated_kernel_cases.h"
#include "runtime/tune.h"
#include "support/backends.h"
#include "support/poison.h"
#include "support/seed.h"

using namespace tejas;
using namespace tejas::fusedtest;
using tejas::acttest::ctx_of;
using tejas::acttest::outside_untouched;
using tejas::acttest::sub_view;

namespace {

// F a multiple of 128 so every kind applies; 16-byte rows; padded; misaligned x (one element
// in) and q (two codes in: below a lane's store width) take the element-wise path.
constexpr FCase kCases[] = {
    {1, 128}, {3, 256}, {33, 128}, {1, 16384}, {3, 384, 0, 8, 0, 16, 3}, {2, 256, 1, 1, 2, 2}, {4, 128, 0, 0, 2, 0},
};

struct Tensors {
  HostTensor xs, ts, qs, ss;
  TensorView x, q, s;
};

Tensors make_tensors(check::Rng& rng, Kind k, DType dt, const FCase& c, const SiluMulOptions& opt) {
  const int64_t groups = c.F / group_of(k);
  Tensors m{HostTensor(dt, {c.T, 2 * c.F + c.x_lead + c.x_pad}), HostTensor(DType::f32, {1}),
            HostTensor(q_dtype(k), {c.T, c.F + c.q_lead + c.q_pad}), HostTensor(scale_dtype(k), {c.T, groups}, c.s_pad),
            {}, {}, {}};
  fill_fused(m.xs, rng, c.F, c.x_lead, group_of(k), true, opt.clamped ? 2.0 * opt.limit : 3.0);
  m.ts.set_flat(0, kTensorScale);
  m.x = sub_view(m.xs, 2 * c.F, c.x_lead);
  m.q = sub_view(m.qs, c.F, c.q_lead);
  m.s = m.ss.view();
  return m;
}

void run_case(check::Rng& rng, Kind k, DType dt, const FCase& c, const SiluMulOptions& opt = {}) {
  SCOPED_TRACE(::testing::Message() << kind_name(k) << " " << dtype_name(dt) << " T=" << c.T << " F=" << c.F
                                    << " x lead/pad " << c.x_lead << "/" << c.x_pad << " q lead/pad " << c.q_lead
                                    << "/" << c.q_pad << (opt.clamped ? " clamped" : ""));
  Tensors m = make_tensors(rng, k, dt, c, opt);
  const std::vector<long double> y = y_of(m.x, opt);
  {
    SCOPED_TRACE("reference backend");
    Tensors r = make_tensors(rng, k, dt, c, opt);
    ASSERT_TRUE(call_fused(k, ctx_of(Backend::reference), m.x, r.q, r.s, m.ts, opt).ok());
    expect_fused(k, y, c.T, c.F, r.q, r.s, false, kTensorScale);
  }
  detail::begin_emulator_call();
  const Status s = call_fused(k, ctx_of(Backend::emulator), m.x, m.q, m.s, m.ts, opt);
  ASSERT_TRUE(s.ok()) << s.to_string();
  expect_fused(k, y, c.T, c.F, m.q, m.s, true, kTensorScale);
  EXPECT_TRUE(outside_untouched(m.qs, c.q_lead, c.F)) << "q: wrote outside the view";
  EXPECT_TRUE(m.ss.padding_intact() && m.ss.guards_intact()) << "scales: wrote outside the view";

  const uint64_t x_bytes = static_cast<uint64_t>(c.T * 2 * c.F * dtype_bytes(dt, 1)) + (k == Kind::nvfp4 ? 4 : 0);
  const uint64_t out_bytes = static_cast<uint64_t>(c.T * (dtype_bytes(q_dtype(k), c.F) +
                                                          dtype_bytes(scale_dtype(k), c.F / group_of(k))));
  acttest::expect_clean_launch(x_bytes, out_bytes);
  // Loads: 16 B per lane, 32 consecutive lanes per request, on the vectorized path with full warps.
  if (c.x_lead == 0 && c.q_lead == 0 && c.F / act::kQuantElems >= 32) {
    const emu::Counters& got = detail::last_emulator_reports()[0].counters;
    const int64_t stride = m.x.stride[0] * 2, chunks = c.F / act::kQuantElems;
    const auto gate = acttest::ideal_traffic(m.x.data, c.T, stride, chunks, 16);
    const auto up = acttest::ideal_traffic(static_cast<char*>(m.x.data) + c.F * 2, c.T, stride, chunks, 16);
    const uint64_t ts_loads = k == Kind::nvfp4 ? got.global_load_requests - gate.requests - up.requests : 0;
    EXPECT_EQ(got.global_load_requests - ts_loads, gate.requests + up.requests);
    EXPECT_EQ(got.global_load_sectors - ts_loads, gate.sectors + up.sectors);  // tensor_scale: 1 sector each
    // Stores: a lane's kQuantElems codes (8 bytes fp8, 4 fp4), 32 lanes per request; a warp's
    // scales (one per group, from the group's first lane) in one request, 32 / lanes-per-group
    // consecutive scales. Padded rows included: each request costs the sectors its bytes span.
    const int64_t q_bytes = dtype_bytes(q_dtype(k), act::kQuantElems), s_bytes = dtype_bytes(scale_dtype(k), 1);
    const int64_t groups = c.F / group_of(k), groups_per_warp = 32 * act::kQuantElems / group_of(k);
    const auto codes =
        acttest::ideal_traffic(m.q.data, c.T, m.q.stride[0] * dtype_bits(m.q.dtype) / 8, chunks, q_bytes);
    const auto scales =
        acttest::ideal_traffic(m.s.data, c.T, m.s.stride[0] * s_bytes, groups, s_bytes, groups_per_warp);
    EXPECT_EQ(got.global_store_requests, codes.requests + scales.requests);
    EXPECT_EQ(got.global_store_sectors, codes.sectors + scales.sectors);
  }
}

// The same case on the GPU (defined below).
void run_case_cuda(check::Rng& rng, Kind k, DType dt, const FCase& c, const SiluMulOptions& opt = {});

class SiluMulQuantKernel : public ::testing::TestWithParam<Kind> {};

// Under each poison byte: under the default 0xFF an unwritten fp4 nibble reads as -6 (e2m1 0xF),
// a valid code (often a block's negative maximum), which 0x00 (+0) and 0x55 (+3) are not always.
TEST_P(SiluMulQuantKernel, MatchesExpectation) {
  TEJAS_SEEDED_TEST_RNG();
  testsupport::for_each_poison([&] {
    for (DType dt : {DType::bf16, DType::f16})
      for (const FCase& c : kCases) run_case(rng, GetParam(), dt, c);
  });
}

// One column block (TEJAS_TUNE activation.max_grid_y=1): lanes loop (F = 16384: 8 steps).
TEST_P(SiluMulQuantKernel, OneColumnBlockMatchesExpectation) {
  TEJAS_SEEDED_TEST_RNG();
  detail::Tune t;
  t.activation_max_grid_y = 1;
  const detail::ScopedTuneOverride one_block(t);
  for (const FCase& c : kCases) run_case(rng, GetParam(), DType::bf16, c);
}

// Row 0's NaN group must get the NaN scale (f32 NaN, ue8m0 0xFF: both read as the default 0xFF
// poison) and NaN codes; its +Inf gate the top code: checked under finite poisons as well.
// kCases[4] (F = 384, padded rows) has the NaN group for every kind. The GPU too when present.
TEST_P(SiluMulQuantKernel, NonFiniteGroupsUnderEachPoison) {
  TEJAS_SEEDED_TEST_RNG();
  testsupport::BackendRngs rngs(rng);  // the GPU cases' draws apart from the emulator's
  const bool gpu = check::cuda_available();
  for (DType dt : {DType::bf16, DType::f16})
    testsupport::for_each_poison([&] {
      run_case(rng, GetParam(), dt, kCases[4]);
      if (gpu) run_case_cuda(rngs(Backend::cuda), GetParam(), dt, kCases[4]);
    });
}

// Rows of one group (F = 16 nvfp4, 32 mxfp4, 128 fp8) and of group counts that are not a power
// of two, F not a multiple of 128 for the fp4 kinds (gpt-oss's 2880): fewer lanes per row than
// a warp, partial warps, odd scale rows.
std::vector<FCase> group_count_cases(Kind k) {
  const int64_t G = group_of(k);
  std::vector<FCase> v;
  for (int64_t groups : {1, 3, 5, 7}) {
    v.push_back({1, groups * G});
    v.push_back({5, groups * G});
  }
  if (2880 % G == 0) v.push_back({3, 2880});
  return v;
}

TEST_P(SiluMulQuantKernel, FewAndOddGroupCounts) {
  TEJAS_SEEDED_TEST_RNG();
  for (DType dt : {DType::bf16, DType::f16})
    for (const FCase& c : group_count_cases(GetParam())) run_case(rng, GetParam(), dt, c);
}

// Limit 7 (the default) is a bf16 / f16 value: the fast kernel clamps x's 16-bit words; 6.9 is
// neither: it clamps in f32 (act_math.cuh's clamp_pairs). One token, three, the widest row
// (F = 16384) and misaligned views; the GPU too when present.
TEST_P(SiluMulQuantKernel, Clamped) {
  TEJAS_SEEDED_TEST_RNG();
  testsupport::BackendRngs rngs(rng);  // the GPU cases' draws apart from the emulator's
  const bool gpu = check::cuda_available();
  for (double limit : {7.0, 6.9}) {
    SiluMulOptions o;
    o.clamped = true;
    o.limit = limit;
    for (DType dt : {DType::bf16, DType::f16})
      for (const FCase& c : {kCases[0], kCases[1], kCases[3], kCases[5]}) {
        run_case(rng, GetParam(), dt, c, o);
        if (gpu) run_case_cuda(rngs(Backend::cuda), GetParam(), dt, c, o);
      }
  }
}

// One case on the GPU: the same tensors, expectations and guards as run_case.
void run_case_cuda(check::Rng& rng, Kind k, DType dt, const FCase& c, const SiluMulOptions& opt) {
  SCOPED_TRACE(::testing::Message() << "cuda " << dtype_name(dt) << " T=" << c.T << " F=" << c.F
                                    << (opt.clamped ? " clamped" : ""));
  Tensors m = make_tensors(rng, k, dt, c, opt);
  const std::vector<long double> y = y_of(m.x, opt);
  check::DeviceMirror dx, dts, dq, ds;
  ASSERT_TRUE(dx.upload(m.xs).ok() && dts.upload(m.ts).ok() && dq.upload(m.qs).ok() && ds.upload(m.ss).ok());
  TensorView gx = dx.view(), gq = dq.view();
  gx.data = static_cast<char*>(gx.data) + dtype_bytes(dt, c.x_lead);
  gx.shape[1] = 2 * c.F;
  gq.data = static_cast<char*>(gq.data) + dtype_bytes(q_dtype(k), c.q_lead);
  gq.shape[1] = c.F;
  const Status s = call_fused(k, ctx_of(Backend::cuda), gx, gq, ds.view(), dts.view(), opt);
  ASSERT_TRUE(s.ok()) << s.to_string();
  ASSERT_TRUE(check::device_synchronize().ok());
  ASSERT_TRUE(dq.download(m.qs).ok() && ds.download(m.ss).ok());
  expect_fused(k, y, c.T, c.F, m.q, m.s, true, kTensorScale);
  EXPECT_TRUE(outside_untouched(m.qs, c.q_lead, c.F));
  EXPECT_TRUE(m.ss.padding_intact()) << "scales: wrote into row padding";
  for (auto [mirror, name] : {std::pair{&dq, "q"}, {&ds, "scales"}}) {
    bool intact = false;
    ASSERT_TRUE(mirror->guards_intact(&intact).ok());
    EXPECT_TRUE(intact) << name << ": device bytes outside the tensor were written";
  }
}

TEST_P(SiluMulQuantKernel, CudaMatchesExpectation) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  const Kind k = GetParam();
  std::vector<FCase> cases(std::begin(kCases), std::end(kCases));
  for (const FCase& c : group_count_cases(k)) cases.push_back(c);
  for (DType dt : {DType::bf16, DType::f16})
    for (const FCase& c : cases) run_case_cuda(rng, k, dt, c);
}

// TEJAS_TUNE activation.fast_math_quant: 1 (the default since the H200 timed it: the fused
// kernels' sigmoid from __expf and __fdividef) and 0 (expf and an IEEE division): every case,
// plain and clamped, on the emulator and the GPU when there is one, under the same tie-aware
// checks (the fast form's ~2^-17 relative error in y is inside their 2^-15 band); the kernel the
// setting names must be the one that ran.
TEST_P(SiluMulQuantKernel, FastAndAccurateMathMatchExpectation) {
  TEJAS_SEEDED_TEST_RNG();
  testsupport::BackendRngs rngs(rng);  // the GPU cases' draws apart from the emulator's
  const Kind k = GetParam();
  {
    const detail::ScopedTuneOverride defaults(detail::Tune{});  // on by default, whatever TEJAS_TUNE says
    run_case(rng, k, DType::bf16, kCases[0]);
    EXPECT_TRUE(act::last_quant_config().fast_math);
  }
  SiluMulOptions clamped;
  clamped.clamped = true;
  const bool gpu = check::cuda_available();
  for (int fast : {1, 0}) {
    SCOPED_TRACE(::testing::Message() << "activation.fast_math_quant=" << fast);
    detail::Tune t;
    t.activation_fast_math_quant = fast;
    const detail::ScopedTuneOverride variant(t);
    for (DType dt : {DType::bf16, DType::f16})
      for (const FCase& c : kCases) {
        run_case(rng, k, dt, c);
        EXPECT_EQ(act::last_quant_config().fast_math, fast == 1);
        if (gpu) run_case_cuda(rngs(Backend::cuda), k, dt, c);
      }
    for (const FCase& c : {kCases[1], kCases[5]}) {
      run_case(rng, k, DType::bf16, c, clamped);
      if (gpu) run_case_cuda(rngs(Backend::cuda), k, DType::bf16, c, clamped);
    }
  }
}

// TEJAS_TUNE activation.packed_fp4 (e2m1 codes in pairs through bf16 rounded to odd; the
// default for mxfp4 / nvfp4, never for the fp8 kinds): every case under 0 against the
// expectation, with the config reporting each setting; and, since both conversions are exact
// for the same f32 values, both settings' q and scales equal bit for bit on every case (an
// extra check: each is also judged against the expectation).
TEST_P(SiluMulQuantKernel, PackedFp4SettingsMatchExpectationAndEachOther) {
  TEJAS_SEEDED_TEST_RNG();
  testsupport::BackendRngs rngs(rng);  // the GPU cases' draws apart from the emulator's
  const Kind k = GetParam();
  const bool fp4 = k == Kind::mxfp4 || k == Kind::nvfp4;
  for (DType dt : {DType::bf16, DType::f16}) {
    for (const FCase& c : kCases) {
      Tensors m = make_tensors(rng, k, dt, c, {});
      std::vector<uint64_t> q_bits[2], s_bits[2];
      for (int packed : {1, 0}) {
        detail::Tune t;
        t.activation_packed_fp4 = packed;
        const detail::ScopedTuneOverride variant(t);
        ASSERT_TRUE(call_fused(k, ctx_of(Backend::emulator), m.x, m.q, m.s, m.ts, {}).ok());
        EXPECT_EQ(act::last_quant_config().packed_fp4, fp4 && packed == 1);
        for (int64_t i = 0; i < m.qs.numel(); ++i) q_bits[packed].push_back(m.qs.bits_flat(i));
        for (int64_t i = 0; i < m.ss.numel(); ++i) s_bits[packed].push_back(m.ss.bits_flat(i));
        if (packed == 0) {
          run_case(rng, k, dt, c);
          if (check::cuda_available()) {  // the GPU's unpacked conversions
            run_case_cuda(rngs(Backend::cuda), k, dt, c);
            EXPECT_FALSE(act::last_quant_config().packed_fp4) << "cuda";
          }
        }
      }
      EXPECT_EQ(q_bits[0], q_bits[1]) << kind_name(k) << " " << dtype_name(dt) << " T=" << c.T << " F=" << c.F;
      EXPECT_EQ(s_bits[0], s_bits[1]);
    }
  }
}

// Debug-check mode on cuda: kinds without a tensor_scale read none and run as usual; nvfp4's is
// read and judged before the launch (0: invalid_argument naming it, q and scales untouched).
TEST_P(SiluMulQuantKernel, CudaDebugChecks) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  const Kind k = GetParam();
  const FCase c{3, 256};
  for (bool bad_scale : {false, true}) {
    if (bad_scale && k != Kind::nvfp4) continue;
    SCOPED_TRACE(bad_scale ? "tensor_scale 0" : "valid call");
    Tensors m = make_tensors(rng, k, DType::bf16, c, {});
    if (bad_scale) m.ts.set_flat(0, 0.0);
    const std::vector<long double> y = y_of(m.x, {});
    check::DeviceMirror dx, dts, dq, ds;
    ASSERT_TRUE(dx.upload(m.xs).ok() && dts.upload(m.ts).ok() && dq.upload(m.qs).ok() && ds.upload(m.ss).ok());
    ExecContext ctx = ctx_of(Backend::cuda);
    ctx.debug_checks = true;
    const Status s = call_fused(k, ctx, dx.view(), dq.view(), ds.view(), dts.view(), {});
    ASSERT_TRUE(check::device_synchronize().ok());
    ASSERT_TRUE(dq.download(m.qs).ok() && ds.download(m.ss).ok());
    if (bad_scale) {
      EXPECT_EQ(s.code(), StatusCode::invalid_argument) << s.to_string();
      EXPECT_NE(s.message().find("tensor_scale: expected a value in [2^-64, 2^64]"), std::string::npos) << s.message();
      const check::HostTensor fresh_q(m.qs.dtype(), m.qs.shape()), fresh_s(m.ss.dtype(), m.ss.shape());
      for (int64_t i = 0; i < m.qs.numel(); ++i) ASSERT_EQ(m.qs.bits_flat(i), fresh_q.bits_flat(i)) << "q written";
      for (int64_t i = 0; i < m.ss.numel(); ++i) ASSERT_EQ(m.ss.bits_flat(i), fresh_s.bits_flat(i)) << "scales written";
    } else {
      ASSERT_TRUE(s.ok()) << s.to_string();
      expect_fused(k, y, c.T, c.F, m.q, m.s, true, kTensorScale);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, SiluMulQuantKernel, ::testing::ValuesIn(kAllKinds), kind_test_name);

}  // namespace
