// dev::Loaded<T>: a register loaded under a uniform condition and read only under it (a KV-cache
// slot, an fp8 cache's scale). On the device it has no initial value: a phi of an initial value
// with the load made ptxas copy the loaded register right after the load, and the copy waited
// for the data (for rope's slot: a DRAM trip before the thread's other loads). Under emulation
// it remembers whether it was set, and get() of a value never set reports a poison_read finding
// (the host compiler cannot see that every read is under its load's condition; a path that
// broke that would otherwise read a made-up value silently).
#pragma once
#include "device/prelude.h"

#if TEJAS_EMULATION
#include "emu/emu.h"
#endif

namespace tejas::dev {

template <class T>
class Loaded {
 public:
  __device__ __forceinline__ void set(const T& x) {
    v_ = x;
#if TEJAS_EMULATION
    set_ = true;
#endif
  }
  __device__ __forceinline__ const T& get(TEJAS_SITE_PARAM_ONLY) const {
#if TEJAS_EMULATION
    if (!set_) ::tejas::emu::report(::tejas::emu::FindingKind::poison_read, nullptr, site, "a dev::Loaded value read before it was loaded");
#endif
    return v_;
  }

 private:
#if TEJAS_EMULATION
  T v_{};
  bool set_ = false;
#else
  T v_;
#endif
};

}  // namespace tejas::dev
