// stream_copy (src/ops/probe): the bytes-in-flight probe writes every destination plane with the
// XOR of the source planes (a copy at 1 : 1) exactly, and the read pass (1 : 0) each warp's XOR of
// what it read, on the emulator (and the GPU when present), for every read / write mix and vector
// count, with tails (a last block partly out of range) and a single vector; its requests are
// sector-ideal and it moves exactly the compulsory bytes; bad arguments get a Status naming them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "check/cuda_mem.h"
#include "check/host_tensor.h"
#include "ops/common/emu_launch.h"
#include "ops/probe/probe.h"
#include "support/seed.h"

using namespace tejas;
using check::HostTensor;

namespace {

ExecContext ctx_for(Backend b) {
  ExecContext c;
  c.backend = b;
  return c;
}

// Vectors of 16 bytes: one; under a warp; one short of a whole block (256 x 1, 2, 8), a block's
// worth at one vector per thread and a tail after it; a whole block at eight per thread; a tail
// at eight vectors per thread; several blocks at every count.
constexpr int64_t kSizes[] = {1, 5, 255, 256, 257, 511, 2047, 2048, 2051, 6000};
constexpr int kVecs[] = {1, 2, 4, 8};
struct Mix {
  int reads, writes;
};
constexpr Mix kMixes[] = {{1, 1}, {2, 1}, {4, 1}, {1, 2}, {1, 4}, {1, 0}};

// dst's bytes: `writes` planes of n vectors; the read pass's one vector per warp of 256-thread
// blocks taking 256 x vecs vectors each (spelled out here, not through probe.h's helper).
int64_t dst_bytes(const Mix& m, int64_t n, int vecs) {
  if (m.writes > 0) return m.writes * n * probe::kVecBytes;
  const int64_t per_block = int64_t{256} * vecs;
  return (n + per_block - 1) / per_block * 8 * 16;
}

// What the read pass's dst must hold: vector v (of n) of each plane belongs to block
// v / (256 vecs) and thread v % 256 of it, so to warp 8 (v / (256 vecs)) + (v % 256) / 32; each
// warp's vector is the XOR of its vectors' bytes (computed here, independently of the op's
// reference backend).
HostTensor expected_read_pass(const HostTensor& src, const Mix& m, int vecs) {
  const int64_t n = src.numel() / (m.reads * probe::kVecBytes);
  HostTensor e(DType::u8, {dst_bytes(m, n, vecs)});
  std::vector<uint8_t> x(static_cast<size_t>(e.numel()), 0);
  for (int r = 0; r < m.reads; ++r)
    for (int64_t v = 0; v < n; ++v) {
      const int64_t warp = 8 * (v / (256 * vecs)) + (v % 256) / 32;
      for (int b = 0; b < probe::kVecBytes; ++b)
        x[warp * 16 + b] ^= static_cast<uint8_t>(src.bits_flat((r * n + v) * probe::kVecBytes + b));
    }
  for (int64_t i = 0; i < e.numel(); ++i) e.set_bits_flat(i, x[i]);
  return e;
}

// What every destination plane must hold: the XOR of the source planes (computed here, byte by
// byte, independently of the op's reference backend); the read pass's warp XORs for writes = 0.
HostTensor expected(const HostTensor& src, const Mix& m, int vecs = 1) {
  if (m.writes == 0) return expected_read_pass(src, m, vecs);
  const int64_t plane = src.numel() / m.reads;
  HostTensor e(DType::u8, {plane * m.writes});
  for (int64_t i = 0; i < plane; ++i) {
    uint64_t x = 0;
    for (int r = 0; r < m.reads; ++r) x ^= src.bits_flat(r * plane + i);
    for (int w = 0; w < m.writes; ++w) e.set_bits_flat(w * plane + i, x);
  }
  return e;
}

HostTensor random_bytes(check::Rng& rng, int64_t bytes) {
  HostTensor t(DType::u8, {bytes});
  check::fill_randint(t, rng, 0, 255);
  return t;
}

void expect_copied(const HostTensor& dst, const HostTensor& src, const std::string& what) {
  ASSERT_EQ(dst.numel(), src.numel());
  for (int64_t i = 0; i < src.numel(); ++i)
    ASSERT_EQ(dst.bits_flat(i), src.bits_flat(i)) << what << ": byte " << i;
  EXPECT_TRUE(dst.guards_intact()) << what;
}

TEST(StreamCopy, EmulatorCopiesExactlyWithIdealRequests) {
  TEJAS_SEEDED_TEST_RNG();
  for (const Mix& m : kMixes)
    for (int64_t n : kSizes)
      for (int vecs : kVecs)
        {
          // The residency cap is the GPU's scheduling, not the kernel's: the emulator ignores it.
          if (m.reads * vecs > probe::kMaxLoadsPerThread) continue;
          const std::string what = std::to_string(m.reads) + ":" + std::to_string(m.writes) + ", " +
                                   std::to_string(n) + " vectors, " + std::to_string(vecs) + " per thread";
          const HostTensor src = random_bytes(rng, m.reads * n * probe::kVecBytes);
          HostTensor dst(DType::u8, {dst_bytes(m, n, vecs)});
          dst.poison();
          probe::StreamCopyLaunch l;
          const Status s = probe::stream_copy(ctx_for(Backend::emulator), src, dst, {vecs, 0, m.reads, m.writes}, &l);
          ASSERT_TRUE(s.ok()) << what << ": " << s.message();
          expect_copied(dst, expected(src, m, vecs), what);
          EXPECT_EQ(l.blocks, (n + probe::kThreads * vecs - 1) / (probe::kThreads * vecs)) << what;
          EXPECT_EQ(l.threads, probe::kThreads);
          EXPECT_EQ(l.resident_blocks_per_sm, 0) << what << ": the emulator has no residency";
          const auto& reps = detail::last_emulator_reports();
          ASSERT_EQ(reps.size(), 1u);
          const emu::Counters& c = reps[0].counters;
          EXPECT_TRUE(reps[0].ok()) << reps[0].summary();
          EXPECT_EQ(c.global_bytes_read_unique, static_cast<uint64_t>(src.numel())) << what;
          EXPECT_EQ(c.global_bytes_written_unique, static_cast<uint64_t>(dst.numel())) << what;
          // One request per warp, plane and vector: 512 contiguous bytes each (fewer in the tail);
          // the read pass stores one 16-byte vector per warp.
          const uint64_t warps = static_cast<uint64_t>(l.blocks) * (probe::kThreads / 32);
          EXPECT_LE(c.global_load_requests, warps * static_cast<uint64_t>(vecs * m.reads)) << what;
          if (m.writes == 0)
            EXPECT_EQ(c.global_store_requests, warps) << what;
          else
            EXPECT_LE(c.global_store_requests, warps * static_cast<uint64_t>(vecs * m.writes)) << what;
          if (n % 2 == 0 || (m.reads == 1 && m.writes <= 1)) {  // every plane starts on a 32-byte sector
            EXPECT_EQ(c.excess_load_sectors(), 0u) << what;
            EXPECT_EQ(c.excess_store_sectors(), 0u) << what;
          } else {  // an odd n starts planes 1.. mid-sector: at most one extra sector per request there
            EXPECT_LE(c.excess_load_sectors(), warps * static_cast<uint64_t>(vecs * (m.reads - 1))) << what;
            EXPECT_LE(c.excess_store_sectors(), warps * static_cast<uint64_t>(vecs * (m.writes - 1))) << what;
          }
        }
}

// On the GPU: the same results, for every cap; a cap of B leaves exactly min(B, what fits
// without a cap) blocks resident (B + 1 must not fit: the shared memory asked per block is
// rounded to the 128-byte allocation unit, without which 5 and 7 fitted one fewer on an H200).
TEST(StreamCopy, CudaCopiesExactly) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  for (const Mix& m : kMixes)
    for (int64_t n : kSizes)
      for (int vecs : kVecs) {
        if (m.reads * vecs > probe::kMaxLoadsPerThread) continue;
        int uncapped = 0;
        for (int cap : {0, 1, 2, 3, 4, 5, 6, 7, 8}) {
          const std::string what = std::to_string(m.reads) + ":" + std::to_string(m.writes) + ", " +
                                   std::to_string(n) + " vectors, " + std::to_string(vecs) + " per thread, cap " +
                                   std::to_string(cap);
          const HostTensor src = random_bytes(rng, m.reads * n * probe::kVecBytes);
          HostTensor dst(DType::u8, {dst_bytes(m, n, vecs)});
          dst.poison();
          check::DeviceMirror d_src, d_dst;
          ASSERT_TRUE(d_src.upload(src).ok());
          ASSERT_TRUE(d_dst.upload(dst).ok());
          probe::StreamCopyLaunch l;
          const Status s =
              probe::stream_copy(ctx_for(Backend::cuda), d_src.view(), d_dst.view(), {vecs, cap, m.reads, m.writes}, &l);
          ASSERT_TRUE(s.ok()) << what << ": " << s.message();
          ASSERT_TRUE(d_dst.download(dst).ok());
          expect_copied(dst, expected(src, m, vecs), what);
          bool intact = false;
          ASSERT_TRUE(d_dst.guards_intact(&intact).ok());
          EXPECT_TRUE(intact) << what << ": device guards";
          if (cap == 0) {
            uncapped = l.resident_blocks_per_sm;
            EXPECT_GE(uncapped, 1) << what;
          } else {
            EXPECT_EQ(l.resident_blocks_per_sm, std::min(cap, uncapped)) << what << ": the shared-memory cap";
          }
        }
      }
}

