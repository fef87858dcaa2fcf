#include "runtime/print_config.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tejas::detail {

bool print_config_enabled() {
  static const bool enabled = [] {
    const char* env = std::getenv("TEJAS_PRINT_CONFIG");
    return env != nullptr && std::strcmp(env, "1") == 0;
  }();
  return enabled;
}

void print_config(const char* op, const std::string& text) { std::fprintf(stderr, "%s: %s\n", op, text.c_str()); }

}  // namespace tejas::detail
