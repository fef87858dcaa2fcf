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
  // cuda backend: launch each kernel as the programmatic dependent of the kernel before it in
  // ctx.stream (programmatic dependent launch, sm_90+; cudaLaunchAttributeProgrammaticStreamSerialization),
  // so that its launch and first CTAs overlap that kernel's last ones. Every Tejas kernel waits
  // (griddepcontrol.wait) before touching memory, so the results are those of ordinary stream
  // order whatever ran before; the kernels also let the next kernel launch early once all their
  // CTAs have passed that wait. Ignored on GPUs below sm_90, for kernels not compiled for sm_90+ and on the
  // legacy default stream (a null `stream`). Off by default: what it saves per kernel boundary is
  // not yet measured (docs/using.md).
  bool pdl = false;
};

}  // namespace tejas
