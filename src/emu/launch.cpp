// Launching: grid order, fibers, the per-cluster scheduler, stall detection and block abort.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <numeric>
#include <string>

#include "emu/fiber_stack.h"
#include "emu/internal.h"

namespace tejas::emu {
namespace detail {
thread_local const Builtins* tls_builtins = nullptr;
}  // namespace detail

namespace rt {

thread_local Launch* g_launch = nullptr;

namespace {

constexpr uint32_t kMaxThreadsPerBlock = 1024;
constexpr size_t kSmemAlign = 1024;  // generous, so bank and alignment math sees aligned bases
constexpr size_t kBytesPerKb = 1024;

std::atomic<uint32_t> g_interval{0};

uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void thread_exit(Thread& t, bool unwound, bool returned);

void fiber_entry(void* arg) {
  Thread* t = static_cast<Thread*>(arg);
  bool unwound = false, returned = false;
  {  // the fiber never returns: objects with destructors must end before the final swap
    std::string thrown;
    try {
      g_launch->body(g_launch->ctx);
      returned = true;
    } catch (const FiberUnwind&) {
      unwound = t->unwind;  // false for __trap(): the thread simply ends
    } catch (const std::exception& e) {
      thrown = e.what();
    } catch (...) {
      thrown = "unknown exception";
    }
    if (!thrown.empty() && want_finding(FindingKind::unsupported)) {
      add_finding(FindingKind::unsupported, 0, Site{}, "kernel code threw an exception: " + thrown);
    }
  }
  thread_exit(*t, unwound, returned);
  FiberContext::swap(t->fiber, g_launch->scheduler);  // never resumed
  std::abort();
}

void resume(Launch& L, Thread& t) {
  L.current = &t;
  t.state = ThreadState::running;
  detail::tls_builtins = &t.builtins;
  if (!t.started) {
    t.started = true;
    t.fiber.start(t.stack_top, L.stack_bytes, fiber_entry, &t);
  }
  FiberContext::swap(L.scheduler, t.fiber);
  L.current = nullptr;
  detail::tls_builtins = nullptr;
}

// A lane exits while its warp-mates wait in a collective: PTX waits only for non-exited lanes, so
// the collective completes once every remaining lane has arrived. An .aligned one never can.
void release_collectives_of_exited(Thread& t) {
  Block& b = *t.block;
  const uint32_t bit = 1u << t.lane;
  const uint32_t gone = b.exited_mask(t.warp);
  for (size_t i = b.collectives.size(); i-- > 0;) {
    Collective& c = b.collectives[i];
    if (c.warp != t.warp || !(c.mask & bit) || (c.arrived & bit)) continue;
    if (!c.aligned) {
      if (c.arrived == (c.mask & ~gone)) complete_collective(b, i, kNone);
      continue;
    }
    if (want_finding(FindingKind::partial_warp_collective)) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s is .aligned: lane %u exited; lanes 0x%08x waiting get no result", c.name,
                    t.lane, c.arrived);
      add_finding(FindingKind::partial_warp_collective, 0, c.site, buf);
    }
    for (uint32_t l = 0; l < kWarpSize; ++l) {
      if (c.arrived & (1u << l)) make_ready(b.threads[t.warp * kWarpSize + l]);
    }
    b.collectives[i] = b.collectives.back();
    b.collectives.pop_back();
  }
}

// `returned`: the kernel body returned (not a __trap(), an exception or an unwinding), the only
// exit the grid_dependency rule judges (the others are findings of their own).
void thread_exit(Thread& t, bool unwound, bool returned) {
  if (returned && g_launch->opts.programmatic && !t.grid_waited && want_finding(FindingKind::grid_dependency)) {
    add_finding(FindingKind::grid_dependency, 0, Site{},
                "exits without griddepcontrol.wait in a programmatic dependent launch: the grid could complete "
                "before the kernel it depends on",
                &t);
  }
  t.state = ThreadState::exited;
  t.block->live--;
  drop_async(t);
  if (!unwound) release_collectives_of_exited(t);
}

void complete_barrier(Launch& L, Block& b) {
  uint32_t count = 0;
  const Thread* first = nullptr;
  const Thread* other = nullptr;
  for (uint32_t i = 0; i < b.nthreads; ++i) {
    const Thread& t = b.threads[i];
    if (t.state != ThreadState::at_barrier) continue;
    count += t.bar_pred != 0 ? 1 : 0;
    if (first == nullptr) {
      first = &t;
    } else if (other == nullptr && !t.bar_site.same_instruction(first->bar_site)) {
      other = &t;
    }
  }
  if (other != nullptr && want_finding(FindingKind::divergent_barrier)) {
    add_finding(FindingKind::divergent_barrier, 0, other->bar_site,
                "this __syncthreads completed together with a different one at " +
                    first->bar_site.name_beside(other->bar_site) + " (" +
                    thread_name(first->gtid) +
                    "): not every thread reached the same barrier",
                other);
  }
  const uint32_t arrivals = b.at_barrier;
  b.at_barrier = 0;
  b.interval = new_interval();
  L.report.counters.barriers++;
  for (uint32_t i = 0; i < b.nthreads; ++i) {
    Thread& t = b.threads[i];
    if (t.state != ThreadState::at_barrier) continue;
    t.bar_result = count;
    t.bar_arrivals = arrivals;
    make_ready(t);
  }
}

std::string mask_hex(uint32_t m) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", m);
  return buf;
}

