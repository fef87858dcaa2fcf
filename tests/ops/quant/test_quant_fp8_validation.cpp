// Argument validation of quant_fp8_group and dequant_fp8_group: one test per rule, each run on
// both ops where it applies. A rejected call names the argument and writes nothing.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "ops/quant/reject_check.h"
#include "support/seed.h"
#include "tejas/quant.h"

using namespace tejas;
using namespace tejas::quanttest;

namespace {

constexpr int64_t kM = 4, kK = 256;
constexpr int kGroup = 128;

ExecContext ref_ctx() {
  ExecContext ctx;
  ctx.backend = Backend::reference;
  return ctx;
}

// One valid call (quant or dequant) whose views a test then breaks. `data` is x (an input) for
// quant and out (an output) for dequant; q and scales are outputs for quant, inputs for dequant.
struct Fp8Call {
  explicit Fp8Call(bool is_dequant)
      : dequant(is_dequant),
        data(DType::f32, {kM, kK}),
        q(DType::e4m3, {kM, kK}),
        scales(DType::f32, {kM, kK / kGroup}) {
    check::Rng rng(1);
    if (dequant) {
      check::fill_uniform(q, rng, -4, 4);
      check::fill_uniform(scales, rng, 0.5, 1);
    } else {
      check::fill_normal(data, rng);
    }
    dv = data.view();
    qv = q.view();
    sv = scales.view();
    for (const HostTensor* in : inputs()) snaps.emplace_back(*in);
  }

  Status call(const ExecContext& ctx = ref_ctx()) const {
    return dequant ? dequant_fp8_group(ctx, qv, sv, dv, group) : quant_fp8_group(ctx, dv, qv, sv, group);
  }
  std::string op() const { return dequant ? "dequant_fp8_group" : "quant_fp8_group"; }
  const char* data_name() const { return dequant ? "out" : "x"; }
  std::vector<const HostTensor*> inputs() const {
    return dequant ? std::vector<const HostTensor*>{&q, &scales} : std::vector<const HostTensor*>{&data};
  }

  void expect_rejected(const Status& s, const std::string& arg) const {
    SCOPED_TRACE(op());
    if (dequant) quanttest::expect_rejected(s, op(), arg, {{"out", &data}}, {&snaps[0], &snaps[1]});
    else quanttest::expect_rejected(s, op(), arg, {{"q", &q}, {"scales", &scales}}, {&snaps[0]});
  }

  bool dequant;
  HostTensor data, q, scales;
  TensorView dv, qv, sv;
  int group = kGroup;
  std::vector<Snapshot> snaps;
};

template <class F>
void for_both(F f) {
  for (bool dq : {false, true}) {
    Fp8Call c(dq);
    f(c);
  }
}

}  // namespace

TEST(QuantFp8Validation, ValidCallsSucceed) {
  for_both([](Fp8Call& c) { TEJAS_ASSERT_OK(c.call()); });
}

TEST(QuantFp8Validation, MissingTensor) {
  for_both([](Fp8Call& c) { c.dv.data = nullptr; c.expect_rejected(c.call(), c.data_name()); });
  for_both([](Fp8Call& c) { c.qv.data = nullptr; c.expect_rejected(c.call(), "q"); });
  for_both([](Fp8Call& c) { c.sv.data = nullptr; c.expect_rejected(c.call(), "scales"); });
}

TEST(QuantFp8Validation, DataDtype) {
  for_both([](Fp8Call& c) { c.dv.dtype = DType::f64; c.expect_rejected(c.call(), c.data_name()); });
  for_both([](Fp8Call& c) { c.dv.dtype = DType::e4m3; c.expect_rejected(c.call(), c.data_name()); });
}

TEST(QuantFp8Validation, CodesMustBeE4m3) {
  for_both([](Fp8Call& c) { c.qv.dtype = DType::e5m2; c.expect_rejected(c.call(), "q"); });
}

TEST(QuantFp8Validation, ScalesDtype) {
  for_both([](Fp8Call& c) { c.sv.dtype = DType::bf16; c.expect_rejected(c.call(), "scales"); });
}

TEST(QuantFp8Validation, GroupSizePositive) {
  for_both([](Fp8Call& c) { c.group = 0; c.expect_rejected(c.call(), "group_size"); });
  for_both([](Fp8Call& c) { c.group = -128; c.expect_rejected(c.call(), "group_size"); });
}

TEST(QuantFp8Validation, DataRankAtLeastOne) {
  for_both([](Fp8Call& c) { c.dv.ndim = 0; c.expect_rejected(c.call(), c.data_name()); });
}

TEST(QuantFp8Validation, KMultipleOfGroup) {
  for_both([](Fp8Call& c) {
    c.group = 96;  // 256 % 96 != 0
    c.expect_rejected(c.call(), c.data_name());
  });
}

TEST(QuantFp8Validation, CodesShapeMatchesData) {
  for_both([](Fp8Call& c) { c.qv.shape[1] = kK / 2; c.expect_rejected(c.call(), "q"); });
  for_both([](Fp8Call& c) { c.qv.shape[0] = kM - 1; c.expect_rejected(c.call(), "q"); });
}

