// Workload rows of the fused rope ops (mrope, rope_kv_cache_write) and of kv_cache_write for the
// rope suite. rope_kv_cache_write is compared with its unfused sequence, rope then
// kv_cache_write. mrope has no unfused Tejas sequence, so no baseline.
#include <sstream>
#include <string_view>

#include "bench/suites.h"
#include "tejas/tejas.h"

namespace tejas::bench {

namespace {

constexpr int64_t kMaxPos = 16384;
constexpr int64_t kBlockSize = 16;                       // paged KV block (WORKLOADS.md page sizes 16, 64)
constexpr int64_t kMropeSections[3] = {16, 24, 24};      // Qwen2-VL, rotary_dim 128
constexpr double kRopeFlopsPerRotatedElem = 3.0;         // floors.h convention
constexpr double kFp8QuantFlopsPerElem = 1.0;            // one division per cached element
constexpr double kFp8Scale = 0.05;

Workload row(const char* op, const ModelShape& m, std::string shape, Cost cost) {
  Workload w;
  w.suite = "rope";
  w.op = op;
  w.model = m.name;
  w.shape = std::move(shape);
  w.cost = cost;
  w.check_op = op;
  return w;
}

// mrope moves what rope moves plus two more position rows per token; cos/sin rows of three
// positions cover rotary_dim values in all (each pair reads one row).
Cost cost_mrope(int64_t T, int64_t Hq, int64_t Hk, int64_t rotary) {
  Cost c = cost_rope(T, Hq, Hk, rotary, DType::bf16, DType::f32, DType::i32);
  c.bytes += tensor_bytes(DType::i32, 2 * T);
  return c;
}

// q, k rotary dims read + written; k's tail and v read once (every token cached here); both
// cache rows written once; cos/sin, positions and slots read once per token.
Cost cost_rope_kv_cache_write(int64_t T, int64_t Hq, int64_t Hk, int64_t D, int64_t rotary, DType cache) {
  Cost c;
  const int64_t rotated = T * (Hq + Hk) * rotary, kv_row = T * Hk * D;
  c.flops = kRopeFlopsPerRotatedElem * static_cast<double>(rotated) +
            (dtype_is_fp8(cache) ? kFp8QuantFlopsPerElem * 2.0 * static_cast<double>(kv_row) : 0.0);
  c.bytes = 2 * tensor_bytes(DType::bf16, rotated) + tensor_bytes(DType::bf16, T * Hk * (D - rotary)) +
            tensor_bytes(DType::bf16, kv_row) + 2 * tensor_bytes(cache, kv_row) +
            tensor_bytes(DType::f32, T * rotary) + tensor_bytes(DType::i32, T) + tensor_bytes(DType::i64, T);
  return c;
}

// rope_kv_cache_write's unfused sequence: rope in place, then kv_cache_write of the rotated k and
// of v (vLLM's rotary_embedding, then reshape_and_cache).
constexpr const char* kUnfusedKv = "unfused: rope + kv_cache_write";

check::HostTensor iota(DType dt, std::vector<int64_t> shape, int64_t modulo) {
  check::HostTensor t(dt, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.set_flat(i, static_cast<double>(i % modulo));
  return t;
}

// The tensors of one KV row: positions, q, k, v, cos/sin, slots 0..T-1 (token t in cache row t),
// caches of `cache`'s dtype and, for fp8, their scales (`scale`: kFp8Scale, an arbitrary
// calibrated-looking scale; 1: the kernels' exact path for a power-of-two scale, an uncalibrated
// cache's).
struct KvTensors {
  TensorView pos, q, k, v, cos, slots;
  PagedKvCache paged;
};

Status make_kv_tensors(DeviceArena& a, int64_t T, int64_t Hq, int64_t Hk, int64_t D, int64_t R, DType cache,
                       KvTensors* t, double scale = kFp8Scale) {
  const int64_t blocks = (T + kBlockSize - 1) / kBlockSize;
  TEJAS_RETURN_IF_ERROR(a.upload(iota(DType::i32, {T}, kMaxPos), &t->pos));
  TEJAS_RETURN_IF_ERROR(a.upload(iota(DType::i64, {T}, blocks * kBlockSize), &t->slots));
  TEJAS_RETURN_IF_ERROR(a.random(DType::bf16, {T, Hq, D}, &t->q));
  TEJAS_RETURN_IF_ERROR(a.random(DType::bf16, {T, Hk, D}, &t->k));
  TEJAS_RETURN_IF_ERROR(a.random(DType::bf16, {T, Hk, D}, &t->v));
  TEJAS_RETURN_IF_ERROR(a.random(DType::f32, {kMaxPos, R}, &t->cos));
  TEJAS_RETURN_IF_ERROR(a.empty(cache, {blocks, kBlockSize, Hk, D}, &t->paged.k_cache));
  TEJAS_RETURN_IF_ERROR(a.empty(cache, {blocks, kBlockSize, Hk, D}, &t->paged.v_cache));
  if (dtype_is_fp8(cache)) {
    check::HostTensor s(DType::f32, {1});
    s.set_flat(0, scale);
    TEJAS_RETURN_IF_ERROR(a.upload(s, &t->paged.k_scale));
    TEJAS_RETURN_IF_ERROR(a.upload(s, &t->paged.v_scale));
  }
  return Status::Ok();
}

// k and v read once (all cached here), the cache rows written once, slots (and scales) read.
Cost cost_kv_cache_write(int64_t T, int64_t Hk, int64_t D, DType cache) {
  Cost c;
  const int64_t kv_row = T * Hk * D;
  c.flops = dtype_is_fp8(cache) ? kFp8QuantFlopsPerElem * 2.0 * static_cast<double>(kv_row) : 0.0;
  c.bytes = 2 * tensor_bytes(DType::bf16, kv_row) + 2 * tensor_bytes(cache, kv_row) + tensor_bytes(DType::i64, T) +
            (dtype_is_fp8(cache) ? 2 * tensor_bytes(DType::f32, 1) : 0);
  return c;
}

void add_kv_rows(const ModelShape& m, std::vector<Workload>& out) {
  const int64_t Hq = m.q_heads, Hk = m.kv_heads, D = m.head_dim, R = m.rotary_dim;
  for (DType cache : {DType::bf16, DType::e4m3}) {
    for (int64_t T : token_counts()) {
      Workload w = row("rope_kv_cache_write", m,
                       cat("T=", T, " Hq=", Hq, " Hk=", Hk, " D=", D, " rotary=", R, " neox bf16 -> ", dtype_name(cache),
                           " cache, block ", kBlockSize),
                       cost_rope_kv_cache_write(T, Hq, Hk, D, R, cache));
      w.prepare = [=](DeviceArena& a, std::function<Status()>* launch) {
        KvTensors t;
        TEJAS_RETURN_IF_ERROR(make_kv_tensors(a, T, Hq, Hk, D, R, cache, &t));
        *launch = [=] {
          return rope_kv_cache_write(cuda_ctx(), t.pos, t.q, t.k, t.v, t.cos, RopeStyle::neox, t.slots, t.paged);
        };
        return Status::Ok();
      };
      w.baseline = kUnfusedKv;
      w.baseline_prepare = [=](DeviceArena& a, std::function<Status()>* launch) {
        KvTensors t;
        TEJAS_RETURN_IF_ERROR(make_kv_tensors(a, T, Hq, Hk, D, R, cache, &t));
        *launch = [=] {
          TEJAS_RETURN_IF_ERROR(rope(cuda_ctx(), t.pos, t.q, t.k, t.cos, RopeStyle::neox));
          return kv_cache_write(cuda_ctx(), t.k, t.v, t.slots, t.paged);
        };
        return Status::Ok();
      };
      out.push_back(std::move(w));

      Workload kv = row("kv_cache_write", m,
                        cat("T=", T, " Hk=", Hk, " D=", D, " bf16 -> ", dtype_name(cache), " cache, block ", kBlockSize),
                        cost_kv_cache_write(T, Hk, D, cache));
      kv.prepare = [=](DeviceArena& a, std::function<Status()>* launch) {
        KvTensors t;
        TEJAS_RETURN_IF_ERROR(make_kv_tensors(a, T, /*Hq=*/1, Hk, D, R, cache, &t));
        *launch = [=] { return kv_cache_write(cuda_ctx(), t.k, t.v, t.slots, t.paged); };
        return Status::Ok();
      };
      out.push_back(std::move(kv));
      if (cache != DType::e4m3) continue;
      // The same at scale 1 (kernel.cuh's exact path for power-of-two scales).
      Workload one = row("kv_cache_write", m,
                         cat("T=", T, " Hk=", Hk, " D=", D, " bf16 -> e4m3 cache (scale 1), block ", kBlockSize),
                         cost_kv_cache_write(T, Hk, D, cache));
      one.prepare = [=](DeviceArena& a, std::function<Status()>* launch) {
        KvTensors t;
        TEJAS_RETURN_IF_ERROR(make_kv_tensors(a, T, /*Hq=*/1, Hk, D, R, cache, &t, 1.0));
        *launch = [=] { return kv_cache_write(cuda_ctx(), t.k, t.v, t.slots, t.paged); };
        return Status::Ok();
      };
      out.push_back(std::move(one));
    }
  }
}

void add_mrope_rows(const ModelShape& m, std::vector<Workload>& out) {
  const int64_t Hq = m.q_heads, Hk = m.kv_heads, D = m.head_dim, R = m.rotary_dim;
  const MropeSection sec{kMropeSections[0], kMropeSections[1], kMropeSections[2]};
  for (int64_t T : token_counts()) {
    Workload w = row("mrope", m, cat("T=", T, " Hq=", Hq, " Hk=", Hk, " D=", D, " sections 16/24/24 bf16"),
                     cost_mrope(T, Hq, Hk, R));
    w.prepare = [=](DeviceArena& a, std::function<Status()>* launch) {
      TensorView pos, q, k, cos;
      TEJAS_RETURN_IF_ERROR(a.upload(iota(DType::i32, {3, T}, kMaxPos), &pos));
      TEJAS_RETURN_IF_ERROR(a.random(DType::bf16, {T, Hq, D}, &q));
      TEJAS_RETURN_IF_ERROR(a.random(DType::bf16, {T, Hk, D}, &k));
      TEJAS_RETURN_IF_ERROR(a.random(DType::f32, {kMaxPos, R}, &cos));
      *launch = [=] { return mrope(cuda_ctx(), pos, q, k, cos, sec); };
      return Status::Ok();
    };
    out.push_back(std::move(w));
  }
}

}  // namespace

void add_rope_fused_rows(const ModelShape& m, std::vector<Workload>& out) {
  // Paged GQA caches with a rotary part; MLA (one latent head, D 576) caches differ.
  if (m.rotary_dim == 0 || is_mla(m)) return;
  add_kv_rows(m, out);
  // M-RoPE rows on the Qwen shapes (rotary 128 = 2 x 64 pairs in the 16/24/24 split).
  const int64_t mrope_rotary = 2 * (kMropeSections[0] + kMropeSections[1] + kMropeSections[2]);
  if (std::string_view(m.name).rfind("qwen", 0) == 0 && m.rotary_dim == mrope_rotary) add_mrope_rows(m, out);
}

}  // namespace tejas::bench
