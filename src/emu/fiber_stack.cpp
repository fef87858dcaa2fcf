// Fiber stacks: mmap'ed once and reused across blocks and launches, each with 64 KB of PROT_NONE
// guard below it so an overflowing kernel stack faults instead of corrupting a neighbour.
//
// The fault is reported: when the first stack is mapped, a SIGSEGV handler is installed (once
// per process) with an alternate signal stack (once per OS thread; the overflowed fiber stack
// has no room for a signal frame). A fault inside one of the thread's guard pages writes a
// message naming the emulated block and thread; every fault then goes to the previous
// disposition, exactly as without the handler (the default one ends the process by SIGSEGV).
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "emu/emu.h"
#include "emu/fiber_stack.h"

namespace tejas::emu::rt {
namespace {

constexpr size_t kBytesPerKb = 1024;
constexpr size_t kAltStackBytes = 64 * 1024;  // the handler's frames plus libc's signal frame
// Guard below each stack: one frame bigger than the guard could step over it into the next
// mapping (often another fiber's stack) unseen; 64 KB of PROT_NONE costs only address space.
constexpr size_t kGuardBytes = 64 * 1024;

struct Stack {
  void* map = nullptr;
  size_t map_bytes = 0;
  void* top = nullptr;
};

// What the signal handler reads: plain data, one per OS thread, updated only outside faults.
struct GuardView {
  const Stack* stacks = nullptr;
  size_t count = 0;
  size_t guard = 0;
  size_t stack_bytes = 0;
};
thread_local GuardView g_guards;

struct AltStack {
  void* map = nullptr;
  ~AltStack() {
    if (map == nullptr) return;
    stack_t cur{};
    if (sigaltstack(nullptr, &cur) == 0 && cur.ss_sp == map) {
      stack_t off{};
      off.ss_flags = SS_DISABLE;
      sigaltstack(&off, nullptr);
    }
    munmap(map, kAltStackBytes);
  }
};
thread_local AltStack g_alt_stack;

struct Pool {
  size_t bytes = 0;
  std::vector<Stack> stacks;
  ~Pool() { release(); }
  void release() {
    g_guards.count = 0;
    for (Stack& s : stacks) munmap(s.map, s.map_bytes);
    stacks.clear();
  }
};

thread_local Pool g_pool;

struct sigaction g_previous;
std::atomic<bool> g_handler_installed{false};

size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// ---- async-signal-safe output ------------------------------------------------------------------
struct Msg {
  char buf[256];
  size_t n = 0;
  void str(const char* s) {
    while (*s != '\0' && n < sizeof buf) buf[n++] = *s++;
  }
  void num(uint64_t v) {
    char digits[20];
    int k = 0;
    do {
      digits[k++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (k > 0 && n < sizeof buf) buf[n++] = digits[--k];
  }
  void dims(unsigned x, unsigned y, unsigned z) {
    str("(");
    num(x);
    str(",");
    num(y);
    str(",");
    num(z);
    str(")");
  }
  void flush() {
    size_t done = 0;
    while (done < n) {
      const ssize_t w = write(STDERR_FILENO, buf + done, n - done);
      if (w <= 0) return;
      done += static_cast<size_t>(w);
    }
  }
};

bool in_guard_page(uintptr_t a) {
  const GuardView& g = g_guards;
  for (size_t i = 0; i < g.count; ++i) {
    const uintptr_t lo = reinterpret_cast<uintptr_t>(g.stacks[i].map);
    if (a >= lo && a < lo + g.guard) return true;
  }
  return false;
}

void on_segv(int sig, siginfo_t* info, void* uctx) {
  if (info != nullptr && in_guard_page(reinterpret_cast<uintptr_t>(info->si_addr))) {
    Msg m;
    m.str("tejas emu: fiber stack overflow in an emulated thread (stack ");
    m.num(g_guards.stack_bytes / kBytesPerKb);
    m.str(" KB)");
    if (const detail::Builtins* b = detail::tls_builtins; b != nullptr) {
      m.str(" block ");
      m.dims(b->block_idx.x, b->block_idx.y, b->block_idx.z);
      m.str(" thread ");
      m.dims(b->thread_idx.x, b->thread_idx.y, b->thread_idx.z);
    }
    m.str("; raise TEJAS_EMU_STACK_KB or LaunchOptions::stack_bytes\n");
    m.flush();
  }
  // Hand the fault on as if this handler were not there.
  if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(sig, info, uctx);
    return;
  }
  if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
    return;
  }
  // Default (or ignored, which the kernel overrides for a fault): restore it and return, so the
  // faulting instruction runs again and the process ends by SIGSEGV as before. A SIGSEGV that
  // was sent (kill, raise: si_code <= 0) is not re-raised by returning: raise it again.
  sigaction(SIGSEGV, &g_previous, nullptr);
  if (info == nullptr || info->si_code <= 0) raise(sig);
}

void install_overflow_report() {
  if (g_alt_stack.map == nullptr) {
    stack_t cur{};
    if (sigaltstack(nullptr, &cur) == 0 && (cur.ss_flags & SS_DISABLE) != 0) {
      void* p = mmap(nullptr, kAltStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p != MAP_FAILED) {
        stack_t ss{};
        ss.ss_sp = p;
        ss.ss_size = kAltStackBytes;
        if (sigaltstack(&ss, nullptr) == 0) {
          g_alt_stack.map = p;
        } else {
          munmap(p, kAltStackBytes);
        }
      }
    }
  }
  bool expected = false;
  if (!g_handler_installed.compare_exchange_strong(expected, true)) return;
  struct sigaction sa{};
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &g_previous);
}

}  // namespace

void* fiber_stack_top(size_t index, size_t bytes) {
  const size_t page = page_size();
  bytes = (bytes + page - 1) / page * page;
  const size_t guard = (kGuardBytes + page - 1) / page * page;
  if (g_pool.bytes != bytes) {
    g_pool.release();
    g_pool.bytes = bytes;
  }
  if (g_pool.stacks.size() <= index) install_overflow_report();
  while (g_pool.stacks.size() <= index) {
    Stack s;
    s.map_bytes = bytes + guard;
    s.map = mmap(nullptr, s.map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (s.map == MAP_FAILED) {
      std::fprintf(stderr, "tejas emu: cannot map a %zu-byte fiber stack\n", s.map_bytes);
      std::abort();
    }
    mprotect(s.map, guard, PROT_NONE);  // guard pages at the low end (stacks grow down)
    s.top = static_cast<char*>(s.map) + s.map_bytes;
    g_pool.stacks.push_back(s);  // no fiber runs here, so the handler never sees a stale view
    g_guards = GuardView{g_pool.stacks.data(), g_pool.stacks.size(), guard, bytes};
  }
  return g_pool.stacks[index].top;
}

size_t fiber_stack_bytes() { return g_pool.bytes; }

}  // namespace tejas::emu::rt
