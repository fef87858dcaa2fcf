// Zero tokens (T = 0: a step with no decode tokens, an MoE expert that got none) through every
// public op, on every backend (the GPU when one is present): the call succeeds and launches
// nothing, every other argument keeps its bytes (the caches, the weights, the scales), whether
// the empty tensors' data pointers are real or null (PyTorch and DLPack hand empty tensors over
// with a null pointer); and the rules still apply to an empty tensor (its dtype, its shape
// against the others), while a null pointer on a tensor with elements is still "none".
// The attention ops (reference only for now) take an empty batch on the reference backend and
// answer unsupported on the others, as they do for any batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "check/cuda_mem.h"
#include "check/host_tensor.h"
#include "check/op_checks.h"
#include "ops/common/emu_launch.h"
#include "support/backends.h"
#include "tejas/activation.h"
#include "tejas/attention.h"
#include "tejas/norm.h"
#include "tejas/quant.h"
#include "tejas/rope.h"

using namespace tejas;
using check::DeviceMirror;
using check::HostTensor;

namespace {

constexpr int64_t kH = 256, kD = 64, kHq = 4, kHk = 2, kMaxPos = 16, kBlocks = 3, kBlockSize = 4;

// The tensors of one call on one backend. Each starts as its dtype's poison (or a given value),
// and is uploaded for the cuda backend. `null_empty` hands every empty tensor over as PyTorch
// does: a null pointer, and strides computed with each size taken as at least 1 (a [3, 0, H, D]
// view's strides are [H D, H D, D, 1], not [0, H D, D, 1]).
class Arena {
 public:
  Arena(Backend backend, bool null_empty) : backend_(backend), null_empty_(null_empty) {}

  TensorView tensor(DType dt, std::vector<int64_t> shape) { return add(HostTensor(dt, std::move(shape))); }
  // A one-element f32 tensor holding `value` (scales).
  TensorView scalar(double value) {
    HostTensor h(DType::f32, {1});
    h.set_flat(0, value);
    return add(std::move(h));
  }

  // Every tensor's bytes as they were made, guards included (downloaded for the cuda backend).
  void expect_untouched() {
    for (size_t i = 0; i < host_.size(); ++i) {
      SCOPED_TRACE(::testing::Message() << "tensor " << i << ": " << host_[i].view().describe());
      HostTensor got = host_[i];
      if (backend_ == Backend::cuda) {
        bool intact = false;
        ASSERT_TRUE(mirrors_[i].download(got).ok());  // the payload, padding included
        ASSERT_TRUE(mirrors_[i].guards_intact(&intact).ok());
        EXPECT_TRUE(intact) << "the device guards";
      } else {
        got = live_[i];
        EXPECT_TRUE(got.guards_intact()) << "the host guards";
      }
      EXPECT_TRUE(got.padding_intact());
      for (int64_t e = 0; e < got.numel(); ++e) ASSERT_EQ(got.bits_flat(e), host_[i].bits_flat(e)) << "element " << e;
    }
  }

 private:
  TensorView add(HostTensor h) {
    host_.push_back(h);  // the bytes as made
    TensorView v;
    if (backend_ == Backend::cuda) {
      DeviceMirror& m = mirrors_.emplace_back();
      EXPECT_TRUE(m.upload(h).ok());
      v = m.view();
      live_.emplace_back();
    } else {
      mirrors_.emplace_back();
      v = live_.emplace_back(std::move(h)).view();
    }
    if (null_empty_ && v.has_zero_size()) {
      v.data = nullptr;
      int64_t stride = 1;
      for (int d = v.ndim - 1; d >= 0; --d) {
        v.stride[d] = stride;
        stride *= std::max<int64_t>(v.shape[d], 1);
      }
    }
    return v;
  }

