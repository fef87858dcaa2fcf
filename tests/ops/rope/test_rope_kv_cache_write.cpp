// rope_kv_cache_write (reference backend) against independent math: q and k rotated by complex
// multiplication in long double, cache rows found from the slot arithmetic, e4m3 codes by an
// exhaustive nearest-code search; skipped tokens; untouched cache rows. Then one test per
// validation rule and the index-content checks.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <functional>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "support/op_snapshots.h"
#include "ops/rope/kv_cache_test_util.h"
#include "support/seed.h"

using namespace tejas;
using check::HostTensor;
using ropetest::KvBuffers;
using ropetest::KvShape;

namespace {

constexpr int64_t kMaxPos = 50;

// x rotated (neox or gptj) in long double and rounded once to x's dtype.
HostTensor rotated(const HostTensor& x, const HostTensor& pos, const HostTensor& cache, RopeStyle style) {
  const int64_t T = x.shape()[0], H = x.shape()[1], half = cache.shape()[1] / 2;
  HostTensor want(x.dtype(), x.shape());
  want.copy_from(x);
  for (int64_t t = 0; t < T; ++t) {
    const auto p = static_cast<int64_t>(pos.get({t}));
    for (int64_t j = 0; j < half; ++j) {
      const std::complex<long double> w(cache.get({p, j}), cache.get({p, half + j}));
      const int64_t lo = style == RopeStyle::neox ? j : 2 * j, hi = style == RopeStyle::neox ? j + half : 2 * j + 1;
      for (int64_t h = 0; h < H; ++h) {
        const auto z = std::complex<long double>(x.get({t, h, lo}), x.get({t, h, hi})) * w;
        want.set({t, h, lo}, static_cast<double>(z.real()));
        want.set({t, h, hi}, static_cast<double>(z.imag()));
      }
    }
  }
  return want;
}

TEST(RopeKvCacheWrite, ReferenceRotatesAndFillsTheSlots) {
  TEJAS_SEEDED_TEST_RNG();
  const KvShape s{7, 3, 2, 24, 16, 4, 3};  // 12 slots, 7 tokens, every 3rd skipped
  for (DType cache_dt : {DType::bf16, DType::e4m3}) {
    for (RopeStyle style : {RopeStyle::neox, RopeStyle::gptj}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(cache_dt) << (style == RopeStyle::neox ? " neox" : " gptj"));
      KvBuffers b = ropetest::make_kv_buffers(rng, s, DType::bf16, cache_dt, DType::f32, kMaxPos, 3);
      const HostTensor want_q = rotated(b.q, b.pos, b.cache, style), want_k = rotated(b.k, b.pos, b.cache, style);
      const auto v_before = optest::bits_of(b.v);
      TEJAS_ASSERT_OK(rope_kv_cache_write(ropetest::reference_ctx(), b.pos, b.q, b.k, b.v, b.cache, style, b.slots,
                                          b.paged()));
      const check::Tolerance one_rounding{0.0, 0.0, 1};
      auto r = check::compare(b.q, want_q, one_rounding);
      EXPECT_TRUE(r.ok) << "q: " << r.message;
      r = check::compare(b.k, want_k, one_rounding);
      EXPECT_TRUE(r.ok) << "k: " << r.message;
      EXPECT_TRUE(optest::unchanged(b.v, v_before)) << "v is an input";
      std::vector<bool> written(static_cast<size_t>(s.num_blocks * s.block_size), false);
      for (int64_t t = 0; t < s.T; ++t) {
        const auto slot = static_cast<int64_t>(b.slots.get({t}));
        if (slot < 0) continue;
        written[static_cast<size_t>(slot)] = true;
        const int64_t blk = slot / s.block_size, off = slot % s.block_size;
        for (int64_t h = 0; h < s.Hk; ++h)
          for (int64_t d = 0; d < s.D; ++d) {
            const uint64_t kc = static_cast<uint64_t>(b.k_cache.bits_flat(((blk * s.block_size + off) * s.Hk + h) * s.D + d));
            const uint64_t vc = static_cast<uint64_t>(b.v_cache.bits_flat(((blk * s.block_size + off) * s.Hk + h) * s.D + d));
            const int64_t src = (t * s.Hk + h) * s.D + d;
            if (cache_dt == DType::bf16) {
              ASSERT_EQ(kc, b.k.bits_flat(src)) << "k_cache: the stored (rotated) k bits";
              ASSERT_EQ(vc, b.v.bits_flat(src)) << "v_cache: v's bits";
            } else {
              const long double kx = b.k.get_flat(src) / static_cast<long double>(b.k_scale.get_flat(0));
              const long double vx = b.v.get_flat(src) / static_cast<long double>(b.v_scale.get_flat(0));
              ASSERT_EQ(kc, optest::e4m3_code_by_search(kx)) << "k_cache e4m3 at t=" << t << " d=" << d;
              ASSERT_EQ(vc, optest::e4m3_code_by_search(vx)) << "v_cache e4m3 at t=" << t << " d=" << d;
            }
          }
      }
      const uint64_t poison = b.k_cache.poison_code();  // what HostTensor filled the caches with
      for (int64_t slot = 0; slot < s.num_blocks * s.block_size; ++slot) {  // other rows untouched
        if (written[static_cast<size_t>(slot)]) continue;
        for (int64_t i = 0; i < s.Hk * s.D; ++i) {
          ASSERT_EQ(b.k_cache.bits_flat(slot * s.Hk * s.D + i), poison) << "slot " << slot;
          ASSERT_EQ(b.v_cache.bits_flat(slot * s.Hk * s.D + i), poison) << "slot " << slot;
        }
      }
    }
  }
}


