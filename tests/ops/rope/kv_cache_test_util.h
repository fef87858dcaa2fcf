// Shared by the rope_kv_cache_write tests: the buffers of one call, and the check of cache rows.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "check/cuda_mem.h"
#include "check/host_tensor.h"
#include "device/clean_verdict.h"
#include "device/numeric/clean_multiplier.h"
#include "device/numeric/storage.h"
#include "emu/emu.h"
#include "ops/common/emu_launch.h"
#include "ops/common/ref_numeric.h"
#include "ops/rope/plan.h"
#include "ops/rope/rope_test_util.h"
#include "support/device_guards.h"
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

// A KvBuffers on the GPU (the cuda cases): every tensor mirrored (uploaded by the constructor's
// caller through upload()), the paged cache of the device copies, and after the call and a
// synchronize, download(): q, k, v and both caches back into b, every mirror's device guards checked
// (inputs too: a stray store may land past any tensor).
struct DeviceKv {
  check::DeviceMirror pos, cos, q, k, v, slots, k_cache, v_cache, k_scale, v_scale;

  Status upload(const KvBuffers& b) {
    for (auto [m, h] : {std::pair{&pos, &b.pos},
                        {&cos, &b.cache},
                        {&q, &b.q},
                        {&k, &b.k},
                        {&v, &b.v},
                        {&slots, &b.slots},
                        {&k_cache, &b.k_cache},
                        {&v_cache, &b.v_cache},
                        {&k_scale, &b.k_scale},
                        {&v_scale, &b.v_scale}})
      TEJAS_RETURN_IF_ERROR(m->upload(*h));
    return Status::Ok();
  }
  PagedKvCache paged(const KvBuffers& b) const {
    const bool fp8 = dtype_is_fp8(b.k_cache.dtype());
    return PagedKvCache{k_cache.view(), v_cache.view(), fp8 ? k_scale.view() : TensorView{},
                        fp8 ? v_scale.view() : TensorView{}};
  }
  void download(KvBuffers& b) const {
    for (auto [m, h] : {std::pair{&q, &b.q}, {&k, &b.k}, {&v, &b.v}, {&k_cache, &b.k_cache}, {&v_cache, &b.v_cache}}) {
      const Status st = m->download(*h);
      ASSERT_TRUE(st.ok()) << st.to_string();
    }
    testsupport::expect_device_guards({{&pos, "positions"},
                                       {&cos, "cos_sin"},
                                       {&q, "q"},
                                       {&k, "k"},
                                       {&v, "v"},
                                       {&slots, "slots"},
                                       {&k_cache, "k_cache"},
                                       {&v_cache, "v_cache"},
                                       {&k_scale, "k_scale"},
                                       {&v_scale, "v_scale"}});
  }
};

// Random q/k/v, positions, and a slot mapping of distinct random slots with every
// `skip_every`-th token skipped (-1); caches left poisoned (the current poison byte: 0xFF unless
// a check::ScopedPoison says otherwise) so untouched rows are visible.
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

// Cache code `got` for the exact value x / scale: the reference encoding of it, exactly (the
// kernel resolves quotients near a code midpoint from the exact residual: tejas/rope.h). Only a
// NaN code's sign is unspecified.
inline ::testing::AssertionResult code_ok(DType dt, uint64_t got, long double exact) {
  const uint64_t want = ref::encode(dt, static_cast<double>(exact));
  if (got == want) return ::testing::AssertionSuccess();
  const double g = ref::decode(dt, got), w = ref::decode(dt, want);
  if (std::isnan(g) && std::isnan(w)) return ::testing::AssertionSuccess();
  // One string: AssertionResult streams each piece separately, so std::hex would not carry over.
  std::ostringstream os;
  os << "code 0x" << std::hex << got << " (" << g << ") want 0x" << want << " (" << w << ") for "
     << static_cast<double>(exact);
  return ::testing::AssertionFailure() << os.str();
}

// Every value of dtype `src` (all 2^16 codes) whose f32 quotient x / scale rounds to another
// `code` than the exact quotient does (double rounding through f32: the f32 quotient lands on,
// or across, a code midpoint). A kernel that only divides in f32 and converts fails on each.
inline std::vector<double> double_rounding_values(DType src, DType code, float scale) {
  std::vector<double> out;
  check::HostTensor one(src, {1});
  for (uint32_t bits = 0; bits < (1u << 16); ++bits) {
    one.set_bits_flat(0, bits);
    const double x = one.get_flat(0);
    if (!std::isfinite(x)) continue;
    const double exact = static_cast<double>(static_cast<long double>(x) / scale);
    const float f32_quotient = static_cast<float>(x) / scale;
    if (ref::encode(code, exact) != ref::encode(code, f32_quotient)) out.push_back(x);
  }
  return out;
}

