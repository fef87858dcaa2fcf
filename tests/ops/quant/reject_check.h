// Helpers for validation tests: a rejected call returns invalid_argument naming the argument,
// leaves every output poisoned and every input unchanged.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "check/host_tensor.h"
#include "ops/quant/quant_expect.h"

namespace tejas::quanttest {

// The bits of every element of an input, to prove it unchanged later.
class Snapshot {
 public:
  Snapshot() = default;
  explicit Snapshot(const HostTensor& t) : t_(&t) {
    for (int64_t i = 0; i < t.numel(); ++i) bits_.push_back(t.bits_flat(i));
  }
  bool unchanged() const {
    for (int64_t i = 0; i < t_->numel(); ++i)
      if (t_->bits_flat(i) != bits_[static_cast<size_t>(i)]) return false;
    return t_->guards_intact();
  }

 private:
  const HostTensor* t_ = nullptr;
  std::vector<uint64_t> bits_;
};

struct NamedHost {
  const char* name;
  const HostTensor* t;
};

inline void expect_rejected(const Status& s, const std::string& op, const std::string& arg,
                            std::initializer_list<NamedHost> outputs, std::initializer_list<const Snapshot*> inputs) {
  EXPECT_EQ(s.code(), StatusCode::invalid_argument) << s.to_string();
  const std::string needle = op + ": " + arg + ": expected";
  EXPECT_EQ(s.message().rfind(needle, 0), 0u) << "message should start with '" << needle << "': " << s.message();
  for (const NamedHost& o : outputs) EXPECT_TRUE(still_poisoned(*o.t)) << o.name << " was written";
  for (const Snapshot* in : inputs) EXPECT_TRUE(in->unchanged()) << "an input was modified";
}

}  // namespace tejas::quanttest