// Values beyond the format saturate (e4m3 +-448), and a NaN gives a NaN code.
TEST(RopeKvCacheWrite, ReferenceSaturatesAndKeepsNaN) {
  TEJAS_SEEDED_TEST_RNG();
  const KvShape s{2, 1, 1, 8, 8, 1, 2};
  KvBuffers b = ropetest::make_kv_buffers(rng, s, DType::f16, DType::e4m3, DType::f32, kMaxPos, 0, 0.01, 0.01);
  b.v.set({0, 0, 3}, 1000.0);  // / 0.01 = 1e5 > 448
  b.v.set({0, 0, 4}, -1000.0);
  b.v.set({1, 0, 5}, std::numeric_limits<double>::quiet_NaN());
  TEJAS_ASSERT_OK(rope_kv_cache_write(ropetest::reference_ctx(), b.pos, b.q, b.k, b.v, b.cache, RopeStyle::neox,
                                      b.slots, b.paged()));
  const auto slot0 = static_cast<int64_t>(b.slots.get({0})), slot1 = static_cast<int64_t>(b.slots.get({1}));
  EXPECT_EQ(b.v_cache.get({0, slot0, 0, 3}), 448.0);
  EXPECT_EQ(b.v_cache.get({0, slot0, 0, 4}), -448.0);
  EXPECT_TRUE(std::isnan(b.v_cache.get({0, slot1, 0, 5})));
}

// ---- validation: one rule each ---------------------------------------------------------------
constexpr KvShape kV{4, 2, 1, 16, 8, 3, 2};

struct Call {
  TensorView pos, q, k, v, cache, slots;
  PagedKvCache kv;
  Backend backend = Backend::reference;
};

struct Rule {
  const char* name;
  bool fp8;  // start from fp8 caches (with scales) instead of bf16
  std::function<void(Call&, KvBuffers&)> break_it;
  const char* needle;
};
void PrintTo(const Rule& r, std::ostream* os) { *os << r.name; }

TensorView shifted(TensorView t, int64_t bytes) {
  t.data = static_cast<char*>(t.data) + bytes;
  return t;
}

// Both caches cut to one block of one slot (one head row: 32 bytes in bf16, 16 in fp8), so a cache
// placed over another tensor lies inside it, or past its end only into its guard bytes (k_scale's
// 4), and the overlap reported is that one, whatever the allocator put next to it.
void one_row_caches(Call& c) {
  for (TensorView* t : {&c.kv.k_cache, &c.kv.v_cache}) t->shape[0] = t->shape[1] = 1;
}

