// Command-line flags without a library: "--name value", "--name=value" and boolean "--name".
// Errors name the flag; the caller prints them and exits with kExitUsage.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tejas::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // a check failed or the run hit an error
inline constexpr int kExitUsage = 2;    // bad flags

struct FlagSpec {
  std::string name;       // without dashes: "backend"
  std::string value_name; // "" for a boolean flag, else shown in help: "NAME"
  std::string help;
};

class Flags {
 public:
  // Parses args (after the subcommand). --help / -h are always accepted. False on error, with
  // *error naming the flag ("--seed: expected a value").
  bool parse(const std::vector<FlagSpec>& specs, const std::vector<std::string>& args, std::string* error);
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::string get(const std::string& name, const std::string& fallback = "") const;
  bool help() const { return help_; }

 private:
  std::map<std::string, std::string> values_;
  bool help_ = false;
};

// "  --backend NAME   which backend ..." lines.
std::string flags_help(const std::vector<FlagSpec>& specs);
// Unsigned decimal (or 0x hex) without trailing junk.
bool parse_u64(const std::string& s, uint64_t* out);
// Comma-separated list: "norm,rope" -> {"norm", "rope"}.
std::vector<std::string> split_list(const std::string& s);

}  // namespace tejas::cli
