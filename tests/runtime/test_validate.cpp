#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "check/cuda_mem.h"
#include "check/host_tensor.h"
#include "runtime/validate.h"
#include "support/seed.h"
#include "tejas/norm.h"

using namespace tejas;
using tejas::detail::Validator;

TEST(Validate, DtypeMessageNamesArgument) {
  float buf[4];
  auto t = TensorView::contiguous(buf, DType::f32, {4});
  Status s = Validator("op").dtype_in(t, "x", {DType::bf16, DType::f16}).status();
  EXPECT_EQ(s.code(), StatusCode::invalid_argument);
  EXPECT_EQ(s.message(), "op: x: expected dtype bf16 or f16, got f32");
}

TEST(Validate, FirstFailureWins) {
  float buf[4];
  auto t = TensorView::contiguous(buf, DType::f32, {2, 2});
  Status s = Validator("op").rank(t, "a", 3).rank(t, "b", 1).status();
  EXPECT_NE(s.message().find("a:"), std::string::npos) << s.message();
}

TEST(Validate, OverlapDisjointAndInterleavedRows) {
  std::vector<uint16_t> qkv(8 * 48);
  // q = columns [0, 32), k = [32, 40), v = [40, 48) of a [8, 48] buffer.
  TensorView q = TensorView::contiguous(qkv.data(), DType::bf16, {8, 32});
  q.stride[0] = 48;
  TensorView k = TensorView::contiguous(qkv.data() + 32, DType::bf16, {8, 8});
  k.stride[0] = 48;
  TensorView v = TensorView::contiguous(qkv.data() + 40, DType::bf16, {8, 8});
  v.stride[0] = 48;
  EXPECT_FALSE(detail::views_may_overlap(q, k));
  EXPECT_FALSE(detail::views_may_overlap(k, v));
  TensorView k_wide = k;
  k_wide.shape[1] = 9;  // one column into v
  EXPECT_TRUE(detail::views_may_overlap(k_wide, v));
  EXPECT_TRUE(detail::views_may_overlap(q, q));
  EXPECT_TRUE(detail::views_identical(q, q));
}

TEST(Validate, ResolveBackendDeviceMismatch) {
  float buf[4];
  auto host = TensorView::contiguous(buf, DType::f32, {4});
  auto dev = TensorView::contiguous(buf, DType::f32, {4}, Device::cuda);
  ExecContext ctx;
  Backend b;
  ASSERT_TRUE(detail::resolve_backend("op", ctx, {{"x", &host}}, &b).ok());
  EXPECT_EQ(b, Backend::reference);
  ASSERT_TRUE(detail::resolve_backend("op", ctx, {{"x", &dev}}, &b).ok());
  EXPECT_EQ(b, Backend::cuda);
  ctx.backend = Backend::reference;
  TEJAS_EXPECT_INVALID(detail::resolve_backend("op", ctx, {{"x", &host}, {"y", &dev}}, &b), "y:");
  ctx.backend = Backend::emulator;
  ctx.emulated_arch = 75;
  TEJAS_EXPECT_INVALID(detail::resolve_backend("op", ctx, {{"x", &host}}, &b), "emulated_arch");
}

TEST(Validate, DistinctElements) {
  float buf[64];
  auto t = TensorView::contiguous(buf, DType::f32, {4, 8});
  EXPECT_TRUE(detail::elements_distinct(t));
  t.stride[0] = 0;  // every row the same memory
  EXPECT_FALSE(detail::elements_distinct(t));
  TEJAS_EXPECT_INVALID(Validator("op").distinct_elements(t, "out").status(), "out:");
  t.stride[0] = 4;  // rows overlap by half
  EXPECT_FALSE(detail::elements_distinct(t));
  t.stride[0] = 9;  // padded rows: fine
  EXPECT_TRUE(detail::elements_distinct(t));
}

