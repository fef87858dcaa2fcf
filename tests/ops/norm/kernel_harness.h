// Shared by the norm kernel tests: runs an op on the emulator or cuda backend over HostTensors,
// builds misaligned views, and judges outputs (half-precision ulps, f32 relative error, e4m3
// codes with their documented rounding-tie allowance).
#pragma once
#include <cstdint>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "check/cuda_mem.h"
#include "check/host_tensor.h"
#include "runtime/scoped_set.h"
#include "support/op_snapshots.h"
#include "tejas/context.h"
#include "tejas/status.h"

namespace tejas::normtest {

constexpr long double kU = 0x1p-24L;  // f32 unit roundoff
// f32 results: the kernel sums <= 17 squares per thread, then a tree of <= 10 levels (27 u; the
// warp-row pipeline, 16-bit x only: 8 squares per item, <= 16 items per lane, 5 levels, 29 u),
// takes the mean, adds eps and rsqrt (halves the sum's error; the GPU's rsqrtf adds <= 2 ulp),
// then two products: about 20 u in all; 32 u leaves room without hiding a wrong formula.
constexpr double kF32Rel = static_cast<double>(32 * kU);
// bf16 / f16: the f32 value is within ~20 u of exact, far below half an ulp (2^-9 / 2^-12), so
// its one rounding is the correctly rounded value or, next to a midpoint, its neighbour.
constexpr int64_t kHalfUlps = 1;
// fp8 codes: y (~20 u) over a scale (~21 u for a dynamic one): a code may differ from the exact
// y / s's nearest only when y / s lies within ~42 u of the midpoint of two codes; 64 u window.
constexpr long double kTieWindow = 64 * kU;
// Dynamic f32 scales: amax from f32 y (~20 u), one division, one rounding.
constexpr double kScaleRel = static_cast<double>(32 * kU);

inline ExecContext ctx_for(Backend b) {
  ExecContext ctx;
  ctx.backend = b;
  return ctx;
}

inline check::Tolerance tolerance_for(DType t) {
  if (t == DType::f32) return {0.0, kF32Rel, -1};
  return {0.0, 0.0, kHalfUlps};
}

// Views for the op call, in the order of `ts`.
using Call = std::function<Status(const ExecContext&, const std::vector<TensorView>&)>;

// While one lives, run_backend's cuda calls are captured into a CUDA graph on a new stream and
// run from it (check::run_under_graph_capture), as a serving engine's decode graphs run the ops.
inline bool& graph_capture_on() {
  thread_local bool on = false;
  return on;
}
struct ScopedGraphCapture : detail::ScopedSet<bool> {
  ScopedGraphCapture() : ScopedSet(graph_capture_on(), true) {}
};

// emulator: the host views as they are. cuda: every tensor mirrored to the device (at the host
// view's address modulo 256, so shifted views stay misaligned), the call, then every tensor
// copied back (its span, row padding included) and its device guards checked: a write past a
// tensor is an error status.
inline Status run_backend(Backend b, const std::vector<check::HostTensor*>& ts, const Call& call) {
  if (b != Backend::cuda) {
    std::vector<TensorView> views;
    for (check::HostTensor* t : ts) views.push_back(t ? t->view() : TensorView{});
    return call(ctx_for(b), views);
  }
  // A tensor passed twice (in place: out == x) gets one mirror.
  std::vector<std::unique_ptr<check::DeviceMirror>> mirrors(ts.size());
  std::vector<TensorView> views(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    if (!ts[i]) continue;
    size_t first = 0;
    while (ts[first] != ts[i]) ++first;
    if (first < i) {
      views[i] = views[first];
      continue;
    }
    mirrors[i] = std::make_unique<check::DeviceMirror>();
    TEJAS_RETURN_IF_ERROR(mirrors[i]->upload(*ts[i]));
    views[i] = mirrors[i]->view();
  }
  if (graph_capture_on()) {
    TEJAS_RETURN_IF_ERROR(check::run_under_graph_capture([&](void* stream) {
      ExecContext ctx = ctx_for(b);
      ctx.stream = stream;
      return call(ctx, views);
    }));
  } else {
    TEJAS_RETURN_IF_ERROR(call(ctx_for(b), views));
  }
  TEJAS_RETURN_IF_ERROR(check::device_synchronize());
  for (size_t i = 0; i < ts.size(); ++i) {
    if (!mirrors[i]) continue;
    TEJAS_RETURN_IF_ERROR(mirrors[i]->download(*ts[i]));
    bool intact = false;
    TEJAS_RETURN_IF_ERROR(mirrors[i]->guards_intact(&intact));
    if (!intact) return Status::Internal("tensor " + std::to_string(i) + ": device bytes outside it were written");
  }
  return Status::Ok();
}

// A [T, H] tensor whose view starts `shift` elements into its storage (rows padded by
// pad + shift), so a 2-byte shift misaligns every 16-byte vector. padding_intact() does not
// apply to shifted views.
inline check::HostTensor shifted(DType dt, int64_t T, int64_t H, int64_t pad, int64_t shift) {
  check::HostTensor t(dt, {T, H}, pad + shift);
  auto* base = static_cast<unsigned char*>(t.view().data);
  t.view().data = base + shift * dtype_bits(dt) / 8;
  return t;
}

// e4m3 code `got` for the exact value v (= y / s with the kernel's stored s): the nearest code,
// or its neighbour when v lies within kTieWindow of their midpoint. NaN must meet NaN.
inline ::testing::AssertionResult e4m3_code_ok(uint64_t got, long double v) {
  const uint8_t want = optest::e4m3_code_by_search(v);
  if (std::isnan(v)) {
    if (optest::e4m3_is_nan(got)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "want NaN, got code 0x" << std::hex << got;
  }
  if (got == want) return ::testing::AssertionSuccess();
  const int gm = static_cast<int>(got & 0x7F), wm = want & 0x7F;
  const bool same_sign = (got & optest::kE4m3Sign) == (want & optest::kE4m3Sign);
  if (gm == 0 && wm == 0) return ::testing::AssertionSuccess();  // +-0 for a value rounding to 0
  if (same_sign && std::abs(gm - wm) == 1 && gm <= optest::kE4m3MaxCode && wm <= optest::kE4m3MaxCode) {
    const long double mid = (optest::e4m3_positive_value(gm) + optest::e4m3_positive_value(wm)) / 2;
    if (std::fabs(std::fabs(v) - mid) <= kTieWindow * mid) return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "code 0x" << std::hex << got << " for value " << static_cast<double>(v)
                                       << ", nearest code 0x" << static_cast<int>(want);
}

// f32 values: NaN where want is NaN (and only there), equal values (the same infinity too:
// Inf - Inf is NaN), an infinity only against the same one, relative error within `rel`
// elsewhere.
inline ::testing::AssertionResult f32_close(double got, double want, double rel) {
  if (std::isnan(want) || std::isnan(got)) {
    if (std::isnan(want) && std::isnan(got)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "got " << got << " want " << want;
  }
  if (got == want) return ::testing::AssertionSuccess();
  // An infinity must meet the same infinity (the bound rel * Inf would accept anything).
  if (!std::isinf(got) && !std::isinf(want) && std::fabs(got - want) <= rel * std::fabs(want))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << got << " want " << want;
}

}  // namespace tejas::normtest
