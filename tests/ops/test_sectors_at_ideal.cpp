// Every memory-bound kernel, on production shapes (WORKLOADS.md) with every tensor where
// cudaMalloc would put it (256-byte aligned, packed): each global request touches the fewest
// 32-byte sectors its bytes allow (emu::Counters::excess_*_sectors() == 0), unique bytes are
// the compulsory traffic, and shared memory (where a kernel uses it) has no bank conflicts. Every
// input dtype and scale kind of each op, and each kernel path (norm: warp or CTA per row, FP8
// outputs, fp8-group maxima through shared memory at vec 1 / 2). Exceptions, pinned where they
// arise: rope with an f32 cos/sin cache (half-used sectors, reused from L1 by the next request:
// tests/ops/rope/test_rope_kernel.cpp) and fp4 scale rows that start mid-sector (below). Values
// are random; correctness is the kernel tests' business, this file pins the access pattern; that
// it does not depend on the values (zeros, subnormals, NaN and infinities planted:
// HostileValuesKeepTheAccessPattern); and, off the production shapes, rows that start mid-sector
// at most one sector per request over the ideal (OddShapesStayCoalesced).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "check/host_tensor.h"
#include "ops/common/emu_launch.h"
#include "ops/norm/launch.h"
#include "ops/quant/launch_plan.h"
#include "ops/rope/plan.h"
#include "runtime/tune.h"
#include "support/plant.h"
#include "support/seed.h"
#include "tejas/activation.h"
#include "tejas/norm.h"
#include "tejas/quant.h"
#include "tejas/rope.h"

using namespace tejas;
using check::HostTensor;

namespace {

constexpr double kEps = 1e-6;

// A packed tensor of `shape`, 256-byte aligned as cudaMalloc would place it (every HostTensor
// payload is: tests/runtime/test_validate.cpp, HostTensor.PayloadStartsOn256Bytes).
struct Buf {
  HostTensor h;
  TensorView v;
};

Buf make(DType dt, const std::vector<int64_t>& shape, check::Rng& rng) {
  Buf b{HostTensor(dt, shape), {}};
  if (dtype_bits(dt) >= 8 && dt != DType::ue8m0 && dt != DType::e4m3 && dt != DType::e5m2) {
    check::fill_normal(b.h, rng);
  } else {
    check::fill_randint(b.h, rng, 100, 130);  // codes / exponents: in range, finite
  }
  b.v = b.h.view();
  return b;
}

ExecContext emulator() {
  ExecContext ctx;
  ctx.backend = Backend::emulator;
  return ctx;
}

struct Totals {
  uint64_t excess_load = 0, excess_store = 0, read = 0, written = 0, prefetches = 0, bank_conflicts = 0;
  uint64_t load_requests = 0, load_sectors = 0, store_requests = 0, store_sectors = 0;
  uint64_t shared_requests = 0, shared_wavefronts = 0;
};

Totals totals() {
  Totals t;
  for (const emu::LaunchReport& r : detail::last_emulator_reports()) {
    EXPECT_TRUE(r.ok()) << r.summary();
    const emu::Counters& c = r.counters;
    t.excess_load += c.excess_load_sectors();
    t.excess_store += c.excess_store_sectors();
    t.read += c.global_bytes_read_unique;
    t.written += c.global_bytes_written_unique;
    t.prefetches += c.global_prefetches;
    t.bank_conflicts += c.bank_conflict_wavefronts();
    t.load_requests += c.global_load_requests;
    t.load_sectors += c.global_load_sectors;
    t.store_requests += c.global_store_requests;
    t.store_sectors += c.global_store_sectors;
    t.shared_requests += c.shared_requests;
    t.shared_wavefronts += c.shared_wavefronts;
  }
  return t;
}

// store_excess: the stores' derived excess over the ideal (see the fp4 cases below).
void expect_ideal(const std::string& what, uint64_t read, uint64_t written, uint64_t store_excess = 0) {
  const Totals t = totals();
  EXPECT_EQ(t.excess_load, 0u) << what;
  EXPECT_EQ(t.excess_store, store_excess) << what;
  EXPECT_EQ(t.read, read) << what;
  EXPECT_EQ(t.written, written) << what;
  EXPECT_EQ(t.bank_conflicts, 0u) << what;
}

uint64_t bytes(const Buf& b) { return static_cast<uint64_t>(b.v.numel() * dtype_bits(b.v.dtype) / 8); }

TEST(SectorsAtIdeal, Norm) {
  TEJAS_SEEDED_TEST_RNG();
  for (int64_t H : {2048, 4096, 7168, 16384}) {  // Qwen3-30B, Llama-8B, DeepSeek-V3, max
    constexpr int64_t T = 3;
    Buf x = make(DType::bf16, {T, H}, rng), res = make(DType::bf16, {T, H}, rng);
    Buf w = make(DType::bf16, {H}, rng), out = make(DType::bf16, {T, H}, rng);
    Buf q = make(DType::e4m3, {T, H}, rng), s = make(DType::f32, {T, H / 128}, rng);
    const std::string at = "H=" + std::to_string(H);
    ASSERT_TRUE(rms_norm(emulator(), x.v, w.v, kEps, out.v).ok());
    // Every row's thread prefetches the weight vectors it will read after the reduction (one
    // prefetch.L2 per 16-byte vector: T x H / 8).
    EXPECT_EQ(totals().prefetches, static_cast<uint64_t>(T * H / 8)) << at;
    expect_ideal("rms_norm " + at, bytes(x) + bytes(w), bytes(out));
    ASSERT_TRUE(fused_add_rms_norm(emulator(), x.v, res.v, w.v, kEps, out.v).ok());
    expect_ideal("fused_add_rms_norm " + at, 2 * bytes(x) + bytes(w), bytes(res) + bytes(out));
    ASSERT_TRUE(fused_add_rms_norm_quant_fp8_group(emulator(), x.v, res.v, w.v, kEps, q.v, s.v).ok());
    expect_ideal("fused_add_rms_norm_quant_fp8_group " + at, 2 * bytes(x) + bytes(w),
                 bytes(res) + bytes(q) + bytes(s));
  }
}

// Every norm output form on [T, H] x of dtype xd, each launch's counters at the ideal: x's dtype
// (rms_norm, fused_add_rms_norm), FP8 with a dynamic (per-row scale written) or static (scale
// read) scale, fp8 groups with f32 and ue8m0 scales. `planned(what)` runs after each call (a
// check of the plan it took; the counters stay the last launch's).
template <class Planned>
void norm_outputs_at_ideal(check::Rng& rng, DType xd, int64_t T, int64_t H, const std::string& at, Planned&& planned) {
  Buf x = make(xd, {T, H}, rng), res = make(xd, {T, H}, rng), w = make(xd, {H}, rng);
  Buf out = make(xd, {T, H}, rng), q = make(DType::e4m3, {T, H}, rng);
  ASSERT_TRUE(rms_norm(emulator(), x.v, w.v, kEps, out.v).ok());
  planned("rms_norm");
  expect_ideal("rms_norm " + at, bytes(x) + bytes(w), bytes(out));
  ASSERT_TRUE(fused_add_rms_norm(emulator(), x.v, res.v, w.v, kEps, out.v).ok());
  planned("fused_add_rms_norm");
  expect_ideal("fused_add_rms_norm " + at, 2 * bytes(x) + bytes(w), bytes(res) + bytes(out));
  Buf dyn = make(DType::f32, {T}, rng), stat = make(DType::f32, {1}, rng);
  *static_cast<float*>(stat.v.data) = 0.25f;
  ASSERT_TRUE(rms_norm(emulator(), x.v, w.v, kEps, q.v, Fp8Scale{dyn.v, Fp8ScaleMode::dynamic_per_token}).ok());
  planned("rms_norm fp8 dynamic");
  expect_ideal("rms_norm fp8 dynamic " + at, bytes(x) + bytes(w), bytes(q) + bytes(dyn));
  ASSERT_TRUE(rms_norm(emulator(), x.v, w.v, kEps, q.v, Fp8Scale{stat.v, Fp8ScaleMode::static_per_tensor}).ok());
  planned("rms_norm fp8 static");
  expect_ideal("rms_norm fp8 static " + at, bytes(x) + bytes(w) + bytes(stat), bytes(q));
  Buf sf = make(DType::f32, {T, H / 128}, rng), s8 = make(DType::ue8m0, {T, H / 128}, rng);
  for (const Buf* sc : {&sf, &s8}) {
    const std::string what = std::string("fused_add_rms_norm_quant_fp8_group ") + (sc == &sf ? "f32" : "ue8m0");
    ASSERT_TRUE(fused_add_rms_norm_quant_fp8_group(emulator(), x.v, res.v, w.v, kEps, q.v, sc->v).ok());
    planned(what);
    expect_ideal(what + " " + at, 2 * bytes(x) + bytes(w), bytes(res) + bytes(q) + bytes(*sc));
  }
}

// The other norm paths: short rows (one warp per row: H 128 and 1024), f16 and f32 x, every
// output form. Rows stay whole sectors (H a multiple of 16 elements).
TEST(SectorsAtIdeal, NormOtherPaths) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t T = 5;
  for (int64_t H : {128, 1024, 5120})
    for (DType xd : {DType::bf16, DType::f16, DType::f32})
      norm_outputs_at_ideal(rng, xd, T, H, "H=" + std::to_string(H) + " " + std::string(dtype_name(xd)),
                            [](const std::string&) {});
}