// The first of a few non-power-of-two scales for which double_rounding_values finds values, and
// those values (empty when none does).
struct HardValues {
  float scale = 0.0f;
  std::vector<double> values;
};
inline HardValues hard_values(DType src, DType code) {
  HardValues h;
  for (float candidate : {1.1f, 0.37f, 0.7071f, 0.0123456f, 3.3f}) {
    h.values = double_rounding_values(src, code, candidate);
    h.scale = candidate;
    if (!h.values.empty()) break;
  }
  return h;
}
// Power-of-two scales (the kernels' exact path: x / scale is exact in f32, and the conversion's
// round-to-nearest-even is the answer) from the smallest subnormal to 2^127, 1.0 among them.
inline constexpr float kPowerOfTwoScales[] = {0x1p-149f, 0x1p-127f, 0x1p-126f, 0x1p-125f, 0x1p-8f,
                                              1.0f,      0x1p9f,    0x1p125f,  0x1p126f,  0x1p127f};
// k and v as scale x m, half of them with m of 5 significant bits (16..31 x 2^e: e4m3 and e5m2
// code values and exact midpoints, ties to even), half spread over the codes' range and past it;
// values outside the source dtype's range come out as its rounding (the checks read them back).
inline void fill_scaled_ties(check::HostTensor& k, check::HostTensor& v, float scale, check::Rng& rng) {
  for (check::HostTensor* t : {&k, &v}) {
    for (int64_t i = 0; i < t->numel(); ++i) {
      const double m = i % 2 ? std::ldexp(static_cast<double>(rng.randint(16, 31)), static_cast<int>(rng.randint(-14, 12)))
                             : std::ldexp(rng.uniform(-1.0, 1.0), static_cast<int>(rng.randint(-12, 17)));
      const double x = static_cast<double>(scale) * (rng.randint(0, 1) ? m : -m);
      t->set_flat(i, std::isfinite(x) && std::fabs(x) < 3e38 ? x : 0.0);
    }
  }
}
// Every finite value of dtype `src` (k then v take them in turn, v negated), for a full scan at
// scale 1.
inline void fill_every_value(check::HostTensor& k, check::HostTensor& v, DType src) {
  check::HostTensor one(src, {1});
  std::vector<double> values;
  for (uint32_t bits = 0; bits < (1u << 16); ++bits) {
    one.set_bits_flat(0, bits);
    const double x = one.get_flat(0);
    if (std::isfinite(x)) values.push_back(x);
  }
  for (int64_t i = 0; i < k.numel(); ++i) {
    const double x = values[static_cast<size_t>(i) % values.size()];
    k.set_flat(i, x);
    v.set_flat(i, -x);
  }
}

// k and v filled with the values in turn, each sign in its own pattern.
inline void fill_hard(check::HostTensor& k, check::HostTensor& v, const std::vector<double>& values) {
  for (int64_t i = 0; i < k.numel(); ++i) {
    const double x = values[static_cast<size_t>(i) % values.size()];
    k.set_flat(i, (i / 3) % 2 ? -x : x);
    v.set_flat(i, (i / 5) % 2 ? -x : x);
  }
}

// Every cache row: written rows hold enc(stored source), the others keep their poison.
inline void check_cache(const check::HostTensor& cache, const check::HostTensor& src, const check::HostTensor& slots,
                        const check::HostTensor& scale,
                 const KvShape& s, const char* what) {
  const int64_t row = s.Hk * s.D, num_slots = s.num_blocks * s.block_size;
  std::vector<int64_t> token_of(static_cast<size_t>(num_slots), -1);
  for (int64_t t = 0; t < s.T; ++t)
    if (slots.get({t}) >= 0) token_of[static_cast<size_t>(slots.get({t}))] = t;
  const bool fp8 = dtype_is_fp8(cache.dtype());
  const uint64_t poison = cache.poison_code();
  for (int64_t slot = 0; slot < num_slots; ++slot) {
    const int64_t t = token_of[static_cast<size_t>(slot)];
    for (int64_t i = 0; i < row; ++i) {
      const uint64_t got = cache.bits_flat(slot * row + i);
      if (t < 0) {
        ASSERT_EQ(got, poison) << what << ": slot " << slot << " is not written";
      } else if (!fp8) {
        ASSERT_EQ(got, src.bits_flat(t * row + i)) << what << ": slot " << slot << " element " << i;
      } else {
        const long double exact = src.get_flat(t * row + i) / static_cast<long double>(scale.get_flat(0));
        ASSERT_TRUE(code_ok(cache.dtype(), got, exact)) << what << ": slot " << slot << " element " << i;
      }
    }
  }
}