// Views whose sizes or strides overflow int64 arithmetic (numel, byte_extent, the overlap checks)
// are rejected by `defined`, naming the argument; views at the bound, and empty views of any other
// size, pass. Never dereferenced: validation reads only the view.
TEST(Validate, ExtentPastTwoToThe56Rejected) {
  float buf[4];
  const auto check = [&](std::vector<int64_t> shape, std::vector<int64_t> stride) {
    TensorView t = TensorView::contiguous(buf, DType::f32, static_cast<int>(shape.size()), shape.data());
    for (size_t d = 0; d < stride.size(); ++d) t.stride[d] = stride[d];
    return Validator("op").defined(t, "x").status();
  };
  constexpr int64_t k28 = int64_t{1} << 28, k32 = int64_t{1} << 32, k56 = int64_t{1} << 56;
  // Rejected: a product that wraps to 0 (numel would say empty), one just past 2^56, strides
  // whose offsets pass 2^56 either way, offsets that pass it only summed over dimensions.
  for (const auto& [shape, stride] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{k32, k32}, {k32, 1}},
           {{k28, k28, 2}, {2 * k28, 2, 1}},
           {{2, 3}, {k56 + 1, 1}},
           {{2, 3}, {-(k56 + 1), 1}},
           {{3, 3}, {std::numeric_limits<int64_t>::max() / 2, 1}},
           {{2, 2, 2}, {k56 / 2 + 1, k56 / 2 + 1, 1}},
           // An empty view's other sizes, and a size-1 dimension's stride, bounded too.
           {{k32, k32, 0}, {1, 1, 1}},
           {{0, std::numeric_limits<int64_t>::max()}, {1, 1}},
           {{1, 4}, {k56 + 1, 1}}}) {
    const Status s = check(shape, stride);
    EXPECT_EQ(s.code(), StatusCode::invalid_argument) << ::testing::PrintToString(shape);
    EXPECT_EQ(s.message().rfind("op: x: expected an element count and element offsets of at most 2^56, got f32[", 0),
              0u)
        << s.message();
  }
  EXPECT_TRUE(check({k28, k28}, {k28, 1}).ok()) << "2^56 elements: at the bound";
  EXPECT_TRUE(check({2, 3}, {k56 - 2, 1}).ok()) << "a last offset of 2^56: at the bound";
  EXPECT_TRUE(check({2, 3}, {-k56, 1}).ok()) << "a first offset of -2^56: at the bound";
  EXPECT_FALSE(check({2, 3}, {k56 - 1, 1}).ok()) << "a last offset of 2^56 + 1";
  EXPECT_TRUE(check({0, k56}, {k56, 1}).ok()) << "no elements, sizes and strides at the bound";
  EXPECT_TRUE(check({1, 4}, {k56, 1}).ok()) << "a size-1 dimension's stride at the bound";
  EXPECT_TRUE(check({4, 3}, {0, 1}).ok()) << "a broadcast (stride 0) dimension";
}

// defined's other rules: a null pointer (absent), a rank outside 0..kMaxDims, a negative size.
TEST(Validate, DefinedRejectsAbsentBadRankAndNegativeSizes) {
  float buf[4];
  TensorView t = TensorView::contiguous(buf, DType::f32, {2, 2});
  const auto message = [](const TensorView& v) { return Validator("op").defined(v, "x").status().message(); };
  TensorView absent = t, deep = t, negative_rank = t, negative = t;
  absent.data = nullptr;
  deep.ndim = kMaxDims + 1;
  negative_rank.ndim = -1;
  negative.shape[1] = -2;
  EXPECT_EQ(message(absent), "op: x: expected a tensor, got none (null data)");
  EXPECT_EQ(message(deep), "op: x: expected 0..6 dimensions, got 7");
  EXPECT_EQ(message(negative_rank), "op: x: expected 0..6 dimensions, got -1");
  EXPECT_EQ(message(negative), "op: x: expected non-negative sizes, got shape [2, -2]");
  EXPECT_TRUE(Validator("op").defined(t, "x").ok());
  // A view that failed validation may reach a message through describe / shape_string: only its
  // stored dimensions are read, the bad rank said.
  EXPECT_EQ(deep.describe(), "f32[2, 2, 0, 0, 0, 0] stride [2, 1, 0, 0, 0, 0] cpu (ndim 7)");
  EXPECT_EQ(detail::shape_string(negative_rank), "[] (ndim -1)");
}