// The same outputs on the pipelined kernels, the default wherever the rows outnumber the
// resident CTAs twice (T >= 6 on the emulator's 3; docs/kernels/rms_norm.md): the CTA-row
// pipeline (H 4096, 16384) and the warp-row one (H 1024, T 29), bf16 and f16 x (the pipelines
// copy 16-bit rows only: config.h's copyable_rows; f32 keeps a CTA per row, NormOtherPaths),
// every output form. The cases above (T 3 and 5) run one CTA per row.
TEST(SectorsAtIdeal, NormPipelined) {
  TEJAS_SEEDED_TEST_RNG();
  const detail::ScopedTuneOverride defaults(detail::Tune{});  // the default plan, whatever TEJAS_TUNE says
  struct Shape {
    int64_t T, H;
    bool warp_rows;
  };
  for (const Shape& sh : {Shape{7, 4096, false}, Shape{6, 16384, false}, Shape{29, 1024, true}}) {
    for (DType xd : {DType::bf16, DType::f16}) {
      const std::string at =
          "T=" + std::to_string(sh.T) + " H=" + std::to_string(sh.H) + " " + std::string(dtype_name(xd));
      norm_outputs_at_ideal(rng, xd, sh.T, sh.H, at, [&](const std::string& what) {
        const norm::NormConfig c = norm::last_config();
        EXPECT_GT(c.pipeline_stages, 0) << what << " " << at << ": not the pipelined kernel";
        EXPECT_EQ(c.warp_per_row, sh.warp_rows) << what << " " << at;
      });
    }
  }
}

// fp8-group output at vec 1 and 2 (x 2 or 4 bytes off its 16-byte alignment): a group of 128
// spans 64-128 threads, so group maxima meet in shared memory (norm kernel.cuh,
// group_amax_warp / group_amax_wide). No bank conflicts there; bytes still compulsory.
TEST(SectorsAtIdeal, NormWideGroupsMeetInSharedMemoryWithoutConflicts) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t T = 3;
  for (int64_t H : {1024, 4096, 16384}) {
    for (int64_t shift : {1, 2}) {  // bf16 elements: vec 1 and vec 2
      const std::string at = "H=" + std::to_string(H) + " shift " + std::to_string(shift);
      Buf xbuf = make(DType::bf16, {T * H + 8}, rng);
      TensorView x = TensorView::contiguous(static_cast<uint16_t*>(xbuf.v.data) + shift, DType::bf16, {T, H});
      Buf res = make(DType::bf16, {T, H}, rng), w = make(DType::bf16, {H}, rng);
      Buf q = make(DType::e4m3, {T, H}, rng), s = make(DType::f32, {T, H / 128}, rng);
      ASSERT_TRUE(fused_add_rms_norm_quant_fp8_group(emulator(), x, res.v, w.v, kEps, q.v, s.v).ok());
      const Totals t = totals();
      EXPECT_GT(t.shared_requests, 0u) << at << ": the group maxima did not go through shared memory";
      EXPECT_EQ(t.bank_conflicts, 0u) << at;
      EXPECT_EQ(t.read, 2 * bytes(res) + bytes(w)) << at;
      EXPECT_EQ(t.written, bytes(res) + bytes(q) + bytes(s)) << at;
    }
  }
}

TEST(SectorsAtIdeal, Activation) {
  TEJAS_SEEDED_TEST_RNG();
  for (int64_t F : {768, 2880, 14336}) {  // Qwen3 expert, gpt-oss, Llama-8B
    constexpr int64_t T = 2;
    Buf x = make(DType::bf16, {T, 2 * F}, rng), out = make(DType::bf16, {T, F}, rng);
    const std::string at = "F=" + std::to_string(F);
    ASSERT_TRUE(silu_mul(emulator(), x.v, out.v).ok());
    expect_ideal("silu_mul " + at, bytes(x), bytes(out));
    ASSERT_TRUE(gelu_tanh_mul(emulator(), x.v, out.v).ok());
    expect_ideal("gelu_tanh_mul " + at, bytes(x), bytes(out));
    if (F % 128 == 0) {
      Buf q = make(DType::e4m3, {T, F}, rng), s = make(DType::f32, {T, F / 128}, rng);
      ASSERT_TRUE(silu_mul_quant_fp8_group(emulator(), x.v, q.v, s.v).ok());
      expect_ideal("silu_mul_quant_fp8_group " + at, bytes(x), bytes(q) + bytes(s));
    }
    Buf q4 = make(DType::e2m1, {T, F}, rng), s4 = make(DType::ue8m0, {T, F / 32}, rng);
    // Scale rows are F / 32 bytes (mxfp4) or F / 16 (nvfp4): 90 and 180 for gpt-oss, so row 1
    // starts mid-sector. A warp stores the scales of its 32 / lanes_per_group groups as one
    // contiguous run: mxfp4 4 lanes per group -> 8 bytes at 90 + 8w, which straddle a 32-byte
    // boundary for w = 0, 4, 8 (3); nvfp4 2 lanes -> 16 bytes at 180 + 16w, straddling for
    // w = 0, 2, ..., 10 (6). Row 0 and sector-aligned rows: none.
    ASSERT_TRUE(silu_mul_quant_mx(emulator(), MxFormat::mxfp4, x.v, q4.v, s4.v).ok());
    const bool off_sector = F == 2880;
    expect_ideal("silu_mul_quant_mx mxfp4 " + at, bytes(x), bytes(q4) + bytes(s4), off_sector ? 3 : 0);
    Buf sn = make(DType::e4m3, {T, F / 16}, rng), ts = make(DType::f32, {1}, rng);
    *static_cast<float*>(ts.v.data) = 0.5f;  // tensor_scale: > 0, finite
    ASSERT_TRUE(silu_mul_quant_mx(emulator(), MxFormat::nvfp4, x.v, q4.v, sn.v, ts.v).ok());
    expect_ideal("silu_mul_quant_mx nvfp4 " + at, bytes(x) + bytes(ts), bytes(q4) + bytes(sn), off_sector ? 6 : 0);
  }
}

