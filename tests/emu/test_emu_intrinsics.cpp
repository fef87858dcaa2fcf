// CUDA intrinsic semantics under the emulator: shuffles (widths, masks), votes, match, reduce,
// __syncthreads_count/and/or, atomics under contention, math and bit intrinsics. Expected values
// come from the CUDA documentation's definitions, written out as plain loops here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "device/prelude.h"
#include "device/ptx/ld_st.h"
#include "emu_test_util.h"
#include "support/seed.h"

using tejas::ptx::ld_global;
using tejas::ptx::st_global;
using tejas::emu::testing::DevBuf;
namespace emu = tejas::emu;

namespace {

constexpr int kWarp = 32;
constexpr int kShflKinds = 7;

__global__ void shuffle_kernel(const int* in, int* out, double* dout) {
  const int t = threadIdx.x;
  const int v = ld_global(in + t);
  const int lane = t % warpSize;
  int* o = out + t * kShflKinds;
  st_global(o + 0, __shfl_sync(0xffffffffu, v, (lane * 7 + 3) % 32));
  st_global(o + 1, __shfl_sync(0xffffffffu, v, lane + 5, 8));
  st_global(o + 2, __shfl_up_sync(0xffffffffu, v, 3, 16));
  st_global(o + 3, __shfl_down_sync(0xffffffffu, v, 5));
  st_global(o + 4, __shfl_xor_sync(0xffffffffu, v, 9, 16));
  st_global(o + 5, __shfl_xor_sync(0xffffffffu, v, 17, 16));
  st_global(o + 6, lane < 16 ? __shfl_down_sync(0x0000ffffu, v, 1) : -1);
  st_global(dout + t, __shfl_xor_sync(0xffffffffu, static_cast<double>(v) + 0.25, 1));
}

TEST(EmuIntrinsics, ShufflesFollowCudaLaneRules) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int n = 2 * kWarp;
  std::vector<int> in(n);
  for (int& x : in) x = static_cast<int>(rng.randint(-1000000, 1000000));
  DevBuf<int> din(n, "in"), dout(n * kShflKinds, "out");
  DevBuf<double> dd(n, "dout");
  din.upload(in);
  auto r = emu::launch(shuffle_kernel, dim3(1), dim3(n), 0, din.get(), dout.get(), dd.get());
  ASSERT_TRUE(r.ok()) << r.summary();
  const auto out = dout.download();
  const auto dv = dd.download();
  for (int t = 0; t < n; ++t) {
    const int base = t - t % kWarp, lane = t % kWarp;
    auto at = [&](int l) { return in[base + l]; };
    SCOPED_TRACE("thread " + std::to_string(t));
    EXPECT_EQ(out[t * kShflKinds + 0], at((lane * 7 + 3) % 32));
    EXPECT_EQ(out[t * kShflKinds + 1], at(lane / 8 * 8 + (lane + 5) % 8));   // wraps inside the segment
    EXPECT_EQ(out[t * kShflKinds + 2], lane % 16 >= 3 ? at(lane - 3) : at(lane));
    EXPECT_EQ(out[t * kShflKinds + 3], lane + 5 < 32 ? at(lane + 5) : at(lane));
    EXPECT_EQ(out[t * kShflKinds + 4], at(lane ^ 9));
    // xor 17 at width 16: earlier segments are reachable, later ones give the caller's own value.
    EXPECT_EQ(out[t * kShflKinds + 5], (lane ^ 17) < (lane / 16 + 1) * 16 ? at(lane ^ 17) : at(lane));
    if (lane < 16) {
      // mask 0xffff: lane 15's source (16) is outside the mask; CUDA leaves it undefined.
      if (lane < 15) {
        EXPECT_EQ(out[t * kShflKinds + 6], at(lane + 1));
      }
    } else {
      EXPECT_EQ(out[t * kShflKinds + 6], -1);
    }
    EXPECT_EQ(dv[t], static_cast<double>(at(lane ^ 1)) + 0.25);
  }
}

__global__ void vote_kernel(const int* pred, unsigned* out) {
  const int t = threadIdx.x;
  const int p = ld_global(pred + t);
  st_global(out + 5 * t + 0, __ballot_sync(0xffffffffu, p));
  st_global(out + 5 * t + 1, static_cast<unsigned>(__any_sync(0xffffffffu, p)));
  st_global(out + 5 * t + 2, static_cast<unsigned>(__all_sync(0xffffffffu, p)));
  st_global(out + 5 * t + 3, __match_any_sync(0xffffffffu, p % 5));
  int all = -1;
  const unsigned m = __match_all_sync(0xffffffffu, t / kWarp, &all);
  st_global(out + 5 * t + 4, m + static_cast<unsigned>(all));
}

