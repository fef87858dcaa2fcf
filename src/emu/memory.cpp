// Emulated memory: the buffer registry, shadow state, and the checks behind every device-layer
// access (bounds, alignment, read-only inputs, poison, races, pending cp.async).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "emu/internal.h"

namespace tejas::emu {
namespace rt {
namespace {

constexpr size_t kMallocAlign = 256;  // cudaMalloc guarantees at least 256-byte alignment
constexpr uint32_t kSeveralWarps = 0x80000000u;  // ReadRec::warp flag; low bits: block linear index

std::mutex g_registry_mutex;
std::map<uintptr_t, std::unique_ptr<Buffer>> g_registry;

enum class Op : uint8_t { load, store, atomic };

struct Region {
  uintptr_t base = 0;
  size_t size = 0;
  Shadow* shadow = nullptr;
  Buffer* buffer = nullptr;  // null: the block's shared memory
};

std::string hex(uintptr_t a) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(a));
  return buf;
}

bool find_region(const Block& b, uintptr_t a, Region& r) {
  const uintptr_t s = reinterpret_cast<uintptr_t>(b.smem);
  if (b.smem_size > 0 && a >= s && a < s + b.smem_size) {
    r.base = s;
    r.size = b.smem_size;
    r.shadow = const_cast<Shadow*>(&b.smem_shadow);
    return true;
  }
  if (Buffer* buf = find_buffer(a)) {
    r.base = buf->base;
    r.size = buf->size;
    r.buffer = buf;
    buf->ensure_shadow();
    r.shadow = &buf->shadow;
    return true;
  }
  return false;
}

const char* op_name(Op op) { return op == Op::load ? "load" : op == Op::store ? "store" : "atomic"; }

uint32_t block_of(uint32_t gtid) { return gtid / g_launch->threads_per_block; }

// Is an earlier access (interval iv, thread `other`, the other's __syncwarp epoch g) ordered before the
// running thread's access? Barriers order a block's intervals; __syncwarp orders a warp's lanes.
// `floor`: records older than this interval are from an earlier launch (global memory) or an
// earlier block that owned the same shared memory.
bool ordered(const Thread& t, uint32_t floor, uint32_t iv, uint32_t other, uint32_t g) {
  const Block& b = *t.block;
  if (iv < floor || other == t.gtid) return true;
  if (other == kNone) return false;  // atomics from several blocks
  if (iv != b.interval) return block_of(other) == b.linear;
  const uint32_t u = other - b.linear * b.nthreads;
  if (u / kWarpSize != t.warp) return false;
  return b.vc(t.warp, t.lane, u % kWarpSize) >= g;  // a chain of __syncwarps since the access
}

bool read_rec_ordered(const Thread& t, uint32_t floor, const ReadRec& r) {
  const Block& b = *t.block;
  if (r.interval < floor) return true;
  const uint32_t rblock = (r.warp & kSeveralWarps) ? (r.warp & ~kSeveralWarps) : r.warp / b.nwarps;
  if (r.interval != b.interval) return rblock == b.linear;
  if (r.gtid == t.gtid) return true;
  if ((r.warp & kSeveralWarps) || r.warp != b.linear * b.nwarps + t.warp) return false;
  // Every reader is a lane of this warp: each must be ordered before us. r.gen is the highest
  // reader epoch, exact when the lanes' epochs agree (full-mask __syncwarp), else conservative.
  for (uint32_t l = 0; l < kWarpSize; ++l) {
    if ((r.lanes & (1u << l)) && l != t.lane && b.vc(t.warp, t.lane, l) < r.gen) return false;
  }
  return true;
}

std::string other_name(uint32_t gtid) { return gtid == kNone ? std::string("several threads") : thread_name(gtid); }

bool check(const void* p, size_t bytes, const Site& site, Op op, uint32_t flags) {
  Thread& t = current_thread();
  Block& b = *t.block;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  Region r;
  if (!find_region(b, a, r)) {
    if (want_finding(FindingKind::out_of_bounds)) {
      add_finding(FindingKind::out_of_bounds, a, site,
                  std::string(op_name(op)) + " of " + std::to_string(bytes) + " bytes at " + describe_address(a) +
                      ": outside every registered buffer and the block's shared memory");
    }
    return false;
  }
  const bool shared = r.buffer == nullptr;
  if (!shared && g_launch->opts.programmatic && !t.grid_waited && want_finding(FindingKind::grid_dependency)) {
    add_finding(FindingKind::grid_dependency, a, site,
                std::string(op_name(op)) + " at " + describe_address(a) +
                    " before griddepcontrol.wait in a programmatic dependent launch: the kernel before this one "
                    "may still be running");
  }
  if (a + bytes > r.base + r.size) {
    if (want_finding(FindingKind::out_of_bounds)) {
      add_finding(FindingKind::out_of_bounds, a, site,
                  std::string(op_name(op)) + " of " + std::to_string(bytes) + " bytes at " + describe_address(a) +
                      " runs " + std::to_string(a + bytes - r.base - r.size) + " bytes past the end of " +
                      (shared ? std::string("shared memory (") + std::to_string(r.size) + " bytes)"
                              : "'" + r.buffer->name + "' (" + std::to_string(r.size) + " bytes)"));
    }
    return false;
  }
  if ((bytes & (bytes - 1)) == 0 && a % bytes != 0) {
    if (want_finding(FindingKind::misaligned)) {
      add_finding(FindingKind::misaligned, a, site,
                  std::string(op_name(op)) + " of " + std::to_string(bytes) + " bytes at " + describe_address(a) +
                      " is not " + std::to_string(bytes) + "-byte aligned");
    }
    return false;
  }
  if (op != Op::load && !shared && !(static_cast<uint8_t>(r.buffer->access) & static_cast<uint8_t>(Access::write))) {
    if (want_finding(FindingKind::write_to_input)) {
      add_finding(FindingKind::write_to_input, a, site,
                  std::string(op_name(op)) + " into read-only buffer '" + r.buffer->name + "' at " +
                      describe_address(a));
    }
    return false;
  }
  const size_t off = a - r.base;
  uint8_t* st = r.shadow->status() + off;
  WriteRec* w = r.shadow->writes() + off;
  ReadRec* rd = r.shadow->reads() + off;
  const uint32_t gen = b.epoch(t.warp, t.lane);
  const uint32_t warp_id = b.linear * b.nwarps + t.warp;
  bool poison = false, pending = false, stale_nc = false;
  uint32_t race_with = kNone, nc_writer = kNone;
  const char* race_what = nullptr;
  Counters& c = g_launch->report.counters;
  const uint32_t first = g_launch->first_interval;
  const uint32_t floor = shared ? b.start_interval : first;
  const bool nc = op == Op::load && (flags & kAccessNonCoherent) && !shared;
  for (size_t i = 0; i < bytes; ++i) {
    pending = pending || (st[i] & kAsyncPending);
    if (op != Op::store) poison = poison || (st[i] & kUnwritten);
    const bool after_atomic = st[i] & kAtomicWrite;
    if (nc && !stale_nc && w[i].interval >= first) {
      stale_nc = true;
      nc_writer = w[i].gtid;
    }
    if (op == Op::atomic) {
      // An atomic is a write that races with unordered plain accesses, never with atomics.
      if (race_what == nullptr && !after_atomic && !ordered(t, floor, w[i].interval, w[i].gtid, w[i].gen)) {
        race_with = w[i].gtid;
        race_what = "atomic after a plain write by";
      }
      if (race_what == nullptr && !read_rec_ordered(t, floor, rd[i])) {
        race_with = rd[i].gtid;
        race_what = "atomic after a plain read by";
      }
      // One writer record per byte: atomics from another block make it "several blocks", so a
      // later plain access by any thread of the launch still races with them.
      const bool other_block = after_atomic && w[i].interval >= floor &&
                               (w[i].gtid == kNone || block_of(w[i].gtid) != b.linear);
      w[i] = WriteRec{b.interval, other_block ? kNone : t.gtid, gen};
      st[i] = static_cast<uint8_t>((st[i] & ~kUnwritten) | kAtomicWrite);
      continue;
    }
    if (op == Op::load) {
      if (race_what == nullptr && !ordered(t, floor, w[i].interval, w[i].gtid, w[i].gen)) {
        race_with = w[i].gtid;
        race_what = after_atomic ? "read after an atomic by" : "read after a write by";
      }
      ReadRec& x = rd[i];
      // A read-back (of bytes a plain store of this launch wrote) is not compulsory traffic; a
      // byte last written by an atomic still had to come from memory once.
      if (!shared && x.interval < first && (w[i].interval < first || after_atomic)) c.global_bytes_read_unique++;
      if (x.interval != b.interval) {
        x = ReadRec{b.interval, t.gtid, gen, warp_id, 1u << t.lane};
      } else {
        if (x.gtid != t.gtid) x.gtid = kNone;
        if (x.warp != warp_id) x.warp = kSeveralWarps | b.linear;
        if (gen > x.gen) x.gen = gen;
        x.lanes |= 1u << t.lane;
      }
    } else {
      if (race_what == nullptr && !ordered(t, floor, w[i].interval, w[i].gtid, w[i].gen)) {
        race_with = w[i].gtid;
        race_what = after_atomic ? "write after an atomic by" : "write after a write by";
      }
      if (race_what == nullptr && !read_rec_ordered(t, floor, rd[i])) {
        race_with = rd[i].gtid;
        race_what = "write after a read by";
      }
      if (!shared && w[i].interval < first) c.global_bytes_written_unique++;
      w[i] = WriteRec{b.interval, t.gtid, gen};
      st[i] &= static_cast<uint8_t>(~(kUnwritten | kAtomicWrite));
    }
  }
  if (stale_nc && want_finding(FindingKind::stale_nc_read)) {
    add_finding(FindingKind::stale_nc_read, a, site,
                "non-coherent load (ld.global.nc / __ldg) at " + describe_address(a) +
                    " of bytes written earlier in this launch by " + other_name(nc_writer) +
                    ": the read-only path may return stale data");
  }
  if (pending && op == Op::load && want_finding(FindingKind::async_read_before_wait)) {
    add_finding(FindingKind::async_read_before_wait, a, site,
                "load at " + describe_address(a) + " reads a cp.async destination before cp_async_wait for its group");
  }
  if (pending && op != Op::load && want_finding(FindingKind::shared_race)) {
    add_finding(FindingKind::shared_race, a, site,
                std::string(op_name(op)) + " at " + describe_address(a) +
                    " into a cp.async destination before cp_async_wait for its group");
  }
  if (poison && !pending && want_finding(FindingKind::poison_read)) {
    add_finding(FindingKind::poison_read, a, site,
                std::string(op_name(op)) + " of " + std::to_string(bytes) + " bytes at " + describe_address(a) +
                    " reads bytes never written");
  }
  const FindingKind race_kind = shared ? FindingKind::shared_race : FindingKind::global_race;
  if (race_what != nullptr && want_finding(race_kind)) {
    const bool other_block = race_with != kNone && block_of(race_with) != b.linear;
    add_finding(race_kind, a, site,
                std::string(op_name(op)) + " at " + describe_address(a) + ": " + race_what + " " +
                    other_name(race_with) +
                    (other_block ? " (blocks are unordered)" : " with no barrier or __syncwarp between them"));
  }
  if (op != Op::atomic) {
    if (!shared) {
      record_global_request(t, a, bytes, site, op == Op::store);
    } else if (!(flags & kAccessNoBankCount)) {
      record_shared_request(t, a, bytes, site);
    }
  }
  return !(pending && op == Op::load);
}

void set_initialized(Buffer& buf, uintptr_t a, size_t bytes) {
  if (!buf.shadow.ready()) {
    if (buf.initialized) return;
    buf.ensure_shadow();
  }
  const size_t off = a - buf.base;
  const size_t n = std::min(bytes, buf.size - off);
  uint8_t* st = buf.shadow.status() + off;
  for (size_t i = 0; i < n; ++i) st[i] &= static_cast<uint8_t>(~kUnwritten);
}

}  // namespace

