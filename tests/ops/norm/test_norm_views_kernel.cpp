// Norm kernels on views a caller may pass besides packed rows: a weight that starts off its
// 16-byte alignment (the kernels drop to narrower vectors for it), and an input whose rows
// repeat (token stride 0: one row broadcast to T rows). Kernel backend against the reference
// backend on the same views: outputs within 1 ulp (bf16), the stored residual exact. Emulator;
// cuda when a GPU is present (the device mirrors keep each view's misalignment).
#include <gtest/gtest.h>

#include <vector>

#include "ops/norm/kernel_harness.h"
#include "support/seed.h"
#include "tejas/norm.h"

using namespace tejas;
using namespace tejas::normtest;
using check::HostTensor;

namespace {

constexpr double kEps = 1e-6;

// A [H] weight whose data starts `shift` elements past a 256-byte boundary.
HostTensor shifted_weight(DType dt, int64_t H, int64_t shift) {
  HostTensor w(dt, {H + shift});
  w.view().data = static_cast<unsigned char*>(w.view().data) + shift * dtype_bits(dt) / 8;
  w.view().shape[0] = H;
  return w;
}

// x [T, H] whose T rows are one stored row (stride 0).
HostTensor broadcast_rows(DType dt, int64_t T, int64_t H) {
  HostTensor x(dt, {1, H});
  x.view().shape[0] = T;
  x.view().stride[0] = 0;
  return x;
}

void check_views(Backend b, check::Rng& rng, HostTensor& x, HostTensor& w) {
  const int64_t T = x.view().shape[0], H = x.view().shape[1];
  check::fill_normal(x, rng);
  check::fill_normal(w, rng, 1.0, 0.5);
  HostTensor res_ref(DType::bf16, {T, H}), res_got(DType::bf16, {T, H});
  HostTensor out_ref(DType::bf16, {T, H}), out_got(DType::bf16, {T, H});
  check::fill_normal(res_ref, rng);
  res_got.copy_from(res_ref);
  auto plain = [](const ExecContext& ctx, const std::vector<TensorView>& v) {
    return rms_norm(ctx, v[0], v[1], kEps, v[2]);
  };
  TEJAS_ASSERT_OK(run_backend(Backend::reference, {&x, &w, &out_ref}, plain));
  TEJAS_ASSERT_OK(run_backend(b, {&x, &w, &out_got}, plain));
  auto r = check::compare(out_got, out_ref, tolerance_for(DType::bf16));
  EXPECT_TRUE(r.ok) << "rms_norm out: " << r.message;
  auto fused = [](const ExecContext& ctx, const std::vector<TensorView>& v) {
    return fused_add_rms_norm(ctx, v[0], v[1], v[2], kEps, v[3]);
  };
  TEJAS_ASSERT_OK(run_backend(Backend::reference, {&x, &res_ref, &w, &out_ref}, fused));
  TEJAS_ASSERT_OK(run_backend(b, {&x, &res_got, &w, &out_got}, fused));
  r = check::compare_exact(res_got, res_ref);
  EXPECT_TRUE(r.ok) << "residual: " << r.message;
  r = check::compare(out_got, out_ref, tolerance_for(DType::bf16));
  EXPECT_TRUE(r.ok) << "fused out: " << r.message;
  EXPECT_TRUE(out_got.guards_intact() && res_got.guards_intact());
}

void run_all(Backend b) {
  TEJAS_SEEDED_TEST_RNG();
  // Weight 1, 2 and 4 bf16 elements off (vec 1, 2, 4), warp-per-row and CTA-per-row rows.
  for (int64_t H : {96, 2048, 5000}) {
    for (int64_t shift : {1, 2, 4}) {
      SCOPED_TRACE(::testing::Message() << "weight shifted " << shift << ", H=" << H);
      HostTensor x(DType::bf16, {3, H});
      HostTensor w = shifted_weight(DType::bf16, H, shift);
      check_views(b, rng, x, w);
    }
  }
  // Broadcast rows: every output row equal, and equal to the reference's.
  for (int64_t H : {64, 4096}) {
    SCOPED_TRACE(::testing::Message() << "broadcast x, H=" << H);
    HostTensor x = broadcast_rows(DType::bf16, 5, H), w(DType::f32, {H});
    check_views(b, rng, x, w);
  }
}

TEST(NormViewsKernel, MisalignedWeightAndBroadcastRows) { run_all(Backend::emulator); }

TEST(NormViewsKernel, CudaMisalignedWeightAndBroadcastRows) {
  TEJAS_REQUIRE_CUDA();
  run_all(Backend::cuda);
}

}  // namespace