const std::vector<Rule>& rules() {
  static const std::vector<Rule> kRules = {
      {"PositionsAbsent", false, [](Call& c, KvBuffers&) { c.pos = TensorView{}; }, "positions: expected a tensor"},
      {"QAbsent", false, [](Call& c, KvBuffers&) { c.q = TensorView{}; }, "q: expected a tensor"},
      {"CosSinAbsent", false, [](Call& c, KvBuffers&) { c.cache = TensorView{}; }, "cos_sin_cache: expected a tensor"},
      {"KAbsent", false, [](Call& c, KvBuffers&) { c.k = TensorView{}; }, "k: expected a tensor"},
      {"VAbsent", false, [](Call& c, KvBuffers&) { c.v = TensorView{}; }, "v: expected a tensor"},
      {"SlotsAbsent", false, [](Call& c, KvBuffers&) { c.slots = TensorView{}; }, "slot_mapping: expected a tensor"},
      {"KCacheAbsent", false, [](Call& c, KvBuffers&) { c.kv.k_cache = TensorView{}; }, "k_cache: expected a tensor"},
      {"VCacheAbsent", false, [](Call& c, KvBuffers&) { c.kv.v_cache = TensorView{}; }, "v_cache: expected a tensor"},
      {"QF32", false, [](Call& c, KvBuffers&) { c.q.dtype = c.k.dtype = c.v.dtype = DType::f32; }, "q: expected dtype"},
      {"VDtype", false, [](Call& c, KvBuffers&) { c.v.dtype = DType::f16; }, "v: expected dtype bf16 (as q)"},
      {"VShape", false, [](Call& c, KvBuffers&) { c.v.shape[2] = 8; }, "v: expected shape [4, 1, 16] (as k)"},
      {"PositionsDtype", false, [](Call& c, KvBuffers&) { c.pos.dtype = DType::f32; },
       "positions: expected dtype i32 or i64"},
      {"PositionsRank", false, [](Call& c, KvBuffers&) { c.pos.ndim = 2, c.pos.shape[1] = 1, c.pos.stride[1] = 1; },
       "positions: expected 1 dimensions"},
      {"SlotsRank", false, [](Call& c, KvBuffers&) { c.slots.ndim = 2, c.slots.shape[1] = 1, c.slots.stride[1] = 1; },
       "slot_mapping: expected 1 dimensions"},
      {"SlotsDtype", false, [](Call& c, KvBuffers&) { c.slots.dtype = DType::i32; },
       "slot_mapping: expected dtype i64"},
      {"SlotsLength", false, [](Call& c, KvBuffers&) { c.slots.shape[0] = 3; }, "slot_mapping: expected dim 0 = 4"},
      {"KCacheDtype", false, [](Call& c, KvBuffers&) { c.kv.k_cache.dtype = c.kv.v_cache.dtype = DType::f16; },
       "k_cache: expected dtype"},
      {"VCacheDtype", false, [](Call& c, KvBuffers&) { c.kv.v_cache.dtype = DType::f16; },
       "v_cache: expected dtype bf16 (as k_cache)"},
      {"KCacheRank", false, [](Call& c, KvBuffers&) { c.kv.k_cache.ndim = 3; }, "k_cache: expected 4 dimensions"},
      {"KCacheHeads", false, [](Call& c, KvBuffers&) { c.kv.k_cache.shape[2] = 2; }, "k_cache: expected dim 2 = 1"},
      {"KCacheHeadDim", false, [](Call& c, KvBuffers&) { c.kv.k_cache.shape[3] = 8; }, "k_cache: expected dim 3 = 16"},
      {"KCacheNoBlocks", false, [](Call& c, KvBuffers&) { c.kv.k_cache.shape[0] = 0; }, "k_cache: expected dim 0 >= 1"},
      {"KCacheNoSlots", false, [](Call& c, KvBuffers&) { c.kv.k_cache.shape[1] = 0; }, "k_cache: expected dim 1 >= 1"},
      {"KScaleMisaligned", true, [](Call& c, KvBuffers&) { c.kv.k_scale = shifted(c.kv.k_scale, 1); },
       "k_scale: expected data aligned to 4"},
      {"VCacheShape", false, [](Call& c, KvBuffers&) { c.kv.v_cache.shape[0] = 2; }, "v_cache: expected shape"},
      {"ScaleForBf16", false, [](Call& c, KvBuffers& b) { c.kv.k_scale = b.k_scale.view(); }, "k_scale: expected none"},
      {"KScaleMissing", true, [](Call& c, KvBuffers&) { c.kv.k_scale = TensorView{}; }, "k_scale: expected a tensor"},
      {"VScaleShape", true, [](Call& c, KvBuffers&) { c.kv.v_scale.shape[0] = 2; }, "v_scale: expected shape [1]"},
      {"VScaleDtype", true, [](Call& c, KvBuffers&) { c.kv.v_scale.dtype = DType::bf16; },
       "v_scale: expected dtype f32"},
      {"KCacheInnerStride", false, [](Call& c, KvBuffers&) { c.kv.k_cache.stride[3] = 2; },
       "k_cache: expected a contiguous innermost"},
      {"VCacheNegativeStride", false, [](Call& c, KvBuffers&) { c.kv.v_cache.stride[0] = -c.kv.v_cache.stride[0]; },
       "v_cache: expected non-negative strides"},
      {"SlotsMisaligned", false, [](Call& c, KvBuffers&) { c.slots = shifted(c.slots, 4); },
       "slot_mapping: expected data aligned to 8"},
      {"VMisaligned", false, [](Call& c, KvBuffers&) { c.v = shifted(c.v, 1); }, "v: expected data aligned to 2"},
      {"KCacheSelfOverlap", false, [](Call& c, KvBuffers&) { c.kv.k_cache.stride[1] = 0; },
       "k_cache: expected every element at its own address"},
      {"CachesOverlap", false, [](Call& c, KvBuffers&) { c.kv.v_cache.data = c.kv.k_cache.data; },
       "k_cache: expected no overlap with v_cache"},
      {"KCacheOverV", false, [](Call& c, KvBuffers&) { c.kv.k_cache.data = c.v.data; },
       "k_cache: expected no overlap with v"},
      {"QOverV", false, [](Call& c, KvBuffers&) { c.v.data = c.q.data; }, "q: expected no overlap with v"},
      {"KOverSlots", false, [](Call& c, KvBuffers&) { c.slots.data = c.k.data; },
       "k: expected no overlap with slot_mapping"},
      {"VCacheOverQ", false, [](Call& c, KvBuffers&) { c.kv.v_cache.data = c.q.data; },
       "v_cache: expected no overlap with q"},
      {"KCacheOverK", false, [](Call& c, KvBuffers&) { one_row_caches(c), c.kv.k_cache.data = c.k.data; },
       "k_cache: expected no overlap with k"},
      {"VCacheOverK", false, [](Call& c, KvBuffers&) { one_row_caches(c), c.kv.v_cache.data = c.k.data; },
       "v_cache: expected no overlap with k"},
      {"KCacheOverPositions", false, [](Call& c, KvBuffers&) { one_row_caches(c), c.kv.k_cache.data = c.pos.data; },
       "k_cache: expected no overlap with positions"},
      {"VCacheOverCosSin", false, [](Call& c, KvBuffers&) { one_row_caches(c), c.kv.v_cache.data = c.cache.data; },
       "v_cache: expected no overlap with cos_sin_cache"},
      {"KCacheOverKScale", true, [](Call& c, KvBuffers&) { one_row_caches(c), c.kv.k_cache.data = c.kv.k_scale.data; },
       "k_cache: expected no overlap with k_scale"},
      {"VCacheOnCuda", false, [](Call& c, KvBuffers&) { c.kv.v_cache.device = Device::cuda; },
       "v_cache: expected device cpu"},
      {"HostTensorsOnCudaBackend", false, [](Call& c, KvBuffers&) { c.backend = Backend::cuda; },
       "positions: expected a cuda tensor"},
  };
  return kRules;
}

