// The bench's L2 flush (bench/gpu.h, `tejas bench --flush`): the modes' names, the buffer's size
// rule, what each mode allocates (none: nothing) and, on a GPU, what each flush leaves in its
// buffer: dirty writes every byte of it, clean reads it (its sink holds each warp's XOR of the
// buffer, as the read pass's reference computes); and that time_launch runs the flush before its
// timed runs, for each mode.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "bench/device_arena.h"
#include "bench/gpu.h"
#include "check/cuda_mem.h"
#include "check/host_tensor.h"
#include "ops/probe/probe.h"
#include "support/seed.h"

namespace {
using tejas::Backend;
using tejas::DType;
using tejas::Status;
using tejas::bench::DeviceArena;
using tejas::bench::FlushMode;
using tejas::bench::L2Flush;
using tejas::check::HostTensor;

constexpr uint64_t kArenaSeed = 1;

TEST(L2Flush, ModesParseByName) {
  for (FlushMode m : {FlushMode::dirty, FlushMode::clean, FlushMode::none}) {
    FlushMode back = m == FlushMode::none ? FlushMode::dirty : FlushMode::none;
    ASSERT_TRUE(tejas::bench::parse_flush_mode(tejas::bench::flush_mode_name(m), &back));
    EXPECT_EQ(back, m);
  }
  FlushMode m = FlushMode::clean;
  for (const char* bad : {"", "Dirty", "clean ", "read", "memset"}) {
    EXPECT_FALSE(tejas::bench::parse_flush_mode(bad, &m)) << bad;
    EXPECT_EQ(m, FlushMode::clean) << "left as it was";
  }
}

TEST(L2Flush, SizesAndAllocations) {
  DeviceArena arena(kArenaSeed);
  L2Flush none;
  ASSERT_TRUE(L2Flush::make(FlushMode::none, 24, arena, &none).ok()) << "none takes no buffer, any size";
  EXPECT_EQ(none.mode(), FlushMode::none);
  EXPECT_EQ(none.buffer(), nullptr);
  EXPECT_EQ(arena.allocated(), 0u);
  EXPECT_TRUE(none.run(0).ok()) << "none runs nothing, GPU or not";
  for (FlushMode m : {FlushMode::dirty, FlushMode::clean})
    for (size_t bytes : {size_t{0}, size_t{24}, size_t{(1 << 20) + 8}}) {
      L2Flush f;
      const Status s = L2Flush::make(m, bytes, arena, &f);
      EXPECT_EQ(s.code(), tejas::StatusCode::invalid_argument) << bytes;
      EXPECT_NE(s.message().find("L2 flush: bytes: expected a positive multiple of 16, got " + std::to_string(bytes)),
                std::string::npos)
          << s.message();
      EXPECT_EQ(f.mode(), FlushMode::none) << "the output is left as it was";
    }
  EXPECT_EQ(arena.allocated(), 0u);
  const size_t bytes = (size_t{1} << 20) + 48;  // a last block of the read pass partly past the buffer
  L2Flush dirty, clean;
  const Status sd = L2Flush::make(FlushMode::dirty, bytes, arena, &dirty);
  if (!tejas::check::cuda_available()) {
    EXPECT_FALSE(sd.ok()) << "no GPU: no device buffer";
    return;
  }
  ASSERT_TRUE(sd.ok()) << sd.message();
  EXPECT_EQ(dirty.bytes(), bytes);
  EXPECT_EQ(dirty.sink(), nullptr);
  EXPECT_EQ(arena.allocated(), bytes);
  ASSERT_TRUE(L2Flush::make(FlushMode::clean, bytes, arena, &clean).ok());
  // The read pass at 8 vectors per thread: 2048 vectors per block, one 16-byte vector per warp.
  const size_t blocks = (bytes / 16 + 2047) / 2048;
  EXPECT_EQ(clean.sink_bytes(), blocks * 8 * 16);
  EXPECT_EQ(arena.allocated(), 2 * bytes + clean.sink_bytes());
}

// What each flush leaves in its buffer on the GPU, and a row timed after each mode.
TEST(L2Flush, CudaFlushesWriteOrReadTheirBuffer) {
  TEJAS_REQUIRE_CUDA();
  TEJAS_SEEDED_TEST_RNG();
  const size_t bytes = (size_t{1} << 20) + 48;
  DeviceArena arena(kArenaSeed);
  L2Flush dirty, clean;
  ASSERT_TRUE(L2Flush::make(FlushMode::dirty, bytes, arena, &dirty).ok());
  ASSERT_TRUE(L2Flush::make(FlushMode::clean, bytes, arena, &clean).ok());
  HostTensor host(DType::u8, {static_cast<int64_t>(bytes)});

  // dirty: every byte of its buffer is the run's index (mod 256).
  ASSERT_TRUE(dirty.run(0x1A3).ok());
  ASSERT_TRUE(tejas::check::device_synchronize().ok());
  ASSERT_TRUE(tejas::check::copy_to_host(host.view().data, dirty.buffer(), bytes).ok());
  for (int64_t i = 0; i < host.numel(); ++i) ASSERT_EQ(host.bits_flat(i), 0xA3u) << "byte " << i;

  // clean: the buffer unchanged, the sink each warp's XOR (the read pass's reference backend).
  tejas::check::fill_randint(host, rng, 0, 255);
  ASSERT_TRUE(tejas::check::copy_to_device(clean.buffer(), host.view().data, bytes).ok());
  HostTensor sink(DType::u8, {static_cast<int64_t>(clean.sink_bytes())}), expect = sink;
  sink.poison();
  ASSERT_TRUE(tejas::check::copy_to_device(clean.sink(), sink.view().data, clean.sink_bytes()).ok());
  tejas::ExecContext ref;
  ref.backend = Backend::reference;
  ASSERT_TRUE(tejas::probe::stream_copy(ref, host, expect, {8, 0, 1, 0}).ok());
  ASSERT_TRUE(clean.run(7).ok());
  ASSERT_TRUE(tejas::check::device_synchronize().ok());
  HostTensor after(DType::u8, {static_cast<int64_t>(bytes)});
  ASSERT_TRUE(tejas::check::copy_to_host(after.view().data, clean.buffer(), bytes).ok());
  for (int64_t i = 0; i < host.numel(); ++i) ASSERT_EQ(after.bits_flat(i), host.bits_flat(i)) << "byte " << i;
  ASSERT_TRUE(tejas::check::copy_to_host(sink.view().data, clean.sink(), clean.sink_bytes()).ok());
  for (int64_t i = 0; i < sink.numel(); ++i) ASSERT_EQ(sink.bits_flat(i), expect.bits_flat(i)) << "sink byte " << i;

  // A launch timed after each mode (a 4 KiB copy between two buffers of its own): every run
  // completes and is counted, and each timed run was preceded by its flush: after five, the
  // dirty buffer holds the last run's index (4), the clean sink (poisoned again) the XORs.
  void *a = nullptr, *b = nullptr;
  ASSERT_TRUE(arena.bytes(4096, &a).ok());
  ASSERT_TRUE(arena.bytes(4096, &b).ok());
  const auto launch = [&] {
    const int device = tejas::check::current_device_index();
    const auto view = [&](void* p) {
      return tejas::TensorView::contiguous(p, DType::u8, {4096}, tejas::Device::cuda, device);
    };
    tejas::ExecContext cuda;
    cuda.backend = Backend::cuda;
    return tejas::probe::stream_copy(cuda, view(a), view(b), {});
  };
  sink.poison();
  ASSERT_TRUE(tejas::check::copy_to_device(clean.sink(), sink.view().data, clean.sink_bytes()).ok());
  const L2Flush none;
  const L2Flush* const flushes[] = {&dirty, &clean, &none};
  for (const L2Flush* f : flushes) {
    tejas::bench::Timing t;
    ASSERT_TRUE(tejas::bench::time_launch(launch, 1, 5, *f, &t).ok()) << flush_mode_name(f->mode());
    EXPECT_EQ(t.iters, 5);
    EXPECT_GT(t.median_us, 0.0) << flush_mode_name(f->mode());
  }
  ASSERT_TRUE(tejas::check::device_synchronize().ok());
  ASSERT_TRUE(tejas::check::copy_to_host(host.view().data, dirty.buffer(), bytes).ok());
  for (int64_t i = 0; i < host.numel(); ++i) ASSERT_EQ(host.bits_flat(i), 4u) << "dirty byte " << i;
  ASSERT_TRUE(tejas::check::copy_to_host(sink.view().data, clean.sink(), clean.sink_bytes()).ok());
  for (int64_t i = 0; i < sink.numel(); ++i) ASSERT_EQ(sink.bits_flat(i), expect.bits_flat(i)) << "sink byte " << i;
}

}  // namespace