TEST(EmuIntrinsics, VotesAndMatch) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int n = 3 * kWarp;
  std::vector<int> pred(n);
  for (int t = 0; t < n; ++t) pred[t] = t < kWarp ? 1 : static_cast<int>(rng.randint(0, 9)) * (t >= 2 * kWarp ? 0 : 1);
  DevBuf<int> dp(n, "pred");
  DevBuf<unsigned> dout(5 * n, "out");
  dp.upload(pred);
  auto r = emu::launch(vote_kernel, dim3(1), dim3(n), 0, dp.get(), dout.get());
  ASSERT_TRUE(r.ok()) << r.summary();
  const auto out = dout.download();
  for (int w = 0; w < 3; ++w) {
    unsigned ballot = 0;
    for (int l = 0; l < kWarp; ++l) ballot |= pred[w * kWarp + l] != 0 ? 1u << l : 0u;
    for (int l = 0; l < kWarp; ++l) {
      const int t = w * kWarp + l;
      unsigned same = 0;
      for (int k = 0; k < kWarp; ++k) same |= pred[w * kWarp + k] % 5 == pred[t] % 5 ? 1u << k : 0u;
      EXPECT_EQ(out[5 * t + 0], ballot) << t;
      EXPECT_EQ(out[5 * t + 1], ballot != 0 ? 1u : 0u) << t;
      EXPECT_EQ(out[5 * t + 2], ballot == 0xffffffffu ? 1u : 0u) << t;
      EXPECT_EQ(out[5 * t + 3], same) << t;
      EXPECT_EQ(out[5 * t + 4], 0xffffffffu + 1u) << t;  // all lanes agree: full mask, pred 1
    }
  }
}

__global__ void reduce_kernel(const unsigned* in, unsigned* out) {
  const int t = threadIdx.x;
  const unsigned v = ld_global(in + t);
  st_global(out + 7 * t + 0, __reduce_add_sync(0xffffffffu, v));
  st_global(out + 7 * t + 1, __reduce_min_sync(0xffffffffu, v));
  st_global(out + 7 * t + 2, __reduce_max_sync(0xffffffffu, v));
  st_global(out + 7 * t + 3, static_cast<unsigned>(__reduce_min_sync(0xffffffffu, static_cast<int>(v))));
  st_global(out + 7 * t + 4, __reduce_and_sync(0xffffffffu, v));
  st_global(out + 7 * t + 5, __reduce_or_sync(0xffffffffu, v));
  st_global(out + 7 * t + 6, __reduce_xor_sync(0xffffffffu, v));
}

TEST(EmuIntrinsics, WarpReduce) {
  TEJAS_SEEDED_TEST_RNG();
  std::vector<unsigned> in(kWarp);
  for (unsigned& x : in) x = static_cast<unsigned>(rng.next());
  DevBuf<unsigned> din(kWarp, "in"), dout(7 * kWarp, "out");
  din.upload(in);
  auto r = emu::launch(reduce_kernel, dim3(1), dim3(kWarp), 0, din.get(), dout.get());
  ASSERT_TRUE(r.ok()) << r.summary();
  uint64_t sum = 0;
  unsigned umin = ~0u, umax = 0, band = ~0u, bor = 0, bxor = 0;
  int64_t smin = INT64_MAX;
  for (unsigned x : in) {
    sum += x;
    umin = x < umin ? x : umin;
    umax = x > umax ? x : umax;
    smin = static_cast<int32_t>(x) < smin ? static_cast<int32_t>(x) : smin;
    band &= x;
    bor |= x;
    bxor ^= x;
  }
  const auto out = dout.download();
  for (int t = 0; t < kWarp; ++t) {
    EXPECT_EQ(out[7 * t + 0], static_cast<unsigned>(sum % (uint64_t{1} << 32)));
    EXPECT_EQ(out[7 * t + 1], umin);
    EXPECT_EQ(out[7 * t + 2], umax);
    EXPECT_EQ(static_cast<int32_t>(out[7 * t + 3]), smin);
    EXPECT_EQ(out[7 * t + 4], band);
    EXPECT_EQ(out[7 * t + 5], bor);
    EXPECT_EQ(out[7 * t + 6], bxor);
  }
}

