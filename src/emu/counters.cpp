// Profiler-style counters: global requests and sectors, shared-memory wavefronts, tensor ops.
//
// A request is one warp-level instruction. Lanes run independently, so a lane's access is tied
// to its warp's request by (warp, call site, how many times this lane executed that site before):
// the grouping does not depend on the scheduling order. The call site is the whole emu::Site:
// the wrapper call's file:line:column and the chain of helper calls that reached it, so each inlined
// call of a helper is its own instruction, as on the GPU. Records are kept per block and folded
// when the block ends.
#include <algorithm>
#include <tuple>
#include <vector>

#include "emu/internal.h"

namespace tejas::emu {
namespace rt {
namespace {

constexpr uint64_t kSectorBytes = 32;
constexpr uint32_t kBanks = 32;
constexpr uint32_t kBankBytes = 4;
constexpr uint32_t kSharedSiteKind = 2;  // occurrence counter kinds: 0 global load, 1 global store, 2 shared

struct PhaseCost {
  uint64_t wavefronts = 0, ideal = 0;
};

// One phase of a shared access: the words each bank must deliver. Lanes reading the same word
// share it (broadcast); distinct words in one bank serialize.
PhaseCost phase_cost(std::vector<uint32_t>& words) {
  PhaseCost c;
  if (words.empty()) return c;
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  uint32_t per_bank[kBanks] = {};
  for (uint32_t w : words) c.wavefronts = std::max<uint64_t>(c.wavefronts, ++per_bank[w % kBanks]);
  c.ideal = (words.size() + kBanks - 1) / kBanks;
  return c;
}

// Lanes per phase: the hardware serves 128 bytes per wavefront.
uint32_t lanes_per_phase(uint32_t size) {
  return size >= 16 ? 8 : size == 8 ? 16 : kWarpSize;
}

void add_words(std::vector<uint32_t>& words, uint64_t offset, uint32_t size) {
  const uint64_t last = offset + (size > 0 ? size - 1 : 0);
  for (uint64_t w = offset / kBankBytes; w <= last / kBankBytes; ++w) words.push_back(static_cast<uint32_t>(w));
}

void fold_global(std::vector<GlobalReq>& v, Counters& c) {
  auto key = [](const GlobalReq& r) { return std::tie(r.is_store, r.warp, r.file, r.line, r.column, r.chain, r.occ); };
  std::sort(v.begin(), v.end(), [&](const GlobalReq& a, const GlobalReq& b) {
    return std::tie(a.is_store, a.warp, a.file, a.line, a.column, a.chain, a.occ, a.sector) <
           std::tie(b.is_store, b.warp, b.file, b.line, b.column, b.chain, b.occ, b.sector);
  });
  // Per request: its distinct sectors, and the distinct bytes it uses in them (lanes reading the
  // same bytes count once). Ideal: ceil(bytes / 32) sectors, every sector fully used.
  uint64_t req_bytes = 0;
  uint32_t sector_mask = 0;
  auto close_sector = [&]() {
    req_bytes += static_cast<uint64_t>(__builtin_popcount(sector_mask));
    sector_mask = 0;
  };
  auto close_request = [&](bool is_store) {
    close_sector();
    uint64_t& ideal = is_store ? c.global_store_sectors_ideal : c.global_load_sectors_ideal;
    ideal += (req_bytes + kSectorBytes - 1) / kSectorBytes;
    req_bytes = 0;
  };
  for (size_t i = 0; i < v.size(); ++i) {
    const bool new_req = i == 0 || key(v[i]) != key(v[i - 1]);
    const bool new_sector = new_req || v[i].sector != v[i - 1].sector;
    if (i > 0 && new_req) close_request(v[i - 1].is_store != 0);
    else if (i > 0 && new_sector) close_sector();
    uint64_t& reqs = v[i].is_store ? c.global_store_requests : c.global_load_requests;
    uint64_t& secs = v[i].is_store ? c.global_store_sectors : c.global_load_sectors;
    reqs += new_req ? 1 : 0;
    secs += new_sector ? 1 : 0;
    sector_mask |= v[i].bytes_mask;
  }
  if (!v.empty()) close_request(v.back().is_store != 0);
  v.clear();
}

void fold_shared(std::vector<SharedReq>& v, Counters& c) {
  auto key = [](const SharedReq& r) { return std::tie(r.warp, r.file, r.line, r.column, r.chain, r.occ); };
  std::sort(v.begin(), v.end(), [&](const SharedReq& a, const SharedReq& b) {
    return std::tie(a.warp, a.file, a.line, a.column, a.chain, a.occ, a.lane) <
           std::tie(b.warp, b.file, b.line, b.column, b.chain, b.occ, b.lane);
  });
  std::vector<uint32_t> words;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    uint32_t size = 0;
    while (j < v.size() && key(v[j]) == key(v[i])) size = std::max(size, v[j++].size);
    c.shared_requests++;
    const uint32_t lpp = lanes_per_phase(size);
    for (uint32_t phase = 0; phase < kWarpSize / lpp; ++phase) {
      words.clear();
      for (size_t k = i; k < j; ++k) {
        if (v[k].lane / lpp == phase) add_words(words, v[k].offset, v[k].size);
      }
      const PhaseCost pc = phase_cost(words);
      c.shared_wavefronts += pc.wavefronts;
      c.shared_wavefronts_ideal += pc.ideal;
    }
    i = j;
  }
  v.clear();
}

}  // namespace

uint32_t next_occurrence(Thread& t, const Site& site, uint32_t kind) {
  for (SiteCount& s : t.sites) {
    if (s.line == site.line && s.column == site.column && s.chain == site.chain && s.file == site.file &&
        s.kind == kind)
      return s.count++;
  }
  t.sites.push_back(SiteCount{site.file, site.chain, site.line, site.column, kind, 1});
  return 0;
}

void record_global_request(Thread& t, uintptr_t addr, size_t bytes, const Site& site, bool is_store) {
  const uint32_t occ = next_occurrence(t, site, is_store ? 1 : 0);
  const uint64_t end = addr + (bytes > 0 ? bytes : 1);  // [addr, end)
  for (uint64_t s = addr / kSectorBytes; s <= (end - 1) / kSectorBytes; ++s) {
    const uint64_t lo = std::max<uint64_t>(addr, s * kSectorBytes) - s * kSectorBytes;
    const uint64_t hi = std::min<uint64_t>(end, (s + 1) * kSectorBytes) - s * kSectorBytes;
    const uint32_t mask = static_cast<uint32_t>(((uint64_t{1} << hi) - 1) & ~((uint64_t{1} << lo) - 1));
    t.block->global_reqs.push_back(
        GlobalReq{site.file, site.chain, s, t.warp, site.line, site.column, occ, is_store ? 1u : 0u, mask});
  }
}

void record_shared_request(Thread& t, uintptr_t addr, size_t bytes, const Site& site) {
  const uint32_t occ = next_occurrence(t, site, kSharedSiteKind);
  const auto offset = static_cast<uint32_t>(addr - reinterpret_cast<uintptr_t>(t.block->smem));
  t.block->shared_reqs.push_back(
      SharedReq{site.file, site.chain, t.warp, site.line, site.column, occ, t.lane, offset,
                static_cast<uint32_t>(bytes)});
}

void flush_block_counters(Block& b, Counters& c) {
  c.blocks++;
  if (b.launched_dependents) c.dependent_launch_blocks++;
  fold_global(b.global_reqs, c);
  fold_shared(b.shared_reqs, c);
}

}  // namespace rt

