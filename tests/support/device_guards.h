// The cuda cases' check for writes outside a tensor: after the call (and a synchronize), every
// device mirror's guard bytes must be as upload() left them. A host tensor's own guards say
// nothing about a GPU run (download() copies the payload only), so a cuda case checks these.
#pragma once
#include <gtest/gtest.h>

#include <initializer_list>
#include <utility>

#include "check/cuda_mem.h"

namespace tejas::testsupport {

// Each named mirror's device guards intact (inputs too: a stray store may land past any tensor).
inline void expect_device_guards(std::initializer_list<std::pair<const check::DeviceMirror*, const char*>> mirrors) {
  for (const auto& [m, name] : mirrors) {
    bool intact = false;
    const Status s = m->guards_intact(&intact);
    ASSERT_TRUE(s.ok()) << name << ": " << s.to_string();
    EXPECT_TRUE(intact) << name << ": device bytes outside it were written";
  }
}

}  // namespace tejas::testsupport
