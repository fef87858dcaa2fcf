#include "runtime/print_config.h"
#include "ops/rope/config.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace tejas::rotary {
namespace {

bool divides(int64_t vec, int64_t n) { return n % vec == 0; }

// Every access of the kernel at this width is aligned and every span it covers is whole.
bool vec_fits(const RopeProblem& p, int vec) {
  const int pairs = pairs_per_column(vec, p.interleaved);
  if (!divides(pairs, p.rotary_dim / 2)) return false;
  for (int64_t s : p.sections)
    if (!divides(pairs, s)) return false;  // a column reads one position row
  if (p.qk_align < vec * p.elem_bytes) return false;
  if (p.cos_align < std::min(pairs * p.cos_elem_bytes, kMaxAccessBytes)) return false;
  if (p.kv_cache_elem_bytes > 0) {
    if (!divides(vec, p.D - p.rotary_dim) || !divides(vec, p.D)) return false;
    if (p.v_align < vec * p.elem_bytes) return false;
    if (p.kv_cache_align < vec * p.kv_cache_elem_bytes) return false;
  }
  return true;
}

}  // namespace

int vec_candidate(int elem_bytes, int index) {
  const int wide = kMaxAccessBytes / elem_bytes;
  const int compact = kCompactAccessBytes / elem_bytes;
  switch (index) {
    case 0: return wide;
    case 1: return compact > 1 && compact < wide ? compact : 1;
    case 2: return 1;
    default: return 0;
  }
}

int pairs_per_column(int vec, bool interleaved) { return interleaved ? std::max(vec / 2, 1) : vec; }

RopeConfig choose_config(const RopeProblem& p) {
  RopeConfig c;
  for (int i = 0; i < kNumVecCandidates; ++i) {
    const int vec = vec_candidate(p.elem_bytes, i);
    if (vec_fits(p, vec)) {
      c.vec = vec;
      break;
    }
  }
  c.pairs = pairs_per_column(c.vec, p.interleaved);
  c.rot_cols = static_cast<int>(p.rotary_dim / 2 / c.pairs);
  c.pass_cols = p.kv_cache_elem_bytes > 0 ? static_cast<int>((p.D - p.rotary_dim) / c.vec) : 0;
  const int cols = c.rot_cols + c.pass_cols;
  c.col_threads = std::min(cols, kMaxGroupThreads);
  const int64_t heads = p.Hq + p.Hk;
  c.heads_in_flight = std::clamp(p.heads_in_flight, 1, kPipeWideHeads);
  const int64_t lanes = (heads + c.heads_in_flight - 1) / c.heads_in_flight;
  c.head_lanes = static_cast<int>(std::clamp<int64_t>(kMaxGroupThreads / c.col_threads, 1, lanes));
  const int group = c.col_threads * c.head_lanes;
  // Small groups share a block so that blocks stay near p.block_threads (kTargetBlockThreads).
  int tpb = static_cast<int>(std::clamp<int64_t>(p.block_threads / group, 1, p.T));
  // Prefer whole warps (a partial last warp issues half-empty requests), when some count allows.
  int whole = tpb;
  while (whole > 1 && (whole * group) % kWarpSize != 0) --whole;
  c.tokens_per_block = (whole * group) % kWarpSize == 0 ? whole : tpb;
  c.threads = group * c.tokens_per_block;
  c.blocks = (p.T + c.tokens_per_block - 1) / c.tokens_per_block;
  return c;
}

int head_access_bytes(const RopeConfig& c, int elem_bytes, bool interleaved) {
  return (!interleaved || c.vec >= 2 ? c.vec : 1) * elem_bytes;
}

int head_accesses(const RopeConfig& c, bool interleaved) {
  const int load = !interleaved || c.vec >= 2 ? c.vec : 1;
  return 2 * c.pairs / load;
}

int64_t head_stage_smem_bytes(const RopeConfig& c, int elem_bytes, bool interleaved) {
  const int bytes = head_access_bytes(c, elem_bytes, interleaved);
  if (c.rot_cols == 0 || bytes != kMaxAccessBytes) return 0;
  return int64_t{c.threads} * c.heads_in_flight * head_accesses(c, interleaved) * bytes;
}