void count_shared_phase(const uintptr_t* row_addrs, int n, int bytes_each) {
  rt::current_thread();  // valid only inside a launch
  thread_local std::vector<uint32_t> words;  // reused: no allocation per phase
  words.clear();
  for (int i = 0; i < n; ++i) rt::add_words(words, row_addrs[i], static_cast<uint32_t>(bytes_each));
  const rt::PhaseCost pc = rt::phase_cost(words);
  Counters& c = rt::g_launch->report.counters;
  c.shared_wavefronts += pc.wavefronts;
  c.shared_wavefronts_ideal += pc.ideal;
}

void count_prefetch(const void* p, const Site& site) {
  rt::current_thread();  // valid only inside a launch
  rt::g_launch->report.counters.global_prefetches++;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (rt::find_buffer(a) == nullptr && rt::want_finding(FindingKind::out_of_bounds))
    rt::add_finding(FindingKind::out_of_bounds, a, site,
                    "prefetch.L2 at " + rt::describe_address(a) +
                        ": outside every registered buffer (the GPU ignores it; the address is still wrong)");
}

void griddepcontrol_wait(Site site) {
  rt::Thread& t = rt::current_thread();
  if (current_arch() < 90) {
    report(FindingKind::unsupported, nullptr, site, "griddepcontrol.wait needs sm_90");
    return;
  }
  t.grid_waited = true;
}

void griddepcontrol_launch_dependents(Site site) {
  rt::Thread& t = rt::current_thread();
  if (current_arch() < 90) {
    report(FindingKind::unsupported, nullptr, site, "griddepcontrol.launch_dependents needs sm_90");
    return;
  }
  t.block->launched_dependents = true;
}

void count_tensor_op(const char* name) {
  rt::current_thread();
  rt::g_launch->report.counters.tensor_ops[name]++;
}

void count_event(const char* name) {
  rt::current_thread();
  rt::g_launch->report.counters.events[name]++;
}

uint64_t Counters::excess_load_sectors() const { return global_load_sectors - global_load_sectors_ideal; }
uint64_t Counters::excess_store_sectors() const { return global_store_sectors - global_store_sectors_ideal; }

double Counters::sectors_per_load_request() const {
  return global_load_requests == 0 ? 0.0 : static_cast<double>(global_load_sectors) / global_load_requests;
}
double Counters::sectors_per_store_request() const {
  return global_store_requests == 0 ? 0.0 : static_cast<double>(global_store_sectors) / global_store_requests;
}

}  // namespace tejas::emu
