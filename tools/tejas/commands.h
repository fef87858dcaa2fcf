// One function per subcommand (args after the subcommand name).
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "bench/floors.h"
#include "check/op_checks.h"
#include "flags.h"

namespace tejas::cli {

int cmd_check(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int cmd_bench(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int cmd_roofline(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int cmd_info(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int cmd_overhead(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// Parses flags; on error prints "tejas CMD: MESSAGE" and a hint to err and returns false with
// *exit_code = kExitUsage; on --help prints `help` + the flag list to out and returns false with
// *exit_code = kExitOk.
bool parse_or_help(const char* cmd, const std::string& help, const std::vector<FlagSpec>& specs,
                   const std::vector<std::string>& args, Flags* flags, std::ostream& out, std::ostream& err,
                   int* exit_code);
// A usage error naming the flag: prints and returns kExitUsage.
int usage_error(const char* cmd, const std::string& message, std::ostream& err);

// --suite LIST|all into suite names (all: every suite); false after a usage error naming the flag.
bool suites_flag(const char* cmd, const Flags& flags, std::vector<std::string>* suites, std::ostream& err);

// --op NAME[,NAME] into the ops' checks (absent: every op); false after a usage error naming the
// flag. --seed N (absent: TEJAS_SEED or fresh); false after a usage error naming the flag.
bool ops_flag(const char* cmd, const Flags& flags, std::vector<const check::OpCheck*>* ops, std::ostream& err);
bool seed_flag(const char* cmd, const Flags& flags, uint64_t* seed, std::ostream& err);

// --gpu NAME resolved to known ceilings; nullptr (after a usage error message) when unknown.
const bench::GpuCeilings* gpu_flag(const char* cmd, const Flags& flags, const std::string& fallback,
                                   std::ostream& err);

}  // namespace tejas::cli