// Both caches of b against its k and v rows (check_cache).
inline void check_caches(const KvBuffers& b, const KvShape& s) {
  check_cache(b.k_cache, b.k, b.slots, b.k_scale, s, "k_cache");
  check_cache(b.v_cache, b.v, b.slots, b.v_scale, s, "v_cache");
}

// The clean-multiplier verdict the host expects for an fp8 cache's scale (device/clean_verdict.h;
// candidates from the correctly rounded 1 / sc, which the kernels' Newton step reaches from the
// fast reciprocal for the tests' scales: test_clean_multiplier.cpp): the candidate index, or
// num::kCleanCandidates for none; and its dev::count_event name (kernel.cuh's clean_event).
inline int clean_verdict(DType x, DType cache, float sc) {
  using num::Bf16, num::F16, num::CodeFormat;
  const bool bf16 = x == DType::bf16;
  if (cache == DType::e4m3) return bf16 ? cleantest::verdict<CodeFormat::e4m3, Bf16>(1.0f, sc)
                                        : cleantest::verdict<CodeFormat::e4m3, F16>(1.0f, sc);
  return bf16 ? cleantest::verdict<CodeFormat::e5m2, Bf16>(1.0f, sc) : cleantest::verdict<CodeFormat::e5m2, F16>(1.0f, sc);
}
inline std::string clean_event(bool v, int candidate) {
  return std::string("clean_scales ") + (v ? "v" : "k") + ": " +
         (candidate < num::kCleanCandidates ? "candidate " + std::to_string(candidate) : std::string("none"));
}

// Tokens with a slot (>= 0).
inline int64_t cached_tokens(const KvBuffers& b) {
  int64_t n = 0;
  for (int64_t t = 0; t < b.slots.numel(); ++t) n += b.slots.get({t}) >= 0;
  return n;
}

// The blocks the emulator ran for a launch (the pipelined kernels' persistent grid is its
// stand-in for the resident CTAs).
inline int64_t emulated_blocks(const rotary::RopeLaunch& l) {
  return l.pipeline ? rotary::pipe_blocks(l.config, rotary::kEmuResidentCtas) : l.config.blocks;
}

// The clean-scale events of the last emulated launch, which wrote b's caches: with the check on,
// every block's verdicts for k's and v's scales are the host's, and each cache's vectors (its
// cached tokens' Hk x D / vec) were stored with the multiplier where its verdict is clean; off,
// none.
inline void expect_clean_events(const KvBuffers& b) {
  const emu::LaunchReport& rep = detail::last_emulator_reports().back();  // the split's k half: the second
  const rotary::RopeLaunch l = rotary::last_launch();
  const DType x = b.k.dtype(), cache = b.k_cache.dtype();
  const float k_scale = static_cast<float>(b.k_scale.get_flat(0)), v_scale = static_cast<float>(b.v_scale.get_flat(0));
  const int64_t vectors = cached_tokens(b) * b.k.shape()[1] * b.k.shape()[2] / l.config.vec;
  const int64_t blocks = emulated_blocks(l);
  std::map<std::string, uint64_t> want;
  if (l.params.clean_scales) {
    const int vk = clean_verdict(x, cache, k_scale), vv = clean_verdict(x, cache, v_scale);
    want[clean_event(false, vk)] += static_cast<uint64_t>(blocks);
    want[clean_event(true, vv)] += static_cast<uint64_t>(blocks);
    const int64_t clean = vectors * ((vk < num::kCleanCandidates) + (vv < num::kCleanCandidates));
    if (clean > 0) want["clean_scales: vectors stored with a clean multiplier"] = static_cast<uint64_t>(clean);
  }
  std::map<std::string, uint64_t> got;
  for (const auto& [name, n] : rep.counters.events)
    if (name.rfind("clean_scales", 0) == 0) got[name] = n;
  EXPECT_EQ(got, want) << "the blocks' clean-multiplier verdicts";
}

}  // namespace tejas::ropetest