class RopeKvValidation : public ::testing::TestWithParam<Rule> {};

TEST_P(RopeKvValidation, RejectedAndNothingWritten) {
  TEJAS_SEEDED_TEST_RNG();
  const Rule& rule = GetParam();
  KvBuffers b = ropetest::make_kv_buffers(rng, kV, DType::bf16, rule.fp8 ? DType::e4m3 : DType::bf16, DType::f32,
                                          kMaxPos, 0);
  Call c{b.pos.view(), b.q.view(), b.k.view(), b.v.view(), b.cache.view(), b.slots.view(), b.paged()};
  rule.break_it(c, b);
  const std::vector<const HostTensor*> all = {&b.q, &b.k, &b.v, &b.k_cache, &b.v_cache, &b.slots, &b.pos};
  std::vector<std::vector<uint64_t>> before;
  for (const HostTensor* t : all) before.push_back(optest::bits_of(*t));
  TEJAS_EXPECT_INVALID(rope_kv_cache_write(ropetest::backend_ctx(c.backend), c.pos, c.q, c.k, c.v, c.cache,
                                           RopeStyle::neox, c.slots, c.kv),
                       std::string("rope_kv_cache_write: ") + rule.needle);
  for (size_t i = 0; i < all.size(); ++i) EXPECT_TRUE(optest::unchanged(*all[i], before[i])) << "buffer " << i;
}

INSTANTIATE_TEST_SUITE_P(Rules, RopeKvValidation, ::testing::ValuesIn(rules()),
                         [](const ::testing::TestParamInfo<Rule>& info) { return std::string(info.param.name); });

