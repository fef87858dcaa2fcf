// Builds without device code (TEJAS_HOST_ONLY) get a device_selftest_cuda that says so.
#include "device/selftest.h"

#if !defined(TEJAS_WITH_CUDA)
namespace tejas {
Status device_selftest_cuda(std::string* report) {
  if (report) *report = "device self-test: built without device code (TEJAS_HOST_ONLY)";
  return Status::Unsupported("device_selftest_cuda: built without device code");
}
}  // namespace tejas
#endif