// f16 activations into every fused output: fp8 with ue8m0 and f32 scales, mxfp4, nvfp4.
TEST(SectorsAtIdeal, ActivationF16AndUe8m0) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t T = 3, F = 4096;
  Buf x = make(DType::f16, {T, 2 * F}, rng), out = make(DType::f16, {T, F}, rng);
  ASSERT_TRUE(silu_mul(emulator(), x.v, out.v).ok());
  expect_ideal("silu_mul f16", bytes(x), bytes(out));
  ASSERT_TRUE(gelu_tanh_mul(emulator(), x.v, out.v).ok());
  expect_ideal("gelu_tanh_mul f16", bytes(x), bytes(out));
  Buf q = make(DType::e4m3, {T, F}, rng), s = make(DType::ue8m0, {T, F / 128}, rng);
  ASSERT_TRUE(silu_mul_quant_fp8_group(emulator(), x.v, q.v, s.v).ok());
  expect_ideal("silu_mul_quant_fp8_group f16 ue8m0", bytes(x), bytes(q) + bytes(s));
  Buf s32 = make(DType::f32, {T, F / 128}, rng);
  ASSERT_TRUE(silu_mul_quant_fp8_group(emulator(), x.v, q.v, s32.v).ok());
  expect_ideal("silu_mul_quant_fp8_group f16 f32", bytes(x), bytes(q) + bytes(s32));
  Buf q4 = make(DType::e2m1, {T, F}, rng), s4 = make(DType::ue8m0, {T, F / 32}, rng);
  ASSERT_TRUE(silu_mul_quant_mx(emulator(), MxFormat::mxfp4, x.v, q4.v, s4.v).ok());
  expect_ideal("silu_mul_quant_mx mxfp4 f16", bytes(x), bytes(q4) + bytes(s4));
  Buf sn = make(DType::e4m3, {T, F / 16}, rng), ts = make(DType::f32, {1}, rng);
  *static_cast<float*>(ts.v.data) = 0.5f;  // tensor_scale: > 0, finite
  ASSERT_TRUE(silu_mul_quant_mx(emulator(), MxFormat::nvfp4, x.v, q4.v, sn.v, ts.v).ok());
  expect_ideal("silu_mul_quant_mx nvfp4 f16", bytes(x) + bytes(ts), bytes(q4) + bytes(sn));
}

TEST(SectorsAtIdeal, Quant) {
  TEJAS_SEEDED_TEST_RNG();
  for (int64_t K : {2048, 2880, 7168}) {
    constexpr int64_t M = 4;
    Buf x = make(DType::bf16, {M, K}, rng), out = make(DType::bf16, {M, K}, rng);
    const std::string at = "K=" + std::to_string(K);
    if (K % 128 == 0) {
      Buf q = make(DType::e4m3, {M, K}, rng), s = make(DType::f32, {M, K / 128}, rng);
      ASSERT_TRUE(quant_fp8_group(emulator(), x.v, q.v, s.v).ok());
      expect_ideal("quant_fp8_group " + at, bytes(x), bytes(q) + bytes(s));
      ASSERT_TRUE(dequant_fp8_group(emulator(), q.v, s.v, out.v).ok());
      expect_ideal("dequant_fp8_group " + at, bytes(q) + bytes(s), bytes(out));
    }
    Buf q8 = make(DType::e4m3, {M, K}, rng), s8 = make(DType::ue8m0, {M, K / 32}, rng);
    ASSERT_TRUE(quant_mx(emulator(), MxFormat::mxfp8, x.v, q8.v, s8.v).ok());
    expect_ideal("quant_mx mxfp8 " + at, bytes(x), bytes(q8) + bytes(s8));
    Buf q4 = make(DType::e2m1, {M, K}, rng), s4 = make(DType::ue8m0, {M, K / 32}, rng);
    ASSERT_TRUE(quant_mx(emulator(), MxFormat::mxfp4, x.v, q4.v, s4.v).ok());
    expect_ideal("quant_mx mxfp4 " + at, bytes(x), bytes(q4) + bytes(s4));
    ASSERT_TRUE(dequant_mx(emulator(), MxFormat::mxfp4, q4.v, s4.v, TensorView{}, out.v).ok());
    expect_ideal("dequant_mx mxfp4 " + at, bytes(q4) + bytes(s4), bytes(out));
    Buf sn = make(DType::e4m3, {M, K / 16}, rng), ts = make(DType::f32, {1}, rng);
    *static_cast<float*>(ts.v.data) = 0.5f;  // tensor_scale: > 0, finite
    ASSERT_TRUE(quant_mx(emulator(), MxFormat::nvfp4, x.v, q4.v, sn.v, ts.v).ok());
    expect_ideal("quant_mx nvfp4 " + at, bytes(x) + bytes(ts), bytes(q4) + bytes(sn));
    ASSERT_TRUE(dequant_mx(emulator(), MxFormat::nvfp4, q4.v, sn.v, ts.v, out.v).ok());
    expect_ideal("dequant_mx nvfp4 " + at, bytes(q4) + bytes(sn) + bytes(ts), bytes(out));
    ASSERT_TRUE(dequant_mx(emulator(), MxFormat::mxfp8, q8.v, s8.v, TensorView{}, out.v).ok());
    expect_ideal("dequant_mx mxfp8 " + at, bytes(q8) + bytes(s8), bytes(out));
  }
}

// nvfp4 from bf16 / f16 on version 7's persistent grid (config.h's clean_table: planned where
// each of the emulator's 2 resident CTAs has kCleanMinSteps warp steps; the Quant case above is too
// small for it), on data whose 16-element blocks span 2^-12 .. 2^12: a warp's 16 groups read the
// shared table at 16 different block-scale codes, more than 32 codes apart (one shared table
// of 128 floats: up to 4-way conflicts; kernel.cuh's Nvfp4CleanTable keeps a copy per group slot).
TEST(SectorsAtIdeal, QuantNvfp4CleanTable) {
  TEJAS_SEEDED_TEST_RNG();
  const detail::ScopedTuneOverride defaults(detail::Tune{});  // version 7 on, whatever TEJAS_TUNE says
  constexpr int64_t M = 17, K = 4096;
  for (DType xd : {DType::bf16, DType::f16}) {
    const std::string at(dtype_name(xd));
    Buf x = make(xd, {M, K}, rng);
    for (int64_t b = 0; b < M * K / 16; ++b) {
      const double mag = std::ldexp(1.0, static_cast<int>(rng.randint(-12, 12)));
      for (int64_t k = 0; k < 16; ++k) x.h.set_flat(b * 16 + k, x.h.get_flat(b * 16 + k) * mag);
    }
    Buf q4 = make(DType::e2m1, {M, K}, rng), sn = make(DType::e4m3, {M, K / 16}, rng), ts = make(DType::f32, {1}, rng);
    *static_cast<float*>(ts.v.data) = 0.5f;
    quant_kernel::QuantPlan plan = quant_kernel::plan_quant(x.v, q4.v, sn.v, ts.v, 16, quant_kernel::ScaleRule::nvfp4);
    plan.resident_ctas = quant_kernel::kEmuResidentCtas;
    ASSERT_TRUE(quant_kernel::quant_launch(plan, 0).config.clean_table) << "version 7 not planned: " << at;
    ASSERT_TRUE(quant_mx(emulator(), MxFormat::nvfp4, x.v, q4.v, sn.v, ts.v).ok());
    EXPECT_GT(totals().shared_requests, 0u) << at;
    expect_ideal("quant_mx nvfp4 clean table " + at, bytes(x) + bytes(ts), bytes(q4) + bytes(sn));
  }
}

