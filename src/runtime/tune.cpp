#include "runtime/tune.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace tejas::detail {
namespace {


std::string trim(const std::string& v) {
  const size_t a = v.find_first_not_of(" \t"), b = v.find_last_not_of(" \t");
  return a == std::string::npos ? "" : v.substr(a, b - a + 1);
}

bool parse_int(const std::string& v, int lo, int hi, int* out) {
  if (v.empty() || v.size() > 3 || v.find_first_not_of("0123456789") != std::string::npos) return false;
  const int x = std::stoi(v);
  if (x < lo || x > hi) return false;
  *out = x;
  return true;
}

// Every key: its name, the Tune field it sets, its smallest and largest value.
struct Knob {
  const char* key;
  int Tune::*field;
  int min, max;
};
constexpr Knob kKnobs[] = {
    {"quant.max_chunks", &Tune::quant_max_chunks, 1, kTuneMaxQuantChunks},
    {"quant.max_steps", &Tune::quant_max_steps, 1, kTuneMaxQuantChunks},
    {"quant.max_grid", &Tune::quant_max_grid, 0, 999},
    {"quant.fast_convert", &Tune::quant_fast_convert, 0, 1},
    {"quant.tie_bias", &Tune::quant_tie_bias, 0, 1},
    {"quant.clean_table", &Tune::quant_clean_table, 0, 1},
    {"quant.linear", &Tune::quant_linear, 0, 1},
    {"dequant.steps", &Tune::dequant_steps, 1, kTuneMaxDequantSteps},
    {"rope.heads", &Tune::rope_heads, 0, kTuneMaxRopeHeads},
    {"rope.v_prefetch", &Tune::rope_v_prefetch, 0, 1},
    {"rope.head_prefetch", &Tune::rope_head_prefetch, 0, 1},
    {"rope.head_stage", &Tune::rope_head_stage, 0, 1},
    {"rope.kv_loads_first", &Tune::rope_kv_loads_first, 0, 1},
    {"rope.v_stage", &Tune::rope_v_stage, 0, 1},
    {"rope.pipeline", &Tune::rope_pipeline, 0, 3},
    {"rope.clean_scales", &Tune::rope_clean_scales, 0, 1},
    {"rope.kv_split", &Tune::rope_kv_split, 0, 2},
    {"rope.kv_rope_pipe", &Tune::rope_kv_rope_pipe, 0, 1},
    {"activation.max_grid_y", &Tune::activation_max_grid_y, 0, 999},
    {"activation.steps", &Tune::activation_steps, 1, kTuneMaxActivationSteps},
    {"activation.pipeline", &Tune::activation_pipeline, 0, kTuneMaxActivationStages},
    {"activation.fast_math", &Tune::activation_fast_math, 0, 1},
    {"activation.fast_math_quant", &Tune::activation_fast_math_quant, 0, 1},
    {"activation.packed_fp4", &Tune::activation_packed_fp4, 0, 1},
    {"norm.prefetch_rows", &Tune::norm_prefetch_rows, 0, 65535},
    {"norm.pipeline", &Tune::norm_pipeline, 0, kTuneMaxNormStages},
    {"norm.pipeline_fp8", &Tune::norm_pipeline_fp8, 0, kTuneMaxNormStages},
    {"norm.fp8_one_reduction", &Tune::norm_fp8_one_reduction, 0, 1},
    {"norm.packed_add", &Tune::norm_packed_add, 0, 1},
    {"norm.warp_items", &Tune::norm_warp_items, 0, kTuneMaxNormWarpItems},
};

const Tune* g_override = nullptr;

struct Parsed {
  Tune tune;
  std::string error;
};

const Parsed& parsed() {
  static const Parsed p = [] {
    Parsed r;
    if (!parse_tune(tune_text(), &r.tune, &r.error)) {
      std::fprintf(stderr, "tejas: TEJAS_TUNE ignored from the bad entry on: %s\n", r.error.c_str());
    }
    return r;
  }();
  return p;
}

}  // namespace

bool parse_tune(const std::string& text, Tune* out, std::string* why) {
  std::istringstream in(text);
  std::string entry;
  while (std::getline(in, entry, ',')) {
    if (entry.empty()) continue;
    const size_t eq = entry.find('=');
    const std::string key = trim(entry.substr(0, eq)), value = eq == std::string::npos ? "" : trim(entry.substr(eq + 1));
    if (key.empty() && value.empty()) continue;
    const Knob* knob = nullptr;
    for (const Knob& k : kKnobs)
      if (key == k.key) knob = &k;
    if (knob == nullptr) {
      std::string known;
      for (const Knob& k : kKnobs) known += (known.empty() ? "" : ", ") + std::string(k.key);
      *why = "unknown key '" + key + "' (known: " + known + ")";
      return false;
    }
    if (!parse_int(value, knob->min, knob->max, &(out->*(knob->field)))) {
      *why = std::string(knob->key) + ": expected " + std::to_string(knob->min) + ".." + std::to_string(knob->max) +
             ", got '" + value + "'";
      return false;
    }
  }
  return true;
}

const std::string& tune_text() {
  static const std::string text = [] {
    const char* env = std::getenv("TEJAS_TUNE");
    return std::string(env != nullptr ? env : "");
  }();
  return text;
}

const Tune& tune() { return g_override != nullptr ? *g_override : parsed().tune; }

ScopedTuneOverride::ScopedTuneOverride(const Tune& t) : tune_(t), previous_(g_override) { g_override = &tune_; }
ScopedTuneOverride::~ScopedTuneOverride() { g_override = previous_; }
const std::string& tune_error() { return parsed().error; }

}  // namespace tejas::detail
