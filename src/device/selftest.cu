// device_selftest_cuda: the fragment kernel on the GPU (compiled for every arch in
// TEJAS_CUDA_ARCHS, so ptxas validates each wrapper's inline PTX for sm_80 and sm_90a).
#include "device/selftest.h"

#include <cuda_runtime.h>

#include <string>

#include "device/selftest_kernel.cuh"

namespace tejas {
namespace {

constexpr int kFp8MinMajorMinor = 89;
constexpr int kStmatrixMinMajorMinor = 90;
constexpr uint64_t kInputSeed = 0x7E1A5u;

// Device buffers freed on every exit path.
struct DeviceBuffers {
  void* p[7] = {};
  ~DeviceBuffers() {
    for (void* q : p) cudaFree(q);
  }
};

template <class T>
cudaError_t upload(void** dst, const std::vector<T>& v) {
  cudaError_t e = cudaMalloc(dst, v.size() * sizeof(T));
  if (e == cudaSuccess) e = cudaMemcpy(*dst, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
  return e;
}
template <class T>
cudaError_t download(std::vector<T>& v, const void* src) {
  return cudaMemcpy(v.data(), src, v.size() * sizeof(T), cudaMemcpyDeviceToHost);
}

Status cuda_status(cudaError_t e, const char* what) {
  return Status::CudaError(std::string("device_selftest_cuda: ") + what + ": " + cudaGetErrorString(e));
}

}  // namespace

Status device_selftest_cuda(std::string* report) {
  namespace st = dev::selftest;
  int device = 0;
  cudaDeviceProp prop{};
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaGetDeviceProperties(&prop, device);
  if (e != cudaSuccess) return Status::Unsupported(std::string("device_selftest_cuda: no GPU: ") + cudaGetErrorString(e));
  const int cc = prop.major * 10 + prop.minor;
  const bool fp8 = cc >= kFp8MinMajorMinor, stmatrix = cc >= kStmatrixMinMajorMinor;

  const st::Inputs in = st::make_inputs(kInputSeed);
  st::Outputs out;
  DeviceBuffers buf;
  if ((e = upload(&buf.p[0], in.mma_a)) != cudaSuccess) return cuda_status(e, "upload");
  if ((e = upload(&buf.p[1], in.mma_b)) != cudaSuccess) return cuda_status(e, "upload");
  if ((e = upload(&buf.p[2], in.mma_c)) != cudaSuccess) return cuda_status(e, "upload");
  if ((e = upload(&buf.p[3], out.mma_d)) != cudaSuccess) return cuda_status(e, "upload");  // poisoned
  if ((e = upload(&buf.p[4], in.ld_src)) != cudaSuccess) return cuda_status(e, "upload");
  if ((e = upload(&buf.p[5], out.ld_out)) != cudaSuccess) return cuda_status(e, "upload");
  if ((e = upload(&buf.p[6], out.st_out)) != cudaSuccess) return cuda_status(e, "upload");

  st::Params p{};
  p.mma_a = static_cast<const uint32_t*>(buf.p[0]);
  p.mma_b = static_cast<const uint32_t*>(buf.p[1]);
  p.mma_c = static_cast<const float*>(buf.p[2]);
  p.mma_d = static_cast<float*>(buf.p[3]);
  p.ld_src = static_cast<const uint16_t*>(buf.p[4]);
  p.ld_out = static_cast<uint32_t*>(buf.p[5]);
  p.st_out = static_cast<uint16_t*>(buf.p[6]);
  p.run_fp8 = fp8;
  p.run_stmatrix = stmatrix;
  st::fragment_kernel<<<1, st::kWarp, sizeof(st::Smem)>>>(p);
  if ((e = cudaGetLastError()) != cudaSuccess) return cuda_status(e, "launch");
  if ((e = cudaDeviceSynchronize()) != cudaSuccess) return cuda_status(e, "kernel");
  if ((e = download(out.mma_d, buf.p[3])) != cudaSuccess) return cuda_status(e, "download");
  if ((e = download(out.ld_out, buf.p[5])) != cudaSuccess) return cuda_status(e, "download");
  if ((e = download(out.st_out, buf.p[6])) != cudaSuccess) return cuda_status(e, "download");

  const std::string mismatches = st::check_outputs(in, out, fp8, stmatrix);
  if (report) {
    *report = std::string("device self-test on ") + prop.name + " (sm_" + std::to_string(cc) + "): mma bf16/f16" +
              (fp8 ? "/e4m3/e5m2" : "") + ", ldmatrix x1/x2/x4 (+trans)" + (stmatrix ? ", stmatrix x1/x2/x4 (+trans)" : "") +
              ": " + (mismatches.empty() ? "all match" : "MISMATCH") + "\n" + mismatches;
  }
  if (!mismatches.empty()) return Status::Internal("device_selftest_cuda: fragment mismatch:\n" + mismatches);
  return Status::Ok();
}

}  // namespace tejas