// Unwinds every started fiber of the block (their destructors run) and ends it.
void abort_block(Launch& L, Block& b) {
  b.aborted = true;
  b.collectives.clear();
  for (uint32_t i = 0; i < b.nthreads; ++i) {
    Thread& t = b.threads[i];
    if (t.state == ThreadState::exited) continue;
    if (!t.started) {
      t.state = ThreadState::exited;
      b.live--;
      continue;
    }
    t.unwind = true;
    resume(L, t);
  }
  b.at_barrier = 0;
}

// Every live thread is blocked and nothing can complete: report what each waits for, then end
// the blocks (never a hang).
void handle_stall(Launch& L) {
  for (Block& b : L.blocks) {
    if (b.live == 0) continue;
    const Thread* in_coll = nullptr;
    for (const Collective& c : b.collectives) {
      const Thread* who = nullptr;
      for (uint32_t l = 0; l < kWarpSize && who == nullptr; ++l) {
        if (c.arrived & (1u << l)) who = &b.threads[c.warp * kWarpSize + l];
      }
      if (in_coll == nullptr) in_coll = who;
      if (want_finding(FindingKind::partial_warp_collective)) {
        add_finding(FindingKind::partial_warp_collective, 0, c.site,
                    std::string(c.name) + " mask " + mask_hex(c.mask) + ": lanes " + mask_hex(c.arrived) +
                        " arrived, lanes " + mask_hex(c.mask & ~c.arrived) + " never did (blocked elsewhere)",
                    who);
      }
    }
    const Thread* at_bar = nullptr;
    for (uint32_t i = 0; i < b.nthreads && at_bar == nullptr; ++i) {
      if (b.threads[i].state == ThreadState::at_barrier) at_bar = &b.threads[i];
    }
    if (at_bar != nullptr && want_finding(FindingKind::divergent_barrier)) {
      std::string d = std::to_string(b.at_barrier) + " of " + std::to_string(b.live) +
                      " live threads wait at __syncthreads; the others can never arrive";
      if (in_coll != nullptr) d += " (e.g. " + thread_name(in_coll->gtid) + " blocked in a warp collective)";
      add_finding(FindingKind::divergent_barrier, 0, at_bar->bar_site, d, at_bar);
    }
    if (at_bar == nullptr && in_coll == nullptr && want_finding(FindingKind::deadlock)) {
      add_finding(FindingKind::deadlock, 0, Site{}, std::to_string(b.live) + " threads blocked forever", &b.threads[0]);
    }
    abort_block(L, b);
  }
  L.ready.clear();
}

void run_cluster(Launch& L) {
  for (;;) {
    if (L.ready.empty()) {
      bool any_live = false;
      for (const Block& b : L.blocks) any_live = any_live || b.live > 0;
      if (any_live) handle_stall(L);
      return;
    }
    const uint32_t i = L.next_random(static_cast<uint32_t>(L.ready.size()));
    Thread* t = L.ready[i];
    L.ready[i] = L.ready.back();
    L.ready.pop_back();
    resume(L, *t);
    Block& b = *t->block;
    if (b.live > 0 && b.at_barrier == b.live) complete_barrier(L, b);
  }
}

uint3 unflatten(uint32_t i, dim3 d) {
  return uint3{i % d.x, (i / d.x) % d.y, i / (d.x * d.y)};
}

