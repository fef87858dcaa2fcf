// Host planning of the quantization launches: TensorViews -> kernel parameters + configs. A view
// whose leading dims collapse to one row stride (the usual case) is one launch; otherwise one
// launch per index of the outer leading dims (as many as those dims hold: no fixed bound). So
// the plan is the collapsed layout, not a list: launch i's parameters and config are derived
// from it on demand, and planning and launching allocate nothing.
#pragma once
#include <cstdint>

#include "ops/quant/config.h"
#include "ops/quant/params.h"
#include "ops/quant/quant_math.h"
#include "runtime/scoped_set.h"
#include "tejas/tensor.h"

namespace tejas::quant_kernel {

inline constexpr int kNumLayoutTensors = 3;  // data (x / out), q, scales

// Leading dims of the three layout tensors after dropping extent-1 dims and merging dims that
// step uniformly in all of them, outermost first. n == 0: a single row.
struct SliceLayout {
  int n = 0;
  int64_t size[kMaxDims] = {};
  int64_t stride[kMaxDims][kNumLayoutTensors] = {};  // elements (q: nibbles for e2m1)
};

// The tensors of one call; the first three are the layout tensors, in layout order.
struct PlanTensors {
  const TensorView* data = nullptr;          // x (quant) or out (dequant)
  const TensorView* q = nullptr;
  const TensorView* scales = nullptr;
  const TensorView* tensor_scale = nullptr;  // may be absent
};

// What both directions plan alike: the tensors, the code format, the collapsed layout.
struct Plan {
  PlanTensors t;
  CodeFormat code = CodeFormat::e4m3;
  int64_t group = 1;
  SliceLayout layout;
  int64_t num_launches = 0;  // 0 for empty tensors
};

struct QuantPlan : Plan {
  ScaleRule rule = ScaleRule::fp8_f32;
  // The CTAs of version 7's kernel the device holds at once (config.h's with_clean_table), set by
  // the backend before launching: the GPU's occupancy (launch.cu), kEmuResidentCtas on the
  // emulator; 0 (unknown): no version 7.
  int64_t resident_ctas = 0;
};

// The emulator's stand-in for the CTAs a GPU holds at once: small, so that tests of a few
// thousand groups already walk several steps per CTA.
inline constexpr int64_t kEmuResidentCtas = 2;

// Tests: while one is alive, this thread's quant calls plan version 7 with `ctas` resident CTAs
// on either backend (instead of the GPU's count or kEmuResidentCtas), so that a call of a test's
// size takes version 7 on a GPU too.
class ScopedResidentCtas : detail::ScopedSet<int64_t> {
 public:
  explicit ScopedResidentCtas(int64_t ctas);
};
// The backends' resident CTA count for version 7: the override above, else `measured`.
int64_t resident_ctas_or_override(int64_t measured);

struct DequantPlan : Plan {};

struct QuantLaunch {
  QuantParams params;
  QuantConfig config;
};

struct DequantLaunch {
  DequantParams params;
  DequantConfig config;
};

// A launch's dynamic shared memory (config.h's for quant; dequant has none).
inline int64_t smem_bytes(const DequantConfig&) { return 0; }

QuantPlan plan_quant(const TensorView& x, const TensorView& q, const TensorView& scales,
                     const TensorView& tensor_scale, int64_t group, ScaleRule rule);
DequantPlan plan_dequant(const TensorView& q, const TensorView& scales, const TensorView& tensor_scale,
                         const TensorView& out, int64_t group);

// Launch i (0 <= i < plan.num_launches): the i-th slice in row-major order of the outer dims.
// The TensorViews the plan points to must still be alive.
QuantLaunch quant_launch(const QuantPlan& plan, int64_t i);
DequantLaunch dequant_launch(const DequantPlan& plan, int64_t i);

// Prints each launch's config when TEJAS_PRINT_CONFIG=1.
void print_plan(const char* op, const QuantPlan& plan);
void print_plan(const char* op, const DequantPlan& plan);

}  // namespace tejas::quant_kernel
