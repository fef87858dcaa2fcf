// detail::ScopedSet<T>: sets a variable (a thread-local override) for the life of a scope and
// restores the value it had after; scopes nest. The tests' overrides take this shape
// (check::ScopedPoison, quant_kernel::ScopedResidentCtas, rotary::ScopedPipelineFallback,
// norm::ScopedWarpResidentCap, normtest::ScopedGraphCapture): each
// derives from it, constructed on its own variable, which stays private to its .cpp.
#pragma once

namespace tejas::detail {

template <class T>
class ScopedSet {
 public:
  ScopedSet(T& slot, T value) : slot_(slot), saved_(slot) { slot_ = value; }
  ~ScopedSet() { slot_ = saved_; }
  ScopedSet(const ScopedSet&) = delete;
  ScopedSet& operator=(const ScopedSet&) = delete;

 private:
  T& slot_;
  T saved_;
};

}  // namespace tejas::detail
