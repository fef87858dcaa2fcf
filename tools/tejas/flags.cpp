#include "flags.h"

#include <cerrno>
#include <cstdlib>

namespace tejas::cli {
namespace {
constexpr size_t kHelpColumn = 22;

const FlagSpec* find(const std::vector<FlagSpec>& specs, const std::string& name) {
  for (const auto& s : specs)
    if (s.name == name) return &s;
  return nullptr;
}
}  // namespace

bool Flags::parse(const std::vector<FlagSpec>& specs, const std::vector<std::string>& args, std::string* error) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      help_ = true;
      continue;
    }
    if (a.rfind("--", 0) != 0 || a.size() == 2) {
      *error = "unexpected argument '" + a + "'";
      return false;
    }
    std::string name = a.substr(2), value;
    const size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const FlagSpec* spec = find(specs, name);
    if (!spec) {
      *error = "unknown flag --" + name;
      return false;
    }
    if (spec->value_name.empty()) {
      if (inline_value) {
        *error = "--" + name + ": takes no value";
        return false;
      }
      value = "1";
    } else if (!inline_value) {
      if (i + 1 >= args.size() || args[i + 1].rfind("--", 0) == 0) {
        *error = "--" + name + ": expected a value (" + spec->value_name + ")";
        return false;
      }
      value = args[++i];
    }
    if (!spec->value_name.empty() && value.empty()) {
      *error = "--" + name + ": expected a value (" + spec->value_name + "), got an empty string";
      return false;
    }
    values_[name] = value;
  }
  return true;
}

std::string Flags::get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

std::string flags_help(const std::vector<FlagSpec>& specs) {
  std::string out;
  for (const auto& s : specs) {
    std::string left = "  --" + s.name + (s.value_name.empty() ? "" : " " + s.value_name);
    if (left.size() < kHelpColumn) left.resize(kHelpColumn, ' ');
    else left += "  ";
    out += left + s.help + "\n";
  }
  out += "  --help              this text\n";
  return out;
}

bool parse_u64(const std::string& s, uint64_t* out) {
  if (s.empty() || s[0] == '-' || s[0] == '+') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
  if (errno != 0 || end == nullptr || *end != '\0') return false;
  *out = v;
  return true;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const size_t end = comma == std::string::npos ? s.size() : comma;
    if (end > start) out.push_back(s.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace tejas::cli