// An empty view (a size of 0) is present whatever its data: PyTorch and DLPack hand empty tensors
// over with a null pointer. Null data on a view with elements, or on a default view (a scalar's
// rank), is absent. The rules apply to a present empty view as to any other.
TEST(Validate, EmptyViewWithNullDataIsPresent) {
  const auto message = [](const Validator& v) { return v.status().message(); };
  const TensorView empty = TensorView::contiguous(nullptr, DType::bf16, {0, 4096});
  const TensorView middle = TensorView::contiguous(nullptr, DType::f32, {3, 0, 5});
  EXPECT_TRUE(empty.defined() && empty.has_zero_size());
  EXPECT_TRUE(middle.defined() && middle.has_zero_size());
  EXPECT_TRUE(Validator("op").defined(empty, "x").defined(middle, "y").ok());
  EXPECT_FALSE(TensorView{}.defined()) << "a default view: absent";
  EXPECT_FALSE(TensorView::contiguous(nullptr, DType::bf16, {2, 4096}).defined()) << "elements, no data: absent";
  EXPECT_EQ(message(Validator("op").defined(TensorView::contiguous(nullptr, DType::bf16, {1}), "x")),
            "op: x: expected a tensor, got none (null data)");
  // Checked like any view: dtype, rank, shape.
  EXPECT_EQ(message(Validator("op").dtype_in(empty, "x", {DType::f16})), "op: x: expected dtype f16, got bf16");
  EXPECT_EQ(message(Validator("op").rank(empty, "x", 3)), "op: x: expected 3 dimensions, got 2 (shape [0, 4096])");
  EXPECT_FALSE(Validator("op").dim_eq(empty, "x", 1, 4095, "w's H").ok());
  // No bytes: overlaps nothing, not even another null view; the same view is identical (in place).
  EXPECT_TRUE(Validator("op").no_overlap(empty, "out", middle, "x").no_overlap(empty, "out", empty, "x").ok());
  EXPECT_TRUE(detail::views_identical(empty, empty));
  // A hostile rank: only the stored sizes are read (a 0 there makes the view present, and
  // defined names the rank); a negative rank holds none, so null data is absent.
  TensorView deep = empty, negative = empty;
  deep.ndim = kMaxDims + 3;
  negative.ndim = -1;
  EXPECT_TRUE(deep.defined());
  EXPECT_EQ(message(Validator("op").defined(deep, "x")), "op: x: expected 0..6 dimensions, got 9");
  EXPECT_FALSE(negative.defined());
}

// Through a public op: a hostile x whose element count wraps to 0 is rejected before any work
// (not run as an empty call), the output untouched.
TEST(Validate, OpRejectsWrappingViews) {
  check::HostTensor x(DType::bf16, {2, 8}), w(DType::bf16, {8}), out(DType::bf16, {2, 8});
  TensorView hostile = x.view();
  hostile.shape[0] = int64_t{1} << 32;
  hostile.shape[1] = int64_t{1} << 32;
  hostile.stride[0] = int64_t{1} << 32;
  TensorView big_out = out.view(), big_w = w.view();
  big_out.shape[0] = hostile.shape[0];
  big_out.shape[1] = hostile.shape[1];
  big_out.stride[0] = hostile.stride[0];
  big_w.shape[0] = hostile.shape[1];
  const uint64_t before = out.bits_flat(0);
  ExecContext ctx;
  ctx.backend = Backend::reference;
  const Status s = rms_norm(ctx, hostile, big_w, 1e-6, big_out);
  EXPECT_EQ(s.code(), StatusCode::invalid_argument);
  EXPECT_EQ(s.message().rfind("rms_norm: x: expected an element count", 0), 0u) << s.message();
  EXPECT_EQ(out.bits_flat(0), before);
}

TEST(Validate, ElementAligned) {
  alignas(8) uint8_t buf[64];
  auto t = TensorView::contiguous(buf + 2, DType::f32, {4});
  TEJAS_EXPECT_INVALID(Validator("op").element_aligned(t, "x").status(), "x:");
  auto u = TensorView::contiguous(buf + 1, DType::e4m3, {4});
  EXPECT_TRUE(Validator("op").element_aligned(u, "q").ok());
}

