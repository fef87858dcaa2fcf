#include "ops/quant/config.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace tejas::quant_kernel {
namespace {

constexpr int kBitsPerByte = 8;
constexpr int64_t kSectorBytes = 32;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Blocks in [1, kMaxGrid], and at most max_grid when that is > 0 (TEJAS_TUNE quant.max_grid):
// warps loop over the rest (grid-stride).
int64_t clamp_grid(int64_t blocks, int max_grid) {
  const int64_t cap = max_grid > 0 && max_grid < kMaxGrid ? max_grid : kMaxGrid;
  return blocks < 1 ? 1 : (blocks > cap ? cap : blocks);
}

// Largest power of two dividing n (n > 0), capped at `cap`.
int64_t pow2_factor(int64_t n, int64_t cap) {
  int64_t p = 1;
  while (p < cap && n % (2 * p) == 0) p *= 2;
  return p;
}

// Lanes per group (a power of two dividing nvec, the group's 16-byte chunks): the fewest that
// keep chunks per lane <= max_chunks, so each lane has the most bytes in flight (Little's law:
// ~23 KB per SM at 4.3 TB/s), and keep every request's sectors full: with several chunks per
// lane, a request covers L consecutive chunks of each of the warp's groups, so L x 16 bytes of x
// and L x q_access bytes of codes must fill whole sectors, and groups must start on sector
// bounds (rows 32-byte aligned, groups a multiple of 32 bytes). One chunk per lane (L = nvec) is
// contiguous across groups and always fills them. When nothing qualifies (e.g. rows only 16-byte
// aligned, or more than 32 x max_chunks chunks): the widest split, as many chunks as needed.
int64_t group_lanes(const QuantProblem& p, int64_t nvec, int q_access) {
  const int64_t widest = pow2_factor(nvec, kWarp);
  const bool sector_groups = p.x_align >= kSectorBytes && p.q_align >= kSectorBytes &&
                             (p.group * p.x_bytes) % kSectorBytes == 0 &&
                             (p.group * p.code_bits / kBitsPerByte) % kSectorBytes == 0;
  for (int64_t L = 1; L <= widest; L *= 2) {
    if (nvec % L != 0 || nvec / L > p.max_chunks) continue;
    const bool whole_groups = L == nvec;
    const bool full_sectors = sector_groups && L * kVecBytes >= kSectorBytes && L * q_access >= kSectorBytes;
    if (whole_groups || full_sectors) return L;
  }
  return widest;
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
    const int64_t lanes = group_lanes(p, nvec, q_access);
    if (nvec / lanes <= kMaxChunks) {
      c.vectorized = true;
      c.vec = vec;
      c.lanes_per_group = static_cast<int>(lanes);
      c.chunks = static_cast<int>(nvec / lanes);
      c.steps = c.chunks == 1 ? std::clamp(p.max_steps, 1, kMaxChunks) : 1;
      c.groups_per_warp = kWarp / lanes;
      c.fast_convert = p.fast_convert && (p.code_bits == 4 || p.f32_scales);
      c.tie_bias = c.fast_convert && p.tie_bias && p.f32_scales && p.x_bytes == 2;
      c.linear = p.linear;
      c.grid = clamp_grid(ceil_div(groups, c.groups_per_warp * c.steps * warps_per_block), p.max_grid);
      return c;
    }
  }
  c.elems_per_lane = p.code_bits == kBitsPerByte ? 1 : 2;
  c.grid = clamp_grid(ceil_div(groups, warps_per_block), p.max_grid);
  return c;
}

QuantConfig with_clean_table(const QuantProblem& p, QuantConfig c, int64_t resident_ctas) {
  if (!c.vectorized || !c.fast_convert || !p.nvfp4_scales || p.x_bytes != 2 || !p.clean_table || resident_ctas <= 0)
    return c;
  if (c.grid < kCleanMinSteps * resident_ctas) return c;
  // A copy of the table per group slot of a warp (kernel.cuh's Nvfp4CleanTable): nvfp4's 16-element
  // groups of 16-bit x take 2 lanes (group_lanes), 16 slots.
  if (c.groups_per_warp > kCleanCopies) return c;
  c.clean_table = true;
  c.grid = resident_ctas;
  return c;
}

DequantConfig make_dequant_config(const DequantProblem& p) {
  DequantConfig c;
  const int vec = kVecBytes / p.out_bytes;
  const int q_access = vec * p.code_bits / kBitsPerByte;
  const int64_t n = p.rows * p.K;
  // K / vec < 2^31: the vectorized kernel divides a vector's index in its row by group / vec in
  // 32 bits (DequantParams::group_div).
  const bool row_indexable = p.K / vec <= kMaxDequantRowVecs;
  if (p.group % vec == 0 && p.out_align >= kVecBytes && p.q_align >= q_access && row_indexable) {
    c.vectorized = true;
    c.vec = vec;
    c.steps = p.steps < 1 ? 1 : (p.steps > kMaxDequantSteps ? kMaxDequantSteps : p.steps);
    // 16-bit out: e2m1 codes with MX scales, or nvfp4 to bf16; e4m3 codes with any scale.
    const bool fp4 = p.code_bits == 4 && (p.mx_scales || p.nvfp4_bf16);
    c.fast_convert = p.fast_convert && p.out_bytes == 2 && (fp4 || p.code_bits == 8);
    const int64_t group_vecs = p.group / vec;
    c.linear = p.linear && (group_vecs & (group_vecs - 1)) == 0;
  } else {
    c.vec = p.code_bits == kBitsPerByte ? 1 : 2;  // one code byte per thread
  }
  c.grid = clamp_grid(ceil_div(ceil_div(n / c.vec, c.steps), c.threads), p.max_grid);
  return c;
}

std::string QuantConfig::to_string() const {
  std::ostringstream os;
  if (vectorized) {
    os << "vectorized vec " << vec << ", " << lanes_per_group << " lanes x " << chunks << " chunks per group, " << steps
       << " tiles/step, " << (fast_convert ? "fast conversion, " : "") << (tie_bias ? "tie bias, " : "")
       << (clean_table ? "clean table (persistent), " : "") << (linear ? "linear walk, " : "");
  } else {
    os << "generic (warp per group, " << elems_per_lane << " elems per lane), ";
  }
  os << threads << " threads, " << groups_per_warp << " groups/warp, grid " << grid;
  return os.str();
}

std::string DequantConfig::to_string() const {
  std::ostringstream os;
  os << (vectorized ? "vectorized" : "generic") << " vec " << vec << ", " << steps << " steps/thread, "
     << (fast_convert ? "fast conversion, " : "") << (linear ? "linear walk, " : "") << threads
     << " threads, grid " << grid;
  return os.str();
}


}  // namespace tejas::quant_kernel
