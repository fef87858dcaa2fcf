// Debug-check mode on the cuda backend: a host copy of a small device tensor (positions, slot
// mappings, block tables, scales), so the host-side checks can read its contents. Synchronizes
// ctx.stream; defined only in builds with device code (TEJAS_WITH_CUDA).
#pragma once
#include <cstdint>
#include <vector>

#include "tejas/context.h"
#include "tejas/status.h"
#include "tejas/tensor.h"

namespace tejas::detail {

// Copies the bytes `device` spans into `storage`; `host` is the same view over that copy.
Status copy_view_to_host(const char* op, const ExecContext& ctx, const TensorView& device,
                         std::vector<uint8_t>* storage, TensorView* host);

// Reads a device f32 [1] scale through copy_view_to_host and requires it finite and > 0
// (invalid_argument naming `name` otherwise). An absent tensor passes.
Status check_device_positive_scale(const char* op, const char* name, const ExecContext& ctx, const TensorView& t);

}  // namespace tejas::detail
