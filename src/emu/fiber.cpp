#include "emu/fiber.h"

#include "emu/emu.h"

#include <cstdio>
#include <cstdlib>

namespace tejas::emu::rt {
namespace {
// The context being entered for the first time (a launch runs on one OS thread).
thread_local FiberContext* t_starting = nullptr;
}  // namespace

#if TEJAS_EMU_FIBERS_BOOST
namespace bctx = boost::context::detail;

void FiberContext::start(void* stack_top, size_t bytes, Entry entry, void* arg) {
  entry_ = entry;
  arg_ = arg;
  ctx_ = bctx::make_fcontext(stack_top, bytes, &FiberContext::trampoline);
  fresh_ = true;
}

// fcontext hands the suspended context to whoever is resumed; `data` says where to keep it.
void FiberContext::trampoline(bctx::transfer_t tr) {
  static_cast<FiberContext*>(tr.data)->ctx_ = tr.fctx;
  FiberContext* self = t_starting;
  self->entry_(self->arg_);
  std::fprintf(stderr, "tejas emu: a fiber's entry function returned\n");
  std::abort();
}

void FiberContext::swap(FiberContext& from, FiberContext& to) {
  if (to.fresh_) {
    to.fresh_ = false;
    t_starting = &to;
  }
  const bctx::transfer_t tr = bctx::jump_fcontext(to.ctx_, &from);
  static_cast<FiberContext*>(tr.data)->ctx_ = tr.fctx;
}


#else

void FiberContext::start(void* stack_top, size_t bytes, Entry entry, void* arg) {
  entry_ = entry;
  arg_ = arg;
  if (getcontext(&ctx_) != 0) {
    std::fprintf(stderr, "tejas emu: getcontext failed\n");
    std::abort();
  }
  ctx_.uc_stack.ss_sp = static_cast<char*>(stack_top) - bytes;
  ctx_.uc_stack.ss_size = bytes;
  ctx_.uc_link = nullptr;
  makecontext(&ctx_, &FiberContext::trampoline, 0);
}

void FiberContext::trampoline() {
  FiberContext* self = t_starting;
  self->entry_(self->arg_);
  std::fprintf(stderr, "tejas emu: a fiber's entry function returned\n");
  std::abort();
}

void FiberContext::swap(FiberContext& from, FiberContext& to) {
  t_starting = &to;  // read only by a fresh context's trampoline
  if (swapcontext(&from.ctx_, &to.ctx_) != 0) {
    std::fprintf(stderr, "tejas emu: swapcontext failed\n");
    std::abort();
  }
}

#endif

}  // namespace tejas::emu::rt

namespace tejas::emu {
const char* fiber_implementation() { return TEJAS_EMU_FIBERS_BOOST ? "boost" : "ucontext"; }
}  // namespace tejas::emu
