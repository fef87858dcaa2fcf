// CUDA math, bit-manipulation and bf16 / f16 intrinsics that a host compiler lacks (included by
// cuda_shim.h). Names the host already has (expf, exp2f, exp10f, fminf, sqrtf, ...) come from
// <cmath>; what cuda_fp16.h / cuda_bf16.h already define for the host (conversions, __hadd2,
// __hmul2, __hmax2, ...) is used as is.
//
// Accuracy: the fast-math forms (__expf, __logf, __fdividef, rsqrtf, ...) are computed with the
// accurate host functions, not the GPU's approximations; kernels must not depend on the last
// bits of an approximate intrinsic. Kernels call tejas::dev::expf / rsqrtf (device/math.h),
// which carry the GPU's documented error (math.cpp). Round-to-nearest forms (__fmaf_rn,
// __fsqrt_rn, ...) are exact.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace tejas::emu::detail {

inline constexpr float kLn10 = 2.302585092994045684f;
// __fdividef(x, y) returns 0 for 2^126 < |y| < 2^128 (documented hardware behaviour).
inline constexpr float kFdividefZeroAbove = 8.507059173023462e37f;  // 2^126

// `r` is already an integral value (or NaN / inf).
template <class Int>
inline Int saturate_to(double r) {
  using L = std::numeric_limits<Int>;
  if (std::isnan(r)) return 0;
  if (r <= static_cast<double>(L::min())) return L::min();
  if (r >= static_cast<double>(L::max())) return L::max();  // max rounds up to 2^k in double
  return static_cast<Int>(r);
}

template <class To, class From>
inline To bits_as(From v) {
  static_assert(sizeof(To) == sizeof(From));
  To t;
  std::memcpy(&t, &v, sizeof(To));
  return t;
}

}  // namespace tejas::emu::detail

// ---- float ------------------------------------------------------------------------------------
inline float __expf(float x) { return std::exp(x); }
inline float __exp10f(float x) { return static_cast<float>(std::pow(10.0, static_cast<double>(x))); }
inline float __logf(float x) { return std::log(x); }
inline float __log2f(float x) { return std::log2(x); }
inline float __log10f(float x) { return std::log10(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __tanf(float x) { return std::tan(x); }
inline void __sincosf(float x, float* s, float* c) {
  *s = std::sin(x);
  *c = std::cos(x);
}
inline float __powf(float x, float y) { return std::pow(x, y); }
inline float __tanhf(float x) { return std::tanh(x); }
inline float __fdividef(float x, float y) {
  if (std::fabs(y) > tejas::emu::detail::kFdividefZeroAbove && std::isfinite(y)) return std::isinf(x) ? NAN : 0.0f;
  return x / y;
}
inline float rsqrtf(float x) { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(x))); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __frsqrt_rn(float x) { return rsqrtf(x); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return std::sqrt(x); }
inline float __fdiv_rn(float x, float y) { return x / y; }
inline float __fadd_rn(float x, float y) { return x + y; }
inline float __fsub_rn(float x, float y) { return x - y; }
inline float __fmul_rn(float x, float y) { return x * y; }
inline float __fmaf_rn(float x, float y, float z) { return std::fma(x, y, z); }
inline double __fma_rn(double x, double y, double z) { return std::fma(x, y, z); }
inline float __saturatef(float x) { return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; }  // NaN -> 0
inline float __int_as_float(int x) { return tejas::emu::detail::bits_as<float>(x); }
inline int __float_as_int(float x) { return tejas::emu::detail::bits_as<int>(x); }
inline unsigned __float_as_uint(float x) { return tejas::emu::detail::bits_as<unsigned>(x); }
inline float __uint_as_float(unsigned x) { return tejas::emu::detail::bits_as<float>(x); }
inline long long __double_as_longlong(double x) { return tejas::emu::detail::bits_as<long long>(x); }
inline double __longlong_as_double(long long x) { return tejas::emu::detail::bits_as<double>(x); }
// Float -> integer conversions saturate like the GPU's cvt.rni / rzi / rmi / rpi: NaN gives 0,
// values beyond the type's range give its minimum / maximum (0 for negatives into unsigned).
// The rounding is done in double, where every float and every rounded double is exact.
#define TEJAS_EMU_CVT_SAT(FROM, FROM_T, TO, TO_T)                                                          \
  inline TO_T __##FROM##2##TO##_rn(FROM_T x) {                                                            \
    return tejas::emu::detail::saturate_to<TO_T>(std::nearbyint(static_cast<double>(x)));                 \
  }                                                                                                       \
  inline TO_T __##FROM##2##TO##_rz(FROM_T x) {                                                            \
    return tejas::emu::detail::saturate_to<TO_T>(std::trunc(static_cast<double>(x)));                     \
  }                                                                                                       \
  inline TO_T __##FROM##2##TO##_rd(FROM_T x) {                                                            \
    return tejas::emu::detail::saturate_to<TO_T>(std::floor(static_cast<double>(x)));                     \
  }                                                                                                       \
  inline TO_T __##FROM##2##TO##_ru(FROM_T x) {                                                            \
    return tejas::emu::detail::saturate_to<TO_T>(std::ceil(static_cast<double>(x)));                      \
  }
