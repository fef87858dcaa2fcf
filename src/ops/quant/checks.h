// Argument checks shared by the quantization ops (see include/tejas/quant.h for the rules).
#pragma once
#include <cstdint>
#include <string>

#include "runtime/validate.h"
#include "tejas/quant.h"

namespace tejas::quant_detail {

// The float side (`data`: x or out) and the codes `q` are [..., K] with K a multiple of `block`
// (described in messages as "group_size (128)", or with `mx_format` (an MX format's name) as "the
// mxfp4 block size (32)"); `scales` is [..., K / block].
// Checks ranks, shapes, inner-contiguous non-negative strides and byte-aligned e2m1 rows.
// `block` must already be known positive.
void check_layout(detail::Validator& v, const TensorView& data, const char* data_name, const TensorView& q,
                  const TensorView& scales, int64_t block, const char* mx_format = nullptr);

bool valid_format(MxFormat f);

// tensor_scale: f32 [1] for nvfp4, absent otherwise.
void check_tensor_scale(detail::Validator& v, MxFormat f, const TensorView& tensor_scale);
// Its value (in [kMinTensorScale, kMaxTensorScale]), read when it is a host tensor: call this
// last, after the device and overlap checks.
void check_tensor_scale_value(detail::Validator& v, const TensorView& tensor_scale);
// The same rule for a value read from the device (debug-check mode): invalid_argument naming
// tensor_scale, prefixed by `op`.
Status tensor_scale_value_status(const char* op, double value);
// Debug-check mode on the cuda backend: reads a device tensor_scale (synchronizing ctx.stream)
// and applies the rule above; an absent one (formats without it) passes. Defined in launch.cu: builds with device code only.
Status check_device_tensor_scale(const char* op, const ExecContext& ctx, const TensorView& tensor_scale);

}  // namespace tejas::quant_detail