// The cp.async mode: exact copies at every depth and vector count, with tails, fewer tiles than
// blocks, and blocks walking unequal tile counts (kEmuAsyncSms stand-in SMs); every byte through
// cp.async exactly once; whole-sector requests; no bank conflicts; no findings (a read of a slot
// before its group's wait would be one).
TEST(StreamCopy, EmulatorAsyncModeCopiesExactly) {
  TEJAS_SEEDED_TEST_RNG();
  for (int stages : {1, 2, 4})
    for (int vecs : {1, 2, 4})
      for (int blocks : {1, 2})
        // 40000: every block refills real tiles at every depth (6.5+ tiles per block at 4 x 4).
        for (int64_t n : {int64_t{1}, int64_t{257}, int64_t{2051}, int64_t{6000}, int64_t{40000}}) {
          const std::string what = std::to_string(stages) + " stages, " + std::to_string(vecs) + " per thread, " +
                                   std::to_string(blocks) + " blocks per SM, " + std::to_string(n) + " vectors";
          const HostTensor src = random_bytes(rng, n * probe::kVecBytes);
          HostTensor dst(DType::u8, {n * probe::kVecBytes});
          dst.poison();
          probe::StreamCopyLaunch l;
          probe::StreamCopyOptions o{vecs, blocks, 1, 1};
          o.stages = stages;
          const Status s = probe::stream_copy(ctx_for(Backend::emulator), src, dst, o, &l);
          ASSERT_TRUE(s.ok()) << what << ": " << s.message();
          expect_copied(dst, src, what);
          const int64_t tiles = (n + probe::kThreads * vecs - 1) / (probe::kThreads * vecs);
          EXPECT_EQ(l.blocks, std::min<int64_t>(tiles, int64_t{blocks} * probe::kEmuAsyncSms)) << what;
          EXPECT_EQ(l.dynamic_smem_bytes, static_cast<size_t>(stages * vecs * probe::kThreads * probe::kVecBytes)) << what;
          const auto& reps = detail::last_emulator_reports();
          ASSERT_EQ(reps.size(), 1u);
          const emu::Counters& c = reps[0].counters;
          EXPECT_TRUE(reps[0].ok()) << reps[0].summary();
          EXPECT_EQ(c.cp_async_bytes, static_cast<uint64_t>(src.numel())) << what;
          EXPECT_EQ(c.global_bytes_read_unique, static_cast<uint64_t>(src.numel())) << what;
          EXPECT_EQ(c.global_bytes_written_unique, static_cast<uint64_t>(dst.numel())) << what;
          EXPECT_EQ(c.excess_load_sectors(), 0u) << what;
          EXPECT_EQ(c.excess_store_sectors(), 0u) << what;
          EXPECT_EQ(c.bank_conflict_wavefronts(), 0u) << what;
        }
}