// quant_fp8_group with ue8m0 scales, and f16 / f32 inputs and outputs of every quant op.
TEST(SectorsAtIdeal, QuantOtherDtypes) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int64_t M = 3, K = 4096;
  for (DType xd : {DType::bf16, DType::f16, DType::f32}) {
    const std::string at(dtype_name(xd));
    Buf x = make(xd, {M, K}, rng), out = make(xd, {M, K}, rng);
    Buf q = make(DType::e4m3, {M, K}, rng), sf = make(DType::f32, {M, K / 128}, rng);
    Buf su = make(DType::ue8m0, {M, K / 128}, rng);
    for (const Buf* s : {&sf, &su}) {
      const std::string what = at + (s == &sf ? " f32 scales" : " ue8m0 scales");
      ASSERT_TRUE(quant_fp8_group(emulator(), x.v, q.v, s->v).ok());
      expect_ideal("quant_fp8_group " + what, bytes(x), bytes(q) + bytes(*s));
      ASSERT_TRUE(dequant_fp8_group(emulator(), q.v, s->v, out.v).ok());
      expect_ideal("dequant_fp8_group " + what, bytes(q) + bytes(*s), bytes(out));
    }
    Buf q8 = make(DType::e4m3, {M, K}, rng), s8 = make(DType::ue8m0, {M, K / 32}, rng);
    ASSERT_TRUE(quant_mx(emulator(), MxFormat::mxfp8, x.v, q8.v, s8.v).ok());
    expect_ideal("quant_mx mxfp8 " + at, bytes(x), bytes(q8) + bytes(s8));
    ASSERT_TRUE(dequant_mx(emulator(), MxFormat::mxfp8, q8.v, s8.v, TensorView{}, out.v).ok());
    expect_ideal("dequant_mx mxfp8 " + at, bytes(q8) + bytes(s8), bytes(out));
    Buf q4 = make(DType::e2m1, {M, K}, rng), sn = make(DType::e4m3, {M, K / 16}, rng), ts = make(DType::f32, {1}, rng);
    *static_cast<float*>(ts.v.data) = 0.5f;
    ASSERT_TRUE(quant_mx(emulator(), MxFormat::nvfp4, x.v, q4.v, sn.v, ts.v).ok());
    expect_ideal("quant_mx nvfp4 " + at, bytes(x) + bytes(ts), bytes(q4) + bytes(sn));
    ASSERT_TRUE(dequant_mx(emulator(), MxFormat::nvfp4, q4.v, sn.v, ts.v, out.v).ok());
    expect_ideal("dequant_mx nvfp4 " + at, bytes(q4) + bytes(sn) + bytes(ts), bytes(out));
  }
}