void start_block(Launch& L, Block& b, uint32_t linear, size_t slot) {
  const LaunchOptions& o = L.opts;
  b.linear = linear;
  b.idx = unflatten(linear, o.grid);
  b.nthreads = L.threads_per_block;
  b.nwarps = (b.nthreads + kWarpSize - 1) / kWarpSize;
  b.threads = &L.threads[slot * b.nthreads];
  b.live = b.nthreads;
  b.at_barrier = 0;
  b.aborted = false;
  b.launched_dependents = false;
  b.interval = new_interval();
  b.start_interval = b.interval;
  b.collectives.clear();
  b.collectives.reserve(b.nwarps * 2);
  // Every lane starts at epoch 1, ordered after nobody's accesses.
  b.clocks.assign(size_t{b.nwarps} * kWarpSize * kWarpSize, 0);
  for (uint32_t w = 0; w < b.nwarps; ++w) {
    for (uint32_t l = 0; l < kWarpSize; ++l) b.vc(w, l, l) = 1;
  }
  b.global_reqs.clear();
  b.shared_reqs.clear();
  b.smem_size = o.dynamic_smem_bytes;
  if (b.smem_size > 0) {
    if (b.smem == nullptr) {
      b.smem_storage.resize(b.smem_size + kSmemAlign);
      const uintptr_t raw = reinterpret_cast<uintptr_t>(b.smem_storage.data());
      b.smem = reinterpret_cast<uint8_t*>((raw + kSmemAlign - 1) / kSmemAlign * kSmemAlign);
      b.smem_shadow.ensure(b.smem_size, true);
    }
    __builtin_memset(b.smem, kPoisonByte, b.smem_size);
    b.smem_shadow.reset_status(b.smem_size, kUnwritten);
  }
  for (uint32_t i = 0; i < b.nthreads; ++i) {
    Thread& t = b.threads[i];
    t.block = &b;
    t.tid = i;
    t.lane = i % kWarpSize;
    t.warp = i / kWarpSize;
    t.gtid = linear * b.nthreads + i;
    t.state = ThreadState::ready;
    t.started = false;
    t.unwind = false;
    t.fiber = FiberContext{};
    t.stack_top = fiber_stack_top(slot * b.nthreads + i, L.stack_bytes);
    t.builtins.thread_idx = unflatten(i, o.block);
    t.builtins.block_idx = b.idx;
    t.builtins.block_dim = o.block;
    t.builtins.grid_dim = o.grid;
    t.sites.clear();
    t.async.clear();
    t.groups_committed = 0;
    t.grid_waited = false;
    L.ready.push_back(&t);
  }
}

bool validate_launch(Launch& L) {
  const LaunchOptions& o = L.opts;
  auto fail = [&](FindingKind k, const std::string& d) {
    add_finding(k, 0, Site{}, d, nullptr);
    return false;
  };
  const uint64_t tpb = uint64_t{o.block.x} * o.block.y * o.block.z;
  if (tpb == 0 || tpb > kMaxThreadsPerBlock) {
    return fail(FindingKind::unsupported, "block has " + std::to_string(tpb) + " threads; expected 1..1024");
  }
  if (uint64_t{o.grid.x} * o.grid.y * o.grid.z == 0) return fail(FindingKind::unsupported, "empty grid");
  if (o.arch != 80 && o.arch != 90) {
    return fail(FindingKind::unsupported, "arch " + std::to_string(o.arch) + "; expected 80 or 90");
  }
  if (o.programmatic && o.arch < 90) {
    return fail(FindingKind::unsupported,
                "programmatic dependent launch needs sm_90; the launch is sm_" + std::to_string(o.arch));
  }
  if (o.cluster.x == 0 || o.cluster.y == 0 || o.cluster.z == 0 || o.grid.x % o.cluster.x != 0 ||
      o.grid.y % o.cluster.y != 0 || o.grid.z % o.cluster.z != 0) {
    return fail(FindingKind::unsupported, "cluster dims must divide the grid dims");
  }
  const size_t cap = o.arch == 90 ? kSmemCapSm90 : kSmemCapSm80;
  if (o.dynamic_smem_bytes > cap) {
    return fail(FindingKind::smem_over_limit, std::to_string(o.dynamic_smem_bytes) +
                                                  " bytes of dynamic shared memory; the sm_" + std::to_string(o.arch) +
                                                  " cap is " + std::to_string(cap));
  }
  const size_t limit = o.max_dynamic_smem_bytes == 0 ? kDefaultMaxDynamicSmem : o.max_dynamic_smem_bytes;
  if (o.dynamic_smem_bytes > limit) {
    return fail(FindingKind::smem_over_limit,
                std::to_string(o.dynamic_smem_bytes) + " bytes of dynamic shared memory; the kernel's limit is " +
                    std::to_string(limit) +
                    (o.max_dynamic_smem_bytes == 0
                         ? " (CUDA's default: a launch above it needs cudaFuncSetAttribute(MaxDynamicSharedMemorySize) "
                           "on a GPU, LaunchOptions::max_dynamic_smem_bytes here)"
                         : " (LaunchOptions::max_dynamic_smem_bytes)"));
  }
  return true;
}

}  // namespace

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v, &end, 0);
  return (end != nullptr && *end == '\0') ? x : fallback;
}

