// Every memory-bound kernel, on production shapes (WORKLOADS.md) with every tensor where
// cudaMalloc would put it (256-byte aligned, packed): each global request touches the fewest
// 32-byte sectors its bytes allow (emu::Counters::excess_*_sectors() == 0), and unique bytes are
// the compulsory traffic. Exceptions, pinned where they arise: rope with an f32 cos/sin cache
// (half-used sectors, reused from L1 by the next request: tests/ops/rope/test_rope_kernel.cpp)
// and fp4 scale rows that start mid-sector (below). Values are random; correctness is the kernel
// tests' business, this file pins the access pattern.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "check/host_tensor.h"
#include "ops/common/emu_launch.h"
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
  uint64_t excess_load = 0, excess_store = 0, read = 0, written = 0, prefetches = 0;
};

Totals totals() {
  Totals t;
  for (const emu::LaunchReport& r : detail::last_emulator_reports()) {
    EXPECT_TRUE(r.ok()) << r.summary();
    t.excess_load += r.counters.excess_load_sectors();
    t.excess_store += r.counters.excess_store_sectors();
    t.read += r.counters.global_bytes_read_unique;
    t.written += r.counters.global_bytes_written_unique;
    t.prefetches += r.counters.global_prefetches;
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
  }
}

// Llama-3.1-8B attention (Hq 32, Hk 8, D 128), bf16, bf16 cos/sin cache, page size 16.
TEST(SectorsAtIdeal, Rope) {
  TEJAS_SEEDED_TEST_RNG();
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
    // The gathers are not sector-ideal by the op's layout, not by the kernel: per warp (4 heads
    // x 8 columns of 8 pairs; (Hq + Hk) / 4 warps per token) one request reads the token's 3
    // positions (rows of T i64: 24 bytes in 2-3 sectors, ideal 1), and one each reads the cos
    // and sin halves of a row gathered from 3 rows by section (bytes 0-31 / 32-79 / 80-127 of
    // the half: 5 sectors for 128 bytes, ideal 4). Everything else is at the ideal.
    constexpr int64_t kSector = 32, kI64 = 8, kWarpsPerToken = (Hq + Hk) / 4;
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
  }

  Buf slots = make(DType::i64, {T}, rng);
  for (int64_t t = 0; t < T; ++t) static_cast<int64_t*>(slots.v.data)[t] = 17 * t + 3;  // distinct pages
  Buf kc = make(DType::bf16, {kBlocks, kPage, Hk, D}, rng), vc = make(DType::bf16, {kBlocks, kPage, Hk, D}, rng);
  PagedKvCache pc{kc.v, vc.v, {}, {}};
  ASSERT_TRUE(rope_kv_cache_write(emulator(), pos.v, q.v, k.v, v.v, cache.v, RopeStyle::neox, slots.v, pc).ok());
  expect_ideal("rope_kv_cache_write", qk + bytes(v) + cos_rows + bytes(pos) + bytes(slots), qk + 2 * bytes(k));
}

}  // namespace
