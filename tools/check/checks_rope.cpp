// rope cases: neox and gptj, full and partial rotary dims, strided heads, k absent, i32 and i64
// positions, f32 caches and caches in q's dtype. mrope cases: Qwen2-VL sections and sections
// that force narrow vectors. rope_kv_cache_write cases: bf16/f16/e4m3/e5m2 caches, skipped tokens.
#include <algorithm>
#include <cmath>

#include "check/op_checks.h"
#include "check/tolerances.h"
#include "ops/common/ref_numeric.h"
#include "tejas/rope.h"

namespace tejas::check {

namespace {
constexpr double kRopeBase = 10000.0;
constexpr int64_t kMaxPos = 64;

// 2 max |x| over q and k: bounds |a| + |b| of every rotated pair (rope_rule).
double max_pair_sum(const Case& c) {
  double m = 0.0;
  for (const auto& a : c.args())
    if (a.name == "q" || a.name == "k") m = std::max(m, max_abs(*a.host));
  return 2.0 * m;
}

// Sets q's and k's rule (rope_rule) from their filled values.
void set_rotation_rules(Case& c, DType qk) {
  const Rule r = rope_rule(qk, max_pair_sum(c));
  c.set_rule("q", r);
  c.set_rule("k", r);
}

struct RopeShape {
  RopeStyle style;
  DType qk, cache, pos;
  int64_t T, Hq, Hk, D, rotary, pad;  // Hk == 0: k absent; pad: extra elements per head row
};

// The cos/sin cache of the documented layout, written from the definition: row p is
// cos(p f_0) .. cos(p f_{r/2-1}), sin(p f_0) .. sin(p f_{r/2-1}), f_i = base^(-2i/r).
void fill_cache(HostTensor& cache, int64_t rotary) {
  const int64_t half = rotary / 2;
  for (int64_t p = 0; p < kMaxPos; ++p) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) * std::pow(kRopeBase, -2.0 * static_cast<double>(i) / static_cast<double>(rotary));
      cache.set({p, i}, std::cos(angle));
      cache.set({p, half + i}, std::sin(angle));
    }
  }
}

Case rope_case(Rng& rng, const RopeShape& s) {
  Case c("rope", cat(s.style == RopeStyle::neox ? "neox " : "gptj ", dtype_name(s.qk), " T=", s.T, " Hq=", s.Hq,
                     " Hk=", s.Hk, " D=", s.D, " rotary=", s.rotary, " cache ", dtype_name(s.cache), " pos ",
                     dtype_name(s.pos), s.pad ? " strided heads" : ""));
  fill_randint(c.in("positions", s.pos, {s.T}), rng, 0, kMaxPos - 1);
  fill_cache(c.in("cos_sin_cache", s.cache, {kMaxPos, s.rotary}), s.rotary);
  fill_normal(c.inout("q", s.qk, {s.T, s.Hq, s.D}, Rule{}, s.pad), rng);
  if (s.Hk > 0) fill_normal(c.inout("k", s.qk, {s.T, s.Hk, s.D}, Rule{}, s.pad), rng);
  set_rotation_rules(c, s.qk);
  const RopeStyle style = s.style;
  c.set_call([style](const ExecContext& ctx, const Args& a) {
    return rope(ctx, a["positions"], a["q"], a["k"], a["cos_sin_cache"], style);
  });
  return c;
}

// mrope: [3, T] positions, one section per row.
Case mrope_case(Rng& rng, DType qk, DType cache, int64_t T, int64_t Hq, int64_t Hk, int64_t D, int64_t rotary,
                MropeSection sec) {
  Case c("mrope", cat(dtype_name(qk), " T=", T, " Hq=", Hq, " Hk=", Hk, " D=", D, " rotary=", rotary, " sections ",
                      sec.temporal, "/", sec.height, "/", sec.width, " cache ", dtype_name(cache)));
  fill_randint(c.in("positions", DType::i64, {3, T}), rng, 0, kMaxPos - 1);
  fill_cache(c.in("cos_sin_cache", cache, {kMaxPos, rotary}), rotary);
  fill_normal(c.inout("q", qk, {T, Hq, D}, Rule{}), rng);
  if (Hk > 0) fill_normal(c.inout("k", qk, {T, Hk, D}, Rule{}), rng);
  set_rotation_rules(c, qk);
  c.set_call([sec](const ExecContext& ctx, const Args& a) {
    return mrope(ctx, a["positions"], a["q"], a["k"], a["cos_sin_cache"], sec);
  });
  return c;
}

// rope_kv_cache_write: caches start from finite values (rows of skipped tokens and unused slots
// must keep them); every third token is skipped (slot -1); fp8 scales near max|x| / 448.
constexpr double kKScale = 0.01, kVScale = 0.008;
constexpr uint64_t kMaxFiniteE4m3 = 0x7E, kMaxFiniteE5m2 = 0x7B;  // largest positive finite codes

