// One decoder layer's small ops, called the way a serving engine calls them from C++ (docs/using.md):
//   fused_add_rms_norm   (residual += x; out = rms_norm(residual) * weight)
//   rope_kv_cache_write  (rotate q and k in place; write k and v into the paged KV cache)
//   silu_mul             (the MLP's gate: silu(gate) * up)
// With a GPU (a CUDA build and a device present): device buffers on a stream, the cuda backend.
// Otherwise: host buffers, the emulator backend (the same kernel source, run on the CPU).
// Toy sizes so that the emulator runs it in well under a second; a real engine passes its own
// shapes (hidden 4096, 32 q heads, 8 kv heads, head dim 128, ...) the same way.
// Exit status 0 when every call succeeded and every output is finite; else 1, with the message.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "tejas/tejas.h"

#if TEJAS_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace {

constexpr int64_t T = 4;                         // tokens in this step (decode: one per sequence)
constexpr int64_t H = 256, F = 512;              // hidden size, MLP intermediate size
constexpr int64_t Hq = 4, Hk = 2, D = 64;        // q heads, kv heads, head dim
constexpr int64_t kBlocks = 8, kBlockSize = 16;  // the paged KV cache: blocks x tokens per block
constexpr int64_t kMaxPos = 128;                 // rows of the cos/sin cache

// Host bytes of bf16 values v(i) = a small pattern (stands in for the model's activations).
std::vector<uint16_t> bf16_pattern(int64_t n, int seed) {
  std::vector<uint16_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const float v = 0.25f * std::sin(0.37f * static_cast<float>(i + 7 * seed));
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    out[static_cast<size_t>(i)] = static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);  // RNE
  }
  return out;
}

bool bf16_all_finite(const std::vector<uint16_t>& v) {
  for (uint16_t b : v)
    if ((b & 0x7F80) == 0x7F80) return false;  // exponent all ones: Inf or NaN
  return true;
}

// Where the tensors live: device memory (cuda) or host memory (emulator). Owns every buffer.
class Memory {
 public:
  explicit Memory(bool device) : device_(device) {}
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  ~Memory() {
    for (void* p : buffers_) {
#if TEJAS_WITH_CUDA
      if (device_) {
        cudaFree(p);
        continue;
      }
#endif
      std::free(p);
    }
  }
  // A contiguous tensor, holding `init`'s bytes when given, else zeros; absent when out of memory.
  tejas::TensorView tensor(tejas::DType dt, std::initializer_list<int64_t> shape, const void* init = nullptr) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    const size_t bytes = static_cast<size_t>(tejas::dtype_bytes(dt, n));
    void* p = nullptr;
#if TEJAS_WITH_CUDA
    if (device_) {
      if (cudaMalloc(&p, bytes) != cudaSuccess) return {};
      buffers_.push_back(p);
      const cudaError_t e = init ? cudaMemcpy(p, init, bytes, cudaMemcpyHostToDevice) : cudaMemset(p, 0, bytes);
      int device = 0;  // where cudaMalloc put it: the current device, which the ops launch on
      if (e != cudaSuccess || cudaGetDevice(&device) != cudaSuccess) return {};
      return tejas::TensorView::contiguous(p, dt, shape, tejas::Device::cuda, device);
    }
#endif
    p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);  // as cudaMalloc aligns
    if (p == nullptr) return {};
    buffers_.push_back(p);
    if (init)
      std::memcpy(p, init, bytes);
    else
      std::memset(p, 0, bytes);
    return tejas::TensorView::contiguous(p, dt, shape, tejas::Device::cpu, 0);
  }
  // The tensor's bytes back on the host.
  std::vector<uint16_t> read_bf16(const tejas::TensorView& t) const {
    std::vector<uint16_t> out(static_cast<size_t>(t.numel()));
#if TEJAS_WITH_CUDA
    if (device_) {
      cudaMemcpy(out.data(), t.data, out.size() * 2, cudaMemcpyDeviceToHost);
      return out;
    }
#endif
    std::memcpy(out.data(), t.data, out.size() * 2);
    return out;
  }

 private:
  bool device_;
  std::vector<void*> buffers_;
};

bool gpu_present() {
#if TEJAS_WITH_CUDA
  int n = 0;
  if (cudaGetDeviceCount(&n) == cudaSuccess && n > 0) return true;
  (void)cudaGetLastError();
#endif
  return false;
}

// Prints a failed call's message ("rope_kv_cache_write: k: expected ...") and says so.
bool ok(const char* what, const tejas::Status& s) {
  if (s.ok()) return true;
  std::fprintf(stderr, "decode_step: %s failed: %s\n", what, s.to_string().c_str());
  return false;
}

}  // namespace

