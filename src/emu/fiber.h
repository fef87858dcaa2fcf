// Context switches between the scheduler and the emulated threads' fibers. Two implementations,
// chosen at configure time (TEJAS_EMU_FIBERS, docs/emulator.md):
//   - Boost.Context's fcontext (TEJAS_EMU_FIBERS_BOOST=1): a few instructions per switch;
//   - POSIX ucontext (otherwise): glibc's swapcontext also saves the signal mask (a system call
//     per switch, several times slower), but needs nothing beyond libc - the GPU machine has no
//     Boost.
// Both give the same symmetric interface: swap(from, to) saves the running context into `from`
// and resumes `to`; a fresh context starts in its entry function, which must never return.
#pragma once
#include <cstddef>

#ifndef TEJAS_EMU_FIBERS_BOOST
#define TEJAS_EMU_FIBERS_BOOST 0  // set to 1 by CMake when Boost.Context is used
#endif

#if TEJAS_EMU_FIBERS_BOOST
#include <boost/context/detail/fcontext.hpp>
#else
#include <ucontext.h>
#endif

namespace tejas::emu::rt {

class FiberContext {
 public:
  using Entry = void (*)(void* arg);

  // Prepares a context on [stack_top - bytes, stack_top) that runs entry(arg) when first resumed.
  void start(void* stack_top, size_t bytes, Entry entry, void* arg);
  // Saves the running context into `from` and resumes `to` (returns when something resumes `from`).
  static void swap(FiberContext& from, FiberContext& to);

 private:
  Entry entry_ = nullptr;
  void* arg_ = nullptr;
#if TEJAS_EMU_FIBERS_BOOST
  static void trampoline(boost::context::detail::transfer_t tr);
  boost::context::detail::fcontext_t ctx_ = nullptr;
  bool fresh_ = false;
#else
  static void trampoline();
  ucontext_t ctx_{};
#endif
};

}  // namespace tejas::emu::rt