TEST(HostTensor, CopyOwnsItsStorage) {
  tejas::check::HostTensor a(DType::f32, {2, 3}, 1);
  a.set({1, 2}, 5.0);
  tejas::check::HostTensor b = a;
  EXPECT_NE(b.view().data, a.view().data);
  b.set({1, 2}, 7.0);
  EXPECT_EQ(a.get({1, 2}), 5.0);
  EXPECT_EQ(b.get({1, 2}), 7.0);
  EXPECT_TRUE(b.guards_intact());
  a = b;
  EXPECT_EQ(a.get({1, 2}), 7.0);
  EXPECT_NE(a.view().data, b.view().data);
}

// Kernels pick vector widths from addresses, and tests count sectors: a payload placed wherever
// the heap put it made both depend on the allocator. Every payload starts on 256 bytes (as
// cudaMalloc's does), copies and moves included, and padding bytes survive a copy.
TEST(HostTensor, PayloadStartsOn256Bytes) {
  std::vector<tejas::check::HostTensor> ts;
  for (int64_t n = 1; n <= 40; n += 3) ts.emplace_back(DType::bf16, std::vector<int64_t>{n}, n % 2);
  for (const auto& t : ts) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.view().data) % 256, 0u);
    EXPECT_TRUE(t.guards_intact());
    tejas::check::HostTensor c = t;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(c.view().data) % 256, 0u);
    EXPECT_TRUE(c.guards_intact());
    EXPECT_TRUE(c.padding_intact());
    tejas::check::HostTensor m = std::move(c);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(m.view().data) % 256, 0u);
    EXPECT_TRUE(m.guards_intact());
  }
}

// A moved-from tensor is empty (copying it gives another empty one, not a read of freed
// storage); a copy keeps a view moved off the payload start (misaligned views stay misaligned).
TEST(HostTensor, MovedFromIsEmptyAndCopiesKeepTheViewOffset) {
  tejas::check::HostTensor a(DType::f32, {4, 4}, 1);
  tejas::check::HostTensor b = std::move(a);
  EXPECT_EQ(a.view().data, nullptr);  // NOLINT(bugprone-use-after-move): the state is the point
  const tejas::check::HostTensor c = a;
  EXPECT_EQ(c.view().data, nullptr);
  ASSERT_NE(b.view().data, nullptr);
  EXPECT_TRUE(b.guards_intact());

  b.view().data = static_cast<char*>(b.view().data) + 4;  // one f32 in: off the 256-byte start
  b.set({2, 3}, 3.0);
  const tejas::check::HostTensor d = b;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(d.view().data) % 256, 4u);
  EXPECT_EQ(d.get({2, 3}), 3.0);
  EXPECT_TRUE(d.guards_intact());
  tejas::check::HostTensor e;
  e = std::move(b);
  EXPECT_EQ(e.get({2, 3}), 3.0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(e.view().data) % 256, 4u);
}

