// Fiber stacks: mmap'ed once and reused across blocks and launches, each with a PROT_NONE
// guard page below it so an overflowing kernel stack faults instead of corrupting a neighbour.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "emu/fiber_stack.h"

namespace tejas::emu::rt {
namespace {

struct Stack {
  void* map = nullptr;
  size_t map_bytes = 0;
  void* top = nullptr;
};

struct Pool {
  size_t bytes = 0;
  std::vector<Stack> stacks;
  ~Pool() { release(); }
  void release() {
    for (Stack& s : stacks) munmap(s.map, s.map_bytes);
    stacks.clear();
  }
};

thread_local Pool g_pool;

size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

}  // namespace

void* fiber_stack_top(size_t index, size_t bytes) {
  const size_t page = page_size();
  bytes = (bytes + page - 1) / page * page;
  if (g_pool.bytes != bytes) {
    g_pool.release();
    g_pool.bytes = bytes;
  }
  while (g_pool.stacks.size() <= index) {
    Stack s;
    s.map_bytes = bytes + page;
    s.map = mmap(nullptr, s.map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (s.map == MAP_FAILED) {
      std::fprintf(stderr, "tejas emu: cannot map a %zu-byte fiber stack\n", s.map_bytes);
      std::abort();
    }
    mprotect(s.map, page, PROT_NONE);  // guard page at the low end (stacks grow down)
    s.top = static_cast<char*>(s.map) + s.map_bytes;
    g_pool.stacks.push_back(s);
  }
  return g_pool.stacks[index].top;
}

size_t fiber_stack_bytes() { return g_pool.bytes; }

}  // namespace tejas::emu::rt