// On the GPU: exact copies; the persistent grid is blocks_per_sm x the SMs (fewer tiles: fewer).
TEST(StreamCopy, CudaAsyncModeCopiesExactly) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  const int64_t sms = check::cuda_sm_count();
  for (int stages : {1, 2, 4})
    for (int vecs : {1, 2, 4})
      for (int64_t n : {int64_t{257}, int64_t{6000}, int64_t{1} << 20}) {
        const std::string what = std::to_string(stages) + " stages, " + std::to_string(vecs) + " per thread, " +
                                 std::to_string(n) + " vectors";
        const HostTensor src = random_bytes(rng, n * probe::kVecBytes);
        HostTensor dst(DType::u8, {n * probe::kVecBytes});
        dst.poison();
        check::DeviceMirror d_src, d_dst;
        ASSERT_TRUE(d_src.upload(src).ok());
        ASSERT_TRUE(d_dst.upload(dst).ok());
        probe::StreamCopyLaunch l;
        probe::StreamCopyOptions o{vecs, 2, 1, 1};
        o.stages = stages;
        const Status s = probe::stream_copy(ctx_for(Backend::cuda), d_src.view(), d_dst.view(), o, &l);
        ASSERT_TRUE(s.ok()) << what << ": " << s.message();
        ASSERT_TRUE(d_dst.download(dst).ok());
        expect_copied(dst, src, what);
        bool intact = false;
        ASSERT_TRUE(d_dst.guards_intact(&intact).ok());
        EXPECT_TRUE(intact) << what << ": device guards";
        const int64_t tiles = (n + probe::kThreads * vecs - 1) / (probe::kThreads * vecs);
        EXPECT_EQ(l.blocks, std::min<int64_t>(tiles, 2 * sms)) << what;
        EXPECT_EQ(l.resident_blocks_per_sm, 2) << what;
      }
}