// ue8m0 is unsigned (code = biased exponent, 0xFF NaN): neighbouring codes are one apart and
// 0x00 / 0x80 (2^-127 / 2^1) are 128 apart, not the 0 a sign-magnitude reading gives. The float
// formats keep their sign-magnitude line; integers count values.
TEST(HostTensor, UlpDistanceOrdersEachFormat) {
  using tejas::check::ulp_distance;
  constexpr int64_t kHuge = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(ulp_distance(DType::ue8m0, 0x7F, 0x80), 1);
  EXPECT_EQ(ulp_distance(DType::ue8m0, 0x00, 0x80), 128);
  EXPECT_EQ(ulp_distance(DType::ue8m0, 0x80, 0x00), 128);
  EXPECT_EQ(ulp_distance(DType::ue8m0, 0x00, 0xFE), 254);
  EXPECT_EQ(ulp_distance(DType::ue8m0, 0x85, 0x85), 0);
  EXPECT_EQ(ulp_distance(DType::ue8m0, 0xFF, 0x7F), kHuge);  // NaN
  EXPECT_EQ(ulp_distance(DType::ue8m0, 0xFF, 0xFF), kHuge);
  EXPECT_EQ(ulp_distance(DType::u8, 0x00, 0xC8), 200);
  EXPECT_EQ(ulp_distance(DType::i8, 0xFF, 0x01), 2);     // -1 .. 1
  EXPECT_EQ(ulp_distance(DType::i8, 0x80, 0x7F), 255);   // -128 .. 127
  EXPECT_EQ(ulp_distance(DType::i32, 0xFFFFFFFFu, 0x0), 1);
  EXPECT_EQ(ulp_distance(DType::e4m3, 0x00, 0x80), 0);   // +0, -0
  EXPECT_EQ(ulp_distance(DType::e4m3, 0x01, 0x81), 2);   // smallest subnormals of both signs
  EXPECT_EQ(ulp_distance(DType::e4m3, 0x7E, 0x7D), 1);
  EXPECT_EQ(ulp_distance(DType::e4m3, 0x7F, 0x7E), kHuge);  // NaN
  EXPECT_EQ(ulp_distance(DType::e2m1, 0x1, 0x9), 2);     // +-0.5
  EXPECT_EQ(ulp_distance(DType::bf16, 0x3F80, 0x3F81), 1);
  EXPECT_EQ(ulp_distance(DType::bf16, 0xBF80, 0x3F80), 2 * 0x3F80);
}

// The poison byte is per thread and scoped; tensors keep the byte they were made with (copies
// too), and padding_intact() checks against it.
TEST(HostTensor, ScopedPoisonFillsNewTensors) {
  using tejas::check::HostTensor;
  using tejas::check::ScopedPoison;
  EXPECT_EQ(tejas::check::current_poison(), tejas::check::kDefaultPoison);
  HostTensor before(DType::ue8m0, {3}, 1);
  {
    const ScopedPoison zero(0x00);
    const ScopedPoison inner(0x55);
    HostTensor scales(DType::ue8m0, {3}, 1), codes(DType::e2m1, {2, 4}, 2), f(DType::f32, {2});
    EXPECT_EQ(scales.poison_byte(), 0x55);
    EXPECT_EQ(scales.bits_flat(2), 0x55u);
    EXPECT_EQ(codes.bits_flat(5), 0x5u);
    EXPECT_EQ(codes.poison_code(), 0x5u);
    EXPECT_EQ(f.bits_flat(1), 0x55555555u);
    EXPECT_TRUE(std::isfinite(f.get_flat(1)));
    EXPECT_TRUE(codes.padding_intact());
    const HostTensor copy = codes;
    EXPECT_EQ(copy.poison_byte(), 0x55);
    EXPECT_TRUE(copy.padding_intact());
    static_cast<uint8_t*>(codes.view().data)[2] = 0xF5;  // the padding's high nibble of row 0
    EXPECT_FALSE(codes.padding_intact());
  }
  EXPECT_EQ(tejas::check::current_poison(), tejas::check::kDefaultPoison);
  EXPECT_EQ(before.bits_flat(0), 0xFFu);
  EXPECT_TRUE(before.padding_intact());
  HostTensor after(DType::e2m1, {2});
  EXPECT_EQ(after.bits_flat(1), 0xFu);  // -6: why 0xFF is no NaN poison for fp4
}

// A rule's message (or dim_eq's why) built from values is a callable, run only when the rule
// fails: a passing call builds no string (every op validates on every call).
TEST(Validate, MessagesAreBuiltOnlyWhenARuleFails) {
  float buf[6];
  const auto t = TensorView::contiguous(buf, DType::f32, {2, 3});
  int built = 0;
  auto message = [&] {
    ++built;
    return std::string("x: expected ") + std::to_string(3);
  };
  Validator pass("op");
  pass.require(true, message).dim_eq(t, "t", 1, 3, [&] {
    ++built;
    return std::string("why");
  });
  EXPECT_TRUE(pass.ok());
  EXPECT_EQ(built, 0) << "a passing rule built its message";

  Validator fail("op");
  fail.require(false, message).require(false, message);
  EXPECT_EQ(built, 1) << "only the first failure's message is built";
  EXPECT_EQ(fail.status().message(), "op: x: expected 3");

  Validator dim("op");
  dim.dim_eq(t, "t", 1, 4, [] { return std::string("a lazily named reason"); });
  EXPECT_EQ(dim.status().message(),
            "op: t: expected dim 1 = 4 (a lazily named reason), got 3 (shape [2, 3])");
  Validator dim_missing("op");
  dim_missing.dim_eq(t, "t", 2, 1, [] { return std::string("r"); });
  EXPECT_EQ(dim_missing.status().message(), "op: t: expected a dimension 2");
}

