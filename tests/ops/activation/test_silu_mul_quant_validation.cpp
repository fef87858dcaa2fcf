// One test per validation rule of silu_mul_quant_fp8_group and silu_mul_quant_mx (mxfp4, nvfp4):
// invalid_argument, the message names the argument, and nothing is written.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "support/op_snapshots.h"
#include "support/seed.h"
#include "tejas/activation.h"

using namespace tejas;
using check::HostTensor;

namespace {

constexpr int64_t T = 2, F = 256;
enum Op : int { kFp8 = 1, kMx = 2, kNv = 4, kAll = 7, kFp4 = kMx | kNv };

int64_t groups_of(int op) { return op == kFp8 ? F / 128 : (op == kMx ? F / 32 : F / 16); }

struct Buffers {
  explicit Buffers(int op)
      : q(op == kFp8 ? DType::e4m3 : DType::e2m1, {T, F}),
        scales(op == kFp8 ? DType::f32 : (op == kNv ? DType::e4m3 : DType::ue8m0), {T, groups_of(op)}) {}
  HostTensor x{DType::bf16, {T, 2 * F}};
  HostTensor q, scales;
  HostTensor ts{DType::f32, {1}};
  HostTensor spare{DType::f32, {4 * T * F}};  // room for views with unusual strides
};

struct Args {
  MxFormat format = MxFormat::mxfp4;
  TensorView x, q, scales, ts;
  SiluMulOptions options;
  Backend backend = Backend::reference;
};

struct Rule {
  const char* name;
  int ops;
  std::function<void(Args&, Buffers&)> break_it;
  const char* needle;  // "<argument>: expected"
};
void PrintTo(const Rule& rule, std::ostream* os) { *os << rule.name; }

TensorView shifted(const TensorView& t, int64_t bytes) {
  TensorView v = t;
  v.data = static_cast<char*>(t.data) + bytes;
  return v;
}

const std::vector<Rule>& rules() {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  static const std::vector<Rule> kRules = {
      {"FormatMxfp8", kMx, [](Args& a, Buffers&) { a.format = MxFormat::mxfp8; }, "format: expected mxfp4 or nvfp4"},
      {"XAbsent", kAll, [](Args& a, Buffers&) { a.x.data = nullptr; }, "x: expected a tensor"},
      {"QAbsent", kAll, [](Args& a, Buffers&) { a.q.data = nullptr; }, "q: expected a tensor"},
      {"ScalesAbsent", kAll, [](Args& a, Buffers&) { a.scales.data = nullptr; }, "scales: expected a tensor"},
      {"XDtype", kAll, [](Args& a, Buffers&) { a.x.dtype = DType::f32; }, "x: expected dtype bf16 or f16"},
      {"QDtypeFp8", kFp8, [](Args& a, Buffers&) { a.q.dtype = DType::e5m2; }, "q: expected dtype e4m3"},
      {"QDtypeFp4", kFp4, [](Args& a, Buffers&) { a.q.dtype = DType::e4m3; }, "q: expected dtype e2m1"},
      {"ScalesDtypeFp8", kFp8, [](Args& a, Buffers&) { a.scales.dtype = DType::bf16; },
       "scales: expected dtype f32 or ue8m0"},
      {"ScalesDtypeMx", kMx, [](Args& a, Buffers&) { a.scales.dtype = DType::e4m3; }, "scales: expected dtype ue8m0"},
      {"ScalesDtypeNv", kNv, [](Args& a, Buffers&) { a.scales.dtype = DType::ue8m0; }, "scales: expected dtype e4m3"},
      {"TensorScaleForMx", kMx, [](Args& a, Buffers& b) { a.ts = b.ts.view(); }, "tensor_scale: expected none"},
      {"TensorScaleAbsent", kNv, [](Args& a, Buffers&) { a.ts = TensorView{}; }, "tensor_scale: expected a tensor"},
      {"TensorScaleDtype", kNv, [](Args& a, Buffers&) { a.ts.dtype = DType::i32; }, "tensor_scale: expected dtype f32"},
      {"TensorScaleZero", kNv, [](Args&, Buffers& b) { b.ts.set_flat(0, 0.0); },
       "tensor_scale: expected a value in [2^-64, 2^64]"},
      {"TensorScaleNaN", kNv, [kNaN](Args&, Buffers& b) { b.ts.set_flat(0, kNaN); },
       "tensor_scale: expected a value in [2^-64, 2^64]"},
      // Just outside the range whose reciprocals the kernels need normal (tejas/quant.h).
      {"TensorScaleTooSmall", kNv, [](Args&, Buffers& b) { b.ts.set_flat(0, 0x1p-65); },
       "tensor_scale: expected a value in [2^-64, 2^64]"},
      {"TensorScaleTooLarge", kNv, [](Args&, Buffers& b) { b.ts.set_flat(0, 0x1p65); },
       "tensor_scale: expected a value in [2^-64, 2^64]"},
      {"XRank", kAll, [](Args& a, Buffers&) { a.x = TensorView::contiguous(a.x.data, DType::bf16, {T * 2 * F}); },
       "x: expected 2 dimensions"},
      {"QRank", kAll,
       [](Args& a, Buffers&) {
         a.q.ndim = 3;
         a.q.shape[2] = 1;
         a.q.stride[2] = 1;
       },
       "q: expected 2 dimensions"},
      {"ScalesRank", kAll, [](Args& a, Buffers&) { a.scales.ndim = 1; }, "scales: expected 2 dimensions"},
      {"NoTokensQRows", kAll, [](Args& a, Buffers&) { a.x.shape[0] = 0; }, "q: expected dim 0 = 0 (x's T)"},
      {"OddGateUp", kAll, [](Args& a, Buffers&) { a.x.shape[1] = 2 * F - 1; }, "x: expected an even dim 1"},
      {"FNotGroupMultiple", kAll, [](Args& a, Buffers&) { a.x.shape[1] = 2 * (F - 8); },
       "x: expected dim 1 = 2F with F a multiple of the group size"},
      {"QTokens", kAll, [](Args& a, Buffers&) { a.q.shape[0] = T + 1; }, "q: expected dim 0 = 2"},
      {"QWidth", kAll, [](Args& a, Buffers&) { a.q.shape[1] = F / 2; }, "q: expected dim 1 = 256"},
      {"ScalesTokens", kAll, [](Args& a, Buffers&) { a.scales.shape[0] = 1; }, "scales: expected dim 0 = 2"},
      {"ScalesWidth", kAll, [](Args& a, Buffers&) { a.scales.shape[1] += 1; }, "scales: expected dim 1 ="},
      {"XNegativeStride", kAll,
       [](Args& a, Buffers&) {
         a.x = shifted(a.x, (T - 1) * 2 * F * 2);
         a.x.stride[0] = -2 * F;
       },
       "x: expected non-negative strides"},
      {"QNegativeStride", kAll,
       [](Args& a, Buffers& b) {  // row 0 at byte F of the spare, row 1 before it
         a.q.data = static_cast<char*>(b.spare.view().data) + F;
         a.q.stride[0] = -F;
       },
       "q: expected non-negative strides"},
      {"ScalesNegativeStride", kAll,
       [](Args& a, Buffers& b) {  // row 0 at byte 64 of the spare, row 1 before it
         a.scales.data = static_cast<char*>(b.spare.view().data) + 64;
         a.scales.stride[0] = -a.scales.stride[0];
       },
       "scales: expected non-negative strides"},
      {"TensorScaleShape", kNv, [](Args& a, Buffers&) { a.ts.shape[0] = 2; }, "tensor_scale: expected shape [1]"},
      {"TensorScaleMisaligned", kNv, [](Args& a, Buffers&) { a.ts = shifted(a.ts, 2); },
       "tensor_scale: expected data aligned to 4"},
      {"XInnerStride", kAll,
       [](Args& a, Buffers& b) {
         a.x.data = b.spare.view().data;
         a.x.stride[0] = 4 * F;
         a.x.stride[1] = 2;
       },
       "x: expected a contiguous innermost"},
      {"QInnerStride", kAll,
       [](Args& a, Buffers& b) {
         a.q.data = b.spare.view().data;
         a.q.stride[0] = 2 * F;
         a.q.stride[1] = 2;
       },
       "q: expected a contiguous innermost"},
      {"ScalesInnerStride", kAll,
       [](Args& a, Buffers& b) {
         a.scales.data = b.spare.view().data;
         a.scales.stride[0] = 64;
         a.scales.stride[1] = 2;
       },
       "scales: expected a contiguous innermost"},
      {"XMisaligned", kAll, [](Args& a, Buffers&) { a.x = shifted(a.x, 1); }, "x: expected data aligned to 2"},
      {"ScalesMisaligned", kFp8, [](Args& a, Buffers&) { a.scales = shifted(a.scales, 2); },
       "scales: expected data aligned to 4"},
      {"QOddRowStrideFp4", kFp4,
       [](Args& a, Buffers& b) {
         a.q.data = b.spare.view().data;
         a.q.stride[0] = F + 1;
       },
       "q: expected an even row stride"},
      {"LimitNaN", kAll,
       [kNaN](Args& a, Buffers&) {
         a.options.clamped = true;
         a.options.limit = kNaN;
       },
       "options.limit: expected a positive normal f32 value"},
      {"AlphaNotPositive", kAll,
       [](Args& a, Buffers&) {
         a.options.clamped = true;
         a.options.alpha = 0.0;
       },
       "options.alpha: expected a positive normal f32 value"},
      {"QOnOtherDevice", kAll, [](Args& a, Buffers&) { a.q.device = Device::cuda; }, "q: expected device cpu"},
      {"TensorScaleOnOtherDevice", kNv, [](Args& a, Buffers&) { a.ts.device = Device::cuda; },
       "tensor_scale: expected device cpu"},
      {"QSelfOverlap", kAll, [](Args& a, Buffers&) { a.q.stride[0] = 0; },
       "q: expected every element at its own address"},
      {"ScalesSelfOverlap", kAll, [](Args& a, Buffers&) { a.scales.stride[0] = 1; },
       "scales: expected every element at its own address"},
      {"QOverX", kAll, [](Args& a, Buffers&) { a.q.data = a.x.data; }, "q: expected no overlap with x"},
      {"ScalesOverX", kAll, [](Args& a, Buffers&) { a.scales.data = a.x.data; }, "scales: expected no overlap with x"},
      {"ScalesOverQ", kAll, [](Args& a, Buffers&) { a.scales.data = a.q.data; }, "scales: expected no overlap with q"},
      {"QOverTensorScale", kNv,
       [](Args& a, Buffers&) {
         a.ts.data = a.q.data;
         a.ts.dtype = DType::f32;
       },
       "q: expected no overlap with tensor_scale"},
      {"ScalesOverTensorScale", kNv, [](Args& a, Buffers&) { a.ts.data = a.scales.data; },
       "scales: expected no overlap with tensor_scale"},
      {"HostTensorsOnCudaBackend", kAll, [](Args& a, Buffers&) { a.backend = Backend::cuda; },
       "x: expected a cuda tensor"},
  };
  return kRules;
}

class SiluMulQuantValidation : public ::testing::TestWithParam<Rule> {};

TEST_P(SiluMulQuantValidation, RejectedAndNothingWritten) {
  TEJAS_SEEDED_TEST_RNG();
  const Rule& rule = GetParam();
  for (int op : {kFp8, kMx, kNv}) {
    if (!(rule.ops & op)) continue;
    const char* name = op == kFp8 ? "silu_mul_quant_fp8_group: " : "silu_mul_quant_mx: ";
    SCOPED_TRACE(::testing::Message() << name << (op == kNv ? "nvfp4" : (op == kMx ? "mxfp4" : "")));
    Buffers b(op);
    check::fill_normal(b.x, rng);
    check::fill_normal(b.spare, rng);
    b.ts.set_flat(0, 0.01);
    Args a{op == kNv ? MxFormat::nvfp4 : MxFormat::mxfp4, b.x.view(), b.q.view(), b.scales.view(),
           op == kNv ? b.ts.view() : TensorView{}, {}, Backend::reference};
    rule.break_it(a, b);
    ExecContext ctx;
    ctx.backend = a.backend;
    const std::vector<const HostTensor*> all = {&b.x, &b.q, &b.scales, &b.ts, &b.spare};
    std::vector<std::vector<uint64_t>> before;
    for (const HostTensor* t : all) before.push_back(optest::bits_of(*t));
    const Status s = op == kFp8 ? silu_mul_quant_fp8_group(ctx, a.x, a.q, a.scales, a.options)
                                : silu_mul_quant_mx(ctx, a.format, a.x, a.q, a.scales, a.ts, a.options);
    TEJAS_EXPECT_INVALID(s, std::string(name) + rule.needle);
    for (size_t i = 0; i < all.size(); ++i) EXPECT_TRUE(optest::unchanged(*all[i], before[i])) << "buffer " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Rules, SiluMulQuantValidation, ::testing::ValuesIn(rules()),
                         [](const ::testing::TestParamInfo<Rule>& info) { return std::string(info.param.name); });

// The control: the unbroken arguments pass on every op (so each rule above fails for its reason).
TEST(SiluMulQuantValidationControl, ValidArgumentsPass) {
  TEJAS_SEEDED_TEST_RNG();
  for (int op : {kFp8, kMx, kNv}) {
    Buffers b(op);
    check::fill_normal(b.x, rng);
    b.ts.set_flat(0, 0.01);
    ExecContext ctx;
    ctx.backend = Backend::reference;
    if (op == kFp8) TEJAS_ASSERT_OK(silu_mul_quant_fp8_group(ctx, b.x, b.q, b.scales));
    else TEJAS_ASSERT_OK(silu_mul_quant_mx(ctx, op == kNv ? MxFormat::nvfp4 : MxFormat::mxfp4, b.x, b.q, b.scales,
                                           op == kNv ? b.ts.view() : TensorView{}));
  }
}

}  // namespace
