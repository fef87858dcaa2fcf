// One test per validation rule of rms_norm and fused_add_rms_norm: the call returns
// invalid_argument, the message names the argument, and nothing is written.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <ostream>
#include <limits>
#include <string>
#include <vector>

#include "support/op_snapshots.h"
#include "support/seed.h"
#include "tejas/norm.h"

using namespace tejas;
using check::HostTensor;

namespace {

constexpr int64_t T = 4, H = 8;
constexpr double kEps = 1e-6;

// Buffers for one call; every output starts poisoned or random and is snapshotted.
struct Buffers {
  HostTensor x{DType::f32, {T, H}};
  HostTensor residual{DType::f32, {T, H}};
  HostTensor weight{DType::f32, {H}};
  HostTensor out{DType::f32, {T, H}};
  HostTensor out8{DType::e4m3, {T, H}};
  HostTensor scale{DType::f32, {T}};
  HostTensor spare{DType::f32, {4 * T * H}};  // room for views with unusual strides
};

struct Args {
  TensorView x, residual, weight, out;
  double eps = kEps;
  Fp8Scale scale;
};

enum Ops : int { kRms = 1, kFused = 2, kBoth = 3 };

struct Rule {
  const char* name;
  int ops;
  bool fp8;  // start from an e4m3 output with a dynamic scale
  std::function<void(Args&, Buffers&)> break_it;
  const char* needle;  // "<argument>: expected"
};

TensorView shifted(const TensorView& t, int64_t bytes) {
  TensorView v = t;
  v.data = static_cast<char*>(t.data) + bytes;
  return v;
}

// gtest prints the rule by name (not as raw bytes) in failure messages.
void PrintTo(const Rule& rule, std::ostream* os) { *os << rule.name; }

const std::vector<Rule>& rules() {
  static const std::vector<Rule> kRules = {
      {"XAbsent", kBoth, false, [](Args& a, Buffers&) { a.x.data = nullptr; }, "x: expected a tensor"},
      {"ResidualAbsent", kFused, false, [](Args& a, Buffers&) { a.residual.data = nullptr; }, "residual: expected a tensor"},
      {"WeightAbsent", kBoth, false, [](Args& a, Buffers&) { a.weight.data = nullptr; }, "weight: expected a tensor"},
      {"OutAbsent", kBoth, false, [](Args& a, Buffers&) { a.out.data = nullptr; }, "out: expected a tensor"},
      {"XDtype", kBoth, false, [](Args& a, Buffers&) { a.x.dtype = DType::e5m2; }, "x: expected dtype"},
      {"WeightDtype", kBoth, false, [](Args& a, Buffers&) { a.weight.dtype = DType::f16; }, "weight: expected dtype f32"},
      {"ResidualDtype", kFused, false, [](Args& a, Buffers&) { a.residual.dtype = DType::e4m3; }, "residual: expected dtype"},
      {"OutDtype", kBoth, false, [](Args& a, Buffers&) { a.out.dtype = DType::bf16; }, "out: expected dtype f32 or e4m3"},
      {"XRank", kBoth, false, [](Args& a, Buffers&) { a.x = TensorView::contiguous(a.x.data, DType::f32, {T * H}); },
       "x: expected 2 dimensions"},
      {"WeightRank", kBoth, false,
       [](Args& a, Buffers&) { a.weight = TensorView::contiguous(a.weight.data, DType::f32, {1, H}); },
       "weight: expected 1 dimensions"},
      {"ResidualRank", kFused, false,
       [](Args& a, Buffers&) { a.residual = TensorView::contiguous(a.residual.data, DType::f32, {T, H, 1}); },
       "residual: expected 2 dimensions"},
      {"OutRank", kBoth, false, [](Args& a, Buffers&) { a.out = TensorView::contiguous(a.out.data, DType::f32, {T, H, 1}); },
       "out: expected 2 dimensions"},
      {"NoTokensOutRows", kBoth, false,
       [](Args& a, Buffers&) {
         a.x.shape[0] = a.residual.shape[0] = 0;
       },
       "out: expected shape [0, "},
      {"NoHidden", kBoth, false,
       [](Args& a, Buffers&) { a.x.shape[1] = a.out.shape[1] = a.residual.shape[1] = a.weight.shape[0] = 0; },
       "x: expected dim 1 >= 1"},
      {"ResidualShape", kFused, false, [](Args& a, Buffers&) { a.residual.shape[1] = H - 1; }, "residual: expected shape"},
      {"OutShape", kBoth, false, [](Args& a, Buffers&) { a.out.shape[0] = T - 1; }, "out: expected shape"},
      {"WeightShape", kBoth, false, [](Args& a, Buffers&) { a.weight.shape[0] = H - 1; }, "weight: expected dim 0 = 8"},
      {"XNegativeStride", kBoth, false,
       [](Args& a, Buffers&) {
         a.x = shifted(a.x, (T - 1) * H * 4);
         a.x.stride[0] = -H;
       },
       "x: expected non-negative strides"},
      {"XInnerStride", kBoth, false,
       [](Args& a, Buffers& b) {
         a.x = TensorView::contiguous(b.spare.view().data, DType::f32, {T, H});
         a.x.stride[0] = 2 * H;
         a.x.stride[1] = 2;
       },
       "x: expected a contiguous innermost"},
      {"ResidualInnerStride", kFused, false,
       [](Args& a, Buffers& b) {
         a.residual = TensorView::contiguous(b.spare.view().data, DType::f32, {T, H});
         a.residual.stride[0] = 2 * H;
         a.residual.stride[1] = 2;
       },
       "residual: expected a contiguous innermost"},
      {"WeightInnerStride", kBoth, false,
       [](Args& a, Buffers& b) {
         a.weight = TensorView::contiguous(b.spare.view().data, DType::f32, {H});
         a.weight.stride[0] = 3;
       },
       "weight: expected a contiguous innermost"},
      {"OutInnerStride", kBoth, false,
       [](Args& a, Buffers& b) {
         a.out = TensorView::contiguous(b.spare.view().data, DType::f32, {T, H});
         a.out.stride[0] = 2 * H;
         a.out.stride[1] = 2;
       },
       "out: expected a contiguous innermost"},
      {"XMisaligned", kBoth, false, [](Args& a, Buffers&) { a.x = shifted(a.x, 2); }, "x: expected data aligned to 4"},
      {"ResidualMisaligned", kFused, false, [](Args& a, Buffers&) { a.residual = shifted(a.residual, 1); },
       "residual: expected data aligned to 4"},
      {"WeightMisaligned", kBoth, false, [](Args& a, Buffers&) { a.weight = shifted(a.weight, 2); },
       "weight: expected data aligned to 4"},
      {"OutMisaligned", kBoth, false, [](Args& a, Buffers&) { a.out = shifted(a.out, 3); }, "out: expected data aligned to 4"},
      {"EpsNotPositive", kBoth, false, [](Args& a, Buffers&) { a.eps = 0.0; }, "eps: expected a positive normal f32 value"},
      {"EpsNegative", kBoth, false, [](Args& a, Buffers&) { a.eps = -1e-6; }, "eps: expected a positive normal f32 value"},
      {"EpsNaN", kBoth, false, [](Args& a, Buffers&) { a.eps = std::numeric_limits<double>::quiet_NaN(); },
       "eps: expected a positive normal f32 value"},
      {"EpsInf", kBoth, false, [](Args& a, Buffers&) { a.eps = std::numeric_limits<double>::infinity(); },
       "eps: expected a positive normal f32 value"},
      // Finite doubles the kernels' f32 eps cannot hold: one flushes to 0 (0 / 0 rows), one to Inf.
      {"EpsBelowF32", kBoth, false, [](Args& a, Buffers&) { a.eps = 1e-45; }, "eps: expected a positive normal f32 value"},
      {"EpsAboveF32", kBoth, false, [](Args& a, Buffers&) { a.eps = 1e39; }, "eps: expected a positive normal f32 value"},
      {"WeightOnOtherDevice", kBoth, false, [](Args& a, Buffers&) { a.weight.device = Device::cuda; },
       "weight: expected device cpu"},
      {"ResidualOnOtherDevice", kFused, false, [](Args& a, Buffers&) { a.residual.device_index = 1; },
       "residual: expected device cpu"},
      {"OutSelfOverlap", kBoth, false, [](Args& a, Buffers&) { a.out.stride[0] = 0; },
       "out: expected every element at its own address"},
      {"ResidualSelfOverlap", kFused, false, [](Args& a, Buffers&) { a.residual.stride[0] = H / 2; },
       "residual: expected every element at its own address"},
      {"OutPartlyOverX", kBoth, false,
       [](Args& a, Buffers& b) {
         a.x = TensorView::contiguous(b.spare.view().data, DType::f32, {T, H});
         a.out = shifted(a.x, 4);  // one element over: not the exact in-place view
       },
       "out: expected no overlap with x (only the exact same view"},
      {"OutOverWeight", kBoth, false, [](Args& a, Buffers&) { a.weight.data = a.out.data; }, "out: expected no overlap with weight"},
      {"OutOverResidual", kFused, false, [](Args& a, Buffers&) { a.residual = a.out; }, "out: expected no overlap with residual"},
      {"ResidualOverX", kFused, false, [](Args& a, Buffers&) { a.residual = a.x; }, "residual: expected no overlap with x"},
      {"ResidualOverWeight", kFused, false, [](Args& a, Buffers&) { a.weight.data = a.residual.data; },
       "residual: expected no overlap with weight"},
      // FP8 output rules.
      {"ScaleAbsent", kBoth, true, [](Args& a, Buffers&) { a.scale.scale = TensorView{}; }, "out_scale.scale: expected a tensor"},
      {"ScaleDtype", kBoth, true, [](Args& a, Buffers&) { a.scale.scale.dtype = DType::bf16; },
       "out_scale.scale: expected dtype f32"},
      {"ScaleRank", kBoth, true,
       [](Args& a, Buffers&) { a.scale.scale = TensorView::contiguous(a.scale.scale.data, DType::f32, {T, 1}); },
       "out_scale.scale: expected 1 dimensions"},
      {"DynamicScaleShape", kBoth, true, [](Args& a, Buffers&) { a.scale.scale.shape[0] = T - 1; },
       "out_scale.scale: expected dim 0 = 4"},
      {"StaticScaleShape", kBoth, true, [](Args& a, Buffers&) { a.scale.mode = Fp8ScaleMode::static_per_tensor; },
       "out_scale.scale: expected dim 0 = 1"},
      {"ScaleMode", kBoth, true, [](Args& a, Buffers&) { a.scale.mode = static_cast<Fp8ScaleMode>(7); },
       "out_scale.mode: expected"},
      {"ScaleInnerStride", kBoth, true,
       [](Args& a, Buffers& b) {
         a.scale.scale = TensorView::contiguous(b.spare.view().data, DType::f32, {T});
         a.scale.scale.stride[0] = 2;
       },
       "out_scale.scale: expected a contiguous innermost"},
      {"ScaleMisaligned", kBoth, true, [](Args& a, Buffers&) { a.scale.scale = shifted(a.scale.scale, 1); },
       "out_scale.scale: expected data aligned to 4"},
      {"ScaleOnOtherDevice", kBoth, true, [](Args& a, Buffers&) { a.scale.scale.device = Device::cuda; },
       "out_scale.scale: expected device cpu"},
      {"ScaleWithoutFp8Out", kBoth, false, [](Args& a, Buffers& b) { a.scale.scale = b.scale.view(); },
       "out_scale.scale: expected none (out is f32, not e4m3)"},
      {"Fp8OutOverX", kBoth, true, [](Args& a, Buffers&) { a.out.data = a.x.data; }, "out: expected no overlap with x"},
      {"DynamicScaleOverX", kBoth, true, [](Args& a, Buffers&) { a.scale.scale.data = a.x.data; },
       "out_scale.scale: expected no overlap with x"},
      {"DynamicScaleOverWeight", kBoth, true, [](Args& a, Buffers&) { a.scale.scale.data = a.weight.data; },
       "out_scale.scale: expected no overlap with weight"},
      {"StaticScaleUnderOut", kBoth, true,
       [](Args& a, Buffers&) {
         a.scale.mode = Fp8ScaleMode::static_per_tensor;
         a.scale.scale = TensorView::contiguous(a.out.data, DType::f32, {1});
       },
       "out: expected no overlap with out_scale.scale"},
      {"ScaleOverResidual", kFused, true, [](Args& a, Buffers&) { a.scale.scale.data = a.residual.data; },
       "residual: expected no overlap with out_scale.scale"},
      {"HostTensorsOnCudaBackend", kBoth, false, [](Args&, Buffers&) {}, "x: expected a cuda tensor"},
  };
  return kRules;
}

class NormValidation : public ::testing::TestWithParam<Rule> {};

TEST_P(NormValidation, RejectedAndNothingWritten) {
  TEJAS_SEEDED_TEST_RNG();
  const Rule& rule = GetParam();
  for (int op : {kRms, kFused}) {
    if (!(rule.ops & op)) continue;
    SCOPED_TRACE(op == kRms ? "rms_norm" : "fused_add_rms_norm");
    Buffers b;
    check::fill_normal(b.x, rng);
    check::fill_normal(b.residual, rng);
    check::fill_normal(b.weight, rng);
    Args a{b.x.view(), b.residual.view(), b.weight.view(), rule.fp8 ? b.out8.view() : b.out.view(), kEps, {}};
    if (rule.fp8) a.scale.scale = b.scale.view();
    rule.break_it(a, b);
    ExecContext ctx;
    ctx.backend = std::string(rule.name) == "HostTensorsOnCudaBackend" ? Backend::cuda : Backend::reference;
    const std::vector<const HostTensor*> all = {&b.x, &b.residual, &b.weight, &b.out, &b.out8, &b.scale, &b.spare};
    std::vector<std::vector<uint64_t>> before;
    for (const HostTensor* t : all) before.push_back(optest::bits_of(*t));
    const Status s = op == kRms ? rms_norm(ctx, a.x, a.weight, a.eps, a.out, a.scale)
                                : fused_add_rms_norm(ctx, a.x, a.residual, a.weight, a.eps, a.out, a.scale);
    const std::string want = std::string(op == kRms ? "rms_norm: " : "fused_add_rms_norm: ") + rule.needle;
    TEJAS_EXPECT_INVALID(s, want);
    for (size_t i = 0; i < all.size(); ++i) EXPECT_TRUE(optest::unchanged(*all[i], before[i])) << "buffer " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Rules, NormValidation, ::testing::ValuesIn(rules()),
                         [](const ::testing::TestParamInfo<Rule>& info) { return std::string(info.param.name); });

// The documented in-place exception: out may be exactly x (positive control for OutPartlyOverX).
TEST(NormValidationControl, ExactInPlaceAccepted) {
  TEJAS_SEEDED_TEST_RNG();
  Buffers b;
  check::fill_normal(b.x, rng);
  check::fill_normal(b.residual, rng);
  check::fill_normal(b.weight, rng);
  ExecContext ctx;
  ctx.backend = Backend::reference;
  TEJAS_ASSERT_OK(rms_norm(ctx, b.x, b.weight, kEps, b.x));
  TEJAS_ASSERT_OK(fused_add_rms_norm(ctx, b.x, b.residual, b.weight, kEps, b.x));
}

// Inputs may repeat rows (token stride 0): only outputs must be free of self-overlap.
TEST(NormValidationControl, BroadcastInputRowsAccepted) {
  TEJAS_SEEDED_TEST_RNG();
  Buffers b;
  check::fill_normal(b.x, rng);
  check::fill_normal(b.weight, rng);
  TensorView x = b.x.view();
  x.stride[0] = 0;
  ExecContext ctx;
  ctx.backend = Backend::reference;
  TEJAS_ASSERT_OK(rms_norm(ctx, x, b.weight, kEps, b.out));
  for (int64_t h = 0; h < H; ++h) EXPECT_EQ(b.out.get({T - 1, h}), b.out.get({0, h}));
}

}  // namespace