// no_overlap_each answers as the pairwise no_overlap loop (outputs outer), the first failing
// pair's message included, on random views of one buffer: overlapping, disjoint, interleaved
// rows, empty and absent views.
TEST(Validate, NoOverlapEachMatchesThePairwiseRule) {
  TEJAS_SEEDED_TEST_RNG();
  std::vector<uint16_t> buf(4096);
  auto random_view = [&](int which) {
    TensorView v;
    const int kind = static_cast<int>(rng.randint(0, 9));
    if (kind == 0) return v;  // absent
    const int64_t rows = kind == 1 ? 0 : rng.randint(1, 6), cols = rng.randint(1, 24);
    const int64_t stride = cols + rng.randint(0, 24);
    const int64_t start = rng.randint(0, 4096 - 6 * 48);
    v = TensorView::contiguous(buf.data() + start, which % 2 ? DType::bf16 : DType::f16, {rows, cols});
    v.stride[0] = stride;
    return v;
  };
  const char* names[] = {"o0", "o1", "o2", "i0", "i1", "i2", "i3"};
  for (int iter = 0; iter < 2000; ++iter) {
    TensorView t[7];
    for (int i = 0; i < 7; ++i) t[i] = random_view(i);
    Validator pairwise("op");
    for (int o = 0; o < 3; ++o)
      for (int i = 3; i < 7; ++i) pairwise.no_overlap(t[o], names[o], t[i], names[i]);
    Validator each("op");
    each.no_overlap_each({{names[0], &t[0]}, {names[1], &t[1]}, {names[2], &t[2]}},
                         {{names[3], &t[3]}, {names[4], &t[4]}, {names[5], &t[5]}, {names[6], &t[6]}});
    ASSERT_EQ(each.status().message(), pairwise.status().message()) << "iteration " << iter;
  }
}

// views_may_overlap against the bytes themselves: random strided views of one buffer (rows of
// 16-bit or 8-bit elements, with gaps, some empty); whenever two views share a byte the rule must
// say so, and views whose byte ranges are apart (touching included) must be told apart.
TEST(Validate, MayOverlapNeverMissesASharedByte) {
  TEJAS_SEEDED_TEST_RNG();
  std::vector<uint8_t> buf(2048);
  auto random_view = [&] {
    const bool wide = rng.randint(0, 1) == 1;
    const int64_t rows = rng.randint(0, 4), cols = rng.randint(1, 12), stride = cols + rng.randint(0, 12);
    const int64_t start = rng.randint(0, 512);
    TensorView v = TensorView::contiguous(buf.data() + start, wide ? DType::bf16 : DType::u8, {rows, cols});
    v.stride[0] = stride;
    return v;
  };
  auto bytes_of = [&](const TensorView& v) {
    std::vector<bool> used(buf.size(), false);
    const int64_t width = dtype_bits(v.dtype) / 8;
    const auto base = static_cast<const uint8_t*>(v.data) - buf.data();
    for (int64_t r = 0; r < v.shape[0]; ++r)
      for (int64_t c = 0; c < v.shape[1]; ++c)
        for (int64_t b = 0; b < width; ++b) used[static_cast<size_t>(base + (r * v.stride[0] + c) * width + b)] = true;
    return used;
  };
  int shared = 0, apart = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    const TensorView a = random_view(), b = random_view();
    const std::vector<bool> ua = bytes_of(a), ub = bytes_of(b);
    size_t first_a = buf.size(), last_a = 0, first_b = buf.size(), last_b = 0;
    bool common = false;
    for (size_t i = 0; i < buf.size(); ++i) {
      common = common || (ua[i] && ub[i]);
      if (ua[i]) first_a = std::min(first_a, i), last_a = i;
      if (ub[i]) first_b = std::min(first_b, i), last_b = i;
    }
    const bool ranges_apart = first_a == buf.size() || first_b == buf.size() || last_a < first_b || last_b < first_a;
    if (common) {
      ++shared;
      EXPECT_TRUE(detail::views_may_overlap(a, b)) << a.describe() << " and " << b.describe() << ", iteration " << iter;
    }
    if (ranges_apart) {
      ++apart;
      EXPECT_FALSE(detail::views_may_overlap(a, b)) << a.describe() << " and " << b.describe() << ", iteration " << iter;
    }
  }
  EXPECT_GT(shared, 100) << "too few overlapping pairs drawn to test the rule";
  EXPECT_GT(apart, 100) << "too few separate pairs drawn to test the rule";
}

