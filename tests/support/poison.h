// Runs a test body under each output poison byte (check::ScopedPoison): the default 0xFF, which
// is NaN in f32 / f16 / bf16 / e4m3 / e5m2 and ue8m0's NaN code, then two finite ones, so a
// case that expects a NaN, +-Inf or e2m1 -6 (0xF) output passes only when the op wrote it.
// 0x00 reads as +0 / code 0 everywhere; 0x55 as a finite, non-zero value in every format (its
// two nibbles are equal: every fp4 element of an untouched byte holds +3).
#pragma once
#include <gtest/gtest.h>

#include <cstdint>

#include "check/host_tensor.h"

namespace tejas::testsupport {

inline constexpr uint8_t kPoisonBytes[] = {check::kDefaultPoison, 0x00, 0x55};

// Tensors constructed inside `body` are filled with the current byte.
template <class Body>
void for_each_poison(Body&& body) {
  for (uint8_t p : kPoisonBytes) {
    SCOPED_TRACE(::testing::Message() << "poison byte 0x" << std::hex << static_cast<int>(p));
    const check::ScopedPoison scoped(p);
    body();
  }
}

}  // namespace tejas::testsupport
