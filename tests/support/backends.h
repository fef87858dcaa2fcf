// The kernel backends a test runs its cases on: the emulator always, the GPU when one is present.
#pragma once
#include <vector>

#include "check/cuda_mem.h"
#include "support/seed.h"
#include "tejas/context.h"

namespace tejas::testsupport {

inline std::vector<Backend> kernel_backends() {
  std::vector<Backend> b = {Backend::emulator};
  if (check::cuda_available()) b.push_back(Backend::cuda);
  return b;
}

// The generator a case on `backend` draws from, in a test whose GPU cases come before some of
// its emulator cases: the test's own on the emulator, on the GPU a side stream of its own
// (side_rng, seed.h, taken when this is made), so a seed gives the emulator cases the same
// inputs with or without a GPU.
class BackendRngs {
 public:
  explicit BackendRngs(check::Rng& rng) : rng_(rng), gpu_(side_rng(rng)) {}
  check::Rng& operator()(Backend b) { return b == Backend::cuda ? gpu_ : rng_; }

 private:
  check::Rng& rng_;
  check::Rng gpu_;
};

}  // namespace tejas::testsupport
