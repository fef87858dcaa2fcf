// tejas info: the device (or "no GPU"), compiled CUDA architectures and the version.
#include "bench/gpu.h"
#include "commands.h"
#include "emu/emu.h"
#include "tejas/version.h"

namespace tejas::cli {
namespace {
constexpr const char* kHelp =
    "usage: tejas info\n"
    "\n"
    "Prints the CUDA device (name, SMs, compute capability, memory, L2, clocks, driver and runtime\n"
    "versions) or \"no GPU\", the CUDA architectures this build carries kernels for, the version,\n"
    "and how the emulator runs (fiber switches: boost or ucontext; math: gpu or exact, TEJAS_EMU_MATH).\n";
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0, kMiB = 1024.0 * 1024.0;
constexpr int kKhzPerMhz = 1000;
constexpr int kVersionMajor = 1000, kVersionMinor = 10;  // CUDA encodes 13.0 as 13000

std::string cuda_version(int v) { return std::to_string(v / kVersionMajor) + "." + std::to_string((v % kVersionMajor) / kVersionMinor); }
}  // namespace

int cmd_info(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Flags flags;
  int code = kExitOk;
  if (!parse_or_help("info", kHelp, {}, args, &flags, out, err, &code)) return code;
  out << "tejas " << version_string() << "\n";
  out << "compiled CUDA architectures: " << compiled_cuda_architectures() << "\n";
  out << "emulator: fibers " << emu::fiber_implementation() << ", math "
      << (emu::math_mode() == emu::MathMode::exact ? "exact" : "gpu") << "\n";
  const bench::DeviceInfo d = bench::device_info();
  if (!d.present) {
    out << "no GPU (" << d.why_absent << ")\n";
    return kExitOk;
  }
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "device: %s, sm_%d%d, %d SMs, %.1f GiB, L2 %.0f MiB, SM clock %d MHz, memory clock %d MHz, bus %d bit\n",
                d.name.c_str(), d.cc_major, d.cc_minor, d.sm_count, static_cast<double>(d.memory_bytes) / kGiB,
                static_cast<double>(d.l2_bytes) / kMiB, d.sm_clock_khz / kKhzPerMhz, d.memory_clock_khz / kKhzPerMhz,
                d.memory_bus_bits);
  out << buf;
  out << "driver " << cuda_version(d.driver_version) << ", runtime " << cuda_version(d.runtime_version) << "\n";
  const std::string key = bench::gpu_key(d);
  out << "ceilings: " << (key.empty() ? "unknown GPU (use --gpu with bench/roofline)" : key) << "\n";
  return kExitOk;
}

}  // namespace tejas::cli