TEST(RopeKvValidationControl, StyleRejected) {
  TEJAS_SEEDED_TEST_RNG();
  KvBuffers b = ropetest::make_kv_buffers(rng, kV, DType::bf16, DType::bf16, DType::f32, kMaxPos, 0);
  const auto q0 = optest::bits_of(b.q), k0 = optest::bits_of(b.k), kc0 = optest::bits_of(b.k_cache),
             vc0 = optest::bits_of(b.v_cache);
  for (Backend backend : {Backend::reference, Backend::emulator})
    TEJAS_EXPECT_INVALID(rope_kv_cache_write(ropetest::backend_ctx(backend), b.pos, b.q, b.k, b.v, b.cache,
                                             static_cast<RopeStyle>(7), b.slots, b.paged()),
                         "rope_kv_cache_write: style: expected neox or gptj");
  EXPECT_TRUE(optest::unchanged(b.q, q0) && optest::unchanged(b.k, k0));
  EXPECT_TRUE(optest::unchanged(b.k_cache, kc0) && optest::unchanged(b.v_cache, vc0));
}

// Index contents: the reference always rejects them, the emulator only in debug-check mode.
struct ContentRule {
  const char* name;
  void (*break_it)(KvBuffers& b);
  const char* needle;
};
const ContentRule kContent[] = {
    {"SlotTooLarge", [](KvBuffers& b) { b.slots.set({2}, 6.0); }, "slot_mapping: expected values < 6 (num_blocks * block_size) or negative, got 6 at index 2"},
    {"SlotRepeated", [](KvBuffers& b) { b.slots.set({3}, b.slots.get({0})); }, "slot_mapping: expected distinct non-negative slots"},
    {"PositionTooLarge", [](KvBuffers& b) { b.pos.set({1}, static_cast<double>(kMaxPos)); }, "positions: expected values in [0, 50)"},
    {"KScaleZero", [](KvBuffers& b) { b.k_scale.set_flat(0, 0.0); }, "k_scale: expected a finite value > 0"},
    {"VScaleNaN", [](KvBuffers& b) { b.v_scale.set_flat(0, std::numeric_limits<double>::quiet_NaN()); }, "v_scale: expected a finite value > 0"},
};

TEST(RopeKvValidationControl, IndexContentsCheckedBeforeAnyWrite) {
  TEJAS_SEEDED_TEST_RNG();
  for (const ContentRule& rule : kContent) {
    SCOPED_TRACE(rule.name);
    KvBuffers b = ropetest::make_kv_buffers(rng, kV, DType::bf16, DType::e4m3, DType::f32, kMaxPos, 0);
    rule.break_it(b);
    const auto q0 = optest::bits_of(b.q), k0 = optest::bits_of(b.k), kc0 = optest::bits_of(b.k_cache),
               vc0 = optest::bits_of(b.v_cache);
    ExecContext debug = ropetest::backend_ctx(Backend::emulator);
    debug.debug_checks = true;
    for (const ExecContext& ctx : {ropetest::reference_ctx(), debug})
      TEJAS_EXPECT_INVALID(rope_kv_cache_write(ctx, b.pos, b.q, b.k, b.v, b.cache, RopeStyle::neox, b.slots, b.paged()),
                           std::string("rope_kv_cache_write: ") + rule.needle);
    EXPECT_TRUE(optest::unchanged(b.q, q0) && optest::unchanged(b.k, k0));
    EXPECT_TRUE(optest::unchanged(b.k_cache, kc0) && optest::unchanged(b.v_cache, vc0));
  }
}

// Slots and q/k/v as slices of one qkv buffer are accepted (the production layout).
TEST(RopeKvValidationControl, QkvSlicesAccepted) {
  TEJAS_SEEDED_TEST_RNG();
  KvBuffers b = ropetest::make_kv_buffers(rng, kV, DType::bf16, DType::bf16, DType::f32, kMaxPos, 0);
  HostTensor qkv(DType::bf16, {kV.T, kV.Hq + 2 * kV.Hk, kV.D});
  check::fill_normal(qkv, rng);
  TensorView q = qkv.view(), k = qkv.view(), v = qkv.view();
  q.shape[1] = kV.Hq;
  k.shape[1] = v.shape[1] = kV.Hk;
  k.data = static_cast<uint16_t*>(qkv.view().data) + kV.Hq * kV.D;
  v.data = static_cast<uint16_t*>(qkv.view().data) + (kV.Hq + kV.Hk) * kV.D;
  for (Backend backend : {Backend::reference, Backend::emulator})
    TEJAS_ASSERT_OK(rope_kv_cache_write(ropetest::backend_ctx(backend), b.pos, q, k, v, b.cache, RopeStyle::gptj,
                                        b.slots, b.paged()));
}

}  // namespace
