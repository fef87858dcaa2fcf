#include "ops/common/ref_numeric.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

namespace tejas::ref {
namespace {

// A binary floating-point format with `ebits` exponent and `mbits` mantissa bits.
struct Minifloat {
  int ebits, mbits, bias;
  double max;        // largest finite magnitude
  bool ieee_inf;     // all-ones exponent is Inf/NaN (f16, bf16, e5m2)
  bool saturate;     // overflow -> max (else -> Inf)
  uint64_t nan_code; // positive NaN code (0 if none)
};

constexpr Minifloat kF16{5, 10, 15, 65504.0, true, false, 0x7E00};
constexpr Minifloat kBF16{8, 7, 127, 3.3895313892515355e38, true, false, 0x7FC0};
constexpr Minifloat kE4M3{4, 3, 7, 448.0, false, true, 0x7F};
constexpr Minifloat kE5M2{5, 2, 15, 57344.0, true, true, 0x7E};
constexpr Minifloat kE2M1{2, 1, 1, 6.0, false, true, 0};

double mf_decode(const Minifloat& f, uint64_t bits) {
  const int nbits = 1 + f.ebits + f.mbits;
  const bool neg = (bits >> (nbits - 1)) & 1;
  const uint64_t e = (bits >> f.mbits) & ((1u << f.ebits) - 1);
  const uint64_t m = bits & ((1u << f.mbits) - 1);
  double v;
  const uint64_t emax_field = (1u << f.ebits) - 1;
  if (f.ieee_inf && e == emax_field) {
    v = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (!f.ieee_inf && f.nan_code != 0 && (bits & ((1ull << (nbits - 1)) - 1)) == f.nan_code) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (e == 0) {
    v = std::ldexp(static_cast<double>(m), 1 - f.bias - f.mbits);
  } else {
    v = std::ldexp(static_cast<double>(m + (1ull << f.mbits)), static_cast<int>(e) - f.bias - f.mbits);
  }
  return neg ? -v : v;
}

uint64_t mf_encode(const Minifloat& f, double x) {
  const int nbits = 1 + f.ebits + f.mbits;
  const uint64_t sign = std::signbit(x) ? (1ull << (nbits - 1)) : 0;
  if (std::isnan(x)) return f.nan_code ? (sign | f.nan_code) : 0x7;  // e2m1: +6 (no NaN)
  double a = std::fabs(x);
  const int emin = 1 - f.bias;
  double r = 0;
  if (a != 0 && !std::isinf(a)) {
    int e;
    std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
    e -= 1;             // a in [2^e, 2^(e+1))
    if (e < emin) e = emin;
    const double q = std::ldexp(1.0, e - f.mbits);  // spacing at this binade
    r = std::nearbyint(a / q) * q;                  // exact division by a power of two; RNE
  } else {
    r = a;  // 0 or inf
  }
  if (r > f.max) {
    if (f.saturate) r = f.max;
    else return sign | (((1ull << f.ebits) - 1) << f.mbits);  // Inf
  }
  if (r == 0) return sign;
  int e;
  std::frexp(r, &e);
  e -= 1;
  if (e < emin) {  // subnormal
    const auto m = static_cast<uint64_t>(std::ldexp(r, f.mbits - emin));
    return sign | m;
  }
  const auto m = static_cast<uint64_t>(std::ldexp(r, f.mbits - e)) - (1ull << f.mbits);
  return sign | (static_cast<uint64_t>(e + f.bias) << f.mbits) | m;
}

template <class I>
uint64_t int_encode(double x) {
  if (std::isnan(x)) return 0;
  double r = std::nearbyint(x);
  const double lo = static_cast<double>(std::numeric_limits<I>::min());
  const double hi = static_cast<double>(std::numeric_limits<I>::max());
  I v;
  if (r <= lo) v = std::numeric_limits<I>::min();
  else if (r >= hi) v = std::numeric_limits<I>::max();
  else v = static_cast<I>(r);
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(I));
  return bits;
}

template <class I>
double int_decode(uint64_t bits) {
  I v;
  std::memcpy(&v, &bits, sizeof(I));
  return static_cast<double>(v);
}

}  // namespace

double decode(DType t, uint64_t bits) {
  switch (t) {
    case DType::f64: { double d; std::memcpy(&d, &bits, 8); return d; }
    case DType::f32: { float f; uint32_t b = static_cast<uint32_t>(bits); std::memcpy(&f, &b, 4); return f; }
    case DType::f16: return mf_decode(kF16, bits & 0xFFFF);
    case DType::bf16: return mf_decode(kBF16, bits & 0xFFFF);
    case DType::e4m3: return mf_decode(kE4M3, bits & 0xFF);
    case DType::e5m2: return mf_decode(kE5M2, bits & 0xFF);
    case DType::e2m1: return mf_decode(kE2M1, bits & 0xF);
    case DType::ue8m0:
      return (bits & 0xFF) == 0xFF ? std::numeric_limits<double>::quiet_NaN()
                                   : std::ldexp(1.0, static_cast<int>(bits & 0xFF) - 127);
    case DType::i8: return int_decode<int8_t>(bits);
    case DType::u8: return int_decode<uint8_t>(bits);
    case DType::i32: return int_decode<int32_t>(bits);
    case DType::i64: return int_decode<int64_t>(bits);
  }
  return 0;
}

uint64_t encode(DType t, double x) {
  switch (t) {
    case DType::f64: { uint64_t b; std::memcpy(&b, &x, 8); return b; }
    case DType::f32: { float f = static_cast<float>(x); uint32_t b; std::memcpy(&b, &f, 4); return b; }
    case DType::f16: return mf_encode(kF16, x);
    case DType::bf16: return mf_encode(kBF16, x);
    case DType::e4m3: return mf_encode(kE4M3, x);
    case DType::e5m2: return mf_encode(kE5M2, x);
    case DType::e2m1: return mf_encode(kE2M1, x);
    case DType::ue8m0: {
      if (std::isnan(x)) return 0xFF;
      if (!(x > std::ldexp(1.0, -127))) return 0x00;
      if (x > std::ldexp(1.0, 127)) return 0xFE;
      int e;
      const double m = std::frexp(x, &e);  // x = m 2^e, m in [0.5, 1)
      int k = (m == 0.5) ? e - 1 : e;       // smallest k with 2^k >= x
      return static_cast<uint64_t>(k + 127);
    }
    case DType::i8: return int_encode<int8_t>(x);
    case DType::u8: return int_encode<uint8_t>(x);
    case DType::i32: return int_encode<int32_t>(x);
    case DType::i64: return int_encode<int64_t>(x);
  }
  return 0;
}

double max_finite(DType t) {
  switch (t) {
    case DType::f64: return DBL_MAX;
    case DType::f32: return FLT_MAX;
    case DType::f16: return kF16.max;
    case DType::bf16: return kBF16.max;
    case DType::e4m3: return kE4M3.max;
    case DType::e5m2: return kE5M2.max;
    case DType::e2m1: return kE2M1.max;
    case DType::ue8m0: return std::ldexp(1.0, 127);
    case DType::i8: return 127;
    case DType::u8: return 255;
    case DType::i32: return 2147483647.0;
    case DType::i64: return 9.2233720368547758e18;
  }
  return 0;
}

namespace {
int64_t elem_offset(const TensorView& t, const int64_t* idx) {
  int64_t off = 0;
  for (int d = 0; d < t.ndim; ++d) off += idx[d] * t.stride[d];
  return off;
}
}  // namespace

uint64_t load_bits(const TensorView& t, const int64_t* idx) {
  const int64_t off = elem_offset(t, idx);
  const auto* base = static_cast<const uint8_t*>(t.data);
  const int bits = dtype_bits(t.dtype);
  if (bits == 4) {
    const uint8_t byte = base[off >> 1];
    return (off & 1) ? (byte >> 4) : (byte & 0xF);
  }
  uint64_t v = 0;
  std::memcpy(&v, base + off * (bits / 8), bits / 8);
  return v;
}

void store_bits(const TensorView& t, const int64_t* idx, uint64_t v) {
  const int64_t off = elem_offset(t, idx);
  auto* base = static_cast<uint8_t*>(t.data);
  const int bits = dtype_bits(t.dtype);
  if (bits == 4) {
    uint8_t& byte = base[off >> 1];
    byte = (off & 1) ? static_cast<uint8_t>((byte & 0x0F) | ((v & 0xF) << 4))
                     : static_cast<uint8_t>((byte & 0xF0) | (v & 0xF));
    return;
  }
  std::memcpy(base + off * (bits / 8), &v, bits / 8);
}

double load(const TensorView& t, const int64_t* idx) { return decode(t.dtype, load_bits(t, idx)); }
void store(const TensorView& t, const int64_t* idx, double v) { store_bits(t, idx, encode(t.dtype, v)); }

}  // namespace tejas::ref
