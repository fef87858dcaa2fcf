// Argument validation of quant_mx and dequant_mx: one test per rule, each run on both ops
// (and on the formats it concerns). A rejected call names the argument and writes nothing.
#include <gtest/gtest.h>

#include <cstdint>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/quant/reject_check.h"
#include "support/seed.h"
#include "tejas/quant.h"

using namespace tejas;
using namespace tejas::quanttest;

namespace {

constexpr int64_t kM = 4, kK = 64;
constexpr MxFormat kFormats[] = {MxFormat::mxfp8, MxFormat::mxfp4, MxFormat::nvfp4};

ExecContext ref_ctx() {
  ExecContext ctx;
  ctx.backend = Backend::reference;
  return ctx;
}

DType code_dtype(MxFormat f) { return f == MxFormat::mxfp8 ? DType::e4m3 : DType::e2m1; }
DType scale_dtype(MxFormat f) { return f == MxFormat::nvfp4 ? DType::e4m3 : DType::ue8m0; }

// One valid call whose views a test then breaks; `data` is x (input) for quant, out (output)
// for dequant.
struct MxCall {
  MxCall(MxFormat f, bool is_dequant)
      : format(f),
        dequant(is_dequant),
        data(DType::f32, {kM, kK}),
        q(code_dtype(f), {kM, kK}),
        scales(scale_dtype(f), {kM, kK / mx_block_size(f)}),
        ts(DType::f32, {1}) {
    check::Rng rng(1);
    ts.set_flat(0, 0.5);
    if (dequant) {
      check::fill_uniform(q, rng, -4, 4);
      check::fill_uniform(scales, rng, 0.5, 2);
    } else {
      check::fill_normal(data, rng);
    }
    dv = data.view();
    qv = q.view();
    sv = scales.view();
    if (f == MxFormat::nvfp4) tsv = ts.view();
    for (const HostTensor* in : {&data, &q, &scales, &ts}) snaps.emplace_back(*in);
  }

  Status call(const ExecContext& ctx = ref_ctx()) const {
    return dequant ? dequant_mx(ctx, format, qv, sv, tsv, dv) : quant_mx(ctx, format, dv, qv, sv, tsv);
  }
  std::string op() const { return dequant ? "dequant_mx" : "quant_mx"; }
  const char* data_name() const { return dequant ? "out" : "x"; }

  void expect_rejected(const Status& s, const std::string& arg) const {
    SCOPED_TRACE(op() + " " + mx_format_name(format));
    if (dequant) quanttest::expect_rejected(s, op(), arg, {{"out", &data}}, {&snaps[1], &snaps[2], &snaps[3]});
    else quanttest::expect_rejected(s, op(), arg, {{"q", &q}, {"scales", &scales}}, {&snaps[0], &snaps[3]});
  }

  MxFormat format;
  bool dequant;
  HostTensor data, q, scales, ts;
  TensorView dv, qv, sv, tsv;
  std::vector<Snapshot> snaps;
};

// Runs f on a fresh call for each op and each of `formats`.
template <class F>
void for_all(std::initializer_list<MxFormat> formats, F f) {
  for (MxFormat fmt : formats)
    for (bool dq : {false, true}) {
      MxCall c(fmt, dq);
      f(c);
    }
}
template <class F>
void for_all(F f) {
  for_all({MxFormat::mxfp8, MxFormat::mxfp4, MxFormat::nvfp4}, f);
}

}  // namespace

TEST(QuantMxValidation, ValidCallsSucceed) {
  for_all([](MxCall& c) { TEJAS_ASSERT_OK(c.call()); });
}

TEST(QuantMxValidation, FormatInRange) {
  for_all({MxFormat::mxfp8}, [](MxCall& c) {
    c.format = static_cast<MxFormat>(7);
    c.expect_rejected(c.call(), "format");
  });
  EXPECT_EQ(mx_block_size(static_cast<MxFormat>(7)), 0);
  EXPECT_STREQ(mx_format_name(static_cast<MxFormat>(7)), "?");
}

TEST(QuantMxValidation, MissingTensor) {
  for_all([](MxCall& c) { c.dv.data = nullptr; c.expect_rejected(c.call(), c.data_name()); });
  for_all([](MxCall& c) { c.qv.data = nullptr; c.expect_rejected(c.call(), "q"); });
  for_all([](MxCall& c) { c.sv.data = nullptr; c.expect_rejected(c.call(), "scales"); });
}

TEST(QuantMxValidation, DataDtype) {
  for_all([](MxCall& c) { c.dv.dtype = DType::f64; c.expect_rejected(c.call(), c.data_name()); });
}

