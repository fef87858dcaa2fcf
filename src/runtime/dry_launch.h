// detail::ScopedDryLaunch: while one is alive, this thread's cuda-backend calls do everything a
// call does on the host - validation, backend choice, planning, the occupancy questions and
// their caches - except the launch itself: where the launcher would launch, the call answers Ok,
// and no tensor is read or written. `tejas overhead` times the ops' host path this way (on a
// machine without a GPU too: the device tensors it passes are never touched). Debug-check mode's
// index copies are not skipped (they read the device): with it on (TEJAS_DEBUG_CHECKS=1) the
// tool refuses to run and the DryLaunch tests skip. The one launcher (detail::launch_kernel, which
// stream_copy's launches go through too) tests dry_launch() right before each launch: one
// thread-local load per launch.
#pragma once
#include "runtime/scoped_set.h"

namespace tejas::detail {

inline thread_local bool g_dry_launch = false;

inline bool dry_launch() { return g_dry_launch; }

class ScopedDryLaunch : ScopedSet<bool> {
 public:
  ScopedDryLaunch() : ScopedSet(g_dry_launch, true) {}
};

}  // namespace tejas::detail
