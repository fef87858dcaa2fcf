// detail::access_alignment: the vector-access alignment every op family's planner uses. Views
// over made-up addresses (never dereferenced: only the address bits count).
#include <gtest/gtest.h>

#include <cstdint>

#include "runtime/alignment.h"

using namespace tejas;
using tejas::detail::access_alignment;

namespace {

constexpr uintptr_t kBase = 0x100000;  // 1 MiB: aligned to every cap used here

TensorView view(uintptr_t addr, DType dt, std::initializer_list<int64_t> shape) {
  return TensorView::contiguous(reinterpret_cast<void*>(addr), dt, shape);
}

TEST(AccessAlignment, AddressOfEveryPowerOfTwo) {
  EXPECT_EQ(access_alignment(view(kBase, DType::u8, {1, 64})), 16);
  for (int a = 1; a <= 64; a *= 2) {
    SCOPED_TRACE(a);
    const TensorView t = view(kBase + static_cast<uintptr_t>(a), DType::u8, {1, 64});
    EXPECT_EQ(access_alignment(t), a < 16 ? a : 16);
    EXPECT_EQ(access_alignment(t, 64), a);
  }
  EXPECT_EQ(access_alignment(view(kBase + 3, DType::u8, {64})), 1);
  EXPECT_EQ(access_alignment(view(kBase + 12, DType::u8, {64})), 4);  // lowest set bit
}

TEST(AccessAlignment, OuterStrideOfEveryPowerOfTwoInBytes) {
  for (int64_t s = 1; s <= 32; s *= 2) {
    SCOPED_TRACE(s);
    TensorView t = view(kBase, DType::bf16, {3, 4});
    t.stride[0] = s;  // 2 * s bytes
    EXPECT_EQ(access_alignment(t), s * 2 < 16 ? s * 2 : 16);
    TensorView f = view(kBase, DType::f32, {3, 4});
    f.stride[0] = s;  // 4 * s bytes
    EXPECT_EQ(access_alignment(f), s * 4 < 16 ? s * 4 : 16);
  }
  TensorView t = view(kBase, DType::bf16, {3, 4});
  t.stride[0] = 10;  // 20-byte rows
  EXPECT_EQ(access_alignment(t), 4);
  t.stride[0] = 0;  // one row repeated: only the address counts
  EXPECT_EQ(access_alignment(t), 16);
  t.stride[0] = -8;  // 16 bytes back: the magnitude counts
  EXPECT_EQ(access_alignment(t), 16);
}

TEST(AccessAlignment, EveryOuterDimCounts) {
  // A paged KV cache [blocks, slots, heads, D] bf16 with padded heads: only the head stride (dim
  // 2) is 8 bytes.
  TensorView t = view(kBase, DType::bf16, {4, 16, 8, 128});
  EXPECT_EQ(access_alignment(t), 16);
  t.stride[2] = 132;
  t.stride[1] = 8 * 136;
  t.stride[0] = 16 * 8 * 136;
  EXPECT_EQ(access_alignment(t), 8);
  t.stride[2] = 136;
  t.stride[0] = 16 * 8 * 136 + 1;  // a block stride of one element: 2 bytes
  EXPECT_EQ(access_alignment(t), 2);
}

TEST(AccessAlignment, ExtentOneDimsAndTheInnermostStrideAreIgnored) {
  TensorView t = view(kBase, DType::bf16, {1, 5, 8});
  t.stride[0] = 3;  // never applied: one index
  EXPECT_EQ(access_alignment(t), 16);
  t.shape[0] = 2;
  EXPECT_EQ(access_alignment(t), 2);
  t = view(kBase, DType::bf16, {4, 8});
  t.stride[1] = 3;  // innermost: the planner's business (validated inner-contiguous)
  EXPECT_EQ(access_alignment(t), 16);
  EXPECT_EQ(access_alignment(view(kBase + 8, DType::f32, {100})), 8);  // 1-D: the address only
  TensorView scalar = view(kBase + 4, DType::f32, {});
  EXPECT_EQ(access_alignment(scalar), 4);
}

TEST(AccessAlignment, CapIsRespected) {
  const TensorView t = view(kBase, DType::f32, {2, 64});  // 256-byte rows at a 1 MiB boundary
  EXPECT_EQ(access_alignment(t, 1), 1);
  EXPECT_EQ(access_alignment(t, 4), 4);
  EXPECT_EQ(access_alignment(t, 16), 16);
  EXPECT_EQ(access_alignment(t, 256), 256);
  EXPECT_EQ(access_alignment(t, 1024), 256);  // the row stride binds below the cap
}

TEST(AccessAlignment, AbsentTensorsReturnTheCap) {
  EXPECT_EQ(access_alignment(TensorView{}), 16);
  EXPECT_EQ(access_alignment(TensorView{}, 4), 4);
}

// e2m1 strides count 4-bit elements: bytes = stride / 2; an odd stride puts rows mid-byte.
TEST(AccessAlignment, SubByteStridesCountBits) {
  TensorView t = view(kBase, DType::e2m1, {4, 64});  // 32-byte rows
  EXPECT_EQ(access_alignment(t), 16);
  t.stride[0] = 36;  // 18 bytes
  EXPECT_EQ(access_alignment(t), 2);
  t.stride[0] = 18;  // 9 bytes
  EXPECT_EQ(access_alignment(t), 1);
  t.stride[0] = 33;  // 16.5 bytes: no access width fits
  EXPECT_EQ(access_alignment(t), 0);
  t.shape[0] = 1;  // ... unless that stride is never applied
  EXPECT_EQ(access_alignment(t), 16);
  t = view(kBase + 8, DType::e2m1, {2, 64});  // the address is in bytes as for every dtype
  EXPECT_EQ(access_alignment(t), 8);
}

}  // namespace
