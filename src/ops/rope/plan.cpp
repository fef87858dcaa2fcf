#include "ops/rope/plan.h"

#include <algorithm>

#include "ops/common/emu_launch.h"
#include "runtime/alignment.h"
#include "runtime/tune.h"
#include "runtime/validate.h"

static_assert(tejas::detail::kTuneMaxRopeHeads == tejas::rotary::kMaxHeadsInFlight,
              "rope.heads reaches every instantiated heads-in-flight count (kernels.cuh)");

namespace tejas::rotary {
namespace {

// rope.pipeline asks for the pipelined kernels of this op: 1 (the default) for the ops without
// caches (rope, mrope), 2 for rope_kv_cache_write too, 3 for kv_cache_write too (kv_pipe_kernel).
bool pipeline_asked(int pipeline, KvKind kv) { return pipeline >= 2 || (pipeline == 1 && kv == KvKind::none); }

KvKind kv_kind_of(const RopeArgs& a) {
  if (!a.cache.k_cache.defined()) return KvKind::none;
  switch (a.cache.k_cache.dtype) {
    case DType::e4m3: return KvKind::e4m3;
    case DType::e5m2: return KvKind::e5m2;
    default: return KvKind::same;
  }
}

}  // namespace

RopeLaunch plan_launch(const RopeArgs& a) {
  RopeLaunch l;
  // Without a rotation (kv_cache_write): no rotary columns, k's whole rows are the "tail" copied
  // to the cache, and neither positions nor cos/sin are read. A rotation without q: the split
  // rope_kv_cache_write's k half (run_kernel_backend), k rotated and both caches written by
  // kv_rope_kernel.
  const bool rotates = a.cos_sin.defined();
  const bool has_q = a.q.defined();
  const TensorView& x = has_q ? a.q : a.k;
  l.dtype = x.dtype;
  const KvKind kv = kv_kind_of(a);
  l.k_half = rotates && !has_q && kv != KvKind::none;
  const int64_t rotary = rotates ? a.cos_sin.shape[1] : 0, half = rotary / 2;

  RopeProblem& pr = l.problem;
  pr.elem_bytes = dtype_bits(x.dtype) / 8;
  pr.cos_elem_bytes = rotates ? dtype_bits(a.cos_sin.dtype) / 8 : pr.elem_bytes;
  pr.kv_cache_elem_bytes = kv == KvKind::none ? 0 : dtype_bits(a.cache.k_cache.dtype) / 8;
  pr.interleaved = a.style == RopeStyle::gptj;
  pr.T = x.shape[0];
  pr.Hq = has_q ? a.q.shape[1] : 0;
  pr.Hk = a.k.defined() ? a.k.shape[1] : 0;
  pr.D = x.shape[2];
  pr.rotary_dim = rotary;
  for (int s = 0; s < kNumSections; ++s) pr.sections[s] = a.mrope ? a.sections[s] : (s == 0 ? half : 0);
  using detail::access_alignment;
  pr.qk_align = std::min(access_alignment(a.q, kMaxAccessBytes), access_alignment(a.k, kMaxAccessBytes));
  pr.cos_align = rotates ? access_alignment(a.cos_sin, kMaxAccessBytes) : kMaxAccessBytes;
  pr.v_align = access_alignment(a.v, kMaxAccessBytes);
  pr.kv_cache_align = std::min(access_alignment(a.cache.k_cache, kMaxAccessBytes),
                               access_alignment(a.cache.v_cache, kMaxAccessBytes));
  // rope.heads=0 (the default): two heads in flight where q is rotated, one for the KV-cache
  // write alone (H200, docs/kernels/rope.md: two heads with head staging were 15-23% faster on
  // the rotating ops, 9% slower on kv_cache_write).
  // The split's k half: one column of one head per thread (kv_rope_kernel walks no head steps).
  const int heads = detail::tune().rope_heads;
  pr.heads_in_flight = l.k_half ? 1 : heads > 0 ? heads : (rotates ? kMaxHeadsInFlight : 1);
  if (l.k_half) pr.block_threads = kKvRopeBlockThreads;
  l.config = choose_config(pr);
  // The pipelined kernel's wide step (config.h's kPipeWideHeads): rope and mrope under the
  // defaults (rope.heads per op, head staging, rope.pipeline >= 1) where two heads per thread
  // need a second step and three make one.
  if (rotates && kv == KvKind::none && heads == 0 && detail::tune().rope_head_stage != 0 &&
      pipeline_asked(detail::tune().rope_pipeline, kv) && !pipe_eligible(pr, l.config)) {
    RopeProblem wide = pr;
    wide.heads_in_flight = kPipeWideHeads;
    const RopeConfig cw = choose_config(wide);
    if (pipe_eligible(wide, cw)) {
      pr = wide;
      l.config = cw;
    }
  }
  const RopeConfig& c = l.config;

  RopeParams& p = l.params;
  p = RopeParams{};
  p.q = a.q.data;
  p.k = a.k.data;
  p.v = a.v.data;
  p.positions = a.positions.data;
  p.cos_sin = a.cos_sin.data;
  p.slots = static_cast<const int64_t*>(a.slots.data);
  p.k_cache = a.cache.k_cache.data;
  p.v_cache = a.cache.v_cache.data;
  p.k_scale = static_cast<const float*>(a.cache.k_scale.data);
  p.v_scale = static_cast<const float*>(a.cache.v_scale.data);
  p.T = pr.T;
  p.Hq = pr.Hq;
  p.Hk = pr.Hk;
  p.D = pr.D;
  p.half = half;
  if (has_q) {
    p.q_tok = a.q.stride[0];
    p.q_head = a.q.stride[1];
  }
  if (a.k.defined()) {
    p.k_tok = a.k.stride[0];
    p.k_head = a.k.stride[1];
  }
  if (a.v.defined()) {
    p.v_tok = a.v.stride[0];
    p.v_head = a.v.stride[1];
  }
  if (a.mrope) {
    p.pos_row = a.positions.stride[0];
    p.pos_tok = a.positions.stride[1];
    p.sec_end0 = a.sections[0];
    p.sec_end1 = a.sections[0] + a.sections[1];
  } else if (rotates) {
    p.pos_tok = a.positions.stride[0];
    p.sec_end0 = p.sec_end1 = half;
  }
  if (rotates) {
    p.cs_row = a.cos_sin.stride[0];
    p.max_pos = a.cos_sin.shape[0];
  }
  if (kv != KvKind::none) {
    const TensorView &kc = a.cache.k_cache, &vc = a.cache.v_cache;
    p.kc_block = kc.stride[0];
    p.kc_slot = kc.stride[1];
    p.kc_head = kc.stride[2];
    p.vc_block = vc.stride[0];
    p.vc_slot = vc.stride[1];
    p.vc_head = vc.stride[2];
    p.block_div = dev::make_fast_div(static_cast<uint64_t>(kc.shape[1]));
    p.num_slots = kc.shape[0] * kc.shape[1];
  }
  p.pos_i64 = a.positions.dtype == DType::i64;
  p.cos_f32 = a.cos_sin.dtype == DType::f32;
  p.neox = a.style == RopeStyle::neox;
  p.v_prefetch = detail::tune().rope_v_prefetch != 0;
  p.head_prefetch = detail::tune().rope_head_prefetch != 0;
  const int64_t stage_bytes = head_stage_smem_bytes(c, pr.elem_bytes, pr.interleaved);
  p.head_stage = !l.k_half && detail::tune().rope_head_stage != 0 && stage_bytes > 0;
  p.kv_loads_first = !rotates && kv != KvKind::none && detail::tune().rope_kv_loads_first != 0;
  // rope.v_stage: one more 16-byte slot per thread for its first v vector (kernel.cuh's v_slot).
  p.v_stage = p.head_stage && kv != KvKind::none && detail::tune().rope_v_stage != 0;
  const int64_t one_stage = stage_bytes + (p.v_stage ? int64_t{c.threads} * kMaxAccessBytes : 0);
  l.smem_bytes = p.head_stage ? static_cast<size_t>(one_stage) : 0;
  // rope.pipeline (pipeline_asked): two stages of the head slots and of the v slots (kernel.cuh's
  // rope_pipe_kernel); for kv_cache_write, two stages of a k and a v slot per thread
  // (kv_pipe_kernel).
  const int pipeline = detail::tune().rope_pipeline;
  l.pipeline = p.head_stage && pipeline_asked(pipeline, kv) && pipe_eligible(pr, c);
  if (l.pipeline) l.smem_bytes = static_cast<size_t>(2 * one_stage);
  if (p.kv_loads_first && pipeline == 3 && kv_pipe_eligible(pr, c)) {
    l.pipeline = true;
    l.smem_bytes = static_cast<size_t>(2 * 2 * int64_t{c.threads} * kMaxAccessBytes);
  }
  // rope.kv_rope_pipe: the split's k half persistent (kv_rope_pipe_kernel): two stages of a k and
  // a v column per thread (two 16-byte accesses each for neox, one for gptj).
  if (l.k_half && detail::tune().rope_kv_rope_pipe != 0 && kv_rope_pipe_eligible(pr, c)) {
    l.pipeline = true;
    l.smem_bytes = static_cast<size_t>(2 * 2 * head_accesses(c, pr.interleaved) * int64_t{c.threads} * kMaxAccessBytes);
  }
  p.kv_kind = kv;
  // rope.clean_scales (kernel.cuh's clean_scales): fp8 caches with 16-bit k and v, in the kernels
  // that check (kv_write_kernel, kv_rope_kernel and the persistent ones), in blocks of
  // kCleanMinThreads or more.
  p.clean_scales = (kv == KvKind::e4m3 || kv == KvKind::e5m2) && pr.elem_bytes == 2 &&
                   detail::tune().rope_clean_scales != 0 && (l.pipeline || p.kv_loads_first || l.k_half) &&
                   c.threads >= kCleanMinThreads;
  p.col_div = dev::make_fast_div32(static_cast<uint32_t>(pr.D / c.vec));
  p.group_div = dev::make_fast_div32(static_cast<uint32_t>(c.col_threads * c.head_lanes));
  p.lane_div = dev::make_fast_div32(static_cast<uint32_t>(c.col_threads));
  p.rot_cols = c.rot_cols;
  p.pass_cols = c.pass_cols;
  p.col_threads = c.col_threads;
  p.head_lanes = c.head_lanes;
  p.tokens_per_block = c.tokens_per_block;
  return l;
}

}  // namespace tejas::rotary

