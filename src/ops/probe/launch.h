// Backend launchers of stream_copy (arguments validated by op.cpp; n = vectors of 16 bytes).
#pragma once
#include <cstdint>

#include "ops/probe/probe.h"

namespace tejas::probe {

Status launch_stream_copy_emu(const char* op, const ExecContext& ctx, const TensorView& src, const TensorView& dst,
                              int64_t n, const StreamCopyOptions& o, StreamCopyLaunch* l);
// want_occupancy: also ask the occupancy API for l->resident_blocks_per_sm (a host query the
// timed launches skip).
Status launch_stream_copy_cuda(const char* op, const ExecContext& ctx, const TensorView& src, const TensorView& dst,
                               int64_t n, const StreamCopyOptions& o, StreamCopyLaunch* l, bool want_occupancy);

}  // namespace tejas::probe