TEST(QuantMxValidation, CodeDtypePerFormat) {
  for_all({MxFormat::mxfp8}, [](MxCall& c) {
    c.qv = TensorView::contiguous(c.qv.data, DType::e2m1, {kM, kK});
    c.expect_rejected(c.call(), "q");
  });
  for_all({MxFormat::mxfp4, MxFormat::nvfp4}, [](MxCall& c) {
    c.qv = TensorView::contiguous(c.qv.data, DType::e4m3, {kM, kK / 2});  // the same bytes as e4m3
    c.qv.shape[1] = kK;  // (never read: rejected first)
    c.expect_rejected(c.call(), "q");
  });
}

TEST(QuantMxValidation, ScaleDtypePerFormat) {
  for_all({MxFormat::mxfp8, MxFormat::mxfp4}, [](MxCall& c) { c.sv.dtype = DType::e4m3; c.expect_rejected(c.call(), "scales"); });
  for_all({MxFormat::nvfp4}, [](MxCall& c) { c.sv.dtype = DType::ue8m0; c.expect_rejected(c.call(), "scales"); });
}

TEST(QuantMxValidation, KMultipleOfBlock) {
  for_all([](MxCall& c) {
    const int64_t K = mx_block_size(c.format) + 8;  // 40 or 24: not a multiple
    c.dv.shape[1] = K;
    c.qv = TensorView::contiguous(c.qv.data, c.qv.dtype, {kM, K});
    c.sv.shape[1] = 1;
    c.sv.stride[0] = 1;
    c.expect_rejected(c.call(), c.data_name());
  });
}

TEST(QuantMxValidation, ScalesShapeFollowsBlock) {
  for_all({MxFormat::mxfp8, MxFormat::mxfp4}, [](MxCall& c) {
    c.sv = TensorView::contiguous(c.sv.data, c.sv.dtype, {kM, 1});  // K / 64, not K / 32
    c.expect_rejected(c.call(), "scales");
  });
  for_all({MxFormat::nvfp4}, [](MxCall& c) {
    c.sv = TensorView::contiguous(c.sv.data, c.sv.dtype, {kM, 2});  // K / 32, not K / 16
    c.expect_rejected(c.call(), "scales");
  });
  for_all([](MxCall& c) { c.sv.shape[0] = 1; c.expect_rejected(c.call(), "scales"); });
}

TEST(QuantMxValidation, Fp4RowsStartOnBytes) {
  for_all({MxFormat::mxfp4, MxFormat::nvfp4}, [](MxCall& c) {
    c.qv.shape[0] = kM / 2;  // rows kK + 1 nibbles apart, inside the buffer
    c.qv.stride[0] = kK + 1;
    c.dv.shape[0] = kM / 2;
    c.sv.shape[0] = kM / 2;
    c.expect_rejected(c.call(), "q");
  });
}

TEST(QuantMxValidation, Fp4InnermostContiguous) {
  for_all({MxFormat::mxfp4, MxFormat::nvfp4}, [](MxCall& c) {
    c.qv.shape[0] = kM / 2;
    c.qv.stride[1] = 2;
    c.dv.shape[0] = kM / 2;
    c.sv.shape[0] = kM / 2;
    c.expect_rejected(c.call(), "q");
  });
}

TEST(QuantMxValidation, OutputElementsDistinct) {
  for_all([](MxCall& c) {
    if (c.dequant) {
      c.dv.stride[0] = 0;
      c.expect_rejected(c.call(), "out");
    } else {
      c.sv.stride[0] = 0;
      c.expect_rejected(c.call(), "scales");
    }
  });
  for_all([](MxCall& c) {  // quant's codes: rows on top of each other
    if (c.dequant) return;
    c.qv.stride[0] = 0;
    c.expect_rejected(c.call(), "q");
  });
}

// Data pointers off their element's alignment: x / out (f32: 4 bytes), and nvfp4's e4m3 scales
// need none (1 byte), so its tensor_scale (f32) instead.
TEST(QuantMxValidation, MisalignedData) {
  for_all([](MxCall& c) {
    c.dv.data = static_cast<char*>(c.dv.data) + 2;
    const Status s = c.call();
    c.expect_rejected(s, c.data_name());
    EXPECT_NE(s.message().find(": expected data aligned to 4"), std::string::npos) << s.message();
  });
  for_all({MxFormat::nvfp4}, [](MxCall& c) {
    c.tsv.data = static_cast<char*>(c.tsv.data) + 1;
    const Status s = c.call();
    c.expect_rejected(s, "tensor_scale");
    EXPECT_NE(s.message().find("tensor_scale: expected data aligned to 4"), std::string::npos) << s.message();
  });
}

TEST(QuantMxValidation, NegativeStrides) {
  for_all([](MxCall& c) {
    c.dv.data = static_cast<float*>(c.dv.data) + (kM - 1) * kK;
    c.dv.stride[0] = -kK;
    c.expect_rejected(c.call(), c.data_name());
  });
}

