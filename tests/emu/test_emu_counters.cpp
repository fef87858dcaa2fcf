// Profiler-style counters: global sectors per request, unique bytes, shared-memory wavefronts
// (bank conflicts), ldmatrix-style phases, tensor-op and barrier counts. Expected numbers are
// derived here from the access pattern (32-byte sectors, 32 banks of 4 bytes).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "device/prelude.h"
#include "device/ptx/cp_async.h"
#include "device/ptx/ld_st.h"
#include "emu_test_util.h"

using namespace tejas::dev;
using namespace tejas::ptx;
using tejas::emu::testing::DevBuf;
namespace emu = tejas::emu;

namespace {

constexpr int kThreads = 128, kBlocks = 4;
constexpr int kVec = kThreads * kBlocks * 2;  // float4 elements, two per thread
constexpr uint64_t kWarpsPerLaunch = kThreads * kBlocks / 32;

__global__ void copy_float4(const float4* in, float4* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    st_global(out + i, ld_global_nc(in + i));
  }
}

TEST(EmuCounters, CoalescedFloat4Copy) {
  DevBuf<float4> in(kVec, "in"), out(kVec, "out");
  std::vector<float4> v(kVec, float4{1, 2, 3, 4});
  in.upload(v);
  auto r = emu::launch(copy_float4, dim3(kBlocks), dim3(kThreads), 0, in.get(), out.get(), kVec);
  ASSERT_TRUE(r.ok()) << r.summary();
  const auto& c = r.counters;
  // One request per warp and iteration; a warp's 32 lanes x 16 B cover 512 contiguous bytes:
  // 16 sectors (4 per 8-lane quarter), the minimum.
  EXPECT_EQ(c.global_load_requests, kWarpsPerLaunch * 2);
  EXPECT_EQ(c.global_load_sectors, c.global_load_requests * 16);
  EXPECT_EQ(c.global_store_sectors, c.global_store_requests * 16);
  EXPECT_DOUBLE_EQ(c.sectors_per_load_request(), 16.0);
  EXPECT_EQ(c.global_bytes_read_unique, kVec * sizeof(float4));
  EXPECT_EQ(c.global_bytes_written_unique, kVec * sizeof(float4));
}

constexpr int kStride = 32;  // floats: each lane in its own 128-byte line
__global__ void strided_read(const float* in, float* out, int) {
  const int t = threadIdx.x;
  st_global(out + t, ld_global(in + t * kStride));
}

__global__ void coalesced_read(const float* in, float* out, int) {
  const int t = threadIdx.x;
  st_global(out + t, ld_global(in + t));
}

TEST(EmuCounters, StridedAccessTouchesMoreSectors) {
  DevBuf<float> in(32 * kStride, "in"), out(32, "out");
  in.upload(std::vector<float>(32 * kStride, 1.0f));
  auto strided = emu::launch(strided_read, dim3(1), dim3(32), 0, in.get(), out.get(), 0);
  auto dense = emu::launch(coalesced_read, dim3(1), dim3(32), 0, in.get(), out.get(), 0);
  ASSERT_TRUE(strided.ok() && dense.ok()) << strided.summary() << dense.summary();
  EXPECT_EQ(strided.counters.global_load_requests, 1u);
  EXPECT_EQ(strided.counters.global_load_sectors, 32u);
  EXPECT_EQ(dense.counters.global_load_sectors, 4u);
  EXPECT_EQ(dense.counters.global_store_sectors, 4u);
  EXPECT_EQ(strided.counters.global_bytes_read_unique, 32u * sizeof(float));
  // 128 bytes used: 4 sectors would do; 28 fetched for nothing. Dense: none over.
  EXPECT_EQ(strided.counters.global_load_sectors_ideal, 4u);
  EXPECT_EQ(strided.counters.excess_load_sectors(), 28u);
  EXPECT_EQ(dense.counters.excess_load_sectors(), 0u);
  EXPECT_EQ(dense.counters.excess_store_sectors(), 0u);
}

// Lanes sharing addresses: 8 lanes per float, 4 distinct floats (16 bytes) per request.
__global__ void broadcast_read(const float* in, float* out, int shift) {
  const int t = threadIdx.x;
  st_global(out + t, ld_global(in + shift + t % 4));
}

