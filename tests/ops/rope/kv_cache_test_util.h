// Shared by the rope_kv_cache_write tests: the buffers of one call.
#pragma once
#include <vector>

#include "check/host_tensor.h"
#include "ops/rope/rope_test_util.h"
#include "tejas/rope.h"

namespace tejas::ropetest {

struct KvShape {
  int64_t T, Hq, Hk, D, rotary, num_blocks, block_size;
};

struct KvBuffers {
  check::HostTensor pos, cache, q, k, v, slots, k_cache, v_cache, k_scale, v_scale;
  PagedKvCache paged() const {
    const bool fp8 = dtype_is_fp8(k_cache.dtype());
    return PagedKvCache{k_cache.view(), v_cache.view(), fp8 ? k_scale.view() : TensorView{},
                        fp8 ? v_scale.view() : TensorView{}};
  }
};

// Random q/k/v, positions, and a slot mapping of distinct random slots with every
// `skip_every`-th token skipped (-1); caches left poisoned (0xFF) so untouched rows are visible.
inline KvBuffers make_kv_buffers(check::Rng& rng, const KvShape& s, DType qt, DType cache_dt, DType cos_dt,
                                 int64_t max_pos, int64_t skip_every, double k_scale = 0.05, double v_scale = 0.02) {
  KvBuffers b{check::HostTensor(DType::i64, {s.T}),
              make_cache(max_pos, s.rotary, cos_dt),
              check::HostTensor(qt, {s.T, s.Hq, s.D}),
              check::HostTensor(qt, {s.T, s.Hk, s.D}),
              check::HostTensor(qt, {s.T, s.Hk, s.D}),
              check::HostTensor(DType::i64, {s.T}),
              check::HostTensor(cache_dt, {s.num_blocks, s.block_size, s.Hk, s.D}),
              check::HostTensor(cache_dt, {s.num_blocks, s.block_size, s.Hk, s.D}),
              check::HostTensor(DType::f32, {1}),
              check::HostTensor(DType::f32, {1})};
  check::fill_randint(b.pos, rng, 0, max_pos - 1);
  check::fill_normal(b.q, rng);
  check::fill_normal(b.k, rng);
  check::fill_normal(b.v, rng);
  // Distinct slots: a seeded shuffle of 0 .. num_slots - 1.
  std::vector<int64_t> slots(static_cast<size_t>(s.num_blocks * s.block_size));
  for (size_t i = 0; i < slots.size(); ++i) slots[i] = static_cast<int64_t>(i);
  for (size_t i = slots.size(); i > 1; --i)
    std::swap(slots[i - 1], slots[static_cast<size_t>(rng.randint(0, static_cast<int64_t>(i) - 1))]);
  for (int64_t t = 0; t < s.T; ++t)
    b.slots.set({t}, skip_every > 0 && t % skip_every == skip_every - 1 ? -1.0 : static_cast<double>(slots[static_cast<size_t>(t)]));
  b.k_scale.set_flat(0, k_scale);
  b.v_scale.set_flat(0, v_scale);
  return b;
}

}  // namespace tejas::ropetest