bool pipe_eligible(const RopeProblem& p, const RopeConfig& c) {
  // With a cache: q and k of 16 bits (the pipelined cache kernels' dtypes; the op's too).
  if (p.kv_cache_elem_bytes > 0 && p.elem_bytes != 2) return false;
  return head_stage_smem_bytes(c, p.elem_bytes, p.interleaved) > 0 && c.pass_cols == 0 && c.col_threads == c.rot_cols &&
         int64_t{c.head_lanes} * c.heads_in_flight >= p.Hq + p.Hk;
}

bool kv_pipe_eligible(const RopeProblem& p, const RopeConfig& c) {
  return p.Hq == 0 && c.rot_cols == 0 && p.kv_cache_elem_bytes > 0 && p.elem_bytes == 2 &&
         c.vec * p.elem_bytes == kMaxAccessBytes && int64_t{c.col_threads} * c.head_lanes == p.Hk * (p.D / c.vec);
}

int64_t pipe_blocks(const RopeConfig& c, int64_t resident) { return std::clamp<int64_t>(resident, 1, c.blocks); }

int64_t kv_cache_write_bytes(const RopeProblem& p) {
  if (p.kv_cache_elem_bytes == 0 || p.Hq == 0 || p.rotary_dim == 0) return 0;
  const int64_t per_token = (p.Hq + p.Hk) * p.rotary_dim * p.elem_bytes * 2 +  // q and k's rotary dims, both ways
                            p.Hk * (p.D - p.rotary_dim) * p.elem_bytes +          // k's tail
                            p.Hk * p.D * p.elem_bytes +                           // v
                            2 * p.Hk * p.D * p.kv_cache_elem_bytes +              // the cache rows
                            p.rotary_dim * p.cos_elem_bytes + 4 + 8;              // cos/sin, position, slot
  return p.T * per_token;
}

bool kv_rope_pipe_eligible(const RopeProblem& p, const RopeConfig& c) {
  return p.Hq == 0 && p.Hk > 0 && p.kv_cache_elem_bytes > 0 && p.elem_bytes == 2 &&
         c.vec * p.elem_bytes == kMaxAccessBytes && c.rot_cols > 0 && c.pass_cols == 0 &&
         c.col_threads == c.rot_cols && c.head_lanes == p.Hk;
}

bool kv_split_planned(const RopeProblem& p, int setting) {
  const int64_t bytes = kv_cache_write_bytes(p);
  if (bytes == 0 || setting == 0) return false;
  return setting >= 2 || bytes >= kKvSplitMinBytes;
}

std::string to_string(const RopeProblem& p) {
  std::ostringstream os;
  os << "T=" << p.T << " Hq=" << p.Hq << " Hk=" << p.Hk << " D=" << p.D << " rotary=" << p.rotary_dim
     << " sections=" << p.sections[0] << "/" << p.sections[1] << "/" << p.sections[2]
     << (p.interleaved ? " gptj" : " neox") << " elem=" << p.elem_bytes << "B cos=" << p.cos_elem_bytes
     << "B kv_cache=" << p.kv_cache_elem_bytes << "B align qk/cos/v/cache="
     << p.qk_align << "/" << p.cos_align << "/" << p.v_align << "/" << p.kv_cache_align
     << " heads_in_flight=" << p.heads_in_flight;
  return os.str();
}

std::string to_string(const RopeConfig& c) {
  std::ostringstream os;
  os << "vec=" << c.vec << " pairs=" << c.pairs << " rot_cols=" << c.rot_cols << " pass_cols=" << c.pass_cols
     << " col_threads=" << c.col_threads << " head_lanes=" << c.head_lanes
     << " tokens_per_block=" << c.tokens_per_block << " threads=" << c.threads << " blocks=" << c.blocks
     << " heads_in_flight=" << c.heads_in_flight;
  return os.str();
}

void maybe_print_config(const char* op, const RopeProblem& p, const RopeConfig& c, int64_t pipe_grid) {
  if (!detail::print_config_enabled()) return;
  std::string line = to_string(p) + " -> " + to_string(c);
  if (pipe_grid > 0) line += " pipelined on " + std::to_string(pipe_grid) + " blocks";
  detail::print_config(op, line);
}

}  // namespace tejas::rotary