namespace tejas::rotary {

RopeLaunch without_pipeline(const RopeLaunch& planned) {
  RopeLaunch l = planned;
  if (!l.pipeline) return l;
  l.pipeline = false;
  l.smem_bytes = l.params.kv_loads_first || l.k_half ? 0 : l.smem_bytes / 2;
  l.params.clean_scales = l.params.clean_scales && (l.params.kv_loads_first || l.k_half);
  return l;
}

namespace {
thread_local RopeLaunch g_last_launch, g_last_q_launch;
thread_local bool g_q_launch_set = false;  // g_last_q_launch holds a split's q half
thread_local bool g_force_fallback = false;

// One planned launch on the backend (the emulator's reports of the op call gathered by the caller's
// begin_emulator_call); *record: the launch as run. The launch struct (~600 bytes) is copied once,
// into *record: this runs on every call.
Status run_launch(const char* op, const ExecContext& ctx, Backend backend, const RopeArgs& a, const RopeLaunch& l,
                  RopeLaunch* record) {
  if (backend == Backend::emulator) {
    *record = g_force_fallback ? without_pipeline(l) : l;
    return launch_emulator(op, ctx, a, *record);
  }
#if TEJAS_WITH_CUDA
  return launch_cuda(op, ctx, l, record);
#else
  *record = l;
  return detail::cuda_not_built(op, backend);
#endif
}
}  // namespace

ScopedPipelineFallback::ScopedPipelineFallback() : ScopedSet(g_force_fallback, true) {}
bool pipeline_fallback_forced() { return g_force_fallback; }

RopeLaunch last_launch() { return g_last_launch; }
RopeLaunch last_q_launch() { return g_last_q_launch; }

Status run_kernel_backend(const char* op, const ExecContext& ctx, Backend backend, const RopeArgs& a) {
  if (backend == Backend::emulator) detail::begin_emulator_call();
  const RopeLaunch l = plan_launch(a);
  // (g_last_launch: written by run_launch, whatever the outcome.)
  if (!a.q.defined() || a.mrope || !kv_split_planned(l.problem, detail::tune().rope_kv_split)) {
    if (g_q_launch_set) g_last_q_launch = RopeLaunch{};
    g_q_launch_set = false;
    return run_launch(op, ctx, backend, a, l, &g_last_launch);
  }
  // rope_kv_cache_write split (config.h's kv_split_planned): q rotated by plain rope's kernel, then
  // k rotated and both caches written by kv_rope_kernel. Disjoint outputs, so the order is free.
  RopeArgs qa;
  qa.positions = a.positions;
  qa.q = a.q;
  qa.cos_sin = a.cos_sin;
  qa.style = a.style;
  RopeArgs ka = a;
  ka.q = TensorView{};
  g_q_launch_set = true;
  const Status q_half = run_launch(op, ctx, backend, qa, plan_launch(qa), &g_last_q_launch);
  if (!q_half.ok()) {
    g_last_launch = RopeLaunch{};  // the k half did not run
    return q_half;
  }
  return run_launch(op, ctx, backend, ka, plan_launch(ka), &g_last_launch);
}

}  // namespace tejas::rotary
