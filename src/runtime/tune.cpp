#include "runtime/tune.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace tejas::detail {
namespace {

constexpr int kMaxQuantChunks = 4;   // quant_kernel::kMaxChunks (the kernel's register array)
constexpr int kMaxDequantSteps = 2;  // quant_kernel::kMaxDequantSteps

bool parse_int(const std::string& v, int lo, int hi, int* out) {
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || end == nullptr || *end != '\0' || x < lo || x > hi) return false;
  *out = static_cast<int>(x);
  return true;
}

}  // namespace

bool parse_tune(const std::string& text, Tune* out, std::string* why) {
  std::istringstream in(text);
  std::string entry;
  while (std::getline(in, entry, ',')) {
    if (entry.empty()) continue;
    const size_t eq = entry.find('=');
    const std::string key = entry.substr(0, eq), value = eq == std::string::npos ? "" : entry.substr(eq + 1);
    if (key == "quant.max_chunks") {
      if (!parse_int(value, 1, kMaxQuantChunks, &out->quant_max_chunks)) {
        *why = "quant.max_chunks: expected 1.." + std::to_string(kMaxQuantChunks) + ", got '" + value + "'";
        return false;
      }
    } else if (key == "dequant.steps") {
      if (!parse_int(value, 1, kMaxDequantSteps, &out->dequant_steps)) {
        *why = "dequant.steps: expected 1.." + std::to_string(kMaxDequantSteps) + ", got '" + value + "'";
        return false;
      }
    } else {
      *why = "unknown key '" + key + "' (known: quant.max_chunks, dequant.steps)";
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

const Tune& tune() {
  static const Tune t = [] {
    Tune parsed;
    std::string why;
    if (!parse_tune(tune_text(), &parsed, &why)) std::fprintf(stderr, "tejas: TEJAS_TUNE ignored from the bad entry on: %s\n", why.c_str());
    return parsed;
  }();
  return t;
}

}  // namespace tejas::detail
