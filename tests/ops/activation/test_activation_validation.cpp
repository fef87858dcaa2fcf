// One test per validation rule of silu_mul and gelu_tanh_mul: invalid_argument, the message
// names the argument, and nothing is written.
#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <limits>
#include <string>
#include <vector>

#include "support/op_snapshots.h"
#include "support/seed.h"
#include "tejas/activation.h"

using namespace tejas;
using check::HostTensor;

namespace {

constexpr int64_t T = 4, F = 8;

struct Buffers {
  HostTensor x{DType::f32, {T, 2 * F}};
  HostTensor out{DType::f32, {T, F}};
  HostTensor spare{DType::f32, {4 * T * 2 * F}};  // room for views with unusual strides
};

struct Args {
  TensorView x, out;
  SiluMulOptions options;
  Backend backend = Backend::reference;
};

enum Ops : int { kSilu = 1, kGelu = 2, kBoth = 3 };

struct Rule {
  const char* name;
  int ops;
  std::function<void(Args&, Buffers&)> break_it;
  const char* needle;  // "<argument>: expected"
};

TensorView shifted(const TensorView& t, int64_t bytes) {
  TensorView v = t;
  v.data = static_cast<char*>(t.data) + bytes;
  return v;
}

void clamp_with(Args& a, double limit, double alpha) {
  a.options.clamped = true;
  a.options.limit = limit;
  a.options.alpha = alpha;
}

// gtest prints the rule by name (not as raw bytes) in failure messages.
void PrintTo(const Rule& rule, std::ostream* os) { *os << rule.name; }

const std::vector<Rule>& rules() {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  static const std::vector<Rule> kRules = {
      {"XAbsent", kBoth, [](Args& a, Buffers&) { a.x.data = nullptr; }, "x: expected a tensor"},
      {"OutAbsent", kBoth, [](Args& a, Buffers&) { a.out.data = nullptr; }, "out: expected a tensor"},
      {"XDtype", kBoth, [](Args& a, Buffers&) { a.x.dtype = DType::e4m3; }, "x: expected dtype bf16, f16 or f32"},
      {"OutDtype", kBoth, [](Args& a, Buffers&) { a.out.dtype = DType::bf16; }, "out: expected dtype f32 (as x)"},
      {"XRank", kBoth, [](Args& a, Buffers&) { a.x = TensorView::contiguous(a.x.data, DType::f32, {T * 2 * F}); },
       "x: expected 2 dimensions"},
      {"OutRank", kBoth, [](Args& a, Buffers&) { a.out = TensorView::contiguous(a.out.data, DType::f32, {T, F, 1}); },
       "out: expected 2 dimensions"},
      {"NoTokensOutRows", kBoth, [](Args& a, Buffers&) { a.x.shape[0] = 0; }, "out: expected dim 0 = 0"},  // T = 0 checked
      {"OddGateUp", kBoth, [](Args& a, Buffers&) { a.x.shape[1] = 2 * F - 1; }, "x: expected an even dim 1 >= 2"},
      {"EmptyGateUp", kBoth, [](Args& a, Buffers&) { a.x.shape[1] = a.out.shape[1] = 0; }, "x: expected an even dim 1 >= 2"},
      {"OutTokens", kBoth, [](Args& a, Buffers&) { a.out.shape[0] = T + 1; }, "out: expected dim 0 = 4"},
      {"OutWidth", kBoth, [](Args& a, Buffers&) { a.out.shape[1] = 2 * F; }, "out: expected dim 1 = 8"},
      {"XNegativeStride", kBoth,
       [](Args& a, Buffers&) {
         a.x = shifted(a.x, (T - 1) * 2 * F * 4);
         a.x.stride[0] = -2 * F;
       },
       "x: expected non-negative strides"},
      {"XInnerStride", kBoth,
       [](Args& a, Buffers& b) {
         a.x = TensorView::contiguous(b.spare.view().data, DType::f32, {T, 2 * F});
         a.x.stride[0] = 4 * F;
         a.x.stride[1] = 2;
       },
       "x: expected a contiguous innermost"},
      {"OutInnerStride", kBoth,
       [](Args& a, Buffers& b) {
         a.out = TensorView::contiguous(b.spare.view().data, DType::f32, {T, F});
         a.out.stride[0] = 2 * F;
         a.out.stride[1] = 2;
       },
       "out: expected a contiguous innermost"},
      {"XMisaligned", kBoth, [](Args& a, Buffers&) { a.x = shifted(a.x, 2); }, "x: expected data aligned to 4"},
      {"OutMisaligned", kBoth, [](Args& a, Buffers&) { a.out = shifted(a.out, 1); }, "out: expected data aligned to 4"},
      {"LimitNotPositive", kSilu, [](Args& a, Buffers&) { clamp_with(a, 0.0, 1.702); }, "options.limit: expected a positive normal f32 value"},
      {"LimitNaN", kSilu, [kNaN](Args& a, Buffers&) { clamp_with(a, kNaN, 1.702); }, "options.limit: expected a positive normal f32 value"},
      {"LimitInf", kSilu, [kInf](Args& a, Buffers&) { clamp_with(a, kInf, 1.702); }, "options.limit: expected a positive normal f32 value"},
      {"AlphaNotPositive", kSilu, [](Args& a, Buffers&) { clamp_with(a, 7.0, -1.0); }, "options.alpha: expected a positive normal f32 value"},
      {"AlphaNaN", kSilu, [kNaN](Args& a, Buffers&) { clamp_with(a, 7.0, kNaN); }, "options.alpha: expected a positive normal f32 value"},
      // Finite doubles that f32 turns into Inf (alpha * 0 gate -> NaN) or 0.
      {"AlphaAboveF32", kSilu, [](Args& a, Buffers&) { clamp_with(a, 7.0, 1e39); }, "options.alpha: expected a positive normal f32 value"},
      {"LimitBelowF32", kSilu, [](Args& a, Buffers&) { clamp_with(a, 1e-39, 1.702); }, "options.limit: expected a positive normal f32 value"},
      {"OutOnOtherDevice", kBoth, [](Args& a, Buffers&) { a.out.device = Device::cuda; }, "out: expected device cpu"},
      {"OutSelfOverlap", kBoth, [](Args& a, Buffers&) { a.out.stride[0] = F - 1; },
       "out: expected every element at its own address"},
      {"OutOverGate", kBoth, [](Args& a, Buffers&) { a.out.data = a.x.data; a.out.stride[0] = 2 * F; },
       "out: expected no overlap with x"},
      {"OutOverUp", kBoth,
       [](Args& a, Buffers&) {
         a.out = shifted(a.x, F * 4);
         a.out.shape[1] = F;
       },
       "out: expected no overlap with x"},
      {"HostTensorsOnCudaBackend", kBoth, [](Args& a, Buffers&) { a.backend = Backend::cuda; }, "x: expected a cuda tensor"},
  };
  return kRules;
}

class ActivationValidation : public ::testing::TestWithParam<Rule> {};

TEST_P(ActivationValidation, RejectedAndNothingWritten) {
  TEJAS_SEEDED_TEST_RNG();
  const Rule& rule = GetParam();
  for (int op : {kSilu, kGelu}) {
    if (!(rule.ops & op)) continue;
    SCOPED_TRACE(op == kSilu ? "silu_mul" : "gelu_tanh_mul");
    Buffers b;
    check::fill_normal(b.x, rng);
    check::fill_normal(b.spare, rng);
    Args a{b.x.view(), b.out.view(), {}};
    rule.break_it(a, b);
    ExecContext ctx;
    ctx.backend = a.backend;
    const std::vector<const HostTensor*> all = {&b.x, &b.out, &b.spare};
    std::vector<std::vector<uint64_t>> before;
    for (const HostTensor* t : all) before.push_back(optest::bits_of(*t));
    const Status s = op == kSilu ? silu_mul(ctx, a.x, a.out, a.options) : gelu_tanh_mul(ctx, a.x, a.out);
    TEJAS_EXPECT_INVALID(s, std::string(op == kSilu ? "silu_mul: " : "gelu_tanh_mul: ") + rule.needle);
    for (size_t i = 0; i < all.size(); ++i) EXPECT_TRUE(optest::unchanged(*all[i], before[i])) << "buffer " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Rules, ActivationValidation, ::testing::ValuesIn(rules()),
                         [](const ::testing::TestParamInfo<Rule>& info) { return std::string(info.param.name); });

// Unused clamp parameters are not validated when clamped is off.
TEST(ActivationValidationControl, UnclampedIgnoresLimitAndAlpha) {
  TEJAS_SEEDED_TEST_RNG();
  Buffers b;
  check::fill_normal(b.x, rng);
  SiluMulOptions o;
  o.limit = -1.0;
  o.alpha = std::numeric_limits<double>::quiet_NaN();
  ExecContext ctx;
  ctx.backend = Backend::reference;
  TEJAS_ASSERT_OK(silu_mul(ctx, b.x, b.out, o));
}

}  // namespace
