// TEJAS_TUNE parsing (src/runtime/tune.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/tune.h"

using tejas::detail::parse_tune;
using tejas::detail::Tune;

TEST(Tune, DefaultsAndOverrides) {
  Tune t;
  std::string why;
  EXPECT_TRUE(parse_tune("", &t, &why));
  EXPECT_EQ(t.quant_max_chunks, 4);
  EXPECT_TRUE(parse_tune("quant.max_chunks=1", &t, &why)) << why;
  EXPECT_EQ(t.quant_max_chunks, 1);
  EXPECT_TRUE(parse_tune(",quant.max_chunks=2,", &t, &why)) << why;
  EXPECT_EQ(t.quant_max_chunks, 2);
  EXPECT_EQ(t.dequant_steps, 2);
  EXPECT_TRUE(parse_tune("dequant.steps=1,quant.max_chunks=1", &t, &why)) << why;
  EXPECT_EQ(t.dequant_steps, 1);
  EXPECT_EQ(t.quant_max_chunks, 1);
  EXPECT_TRUE(parse_tune("norm.pipeline=0", &t, &why)) << why;  // 0 turns the default 1 off
  EXPECT_EQ(t.norm_pipeline, 0);
}

// Each key: its default, a value it takes, and one past its range (the error names the key and
// the range).
struct KeyCase {
  const char* key;
  int Tune::*field;
  int def, good, bad;
  const char* range;
};

// Keys with tests of their own below (or above): DefaultsAndOverrides, RopeHeadsIsPerOpOneOrTwo,
// RopePrefetchesAreZeroOrOne.
const char* const kKeysTestedApart[] = {"quant.max_chunks", "dequant.steps", "rope.heads", "rope.v_prefetch",
                                        "rope.head_prefetch"};

const std::vector<KeyCase>& key_cases() {
  static const std::vector<KeyCase> cases = {
      {"quant.max_steps", &Tune::quant_max_steps, 4, 1, 5, "1..4"},
      {"quant.max_grid", &Tune::quant_max_grid, 0, 528, 1000, "0..999"},
      {"quant.fast_convert", &Tune::quant_fast_convert, 1, 0, 2, "0..1"},
      {"quant.tie_bias", &Tune::quant_tie_bias, 1, 0, 2, "0..1"},
      {"quant.clean_table", &Tune::quant_clean_table, 1, 0, 2, "0..1"},
      {"quant.linear", &Tune::quant_linear, 1, 0, 2, "0..1"},
      {"activation.max_grid_y", &Tune::activation_max_grid_y, 0, 1, 1000, "0..999"},
      {"activation.steps", &Tune::activation_steps, 1, 4, 5, "1..4"},
      {"activation.pipeline", &Tune::activation_pipeline, 0, 2, 3, "0..2"},
      {"activation.fast_math", &Tune::activation_fast_math, 1, 0, 2, "0..1"},
      {"activation.fast_math_quant", &Tune::activation_fast_math_quant, 1, 0, 2, "0..1"},
      {"activation.packed_fp4", &Tune::activation_packed_fp4, 1, 0, 2, "0..1"},
      {"norm.prefetch_rows", &Tune::norm_prefetch_rows, 0, 512, 65536, "0..65535"},
      {"norm.pipeline", &Tune::norm_pipeline, 1, 2, 3, "0..2"},
      {"norm.pipeline_fp8", &Tune::norm_pipeline_fp8, 1, 0, 3, "0..2"},
      {"norm.fp8_one_reduction", &Tune::norm_fp8_one_reduction, 1, 0, 2, "0..1"},
      {"norm.packed_add", &Tune::norm_packed_add, 1, 0, 2, "0..1"},
      {"norm.warp_items", &Tune::norm_warp_items, 8, 16, 17, "0..16"},
      {"rope.head_stage", &Tune::rope_head_stage, 1, 0, 2, "0..1"},
      {"rope.kv_loads_first", &Tune::rope_kv_loads_first, 1, 0, 2, "0..1"},
      {"rope.v_stage", &Tune::rope_v_stage, 1, 0, 2, "0..1"},
      {"rope.pipeline", &Tune::rope_pipeline, 1, 3, 4, "0..3"},
      {"rope.clean_scales", &Tune::rope_clean_scales, 1, 0, 2, "0..1"},
      {"rope.kv_split", &Tune::rope_kv_split, 1, 2, 3, "0..2"},
      {"rope.kv_rope_pipe", &Tune::rope_kv_rope_pipe, 0, 1, 2, "0..1"},
  };
  return cases;
}

TEST(Tune, EachKeyDefaultRangeAndOverride) {
  for (const KeyCase& k : key_cases()) {
    SCOPED_TRACE(k.key);
    Tune t;
    std::string why;
    EXPECT_EQ(t.*k.field, k.def);
    EXPECT_TRUE(parse_tune(std::string(k.key) + "=" + std::to_string(k.good), &t, &why)) << why;
    EXPECT_EQ(t.*k.field, k.good);
    EXPECT_FALSE(parse_tune(std::string(k.key) + "=" + std::to_string(k.bad), &t, &why));
    EXPECT_NE(why.find(std::string(k.key) + ": expected " + k.range), std::string::npos) << why;
  }
}