TEST(QuantFp8Validation, ScalesShape) {
  for_both([](Fp8Call& c) {  // rank
    c.sv = TensorView::contiguous(c.sv.data, c.sv.dtype, {kM * 2});
    c.expect_rejected(c.call(), "scales");
  });
  for_both([](Fp8Call& c) { c.sv.shape[0] = kM - 1; c.expect_rejected(c.call(), "scales"); });  // leading dim
  for_both([](Fp8Call& c) { c.sv.shape[1] = 1; c.sv.stride[0] = 1; c.expect_rejected(c.call(), "scales"); });
}

TEST(QuantFp8Validation, InnermostContiguous) {
  for_both([](Fp8Call& c) {
    c.dv.shape[1] = kK / 2;  // every other element of the row
    c.dv.stride[1] = 2;
    c.qv.shape[1] = kK / 2;
    c.sv.shape[1] = 1;
    c.sv.stride[0] = 1;
    c.expect_rejected(c.call(), c.data_name());
  });
  for_both([](Fp8Call& c) {
    c.qv.shape[1] = kK / 2;
    c.qv.stride[1] = 2;
    c.dv.shape[1] = kK / 2;
    c.sv.shape[1] = 1;
    c.sv.stride[0] = 1;
    c.expect_rejected(c.call(), "q");
  });
  for_both([](Fp8Call& c) {
    c.sv.shape[0] = kM / 2;  // scales [2, 2] with stride [2, 2]: inside its buffer
    c.sv.stride[1] = 2;
    c.dv.shape[0] = kM / 2;
    c.qv.shape[0] = kM / 2;
    c.expect_rejected(c.call(), "scales");
  });
}

TEST(QuantFp8Validation, NonNegativeStrides) {
  for_both([](Fp8Call& c) {
    c.dv.data = static_cast<float*>(c.dv.data) + (kM - 1) * kK;  // last row, walking up
    c.dv.stride[0] = -kK;
    c.expect_rejected(c.call(), c.data_name());
  });
}

TEST(QuantFp8Validation, OutputElementsDistinct) {
  for_both([](Fp8Call& c) {
    if (c.dequant) {
      c.dv.stride[0] = 0;  // every row of out at one address
      c.expect_rejected(c.call(), "out");
    } else {
      c.qv.stride[0] = kK / 2;  // rows overlap each other
      c.expect_rejected(c.call(), "q");
    }
  });
  Fp8Call c(false);
  c.sv.stride[0] = 0;
  c.expect_rejected(c.call(), "scales");
}

TEST(QuantFp8Validation, SameDevice) {
  for_both([](Fp8Call& c) { c.sv.device = Device::cuda; c.expect_rejected(c.call(), "scales"); });
  for_both([](Fp8Call& c) { c.dv.device_index = 1; c.dv.device = Device::cuda; c.qv.device = Device::cuda;
                            c.sv.device = Device::cuda; c.expect_rejected(c.call(), c.dequant ? "out" : "q"); });
}

TEST(QuantFp8Validation, OutputsDoNotOverlapInputs) {
  {  // quant: q inside x's buffer
    Fp8Call c(false);
    c.qv.data = c.dv.data;
    c.expect_rejected(c.call(), "q");
  }
  {  // quant: scales inside x's buffer
    Fp8Call c(false);
    c.sv.data = static_cast<float*>(c.dv.data) + 3;
    c.expect_rejected(c.call(), "scales");
  }
  {  // quant: scales inside q's buffer (both outputs)
    Fp8Call c(false);
    c.sv.data = c.qv.data;
    c.expect_rejected(c.call(), "scales");
  }
  {  // dequant: q (input) inside out's buffer
    Fp8Call c(true);
    c.qv.data = static_cast<uint8_t*>(c.dv.data) + 8;
    c.expect_rejected(c.call(), "out");
  }
  {  // dequant: scales (input) inside out's buffer
    Fp8Call c(true);
    c.sv.data = static_cast<float*>(c.dv.data) + kK;
    c.expect_rejected(c.call(), "out");
  }
}

TEST(QuantFp8Validation, BackendNeedsMatchingDevice) {
  for_both([](Fp8Call& c) {
    ExecContext ctx;
    ctx.backend = Backend::cuda;  // host tensors
    c.expect_rejected(c.call(ctx), c.dequant ? "q" : "x");
  });
}

TEST(QuantFp8Validation, CudaBackendRejectsHostTensors) {
  for_both([](Fp8Call& c) {
    ExecContext ctx;
    ctx.backend = Backend::cuda;  // the emulator and reference backends run: see *_kernel tests
    const Status s = c.call(ctx);
    EXPECT_EQ(s.code(), StatusCode::invalid_argument) << s.to_string();
    const bool untouched = c.dequant ? still_poisoned(c.data) : still_poisoned(c.q) && still_poisoned(c.scales);
    EXPECT_TRUE(untouched);
  });
}

// A view off its element alignment would fault on a GPU (misaligned address): rejected up front.
TEST(QuantFp8Validation, ElementAligned) {
  for_both([](Fp8Call& c) {
    c.dv.data = static_cast<char*>(c.dv.data) + 2;  // f32 at a 2-byte offset
    c.expect_rejected(c.call(), c.data_name());
  });
  Fp8Call c(false);
  c.sv.data = static_cast<char*>(c.sv.data) + 1;
  c.expect_rejected(c.call(), "scales");
}