// Cache rows hold enc(stored), `stored` the backend's rotated k (the cache takes k as stored;
// k itself is held to rope_rule) or the input v: for fp8 caches sat_rne(stored / scale),
// exactly (kKvCacheTieRel = 0); for caches in q's dtype the bits, so a k row must equal the reference's or the
// backend's own k exactly. Rows of skipped tokens and unused slots keep their initial contents.
// k_rotated: k is the backend's rotated k (rope_kv_cache_write); else the input k (kv_cache_write).
Rule kv_cache_rule(const std::string& cache_name, bool k_rotated = true) {
  const bool is_k = cache_name == "k_cache";
  return tie_rule(
      [cache_name, is_k, k_rotated](const Args& want, const Args& got, double r) {
        const TensorView& cache = want[cache_name];
        const TensorView& src = is_k ? (k_rotated ? got["k"] : want["k"]) : want["v"];
        const bool fp8 = dtype_is_fp8(cache.dtype);
        const double scale = fp8 ? ref::at(want[is_k ? "k_scale" : "v_scale"], 0) : 1.0;
        const int64_t slots = cache.shape[0] * cache.shape[1], Hk = cache.shape[2], D = cache.shape[3];
        std::vector<int64_t> token(static_cast<size_t>(slots), -1);
        for (int64_t t = 0; t < src.shape[0]; ++t) {
          const auto slot = static_cast<int64_t>(ref::at(want["slot_mapping"], t));
          if (slot >= 0) token[static_cast<size_t>(slot)] = t;
        }
        std::vector<uint64_t> codes;
        for (int64_t s = 0; s < slots; ++s)
          for (int64_t h = 0; h < Hk; ++h)
            for (int64_t d = 0; d < D; ++d) {
              const int64_t t = token[static_cast<size_t>(s)];
              const int64_t at[] = {s / cache.shape[1], s % cache.shape[1], h, d};
              const int64_t from[] = {t, h, d};
              if (t < 0) codes.push_back(ref::load_bits(cache, at));
              else if (!fp8) codes.push_back(ref::load_bits(src, from));
              else codes.push_back(ref::encode(cache.dtype, ref::at(src, t, h, d) / scale * (1.0 + r)));
            }
        return codes;
      },
      kKvCacheTieRel);
}

// Distinct slots spread over the cache's num_slots, every third token skipped (-1).
void fill_slot_mapping(HostTensor& slots, int64_t num_slots) {
  const int64_t T = slots.shape()[0], stride = T > 0 ? num_slots / T : 0;
  for (int64_t t = 0; t < T; ++t) slots.set({t}, t % 3 == 2 ? -1.0 : static_cast<double>(t * stride));
}

Case kv_case(Rng& rng, RopeStyle style, DType qk, DType kv, int64_t T, int64_t Hq, int64_t Hk, int64_t D,
             int64_t rotary, int64_t num_blocks, int64_t block_size) {
  Case c("rope_kv_cache_write", cat(style == RopeStyle::neox ? "neox " : "gptj ", dtype_name(qk), " T=", T, " Hq=", Hq,
                                    " Hk=", Hk, " D=", D, " rotary=", rotary, " cache ", dtype_name(kv), " [",
                                    num_blocks, ", ", block_size, "]"));
  fill_randint(c.in("positions", DType::i32, {T}), rng, 0, kMaxPos - 1);
  fill_cache(c.in("cos_sin_cache", DType::f32, {kMaxPos, rotary}), rotary);
  fill_normal(c.inout("q", qk, {T, Hq, D}, Rule{}), rng);
  fill_normal(c.inout("k", qk, {T, Hk, D}, Rule{}), rng);
  fill_normal(c.in("v", qk, {T, Hk, D}), rng);
  fill_slot_mapping(c.in("slot_mapping", DType::i64, {T}), num_blocks * block_size);
  const bool fp8 = dtype_is_fp8(kv);
  for (const char* name : {"k_cache", "v_cache"}) {
    HostTensor& t = c.inout(name, kv, {num_blocks, block_size, Hk, D}, kv_cache_rule(name));
    if (fp8) fill_codes(t, rng, 0, kv == DType::e4m3 ? kMaxFiniteE4m3 : kMaxFiniteE5m2);  // positive finite codes
    else fill_normal(t, rng);
  }
  if (fp8) {
    c.in("k_scale", DType::f32, {1}).set_flat(0, kKScale);
    c.in("v_scale", DType::f32, {1}).set_flat(0, kVScale);
  }
  set_rotation_rules(c, qk);
  c.set_call([style](const ExecContext& ctx, const Args& a) {
    const PagedKvCache cache{a["k_cache"], a["v_cache"], a["k_scale"], a["v_scale"]};
    return rope_kv_cache_write(ctx, a["positions"], a["q"], a["k"], a["v"], a["cos_sin_cache"], style,
                               a["slot_mapping"], cache);
  });
  return c;
}
// kv_cache_write: the cache write alone, k and v read-only.
Case kv_write_case(Rng& rng, DType kvt, DType cache, int64_t T, int64_t Hk, int64_t D, int64_t num_blocks,
                   int64_t block_size) {
  Case c("kv_cache_write", cat(dtype_name(kvt), " T=", T, " Hk=", Hk, " D=", D, " cache ", dtype_name(cache), " [",
                               num_blocks, ", ", block_size, "]"));
  fill_normal(c.in("k", kvt, {T, Hk, D}, 8), rng);   // padded rows, k's and v's strides apart
  fill_normal(c.in("v", kvt, {T, Hk, D}, 24), rng);
  fill_slot_mapping(c.in("slot_mapping", DType::i64, {T}), num_blocks * block_size);
  const bool fp8 = dtype_is_fp8(cache);
  for (const char* name : {"k_cache", "v_cache"}) {
    HostTensor& t = c.inout(name, cache, {num_blocks, block_size, Hk, D}, kv_cache_rule(name, /*k_rotated=*/false));
    if (fp8) fill_codes(t, rng, 0, cache == DType::e4m3 ? kMaxFiniteE4m3 : kMaxFiniteE5m2);
    else fill_normal(t, rng);
  }
  if (fp8) {
    c.in("k_scale", DType::f32, {1}).set_flat(0, kKScale);
    c.in("v_scale", DType::f32, {1}).set_flat(0, kVScale);
  }
  c.set_call([](const ExecContext& ctx, const Args& a) {
    const PagedKvCache pc{a["k_cache"], a["v_cache"], a["k_scale"], a["v_scale"]};
    return kv_cache_write(ctx, a["k"], a["v"], a["slot_mapping"], pc);
  });
  return c;
}
}  // namespace

