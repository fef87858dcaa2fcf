// Emulator internals shared by the runtime's .cpp files (never included by kernels).
//
// One launch at a time per OS thread. A launch runs its grid one cluster at a time (a cluster
// is one block unless LaunchOptions.cluster says otherwise); the threads of the running
// cluster are fibers that a seeded scheduler resumes one at a time until they block (barrier,
// warp collective, atomic yield) or exit.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "emu/emu.h"
#include "emu/fiber.h"

namespace tejas::emu::rt {


inline constexpr uint32_t kWarpSize = 32;
inline constexpr uint32_t kFullMask = 0xffffffffu;
inline constexpr uint32_t kNone = 0xffffffffu;   // "no thread" / "several threads" in records
inline constexpr int kNumFindingKinds = static_cast<int>(FindingKind::grid_dependency) + 1;

// ---- shadow memory: one status byte and one access record pair per data byte ----------------
inline constexpr uint8_t kUnwritten = 1;     // never written (poison)
inline constexpr uint8_t kAsyncPending = 2;  // destination of a cp.async not yet waited for
inline constexpr uint8_t kAtomicWrite = 4;   // the byte's write record is an atomic

// Intervals are numbered process-wide: a block start and every barrier completion open a new
// one, so records from earlier launches or blocks are recognised without clearing the shadow.
struct WriteRec {
  uint32_t interval = 0;
  uint32_t gtid = 0;  // launch-wide linear thread id
  uint32_t gen = 0;   // writer's __syncwarp epoch at the write (Block::epoch)
};
struct ReadRec {
  uint32_t interval = 0;
  uint32_t gtid = 0;   // kNone: several readers
  uint32_t gen = 0;    // highest __syncwarp epoch among the readers
  uint32_t warp = 0;   // launch-wide warp id of the readers; kNone: several warps
  uint32_t lanes = 0;  // the readers' lanes when they are all of one warp
};

class Shadow {
 public:
  // Pages are reserved zeroed and only touched where the kernel accesses.
  void ensure(size_t bytes, bool unwritten);
  bool ready() const { return status_ != nullptr; }
  void reset_status(size_t bytes, uint8_t value);
  uint8_t* status() { return status_.get(); }
  WriteRec* writes() { return writes_.get(); }
  ReadRec* reads() { return reads_.get(); }

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::unique_ptr<uint8_t[], Free> status_;
  std::unique_ptr<WriteRec[], Free> writes_;
  std::unique_ptr<ReadRec[], Free> reads_;
  size_t bytes_ = 0;
};

struct Buffer {
  uintptr_t base = 0;
  size_t size = 0;
  Access access = Access::read_write;
  std::string name;
  bool owned = false;       // device_malloc
  bool initialized = true;  // contents valid before any device write
  Shadow shadow;
  void ensure_shadow() {
    if (!shadow.ready()) shadow.ensure(size, !initialized);
  }
};

// ---- threads and blocks ----------------------------------------------------------------------
enum class ThreadState : uint8_t { ready, running, at_barrier, in_collective, exited };

struct SiteCount {
  const char* file;
  uint64_t chain;  // Site::chain: the helper calls that led to file:line:column
  uint32_t line;
  uint32_t column;
  uint32_t kind;   // access kind (load / store) so one site may do both
  uint32_t count;
};

inline constexpr int kMaxAsyncBytes = 16;
struct AsyncCopy {
  uint8_t* dst;
  uint8_t data[kMaxAsyncBytes];
  uint32_t size;
  uint32_t group;
};

struct Block;
struct Thread {
  FiberContext fiber;
  void* stack_top = nullptr;
  Block* block = nullptr;
  uint32_t tid = 0, lane = 0, warp = 0;  // within the block
  uint32_t gtid = 0;                      // within the launch
  ThreadState state = ThreadState::ready;
  bool started = false;
  bool unwind = false;  // resumed only to unwind its stack (block aborted)
  detail::Builtins builtins;
  // Barrier arrival.
  int bar_pred = 0;
  Site bar_site;
  uint32_t bar_result = 0;    // threads whose predicate was non-zero
  uint32_t bar_arrivals = 0;  // threads that took part
  std::vector<SiteCount> sites;
  std::vector<AsyncCopy> async;
  uint32_t groups_committed = 0;
  bool grid_waited = false;  // executed griddepcontrol.wait (LaunchOptions::programmatic)
};

struct Collective {
  const char* name;
  Site site;
  uint32_t warp;
  uint32_t mask;
  uint32_t arrived = 0;
  bool aligned = false;
  bool site_mismatch_reported = false;
  WarpSlots slots;
  // The latest arriver's function and argument: a collective completed by an exiting lane runs
  // them (that arriver is suspended, so its stack still holds `user`).
  CollectiveFn fn = nullptr;
  void* user = nullptr;
};

// A request is keyed by (warp, file, line, column, chain, occ): one instruction (the site reached through
// the same helper calls) executed for the occ-th time by its lanes.
struct GlobalReq {
  const char* file;
  uint64_t chain;
  uint64_t sector;
  uint32_t warp;
  uint32_t line;
  uint32_t column;
  uint32_t occ;
  uint32_t is_store;
  uint32_t bytes_mask;  // bit i: byte i of the sector is accessed
};
struct SharedReq {
  const char* file;
  uint64_t chain;
  uint32_t warp;
  uint32_t line;
  uint32_t column;
  uint32_t occ;
  uint32_t lane;
  uint32_t offset;
  uint32_t size;
};

struct Block {
  uint3 idx{0, 0, 0};
  uint32_t linear = 0;
  uint32_t nthreads = 0, nwarps = 0;
  Thread* threads = nullptr;
  uint32_t live = 0, at_barrier = 0;
  uint32_t interval = 0;
  uint32_t start_interval = 0;  // shared-memory records older than this belong to earlier blocks
  bool aborted = false;
  bool launched_dependents = false;  // a thread executed griddepcontrol.launch_dependents
  std::vector<Collective> collectives;
  // __syncwarp ordering as vector clocks, one per lane: vc(w, a, b) is the latest epoch of lane b
  // that lane a is ordered after (through a chain of __syncwarps). A lane's own entry is its
  // epoch, which every __syncwarp it takes part in advances.
  std::vector<uint32_t> clocks;
  uint32_t& vc(uint32_t w, uint32_t a, uint32_t b) { return clocks[(w * kWarpSize + a) * kWarpSize + b]; }
  uint32_t vc(uint32_t w, uint32_t a, uint32_t b) const { return clocks[(w * kWarpSize + a) * kWarpSize + b]; }
  uint32_t epoch(uint32_t w, uint32_t lane) const { return vc(w, lane, lane); }
  // Dynamic shared memory (poisoned at block start) and its shadow.
  std::vector<uint8_t> smem_storage;
  uint8_t* smem = nullptr;
  size_t smem_size = 0;
  Shadow smem_shadow;
  // Per-block request records, folded into the counters when the block ends.
  std::vector<GlobalReq> global_reqs;
  std::vector<SharedReq> shared_reqs;
  uint32_t exited_mask(uint32_t warp) const;  // lanes of `warp` that exited or do not exist
};

struct Launch {
  LaunchOptions opts;
  detail::ThreadBody body = nullptr;
  void* ctx = nullptr;
  LaunchReport report;
  std::array<uint32_t, kNumFindingKinds> kind_counts{};
  uint32_t first_interval = 0;  // intervals >= this belong to this launch
  uint32_t threads_per_block = 0;
  uint64_t rng = 0;
  size_t stack_bytes = 0;
  std::vector<Block> blocks;      // the running cluster
  std::vector<Thread> threads;    // their threads
  std::vector<Thread*> ready;
  Thread* current = nullptr;
  FiberContext scheduler;  // the launch loop's own context while a fiber runs
  uint32_t next_random(uint32_t bound);
};

extern thread_local Launch* g_launch;

inline constexpr uint64_t kDefaultSeed = 0x7e1a5ull;  // fixed default: runs are reproducible
// An unsigned environment value (decimal, 0x hex or 0 octal); `fallback` when unset or malformed.
uint64_t env_u64(const char* name, uint64_t fallback);

// Interval numbering (process-wide).
uint32_t new_interval();

// Scheduler (launch.cpp).
Thread& current_thread();   // aborts the process if called outside a launch (a harness bug)
void suspend(Thread& t);    // back to the scheduler; throws FiberUnwind when the block aborts
void make_ready(Thread& t);
void yield_current();       // reschedule the running thread at a random point
// Runs collective `index` of `b` over the lanes that arrived, wakes them except `skip_lane`
// (kNone: wake all) and removes it.
void complete_collective(Block& b, size_t index, uint32_t skip_lane);
struct FiberUnwind {};

// Findings (report.cpp).
bool want_finding(FindingKind k);  // false (and counts a drop) once the kind is full
// `who`: the thread the finding is about (default: the running thread).
void add_finding(FindingKind k, uintptr_t address, const Site& site, std::string detail, const Thread* who = nullptr);
std::string thread_name(uint32_t gtid);  // "thread (x,y,z)" plus "block (...)" when not current
std::string describe_address(uintptr_t a);

// Counters (counters.cpp).
uint32_t next_occurrence(Thread& t, const Site& site, uint32_t kind);
void record_global_request(Thread& t, uintptr_t addr, size_t bytes, const Site& site, bool is_store);
void record_shared_request(Thread& t, uintptr_t addr, size_t bytes, const Site& site);
void flush_block_counters(Block& b, Counters& c);

// Memory (memory.cpp).
Buffer* find_buffer(uintptr_t a);
void land_async(Thread& t, uint32_t keep_groups);  // cp.async groups older than the newest n
void drop_async(Thread& t);

}  // namespace tejas::emu::rt
