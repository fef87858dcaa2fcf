// Barriers and warp collectives: the rendezvous, and the semantics of each CUDA warp intrinsic.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "emu/internal.h"
#include "emu/shim_runtime.h"

namespace tejas::emu {

using rt::Block;
using rt::Collective;
using rt::kFullMask;
using rt::kWarpSize;
using rt::Thread;

namespace {

std::string hex32(uint32_t m) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", m);
  return buf;
}

}  // namespace

void warp_collective(const char* name, uint32_t mask, bool aligned, const void* in, void* out, CollectiveFn fn,
                     void* user, Site site) {
  Thread& t = rt::current_thread();
  Block& b = *t.block;
  const uint32_t bit = 1u << t.lane;
  if (!(mask & bit)) {
    if (rt::want_finding(FindingKind::mask_excludes_caller)) {
      rt::add_finding(FindingKind::mask_excludes_caller, 0, site,
                      std::string(name) + " mask " + hex32(mask) + " leaves out the calling lane " +
                          std::to_string(t.lane));
    }
    return;
  }
  if (aligned && mask != kFullMask) {
    if (rt::want_finding(FindingKind::partial_warp_collective)) {
      rt::add_finding(FindingKind::partial_warp_collective, 0, site,
                      std::string(name) + " is .aligned: every lane must take part, mask is " + hex32(mask));
    }
    return;
  }
  // PTX waits only for the non-exited threads of a membermask; an .aligned instruction needs
  // the whole warp.
  const uint32_t gone = b.exited_mask(t.warp) & mask;
  if (aligned && gone != 0) {
    if (rt::want_finding(FindingKind::partial_warp_collective)) {
      rt::add_finding(FindingKind::partial_warp_collective, 0, site,
                      std::string(name) + " is .aligned: lanes " + hex32(gone) + " exited or do not exist");
    }
    return;
  }
  Collective* c = nullptr;
  for (Collective& g : b.collectives) {
    if (g.warp == t.warp && g.mask == mask && !(g.arrived & bit) && std::strcmp(g.name, name) == 0) {
      c = &g;
      break;
    }
  }
  if (c == nullptr) {
    c = &b.collectives.emplace_back();
    c->name = name;
    c->site = site;
    c->warp = t.warp;
    c->mask = mask;
    c->aligned = aligned;
    c->slots.requested = mask;
  } else if (aligned && !c->site.same_instruction(site) && !c->site_mismatch_reported) {
    // sm_70+: only .aligned instructions must be the same instruction in every lane.
    c->site_mismatch_reported = true;
    if (rt::want_finding(FindingKind::partial_warp_collective)) {
      rt::add_finding(FindingKind::partial_warp_collective, 0, site,
                      std::string(name) + " is .aligned but executed by lanes of one warp at different call sites" +
                          " (also at " + c->site.name_beside(site) + ")");
    }
  }
  c->arrived |= bit;
  c->slots.in[t.lane] = in;
  c->slots.out[t.lane] = out;
  c->fn = fn;
  c->user = user;
  if (c->arrived != (mask & ~gone)) {
    t.state = rt::ThreadState::in_collective;
    rt::suspend(t);
    return;
  }
  // Last arriver: compute for everyone, wake the others, then yield so that the order in which
  // the lanes continue is the scheduler's (seeded) choice too.
  rt::complete_collective(b, static_cast<size_t>(c - b.collectives.data()), t.lane);
  rt::yield_current();
}

namespace rt {

void complete_collective(Block& b, size_t index, uint32_t skip_lane) {
  Collective& c = b.collectives[index];
  c.slots.mask = c.arrived;
  c.fn(c.slots, c.user);
  for (uint32_t l = 0; l < kWarpSize; ++l) {
    if ((c.arrived & (1u << l)) && l != skip_lane) make_ready(b.threads[c.warp * kWarpSize + l]);
  }
  b.collectives[index] = b.collectives.back();
  b.collectives.pop_back();
}

}  // namespace rt

