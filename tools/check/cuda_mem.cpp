#include "check/cuda_mem.h"

#include <cstring>
#include <vector>

#include "ops/probe/probe.h"
#include "runtime/validate.h"

#if TEJAS_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace tejas::check {
namespace {
constexpr size_t kGuardBytes = 256;
// cudaMalloc returns 256-byte-aligned memory; the mirror keeps the host view's address modulo
// this, so a misaligned host view (element offset, odd base) is just as misaligned on the device.
constexpr size_t kAlignModulus = 256;
constexpr uint8_t kGuardByte = 0xA5;
constexpr const char* kNoCuda = "built without CUDA (host-only build)";

#if TEJAS_WITH_CUDA
Status from_cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::Ok();
  return Status::CudaError(std::string(what) + ": " + cudaGetErrorString(e));
}
#endif
}  // namespace

int current_device_index() {
  const int d = detail::current_cuda_device();
  return d >= 0 ? d : 0;
}

size_t payload_bytes(const TensorView& v) {
  int64_t lo = 0, hi = 0;
  v.byte_extent(&lo, &hi);
  return hi > 0 ? static_cast<size_t>(hi) : 0;
}

#if TEJAS_WITH_CUDA
bool cuda_available(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    if (why) *why = std::string("no CUDA device: ") + (e != cudaSuccess ? cudaGetErrorString(e) : "count is 0");
    return false;
  }
  return true;
}
int cuda_sm_count() {
  int device = 0, n = 0;
  if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}
