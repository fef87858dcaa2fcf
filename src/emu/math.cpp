// expf / rsqrtf with the GPU's documented error (see emu.h): the correctly rounded value, moved
// by a seeded, input-determined number of ulps in `gpu` mode.
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "emu/internal.h"

namespace tejas::emu {
namespace {

// Per-function salts, so expf and rsqrtf of one input bit pattern draw independent offsets.
constexpr uint64_t kSaltExpf = 0x65787066ull;    // "expf"
constexpr uint64_t kSaltRsqrtf = 0x72737172ull;  // "rsqr"
constexpr uint64_t kSaltFastExpf = 0x5f657870ull;  // "_exp"
constexpr uint64_t kSaltFdividef = 0x5f646976ull;  // "_div"
constexpr uint64_t kSaltEx2 = 0x5f657832ull;       // "_ex2"
constexpr float kF32MinNormal = 1.17549435e-38f;   // 2^-126
constexpr uint32_t kSignBit = 0x80000000u;
constexpr uint32_t kMaxFiniteMagnitude = 0x7f7fffffu;  // FLT_MAX

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// k in [-max_ulps, max_ulps], uniform, fixed by (seed, salt, input bits).
int ulp_offset(uint64_t seed, uint64_t salt, float x, int max_ulps) {
  const uint64_t h = mix64(mix64(seed ^ (salt * 0x9e3779b97f4a7c15ull)) ^ std::bit_cast<uint32_t>(x));
  const auto span = static_cast<uint64_t>(2 * max_ulps + 1);
  return static_cast<int>(h % span) - max_ulps;
}

// `r` (finite, nonzero) moved k representable floats away from zero (k < 0: towards it); the
// magnitude stays within [smallest subnormal, FLT_MAX], so nothing crosses 0 or reaches Inf.
float move_ulps(float r, int k) {
  const uint32_t b = std::bit_cast<uint32_t>(r);
  const int64_t mag = static_cast<int64_t>(b & ~kSignBit) + k;
  const int64_t clamped = mag < 1 ? 1 : (mag > kMaxFiniteMagnitude ? kMaxFiniteMagnitude : mag);
  return std::bit_cast<float>((b & kSignBit) | static_cast<uint32_t>(clamped));
}

uint64_t current_seed() {
  if (rt::g_launch != nullptr) return rt::g_launch->report.seed;
  static const uint64_t process_seed = rt::env_u64("TEJAS_EMU_SEED", rt::kDefaultSeed);
  return process_seed;
}

MathMode env_math_mode() {
  static const MathMode mode = [] {
    const char* v = std::getenv("TEJAS_EMU_MATH");
    MathMode m = MathMode::gpu;
    if (v != nullptr && *v != '\0' && !parse_math_mode(v, &m)) {
      std::fprintf(stderr, "tejas emu: TEJAS_EMU_MATH=%s is neither gpu nor exact; using gpu\n", v);
    }
    return m;
  }();
  return mode;
}

std::atomic<int> g_mode_override{-1};

}  // namespace

bool parse_math_mode(const char* text, MathMode* out) {
  if (std::strcmp(text, "gpu") == 0) {
    *out = MathMode::gpu;
  } else if (std::strcmp(text, "exact") == 0) {
    *out = MathMode::exact;
  } else {
    return false;
  }
  return true;
}

MathMode math_mode() {
  const int o = g_mode_override.load(std::memory_order_relaxed);
  return o >= 0 ? static_cast<MathMode>(o) : env_math_mode();
}

void set_math_mode(MathMode m) { g_mode_override.store(static_cast<int>(m), std::memory_order_relaxed); }

// e^x rounded once to f32 from the 64-bit-mantissa long double: it can differ from the correctly
// rounded value only where e^x lies within ~2^-63 (relative) of a midpoint between two floats.
float correctly_rounded_expf(float x) {
  return static_cast<float>(std::exp(static_cast<long double>(x)));
}

// 1/sqrt(x) in double is within an f32 ulp; the midpoint m between the candidate and a neighbour
// then decides exactly: 1/sqrt(x) > m  <=>  m^2 x < 1, where m^2 (50 bits) is exact in double and
// fma(m^2, x, -1) has the sign of the exact m^2 x - 1. (x > 0 finite: the result is a normal f32.)
float correctly_rounded_rsqrtf(float x) {
  if (std::isnan(x) || x < 0.0f) return std::numeric_limits<float>::quiet_NaN();
  if (x == 0.0f) return std::signbit(x) ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  if (std::isinf(x)) return 0.0f;
  float r = static_cast<float>(1.0 / std::sqrt(static_cast<double>(x)));
  const double xd = x;
  const float up = std::nextafter(r, std::numeric_limits<float>::infinity());
  const double m_up = (static_cast<double>(r) + static_cast<double>(up)) / 2.0;
  if (std::fma(m_up * m_up, xd, -1.0) < 0.0) return up;  // 1/sqrt(x) above the upper midpoint
  const float down = std::nextafter(r, 0.0f);
  const double m_down = (static_cast<double>(r) + static_cast<double>(down)) / 2.0;
  if (std::fma(m_down * m_down, xd, -1.0) > 0.0) r = down;  // below the lower midpoint
  return r;
}

float perturbed_expf(float x, uint64_t seed) {
  const float r = correctly_rounded_expf(x);
  // NaN, +-Inf in or out, 0 out (underflow, -Inf in) and expf(+-0) = 1 are exact on the GPU.
  if (!std::isfinite(r) || r == 0.0f || x == 0.0f) return r;
  return move_ulps(r, ulp_offset(seed, kSaltExpf, x, kExpfMaxUlps));
}

float perturbed_rsqrtf(float x, uint64_t seed) {
  const float r = correctly_rounded_rsqrtf(x);
  // NaN (x < 0, NaN), +-Inf (x = +-0) and 0 (x = +Inf) are exact.
  if (!std::isfinite(r) || r == 0.0f) return r;
  return move_ulps(r, ulp_offset(seed, kSaltRsqrtf, x, kRsqrtfMaxUlps));
}

int fast_expf_max_ulps(float x) {
  const double grow = std::floor(std::fabs(1.173 * static_cast<double>(x)));
  return 2 + static_cast<int>(std::isfinite(grow) && grow < 1e6 ? grow : 1e6);  // beyond: Inf or 0 anyway
}

float gpu_fast_expf(float x) {
  float r = correctly_rounded_expf(x);
  if (std::isfinite(r) && r != 0.0f && x != 0.0f && math_mode() == MathMode::gpu) {
    r = move_ulps(r, ulp_offset(current_seed(), kSaltFastExpf, x, fast_expf_max_ulps(x)));
  }
  return r < kF32MinNormal ? 0.0f : r;  // ftz: a subnormal result is +0 (and e^x > 0: no sign)
}

float gpu_ex2_approx_ftz(float x) {
  if (std::fabs(x) < kF32MinNormal) x = 0.0f;  // a subnormal input is a (signed) zero: 2^x = 1
  // 2^x in double (exact for integer x, within a double ulp otherwise), rounded once to f32.
  float r = static_cast<float>(std::exp2(static_cast<double>(x)));
  if (std::isfinite(r) && r != 0.0f && x != 0.0f && math_mode() == MathMode::gpu) {
    r = move_ulps(r, ulp_offset(current_seed(), kSaltEx2, x, kEx2ApproxMaxUlps));
  }
  return r < kF32MinNormal ? 0.0f : r;  // ftz: a subnormal result is +0 (2^x > 0: no sign)
}

float gpu_fdividef(float x, float y) {
  const float ay = std::fabs(y);
  if (ay > 8.50705917e37f && std::isfinite(y)) {  // 2^126 < |y| < 2^128: 0, NaN for an infinite x
    if (std::isinf(x)) return std::numeric_limits<float>::quiet_NaN();
    if (!std::isnan(x)) return std::signbit(x) != std::signbit(y) ? -0.0f : 0.0f;
  }
  const float r = x / y;
  if (!std::isfinite(r) || r == 0.0f || math_mode() == MathMode::exact || ay < kF32MinNormal) return r;
  // Both bit patterns pick the offset: equal operands, equal results.
  const float key = std::bit_cast<float>(std::bit_cast<uint32_t>(x) ^ (std::bit_cast<uint32_t>(y) * 0x9e3779b9u));
  return move_ulps(r, ulp_offset(current_seed(), kSaltFdividef, key, kFdividefMaxUlps));
}

float gpu_expf(float x) {
  return math_mode() == MathMode::exact ? correctly_rounded_expf(x) : perturbed_expf(x, current_seed());
}

float gpu_rsqrtf(float x) {
  return math_mode() == MathMode::exact ? correctly_rounded_rsqrtf(x) : perturbed_rsqrtf(x, current_seed());
}

}  // namespace tejas::emu