TEJAS_EMU_CVT_SAT(float, float, int, int)
TEJAS_EMU_CVT_SAT(float, float, uint, unsigned)
TEJAS_EMU_CVT_SAT(float, float, ll, long long)
TEJAS_EMU_CVT_SAT(float, float, ull, unsigned long long)
TEJAS_EMU_CVT_SAT(double, double, int, int)
TEJAS_EMU_CVT_SAT(double, double, uint, unsigned)
TEJAS_EMU_CVT_SAT(double, double, ll, long long)
TEJAS_EMU_CVT_SAT(double, double, ull, unsigned long long)
#undef TEJAS_EMU_CVT_SAT
inline float __int2float_rn(int x) { return static_cast<float>(x); }
inline float __uint2float_rn(unsigned x) { return static_cast<float>(x); }

// ---- integer bits -----------------------------------------------------------------------------
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  return __builtin_bswap32(x);
}
inline unsigned long long __brevll(unsigned long long x) {
  return (static_cast<unsigned long long>(__brev(static_cast<unsigned>(x))) << 32) | __brev(static_cast<unsigned>(x >> 32));
}
// Funnel shifts of the 64-bit value hi:lo; the plain forms wrap the shift (& 31), _lc/_rc clamp it.
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>((v << (shift & 31u)) >> 32);
}
inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>((v << (shift < 32u ? shift : 32u)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>(v >> (shift & 31u));
}
inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>(v >> (shift < 32u ? shift : 32u));
}
// Byte i of the result is byte (s >> 4i) & 7 of the 8-byte value y:x.
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const unsigned long long v = (static_cast<unsigned long long>(y) << 32) | x;
  unsigned r = 0;
  for (unsigned i = 0; i < 4; ++i) r |= static_cast<unsigned>((v >> (((s >> (4 * i)) & 7u) * 8)) & 0xffu) << (8 * i);
  return r;
}
inline unsigned __umulhi(unsigned x, unsigned y) {
  return static_cast<unsigned>((static_cast<unsigned long long>(x) * y) >> 32);
}
inline int __mulhi(int x, int y) { return static_cast<int>((static_cast<long long>(x) * y) >> 32); }
inline unsigned long long __umul64hi(unsigned long long x, unsigned long long y) {
  return static_cast<unsigned long long>((static_cast<unsigned __int128>(x) * y) >> 64);
}

// ---- min / max (CUDA declares these for device code in the global namespace) ------------------
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline unsigned min(int a, unsigned b) { return min(static_cast<unsigned>(a), b); }
inline unsigned max(int a, unsigned b) { return max(static_cast<unsigned>(a), b); }
inline unsigned min(unsigned a, int b) { return min(a, static_cast<unsigned>(b)); }
inline unsigned max(unsigned a, int b) { return max(a, static_cast<unsigned>(b)); }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }

// ---- bf16 / f16 functions missing from the headers' host paths ------------------------------------
// fma with one rounding: the product of two 16-bit floats is exact in double, and the double fma
// then rounds once more to the 16-bit format (a double rounding that can differ from the device
// only when c is below 2^-53 of a*b at an exact tie).
inline __half __hfma(__half a, __half b, __half c) {
  return __double2half(std::fma(static_cast<double>(__half2float(a)), static_cast<double>(__half2float(b)),
                                static_cast<double>(__half2float(c))));
}
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) {
  return __halves2half2(__hfma(__low2half(a), __low2half(b), __low2half(c)),
                        __hfma(__high2half(a), __high2half(b), __high2half(c)));
}
inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) {
  return __double2bfloat16(std::fma(static_cast<double>(__bfloat162float(a)),
                                    static_cast<double>(__bfloat162float(b)),
                                    static_cast<double>(__bfloat162float(c))));
}
inline __nv_bfloat162 __hfma2(__nv_bfloat162 a, __nv_bfloat162 b, __nv_bfloat162 c) {
  return __halves2bfloat162(__hfma(__low2bfloat16(a), __low2bfloat16(b), __low2bfloat16(c)),
                            __hfma(__high2bfloat16(a), __high2bfloat16(b), __high2bfloat16(c)));
}
// _relu: negative results become +0; a NaN result becomes the canonical NaN.
inline __nv_bfloat16 __hfma_relu(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) {
  const __nv_bfloat16 r = __hfma(a, b, c);
  const float f = __bfloat162float(r);
  if (std::isnan(f)) return __float2bfloat16(NAN);
  return f < 0.0f ? __float2bfloat16(0.0f) : r;
}
inline __nv_bfloat162 __hfma2_relu(__nv_bfloat162 a, __nv_bfloat162 b, __nv_bfloat162 c) {
  return __halves2bfloat162(__hfma_relu(__low2bfloat16(a), __low2bfloat16(b), __low2bfloat16(c)),
                            __hfma_relu(__high2bfloat16(a), __high2bfloat16(b), __high2bfloat16(c)));
}
inline int __bfloat162int_rn(__nv_bfloat16 x) { return __float2int_rn(__bfloat162float(x)); }
inline int __half2int_rn(__half x) { return __float2int_rn(__half2float(x)); }