__global__ void barrier_vote_kernel(const int* pred, int* out) {
  const int t = threadIdx.x;
  const int p = ld_global(pred + t);
  st_global(out + 3 * t + 0, __syncthreads_count(p));
  st_global(out + 3 * t + 1, __syncthreads_and(p));
  st_global(out + 3 * t + 2, __syncthreads_or(p));
}

TEST(EmuIntrinsics, SyncthreadsCountAndOr) {
  TEJAS_SEEDED_TEST_RNG();
  constexpr int n = 80;  // a partial last warp
  for (int trial = 0; trial < 3; ++trial) {
    std::vector<int> pred(n);
    for (int& p : pred) p = trial == 1 ? 7 : trial == 2 ? 0 : static_cast<int>(rng.randint(0, 3)) == 0 ? 5 : 0;
    DevBuf<int> dp(n, "pred"), dout(3 * n, "out");
    dp.upload(pred);
    auto r = emu::launch(barrier_vote_kernel, dim3(1), dim3(n), 0, dp.get(), dout.get());
    ASSERT_TRUE(r.ok()) << r.summary();
    EXPECT_EQ(r.counters.barriers, 3u);
    int count = 0;
    for (int p : pred) count += p != 0 ? 1 : 0;
    const auto out = dout.download();
    for (int t = 0; t < n; ++t) {
      EXPECT_EQ(out[3 * t + 0], count);
      EXPECT_EQ(out[3 * t + 1], count == n ? 1 : 0);
      EXPECT_EQ(out[3 * t + 2], count > 0 ? 1 : 0);
    }
  }
}

constexpr int kAtomicIters = 10;

__global__ void atomic_kernel(int* counter, float* fsum, unsigned* bits, int* extremes, unsigned* cas, int* order) {
  const int t = static_cast<int>(threadIdx.x + blockIdx.x * blockDim.x);
  int* s = tejas::dev::dynamic_smem<int>();
  if (threadIdx.x == 0) tejas::ptx::st_shared(s, 0);
  __syncthreads();
  for (int i = 0; i < kAtomicIters; ++i) {
    atomicAdd(counter, 1);
    atomicAdd(fsum, static_cast<float>(t % 7));
    atomicAdd(s, 2);
  }
  atomicOr(bits, 1u << (t % 32));
  atomicXor(bits + 1, 1u << (t % 32));
  atomicAnd(bits + 2, ~(1u << (t % 32)));
  atomicMax(extremes, t * 3 - 50);
  atomicMin(extremes + 1, t * 3 - 50);
  // Lock-free increment through a CAS loop.
  unsigned old = *cas, assumed;
  do {
    assumed = old;
    old = atomicCAS(cas, assumed, assumed + 1);
  } while (old != assumed);
  const int ticket = atomicAdd(counter + 1, 1);
  order[ticket] = t;
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(counter + 2, tejas::ptx::ld_shared(s));
}

TEST(EmuIntrinsics, AtomicsUnderContention) {
  constexpr int blocks = 4, threads = 128, n = blocks * threads;
  DevBuf<int> counter(3, "counter"), extremes(2, "extremes"), order(n, "order");
  DevBuf<float> fsum(1, "fsum");
  DevBuf<unsigned> bits(3, "bits"), cas(1, "cas");
  counter.upload({0, 0, 0});
  fsum.upload({0.0f});
  bits.upload({0u, 0u, 0xffffffffu});
  extremes.upload({-1000000, 1000000});
  cas.upload({0u});
  auto r = emu::launch(atomic_kernel, dim3(blocks), dim3(threads), sizeof(int), counter.get(), fsum.get(), bits.get(),
                       extremes.get(), cas.get(), order.get());
  ASSERT_TRUE(r.ok()) << r.summary();
  const auto c = counter.download();
  EXPECT_EQ(c[0], n * kAtomicIters);
  EXPECT_EQ(c[1], n);
  EXPECT_EQ(c[2], blocks * threads * kAtomicIters * 2);
  double want = 0;
  for (int t = 0; t < n; ++t) want += (t % 7) * kAtomicIters;
  EXPECT_EQ(static_cast<double>(fsum.download()[0]), want);  // integers below 2^24: exact in any order
  const auto b = bits.download();
  EXPECT_EQ(b[0], 0xffffffffu);
  EXPECT_EQ(b[1], 0u);  // every bit toggled an even number of times (16 threads per bit)
  EXPECT_EQ(b[2], 0u);
  const auto e = extremes.download();
  EXPECT_EQ(e[0], (n - 1) * 3 - 50);
  EXPECT_EQ(e[1], -50);
  EXPECT_EQ(cas.download()[0], static_cast<unsigned>(n));
  // Tickets form a permutation of the threads.
  auto ord = order.download();
  std::vector<int> seen(n, 0);
  for (int x : ord) {
    ASSERT_GE(x, 0);
    ASSERT_LT(x, n);
    seen[x]++;
  }
  for (int k : seen) EXPECT_EQ(k, 1);
}