// Llama-3.1-8B attention (Hq 32, Hk 8, D 128), bf16, bf16 cos/sin cache, page size 16; with
// `heads` heads in flight per thread (TEJAS_TUNE rope.heads: 1 for kv_cache_write, 2 for the ops that rotate, by default).
void rope_sectors_at_ideal(check::Rng& rng, int heads) {
  detail::Tune tune;
  tune.rope_heads = heads;
  const detail::ScopedTuneOverride override_tune(tune);
  SCOPED_TRACE(::testing::Message() << "rope.heads=" << heads);
  constexpr int64_t T = 3, Hq = 32, Hk = 8, D = 128, kMaxPos = 64, kBlocks = 4, kPage = 16;
  Buf pos = make(DType::i64, {T}, rng), q = make(DType::bf16, {T, Hq, D}, rng), k = make(DType::bf16, {T, Hk, D}, rng);
  Buf v = make(DType::bf16, {T, Hk, D}, rng), cache = make(DType::bf16, {kMaxPos, D}, rng);
  for (int64_t t = 0; t < T; ++t) static_cast<int64_t*>(pos.v.data)[t] = 5 * t + 1;  // distinct rows
  const uint64_t qk = bytes(q) + bytes(k), cos_rows = T * D * 2;
  ASSERT_TRUE(rope(emulator(), pos.v, q.v, k.v, cache.v, RopeStyle::neox).ok());
  expect_ideal("rope neox", qk + cos_rows + bytes(pos), qk);
  ASSERT_TRUE(rope(emulator(), pos.v, q.v, k.v, cache.v, RopeStyle::gptj).ok());
  expect_ideal("rope gptj", qk + cos_rows + bytes(pos), qk);

  // M-RoPE (Qwen2-VL: sections 16/24/24 of 64 pairs): three position rows, each token's three
  // cos/sin rows read for their sections only.
  Buf pos3 = make(DType::i64, {3, T}, rng);
  for (int64_t i = 0; i < 3 * T; ++i) static_cast<int64_t*>(pos3.v.data)[i] = 7 * i + 2;  // distinct rows
  ASSERT_TRUE(mrope(emulator(), pos3.v, q.v, k.v, cache.v, MropeSection{16, 24, 24}).ok());
  {
    // The gathers are not sector-ideal by the op's layout, not by the kernel: per warp (4 head
    // lanes x 8 columns of 8 pairs; kWarpsPerToken) one request reads the token's 3
    // positions (rows of T i64: 24 bytes in 2-3 sectors, ideal 1), and one each reads the cos
    // and sin halves of a row gathered from 3 rows by section (bytes 0-31 / 32-79 / 80-127 of
    // the half: 5 sectors for 128 bytes, ideal 4). Everything else is at the ideal.
    // (Head lanes: ceil((Hq + Hk) / heads), four per warp.)
    constexpr int64_t kSector = 32, kI64 = 8;
    const int64_t kWarpsPerToken = (Hq + Hk + heads - 1) / heads / 4;
    uint64_t want = 0;
    for (int64_t t = 0; t < T; ++t) {
      std::vector<int64_t> sectors;
      for (int64_t r = 0; r < 3; ++r) sectors.push_back((r * T + t) * kI64 / kSector);
      std::sort(sectors.begin(), sectors.end());
      const auto distinct = std::unique(sectors.begin(), sectors.end()) - sectors.begin();
      want += static_cast<uint64_t>(kWarpsPerToken * ((distinct - 1) + 2 * (5 - 4)));
    }
    const Totals t = totals();
    EXPECT_EQ(t.excess_load, want) << "mrope";
    EXPECT_EQ(t.excess_store, 0u) << "mrope";
    EXPECT_EQ(t.read, qk + cos_rows + bytes(pos3)) << "mrope";  // one row's worth, from 3 rows
    EXPECT_EQ(t.written, qk) << "mrope";
    EXPECT_EQ(t.bank_conflicts, 0u) << "mrope";
  }

  Buf slots = make(DType::i64, {T}, rng);
  for (int64_t t = 0; t < T; ++t) static_cast<int64_t*>(slots.v.data)[t] = 17 * t + 3;  // distinct pages
  Buf kc = make(DType::bf16, {kBlocks, kPage, Hk, D}, rng), vc = make(DType::bf16, {kBlocks, kPage, Hk, D}, rng);
  PagedKvCache pc{kc.v, vc.v, {}, {}};
  ASSERT_TRUE(rope_kv_cache_write(emulator(), pos.v, q.v, k.v, v.v, cache.v, RopeStyle::neox, slots.v, pc).ok());
  expect_ideal("rope_kv_cache_write", qk + bytes(v) + cos_rows + bytes(pos) + bytes(slots), qk + 2 * bytes(k));

  // The cache write alone into `caches`: k and v read once (and the scales, `scale_bytes`), one
  // element per cache element written; on kv_write_kernel (rope.pipeline=1, the default) and
  // kv_pipe_kernel (3: rows staged through shared memory; one head in flight, the op's default
  // whatever rope.heads this run sets).
  const auto kv_write_ideal = [&](const PagedKvCache& caches, const std::string& what, uint64_t scale_bytes) {
    for (int pipeline : {1, 3}) {
      detail::Tune kv;
      kv.rope_pipeline = pipeline;
      const detail::ScopedTuneOverride override_kv(kv);
      const std::string at = what + " rope.pipeline=" + std::to_string(pipeline);
      ASSERT_TRUE(kv_cache_write(emulator(), k.v, v.v, slots.v, caches).ok());
      EXPECT_EQ(rotary::last_launch().pipeline, pipeline == 3) << at;
      expect_ideal(at, bytes(k) + bytes(v) + bytes(slots) + scale_bytes,
                   2 * static_cast<uint64_t>(dtype_bytes(caches.k_cache.dtype, T * Hk * D)));
    }
  };
  kv_write_ideal(pc, "kv_cache_write bf16", 0);

  // fp8 caches (e4m3, e5m2): 128-byte rows per (token, head), the two f32 scales read once each.
  for (DType cd : {DType::e4m3, DType::e5m2}) {
    Buf kc8 = make(cd, {kBlocks, kPage, Hk, D}, rng), vc8 = make(cd, {kBlocks, kPage, Hk, D}, rng);
    Buf ks = make(DType::f32, {1}, rng), vs = make(DType::f32, {1}, rng);
    *static_cast<float*>(ks.v.data) = 0.05f;
    *static_cast<float*>(vs.v.data) = 0.02f;
    const PagedKvCache pc8{kc8.v, vc8.v, ks.v, vs.v};
    ASSERT_TRUE(rope_kv_cache_write(emulator(), pos.v, q.v, k.v, v.v, cache.v, RopeStyle::neox, slots.v, pc8).ok());
    expect_ideal("rope_kv_cache_write " + std::string(dtype_name(cd)),
                 qk + bytes(v) + cos_rows + bytes(pos) + bytes(slots) + bytes(ks) + bytes(vs),
                 qk + 2 * T * Hk * D);
    kv_write_ideal(pc8, "kv_cache_write " + std::string(dtype_name(cd)), bytes(ks) + bytes(vs));
  }

  // Split in two launches (TEJAS_TUNE rope.kv_split=2; by default from 16 MiB): each half reads
  // the positions and cos/sin rows, once each; everything else as fused.
  detail::Tune split = tune;
  split.rope_kv_split = 2;
  const detail::ScopedTuneOverride override_split(split);
  ASSERT_TRUE(rope_kv_cache_write(emulator(), pos.v, q.v, k.v, v.v, cache.v, RopeStyle::neox, slots.v, pc).ok());
  expect_ideal("rope_kv_cache_write split", qk + bytes(v) + 2 * (cos_rows + bytes(pos)) + bytes(slots),
               qk + 2 * bytes(k));
}

TEST(SectorsAtIdeal, Rope) {
  TEJAS_SEEDED_TEST_RNG();
  rope_sectors_at_ideal(rng, 1);
}

TEST(SectorsAtIdeal, RopeTwoHeadsInFlight) {
  TEJAS_SEEDED_TEST_RNG();
  rope_sectors_at_ideal(rng, 2);
}

// The rope family with f16 q / k / v and an f16 cos/sin cache, and rope_kv_cache_write in gptj
// style too (the cases above: bf16, neox for the cache write), under the default tune.
TEST(SectorsAtIdeal, RopeF16AndGptjCacheWrite) {
  TEJAS_SEEDED_TEST_RNG();
  const detail::ScopedTuneOverride defaults(detail::Tune{});
  constexpr int64_t T = 3, Hq = 32, Hk = 8, D = 128, kMaxPos = 64, kBlocks = 4, kPage = 16;
  for (DType dt : {DType::bf16, DType::f16}) {
    const std::string at(dtype_name(dt));
    Buf pos = make(DType::i64, {T}, rng), q = make(dt, {T, Hq, D}, rng), k = make(dt, {T, Hk, D}, rng);
    Buf v = make(dt, {T, Hk, D}, rng), cache = make(dt, {kMaxPos, D}, rng);
    for (int64_t t = 0; t < T; ++t) static_cast<int64_t*>(pos.v.data)[t] = 5 * t + 1;  // distinct rows
    Buf slots = make(DType::i64, {T}, rng);
    for (int64_t t = 0; t < T; ++t) static_cast<int64_t*>(slots.v.data)[t] = 17 * t + 3;  // distinct pages
    Buf kc = make(dt, {kBlocks, kPage, Hk, D}, rng), vc = make(dt, {kBlocks, kPage, Hk, D}, rng);
    const uint64_t qk = bytes(q) + bytes(k), cos_rows = T * D * 2;
    for (RopeStyle style : {RopeStyle::neox, RopeStyle::gptj}) {
      const std::string what = at + (style == RopeStyle::neox ? " neox" : " gptj");
      if (dt == DType::f16) {
        ASSERT_TRUE(rope(emulator(), pos.v, q.v, k.v, cache.v, style).ok());
        expect_ideal("rope " + what, qk + cos_rows + bytes(pos), qk);
      }
      ASSERT_TRUE(rope_kv_cache_write(emulator(), pos.v, q.v, k.v, v.v, cache.v, style, slots.v,
                                      PagedKvCache{kc.v, vc.v, {}, {}})
                      .ok());
      expect_ideal("rope_kv_cache_write " + what, qk + bytes(v) + cos_rows + bytes(pos) + bytes(slots),
                   qk + 2 * bytes(k));
    }
  }
}

