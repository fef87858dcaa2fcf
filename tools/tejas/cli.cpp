#include "cli.h"

#include "bench/suites.h"
#include "commands.h"

namespace tejas::cli {
namespace {
constexpr const char* kTopHelp =
    "usage: tejas COMMAND [flags]\n"
    "\n"
    "commands:\n"
    "  check      correctness of every op on a backend against the reference (pass/FAIL/unsupported)\n"
    "  bench      time kernels over production shapes beside their roofline floors\n"
    "  roofline   the GPU's ceilings (measured now on a GPU) and the floor of every workload\n"
    "  info       the device, compiled CUDA architectures and version\n"
    "  overhead   the host time of each op's call, launch excluded (no GPU needed)\n"
    "\n"
    "`tejas COMMAND --help` describes each command's flags. Exit status: 0 ok, 1 a check failed or\n"
    "an error occurred, 2 bad flags.\n";
}  // namespace

bool parse_or_help(const char* cmd, const std::string& help, const std::vector<FlagSpec>& specs,
                   const std::vector<std::string>& args, Flags* flags, std::ostream& out, std::ostream& err,
                   int* exit_code) {
  std::string error;
  if (!flags->parse(specs, args, &error)) {
    *exit_code = usage_error(cmd, error, err);
    return false;
  }
  if (flags->help()) {
    out << help << "\nflags:\n" << flags_help(specs);
    *exit_code = kExitOk;
    return false;
  }
  return true;
}

int usage_error(const char* cmd, const std::string& message, std::ostream& err) {
  err << "tejas " << cmd << ": " << message << " (see tejas " << cmd << " --help)\n";
  return kExitUsage;
}

bool suites_flag(const char* cmd, const Flags& flags, std::vector<std::string>* suites, std::ostream& err) {
  const std::string arg = flags.get("suite", "all");
  if (arg == "all") {
    *suites = bench::suite_names();
    return true;
  }
  for (const auto& s : split_list(arg)) {
    if (!bench::is_suite(s)) {
      usage_error(cmd, "--suite: unknown suite '" + s + "' (norm, rope, activation, quant, pdl, attention, memcpy, gemm or all)",
                  err);
      return false;
    }
    suites->push_back(s);
  }
  return true;
}

bool ops_flag(const char* cmd, const Flags& flags, std::vector<const check::OpCheck*>* ops, std::ostream& err) {
  if (!flags.has("op")) {
    for (const auto& c : check::op_checks()) ops->push_back(&c);
    return true;
  }
  for (const std::string& name : split_list(flags.get("op"))) {
    const check::OpCheck* c = check::find_op_check(name);
    if (!c) {
      usage_error(cmd, "--op: unknown op '" + name + "' (tejas check --list shows them)", err);
      return false;
    }
    ops->push_back(c);
  }
  return true;
}

bool seed_flag(const char* cmd, const Flags& flags, uint64_t* seed, std::ostream& err) {
  if (!flags.has("seed")) {
    *seed = check::fresh_seed();
    return true;
  }
  if (parse_u64(flags.get("seed"), seed)) return true;
  usage_error(cmd, "--seed: expected a non-negative integer, got '" + flags.get("seed") + "'", err);
  return false;
}

const bench::GpuCeilings* gpu_flag(const char* cmd, const Flags& flags, const std::string& fallback,
                                   std::ostream& err) {
  const std::string name = flags.get("gpu", fallback);
  const bench::GpuCeilings* g = bench::find_gpu(name);
  if (!g) usage_error(cmd, "--gpu: expected h100, h200 or b200, got '" + name + "'", err);
  return g;
}

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) {
    err << kTopHelp;
    return kExitUsage;
  }
  const std::string& cmd = args.front();
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    out << kTopHelp;
    return kExitOk;
  }
  if (cmd == "check") return cmd_check(rest, out, err);
  if (cmd == "bench") return cmd_bench(rest, out, err);
  if (cmd == "roofline") return cmd_roofline(rest, out, err);
  if (cmd == "info") return cmd_info(rest, out, err);
  if (cmd == "overhead") return cmd_overhead(rest, out, err);
  err << "tejas: unknown command '" << cmd << "' (see tejas --help)\n";
  return kExitUsage;
}

int main(int argc, char** argv, std::ostream& out, std::ostream& err) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return run(args, out, err);
}

}  // namespace tejas::cli
