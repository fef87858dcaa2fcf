// detail::RecentCache<Key, Value, N>: a thread's last N answers of a lookup that takes a lock (a
// thread_local instance in front of a shared, locked map), replaced oldest first. For keys a
// serving loop asks over and over in turn: detail::resident_ctas (src/ops/common/resident.cu),
// which the norm, rope, activation and quant launchers ask on every launch that may run a
// persistent grid, each with its own kernel. NOTES: one remembered answer missed on nearly every
// launch of a decode step, whose ops alternate, and twice per launch for the norm family's decode
// shapes, which ask both of its pipelines (the mutex and the map each time).
#pragma once
#include <array>

namespace tejas::detail {

template <class Key, class Value, int N>
class RecentCache {
  static_assert(N > 0, "at least one entry");

 public:
  // The value remembered for `key`, or nullptr.
  const Value* find(const Key& key) const {
    for (int i = 0; i < used_; ++i)
      if (keys_[i] == key) return &values_[i];
    return nullptr;
  }
  // Remembers `value` for `key` (a key not remembered: find first), in place of the oldest entry
  // once all N are used.
  void put(const Key& key, const Value& value) {
    keys_[next_] = key;
    values_[next_] = value;
    next_ = next_ + 1 == N ? 0 : next_ + 1;
    if (used_ < N) ++used_;
  }

 private:
  std::array<Key, N> keys_{};
  std::array<Value, N> values_{};
  int used_ = 0, next_ = 0;
};

}  // namespace tejas::detail
