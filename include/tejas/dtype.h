// Element types. Sizes count bits so that fp4 (two elements per byte) is exact.
#pragma once
#include <cstdint>
#include <string_view>

namespace tejas {

enum class DType : uint8_t {
  f64,
  f32,
  f16,
  bf16,
  e4m3,   // fp8 e4m3fn: no infinities, NaN = S.1111.111, max 448
  e5m2,   // fp8 e5m2: IEEE-like, infinities, max 57344
  e2m1,   // fp4: two per byte, lower index in the low nibble; max 6, no NaN/Inf
  ue8m0,  // unsigned power-of-two scale byte: 2^(code-127); 0xFF is NaN
  i8,
  u8,
  i32,
  i64,
};

inline constexpr int kNumDTypes = 12;

// Bits per element (4 for e2m1).
constexpr int dtype_bits(DType t) {
  switch (t) {
    case DType::f64: case DType::i64: return 64;
    case DType::f32: case DType::i32: return 32;
    case DType::f16: case DType::bf16: return 16;
    case DType::e4m3: case DType::e5m2: case DType::ue8m0: case DType::i8: case DType::u8: return 8;
    case DType::e2m1: return 4;
  }
  return 0;
}

constexpr bool dtype_is_float(DType t) {
  switch (t) {
    case DType::f64: case DType::f32: case DType::f16: case DType::bf16:
    case DType::e4m3: case DType::e5m2: case DType::e2m1: case DType::ue8m0: return true;
    default: return false;
  }
}

constexpr bool dtype_is_fp8(DType t) { return t == DType::e4m3 || t == DType::e5m2; }

// Bytes spanned by n contiguous elements (rounds fp4 up to whole bytes).
constexpr int64_t dtype_bytes(DType t, int64_t n) { return (n * dtype_bits(t) + 7) / 8; }

// Largest finite values of the 8- and 4-bit float formats (saturation bounds).
inline constexpr double kE4m3Max = 448.0;
inline constexpr double kE5m2Max = 57344.0;
inline constexpr double kE2m1Max = 6.0;
// Floor on the amax behind dynamic FP8 scales, so an all-zero row or group gets a finite,
// nonzero scale (norm.h, quant.h, activation.h).
inline constexpr double kFp8MinAmax = 1e-10;

// "f32", "bf16", "e4m3", ... (stable names used in messages, JSON and the CLI).
std::string_view dtype_name(DType t);
// Parses a name produced by dtype_name; returns false when unknown.
bool parse_dtype(std::string_view name, DType* out);

}  // namespace tejas