// Shapes off the production grid (rows that are not whole sectors: H or F = 4100 at 8-byte
// vectors, 1003 at one element, 4104 at 16 bytes with rows starting mid-sector, 36; rope heads of
// 72, 40 and 10 elements in gptj style): the lanes of a request still read or write consecutive
// bytes, only starting mid-sector, so the whole call touches at most one sector per request more
// than the bytes need (excess_*_sectors <= requests; a strided lane order costs several per
// request), and unique bytes stay compulsory. The norm family on its CTA-per-row kernels (T 4;
// H 36: a warp per row) and at T 9 on the pipelined ones where a row is whole 16-byte vectors
// (H 4104 bf16; asserted), bf16 and f32 (f32 at H 4104: x rows on the grid, fp8 rows not);
// quant_fp8_group and quant_mx at 33 groups of 128 (x and code rows on the grid, scale rows
// not). Neox rope at such head dims keeps only its unique bytes here: a request reads one half
// of several head rows, runs apart by the other half (docs/kernels/rope.md, "Head dims off the
// sector grid").
TEST(SectorsAtIdeal, OddShapesStayCoalesced) {
  TEJAS_SEEDED_TEST_RNG();
  const detail::ScopedTuneOverride defaults(detail::Tune{});
  const auto coalesced = [](const std::string& what, uint64_t read, uint64_t written) {
    const Totals t = totals();
    EXPECT_GT(t.load_requests, 0u) << what;
    EXPECT_LE(t.excess_load, t.load_requests) << what;
    EXPECT_LE(t.excess_store, t.store_requests) << what;
    EXPECT_EQ(t.read, read) << what;
    EXPECT_EQ(t.written, written) << what;
    EXPECT_EQ(t.bank_conflicts, 0u) << what;
  };
  for (DType xd : {DType::bf16, DType::f32})
    for (int64_t H : {4100, 1003, 4104, 36})
      for (int64_t T : {4, 9}) {
        const std::string at = std::string(dtype_name(xd)) + " H=" + std::to_string(H) + " T=" + std::to_string(T);
        Buf x = make(xd, {T, H}, rng), res = make(xd, {T, H}, rng), w = make(xd, {H}, rng), out = make(xd, {T, H}, rng);
        ASSERT_TRUE(rms_norm(emulator(), x.v, w.v, kEps, out.v).ok());
        EXPECT_EQ(norm::last_config().pipeline_stages > 0, T == 9 && H == 4104 && xd == DType::bf16) << at;
        coalesced("rms_norm " + at, bytes(x) + bytes(w), bytes(out));
        ASSERT_TRUE(fused_add_rms_norm(emulator(), x.v, res.v, w.v, kEps, out.v).ok());
        coalesced("fused_add_rms_norm " + at, 2 * bytes(x) + bytes(w), bytes(res) + bytes(out));
        Buf q = make(DType::e4m3, {T, H}, rng), dyn = make(DType::f32, {T}, rng);
        ASSERT_TRUE(rms_norm(emulator(), x.v, w.v, kEps, q.v, Fp8Scale{dyn.v, Fp8ScaleMode::dynamic_per_token}).ok());
        coalesced("rms_norm fp8 dynamic " + at, bytes(x) + bytes(w), bytes(q) + bytes(dyn));
        if (xd == DType::f32) continue;
        Buf g = make(xd, {T, 2 * H}, rng);
        ASSERT_TRUE(silu_mul(emulator(), g.v, out.v).ok());
        coalesced("silu_mul " + at, bytes(g), bytes(out));
        ASSERT_TRUE(gelu_tanh_mul(emulator(), g.v, out.v).ok());
        coalesced("gelu_tanh_mul " + at, bytes(g), bytes(out));
      }
  for (int64_t M : {3, 7}) {
    constexpr int64_t K = 128 * 33;
    const std::string at = "M=" + std::to_string(M);
    Buf x = make(DType::bf16, {M, K}, rng), q = make(DType::e4m3, {M, K}, rng), s = make(DType::f32, {M, K / 128}, rng);
    ASSERT_TRUE(quant_fp8_group(emulator(), x.v, q.v, s.v).ok());
    coalesced("quant_fp8_group " + at, bytes(x), bytes(q) + bytes(s));
    Buf q4 = make(DType::e2m1, {M, K}, rng), s4 = make(DType::ue8m0, {M, K / 32}, rng);
    ASSERT_TRUE(quant_mx(emulator(), MxFormat::mxfp4, x.v, q4.v, s4.v).ok());
    coalesced("quant_mx mxfp4 " + at, bytes(x), bytes(q4) + bytes(s4));
  }
  for (int64_t D : {72, 40, 10}) {
    constexpr int64_t T = 5, Hq = 3, Hk = 2, kMaxPos = 16;
    Buf pos = make(DType::i64, {T}, rng), cache = make(DType::bf16, {kMaxPos, D}, rng);
    for (int64_t t = 0; t < T; ++t) static_cast<int64_t*>(pos.v.data)[t] = 3 * t + 1;  // distinct rows
    Buf q = make(DType::bf16, {T, Hq, D}, rng), k = make(DType::bf16, {T, Hk, D}, rng);
    const uint64_t read = bytes(q) + bytes(k) + bytes(pos) + T * D * 2, written = bytes(q) + bytes(k);
    ASSERT_TRUE(rope(emulator(), pos.v, q.v, k.v, cache.v, RopeStyle::gptj).ok());
    coalesced("rope gptj D=" + std::to_string(D), read, written);
    // Neox: unique bytes and shared memory only (its half-row runs are outside the bound).
    ASSERT_TRUE(rope(emulator(), pos.v, q.v, k.v, cache.v, RopeStyle::neox).ok());
    const Totals t = totals();
    EXPECT_EQ(t.read, read) << "rope neox D=" << D;
    EXPECT_EQ(t.written, written) << "rope neox D=" << D;
    EXPECT_EQ(t.bank_conflicts, 0u) << "rope neox D=" << D;
  }
}

