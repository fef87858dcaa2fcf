// One test per validation rule of fused_add_rms_norm_quant_fp8_group: invalid_argument, the
// message names the argument, nothing written.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "support/op_snapshots.h"
#include "support/seed.h"
#include "tejas/norm.h"

using namespace tejas;
using check::HostTensor;

namespace {

constexpr int64_t T = 4, H = 256, G = H / kNormQuantGroup;
constexpr double kEps = 1e-6;

struct Buffers {
  HostTensor x{DType::bf16, {T, H}};
  HostTensor residual{DType::bf16, {T, H}};
  HostTensor weight{DType::bf16, {H}};
  HostTensor q{DType::e4m3, {T, H}};
  HostTensor scales{DType::f32, {T, G}};
  HostTensor spare{DType::bf16, {4 * T * H}};  // room for views with unusual strides
};

struct Args {
  TensorView x, residual, weight, q, scales;
  double eps = kEps;
};

struct Rule {
  const char* name;
  std::function<void(Args&, Buffers&)> break_it;
  const char* needle;
};
void PrintTo(const Rule& rule, std::ostream* os) { *os << rule.name; }

TensorView shifted(const TensorView& t, int64_t bytes) {
  TensorView v = t;
  v.data = static_cast<char*>(t.data) + bytes;
  return v;
}

const std::vector<Rule>& rules() {
  static const std::vector<Rule> kRules = {
      {"XAbsent", [](Args& a, Buffers&) { a.x.data = nullptr; }, "x: expected a tensor"},
      {"ResidualAbsent", [](Args& a, Buffers&) { a.residual.data = nullptr; }, "residual: expected a tensor"},
      {"WeightAbsent", [](Args& a, Buffers&) { a.weight.data = nullptr; }, "weight: expected a tensor"},
      {"QAbsent", [](Args& a, Buffers&) { a.q.data = nullptr; }, "q: expected a tensor"},
      {"ScalesAbsent", [](Args& a, Buffers&) { a.scales.data = nullptr; }, "scales: expected a tensor"},
      {"XDtype", [](Args& a, Buffers&) { a.x.dtype = DType::e4m3; }, "x: expected dtype"},
      {"WeightDtype", [](Args& a, Buffers&) { a.weight.dtype = DType::f16; }, "weight: expected dtype"},
      {"F32XWithBf16Weight", [](Args& a, Buffers&) { a.x.dtype = DType::f32; }, "weight: expected dtype f32"},
      {"ResidualDtype", [](Args& a, Buffers&) { a.residual.dtype = DType::e5m2; }, "residual: expected dtype"},
      {"QDtype", [](Args& a, Buffers&) { a.q.dtype = DType::e5m2; }, "q: expected dtype e4m3"},
      {"ScalesDtype", [](Args& a, Buffers&) { a.scales.dtype = DType::bf16; }, "scales: expected dtype"},
      {"XRank", [](Args& a, Buffers&) { a.x = TensorView::contiguous(a.x.data, DType::bf16, {T * H}); },
       "x: expected 2 dimensions"},
      {"ScalesRank", [](Args& a, Buffers&) { a.scales = TensorView::contiguous(a.scales.data, DType::f32, {T * G}); },
       "scales: expected 2 dimensions"},
      {"QRank",
       [](Args& a, Buffers&) {
         a.q = TensorView::contiguous(a.q.data, DType::e4m3, {T, H, 1});
       },
       "q: expected 2 dimensions"},
      {"ResidualRank",
       [](Args& a, Buffers&) { a.residual = TensorView::contiguous(a.residual.data, DType::bf16, {T * H}); },
       "residual: expected 2 dimensions"},
      {"WeightRank",
       [](Args& a, Buffers&) {
         a.weight = TensorView::contiguous(a.weight.data, DType::bf16, {1, H});
       },
       "weight: expected 1 dimensions"},
      {"NoHidden", [](Args& a, Buffers&) { a.x.shape[1] = a.residual.shape[1] = a.q.shape[1] = a.weight.shape[0] = 0; },
       "x: expected dim 1 >= 1"},
      {"NoTokensScaleRows", [](Args& a, Buffers&) { a.x.shape[0] = a.residual.shape[0] = a.q.shape[0] = 0; },
       "scales: expected shape [0, "},
      {"HiddenNotMultipleOfGroup",
       [](Args& a, Buffers&) { a.x.shape[1] = a.residual.shape[1] = a.q.shape[1] = a.weight.shape[0] = H - 8; },
       "x: expected H a multiple of 128"},
      {"ResidualShape", [](Args& a, Buffers&) { a.residual.shape[0] = T - 1; }, "residual: expected shape"},
      {"QShape", [](Args& a, Buffers&) { a.q.shape[1] = H - 128; }, "q: expected shape"},
      {"WeightShape", [](Args& a, Buffers&) { a.weight.shape[0] = H - 128; }, "weight: expected dim 0 = 256"},
      {"ScalesShape", [](Args& a, Buffers&) { a.scales.shape[1] = G + 1; }, "scales: expected shape"},
      {"XInnerStride",
       [](Args& a, Buffers& b) {
         a.x = TensorView::contiguous(b.spare.view().data, DType::bf16, {T, H});
         a.x.stride[0] = 2 * H;
         a.x.stride[1] = 2;
       },
       "x: expected a contiguous innermost"},
      {"QInnerStride",
       [](Args& a, Buffers& b) {
         a.q = TensorView::contiguous(b.spare.view().data, DType::e4m3, {T, H});
         a.q.stride[0] = 2 * H;
         a.q.stride[1] = 2;
       },
       "q: expected a contiguous innermost"},
      {"WeightInnerStride",
       [](Args& a, Buffers& b) {
         a.weight = TensorView::contiguous(b.spare.view().data, DType::bf16, {H});
         a.weight.stride[0] = 2;
       },
       "weight: expected a contiguous innermost"},
      {"ScalesNegativeStride",
       [](Args& a, Buffers&) {
         a.scales = shifted(a.scales, (T - 1) * G * 4);
         a.scales.stride[0] = -G;
       },
       "scales: expected non-negative strides"},
      {"ResidualMisaligned", [](Args& a, Buffers&) { a.residual = shifted(a.residual, 1); },
       "residual: expected data aligned to 2"},
      {"ScalesMisaligned", [](Args& a, Buffers&) { a.scales = shifted(a.scales, 2); },
       "scales: expected data aligned to 4"},
      {"EpsZero", [](Args& a, Buffers&) { a.eps = 0.0; }, "eps: expected a positive normal f32 value"},
      {"EpsNaN", [](Args& a, Buffers&) { a.eps = std::numeric_limits<double>::quiet_NaN(); },
       "eps: expected a positive normal f32 value"},
      {"EpsNegative", [](Args& a, Buffers&) { a.eps = -1e-6; }, "eps: expected a positive normal f32 value"},
      {"EpsInf", [](Args& a, Buffers&) { a.eps = std::numeric_limits<double>::infinity(); },
       "eps: expected a positive normal f32 value"},
      {"EpsSubnormalInF32", [](Args& a, Buffers&) { a.eps = 1e-40; }, "eps: expected a positive normal f32 value"},
      {"EpsPastF32", [](Args& a, Buffers&) { a.eps = 1e39; }, "eps: expected a positive normal f32 value"},
      {"QOnOtherDevice", [](Args& a, Buffers&) { a.q.device = Device::cuda; }, "q: expected device cpu"},
      {"ScalesOnOtherDevice", [](Args& a, Buffers&) { a.scales.device_index = 1; }, "scales: expected device cpu"},
      {"ResidualSelfOverlap", [](Args& a, Buffers&) { a.residual.stride[0] = 0; },
       "residual: expected every element at its own address"},
      {"QSelfOverlap", [](Args& a, Buffers&) { a.q.stride[0] = H / 2; },
       "q: expected every element at its own address"},
      {"ScalesSelfOverlap", [](Args& a, Buffers&) { a.scales.stride[1] = 0; },
       "scales: expected every element at its own address"},
      {"QOverX", [](Args& a, Buffers&) { a.q.data = a.x.data; }, "q: expected no overlap with x"},
      {"QOverWeight", [](Args& a, Buffers&) { a.weight.data = a.q.data; }, "q: expected no overlap with weight"},
      {"QOverResidual", [](Args& a, Buffers&) { a.q.data = a.residual.data; }, "q: expected no overlap with residual"},
      {"QOverScales", [](Args& a, Buffers&) { a.scales.data = a.q.data; }, "q: expected no overlap with scales"},
      {"ResidualOverX", [](Args& a, Buffers&) { a.residual = a.x; }, "residual: expected no overlap with x"},
      {"ResidualOverWeight", [](Args& a, Buffers&) { a.weight.data = a.residual.data; },
       "residual: expected no overlap with weight"},
      {"ResidualOverScales", [](Args& a, Buffers&) { a.scales.data = a.residual.data; },
       "residual: expected no overlap with scales"},
      {"ScalesOverX", [](Args& a, Buffers&) { a.scales.data = a.x.data; }, "scales: expected no overlap with x"},
      {"ScalesOverWeight", [](Args& a, Buffers&) { a.scales.data = a.weight.data; },
       "scales: expected no overlap with weight"},
      {"HostTensorsOnCudaBackend", [](Args&, Buffers&) {}, "x: expected a cuda tensor"},
  };
  return kRules;
}

class NormQuantValidation : public ::testing::TestWithParam<Rule> {};

TEST_P(NormQuantValidation, RejectedAndNothingWritten) {
  TEJAS_SEEDED_TEST_RNG();
  const Rule& rule = GetParam();
  Buffers b;
  check::fill_normal(b.x, rng);
  check::fill_normal(b.residual, rng);
  check::fill_normal(b.weight, rng);
  Args a{b.x.view(), b.residual.view(), b.weight.view(), b.q.view(), b.scales.view()};
  rule.break_it(a, b);
  ExecContext ctx;
  ctx.backend = std::string(rule.name) == "HostTensorsOnCudaBackend" ? Backend::cuda : Backend::reference;
  const std::vector<const HostTensor*> all = {&b.x, &b.residual, &b.weight, &b.q, &b.scales, &b.spare};
  std::vector<std::vector<uint64_t>> before;
  for (const HostTensor* t : all) before.push_back(optest::bits_of(*t));
  const Status s = fused_add_rms_norm_quant_fp8_group(ctx, a.x, a.residual, a.weight, a.eps, a.q, a.scales);
  TEJAS_EXPECT_INVALID(s, std::string("fused_add_rms_norm_quant_fp8_group: ") + rule.needle);
  for (size_t i = 0; i < all.size(); ++i) EXPECT_TRUE(optest::unchanged(*all[i], before[i])) << "buffer " << i;
}

INSTANTIATE_TEST_SUITE_P(Rules, NormQuantValidation, ::testing::ValuesIn(rules()),
                         [](const ::testing::TestParamInfo<Rule>& info) { return std::string(info.param.name); });

// Positive control: the unbroken arguments, and column-major (MN-major) scales, are accepted.
TEST(NormQuantValidationControl, ValidAndColumnMajorScalesAccepted) {
  TEJAS_SEEDED_TEST_RNG();
  Buffers b;
  check::fill_normal(b.x, rng);
  check::fill_normal(b.residual, rng);
  check::fill_normal(b.weight, rng);
  ExecContext ctx;
  ctx.backend = Backend::reference;
  TEJAS_ASSERT_OK(fused_add_rms_norm_quant_fp8_group(ctx, b.x, b.residual, b.weight, kEps, b.q, b.scales));
  TensorView cm = b.scales.view();  // [T, G] with strides [1, T]
  cm.stride[0] = 1;
  cm.stride[1] = T;
  TEJAS_ASSERT_OK(fused_add_rms_norm_quant_fp8_group(ctx, b.x, b.residual, b.weight, kEps, b.q, cm));
}

}  // namespace
