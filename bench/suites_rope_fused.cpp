// Workload rows of the fused rope ops (mrope, rope_kv_cache_write) for the rope suite.
// rope_kv_cache_write is compared with rope followed by plain copies of the k and v rows into
// their cache slots (no Tejas op writes the cache on its own; a copy is the least any unfused
// write costs). mrope has no unfused Tejas sequence, so no baseline.
#include <sstream>
#include <string_view>

#include "bench/suites.h"
#include "tejas/tejas.h"

#if TEJAS_WITH_CUDA
#include <cuda_runtime.h>
#endif

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

// The copy baseline moves cache-sized rows: for fp8 caches it copies the first Hk * D bytes of
// each bf16 row (the first half of its heads, as whole bf16 values) and converts nothing, so it
// reads less than any real fp8 write must (a lower bound).
constexpr const char* kCopyBaselineBf16 = "unfused lower bound: rope + k/v row copies (cudaMemcpy2DAsync)";
constexpr const char* kCopyBaselineFp8 =
    "unfused lower bound: rope + k/v row copies (cudaMemcpy2DAsync, cache bytes, no fp8 conversion)";

// Copies `rows` rows of `row_bytes` from src (rows `src_pitch` bytes apart) into dst (rows
// `dst_pitch` bytes apart) on the legacy stream, as time_launch times it.
Status copy_rows(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t row_bytes, size_t rows) {
#if TEJAS_WITH_CUDA
  const cudaError_t e = cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, row_bytes, rows, cudaMemcpyDeviceToDevice);
  return e == cudaSuccess ? Status::Ok() : Status::CudaError(cudaGetErrorString(e));
#else
  (void)dst, (void)dst_pitch, (void)src, (void)src_pitch, (void)row_bytes, (void)rows;
  return Status::Unsupported("built without CUDA (host-only build)");
#endif
}

check::HostTensor iota(DType dt, std::vector<int64_t> shape, int64_t modulo) {
  check::HostTensor t(dt, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.set_flat(i, static_cast<double>(i % modulo));
  return t;
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
        const int64_t blocks = (T + kBlockSize - 1) / kBlockSize;
        TensorView pos, q, k, v, cos, slots, kc, vc, ks, vs;
        TEJAS_RETURN_IF_ERROR(a.upload(iota(DType::i32, {T}, kMaxPos), &pos));
        TEJAS_RETURN_IF_ERROR(a.upload(iota(DType::i64, {T}, blocks * kBlockSize), &slots));
        TEJAS_RETURN_IF_ERROR(a.random(DType::bf16, {T, Hq, D}, &q));
        TEJAS_RETURN_IF_ERROR(a.random(DType::bf16, {T, Hk, D}, &k));
        TEJAS_RETURN_IF_ERROR(a.random(DType::bf16, {T, Hk, D}, &v));
        TEJAS_RETURN_IF_ERROR(a.random(DType::f32, {kMaxPos, R}, &cos));
        TEJAS_RETURN_IF_ERROR(a.empty(cache, {blocks, kBlockSize, Hk, D}, &kc));
        TEJAS_RETURN_IF_ERROR(a.empty(cache, {blocks, kBlockSize, Hk, D}, &vc));
        PagedKvCache paged{kc, vc, {}, {}};
        if (dtype_is_fp8(cache)) {
          check::HostTensor s(DType::f32, {1});
          s.set_flat(0, kFp8Scale);
          TEJAS_RETURN_IF_ERROR(a.upload(s, &ks));
          TEJAS_RETURN_IF_ERROR(a.upload(s, &vs));
          paged.k_scale = ks;
          paged.v_scale = vs;
        }
        *launch = [=] { return rope_kv_cache_write(cuda_ctx(), pos, q, k, v, cos, RopeStyle::neox, slots, paged); };
        return Status::Ok();
      };
      w.baseline = dtype_is_fp8(cache) ? kCopyBaselineFp8 : kCopyBaselineBf16;
      w.baseline_prepare = [=](DeviceArena& a, std::function<Status()>* launch) {
        const int64_t blocks = (T + kBlockSize - 1) / kBlockSize;
        TensorView pos, q, k, v, cos, kc, vc;
        TEJAS_RETURN_IF_ERROR(a.upload(iota(DType::i32, {T}, kMaxPos), &pos));
        TEJAS_RETURN_IF_ERROR(a.random(DType::bf16, {T, Hq, D}, &q));
        TEJAS_RETURN_IF_ERROR(a.random(DType::bf16, {T, Hk, D}, &k));
        TEJAS_RETURN_IF_ERROR(a.random(DType::bf16, {T, Hk, D}, &v));
        TEJAS_RETURN_IF_ERROR(a.random(DType::f32, {kMaxPos, R}, &cos));
        TEJAS_RETURN_IF_ERROR(a.empty(cache, {blocks, kBlockSize, Hk, D}, &kc));
        TEJAS_RETURN_IF_ERROR(a.empty(cache, {blocks, kBlockSize, Hk, D}, &vc));
        // The rows' slot mapping is 0..T-1, so token t's [Hk, D] row lands in cache row t.
        const size_t src_pitch = static_cast<size_t>(dtype_bytes(DType::bf16, Hk * D));
        const size_t dst_pitch = static_cast<size_t>(dtype_bytes(cache, Hk * D));
        const size_t rows = static_cast<size_t>(T);
        *launch = [=] {
          TEJAS_RETURN_IF_ERROR(rope(cuda_ctx(), pos, q, k, cos, RopeStyle::neox));
          TEJAS_RETURN_IF_ERROR(copy_rows(kc.data, dst_pitch, k.data, src_pitch, dst_pitch, rows));
          return copy_rows(vc.data, dst_pitch, v.data, src_pitch, dst_pitch, rows);
        };
        return Status::Ok();
      };
      out.push_back(std::move(w));
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
