// Device memory for the checks and benchmarks: thin wrappers over the CUDA runtime, compiled by
// the host compiler. In host-only builds (no TEJAS_WITH_CUDA) every call says CUDA is not
// available, so callers need no #if of their own.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "check/host_tensor.h"
#include "tejas/status.h"

namespace tejas::check {

// True when built with CUDA and a device is visible; otherwise `why` (if given) says why not:
// "built without CUDA (host-only build)" or "no CUDA device: <runtime error>".
bool cuda_available(std::string* why = nullptr);
// Streaming multiprocessors of the current device (0 without one).
int cuda_sm_count();
// The device_index of views of memory allocated here: the calling thread's current CUDA device
// (the one the ops launch on), 0 without one (or under detail::ScopedAssumedDevice, its device).
int current_device_index();

Status device_alloc(void** ptr, size_t bytes);
void device_free(void* ptr);
Status copy_to_device(void* dst, const void* src, size_t bytes);
Status copy_to_host(void* dst, const void* src, size_t bytes);
Status copy_device_to_device(void* dst, const void* src, size_t bytes);
Status device_fill(void* dst, uint8_t byte, size_t bytes);
Status device_fill_async(void* dst, uint8_t byte, size_t bytes, void* stream);
Status device_synchronize();

// Runs `call(stream)` the way a serving engine's CUDA graphs see it (after the device's earlier
// work, the uploads included, has finished): on a new stream under
// cudaStreamCaptureModeGlobal (the strictest mode: an allocation, a synchronous copy or any
// other call unsafe during capture fails it), then instantiates the captured graph, launches it
// once and waits for it. The call's own Status comes back first (a refused capture's error
// usually shows there), then the capture's, the instantiation's and the launch's.
Status run_under_graph_capture(const std::function<Status(void* stream)>& call);

// Runs `call(stream)` eagerly on a new non-blocking stream (after the device's earlier work, the
// uploads included, has finished), then waits for the stream: the RunOptions::pdl checks, since
// programmatic launches are not made on the legacy stream.
Status run_on_new_stream(const std::function<Status(void* stream)>& call);

// A device copy of a HostTensor's storage (padding included), with guard bytes on both sides.
// The device view has the host view's address modulo 256, so misaligned views stay misaligned.
// Its payload starts as the host bytes, so outputs carry the host tensor's poison byte (the
// one check::ScopedPoison chose when the tensor was made) and unwritten elements come back as it.
class DeviceMirror {
 public:
  DeviceMirror() = default;
  ~DeviceMirror();
  DeviceMirror(const DeviceMirror&) = delete;
  DeviceMirror& operator=(const DeviceMirror&) = delete;

  // Device bytes upload(h, storage) takes: guards, the address modulo 256 and the payload, rounded
  // up to a multiple of 256 (so that mirrors placed one after another keep their alignment).
  static size_t footprint(const HostTensor& h);
  // Allocates (storage null) or uses `storage` (footprint(h) bytes, 256-byte aligned, owned by the
  // caller and outliving the mirror), then writes the guards and copies the payload.
  Status upload(const HostTensor& h, uint8_t* storage = nullptr);
  Status download(HostTensor& h) const;  // copies back into h (same dtype, shape, padding)
  Status guards_intact(bool* intact) const;
  const TensorView& view() const { return view_; }  // the host view, with data on the device
  uint8_t* payload() const { return base_ + offset_; }
  size_t payload_size() const { return payload_; }

 private:
  uint8_t* base_ = nullptr;  // guard (offset_ bytes) + payload + guard
  bool owned_ = false;       // base_ was allocated by upload()
  size_t offset_ = 0;        // payload start: kGuardBytes + host address % 256
  size_t payload_ = 0;
  size_t footprint_ = 0;  // footprint(h) of the uploaded tensor
  TensorView view_;
};

// The producer of a case's inputs for the producer-consumer checks (RunOptions::pdl). upload()
// places every input's mirror in one device block (the last input first: the copy restores the
// block in address order, so the first input is restored last) and keeps a second copy of it (once,
// before any capture), then produces once on the legacy stream (stream_copy's first-call queries
// outside any capture). produce(stream) overwrites every input's payload with kProducedPoison
// (memsets) and copies the whole block back from that copy with one probe::stream_copy kernel on
// `stream` (capturable: no allocation, no synchronization). A call launched right after it as a
// programmatic dependent overlaps that kernel, which writes every one of its inputs, so its first
// kernel, had it read an input before its griddepcontrol.wait, could see the poison (in a block
// larger than the copy's first wave of CTAs, a few MB, the first bytes are restored before the
// call can launch: the check cases' blocks hold at most 0.4 MB).
class InputProducer {
 public:
  static constexpr uint8_t kProducedPoison = 0xFF;
  InputProducer() = default;
  ~InputProducer();
  InputProducer(const InputProducer&) = delete;
  InputProducer& operator=(const InputProducer&) = delete;

  // mirrors[i] gets hosts[i]'s upload, inside the block; both vectors the same length.
  Status upload(const std::vector<const HostTensor*>& hosts, const std::vector<DeviceMirror*>& mirrors);
  Status produce(void* stream) const;

 private:
  uint8_t* block_ = nullptr;   // the mirrors, one after another
  uint8_t* source_ = nullptr;  // the block as uploaded
  size_t bytes_ = 0;
  std::vector<const DeviceMirror*> mirrors_;
};

// Bytes spanned by a HostTensor's view (from its first element to one past its last).
size_t payload_bytes(const TensorView& v);

}  // namespace tejas::check