void Shadow::Free::operator()(void* p) const { std::free(p); }

void Shadow::ensure(size_t bytes, bool unwritten) {
  if (status_ != nullptr && bytes_ >= bytes) return;
  const size_t n = bytes > 0 ? bytes : 1;
  // calloc of large blocks maps fresh zero pages: untouched shadow costs no memory.
  status_.reset(static_cast<uint8_t*>(std::calloc(n, 1)));
  writes_.reset(static_cast<WriteRec*>(std::calloc(n, sizeof(WriteRec))));
  reads_.reset(static_cast<ReadRec*>(std::calloc(n, sizeof(ReadRec))));
  if (!status_ || !writes_ || !reads_) {
    std::fprintf(stderr, "tejas emu: out of memory for a %zu-byte shadow\n", n);
    std::abort();
  }
  bytes_ = n;
  if (unwritten) std::memset(status_.get(), kUnwritten, n);
}

void Shadow::reset_status(size_t bytes, uint8_t value) { std::memset(status_.get(), value, bytes); }

Buffer* find_buffer(uintptr_t a) {
  auto it = g_registry.upper_bound(a);
  if (it == g_registry.begin()) return nullptr;
  --it;
  Buffer* b = it->second.get();
  return a < b->base + b->size ? b : nullptr;
}

