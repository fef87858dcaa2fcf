// Block and warp reductions under the emulator: exact on integer-valued inputs, race-free.
#include <gtest/gtest.h>

#include <vector>

#include "device/reduce.cuh"
#include "device/smem.h"
#include "emu/emu.h"
#include "support/seed.h"

namespace {

__global__ void block_sum_kernel(const float* in, float* out) {
  float* scratch = tejas::dev::dynamic_smem<float>();
  const float v = tejas::ptx::ld_global(in + blockIdx.x * blockDim.x + threadIdx.x);
  // Two reductions back to back reuse the scratch: the second must not race the first.
  const float s = tejas::dev::block_allreduce(v, tejas::dev::SumOp{}, 0.0f, scratch);
  const float m = tejas::dev::block_allreduce(v, tejas::dev::MaxOp{}, -1e30f, scratch);
  tejas::ptx::st_global(out + (blockIdx.x * blockDim.x + threadIdx.x) * 2, s);
  tejas::ptx::st_global(out + (blockIdx.x * blockDim.x + threadIdx.x) * 2 + 1, m);
}

TEST(Reduce, BlockSumAndMaxExactAndClean) {
  TEJAS_SEEDED_TEST_RNG();
  for (unsigned threads : {32u, 96u, 256u, 1024u}) {
    const unsigned blocks = 2;
    std::vector<float> in(blocks * threads), out(blocks * threads * 2, -1.0f);
    for (auto& v : in) v = static_cast<float>(rng.randint(-1000, 1000));
    tejas::emu::ScopedBuffer bi(in.data(), in.size() * 4, tejas::emu::Access::read, "in");
    tejas::emu::ScopedBuffer bo(out.data(), out.size() * 4, tejas::emu::Access::write, "out", false);
    auto rep = tejas::emu::launch(block_sum_kernel, dim3(blocks), dim3(threads),
                                  tejas::dev::kMaxWarpsPerBlock * sizeof(float), in.data(), out.data());
    ASSERT_TRUE(rep.ok()) << rep.summary();
    for (unsigned b = 0; b < blocks; ++b) {
      double sum = 0, mx = -1e30;
      for (unsigned t = 0; t < threads; ++t) {
        sum += in[b * threads + t];
        mx = std::max<double>(mx, in[b * threads + t]);
      }
      for (unsigned t = 0; t < threads; ++t) {
        EXPECT_EQ(out[(b * threads + t) * 2], sum) << "threads " << threads;
        EXPECT_EQ(out[(b * threads + t) * 2 + 1], mx) << "threads " << threads;
      }
    }
  }
}

}  // namespace