TEST(EmuCounters, BroadcastCountsBytesOnce) {
  DevBuf<float> in(64, "in"), out(32, "out");
  in.upload(std::vector<float>(64, 1.0f));
  auto aligned = emu::launch(broadcast_read, dim3(1), dim3(32), 0, in.get(), out.get(), 0);
  auto split = emu::launch(broadcast_read, dim3(1), dim3(32), 0, in.get(), out.get(), 6);
  ASSERT_TRUE(aligned.ok() && split.ok()) << aligned.summary() << split.summary();
  // 16 distinct bytes: one sector is the ideal, not 32 lanes x 4 bytes = 4 sectors.
  EXPECT_EQ(aligned.counters.global_load_sectors, 1u);
  EXPECT_EQ(aligned.counters.global_load_sectors_ideal, 1u);
  EXPECT_EQ(aligned.counters.excess_load_sectors(), 0u);
  EXPECT_EQ(aligned.counters.excess_store_sectors(), 0u);  // 32 lanes x 4 contiguous bytes
  // Bytes 24..39 straddle a sector boundary: 2 sectors for 16 bytes.
  EXPECT_EQ(split.counters.global_load_sectors, 2u);
  EXPECT_EQ(split.counters.excess_load_sectors(), 1u);
}

// Unique bytes are the compulsory HBM traffic: a read of bytes a plain store of the launch
// wrote earlier (a scratch buffer read back after a barrier) is an L2 hit on the GPU, not
// counted; bytes read before being overwritten (in place) are, and so are bytes an atomic wrote
// (their old value came from memory).
__global__ void write_then_read_back(float* buf, float* out, int) {
  const int t = threadIdx.x;
  st_global(buf + t, ld_global(buf + t) + 1.0f);  // in place: read, then written
  st_global(buf + 32 + t, 2.0f * t);              // written first
  atomicAdd(buf + 64 + t, 1.0f);                  // accumulated by an atomic
  __syncthreads();
  // read back another thread's plain write, and the accumulated value
  st_global(out + t, ld_global(buf + 32 + (t + 1) % 32) + ld_global(buf + 64 + t));
}

TEST(EmuCounters, ReadBackIsNotUniqueTraffic) {
  DevBuf<float> buf(96, "buf"), out(32, "out");
  buf.upload(std::vector<float>(96, 1.0f));
  auto r = emu::launch(write_then_read_back, dim3(1), dim3(32), 0, buf.get(), out.get(), 0);
  ASSERT_TRUE(r.ok()) << r.summary();
  EXPECT_EQ(r.counters.global_bytes_read_unique, 64u * sizeof(float));     // in-place and atomic thirds
  EXPECT_EQ(r.counters.global_bytes_written_unique, 96u * sizeof(float));  // buf[0, 64) and out
  EXPECT_EQ(r.counters.global_load_requests, 3u);  // the read-back still counts as a request
  EXPECT_EQ(out.download()[3], 8.0f + 2.0f);
}

// One warp reads 32 contiguous floats starting `shift` floats past a sector boundary: 128 bytes
// used; aligned 4 sectors, shifted 5 (one extra for the run that starts mid-sector).
TEST(EmuCounters, MisalignedRunCostsOneSector) {
  DevBuf<float> in(64, "in"), out(32, "out");
  in.upload(std::vector<float>(64, 1.0f));
  auto shifted = emu::launch(coalesced_read, dim3(1), dim3(32), 0, in.get() + 3, out.get(), 0);
  ASSERT_TRUE(shifted.ok()) << shifted.summary();
  EXPECT_EQ(shifted.counters.global_load_sectors, 5u);
  EXPECT_EQ(shifted.counters.global_load_sectors_ideal, 4u);
  EXPECT_EQ(shifted.counters.excess_load_sectors(), 1u);
}

// Shared patterns, by `pattern`: 0 column of a 32x32 tile (all lanes in bank 0), 1 the same with
// a padded row (33), 2 broadcast of one word, 3 float4 rows (conflict-free), 4 float4 at a
// 128-byte stride (8 lanes per phase in the same 4 banks).
__global__ void shared_pattern(float* out, int pattern) {
  float* s = dynamic_smem<float>();
  const int lane = threadIdx.x;
  switch (pattern) {
    case 0: st_shared(s + lane * 32, 1.0f); break;
    case 1: st_shared(s + lane * 33, 1.0f); break;
    case 2:
      if (lane == 0) st_shared(s, 1.0f);
      __syncwarp();
      st_global(out + lane, ld_shared(s));
      break;
    case 3: st_shared(reinterpret_cast<float4*>(s) + lane, float4{1, 2, 3, 4}); break;
    case 4: st_shared(reinterpret_cast<float4*>(s) + lane * 8, float4{1, 2, 3, 4}); break;
  }
}

struct SharedCase {
  int pattern;
  uint64_t requests, wavefronts, ideal;
};

