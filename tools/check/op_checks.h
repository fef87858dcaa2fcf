// The correctness checks of every public op: a registry of named checks, each building small
// cases (tails included) from a seeded Rng. `tejas check` and the GoogleTest GPU cases run them.
// Every op's cases include an empty batch (no tokens, or no requests: its outputs have no
// elements), as serving engines call the ops: it must succeed, write nothing and leave every
// in-place tensor (a KV cache) as it was, under graph capture and PDL too.
#pragma once
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "check/case_runner.h"

namespace tejas::check {

struct OpCheck {
  const char* name;    // the op, "rms_norm"; variants are cases ("bf16 -> e4m3 dynamic")
  const char* family;  // bench suite: norm, rope, activation, quant, attention
  std::vector<Case> (*build)(Rng& rng);
};

const std::vector<OpCheck>& op_checks();
const OpCheck* find_op_check(std::string_view name);  // nullptr when unknown

// The seed an op's inputs come from: derived from the run's seed and the op's name, so
// `--op NAME --seed N` reproduces exactly what a full run with seed N did for that op.
uint64_t op_seed(uint64_t run_seed, std::string_view op);

// Builds and runs every case of one op.
std::vector<CaseResult> run_op_check(const OpCheck& check, const RunOptions& options, uint64_t run_seed);

// Family builders (one file each).
std::vector<Case> norm_rms_cases(Rng& rng);
std::vector<Case> norm_fused_add_cases(Rng& rng);
std::vector<Case> norm_fused_quant_cases(Rng& rng);
std::vector<Case> rope_cases(Rng& rng);
std::vector<Case> mrope_cases(Rng& rng);
std::vector<Case> rope_kv_cache_write_cases(Rng& rng);
std::vector<Case> kv_cache_write_cases(Rng& rng);
std::vector<Case> silu_mul_cases(Rng& rng);
std::vector<Case> gelu_tanh_mul_cases(Rng& rng);
std::vector<Case> silu_mul_quant_fp8_group_cases(Rng& rng);
std::vector<Case> silu_mul_quant_mx_cases(Rng& rng);
std::vector<Case> quant_fp8_group_cases(Rng& rng);
std::vector<Case> dequant_fp8_group_cases(Rng& rng);
std::vector<Case> quant_mx_cases(Rng& rng);
std::vector<Case> dequant_mx_cases(Rng& rng);
std::vector<Case> paged_decode_cases(Rng& rng);
std::vector<Case> merge_states_cases(Rng& rng);
std::vector<Case> merge_states_n_cases(Rng& rng);

// Concatenates anything streamable (labels). Streams rather than std::string operator+ chains,
// which trip GCC 12's -Wrestrict false positive.
template <class... A>
std::string cat(const A&... a) {
  std::ostringstream os;
  (os << ... << a);
  return os.str();
}

// Shared fill helpers.
double max_abs(const HostTensor& t);
// Random codes in [lo, hi] (bit patterns), e.g. finite fp8 codes or scale exponents.
void fill_codes(HostTensor& t, Rng& rng, uint64_t lo, uint64_t hi);

}  // namespace tejas::check
