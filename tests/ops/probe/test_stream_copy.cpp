// stream_copy (src/ops/probe): the bytes-in-flight probe copies exactly, on the emulator (and the
// GPU when present), for every vector count, with tails (a last block partly out of range) and
// a single vector; its requests are sector-ideal and it moves exactly the compulsory bytes; bad
// arguments get a Status naming them.
#include <gtest/gtest.h>

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

// Vectors of 16 bytes: one; under a warp; a block's worth at one vector per thread and a tail
// after it; a tail at eight vectors per thread; several blocks at every count.
constexpr int64_t kSizes[] = {1, 5, 256, 257, 2051, 6000};
constexpr int kVecs[] = {1, 2, 4, 8};

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
  for (int64_t n : kSizes)
    for (int vecs : kVecs)
      for (int cap : {0, 3}) {
        const std::string what = std::to_string(n) + " vectors, " + std::to_string(vecs) + " per thread, cap " +
                                 std::to_string(cap);
        const HostTensor src = random_bytes(rng, n * probe::kVecBytes);
        HostTensor dst(DType::u8, {n * probe::kVecBytes});
        dst.poison();
        probe::StreamCopyLaunch l;
        const Status s = probe::stream_copy(ctx_for(Backend::emulator), src, dst, {vecs, cap}, &l);
        ASSERT_TRUE(s.ok()) << what << ": " << s.message();
        expect_copied(dst, src, what);
        EXPECT_EQ(l.blocks, (n + probe::kThreads * vecs - 1) / (probe::kThreads * vecs)) << what;
        EXPECT_EQ(l.threads, probe::kThreads);
        EXPECT_EQ(l.resident_blocks_per_sm, 0) << what << ": the emulator has no residency";
        const auto& reps = detail::last_emulator_reports();
        ASSERT_EQ(reps.size(), 1u);
        const emu::Counters& c = reps[0].counters;
        EXPECT_TRUE(reps[0].ok()) << reps[0].summary();
        EXPECT_EQ(c.global_bytes_read_unique, static_cast<uint64_t>(n * probe::kVecBytes)) << what;
        EXPECT_EQ(c.global_bytes_written_unique, static_cast<uint64_t>(n * probe::kVecBytes)) << what;
        EXPECT_EQ(c.excess_load_sectors(), 0u) << what;
        EXPECT_EQ(c.excess_store_sectors(), 0u) << what;
        // One request per warp and vector: 512 contiguous bytes each (fewer in the tail).
        const uint64_t warps = static_cast<uint64_t>(l.blocks) * (probe::kThreads / 32);
        EXPECT_LE(c.global_load_requests, warps * static_cast<uint64_t>(vecs)) << what;
      }
}

TEST(StreamCopy, CudaCopiesExactly) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  for (int64_t n : kSizes)
    for (int vecs : kVecs)
      for (int cap : {0, 1, 3, 8}) {
        const std::string what = std::to_string(n) + " vectors, " + std::to_string(vecs) + " per thread, cap " +
                                 std::to_string(cap);
        const HostTensor src = random_bytes(rng, n * probe::kVecBytes);
        HostTensor dst(DType::u8, {n * probe::kVecBytes});
        dst.poison();
        check::DeviceMirror d_src, d_dst;
        ASSERT_TRUE(d_src.upload(src).ok());
        ASSERT_TRUE(d_dst.upload(dst).ok());
        probe::StreamCopyLaunch l;
        const Status s = probe::stream_copy(ctx_for(Backend::cuda), d_src.view(), d_dst.view(), {vecs, cap}, &l);
        ASSERT_TRUE(s.ok()) << what << ": " << s.message();
        ASSERT_TRUE(d_dst.download(dst).ok());
        expect_copied(dst, src, what);
        bool intact = false;
        ASSERT_TRUE(d_dst.guards_intact(&intact).ok());
        EXPECT_TRUE(intact) << what << ": device guards";
        EXPECT_GE(l.resident_blocks_per_sm, 1) << what;
        if (cap > 0) {
          EXPECT_LE(l.resident_blocks_per_sm, cap) << what << ": the shared-memory cap holds";
        }
      }
}

TEST(StreamCopy, ReferenceCopies) {
  TEJAS_SEEDED_TEST_RNG();
  const HostTensor src = random_bytes(rng, 48);
  HostTensor dst(DType::u8, {48});
  dst.poison();
  ASSERT_TRUE(probe::stream_copy(ctx_for(Backend::reference), src, dst, {}).ok());
  expect_copied(dst, src, "reference");
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
  const Case cases[] = {
      {probe::stream_copy(emu, TensorView{}, dst, {}), "src"},
      {probe::stream_copy(emu, src, small, {}), "dst"},
      {probe::stream_copy(emu, odd, odd_dst, {}), "multiple of 16"},
      {probe::stream_copy(emu, wide, dst, {}), "src"},
      {probe::stream_copy(emu, src, dst, {3, 0}), "options.vecs"},
      {probe::stream_copy(emu, src, dst, {16, 0}), "options.vecs"},
      {probe::stream_copy(emu, src, dst, {1, -1}), "options.blocks_per_sm"},
      {probe::stream_copy(emu, src, dst, {1, 33}), "options.blocks_per_sm"},
      {probe::stream_copy(emu, src48, shifted, {}), "aligned to 16"},
      {probe::stream_copy(emu, src48, overlap, {}), "overlap"},
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(c.status.ok()) << c.expect;
    EXPECT_NE(c.status.message().find(c.expect), std::string::npos) << c.status.message();
  }
  for (int64_t i = 0; i < dst.numel(); ++i) EXPECT_EQ(dst.bits_flat(i), dst.poison_code()) << "written on error";
}

}  // namespace