std::string describe_address(uintptr_t a) {
  if (g_launch != nullptr && g_launch->current != nullptr) {
    const Block& b = *g_launch->current->block;
    const uintptr_t s = reinterpret_cast<uintptr_t>(b.smem);
    if (b.smem != nullptr && a >= s && a < s + b.smem_size + kSmemCapSm90) return "smem+" + hex(a - s);
  }
  if (const Buffer* buf = find_buffer(a)) return "'" + buf->name + "'+" + hex(a - buf->base);
  return hex(a);
}

void land_async(Thread& t, uint32_t keep_groups) {
  const uint32_t limit = t.groups_committed > keep_groups ? t.groups_committed - keep_groups : 0;
  Block& b = *t.block;
  size_t kept = 0;
  // The copy writes its destination when it lands: record the write in the waiting thread's
  // interval, so other threads need a barrier (or __syncwarp) after the wait.
  const WriteRec landed{b.interval, t.gtid, b.epoch(t.warp, t.lane)};
  for (size_t i = 0; i < t.async.size(); ++i) {
    AsyncCopy& op = t.async[i];
    if (op.group < limit) {
      std::memcpy(op.dst, op.data, op.size);
      const size_t off = static_cast<size_t>(op.dst - b.smem);
      uint8_t* st = b.smem_shadow.status() + off;
      WriteRec* w = b.smem_shadow.writes() + off;
      for (uint32_t k = 0; k < op.size; ++k) {
        st[k] &= static_cast<uint8_t>(~(kAsyncPending | kAtomicWrite));
        w[k] = landed;
      }
    } else {
      t.async[kept++] = op;
    }
  }
  t.async.resize(kept);
}