int main() {
  using tejas::DType;
  const bool device = gpu_present();
  Memory mem(device);

  // The step's inputs (an engine's come from its previous GEMMs and its scheduler).
  const auto x_host = bf16_pattern(T * H, 1), res_host = bf16_pattern(T * H, 2), w_host = bf16_pattern(H, 3);
  const auto q_host = bf16_pattern(T * Hq * D, 4), k_host = bf16_pattern(T * Hk * D, 5);
  const auto v_host = bf16_pattern(T * Hk * D, 6), gate_up_host = bf16_pattern(T * 2 * F, 7);
  std::vector<float> cos_sin(static_cast<size_t>(kMaxPos * D));  // [max_pos, rotary_dim]: cos, then sin
  for (int64_t p = 0; p < kMaxPos; ++p)
    for (int64_t i = 0; i < D / 2; ++i) {
      const double angle = static_cast<double>(p) * std::pow(10000.0, -2.0 * static_cast<double>(i) / D);
      cos_sin[static_cast<size_t>(p * D + i)] = static_cast<float>(std::cos(angle));
      cos_sin[static_cast<size_t>(p * D + D / 2 + i)] = static_cast<float>(std::sin(angle));
    }
  const int64_t positions[T] = {17, 3, 64, 100};              // each sequence's next position
  const int64_t slots[T] = {5, 16 * 3 + 2, -1, 16 * 7 + 15};  // cache slots (block x 16 + row); -1: skip

  const tejas::TensorView x = mem.tensor(DType::bf16, {T, H}, x_host.data());
  const tejas::TensorView residual = mem.tensor(DType::bf16, {T, H}, res_host.data());
  const tejas::TensorView weight = mem.tensor(DType::bf16, {H}, w_host.data());
  const tejas::TensorView normed = mem.tensor(DType::bf16, {T, H});
  const tejas::TensorView q = mem.tensor(DType::bf16, {T, Hq, D}, q_host.data());
  const tejas::TensorView k = mem.tensor(DType::bf16, {T, Hk, D}, k_host.data());
  const tejas::TensorView v = mem.tensor(DType::bf16, {T, Hk, D}, v_host.data());
  const tejas::TensorView cos_sin_cache = mem.tensor(DType::f32, {kMaxPos, D}, cos_sin.data());
  const tejas::TensorView pos = mem.tensor(DType::i64, {T}, positions);
  const tejas::TensorView slot_mapping = mem.tensor(DType::i64, {T}, slots);
  tejas::PagedKvCache cache;
  cache.k_cache = mem.tensor(DType::bf16, {kBlocks, kBlockSize, Hk, D});
  cache.v_cache = mem.tensor(DType::bf16, {kBlocks, kBlockSize, Hk, D});
  const tejas::TensorView gate_up = mem.tensor(DType::bf16, {T, 2 * F}, gate_up_host.data());
  const tejas::TensorView mlp = mem.tensor(DType::bf16, {T, F});
  for (const tejas::TensorView* t : std::initializer_list<const tejas::TensorView*>{
           &x, &residual, &weight, &normed, &q, &k, &v, &cos_sin_cache, &pos, &slot_mapping, &cache.k_cache,
           &cache.v_cache, &gate_up, &mlp})
    if (!t->defined()) {
      std::fprintf(stderr, "decode_step: out of %s memory\n", device ? "device" : "host");
      return 1;
    }

  // Where the ops run: the engine's stream (a capturing stream works too: docs/using.md).
  tejas::ExecContext ctx;
  ctx.backend = device ? tejas::Backend::cuda : tejas::Backend::emulator;
#if TEJAS_WITH_CUDA
  cudaStream_t stream = nullptr;
  // The uploads and memsets above ran on the legacy stream, which a non-blocking stream does not
  // wait for (a pageable upload may still be landing when cudaMemcpy returns): finish them first.
  if (device && (cudaDeviceSynchronize() != cudaSuccess ||
                 cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess)) {
    std::fprintf(stderr, "decode_step: setting up the device buffers and the stream failed\n");
    return 1;
  }
  ctx.stream = stream;
#endif
  // Optional, sm_90+: each kernel launched as the programmatic dependent of the one before it in
  // the stream, its launch overlapping that kernel's tail (docs/using.md; off by default, ignored
  // by the emulator and below sm_90).
  ctx.pdl = true;

  const bool all_ok =
      ok("fused_add_rms_norm", tejas::fused_add_rms_norm(ctx, x, residual, weight, 1e-6, normed)) &&
      ok("rope_kv_cache_write",
         tejas::rope_kv_cache_write(ctx, pos, q, k, v, cos_sin_cache, tejas::RopeStyle::neox, slot_mapping, cache)) &&
      ok("silu_mul", tejas::silu_mul(ctx, gate_up, mlp));

  // Bad input is refused before any work, naming the argument (never a crash, never a write).
  const tejas::Status refused = tejas::silu_mul(ctx, gate_up, normed);  // normed is [T, H], not [T, F]
  const bool refuses = refused.code() == tejas::StatusCode::invalid_argument;
  if (!refuses)
    std::fprintf(stderr, "decode_step: a mis-shaped silu_mul was not refused: %s\n", refused.to_string().c_str());

#if TEJAS_WITH_CUDA
  if (device) {
    if (const cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess) {  // a kernel's fault lands here
      std::fprintf(stderr, "decode_step: the step's kernels failed: %s\n", cudaGetErrorString(e));
      return 1;
    }
    cudaStreamDestroy(stream);
  }
#endif
  bool finite = true;
  for (const tejas::TensorView* t : std::initializer_list<const tejas::TensorView*>{
           &residual, &normed, &q, &k, &cache.k_cache, &cache.v_cache, &mlp})
    finite = finite && bf16_all_finite(mem.read_bf16(*t));
  if (!finite) std::fprintf(stderr, "decode_step: an output holds Inf or NaN\n");
  const bool pass = all_ok && refuses && finite;
  std::printf("decode_step: fused_add_rms_norm, rope_kv_cache_write, silu_mul on the %s backend: %s\n",
              tejas::backend_name(ctx.backend), pass ? "ok" : "FAILED");
  if (pass) std::printf("decode_step: a mis-shaped call was refused: %s\n", refused.message().c_str());
  return pass ? 0 : 1;
}
