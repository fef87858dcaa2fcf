// stream_copy (probe.h): validation, backend choice, dispatch.
#include <cstdint>
#include <string>

#include "ops/probe/launch.h"
#include "ops/probe/probe.h"
#include "runtime/validate.h"

namespace tejas::probe {
namespace {

constexpr const char* kOp = "stream_copy";

// The mixes kernel.cuh instantiates: (1, 1), (2, 1), (4, 1), (1, 2), (1, 4) and the read pass (1, 0).
bool mix_supported(int reads, int writes) {
  return (writes == 1 && (reads == 1 || reads == 2 || reads == 4)) ||
         (reads == 1 && (writes == 0 || writes == 2 || writes == 4));
}

// Messages are built only for a failed rule (this runs in every timed bench launch).
Status validate(const TensorView& src, const TensorView& dst, const StreamCopyOptions& o) {
  detail::Validator v(kOp);
  v.defined(src, "src").defined(dst, "dst");
  v.dtype_in(src, "src", {DType::u8}).same_dtype(dst, "dst", src, "src");
  v.rank(src, "src", 1).rank(dst, "dst", 1);
  if (!mix_supported(o.reads, o.writes))
    v.require(false, [&] {
      return "options.reads / options.writes: expected 1 / 1, 2 / 1, 4 / 1, 1 / 2, 1 / 4 or 1 / 0 (the read pass), "
             "got " +
             std::to_string(o.reads) + " / " + std::to_string(o.writes);
    });
  if (!(o.vecs == 1 || o.vecs == 2 || o.vecs == 4 || o.vecs == kMaxVecs))
    v.require(false, [&] { return "options.vecs: expected 1, 2, 4 or 8, got " + std::to_string(o.vecs); });
  if (o.blocks_per_sm < 0 || o.blocks_per_sm > kMaxBlocksPerSm)
    v.require(false, [&] {
      return "options.blocks_per_sm: expected 0 (no cap) .. " + std::to_string(kMaxBlocksPerSm) + ", got " +
             std::to_string(o.blocks_per_sm);
    });
  if (o.stages != 0) {
    if (!(o.stages == 1 || o.stages == 2 || o.stages == 4))
      v.require(false,
                [&] { return "options.stages: expected 0 (no cp.async), 1, 2 or 4, got " + std::to_string(o.stages); });
    else if (o.reads != 1 || o.writes != 1)
      v.require(false, [&] {
        return "options.reads / options.writes: the cp.async mode (options.stages > 0) copies: expected 1 / 1, got " +
               std::to_string(o.reads) + " / " + std::to_string(o.writes);
      });
    else if (o.blocks_per_sm == 0)
      v.require(false, [&] {
        return "options.blocks_per_sm: the cp.async mode needs its persistent blocks per SM (1 .. " +
               std::to_string(kMaxBlocksPerSm) + "), got 0";
      });
    else if (o.vecs > 4)
      v.require(false,
                [&] { return "options.vecs: the cp.async mode takes 1, 2 or 4, got " + std::to_string(o.vecs); });
  }
  if (!v.ok()) return v.status();
  if (o.reads * o.vecs > kMaxLoadsPerThread)
    v.require(false, [&] {
      return "options.vecs: expected reads x vecs <= " + std::to_string(kMaxLoadsPerThread) + ", got " +
             std::to_string(o.reads) + " x " + std::to_string(o.vecs);
    });
  v.contiguous(src, "src").contiguous(dst, "dst");
  if (!v.ok()) return v.status();
  const int64_t plane = int64_t{kVecBytes} * o.reads;
  if (src.shape[0] <= 0 || src.shape[0] % plane != 0)
    v.require(false, [&] {
      return "src: expected a positive multiple of " + std::to_string(plane) + " bytes (" + std::to_string(o.reads) +
             " planes of 16-byte vectors), got " + std::to_string(src.shape[0]);
    });
  if (!v.ok()) return v.status();
  const int64_t n = src.shape[0] / plane;
  if (o.writes == 0) {
    if (dst.shape[0] != stream_read_sink_bytes(n, o.vecs))
      v.require(false, [&] {
        return "dst: expected " + std::to_string(stream_read_sink_bytes(n, o.vecs)) +
               " bytes (the read pass: one 16-byte vector per warp of its " +
               std::to_string(stream_copy_blocks(n, o.vecs)) + " blocks), got " + std::to_string(dst.shape[0]);
      });
  } else if (dst.shape[0] != n * kVecBytes * o.writes)
    v.require(false, [&] {
      return "dst: expected " + std::to_string(n * kVecBytes * o.writes) + " bytes (" + std::to_string(o.writes) +
             " planes of src's " + std::to_string(n) + " vectors), got " + std::to_string(dst.shape[0]);
    });
  v.aligned(src, "src", kVecBytes).aligned(dst, "dst", kVecBytes);
  v.same_device({{"src", &src}, {"dst", &dst}});
  v.no_overlap(dst, "dst", src, "src");
  return v.status();
}

// dst plane w = XOR of the source planes, byte by byte; the read pass: dst vector w = XOR of
// the vectors warp w takes (probe.h).
void reference(const TensorView& src, const TensorView& dst, int64_t n, const StreamCopyOptions& o) {
  const auto* in = static_cast<const uint8_t*>(src.data);
  auto* out = static_cast<uint8_t*>(dst.data);
  const int64_t bytes = n * kVecBytes;
  if (o.writes == 0) {
    const int64_t warps = stream_read_sink_bytes(n, o.vecs) / kVecBytes;
    for (int64_t w = 0; w < warps; ++w) {
      uint8_t x[kVecBytes] = {};
      const int64_t block = w / kWarpsPerBlock, lane0 = (w % kWarpsPerBlock) * 32;
      for (int64_t t = lane0; t < lane0 + 32; ++t)
        for (int i = 0; i < o.vecs; ++i) {
          const int64_t at = block * kThreads * o.vecs + t + int64_t{i} * kThreads;
          if (at >= n) continue;
          for (int r = 0; r < o.reads; ++r)
            for (int b = 0; b < kVecBytes; ++b) x[b] = static_cast<uint8_t>(x[b] ^ in[r * bytes + at * kVecBytes + b]);
        }
      for (int b = 0; b < kVecBytes; ++b) out[w * kVecBytes + b] = x[b];
    }
    return;
  }
  for (int64_t i = 0; i < bytes; ++i) {
    uint8_t x = 0;
    for (int r = 0; r < o.reads; ++r) x = static_cast<uint8_t>(x ^ in[r * bytes + i]);
    for (int w = 0; w < o.writes; ++w) out[w * bytes + i] = x;
  }
}

}  // namespace

Status stream_copy(const ExecContext& ctx, const TensorView& src, const TensorView& dst,
                   const StreamCopyOptions& options, StreamCopyLaunch* launch) {
  TEJAS_RETURN_IF_ERROR(validate(src, dst, options));
  Backend backend;
  TEJAS_RETURN_IF_ERROR(detail::resolve_backend(kOp, ctx, {{"src", &src}, {"dst", &dst}}, &backend));
  StreamCopyLaunch local;
  StreamCopyLaunch& l = launch ? *launch : local;
  l = StreamCopyLaunch{};
  const int64_t n = src.shape[0] / (int64_t{kVecBytes} * options.reads);
  const int64_t blocks = stream_copy_blocks(n, options.vecs);
  if (backend != Backend::reference && blocks > kMaxGridBlocks)
    return Status::Unsupported(std::string(kOp) + ": src: " + std::to_string(n) + " vectors per plane need " +
                               std::to_string(blocks) + " blocks, more than 2^31 - 1");
  switch (backend) {
    case Backend::reference:
      reference(src, dst, n, options);
      return Status::Ok();
    case Backend::emulator:
      return launch_stream_copy_emu(kOp, ctx, src, dst, n, options, &l);
    case Backend::cuda:
#if TEJAS_WITH_CUDA
      return launch_stream_copy_cuda(kOp, ctx, src, dst, n, options, &l, launch != nullptr);
#else
      return detail::cuda_not_built(kOp, backend);
#endif
    case Backend::automatic:  // resolved above; listed for -Wswitch
      break;
  }
  return Status::Internal(std::string(kOp) + ": unresolved backend");
}

}  // namespace tejas::probe