  Backend backend_;
  bool null_empty_;
  std::deque<HostTensor> host_, live_;  // deques: views into them stay valid
  std::deque<DeviceMirror> mirrors_;
};

struct EmptyCall {
  const char* op;  // the public op's name, as op_checks() lists it
  const char* what;
  std::function<Status(const ExecContext&, Arena&)> call;
};

const TensorView kNone{};

// One call per op and main variant, each with T = 0.
std::vector<EmptyCall> empty_calls() {
  using A = Arena;
  const DType bf = DType::bf16, f16 = DType::f16, f32 = DType::f32, e4 = DType::e4m3, e2 = DType::e2m1;
  return {
      {"rms_norm", "bf16",
       [=](const ExecContext& c, A& a) {
         return rms_norm(c, a.tensor(bf, {0, kH}), a.tensor(bf, {kH}), 1e-6, a.tensor(bf, {0, kH}));
       }},
      {"rms_norm", "f32 -> e4m3, dynamic scale",
       [=](const ExecContext& c, A& a) {
         return rms_norm(c, a.tensor(f32, {0, kH}), a.tensor(f32, {kH}), 1e-6, a.tensor(e4, {0, kH}),
                         Fp8Scale{a.tensor(f32, {0}), Fp8ScaleMode::dynamic_per_token});
       }},
      {"fused_add_rms_norm", "f16",
       [=](const ExecContext& c, A& a) {
         return fused_add_rms_norm(c, a.tensor(f16, {0, kH}), a.tensor(f16, {0, kH}), a.tensor(f32, {kH}), 1e-6,
                                   a.tensor(f16, {0, kH}));
       }},
      {"fused_add_rms_norm", "bf16 -> e4m3, static scale",
       [=](const ExecContext& c, A& a) {
         return fused_add_rms_norm(c, a.tensor(bf, {0, kH}), a.tensor(bf, {0, kH}), a.tensor(bf, {kH}), 1e-6,
                                   a.tensor(e4, {0, kH}), Fp8Scale{a.scalar(0.5), Fp8ScaleMode::static_per_tensor});
       }},
      {"fused_add_rms_norm_quant_fp8_group", "bf16, ue8m0 scales",
       [=](const ExecContext& c, A& a) {
         return fused_add_rms_norm_quant_fp8_group(c, a.tensor(bf, {0, kH}), a.tensor(bf, {0, kH}), a.tensor(bf, {kH}),
                                                   1e-6, a.tensor(e4, {0, kH}), a.tensor(DType::ue8m0, {0, kH / 128}));
       }},
      {"silu_mul", "bf16",
       [=](const ExecContext& c, A& a) {
         return silu_mul(c, a.tensor(bf, {0, 2 * kH}), a.tensor(bf, {0, kH}));
       }},
      {"silu_mul", "f32, clamped",
       [=](const ExecContext& c, A& a) {
         return silu_mul(c, a.tensor(f32, {0, 2 * kH}), a.tensor(f32, {0, kH}), SiluMulOptions{.clamped = true});
       }},
      {"gelu_tanh_mul", "f16",
       [=](const ExecContext& c, A& a) {
         return gelu_tanh_mul(c, a.tensor(f16, {0, 2 * kH}), a.tensor(f16, {0, kH}));
       }},
      {"silu_mul_quant_fp8_group", "bf16, f32 scales",
       [=](const ExecContext& c, A& a) {
         return silu_mul_quant_fp8_group(c, a.tensor(bf, {0, 2 * kH}), a.tensor(e4, {0, kH}),
                                         a.tensor(f32, {0, kH / 128}));
       }},
      {"silu_mul_quant_fp8_group", "f16, ue8m0 scales",
       [=](const ExecContext& c, A& a) {
         return silu_mul_quant_fp8_group(c, a.tensor(f16, {0, 2 * kH}), a.tensor(e4, {0, kH}),
                                         a.tensor(DType::ue8m0, {0, kH / 128}));
       }},
      {"silu_mul_quant_mx", "bf16 -> mxfp4, clamped",
       [=](const ExecContext& c, A& a) {
         return silu_mul_quant_mx(c, MxFormat::mxfp4, a.tensor(bf, {0, 2 * kH}), a.tensor(e2, {0, kH}),
                                  a.tensor(DType::ue8m0, {0, kH / 32}), kNone, SiluMulOptions{.clamped = true});
       }},
      {"silu_mul_quant_mx", "f16 -> nvfp4",
       [=](const ExecContext& c, A& a) {
         return silu_mul_quant_mx(c, MxFormat::nvfp4, a.tensor(f16, {0, 2 * kH}), a.tensor(e2, {0, kH}),
                                  a.tensor(e4, {0, kH / 16}), a.scalar(1.0));
       }},
      {"quant_fp8_group", "bf16, f32 scales",
       [=](const ExecContext& c, A& a) {
         return quant_fp8_group(c, a.tensor(bf, {0, kH}), a.tensor(e4, {0, kH}), a.tensor(f32, {0, kH / 128}));
       }},
      {"dequant_fp8_group", "-> f16",
       [=](const ExecContext& c, A& a) {
         return dequant_fp8_group(c, a.tensor(e4, {0, kH}), a.tensor(f32, {0, kH / 128}), a.tensor(f16, {0, kH}));
       }},
      {"quant_mx", "bf16 -> mxfp4",
       [=](const ExecContext& c, A& a) {
         return quant_mx(c, MxFormat::mxfp4, a.tensor(bf, {0, kH}), a.tensor(e2, {0, kH}),
                         a.tensor(DType::ue8m0, {0, kH / 32}));
       }},
      {"quant_mx", "f16 -> nvfp4",
       [=](const ExecContext& c, A& a) {
         return quant_mx(c, MxFormat::nvfp4, a.tensor(f16, {0, kH}), a.tensor(e2, {0, kH}), a.tensor(e4, {0, kH / 16}),
                         a.scalar(1.0));
       }},
      {"quant_mx", "f32 -> mxfp8, 3-d, no columns",
       [=](const ExecContext& c, A& a) {
         return quant_mx(c, MxFormat::mxfp8, a.tensor(f32, {2, 3, 0}), a.tensor(e4, {2, 3, 0}),
                         a.tensor(DType::ue8m0, {2, 3, 0}));
       }},
      {"dequant_mx", "mxfp8 -> f32",
       [=](const ExecContext& c, A& a) {
         return dequant_mx(c, MxFormat::mxfp8, a.tensor(e4, {0, kH}), a.tensor(DType::ue8m0, {0, kH / 32}), kNone,
                           a.tensor(f32, {0, kH}));
       }},
      {"dequant_mx", "nvfp4 -> bf16",
       [=](const ExecContext& c, A& a) {
         return dequant_mx(c, MxFormat::nvfp4, a.tensor(e2, {0, kH}), a.tensor(e4, {0, kH / 16}), a.scalar(1.0),
                           a.tensor(bf, {0, kH}));
       }},
      {"rope", "neox, q and k",
       [=](const ExecContext& c, A& a) {
         return rope(c, a.tensor(DType::i64, {0}), a.tensor(bf, {0, kHq, kD}), a.tensor(bf, {0, kHk, kD}),
                     a.tensor(f32, {kMaxPos, kD}), RopeStyle::neox);
       }},
      {"rope", "gptj, q only, partial",
       [=](const ExecContext& c, A& a) {
         return rope(c, a.tensor(DType::i32, {0}), a.tensor(f16, {0, kHq, kD}), kNone, a.tensor(f16, {kMaxPos, kD / 2}),
                     RopeStyle::gptj);
       }},
      {"mrope", "bf16",
       [=](const ExecContext& c, A& a) {
         return mrope(c, a.tensor(DType::i64, {3, 0}), a.tensor(bf, {0, kHq, kD}), a.tensor(bf, {0, kHk, kD}),
                      a.tensor(f32, {kMaxPos, kD}), MropeSection{8, 12, 12});
       }},
      {"mrope", "f16, q only",
       [=](const ExecContext& c, A& a) {
         return mrope(c, a.tensor(DType::i32, {3, 0}), a.tensor(f16, {0, kHq, kD}), kNone, a.tensor(f32, {kMaxPos, kD}),
                      MropeSection{16, 8, 8});
       }},
      {"rope_kv_cache_write", "bf16 caches, gptj",
       [=](const ExecContext& c, A& a) {
         const PagedKvCache cache{a.tensor(bf, {kBlocks, kBlockSize, kHk, kD}),
                                  a.tensor(bf, {kBlocks, kBlockSize, kHk, kD}), kNone, kNone};
         return rope_kv_cache_write(c, a.tensor(DType::i32, {0}), a.tensor(bf, {0, kHq, kD}),
                                    a.tensor(bf, {0, kHk, kD}), a.tensor(bf, {0, kHk, kD}),
                                    a.tensor(bf, {kMaxPos, kD / 2}), RopeStyle::gptj, a.tensor(DType::i64, {0}), cache);
       }},
      {"rope_kv_cache_write", "e4m3 caches",
       [=](const ExecContext& c, A& a) {
         const PagedKvCache cache{a.tensor(e4, {kBlocks, kBlockSize, kHk, kD}),
                                  a.tensor(e4, {kBlocks, kBlockSize, kHk, kD}), a.scalar(0.25), a.scalar(2.0)};
         return rope_kv_cache_write(c, a.tensor(DType::i64, {0}), a.tensor(bf, {0, kHq, kD}),
                                    a.tensor(bf, {0, kHk, kD}), a.tensor(bf, {0, kHk, kD}),
                                    a.tensor(f32, {kMaxPos, kD}), RopeStyle::neox, a.tensor(DType::i64, {0}), cache);
       }},
      {"kv_cache_write", "bf16 caches",
       [=](const ExecContext& c, A& a) {
         const PagedKvCache cache{a.tensor(bf, {kBlocks, kBlockSize, kHk, kD}),
                                  a.tensor(bf, {kBlocks, kBlockSize, kHk, kD}), kNone, kNone};
         return kv_cache_write(c, a.tensor(bf, {0, kHk, kD}), a.tensor(bf, {0, kHk, kD}), a.tensor(DType::i64, {0}),
                               cache);
       }},
      {"kv_cache_write", "e5m2 caches",
       [=](const ExecContext& c, A& a) {
         const PagedKvCache cache{a.tensor(DType::e5m2, {kBlocks, kBlockSize, kHk, kD}),
                                  a.tensor(DType::e5m2, {kBlocks, kBlockSize, kHk, kD}), a.scalar(0.5), a.scalar(4.0)};
         return kv_cache_write(c, a.tensor(f16, {0, kHk, kD}), a.tensor(f16, {0, kHk, kD}), a.tensor(DType::i64, {0}),
                               cache);
       }},
      {"paged_decode_attention", "B = 0",
       [=](const ExecContext& c, A& a) {
         return paged_decode_attention(c, a.tensor(bf, {0, 1, kHq, kD}), a.tensor(bf, {kBlocks, 16, kHk, kD}),
                                       a.tensor(bf, {kBlocks, 16, kHk, kD}), a.tensor(DType::i32, {0, 2}),
                                       a.tensor(DType::i32, {0}), kNone, PagedDecodeParams{},
                                       a.tensor(bf, {0, 1, kHq, kD}), a.tensor(f32, {0, 1, kHq}));
       }},
      {"merge_attention_states", "N = 0",
       [=](const ExecContext& c, A& a) {
         return merge_attention_states(c, a.tensor(bf, {0, kHq, kD}), a.tensor(f32, {0, kHq}),
                                       a.tensor(bf, {0, kHq, kD}), a.tensor(f32, {0, kHq}), a.tensor(bf, {0, kHq, kD}),
                                       a.tensor(f32, {0, kHq}));
       }},
      {"merge_attention_states_n", "N = 0",
       [=](const ExecContext& c, A& a) {
         return merge_attention_states_n(c, a.tensor(f16, {3, 0, kHq, kD}), a.tensor(f32, {3, 0, kHq}),
                                         a.tensor(f16, {0, kHq, kD}), a.tensor(f32, {0, kHq}));
       }},
  };
}

bool reference_only(const std::string& op) {
  return op.rfind("merge_attention_states", 0) == 0 || op == "paged_decode_attention";
}

// The reference, then the kernel backends (the emulator, and the GPU when present).
std::vector<Backend> every_backend() {
  std::vector<Backend> b = {Backend::reference};
  for (Backend k : testsupport::kernel_backends()) b.push_back(k);
  return b;
}

TEST(EmptyBatch, EveryOpListed) {
  std::set<std::string> listed;
  for (const EmptyCall& e : empty_calls()) listed.insert(e.op);
  for (const check::OpCheck& op : check::op_checks())
    EXPECT_TRUE(listed.count(op.name)) << op.name << " has no T = 0 call";
  EXPECT_EQ(listed.size(), check::op_checks().size()) << "a name here that is not a public op's";
}

// T = 0 on every backend, with real and with null pointers, with and without debug checks:
// ok, nothing launched (the emulator records no kernel; a launch of an empty grid is a finding
// there, and an error on a GPU), every byte of every argument kept.
TEST(EmptyBatch, DoesNothingOnEveryBackend) {
  for (Backend b : every_backend()) {
    for (bool null_empty : {false, true}) {
      for (bool debug : {false, true}) {
        for (const EmptyCall& e : empty_calls()) {
          SCOPED_TRACE(::testing::Message()
                       << e.op << " (" << e.what << ") on " << backend_name(b)
                       << (null_empty ? ", null data" : ", real data") << (debug ? ", debug checks" : ""));
          ExecContext ctx;
          ctx.backend = b;
          ctx.debug_checks = debug;
          Arena arena(b, null_empty);
          detail::begin_emulator_call();
          const Status s = e.call(ctx, arena);
          if (reference_only(e.op) && b != Backend::reference) {
            EXPECT_EQ(s.code(), StatusCode::unsupported) << s.to_string();
          } else {
            EXPECT_TRUE(s.ok()) << s.to_string();
          }
          if (b == Backend::emulator) {
            EXPECT_TRUE(detail::last_emulator_reports().empty()) << "a kernel was launched";
          }
          if (b == Backend::cuda) {
            ASSERT_TRUE(check::device_synchronize().ok());
          }
          arena.expect_untouched();
        }
      }
    }
  }
}

// The scale values the reference backend always checks are checked with no tokens too (a static
// fp8 scale of NaN, a KV-cache scale of 0: refused, naming it); a kernel backend reads nothing
// for such a call, in debug-check mode too (the kernels would read none of it), so it answers ok.
TEST(EmptyBatch, ScaleValuesOnTheReferenceOnly) {
  for (Backend b : every_backend()) {
    SCOPED_TRACE(backend_name(b));
    ExecContext ctx;
    ctx.backend = b;
    ctx.debug_checks = true;
    Arena a(b, /*null_empty=*/true);
    const Status norm =
        rms_norm(ctx, a.tensor(DType::bf16, {0, kH}), a.tensor(DType::bf16, {kH}), 1e-6, a.tensor(DType::e4m3, {0, kH}),
                 Fp8Scale{a.scalar(std::nan("")), Fp8ScaleMode::static_per_tensor});
    const PagedKvCache cache{a.tensor(DType::e4m3, {kBlocks, kBlockSize, kHk, kD}),
                             a.tensor(DType::e4m3, {kBlocks, kBlockSize, kHk, kD}), a.scalar(0.0), a.scalar(1.0)};
    const Status kv = kv_cache_write(ctx, a.tensor(DType::bf16, {0, kHk, kD}), a.tensor(DType::bf16, {0, kHk, kD}),
                                     a.tensor(DType::i64, {0}), cache);
    if (b == Backend::reference) {
      EXPECT_EQ(norm.code(), StatusCode::invalid_argument) << norm.to_string();
      EXPECT_NE(norm.message().find("out_scale.scale"), std::string::npos) << norm.message();
      EXPECT_EQ(kv.code(), StatusCode::invalid_argument) << kv.to_string();
      EXPECT_NE(kv.message().find("k_scale"), std::string::npos) << kv.message();
    } else {
      EXPECT_TRUE(norm.ok()) << norm.to_string();
      EXPECT_TRUE(kv.ok()) << kv.to_string();
    }
    a.expect_untouched();
  }
}

// The rules still hold for empty tensors, null or not: a shape or dtype that does not fit is
// refused, naming the argument; an optional argument given empty is checked as given; a null
// pointer on a tensor with elements is none.
TEST(EmptyBatch, RulesStillApply) {
  const DType bf = DType::bf16;
  for (Backend b : every_backend()) {
    for (bool null_empty : {false, true}) {
      SCOPED_TRACE(::testing::Message() << backend_name(b) << (null_empty ? ", null data" : ", real data"));
      ExecContext ctx;
      ctx.backend = b;
      Arena a(b, null_empty);
      const auto expect_refused = [](const Status& s, const std::string& start) {
        EXPECT_EQ(s.code(), StatusCode::invalid_argument) << s.to_string();
        EXPECT_EQ(s.message().rfind(start, 0), 0u) << s.message();
      };
      expect_refused(rms_norm(ctx, a.tensor(bf, {0, kH}), a.tensor(bf, {kH}), 1e-6, a.tensor(bf, {0, kH + 2})),
                     "rms_norm: out: expected shape [0, 256]");
      expect_refused(rms_norm(ctx, a.tensor(bf, {0, kH}), a.tensor(bf, {kH - 1}), 1e-6, a.tensor(bf, {0, kH})),
                     "rms_norm: weight:");
      expect_refused(silu_mul(ctx, a.tensor(bf, {0, 2 * kH}), a.tensor(DType::f16, {0, kH})), "silu_mul: out:");
      expect_refused(silu_mul(ctx, a.tensor(bf, {0, 0}), a.tensor(bf, {0, 0})), "silu_mul: x: expected an even dim 1");
      expect_refused(rope(ctx, a.tensor(DType::i64, {0}), a.tensor(bf, {1, kHq, kD}), kNone,
                          a.tensor(DType::f32, {kMaxPos, kD}), RopeStyle::neox),
                     "rope: q: expected dim 0");
      // k given empty is checked: its head dim against q's.
      expect_refused(rope(ctx, a.tensor(DType::i64, {0}), a.tensor(bf, {0, kHq, kD}), a.tensor(bf, {0, kHk, kD + 2}),
                          a.tensor(DType::f32, {kMaxPos, kD}), RopeStyle::neox),
                     "rope: k: expected dim 2");
      const PagedKvCache cache{a.tensor(bf, {kBlocks, kBlockSize, kHk, kD}),
                               a.tensor(bf, {kBlocks, kBlockSize, kHk, kD}), kNone, kNone};
      expect_refused(
          kv_cache_write(ctx, a.tensor(bf, {0, kHk, kD}), a.tensor(bf, {0, kHk, kD}), a.tensor(DType::i64, {1}), cache),
          "kv_cache_write: slot_mapping: expected dim 0");
      expect_refused(kv_cache_write(ctx, a.tensor(bf, {0, kHk + 1, kD}), a.tensor(bf, {0, kHk + 1, kD}),
                                    a.tensor(DType::i64, {0}), cache),
                     "kv_cache_write: k_cache: expected dim 2");
      if (b != Backend::cuda)  // a host tensor_scale's value is read by the validation
        expect_refused(
            silu_mul_quant_mx(ctx, MxFormat::nvfp4, a.tensor(bf, {0, 2 * kH}), a.tensor(DType::e2m1, {0, kH}),
                              a.tensor(DType::e4m3, {0, kH / 16}), a.scalar(0.0)),
            "silu_mul_quant_mx: tensor_scale:");
      // A null pointer where there are elements: none, empty or not around it.
      TensorView weight = a.tensor(bf, {kH});
      weight.data = nullptr;
      expect_refused(rms_norm(ctx, a.tensor(bf, {0, kH}), weight, 1e-6, a.tensor(bf, {0, kH})),
                     "rms_norm: weight: expected a tensor, got none (null data)");
      TensorView x = a.tensor(bf, {2, kH});
      x.data = nullptr;
      expect_refused(rms_norm(ctx, x, a.tensor(bf, {kH}), 1e-6, a.tensor(bf, {2, kH})),
                     "rms_norm: x: expected a tensor, got none (null data)");
      a.expect_untouched();
    }
  }
}

}  // namespace