TEST(QuantMxValidation, TensorScaleRequiredForNvfp4) {
  for_all({MxFormat::nvfp4}, [](MxCall& c) { c.tsv = TensorView{}; c.expect_rejected(c.call(), "tensor_scale"); });
}

TEST(QuantMxValidation, TensorScaleAbsentForMx) {
  for_all({MxFormat::mxfp8, MxFormat::mxfp4}, [](MxCall& c) {
    c.tsv = c.ts.view();
    c.expect_rejected(c.call(), "tensor_scale");
  });
}

TEST(QuantMxValidation, TensorScaleDtypeAndShape) {
  for_all({MxFormat::nvfp4}, [](MxCall& c) { c.tsv.dtype = DType::bf16; c.expect_rejected(c.call(), "tensor_scale"); });
  for_all({MxFormat::nvfp4}, [](MxCall& c) { c.tsv.ndim = 0; c.expect_rejected(c.call(), "tensor_scale"); });
  for_all({MxFormat::nvfp4}, [](MxCall& c) {
    c.tsv = TensorView::contiguous(c.tsv.data, DType::f32, {1, 1});
    c.expect_rejected(c.call(), "tensor_scale");
  });
}

TEST(QuantMxValidation, TensorScaleValueInRange) {
  // Non-positive, non-finite, and just outside [2^-64, 2^64] (tejas/quant.h: the kernels need
  // 1 / (6 * tensor_scale) and 1 / (block_scale * tensor_scale) normal).
  const double bad[] = {0.0, -0.0, -0.5, std::numeric_limits<double>::infinity(),
                        std::numeric_limits<double>::quiet_NaN(), 0x1p-65, 0x1p65, 1e-40, 1e38,
                        // the f32 neighbours just outside the range
                        std::nextafter(0x1p-64f, 0.0f), std::nextafter(0x1p64f, 1e30f)};
  for (double v : bad) {
    SCOPED_TRACE(testing::Message() << "tensor_scale " << v);
    for_all({MxFormat::nvfp4}, [v](MxCall& c) {
      c.ts.set_flat(0, v);
      c.snaps[3] = Snapshot(c.ts);
      c.expect_rejected(c.call(), "tensor_scale");
    });
  }
}

TEST(QuantMxValidation, SameDevice) {
  for_all({MxFormat::nvfp4}, [](MxCall& c) { c.tsv.device = Device::cuda; c.expect_rejected(c.call(), "tensor_scale"); });
  for_all([](MxCall& c) { c.qv.device = Device::cuda; c.expect_rejected(c.call(), c.dequant ? "scales" : "q"); });
}

TEST(QuantMxValidation, OutputsDoNotOverlapInputs) {
  for_all([](MxCall& c) {
    if (c.dequant) {
      c.qv.data = static_cast<uint8_t*>(c.dv.data) + 4;  // q (input) inside out's buffer
      c.expect_rejected(c.call(), "out");
    } else {
      c.qv.data = c.dv.data;  // q inside x's buffer
      c.expect_rejected(c.call(), "q");
    }
  });
  for_all({MxFormat::mxfp8}, [](MxCall& c) {
    if (c.dequant) return;
    c.sv.data = static_cast<uint8_t*>(c.qv.data) + 1;  // scales inside q
    c.expect_rejected(c.call(), "scales");
  });
  for_all({MxFormat::nvfp4}, [](MxCall& c) {
    if (c.dequant) {
      c.tsv.data = static_cast<float*>(c.dv.data) + 5;  // tensor_scale inside out
      c.expect_rejected(c.call(), "out");
    } else {
      c.sv = TensorView::contiguous(c.tsv.data, c.sv.dtype, {kM, kK / 16});  // scales over tensor_scale
      c.expect_rejected(c.call(), "scales");
    }
  });
  for_all([](MxCall& c) {  // quant: scales inside x's buffer
    if (c.dequant) return;
    c.sv.data = static_cast<float*>(c.dv.data) + 1;
    c.expect_rejected(c.call(), "scales");
  });
  for_all({MxFormat::nvfp4}, [](MxCall& c) {  // quant: tensor_scale inside q's buffer
    if (c.dequant) return;
    c.tsv.data = c.qv.data;
    c.expect_rejected(c.call(), "q");
  });
}

TEST(QuantMxValidation, CudaBackendRejectsHostTensors) {
  for_all([](MxCall& c) {
    ExecContext ctx;
    ctx.backend = Backend::cuda;  // the emulator and reference backends run: see *_kernel tests
    const Status s = c.call(ctx);
    EXPECT_EQ(s.code(), StatusCode::invalid_argument) << s.to_string();
    const bool untouched = c.dequant ? still_poisoned(c.data) : still_poisoned(c.q) && still_poisoned(c.scales);
    EXPECT_TRUE(untouched);
  });
}
