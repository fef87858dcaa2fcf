#include "check/op_checks.h"

#include <cmath>

namespace tejas::check {

const std::vector<OpCheck>& op_checks() {
  static const std::vector<OpCheck> checks = {
      {"rms_norm", "norm", norm_rms_cases},
      {"fused_add_rms_norm", "norm", norm_fused_add_cases},
      {"fused_add_rms_norm_quant_fp8_group", "norm", norm_fused_quant_cases},
      {"rope", "rope", rope_cases},
      {"mrope", "rope", mrope_cases},
      {"rope_kv_cache_write", "rope", rope_kv_cache_write_cases},
      {"kv_cache_write", "rope", kv_cache_write_cases},
      {"silu_mul", "activation", silu_mul_cases},
      {"gelu_tanh_mul", "activation", gelu_tanh_mul_cases},
      {"silu_mul_quant_fp8_group", "activation", silu_mul_quant_fp8_group_cases},
      {"silu_mul_quant_mx", "activation", silu_mul_quant_mx_cases},
      {"quant_fp8_group", "quant", quant_fp8_group_cases},
      {"dequant_fp8_group", "quant", dequant_fp8_group_cases},
      {"quant_mx", "quant", quant_mx_cases},
      {"dequant_mx", "quant", dequant_mx_cases},
      {"paged_decode_attention", "attention", paged_decode_cases},
      {"merge_attention_states", "attention", merge_states_cases},
      {"merge_attention_states_n", "attention", merge_states_n_cases},
  };
  return checks;
}

const OpCheck* find_op_check(std::string_view name) {
  for (const auto& c : op_checks())
    if (name == c.name) return &c;
  return nullptr;
}

uint64_t op_seed(uint64_t run_seed, std::string_view op) {
  // FNV-1a of the name, mixed into the run seed.
  constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull, kFnvPrime = 0x100000001b3ull;
  uint64_t h = kFnvOffset;
  for (char ch : op) h = (h ^ static_cast<uint8_t>(ch)) * kFnvPrime;
  return run_seed ^ h;
}

std::vector<CaseResult> run_op_check(const OpCheck& check, const RunOptions& options, uint64_t run_seed) {
  Rng rng(op_seed(run_seed, check.name));
  std::vector<CaseResult> results;
  const std::vector<Case> cases = check.build(rng);
  bool others_ran = false;
  for (const Case& c : cases) {
    results.push_back(run_case(c, options));
    others_ran |= !c.empty_batch() && results.back().verdict != Verdict::unsupported;
  }
  // An empty batch runs wherever the op's other cases do (a kernel backend answers it without a
  // launch): unsupported there is a failure.
  for (size_t i = 0; i < cases.size(); ++i) {
    CaseResult& r = results[i];
    if (others_ran && cases[i].empty_batch() && r.verdict == Verdict::unsupported) {
      r.verdict = Verdict::fail;
      r.detail = "an empty batch answered unsupported where the op's other cases ran: " + r.detail;
    }
  }
  return results;
}

double max_abs(const HostTensor& t) {
  double m = 0;
  for (int64_t i = 0, n = t.numel(); i < n; ++i) m = std::fmax(m, std::fabs(t.get_flat(i)));
  return m;
}

void fill_codes(HostTensor& t, Rng& rng, uint64_t lo, uint64_t hi) {
  for (int64_t i = 0, n = t.numel(); i < n; ++i)
    t.set_bits_flat(i, static_cast<uint64_t>(rng.randint(static_cast<int64_t>(lo), static_cast<int64_t>(hi))));
}

}  // namespace tejas::check
