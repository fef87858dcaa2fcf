// The row-wise kernels put rows (tokens) on gridDim.x, at most 2^31 - 1 blocks: one row more
// and the kernel backends answer unsupported, naming the tensor and the count, before any
// launch (runtime/validate.h, check_kernel_rows). At exactly 2^31 - 1 rows they go on (nothing
// here launches that: the views' pointers are fake and never dereferenced on the rejected
// path; the limit itself is unit-tested directly).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "runtime/validate.h"
#include "tejas/activation.h"
#include "tejas/norm.h"
#include "tejas/rope.h"

using namespace tejas;

namespace {

constexpr int64_t kRows = detail::kMaxKernelRows + 1;

// Far-apart addresses that no test touches: views over them only feed the arithmetic of
// validation (extents, overlaps).
void* fake(int i) { return reinterpret_cast<void*>(uintptr_t{1} << (40 + i)); }

ExecContext emulator_ctx() {
  ExecContext ctx;
  ctx.backend = Backend::emulator;
  return ctx;
}

void expect_too_many_rows(const Status& s, const std::string& op, const std::string& tensor) {
  EXPECT_EQ(s.code(), StatusCode::unsupported) << s.to_string();
  EXPECT_EQ(s.message().rfind(op + ": ", 0), 0u) << s.message();
  EXPECT_NE(s.message().find(tensor + " has " + std::to_string(kRows) + ", at most 2147483647"),
            std::string::npos)
      << s.message();
}

}  // namespace

TEST(KernelRowsLimit, CheckAcceptsTheLimitAndRejectsOneMore) {
  EXPECT_TRUE(detail::check_kernel_rows("op", Backend::cuda, "x", detail::kMaxKernelRows).ok());
  EXPECT_TRUE(detail::check_kernel_rows("op", Backend::cuda, "x", 1).ok());
  const Status s = detail::check_kernel_rows("op", Backend::cuda, "x", kRows);
  EXPECT_EQ(s.code(), StatusCode::unsupported);
  EXPECT_EQ(s.message(),
            "op: the cuda backend has no kernel for this many rows: x has 2147483648, at most 2147483647 "
            "(2^31 - 1) run on a kernel backend");
}

TEST(KernelRowsLimit, NormRejectsBeforeLaunch) {
  const TensorView x = TensorView::contiguous(fake(0), DType::bf16, {kRows, 2});
  const TensorView out = TensorView::contiguous(fake(1), DType::bf16, {kRows, 2});
  const TensorView w = TensorView::contiguous(fake(2), DType::bf16, {2});
  expect_too_many_rows(rms_norm(emulator_ctx(), x, w, 1e-6, out), "rms_norm", "x");
}

TEST(KernelRowsLimit, ActivationRejectsBeforeLaunch) {
  const TensorView x = TensorView::contiguous(fake(0), DType::bf16, {kRows, 2});
  const TensorView out = TensorView::contiguous(fake(1), DType::bf16, {kRows, 1});
  expect_too_many_rows(silu_mul(emulator_ctx(), x, out), "silu_mul", "x");
  expect_too_many_rows(gelu_tanh_mul(emulator_ctx(), x, out), "gelu_tanh_mul", "x");
  const TensorView xq = TensorView::contiguous(fake(0), DType::bf16, {kRows, 64});
  const TensorView q = TensorView::contiguous(fake(1), DType::e2m1, {kRows, 32});
  const TensorView s = TensorView::contiguous(fake(2), DType::ue8m0, {kRows, 1});
  expect_too_many_rows(silu_mul_quant_mx(emulator_ctx(), MxFormat::mxfp4, xq, q, s), "silu_mul_quant_mx", "x");
}

TEST(KernelRowsLimit, RopeRejectsBeforeLaunch) {
  const TensorView pos = TensorView::contiguous(fake(0), DType::i64, {kRows});
  const TensorView q = TensorView::contiguous(fake(1), DType::bf16, {kRows, 1, 8});
  const TensorView cache = TensorView::contiguous(fake(2), DType::f32, {16, 8});
  expect_too_many_rows(rope(emulator_ctx(), pos, q, TensorView{}, cache, RopeStyle::neox), "rope", "q");
}