// Every key the parser knows (its unknown-key message lists them) has a case in
// EachKeyDefaultRangeAndOverride or a test of its own (kKeysTestedApart): a key added to
// tune.cpp's table without a test fails here.
TEST(Tune, EveryKeyHasATest) {
  Tune t;
  std::string why;
  ASSERT_FALSE(parse_tune("no.such_key=1", &t, &why));
  const size_t at = why.find("(known: ");
  ASSERT_NE(at, std::string::npos) << why;
  std::string list = why.substr(at + 8);
  list = list.substr(0, list.find(')'));
  std::vector<std::string> known;
  for (size_t pos = 0; pos <= list.size();) {
    const size_t comma = std::min(list.find(", ", pos), list.size());
    known.push_back(list.substr(pos, comma - pos));
    pos = comma + 2;
  }
  EXPECT_GT(known.size(), 20u) << why;
  for (const std::string& key : known) {
    bool covered = false;
    for (const char* k : kKeysTestedApart) covered |= key == k;
    for (const KeyCase& k : key_cases()) covered |= key == k.key;
    EXPECT_TRUE(covered) << key << ": no test case";
  }
}

TEST(Tune, SpacesAroundKeysAndValues) {
  Tune t;
  std::string why;
  EXPECT_TRUE(parse_tune(" quant.max_chunks = 2 , dequant.steps=1 ", &t, &why)) << why;
  EXPECT_EQ(t.quant_max_chunks, 2);
  EXPECT_EQ(t.dequant_steps, 1);
}

TEST(Tune, BadEntriesNameTheKeyAndKeepEarlierOnes) {
  Tune t;
  std::string why;
  EXPECT_FALSE(parse_tune("quant.max_chunks=3,rope.block=9", &t, &why));
  EXPECT_EQ(t.quant_max_chunks, 3);
  EXPECT_NE(why.find("unknown key 'rope.block'"), std::string::npos) << why;
  EXPECT_FALSE(parse_tune("dequant.steps=3", &t, &why));
  EXPECT_NE(why.find("dequant.steps: expected 1..2"), std::string::npos) << why;
  for (const char* bad : {"quant.max_chunks=0", "quant.max_chunks=5", "quant.max_chunks=", "quant.max_chunks=2x",
                          "quant.max_chunks", "quant.max_chunks=+2", "quant.max_chunks=0x2", "quant.max_chunks=-1"}) {
    Tune u;
    EXPECT_FALSE(parse_tune(bad, &u, &why)) << bad;
    EXPECT_NE(why.find("quant.max_chunks: expected 1..4"), std::string::npos) << why;
    EXPECT_EQ(u.quant_max_chunks, 4) << bad;
  }
}

// rope.heads: 0 (the default: per op, plan.cpp), 1 or 2, the kernels instantiated
// (src/ops/rope/kernels.cuh).
TEST(Tune, RopeHeadsIsPerOpOneOrTwo) {
  Tune t;
  std::string why;
  EXPECT_EQ(t.rope_heads, 0);
  EXPECT_TRUE(parse_tune("rope.heads=2", &t, &why)) << why;
  EXPECT_EQ(t.rope_heads, 2);
  EXPECT_TRUE(parse_tune("rope.heads=1", &t, &why)) << why;
  EXPECT_EQ(t.rope_heads, 1);
  EXPECT_TRUE(parse_tune("rope.heads=0", &t, &why)) << why;
  EXPECT_EQ(t.rope_heads, 0);
  for (const char* bad : {"rope.heads=-1", "rope.heads=3"}) {
    EXPECT_FALSE(parse_tune(bad, &t, &why)) << bad;
    EXPECT_NE(why.find("rope.heads: expected 0..2"), std::string::npos) << why;
  }
  EXPECT_FALSE(parse_tune("rope.early_loads=1", &t, &why));  // retired with its kernels
}

// rope.v_prefetch and rope.head_prefetch: 0 (the defaults) or 1.
TEST(Tune, RopePrefetchesAreZeroOrOne) {
  Tune t;
  std::string why;
  EXPECT_EQ(t.rope_v_prefetch, 0);
  EXPECT_EQ(t.rope_head_prefetch, 0);
  EXPECT_TRUE(parse_tune("rope.v_prefetch=1,rope.head_prefetch=1", &t, &why)) << why;
  EXPECT_EQ(t.rope_v_prefetch, 1);
  EXPECT_EQ(t.rope_head_prefetch, 1);
  EXPECT_FALSE(parse_tune("rope.v_prefetch=2", &t, &why));
  EXPECT_NE(why.find("rope.v_prefetch: expected 0..1, got '2'"), std::string::npos) << why;
  EXPECT_FALSE(parse_tune("rope.head_prefetch=-1", &t, &why));
  EXPECT_NE(why.find("rope.head_prefetch: expected 0..1"), std::string::npos) << why;
}

TEST(Tune, ScopedOverrideRestoresThePrevious) {
  const Tune before = tejas::detail::tune();
  {
    Tune a;
    a.rope_heads = 2;
    const tejas::detail::ScopedTuneOverride outer(a);
    EXPECT_EQ(tejas::detail::tune().rope_heads, 2);
    {
      Tune b;
      b.quant_max_chunks = 1;
      const tejas::detail::ScopedTuneOverride inner(b);
      EXPECT_EQ(tejas::detail::tune().quant_max_chunks, 1);
      EXPECT_EQ(tejas::detail::tune().rope_heads, 0);  // b's: the default
    }
    EXPECT_EQ(tejas::detail::tune().rope_heads, 2);
  }
  EXPECT_EQ(tejas::detail::tune().rope_heads, before.rope_heads);
  EXPECT_EQ(tejas::detail::tune().quant_max_chunks, before.quant_max_chunks);
}