TEST(EmuIntrinsics, BitAndMathIntrinsics) {
  EXPECT_EQ(__popc(0xf0f0u), 8);
  EXPECT_EQ(__clz(0), 32);
  EXPECT_EQ(__clz(1), 31);
  EXPECT_EQ(__clz(-1), 0);
  EXPECT_EQ(__ffs(0), 0);
  EXPECT_EQ(__ffs(0x50), 5);
  EXPECT_EQ(__brev(1u), 0x80000000u);
  EXPECT_EQ(__brev(0x12345678u), 0x1e6a2c48u);
  EXPECT_EQ(__funnelshift_l(0x80000000u, 0x1u, 1), 0x3u);
  EXPECT_EQ(__funnelshift_l(0x0u, 0x1u, 33), 0x2u);    // shift wraps to 1
  EXPECT_EQ(__funnelshift_lc(0x5u, 0x1u, 40), 0x5u);   // clamped to 32: the low word
  EXPECT_EQ(__funnelshift_r(0x0u, 0x1u, 1), 0x80000000u);
  EXPECT_EQ(__funnelshift_rc(0x0u, 0x7u, 40), 0x7u);
  EXPECT_EQ(__byte_perm(0x33221100u, 0x77665544u, 0x7531u), 0x77553311u);
  EXPECT_EQ(__saturatef(NAN), 0.0f);
  EXPECT_EQ(__saturatef(1.5f), 1.0f);
  EXPECT_EQ(__saturatef(-2.0f), 0.0f);
  EXPECT_EQ(__float_as_uint(1.0f), 0x3f800000u);
  EXPECT_EQ(__uint_as_float(0x40000000u), 2.0f);
  EXPECT_EQ(__int_as_float(__float_as_int(-3.5f)), -3.5f);
  EXPECT_EQ(__fmaf_rn(1.0f + 0x1p-23f, 1.0f - 0x1p-23f, -1.0f), -0x1p-46f);  // one rounding
  EXPECT_EQ(__fdividef(1.0f, 0x1p127f), 0.0f);
  EXPECT_FLOAT_EQ(rsqrtf(4.0f), 0.5f);
  EXPECT_FLOAT_EQ(__exp10f(2.0f), 100.0f);
  EXPECT_EQ(max(3, 7), 7);
  EXPECT_EQ(min(2.5f, -1.0f), -1.0f);
  EXPECT_EQ(__umulhi(0x80000000u, 4u), 2u);
  // bf16 fma: 1.5 * 3 + 0.125 = 4.625 is exact in bf16's 8 bits of mantissa.
  const __nv_bfloat162 a = __floats2bfloat162_rn(1.5f, -2.0f), b = __floats2bfloat162_rn(3.0f, 0.5f),
                       c = __floats2bfloat162_rn(0.125f, -1.0f);
  const float2 f = __bfloat1622float2(__hfma2(a, b, c));
  EXPECT_EQ(f.x, 4.625f);
  EXPECT_EQ(f.y, -2.0f);
  EXPECT_EQ(__bfloat162float(__hfma_relu(__float2bfloat16(-1.0f), __float2bfloat16(2.0f), __float2bfloat16(0.5f))),
            0.0f);
  const __half2 h = __hfma2(__floats2half2_rn(0.5f, 2.0f), __floats2half2_rn(0.5f, 2.0f), __floats2half2_rn(1.0f, 1.0f));
  EXPECT_EQ(__low2float(h), 1.25f);
  EXPECT_EQ(__high2float(h), 5.0f);
}

}  // namespace