TEST(EmuCounters, SharedBankConflicts) {
  DevBuf<float> out(32, "out");
  const SharedCase cases[] = {
      {0, 1, 32, 1},          // 32 distinct words in bank 0
      {1, 1, 1, 1},           // padding spreads the column over all banks
      {2, 2, 2, 2},           // one store by lane 0, then a broadcast read
      {3, 1, 4, 4},           // 4 phases of 8 lanes x 16 B, each conflict-free
      {4, 1, 4 * 8, 4 * 1},   // per phase, 8 lanes hit the same 4 banks
  };
  for (const SharedCase& k : cases) {
    auto r = emu::launch(shared_pattern, dim3(1), dim3(32), 32 * 33 * sizeof(float), out.get(), k.pattern);
    ASSERT_TRUE(r.ok()) << r.summary();
    SCOPED_TRACE("pattern " + std::to_string(k.pattern));
    EXPECT_EQ(r.counters.shared_requests, k.requests);
    EXPECT_EQ(r.counters.shared_wavefronts, k.wavefronts);
    EXPECT_EQ(r.counters.shared_wavefronts_ideal, k.ideal);
    EXPECT_EQ(r.counters.bank_conflict_wavefronts(), k.wavefronts - k.ideal);
  }
}

// cp.async writes its destination through the banks as a 16-byte shared store does (8 lanes a
// phase): lane l copies 16 bytes of `in` to float4 l * stride of shared memory.
__global__ void cp_async_pattern(const float* in, float* out, int stride) {
  float4* s = dynamic_smem<float4>();
  const int lane = threadIdx.x;
  cp_async_16(s + lane * stride, in + 4 * lane);
  cp_async_commit();
  cp_async_wait<0>();
  st_global(out + lane, ld_shared(s + lane * stride).x);  // the same pattern, read back
}

TEST(EmuCounters, CpAsyncDestinationBankConflicts) {
  DevBuf<float> in(128, "in"), out(32, "out");
  std::vector<float> host(128);
  for (int i = 0; i < 128; ++i) host[i] = static_cast<float>(i);
  in.upload(host);
  const SharedCase cases[] = {
      {1, 1, 4, 4},          // contiguous 16-byte rows: 4 conflict-free phases
      {8, 1, 4 * 8, 4 * 1},  // 128-byte stride: per phase, 8 lanes in the same 4 banks
  };
  for (const SharedCase& k : cases) {
    SCOPED_TRACE("stride " + std::to_string(k.pattern));
    auto r = emu::launch(cp_async_pattern, dim3(1), dim3(32), 32 * 8 * sizeof(float4), in.get(), out.get(),
                         k.pattern);
    ASSERT_TRUE(r.ok()) << r.summary();
    // The read-back is a second request with the same pattern: every count doubles.
    EXPECT_EQ(r.counters.shared_requests, 2 * k.requests);
    EXPECT_EQ(r.counters.shared_wavefronts, 2 * k.wavefronts);
    EXPECT_EQ(r.counters.shared_wavefronts_ideal, 2 * k.ideal);
    EXPECT_EQ(r.counters.cp_async_bytes, 32u * 16u);
    const auto got = out.download();
    for (int l = 0; l < 32; ++l) EXPECT_EQ(got[l], static_cast<float>(4 * l)) << "lane " << l;
  }
}

constexpr int kRowBytes = 16, kRows = 8;
__global__ void matrix_phases(float*, int stride) {
  if (threadIdx.x % 32 != 0) return;
  const auto base = reinterpret_cast<uintptr_t>(dynamic_smem<char>());
  uintptr_t rows[kRows];
  for (int i = 0; i < kRows; ++i) rows[i] = base + static_cast<uintptr_t>(i * stride);
  emu::count_shared_phase(rows, kRows, kRowBytes);
  emu::count_tensor_op("mma.test");
}

TEST(EmuCounters, MatrixPhasesAndTensorOps) {
  auto dense = emu::launch(matrix_phases, dim3(1), dim3(64), 2048, static_cast<float*>(nullptr), kRowBytes);
  auto conflicted = emu::launch(matrix_phases, dim3(1), dim3(64), 2048, static_cast<float*>(nullptr), 128);
  ASSERT_TRUE(dense.ok() && conflicted.ok());
  EXPECT_EQ(dense.counters.shared_wavefronts, 2u);  // two warps, one phase each
  EXPECT_EQ(dense.counters.shared_wavefronts_ideal, 2u);
  EXPECT_EQ(conflicted.counters.shared_wavefronts, 2u * 8u);  // 8 rows in the same 4 banks
  EXPECT_EQ(conflicted.counters.shared_wavefronts_ideal, 2u);
  EXPECT_EQ(dense.counters.tensor_ops.at("mma.test"), 2u);
}

__global__ void many_barriers(float*, int n) {
  for (int i = 0; i < n; ++i) __syncthreads();
}

TEST(EmuCounters, BarriersPerBlock) {
  auto r = emu::launch(many_barriers, dim3(3), dim3(64), 0, static_cast<float*>(nullptr), 5);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.counters.barriers, 15u);
}

}  // namespace