// The access pattern of the last op call (totals()): global requests and sectors, shared-memory
// requests and wavefronts, bank conflicts, L2 prefetches.
struct Pattern {
  uint64_t load_requests = 0, load_sectors = 0, store_requests = 0, store_sectors = 0;
  uint64_t shared_requests = 0, shared_wavefronts = 0, bank_conflicts = 0, prefetches = 0;
  bool operator==(const Pattern&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Pattern& p) {
  return os << "loads " << p.load_requests << " requests / " << p.load_sectors << " sectors, stores "
            << p.store_requests << " / " << p.store_sectors << ", shared " << p.shared_requests << " / "
            << p.shared_wavefronts << " (" << p.bank_conflicts << " conflict wavefronts), " << p.prefetches
            << " prefetches";
}
Pattern pattern() {
  const Totals t = totals();
  return Pattern{t.load_requests,   t.load_sectors,      t.store_requests, t.store_sectors,
                 t.shared_requests, t.shared_wavefronts, t.bank_conflicts, t.prefetches};
}

// The access pattern does not depend on the values: each op's call on random normal data, and
// again after zeros and subnormals are planted in its activations (zero groups: nvfp4's block
// scale 0, the smallest ue8m0 scales), and, from fresh data, after NaN, +Inf and -Inf are planted
// (NaN and infinite groups, rows and blocks: NaN scales, NaN codes), issues the same requests
// touching the same sectors, and the same shared-memory requests in the same wavefronts. A
// value-dependent store site (a NaN group's scale stored from its own instruction) or a table
// read that conflicts at some codes shows up here. Covered: silu_mul and gelu_tanh_mul, and
// silu_mul's fused fp8-group, mxfp4 and nvfp4 quantization; quant_fp8_group and quant_mx (mxfp8, mxfp4,
// nvfp4 on the clean table), and each dequant on those quant outputs (hostile codes and scales);
// rms_norm (x's dtype, fp8 dynamic and static), fused_add_rms_norm (x's dtype, fp8 dynamic) and
// its fp8-group fusion on a
// CTA per row, the CTA-row pipeline and the warp-row pipeline; rope and rope_kv_cache_write
// (both styles, e4m3 caches), mrope, kv_cache_write on kv_write_kernel and kv_pipe_kernel; bf16
// and f16. One exception, pinned below: norm.fp8_one_reduction's second amax reduction.
TEST(SectorsAtIdeal, HostileValuesKeepTheAccessPattern) {
  TEJAS_SEEDED_TEST_RNG();
  const detail::ScopedTuneOverride defaults(detail::Tune{});
  struct Planting {
    const char* what;
    void (*plant)(HostTensor&, check::Rng&, int64_t);
  };
  const Planting plantings[] = {{"zeros and subnormals", testsupport::plant_tiny},
                                {"non-finite values", testsupport::plant_non_finite}};
  // The patterns of `call` on fresh random inputs (`fresh()`) and again after `plant()`.
  const auto before_after = [&](auto&& fresh, auto&& call, auto&& plant) -> std::pair<Pattern, Pattern> {
    fresh();
    call();
    const Pattern random = pattern();
    EXPECT_GT(random.load_requests, 0u);
    plant();
    call();
    return {random, pattern()};
  };
  // For each planting, `n` values in each of `bufs`: the same pattern.
  const auto same = [&](const std::string& what, auto&& fresh, std::initializer_list<Buf*> bufs, int64_t n,
                        auto&& call) {
    SCOPED_TRACE(what);
    for (const Planting& planting : plantings) {
      SCOPED_TRACE(planting.what);
      const auto [random, planted] = before_after(fresh, call, [&] {
        for (Buf* b : bufs) planting.plant(b->h, rng, n);
      });
      EXPECT_EQ(planted, random);
    }
  };
  for (DType xd : {DType::bf16, DType::f16}) {
    const std::string at(dtype_name(xd));
    for (int64_t F : {2880, 4096}) {  // activations: T 3, gpt-oss and 4096
      const std::string shape = at + " F=" + std::to_string(F);
      constexpr int64_t T = 3;
      Buf x, out = make(xd, {T, F}, rng);
      const auto fresh = [&] { x = make(xd, {T, 2 * F}, rng); };
      same("silu_mul " + shape, fresh, {&x}, 12, [&] { ASSERT_TRUE(silu_mul(emulator(), x.v, out.v).ok()); });
      same("gelu_tanh_mul " + shape, fresh, {&x}, 12, [&] { ASSERT_TRUE(gelu_tanh_mul(emulator(), x.v, out.v).ok()); });
      if (F % 128 == 0)
        for (DType sd : {DType::f32, DType::ue8m0}) {
          Buf q = make(DType::e4m3, {T, F}, rng), s = make(sd, {T, F / 128}, rng);
          same("silu_mul_quant_fp8_group " + shape + " " + std::string(dtype_name(sd)), fresh, {&x}, 12,
               [&] { ASSERT_TRUE(silu_mul_quant_fp8_group(emulator(), x.v, q.v, s.v).ok()); });
        }
      for (MxFormat f : {MxFormat::mxfp4, MxFormat::nvfp4}) {
        const bool nv = f == MxFormat::nvfp4;
        Buf q = make(DType::e2m1, {T, F}, rng), s = make(nv ? DType::e4m3 : DType::ue8m0, {T, F / (nv ? 16 : 32)}, rng);
        Buf ts = make(DType::f32, {1}, rng);
        *static_cast<float*>(ts.v.data) = 0.5f;
        same(std::string("silu_mul_quant_mx ") + (nv ? "nvfp4 " : "mxfp4 ") + shape, fresh, {&x}, 12,
             [&] { ASSERT_TRUE(silu_mul_quant_mx(emulator(), f, x.v, q.v, s.v, nv ? ts.v : TensorView{}).ok()); });
      }
    }
    {  // quantization, and its dequant on the codes and scales just made: M 17, K 4096 (nvfp4 on
       // version 7's clean table)
      constexpr int64_t M = 17, K = 4096;
      Buf x, out = make(xd, {M, K}, rng);
      const auto fresh = [&] { x = make(xd, {M, K}, rng); };
      for (DType sd : {DType::f32, DType::ue8m0}) {
        Buf q = make(DType::e4m3, {M, K}, rng), s = make(sd, {M, K / 128}, rng);
        const std::string what = at + " " + std::string(dtype_name(sd));
        const auto quant = [&] { ASSERT_TRUE(quant_fp8_group(emulator(), x.v, q.v, s.v).ok()); };
        same("quant_fp8_group " + what, fresh, {&x}, 40, quant);
        same("dequant_fp8_group " + what, fresh, {&x}, 40, [&] {
          quant();
          ASSERT_TRUE(dequant_fp8_group(emulator(), q.v, s.v, out.v).ok());  // the pattern: this call's
        });
      }
      for (MxFormat f : {MxFormat::mxfp8, MxFormat::mxfp4, MxFormat::nvfp4}) {
        const bool nv = f == MxFormat::nvfp4;
        const int64_t group = nv ? 16 : 32;
        Buf q = make(f == MxFormat::mxfp8 ? DType::e4m3 : DType::e2m1, {M, K}, rng);
        Buf s = make(nv ? DType::e4m3 : DType::ue8m0, {M, K / group}, rng), ts = make(DType::f32, {1}, rng);
        *static_cast<float*>(ts.v.data) = 0.5f;
        const TensorView tsv = nv ? ts.v : TensorView{};
        const std::string what = std::string(f == MxFormat::mxfp8 ? "mxfp8 " : nv ? "nvfp4 " : "mxfp4 ") + at;
        const auto quant = [&] {
          ASSERT_TRUE(quant_mx(emulator(), f, x.v, q.v, s.v, tsv).ok());
          if (nv) {
            EXPECT_GT(totals().shared_requests, 0u) << "nvfp4 " << at << ": not on the clean table";
          }
        };
        same("quant_mx " + what, fresh, {&x}, 40, quant);
        same("dequant_mx " + what, fresh, {&x}, 40, [&] {
          quant();
          ASSERT_TRUE(dequant_mx(emulator(), f, q.v, s.v, tsv, out.v).ok());
        });
      }
    }
    // The norm family: a CTA per row (T 3, H 4096), the CTA-row pipeline (T 7, H 4096) and the
    // warp-row one (T 29, H 1024), each asserted; NaN and infinite rows.
    for (const auto& [T, H] : {std::pair<int64_t, int64_t>{3, 4096}, {7, 4096}, {29, 1024}}) {
      const std::string shape = at + " T=" + std::to_string(T) + " H=" + std::to_string(H);
      Buf x, res, w = make(xd, {H}, rng), out = make(xd, {T, H}, rng);
      Buf q = make(DType::e4m3, {T, H}, rng), dyn = make(DType::f32, {T}, rng), stat = make(DType::f32, {1}, rng);
      *static_cast<float*>(stat.v.data) = 0.25f;
      const auto fresh = [&] {
        x = make(xd, {T, H}, rng);
        res = make(xd, {T, H}, rng);
      };
      const auto kernel = [&] {
        const norm::NormConfig c = norm::last_config();
        EXPECT_EQ(c.pipeline_stages > 0, T > 3) << shape;
        EXPECT_EQ(c.warp_per_row, T == 29) << shape;
      };
      same("rms_norm " + shape, fresh, {&x}, 4, [&] {
        ASSERT_TRUE(rms_norm(emulator(), x.v, w.v, kEps, out.v).ok());
        kernel();
      });
      same("fused_add_rms_norm " + shape, fresh, {&x, &res}, 4,
           [&] { ASSERT_TRUE(fused_add_rms_norm(emulator(), x.v, res.v, w.v, kEps, out.v).ok()); });
      same("rms_norm fp8 static " + shape, fresh, {&x}, 4, [&] {
        ASSERT_TRUE(rms_norm(emulator(), x.v, w.v, kEps, q.v, Fp8Scale{stat.v, Fp8ScaleMode::static_per_tensor}).ok());
      });
      const Fp8Scale dynamic{dyn.v, Fp8ScaleMode::dynamic_per_token};
      const auto rms_dynamic = [&] {
        ASSERT_TRUE(rms_norm(emulator(), x.v, w.v, kEps, q.v, dynamic).ok());
        EXPECT_EQ(norm::last_config().fp8_one_reduction, T == 3) << shape;
      };
      const auto fused_dynamic = [&] {
        ASSERT_TRUE(fused_add_rms_norm(emulator(), x.v, res.v, w.v, kEps, q.v, dynamic).ok());
        EXPECT_EQ(norm::last_config().fp8_one_reduction, T == 3) << shape;
      };
      if (T > 3) {
        same("rms_norm fp8 dynamic " + shape, fresh, {&x}, 4, rms_dynamic);
        same("fused_add_rms_norm fp8 dynamic " + shape, fresh, {&x, &res}, 4, fused_dynamic);
      } else {
        // norm.fp8_one_reduction's kernel (a CTA per row) carries the row's amax in the sum of
        // squares' reduction; a row whose |x w| overflows f32 (an infinite x, a nonzero weight,
        // and no NaN) reduces its amax a second time (kernel.cuh): more shared-memory requests,
        // still conflict-free, the same global ones. Zeros and subnormals, and a NaN row (its
        // amax NaN), change nothing.
        const auto one_reduction = [&](const std::string& what, std::initializer_list<Buf*> bufs, auto&& call) {
          SCOPED_TRACE(what);
          const auto tiny = before_after(fresh, call, [&] {
            for (Buf* b : bufs) testsupport::plant_tiny(b->h, rng, 4);
          });
          EXPECT_EQ(tiny.second, tiny.first) << "zeros and subnormals";
          int64_t col = rng.randint(0, H - 1);
          while (w.h.get({col}) == 0.0) col = rng.randint(0, H - 1);  // Inf x 0 would be a NaN
          const auto nan_row = before_after(fresh, call, [&] {
            x.h.set({1, col}, std::numeric_limits<double>::quiet_NaN());
            x.h.set({1, (col + 1) % H}, std::numeric_limits<double>::infinity());
          });
          EXPECT_EQ(nan_row.second, nan_row.first) << "a NaN row";
          auto [random, got] = before_after(fresh, call, [&] {
            x.h.set({1, col}, std::numeric_limits<double>::infinity());
          });
          EXPECT_GT(got.shared_requests, random.shared_requests) << "an infinite row";
          EXPECT_EQ(got.bank_conflicts, 0u);
          got.shared_requests = random.shared_requests;
          got.shared_wavefronts = random.shared_wavefronts;
          EXPECT_EQ(got, random) << "an infinite row";
        };
        one_reduction("rms_norm fp8 dynamic " + shape, {&x}, rms_dynamic);
        one_reduction("fused_add_rms_norm fp8 dynamic " + shape, {&x, &res}, fused_dynamic);
      }
      for (DType sd : {DType::f32, DType::ue8m0}) {
        Buf s = make(sd, {T, H / 128}, rng);
        same(
            "fused_add_rms_norm_quant_fp8_group " + shape + " " + std::string(dtype_name(sd)), fresh, {&x, &res}, 4,
            [&] { ASSERT_TRUE(fused_add_rms_norm_quant_fp8_group(emulator(), x.v, res.v, w.v, kEps, q.v, s.v).ok()); });
      }
    }
    {  // the rope family (Llama-8B heads; e4m3 caches: the stores' midpoint tests)
      constexpr int64_t T = 3, Hq = 32, Hk = 8, D = 128, kMaxPos = 64, kBlocks = 4, kPage = 16;
      Buf pos = make(DType::i64, {T}, rng), pos3 = make(DType::i64, {3, T}, rng), slots = make(DType::i64, {T}, rng);
      Buf cache = make(xd, {kMaxPos, D}, rng);
      for (int64_t t = 0; t < T; ++t) {
        static_cast<int64_t*>(pos.v.data)[t] = 5 * t + 1;
        static_cast<int64_t*>(slots.v.data)[t] = 17 * t + 3;
      }
      for (int64_t i = 0; i < 3 * T; ++i) static_cast<int64_t*>(pos3.v.data)[i] = 7 * i + 2;
      Buf q, k, v;
      const auto fresh = [&] {
        q = make(xd, {T, Hq, D}, rng);
        k = make(xd, {T, Hk, D}, rng);
        v = make(xd, {T, Hk, D}, rng);
      };
      Buf kc = make(DType::e4m3, {kBlocks, kPage, Hk, D}, rng), vc = make(DType::e4m3, {kBlocks, kPage, Hk, D}, rng);
      Buf ks = make(DType::f32, {1}, rng), vs = make(DType::f32, {1}, rng);
      *static_cast<float*>(ks.v.data) = 0.05f;
      *static_cast<float*>(vs.v.data) = 0.02f;
      const PagedKvCache pc{kc.v, vc.v, ks.v, vs.v};
      for (RopeStyle style : {RopeStyle::neox, RopeStyle::gptj}) {
        const std::string what = at + (style == RopeStyle::neox ? " neox" : " gptj");
        same("rope " + what, fresh, {&q, &k}, 20,
             [&] { ASSERT_TRUE(rope(emulator(), pos.v, q.v, k.v, cache.v, style).ok()); });
        same("rope_kv_cache_write e4m3 " + what, fresh, {&q, &k, &v}, 20, [&] {
          ASSERT_TRUE(rope_kv_cache_write(emulator(), pos.v, q.v, k.v, v.v, cache.v, style, slots.v, pc).ok());
        });
      }
      same("mrope " + at, fresh, {&q, &k}, 20, [&] {
        ASSERT_TRUE(mrope(emulator(), pos3.v, q.v, k.v, cache.v, MropeSection{16, 24, 24}).ok());
      });
      for (int pipeline : {1, 3}) {  // kv_write_kernel and kv_pipe_kernel
        detail::Tune kv;
        kv.rope_pipeline = pipeline;
        const detail::ScopedTuneOverride override_kv(kv);
        same("kv_cache_write e4m3 " + at + " rope.pipeline=" + std::to_string(pipeline), fresh, {&k, &v}, 20, [&] {
          ASSERT_TRUE(kv_cache_write(emulator(), k.v, v.v, slots.v, pc).ok());
          EXPECT_EQ(rotary::last_launch().pipeline, pipeline == 3);
        });
      }
    }
  }
}

}  // namespace