uint32_t new_interval() { return g_interval.fetch_add(1, std::memory_order_relaxed) + 1; }

uint32_t Launch::next_random(uint32_t bound) {
  return static_cast<uint32_t>((splitmix64(rng) >> 32) * bound >> 32);
}

Thread& current_thread() {
  if (g_launch == nullptr || g_launch->current == nullptr) {
    std::fprintf(stderr, "tejas emu: a device intrinsic was called outside an emulated launch\n");
    std::abort();
  }
  return *g_launch->current;
}

void suspend(Thread& t) {
  FiberContext::swap(t.fiber, g_launch->scheduler);
  if (t.unwind) throw FiberUnwind{};
}

void make_ready(Thread& t) {
  t.state = ThreadState::ready;
  g_launch->ready.push_back(&t);
}

void yield_current() {
  Thread& t = current_thread();
  make_ready(t);
  suspend(t);
}

uint32_t Block::exited_mask(uint32_t w) const {
  uint32_t m = 0;
  for (uint32_t l = 0; l < kWarpSize; ++l) {
    const uint32_t i = w * kWarpSize + l;
    if (i >= nthreads || threads[i].state == ThreadState::exited) m |= 1u << l;
  }
  return m;
}

}  // namespace rt

namespace detail {

LaunchReport run(const LaunchOptions& opts, ThreadBody body, void* ctx) {
  using namespace rt;
  if (g_launch != nullptr) {
    std::fprintf(stderr, "tejas emu: launch from inside a kernel is not supported\n");
    std::abort();
  }
  Launch L;
  L.opts = opts;
  L.body = body;
  L.ctx = ctx;
  L.report.arch = opts.arch;
  L.report.seed = opts.seed != 0 ? opts.seed : env_u64("TEJAS_EMU_SEED", kDefaultSeed);
  L.rng = L.report.seed;
  L.stack_bytes = opts.stack_bytes != 0 ? opts.stack_bytes
                                        : env_u64("TEJAS_EMU_STACK_KB", kDefaultStackBytes / kBytesPerKb) * kBytesPerKb;
  g_launch = &L;
  if (validate_launch(L)) {
    L.first_interval = new_interval();
    L.threads_per_block = opts.block.x * opts.block.y * opts.block.z;
    const dim3 g = opts.grid, c = opts.cluster;
    const uint32_t cluster_size = c.x * c.y * c.z;
    const dim3 cgrid{g.x / c.x, g.y / c.y, g.z / c.z};
    const uint32_t nclusters = cgrid.x * cgrid.y * cgrid.z;
    std::vector<uint32_t> order(nclusters);
    std::iota(order.begin(), order.end(), 0u);
    for (uint32_t i = nclusters; i > 1; --i) std::swap(order[i - 1], order[L.next_random(i)]);
    L.blocks.resize(cluster_size);
    L.threads.resize(size_t{cluster_size} * L.threads_per_block);
    L.stack_bytes = (fiber_stack_top(0, L.stack_bytes), fiber_stack_bytes());
    for (uint32_t ci : order) {
      const uint3 cc = unflatten(ci, cgrid);
      for (uint32_t j = 0; j < cluster_size; ++j) {
        const uint3 in = unflatten(j, c);
        const uint32_t bx = cc.x * c.x + in.x, by = cc.y * c.y + in.y, bz = cc.z * c.z + in.z;
        start_block(L, L.blocks[j], bx + g.x * (by + g.y * bz), j);
      }
      run_cluster(L);
      for (Block& b : L.blocks) flush_block_counters(b, L.report.counters);
    }
  }
  g_launch = nullptr;
  if (opts.print_report || env_u64("TEJAS_EMU_REPORT", 0) != 0) {
    std::fprintf(stderr, "%s\n", L.report.summary().c_str());
  }
  return std::move(L.report);
}

}  // namespace detail

void* dynamic_smem_base() { return rt::current_thread().block->smem; }
size_t dynamic_smem_size() { return rt::current_thread().block->smem_size; }
bool in_launch() { return rt::g_launch != nullptr && rt::g_launch->current != nullptr; }
int current_arch() { return rt::g_launch != nullptr ? rt::g_launch->opts.arch : 0; }
int lane_id() { return static_cast<int>(rt::current_thread().lane); }

}  // namespace tejas::emu