namespace detail {

int syncthreads(BarrierOp op, int pred, Site site) {
  Thread& t = rt::current_thread();
  t.state = rt::ThreadState::at_barrier;
  t.bar_pred = pred;
  t.bar_site = site;
  t.block->at_barrier++;
  rt::suspend(t);
  switch (op) {
    case BarrierOp::sync: return 0;
    case BarrierOp::count: return static_cast<int>(t.bar_result);
    case BarrierOp::all: return t.bar_result == t.bar_arrivals ? 1 : 0;
    case BarrierOp::any: return t.bar_result > 0 ? 1 : 0;
  }
  return 0;
}

void syncwarp(uint32_t mask, Site site) {
  // Orders the memory accesses of the lanes in `mask` (what the race checker looks at).
  auto fn = [](WarpSlots& s, void*) {
    Thread& t = rt::current_thread();
    Block& b = *t.block;
    // Lanes are ordered by a chain of __syncwarps they took part in: every participant's clock
    // becomes the join of theirs, then each advances its own epoch.
    uint32_t join[kWarpSize] = {};
    for (uint32_t p = 0; p < kWarpSize; ++p) {
      if (!(s.mask & (1u << p))) continue;
      for (uint32_t j = 0; j < kWarpSize; ++j) join[j] = std::max(join[j], b.vc(t.warp, p, j));
    }
    for (uint32_t p = 0; p < kWarpSize; ++p) {
      if (!(s.mask & (1u << p))) continue;
      for (uint32_t j = 0; j < kWarpSize; ++j) b.vc(t.warp, p, j) = join[j];
      b.vc(t.warp, p, p)++;
    }
  };
  warp_collective("__syncwarp", mask, false, nullptr, nullptr, fn, nullptr, site);
}

namespace {

struct ShflIn {
  uint64_t value;
  int arg;
  int width;
  ShflMode mode;
};

constexpr uint32_t kMaxShflBytes = 8;
constexpr int kLaneBits = 31;

// CUDA's source-lane rule for each shuffle kind; a lane's own value when the source falls
// outside its width-segment (idx wraps inside the segment instead).
uint32_t shfl_source(const ShflIn& in, uint32_t lane) {
  const int w = (in.width >= 1 && in.width <= static_cast<int>(kWarpSize) && (in.width & (in.width - 1)) == 0)
                    ? in.width
                    : static_cast<int>(kWarpSize);
  const int seg = static_cast<int>(lane) & ~(w - 1);
  const int me = static_cast<int>(lane);
  const int b = in.arg & kLaneBits;  // PTX uses only b[4:0] of the lane / delta / lane-mask operand
  switch (in.mode) {
    case ShflMode::idx: return static_cast<uint32_t>(seg + (b & (w - 1)));
    case ShflMode::up: {
      const int s = me - b;
      return static_cast<uint32_t>(s >= seg ? s : me);
    }
    case ShflMode::down: {
      const int s = me + b;
      return static_cast<uint32_t>(s < seg + w ? s : me);
    }
    case ShflMode::bfly: {
      const int s = me ^ b;
      return static_cast<uint32_t>(s < seg + w ? s : me);
    }
  }
  return lane;
}

}  // namespace

void shfl(ShflMode mode, uint32_t mask, const void* value, uint32_t bytes, int arg, int width, void* out, Site site) {
  ShflIn in{0, arg, width, mode};
  std::memcpy(&in.value, value, bytes < kMaxShflBytes ? bytes : kMaxShflBytes);
  uint64_t result;
  std::memset(&result, kPoisonByte, sizeof result);
  auto fn = [](WarpSlots& s, void* user) {
    const Site& at = *static_cast<const Site*>(user);
    const Thread& me = rt::current_thread();  // a lane of this warp (last arriver or exiting lane)
    const uint32_t exited = s.requested & ~s.mask;
    for (uint32_t l = 0; l < kWarpSize; ++l) {
      if (!(s.mask & (1u << l))) continue;
      const auto& mine = *static_cast<const ShflIn*>(s.in[l]);
      const uint32_t src = shfl_source(mine, l);
      // A source lane outside the mask is undefined in CUDA: hand out poison.
      if (src < kWarpSize && (s.mask & (1u << src))) {
        *static_cast<uint64_t*>(s.out[l]) = static_cast<const ShflIn*>(s.in[src])->value;
      } else if (src < kWarpSize && (exited & (1u << src)) && rt::want_finding(FindingKind::partial_warp_collective)) {
        rt::add_finding(FindingKind::partial_warp_collective, 0, at,
                        "shuffle source lane " + std::to_string(src) + " has exited: the value is undefined",
                        &me.block->threads[me.warp * kWarpSize + l]);
      }
    }
  };
  static const char* const kNames[] = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync"};
  warp_collective(kNames[static_cast<int>(mode)], mask, false, &in, &result, fn, &site, site);
  std::memcpy(out, &result, bytes < kMaxShflBytes ? bytes : kMaxShflBytes);
}

uint32_t vote(VoteMode mode, uint32_t mask, int pred, Site site) {
  struct VoteOut {
    uint32_t ballot = 0;
    uint32_t members = 0;  // the lanes that took part
  } res;
  auto fn = [](WarpSlots& s, void*) {
    uint32_t b = 0;
    for (uint32_t l = 0; l < kWarpSize; ++l) {
      if ((s.mask & (1u << l)) && *static_cast<const int*>(s.in[l]) != 0) b |= 1u << l;
    }
    for (uint32_t l = 0; l < kWarpSize; ++l) {
      if (s.mask & (1u << l)) *static_cast<VoteOut*>(s.out[l]) = VoteOut{b, s.mask};
    }
  };
  static const char* const kNames[] = {"__ballot_sync", "__any_sync", "__all_sync"};
  warp_collective(kNames[static_cast<int>(mode)], mask, false, &pred, &res, fn, nullptr, site);
  switch (mode) {
    case VoteMode::ballot: return res.ballot;
    case VoteMode::any: return res.ballot != 0 ? 1 : 0;
    case VoteMode::all: return res.members != 0 && res.ballot == res.members ? 1 : 0;
  }
  return 0;
}

uint32_t activemask() {
  Thread& t = rt::current_thread();
  return ~t.block->exited_mask(t.warp);
}

namespace {
struct MatchOut {
  uint32_t mask = 0;
  int all = 0;
};
void match_fn(WarpSlots& s, void*) {
  for (uint32_t l = 0; l < kWarpSize; ++l) {
    if (!(s.mask & (1u << l))) continue;
    const uint64_t v = *static_cast<const uint64_t*>(s.in[l]);
    uint32_t same = 0;
    for (uint32_t k = 0; k < kWarpSize; ++k) {
      if ((s.mask & (1u << k)) && *static_cast<const uint64_t*>(s.in[k]) == v) same |= 1u << k;
    }
    auto* o = static_cast<MatchOut*>(s.out[l]);
    o->mask = same;
    o->all = same == s.mask ? 1 : 0;
  }
}
}  // namespace

uint32_t match_any(uint32_t mask, uint64_t value, Site site) {
  MatchOut o;
  warp_collective("__match_any_sync", mask, false, &value, &o, match_fn, nullptr, site);
  return o.mask;
}

uint32_t match_all(uint32_t mask, uint64_t value, int* pred, Site site) {
  MatchOut o;
  warp_collective("__match_all_sync", mask, false, &value, &o, match_fn, nullptr, site);
  *pred = o.all;
  return o.all ? mask : 0;
}

uint32_t reduce(ReduceOp op, uint32_t mask, uint32_t value, Site site) {
  struct In {
    uint32_t v;
    ReduceOp op;
  } in{value, op};
  uint32_t result = 0;
  auto fn = [](WarpSlots& s, void*) {
    bool first = true;
    uint32_t acc = 0;
    ReduceOp op = ReduceOp::add;
    for (uint32_t l = 0; l < kWarpSize; ++l) {
      if (!(s.mask & (1u << l))) continue;
      const In& x = *static_cast<const In*>(s.in[l]);
      op = x.op;
      if (first) {
        acc = x.v;
        first = false;
        continue;
      }
      switch (op) {
        case ReduceOp::add: acc += x.v; break;
        case ReduceOp::smin: acc = static_cast<int32_t>(x.v) < static_cast<int32_t>(acc) ? x.v : acc; break;
        case ReduceOp::smax: acc = static_cast<int32_t>(x.v) > static_cast<int32_t>(acc) ? x.v : acc; break;
        case ReduceOp::umin: acc = x.v < acc ? x.v : acc; break;
        case ReduceOp::umax: acc = x.v > acc ? x.v : acc; break;
        case ReduceOp::band: acc &= x.v; break;
        case ReduceOp::bor: acc |= x.v; break;
        case ReduceOp::bxor: acc ^= x.v; break;
      }
    }
    for (uint32_t l = 0; l < kWarpSize; ++l) {
      if (s.mask & (1u << l)) *static_cast<uint32_t*>(s.out[l]) = acc;
    }
  };
  // Signed and unsigned min / max are different instructions: they never rendezvous together.
  static const char* const kNames[] = {"__reduce_add_sync",  "__reduce_min_sync.s32", "__reduce_max_sync.s32",
                                       "__reduce_min_sync.u32", "__reduce_max_sync.u32", "__reduce_and_sync",
                                       "__reduce_or_sync",   "__reduce_xor_sync"};
  warp_collective(kNames[static_cast<int>(op)], mask, false, &in, &result, fn, nullptr, site);
  return result;
}

bool atomic_enter(void* p, size_t bytes, Site site) {
  rt::yield_current();
  return on_atomic(p, bytes, site);
}

void yield() { rt::yield_current(); }

void trap(Site site) {
  if (rt::want_finding(FindingKind::unsupported)) {
    rt::add_finding(FindingKind::unsupported, 0, site, "__trap() executed");
  }
  throw rt::FiberUnwind{};
}

}  // namespace detail
}  // namespace tejas::emu