void drop_async(Thread& t) { t.async.clear(); }

}  // namespace rt

bool on_load(const void* p, size_t bytes, const Site& site, uint32_t flags) {
  return rt::check(p, bytes, site, rt::Op::load, flags);
}
bool on_store(void* p, size_t bytes, const Site& site, uint32_t flags) {
  return rt::check(p, bytes, site, rt::Op::store, flags);
}
bool on_atomic(void* p, size_t bytes, const Site& site) { return rt::check(p, bytes, site, rt::Op::atomic, 0); }

void* device_malloc(size_t bytes, const char* name) {
  const size_t n = (bytes + rt::kMallocAlign - 1) / rt::kMallocAlign * rt::kMallocAlign;
  void* p = std::aligned_alloc(rt::kMallocAlign, n > 0 ? n : rt::kMallocAlign);
  if (p == nullptr) return nullptr;
  std::memset(p, kPoisonByte, n > 0 ? n : rt::kMallocAlign);
  auto buf = std::make_unique<rt::Buffer>();
  buf->base = reinterpret_cast<uintptr_t>(p);
  buf->size = bytes;
  buf->name = name != nullptr ? name : "device_malloc";
  buf->owned = true;
  buf->initialized = false;
  std::lock_guard<std::mutex> lock(rt::g_registry_mutex);
  rt::g_registry[buf->base] = std::move(buf);
  return p;
}

void device_free(void* p) {
  if (p == nullptr) return;
  std::lock_guard<std::mutex> lock(rt::g_registry_mutex);
  auto it = rt::g_registry.find(reinterpret_cast<uintptr_t>(p));
  if (it == rt::g_registry.end() || !it->second->owned) {
    std::fprintf(stderr, "tejas emu: device_free(%p): not a device_malloc pointer\n", p);
    return;
  }
  rt::g_registry.erase(it);
  std::free(p);
}

