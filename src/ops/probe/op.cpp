// stream_copy (probe.h): validation, backend choice, dispatch.
#include <cstring>
#include <string>

#include "ops/probe/launch.h"
#include "ops/probe/probe.h"
#include "runtime/validate.h"

namespace tejas::probe {
namespace {

constexpr const char* kOp = "stream_copy";

Status validate(const TensorView& src, const TensorView& dst, const StreamCopyOptions& o) {
  detail::Validator v(kOp);
  v.defined(src, "src").defined(dst, "dst");
  v.dtype_in(src, "src", {DType::u8}).same_dtype(dst, "dst", src, "src");
  v.rank(src, "src", 1).rank(dst, "dst", 1);
  if (!v.ok()) return v.status();
  v.contiguous(src, "src").contiguous(dst, "dst");
  v.same_shape(dst, "dst", src, "src");
  v.require(src.shape[0] > 0 && src.shape[0] % kVecBytes == 0,
            "stream_copy: src: expected a positive multiple of " + std::to_string(kVecBytes) + " bytes, got " +
                std::to_string(src.shape[0]));
  v.aligned(src, "src", kVecBytes).aligned(dst, "dst", kVecBytes);
  v.require(o.vecs == 1 || o.vecs == 2 || o.vecs == 4 || o.vecs == kMaxVecs,
            "stream_copy: options.vecs: expected 1, 2, 4 or 8, got " + std::to_string(o.vecs));
  v.require(o.blocks_per_sm >= 0 && o.blocks_per_sm <= kMaxBlocksPerSm,
            "stream_copy: options.blocks_per_sm: expected 0 (no cap) .. " + std::to_string(kMaxBlocksPerSm) +
                ", got " + std::to_string(o.blocks_per_sm));
  v.same_device({{"src", &src}, {"dst", &dst}});
  v.no_overlap(dst, "dst", src, "src");
  return v.status();
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
  const int64_t n = src.shape[0] / kVecBytes;
  switch (backend) {
    case Backend::reference:
      std::memcpy(dst.data, src.data, static_cast<size_t>(src.shape[0]));
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
