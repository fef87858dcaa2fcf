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

// Reads element 0 of a device f32 tensor (a scale) through copy_view_to_host.
Status read_device_f32(const char* op, const ExecContext& ctx, const TensorView& t, float* value);

}  // namespace tejas::detail
