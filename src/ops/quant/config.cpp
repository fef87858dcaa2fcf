#include "ops/quant/config.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace tejas::quant_kernel {
namespace {

constexpr int kBitsPerByte = 8;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t clamp_grid(int64_t blocks) { return blocks < 1 ? 1 : (blocks > kMaxGrid ? kMaxGrid : blocks); }

// Largest power of two dividing n (n > 0), capped at `cap`.
int64_t pow2_factor(int64_t n, int64_t cap) {
  int64_t p = 1;
  while (p < cap && n % (2 * p) == 0) p *= 2;
  return p;
}

}  // namespace

QuantConfig make_quant_config(const QuantProblem& p) {
  QuantConfig c;
  const int vec = kVecBytes / p.x_bytes;
  const int q_access = vec * p.code_bits / kBitsPerByte;  // codes of one 16-byte chunk of x
  const int64_t warps_per_block = c.threads / kWarp;
  const int64_t groups = p.group > 0 ? p.rows * (p.K / p.group) : 0;
  if (p.group % vec == 0 && p.x_align >= kVecBytes && p.q_align >= q_access) {
    const int64_t nvec = p.group / vec;
    const int64_t lanes = pow2_factor(nvec, kWarp);
    if (nvec / lanes <= kMaxChunks) {
      c.vectorized = true;
      c.vec = vec;
      c.lanes_per_group = static_cast<int>(lanes);
      c.chunks = static_cast<int>(nvec / lanes);
      c.groups_per_warp = kWarp / lanes;
      c.grid = clamp_grid(ceil_div(groups, c.groups_per_warp * warps_per_block));
      return c;
    }
  }
  c.elems_per_lane = p.code_bits == kBitsPerByte ? 1 : 2;
  c.grid = clamp_grid(ceil_div(groups, warps_per_block));
  return c;
}

DequantConfig make_dequant_config(const DequantProblem& p) {
  DequantConfig c;
  const int vec = kVecBytes / p.out_bytes;
  const int q_access = vec * p.code_bits / kBitsPerByte;
  const int64_t n = p.rows * p.K;
  if (p.group % vec == 0 && p.out_align >= kVecBytes && p.q_align >= q_access) {
    c.vectorized = true;
    c.vec = vec;
  } else {
    c.vec = p.code_bits == kBitsPerByte ? 1 : 2;  // one code byte per thread
  }
  c.grid = clamp_grid(ceil_div(n / c.vec, c.threads));
  return c;
}

std::string QuantConfig::to_string() const {
  std::ostringstream os;
  if (vectorized) {
    os << "vectorized vec " << vec << ", " << lanes_per_group << " lanes x " << chunks << " chunks per group, ";
  } else {
    os << "generic (warp per group, " << elems_per_lane << " elems per lane), ";
  }
  os << threads << " threads, " << groups_per_warp << " groups/warp, grid " << grid;
  return os.str();
}

std::string DequantConfig::to_string() const {
  std::ostringstream os;
  os << (vectorized ? "vectorized" : "generic") << " vec " << vec << ", " << threads << " threads, grid " << grid;
  return os.str();
}


}  // namespace tejas::quant_kernel
