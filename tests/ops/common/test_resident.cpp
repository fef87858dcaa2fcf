// detail::RelaxedCaptureScope (ops/common/resident.h): the launchers' occupancy queries and
// attribute calls run in it, so that a capture in progress tolerates them. GPU only: without a
// driver the runtime cannot exchange capture modes, and the scope does nothing.
#include <gtest/gtest.h>

#include "support/seed.h"
#if TEJAS_WITH_CUDA
#include <cuda_runtime_api.h>

#include "ops/common/resident.h"

namespace {
using tejas::detail::RelaxedCaptureScope;

// This thread's capture interaction mode (exchanged out and back).
cudaStreamCaptureMode current_mode() {
  cudaStreamCaptureMode m = cudaStreamCaptureModeGlobal;
  EXPECT_EQ(cudaThreadExchangeStreamCaptureMode(&m), cudaSuccess);
  cudaStreamCaptureMode back = m;
  EXPECT_EQ(cudaThreadExchangeStreamCaptureMode(&back), cudaSuccess);
  return m;
}
}  // namespace

TEST(RelaxedCaptureScopeCuda, SwapsToRelaxedAndRestoresNested) {
  TEJAS_REQUIRE_CUDA();
  cudaStreamCaptureMode m = cudaStreamCaptureModeThreadLocal;
  ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&m), cudaSuccess);
  const cudaStreamCaptureMode before = m;
  {
    const RelaxedCaptureScope outer;
    EXPECT_EQ(current_mode(), cudaStreamCaptureModeRelaxed);
    {
      const RelaxedCaptureScope inner;
      EXPECT_EQ(current_mode(), cudaStreamCaptureModeRelaxed);
    }
    EXPECT_EQ(current_mode(), cudaStreamCaptureModeRelaxed) << "the inner scope restored the outer's mode";
  }
  EXPECT_EQ(current_mode(), cudaStreamCaptureModeThreadLocal);
  m = before;
  ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&m), cudaSuccess);
}

// A potentially unsafe call (cudaMalloc) inside the scope, while this thread captures a stream in
// global mode: tolerated, and the capture still ends in a graph. Outside the scope the same call
// is refused and the capture invalidated, which is what the scope spares an engine's capture.
TEST(RelaxedCaptureScopeCuda, KeepsAGlobalCaptureValidThroughAnUnsafeCall) {
  TEJAS_REQUIRE_CUDA();
  for (const bool scoped : {true, false}) {
    SCOPED_TRACE(scoped ? "inside the scope" : "outside the scope");
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
    void* p = nullptr;
    cudaError_t e;
    if (scoped) {
      const RelaxedCaptureScope relaxed;
      e = cudaMalloc(&p, 256);
    } else {
      e = cudaMalloc(&p, 256);
    }
    cudaGraph_t graph = nullptr;
    const cudaError_t end = cudaStreamEndCapture(stream, &graph);
    (void)cudaGetLastError();
    if (scoped) {
      EXPECT_EQ(e, cudaSuccess) << cudaGetErrorName(e);
      EXPECT_EQ(end, cudaSuccess) << cudaGetErrorName(end);
    } else {
      EXPECT_NE(e, cudaSuccess) << "cudaMalloc under global capture was allowed: the test proves nothing";
      EXPECT_NE(end, cudaSuccess) << "the refused call did not invalidate the capture";
    }
    if (graph != nullptr) cudaGraphDestroy(graph);
    if (p != nullptr) cudaFree(p);
    cudaStreamDestroy(stream);
    (void)cudaGetLastError();
  }
}
#else
TEST(RelaxedCaptureScopeCuda, NeedsACudaBuild) { GTEST_SKIP() << "host-only build: no CUDA runtime"; }
#endif
