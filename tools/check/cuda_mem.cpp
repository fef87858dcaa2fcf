#include "check/cuda_mem.h"

#include <cstring>
#include <vector>

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
Status device_synchronize() { return Status::Unsupported(kNoCuda); }
Status run_under_graph_capture(const std::function<Status(void*)>&) { return Status::Unsupported(kNoCuda); }
#endif

DeviceMirror::~DeviceMirror() { device_free(base_); }

Status DeviceMirror::upload(const HostTensor& h) {
  payload_ = payload_bytes(h.view());
  offset_ = kGuardBytes + reinterpret_cast<uintptr_t>(h.view().data) % kAlignModulus;
  const size_t total = offset_ + payload_ + kGuardBytes;
  void* p = nullptr;
  TEJAS_RETURN_IF_ERROR(device_alloc(&p, total));
  base_ = static_cast<uint8_t*>(p);
  TEJAS_RETURN_IF_ERROR(device_fill(base_, kGuardByte, total));
  TEJAS_RETURN_IF_ERROR(copy_to_device(base_ + offset_, h.view().data, payload_));
  view_ = h.view();
  view_.data = base_ + offset_;
  view_.device = Device::cuda;
  view_.device_index = 0;
  return Status::Ok();
}

Status DeviceMirror::download(HostTensor& h) const { return copy_to_host(h.view().data, base_ + offset_, payload_); }

Status DeviceMirror::guards_intact(bool* intact) const {
  std::vector<uint8_t> head(offset_), tail(kGuardBytes);
  TEJAS_RETURN_IF_ERROR(copy_to_host(head.data(), base_, offset_));
  TEJAS_RETURN_IF_ERROR(copy_to_host(tail.data(), base_ + offset_ + payload_, kGuardBytes));
  *intact = true;
  for (uint8_t b : head)
    if (b != kGuardByte) *intact = false;
  for (uint8_t b : tail)
    if (b != kGuardByte) *intact = false;
  return Status::Ok();
}

}  // namespace tejas::check