// current_cuda_device: the runtime's answer, -1 where there is none (no GPU, host-only build);
// ScopedAssumedDevice overrides it for its scope, nested scopes restoring the outer one.
TEST(Validate, CurrentDeviceIsAskedOrAssumed) {
  Status error;
  const int real = detail::current_cuda_device(&error);
  EXPECT_TRUE(error.ok()) << error.to_string();  // no GPU here is not an error
  EXPECT_EQ(real >= 0, check::cuda_available());
  EXPECT_EQ(check::current_device_index(), real >= 0 ? real : 0);
  {
    const detail::ScopedAssumedDevice a(3);
    EXPECT_EQ(detail::current_cuda_device(), 3);
    {
      const detail::ScopedAssumedDevice b(-1);  // "cannot be asked": no device check
      EXPECT_EQ(detail::current_cuda_device(), -1);
    }
    EXPECT_EQ(detail::current_cuda_device(), 3);
  }
  EXPECT_EQ(detail::current_cuda_device(), real);
}

// resolve_backend's device rule names the first tensor off the current device; tensors absent,
// or a current device that cannot be asked, are not checked; the other backends take host
// tensors and never ask.
TEST(Validate, CudaBackendWantsTheCurrentDevice) {
  float buf[4] = {};
  TensorView on0 = TensorView::contiguous(buf, DType::f32, {4}, Device::cuda, 0);
  TensorView on2 = on0;
  on2.device_index = 2;
  const TensorView absent;
  ExecContext ctx;
  Backend b = Backend::reference;
  const detail::ScopedAssumedDevice assumed(0);
  EXPECT_TRUE(detail::resolve_backend("op", ctx, {{"x", &on0}, {"y", &absent}}, &b).ok());
  EXPECT_EQ(b, Backend::cuda);
  const Status s = detail::resolve_backend("op", ctx, {{"x", &on0}, {"y", &absent}, {"z", &on2}}, &b);
  EXPECT_EQ(s.code(), StatusCode::invalid_argument);
  EXPECT_EQ(s.message(),
            "op: z: expected a tensor on the current CUDA device (cuda:0), got cuda:2 (its device_index); make that "
            "device current first (cudaSetDevice, or the framework's device guard)");
  {
    const detail::ScopedAssumedDevice unknown(-1);
    EXPECT_TRUE(detail::resolve_backend("op", ctx, {{"z", &on2}}, &b).ok());
  }
  const detail::ScopedAssumedDevice two(2);
  // An absent tensor's device_index (0 here) is not asked about; an empty one's is.
  EXPECT_TRUE(detail::resolve_backend("op", ctx, {{"z", &on2}, {"y", &absent}}, &b).ok());
  TensorView empty0 = TensorView::contiguous(nullptr, DType::f32, {0}, Device::cuda, 0);
  EXPECT_EQ(detail::resolve_backend("op", ctx, {{"z", &on2}, {"e", &empty0}}, &b).code(), StatusCode::invalid_argument);
  TensorView host = TensorView::contiguous(buf, DType::f32, {4});
  host.device_index = 5;  // ignored on the host
  ctx.backend = Backend::emulator;
  EXPECT_TRUE(detail::resolve_backend("op", ctx, {{"x", &host}}, &b).ok());
}
