// TEJAS_TUNE parsing (src/runtime/tune.h).
#include <gtest/gtest.h>

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
  EXPECT_EQ(t.quant_max_steps, 4);
  EXPECT_TRUE(parse_tune("quant.max_steps=1", &t, &why)) << why;
  EXPECT_EQ(t.quant_max_steps, 1);
  EXPECT_FALSE(parse_tune("quant.max_steps=5", &t, &why));
  EXPECT_NE(why.find("quant.max_steps: expected 1..4"), std::string::npos) << why;
  EXPECT_EQ(t.quant_max_grid, 0);
  EXPECT_TRUE(parse_tune("quant.max_grid=528", &t, &why)) << why;
  EXPECT_EQ(t.quant_max_grid, 528);
  EXPECT_FALSE(parse_tune("quant.max_grid=1000", &t, &why));
  EXPECT_NE(why.find("quant.max_grid: expected 0..999"), std::string::npos) << why;
  EXPECT_EQ(t.activation_max_grid_y, 0);
  EXPECT_TRUE(parse_tune("activation.max_grid_y=1", &t, &why)) << why;
  EXPECT_EQ(t.activation_max_grid_y, 1);
  EXPECT_EQ(t.activation_steps, 1);
  EXPECT_TRUE(parse_tune("activation.steps=4", &t, &why)) << why;
  EXPECT_EQ(t.activation_steps, 4);
  EXPECT_FALSE(parse_tune("activation.steps=5", &t, &why));
  EXPECT_NE(why.find("activation.steps: expected 1..4"), std::string::npos) << why;
  EXPECT_EQ(t.activation_pipeline, 0);
  EXPECT_TRUE(parse_tune("activation.pipeline=2", &t, &why)) << why;
  EXPECT_EQ(t.activation_pipeline, 2);
  EXPECT_FALSE(parse_tune("activation.pipeline=3", &t, &why));
  EXPECT_NE(why.find("activation.pipeline: expected 0..2"), std::string::npos) << why;
  EXPECT_EQ(t.activation_fast_math, 1);
  EXPECT_TRUE(parse_tune("activation.fast_math=0", &t, &why)) << why;
  EXPECT_EQ(t.activation_fast_math, 0);
  EXPECT_FALSE(parse_tune("activation.fast_math=2", &t, &why));
  EXPECT_NE(why.find("activation.fast_math: expected 0..1"), std::string::npos) << why;
  EXPECT_EQ(t.activation_fast_math_quant, 0);
  EXPECT_TRUE(parse_tune("activation.fast_math_quant=1", &t, &why)) << why;
  EXPECT_EQ(t.activation_fast_math_quant, 1);
  EXPECT_FALSE(parse_tune("activation.fast_math_quant=2", &t, &why));
  EXPECT_NE(why.find("activation.fast_math_quant: expected 0..1"), std::string::npos) << why;
  EXPECT_EQ(t.norm_prefetch_rows, 0);
  EXPECT_TRUE(parse_tune("norm.prefetch_rows=512", &t, &why)) << why;
  EXPECT_EQ(t.norm_prefetch_rows, 512);
  EXPECT_FALSE(parse_tune("norm.prefetch_rows=65536", &t, &why));
  EXPECT_NE(why.find("norm.prefetch_rows: expected 0..65535"), std::string::npos) << why;
  EXPECT_EQ(t.rope_head_stage, 1);
  EXPECT_TRUE(parse_tune("rope.head_stage=0", &t, &why)) << why;
  EXPECT_EQ(t.rope_head_stage, 0);
  EXPECT_FALSE(parse_tune("rope.head_stage=2", &t, &why));
  EXPECT_NE(why.find("rope.head_stage: expected 0..1"), std::string::npos) << why;
  EXPECT_EQ(t.norm_pipeline, 1);
  EXPECT_TRUE(parse_tune("norm.pipeline=2", &t, &why)) << why;
  EXPECT_EQ(t.norm_pipeline, 2);
  EXPECT_TRUE(parse_tune("norm.pipeline=0", &t, &why)) << why;
  EXPECT_EQ(t.norm_pipeline, 0);
  EXPECT_FALSE(parse_tune("norm.pipeline=3", &t, &why));
  EXPECT_NE(why.find("norm.pipeline: expected 0..2"), std::string::npos) << why;
  EXPECT_EQ(t.norm_pipeline_fp8, 0);
  EXPECT_TRUE(parse_tune("norm.pipeline_fp8=1", &t, &why)) << why;
  EXPECT_EQ(t.norm_pipeline_fp8, 1);
  EXPECT_FALSE(parse_tune("norm.pipeline_fp8=3", &t, &why));
  EXPECT_NE(why.find("norm.pipeline_fp8: expected 0..2"), std::string::npos) << why;
  EXPECT_EQ(t.norm_fp8_one_reduction, 0);
  EXPECT_TRUE(parse_tune("norm.fp8_one_reduction=1", &t, &why)) << why;
  EXPECT_EQ(t.norm_fp8_one_reduction, 1);
  EXPECT_FALSE(parse_tune("norm.fp8_one_reduction=2", &t, &why));
  EXPECT_NE(why.find("norm.fp8_one_reduction: expected 0..1"), std::string::npos) << why;
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