void register_buffer(const void* p, size_t bytes, Access access, const char* name, bool initialized) {
  auto buf = std::make_unique<rt::Buffer>();
  buf->base = reinterpret_cast<uintptr_t>(p);
  buf->size = bytes;
  buf->access = access;
  buf->name = name != nullptr ? name : "buffer";
  buf->initialized = initialized;
  std::lock_guard<std::mutex> lock(rt::g_registry_mutex);
  rt::g_registry[buf->base] = std::move(buf);
}

void unregister_buffer(const void* p) {
  std::lock_guard<std::mutex> lock(rt::g_registry_mutex);
  auto it = rt::g_registry.find(reinterpret_cast<uintptr_t>(p));
  if (it != rt::g_registry.end() && !it->second->owned) rt::g_registry.erase(it);
}

void mark_initialized(const void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(rt::g_registry_mutex);
  if (rt::Buffer* buf = rt::find_buffer(reinterpret_cast<uintptr_t>(p))) {
    rt::set_initialized(*buf, reinterpret_cast<uintptr_t>(p), bytes);
  }
}

void copy_to_device(void* dst, const void* src, size_t bytes) {
  std::memcpy(dst, src, bytes);
  mark_initialized(dst, bytes);
}

void fill_device(void* dst, unsigned char value, size_t bytes) {
  std::memset(dst, value, bytes);
  mark_initialized(dst, bytes);
}

void cp_async(void* smem, const void* gmem, int cp_size, int src_size, Site site) {
  rt::Thread& t = rt::current_thread();
  rt::Block& b = *t.block;
  const uintptr_t d = reinterpret_cast<uintptr_t>(smem), s = reinterpret_cast<uintptr_t>(b.smem);
  if ((cp_size != 4 && cp_size != 8 && cp_size != 16) || src_size < 0 || src_size > cp_size) {
    if (rt::want_finding(FindingKind::unsupported)) {
      rt::add_finding(FindingKind::unsupported, d, site,
                      "cp.async size " + std::to_string(cp_size) + " / src-size " + std::to_string(src_size));
    }
    return;
  }
  if (b.smem_size == 0 || d < s || d >= s + b.smem_size) {
    if (rt::want_finding(FindingKind::out_of_bounds)) {
      rt::add_finding(FindingKind::out_of_bounds, d, site,
                      "cp.async destination " + rt::describe_address(d) + " is not in the block's shared memory");
    }
    return;
  }
  const uintptr_t g = reinterpret_cast<uintptr_t>(gmem);
  if (g % static_cast<uintptr_t>(cp_size) != 0 || d % static_cast<uintptr_t>(cp_size) != 0) {
    if (rt::want_finding(FindingKind::misaligned)) {
      rt::add_finding(FindingKind::misaligned, d, site,
                      "cp.async of " + std::to_string(cp_size) + " bytes needs both addresses aligned to it");
    }
    return;
  }
  rt::AsyncCopy op{};
  op.dst = static_cast<uint8_t*>(smem);
  op.size = static_cast<uint32_t>(cp_size);
  op.group = t.groups_committed;
  if (src_size > 0) {
    if (rt::check(gmem, static_cast<size_t>(src_size), site, rt::Op::load, 0)) {
      std::memcpy(op.data, gmem, static_cast<size_t>(src_size));
    } else {
      std::memset(op.data, kPoisonByte, static_cast<size_t>(src_size));
    }
  }
  if (!rt::check(smem, static_cast<size_t>(cp_size), site, rt::Op::store, 0)) return;  // bank-counted, as a st.shared
  // Until the wait, the destination holds poison and reads of it are findings.
  std::memset(smem, kPoisonByte, static_cast<size_t>(cp_size));
  uint8_t* st = b.smem_shadow.status() + (d - s);
  for (int k = 0; k < cp_size; ++k) st[k] |= rt::kAsyncPending;
  t.async.push_back(op);
  rt::g_launch->report.counters.cp_async_bytes += static_cast<uint64_t>(cp_size);
}

void cp_async_commit(Site) { rt::current_thread().groups_committed++; }

void cp_async_wait(int n, Site) { rt::land_async(rt::current_thread(), n > 0 ? static_cast<uint32_t>(n) : 0); }

}  // namespace tejas::emu
