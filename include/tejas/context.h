// ExecContext: where and how an op runs.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tejas {

enum class Backend : uint8_t {
  automatic,  // cuda for device tensors, reference for host tensors
  reference,  // float64 C++ semantics on the CPU: the oracle
  emulator,   // the CUDA kernel source executed on the CPU by src/emu (host tensors)
  cuda,       // compiled kernels on the GPU (device tensors)
};

const char* backend_name(Backend b);

struct ExecContext {
  Backend backend = Backend::automatic;
  void* stream = nullptr;       // cudaStream_t for the cuda backend (null = legacy default stream)
  int emulated_arch = 90;       // emulator only: 80 (sm_80) or 90 (sm_90a)
  void* workspace = nullptr;    // scratch owned by the caller; ops say how much they need
  size_t workspace_bytes = 0;
  // Debug-check mode: also validate index contents (block_table, seq_lens, positions, slot
  // mappings). For device tensors this copies them to the host and synchronizes the stream,
  // so it is off by default; the environment variable TEJAS_DEBUG_CHECKS=1 (read once, at the
  // first call) turns it on too.
  bool debug_checks = false;
};

}  // namespace tejas
