// The norm kernel's global requests on uneven, misaligned rows, where lanes skip some of the
// accesses that go through vec_io.cuh's helpers: each call of a helper is its own request (one
// instruction per inlined call on the GPU), so the emulator's sectors are the GPU's.
//
// Before requests were keyed by the helper chain (emu::Site::chain), every ld_global in the
// load helper was one site: x, residual and weight loads of one lane counted as occurrences of
// one "instruction", so in the last warp of a row, where only some lanes load x's last item, the
// other lanes' weight loads joined those x loads in one request (rms_norm H = 1000: 329 load
// sectors, H = 5000: 1595; fused_add_rms_norm H = 1000: 486 loads, 321 stores). The counts below
// are derived from the access pattern alone, as the GPU would run it.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "check/host_tensor.h"
#include "ops/common/emu_launch.h"
#include "ops/norm/kernel_harness.h"
#include "support/seed.h"
#include "tejas/norm.h"

using namespace tejas;
using check::HostTensor;

namespace {

constexpr double kEps = 1e-6;
constexpr int64_t kT = 2;

struct Expected {
  uint64_t load_requests, load_sectors, load_ideal;
  uint64_t store_requests, store_sectors, store_ideal;
};

// Derivation (T = 2 rows; x bf16 shifted by one element, so its row stride is H + 1 elements and
// every access is one 2-byte element: vec 1; weight, residual and out packed, 256-byte aligned):
//
// H = 1000: E = 8 floats per thread, 125 threads needed -> 128 (4 warps), 8 items. Item k of warp
// w covers elements [128k + 32w, +32) of the row, cut at H: per row and tensor, 31 runs of 32
// elements (64 bytes) and one run of 8 (16 bytes; item 7, warp 3): 32 requests.
// H = 5000: E = 16, 313 threads -> 320 (10 warps), 16 items; item k of warp w covers
// [320k + 32w, +32): 156 runs of 64 bytes and one of 16 (item 15, warp 6; warps 7-9 have no
// lane left): 157 requests per row and tensor.
//
// A run of b bytes starting o bytes into a sector touches ceil((o + b) / 32) sectors; its ideal
// is ceil(b / 32) (2 for 64 bytes, 1 for 16). Row starts (byte offsets mod 32; runs start 64
// bytes apart, so every run of a row has its row's offset):
//   x       row 0 at 2, row 1 at 2 + 2 (H + 1): H = 1000 -> 2004 = 20 mod 32; H = 5000 -> 10004 = 20
//   packed  row 0 at 0, row 1 at 2H: 2000 = 16 mod 32; 10000 = 16 mod 32
// Sectors per run (64-byte run / 16-byte run):
//   x row 0 (o = 2): 3 / 1       x row 1 (o = 20): 3 / 2
//   packed row 0 (o = 0): 2 / 1  packed row 1 (o = 16): 3 / 1
// The weight is read once per row (o = 0): 2 / 1 per run in both rows.
// H = 1000, per tensor over both rows:
//   x 31*3 + 1 + 31*3 + 2 = 189; weight 2 * (31*2 + 1) = 126; packed (residual, out) 63 + 94 = 157
//   rms_norm:           loads x + weight = 315, stores out = 157
//   fused_add_rms_norm: loads x + residual + weight = 472, stores residual + out = 314
// H = 5000:
//   x 156*3 + 1 + 156*3 + 2 = 939; weight 2 * (156*2 + 1) = 626; packed 313 + 469 = 782
//   rms_norm:           loads 1565, stores 782
//   fused_add_rms_norm: loads 2347, stores 1564
// Ideal per tensor: 2 * (runs of 64 bytes * 2 + 1): 126 (H = 1000), 626 (H = 5000).
struct Case {
  int64_t H;
  bool fused;
  Expected want;
};

constexpr Case kCases[] = {
    {1000, false, {2 * 64, 315, 2 * 126, 64, 157, 126}},
    {1000, true, {3 * 64, 472, 3 * 126, 2 * 64, 314, 2 * 126}},
    {5000, false, {2 * 314, 1565, 2 * 626, 314, 782, 626}},
    {5000, true, {3 * 314, 2347, 3 * 626, 2 * 314, 1564, 2 * 626}},
};

ExecContext emulator() {
  ExecContext ctx;
  ctx.backend = Backend::emulator;
  return ctx;
}

TEST(NormRequestSites, MisalignedUnevenRowsCountPerCallerSite) {
  TEJAS_SEEDED_TEST_RNG();
  for (const Case& c : kCases) {
    const std::string at = std::string(c.fused ? "fused_add_rms_norm" : "rms_norm") + " H=" + std::to_string(c.H);
    SCOPED_TRACE(at);
    HostTensor x = normtest::shifted(DType::bf16, kT, c.H, 0, 1);
    HostTensor res(DType::bf16, {kT, c.H}), w(DType::bf16, {c.H}), out(DType::bf16, {kT, c.H});
    check::fill_normal(x, rng);
    check::fill_normal(res, rng);
    check::fill_normal(w, rng, 1.0, 0.5);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(w.view().data) % 256, 0u);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(x.view().data) % 256, 2u);
    const Status s = c.fused ? fused_add_rms_norm(emulator(), x.view(), res.view(), w.view(), kEps, out.view())
                             : rms_norm(emulator(), x.view(), w.view(), kEps, out.view());
    ASSERT_TRUE(s.ok()) << s.to_string();
    const auto& reports = detail::last_emulator_reports();
    ASSERT_EQ(reports.size(), 1u);
    const emu::LaunchReport& r = reports[0];
    EXPECT_TRUE(r.ok()) << r.summary();
    const emu::Counters& k = r.counters;
    EXPECT_EQ(k.global_load_requests, c.want.load_requests) << r.summary();
    EXPECT_EQ(k.global_load_sectors, c.want.load_sectors) << r.summary();
    EXPECT_EQ(k.global_load_sectors_ideal, c.want.load_ideal) << r.summary();
    EXPECT_EQ(k.global_store_requests, c.want.store_requests) << r.summary();
    EXPECT_EQ(k.global_store_sectors, c.want.store_sectors) << r.summary();
    EXPECT_EQ(k.global_store_sectors_ideal, c.want.store_ideal) << r.summary();
  }
}

}  // namespace