Status device_alloc(void** ptr, size_t bytes) { return from_cuda(cudaMalloc(ptr, bytes), "cudaMalloc"); }
void device_free(void* ptr) {
  if (ptr) (void)cudaFree(ptr);
}
Status copy_to_device(void* dst, const void* src, size_t bytes) {
  return from_cuda(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
}
Status copy_to_host(void* dst, const void* src, size_t bytes) {
  return from_cuda(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
}
Status copy_device_to_device(void* dst, const void* src, size_t bytes) {
  return from_cuda(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy device to device");
}
Status device_fill(void* dst, uint8_t byte, size_t bytes) { return from_cuda(cudaMemset(dst, byte, bytes), "cudaMemset"); }
Status device_fill_async(void* dst, uint8_t byte, size_t bytes, void* stream) {
  return from_cuda(cudaMemsetAsync(dst, byte, bytes, static_cast<cudaStream_t>(stream)), "cudaMemsetAsync");
}
Status device_synchronize() { return from_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

Status run_under_graph_capture(const std::function<Status(void* stream)>& call) {
  // The inputs went up by cudaMemset and pageable cudaMemcpy on the legacy stream, which may
  // return before their DMA lands; the non-blocking stream below would not wait for it.
  TEJAS_RETURN_IF_ERROR(device_synchronize());
  cudaStream_t stream = nullptr;
  TEJAS_RETURN_IF_ERROR(from_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate"));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  Status s = from_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
  if (s.ok()) {
    const Status called = call(stream);
    const Status ended = from_cuda(cudaStreamEndCapture(stream, &graph), "graph capture (cudaStreamEndCapture)");
    s = !called.ok() ? called : ended;
  }
  if (s.ok()) s = from_cuda(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  if (s.ok()) s = from_cuda(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
  if (s.ok()) s = from_cuda(cudaStreamSynchronize(stream), "graph run (cudaStreamSynchronize)");
  if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  (void)cudaStreamDestroy(stream);
  (void)cudaGetLastError();  // a failed capture's error stays with this call's Status
  return s;
}
Status run_on_new_stream(const std::function<Status(void* stream)>& call) {
  TEJAS_RETURN_IF_ERROR(device_synchronize());
  cudaStream_t stream = nullptr;
  TEJAS_RETURN_IF_ERROR(from_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate"));
  Status s = call(stream);
  const Status synced = from_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  if (s.ok()) s = synced;
  (void)cudaStreamDestroy(stream);
  return s;
}
#else
bool cuda_available(std::string* why) {
  if (why) *why = kNoCuda;
  return false;
}
int cuda_sm_count() { return 0; }
Status device_alloc(void** ptr, size_t) {
  *ptr = nullptr;
  return Status::Unsupported(kNoCuda);
}
void device_free(void*) {}
Status copy_to_device(void*, const void*, size_t) { return Status::Unsupported(kNoCuda); }
Status copy_to_host(void*, const void*, size_t) { return Status::Unsupported(kNoCuda); }
Status copy_device_to_device(void*, const void*, size_t) { return Status::Unsupported(kNoCuda); }
Status device_fill(void*, uint8_t, size_t) { return Status::Unsupported(kNoCuda); }
Status device_fill_async(void*, uint8_t, size_t, void*) { return Status::Unsupported(kNoCuda); }
Status device_synchronize() { return Status::Unsupported(kNoCuda); }
Status run_under_graph_capture(const std::function<Status(void*)>&) { return Status::Unsupported(kNoCuda); }
Status run_on_new_stream(const std::function<Status(void*)>&) { return Status::Unsupported(kNoCuda); }
#endif

DeviceMirror::~DeviceMirror() {
  if (owned_) device_free(base_);
}

size_t DeviceMirror::footprint(const HostTensor& h) {
  const size_t bytes =
      kGuardBytes + reinterpret_cast<uintptr_t>(h.view().data) % kAlignModulus + payload_bytes(h.view()) + kGuardBytes;
  return (bytes + kAlignModulus - 1) / kAlignModulus * kAlignModulus;
}

Status DeviceMirror::upload(const HostTensor& h, uint8_t* storage) {
  if (owned_) device_free(base_);
  base_ = nullptr;
  owned_ = false;
  payload_ = payload_bytes(h.view());
  offset_ = kGuardBytes + reinterpret_cast<uintptr_t>(h.view().data) % kAlignModulus;
  const size_t total = footprint(h);
  footprint_ = total;
  if (storage == nullptr) {
    void* p = nullptr;
    TEJAS_RETURN_IF_ERROR(device_alloc(&p, total));
    owned_ = true;
    storage = static_cast<uint8_t*>(p);
  }
  base_ = storage;
  TEJAS_RETURN_IF_ERROR(device_fill(base_, kGuardByte, total));
  TEJAS_RETURN_IF_ERROR(copy_to_device(base_ + offset_, h.view().data, payload_));
  view_ = h.view();
  view_.data = base_ + offset_;
  view_.device = Device::cuda;
  view_.device_index = current_device_index();
  return Status::Ok();
}

InputProducer::~InputProducer() {
  device_free(source_);
  device_free(block_);
}

Status InputProducer::upload(const std::vector<const HostTensor*>& hosts, const std::vector<DeviceMirror*>& mirrors) {
  if (hosts.size() != mirrors.size() || block_ != nullptr) return Status::Internal("InputProducer::upload: misuse");
  for (const HostTensor* h : hosts) bytes_ += DeviceMirror::footprint(*h);
  if (bytes_ == 0) return Status::Ok();
  void* p = nullptr;
  TEJAS_RETURN_IF_ERROR(device_alloc(&p, bytes_));
  block_ = static_cast<uint8_t*>(p);
  // Last input first: the copy restores the block in address order, so the first input (x, q,
  // codes), the op's first read, is restored last.
  size_t at = 0;
  for (size_t i = hosts.size(); i-- > 0;) {
    TEJAS_RETURN_IF_ERROR(mirrors[i]->upload(*hosts[i], block_ + at));
    at += DeviceMirror::footprint(*hosts[i]);
    mirrors_.push_back(mirrors[i]);
  }
  TEJAS_RETURN_IF_ERROR(device_alloc(&p, bytes_));
  source_ = static_cast<uint8_t*>(p);
  TEJAS_RETURN_IF_ERROR(copy_device_to_device(source_, block_, bytes_));
  // Once eagerly, on the legacy stream: stream_copy's first-call queries happen outside any capture.
  return produce(nullptr);
}

Status InputProducer::produce(void* stream) const {
  if (source_ == nullptr) return Status::Ok();
  for (const DeviceMirror* m : mirrors_) {
    if (m->payload_size() > 0)
      TEJAS_RETURN_IF_ERROR(device_fill_async(m->payload(), kProducedPoison, m->payload_size(), stream));
  }
  ExecContext ctx;
  ctx.backend = Backend::cuda;
  ctx.stream = stream;
  const auto bytes = static_cast<int64_t>(bytes_);  // a multiple of 256: whole 16-byte vectors
  const int device = current_device_index();
  const TensorView src = TensorView::contiguous(source_, DType::u8, {bytes}, Device::cuda, device);
  const TensorView dst = TensorView::contiguous(block_, DType::u8, {bytes}, Device::cuda, device);
  return probe::stream_copy(ctx, src, dst, probe::StreamCopyOptions{});
}

Status DeviceMirror::download(HostTensor& h) const { return copy_to_host(h.view().data, base_ + offset_, payload_); }

Status DeviceMirror::guards_intact(bool* intact) const {
  // The tail runs to the footprint's end (the rounding bytes too).
  std::vector<uint8_t> head(offset_), tail(footprint_ - offset_ - payload_);
  TEJAS_RETURN_IF_ERROR(copy_to_host(head.data(), base_, offset_));
  TEJAS_RETURN_IF_ERROR(copy_to_host(tail.data(), base_ + offset_ + payload_, tail.size()));
  *intact = true;
  for (uint8_t b : head)
    if (b != kGuardByte) *intact = false;
  for (uint8_t b : tail)
    if (b != kGuardByte) *intact = false;
  return Status::Ok();
}

}  // namespace tejas::check
