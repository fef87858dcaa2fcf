#include "ops/common/emu_launch.h"

#include <algorithm>
#include <cstdint>

namespace tejas::detail {
namespace {
thread_local std::vector<emu::LaunchReport> t_reports;

struct Extent {
  uintptr_t lo, hi;
  uint8_t access;
};
}  // namespace

EmuBuffers::EmuBuffers(std::initializer_list<EmuArg> args) {
  std::vector<Extent> ext;
  for (const EmuArg& a : args) {
    if (!a.t->defined() || a.t->numel() == 0) continue;
    int64_t lo, hi;
    a.t->byte_extent(&lo, &hi);
    const auto base = reinterpret_cast<uintptr_t>(a.t->data);
    ext.push_back({base + static_cast<uintptr_t>(lo), base + static_cast<uintptr_t>(hi),
                   static_cast<uint8_t>(a.access)});
  }
  std::sort(ext.begin(), ext.end(), [](const Extent& a, const Extent& b) { return a.lo < b.lo; });
  std::vector<Extent> merged;
  for (const Extent& e : ext) {
    if (!merged.empty() && e.lo < merged.back().hi) {
      merged.back().hi = std::max(merged.back().hi, e.hi);
      merged.back().access |= e.access;
    } else {
      merged.push_back(e);
    }
  }
  for (const Extent& e : merged) {
    const auto access = static_cast<emu::Access>(e.access);
    // An output-only region starts unwritten: a kernel that reads it first is reported.
    const bool initialized = access != emu::Access::write;
    const void* p = reinterpret_cast<const void*>(e.lo);
    emu::register_buffer(p, e.hi - e.lo, access, access == emu::Access::read ? "input" : "output", initialized);
    bases_.push_back(p);
  }
}

EmuBuffers::~EmuBuffers() {
  for (const void* p : bases_) emu::unregister_buffer(p);
}

emu::LaunchOptions emu_options(const ExecContext& ctx, dim3 grid, dim3 block, size_t dynamic_smem_bytes,
                               bool smem_opt_in) {
  emu::LaunchOptions o;
  o.grid = grid;
  o.block = block;
  o.dynamic_smem_bytes = dynamic_smem_bytes;
  o.arch = ctx.emulated_arch;
  // Every op kernel may be launched as a programmatic dependent on the GPU (ExecContext::pdl), so
  // the emulator holds each one to that launch's rule whatever ctx.pdl says: no global access or
  // exit before griddepcontrol.wait (dev::begin_dependent_grid). sm_80 has no such launch.
  o.programmatic = o.arch >= 90;
  if (smem_opt_in) o.max_dynamic_smem_bytes = o.arch == 90 ? emu::kSmemCapSm90 : emu::kSmemCapSm80;
  return o;
}

Status emu_status(const char* op, const emu::LaunchReport& report) {
  t_reports.push_back(report);
  if (report.ok()) return Status::Ok();
  return Status::Internal(std::string(op) + ": the emulator reported findings (seed " + std::to_string(report.seed) +
                          "):\n" + report.summary());
}

void begin_emulator_call() { t_reports.clear(); }
const std::vector<emu::LaunchReport>& last_emulator_reports() { return t_reports; }

}  // namespace tejas::detail