TEST(StreamCopy, ReferenceCopiesAndXors) {
  TEJAS_SEEDED_TEST_RNG();
  for (const Mix& m : kMixes)
    for (int64_t n : {int64_t{3}, int64_t{300}, int64_t{1100}})
      for (int vecs : {1, 2, 4}) {
        if (m.reads * vecs > probe::kMaxLoadsPerThread) continue;
        const HostTensor src = random_bytes(rng, m.reads * n * probe::kVecBytes);
        HostTensor dst(DType::u8, {dst_bytes(m, n, vecs)});
        dst.poison();
        ASSERT_TRUE(probe::stream_copy(ctx_for(Backend::reference), src, dst, {vecs, 0, m.reads, m.writes}).ok());
        expect_copied(dst, expected(src, m, vecs),
                      "reference " + std::to_string(m.reads) + ":" + std::to_string(m.writes) + ", " +
                          std::to_string(n) + " vectors, " + std::to_string(vecs) + " per thread");
      }
}

TEST(StreamCopy, BadArgumentsNameThemselves) {
  TEJAS_SEEDED_TEST_RNG();
  const HostTensor src = random_bytes(rng, 64);
  HostTensor dst(DType::u8, {64}), small(DType::u8, {32}), odd(DType::u8, {24}), odd_dst(DType::u8, {24});
  HostTensor wide(DType::f32, {16});
  const ExecContext emu = ctx_for(Backend::emulator);
  struct Case {
    Status status;
    const char* expect;
  };
  TensorView shifted = dst.view();  // 4 bytes in: not 16-byte aligned
  shifted.data = static_cast<uint8_t*>(shifted.data) + 4;
  shifted.shape[0] = 48;
  TensorView src48 = src.view();
  src48.shape[0] = 48;
  TensorView overlap = src.view();  // dst = src shifted by 16 bytes
  overlap.data = static_cast<uint8_t*>(overlap.data) + 16;
  overlap.shape[0] = 48;
  const auto async = [](int vecs, int blocks, int stages, int writes = 1) {
    probe::StreamCopyOptions o{vecs, blocks, 1, writes};
    o.stages = stages;
    return o;
  };
  const Case cases[] = {
      {probe::stream_copy(emu, TensorView{}, dst, {}), "src"},
      {probe::stream_copy(emu, src, small, {}), "dst"},
      {probe::stream_copy(emu, odd, odd_dst, {}), "multiple of 16"},
      {probe::stream_copy(emu, wide, dst, {}), "src"},
      {probe::stream_copy(emu, src, dst, {3, 0}), "options.vecs"},
      {probe::stream_copy(emu, src, dst, {16, 0}), "options.vecs"},
      {probe::stream_copy(emu, src, dst, {1, -1}), "options.blocks_per_sm"},
      {probe::stream_copy(emu, src, dst, {1, 9}), "options.blocks_per_sm: expected 0 (no cap) .. 8"},
      {probe::stream_copy(emu, src48, shifted, {}), "aligned to 16"},
      {probe::stream_copy(emu, src48, overlap, {}), "overlap"},
      {probe::stream_copy(emu, src, dst, {1, 0, 2, 2}), "options.reads / options.writes"},
      {probe::stream_copy(emu, src, dst, {1, 0, 3, 1}), "options.reads / options.writes"},
      {probe::stream_copy(emu, src, dst, {4, 0, 4, 1}), "reads x vecs <= 8"},
      {probe::stream_copy(emu, src, dst, {1, 0, 2, 1}), "dst: expected 32 bytes"},
      {probe::stream_copy(emu, src, dst, async(1, 2, 3)), "options.stages: expected 0 (no cp.async), 1, 2 or 4"},
      {probe::stream_copy(emu, src, dst, async(1, 0, 2)), "options.blocks_per_sm: the cp.async mode needs"},
      {probe::stream_copy(emu, src, dst, async(8, 2, 1)), "options.vecs: the cp.async mode takes 1, 2 or 4"},
      {probe::stream_copy(emu, src, dst, async(4, 2, 4, 2)), "options.reads / options.writes: the cp.async mode"},
      {probe::stream_copy(emu, odd, odd_dst, {1, 0, 1, 2}), "multiple of 16"},
      {probe::stream_copy(emu, src48, dst, {1, 0, 1, 2}), "dst: expected 96 bytes"},
      // The read pass: one 16-byte vector per warp of its one block of 256 threads.
      {probe::stream_copy(emu, src, dst, {1, 0, 1, 0}), "dst: expected 128 bytes (the read pass"},
      {probe::stream_copy(emu, src, dst, {1, 0, 2, 0}), "options.reads / options.writes"},
      {probe::stream_copy(emu, src, dst, async(1, 2, 1, 0)), "options.reads / options.writes: the cp.async mode"},
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(c.status.ok()) << c.expect;
    EXPECT_NE(c.status.message().find(c.expect), std::string::npos) << c.status.message();
    EXPECT_EQ(c.status.message().rfind("stream_copy: ", 0), 0u) << c.status.message();
    EXPECT_EQ(c.status.message().find("stream_copy: stream_copy"), std::string::npos) << c.status.message();
  }
  for (int64_t i = 0; i < dst.numel(); ++i) EXPECT_EQ(dst.bits_flat(i), dst.poison_code()) << "written on error";
}

}  // namespace
