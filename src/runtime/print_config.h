// TEJAS_PRINT_CONFIG=1 prints each launch's kernel config to stderr ("op: config"). The
// environment is read once; callers test print_config_enabled() before building the text, so
// launches pay one branch when printing is off.
#pragma once
#include <string>

namespace tejas::detail {

bool print_config_enabled();
void print_config(const char* op, const std::string& text);

}  // namespace tejas::detail