std::vector<Case> kv_cache_write_cases(Rng& rng) {
  std::vector<Case> v;
  v.push_back(kv_write_case(rng, DType::bf16, DType::bf16, 6, 2, 128, 4, 16));
  v.push_back(kv_write_case(rng, DType::f16, DType::e4m3, 7, 3, 72, 3, 8));
  v.push_back(kv_write_case(rng, DType::bf16, DType::e5m2, 5, 1, 6, 2, 4));
  v.push_back(kv_write_case(rng, DType::f16, DType::e4m3, 0, 2, 64, 2, 8));
  return v;
}

std::vector<Case> mrope_cases(Rng& rng) {
  std::vector<Case> v;
  v.push_back(mrope_case(rng, DType::bf16, DType::f32, 5, 4, 2, 128, 128, {16, 24, 24}));
  v.push_back(mrope_case(rng, DType::f16, DType::f16, 3, 2, 1, 96, 64, {8, 12, 12}));
  v.push_back(mrope_case(rng, DType::f32, DType::f32, 7, 3, 0, 32, 20, {3, 4, 3}));
  v.push_back(mrope_case(rng, DType::bf16, DType::f32, 0, 4, 2, 128, 128, {16, 24, 24}));
  return v;
}

std::vector<Case> rope_kv_cache_write_cases(Rng& rng) {
  std::vector<Case> v;
  v.push_back(kv_case(rng, RopeStyle::neox, DType::bf16, DType::bf16, 6, 4, 2, 128, 128, 4, 16));
  v.push_back(kv_case(rng, RopeStyle::gptj, DType::f16, DType::f16, 5, 2, 1, 64, 32, 2, 8));
  v.push_back(kv_case(rng, RopeStyle::neox, DType::bf16, DType::e4m3, 7, 4, 2, 128, 64, 3, 16));
  v.push_back(kv_case(rng, RopeStyle::gptj, DType::bf16, DType::e5m2, 4, 3, 3, 72, 72, 2, 4));
  v.push_back(kv_case(rng, RopeStyle::neox, DType::bf16, DType::e4m3, 0, 4, 2, 128, 64, 3, 16));
  return v;
}

std::vector<Case> rope_cases(Rng& rng) {
  std::vector<Case> v;
  v.push_back(rope_case(rng, {RopeStyle::neox, DType::bf16, DType::f32, DType::i64, 7, 4, 2, 128, 128, 0}));
  v.push_back(rope_case(rng, {RopeStyle::gptj, DType::f16, DType::f16, DType::i32, 5, 3, 1, 64, 64, 0}));
  v.push_back(rope_case(rng, {RopeStyle::neox, DType::bf16, DType::f32, DType::i32, 6, 4, 2, 128, 64, 8}));
  v.push_back(rope_case(rng, {RopeStyle::gptj, DType::f32, DType::f32, DType::i32, 3, 2, 0, 64, 32, 0}));
  v.push_back(rope_case(rng, {RopeStyle::neox, DType::bf16, DType::bf16, DType::i32, 9, 5, 1, 72, 72, 0}));
  v.push_back(rope_case(rng, {RopeStyle::neox, DType::bf16, DType::f32, DType::i64, 0, 4, 2, 128, 64, 8}));
  return v;
}

}  // namespace tejas::check
