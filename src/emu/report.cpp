// Findings and the launch report.
#include <cstdio>
#include <string>

#include "emu/internal.h"

namespace tejas::emu {
namespace rt {
namespace {

std::string dims(uint3 d) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "(%u,%u,%u)", d.x, d.y, d.z);
  return buf;
}

uint3 unflatten3(uint32_t i, dim3 d) { return uint3{i % d.x, (i / d.x) % d.y, i / (d.x * d.y)}; }

}  // namespace

bool want_finding(FindingKind k) {
  auto& n = g_launch->kind_counts[static_cast<int>(k)];
  if (n >= static_cast<uint32_t>(kMaxFindingsPerKind)) {
    g_launch->report.findings_dropped++;
    return false;
  }
  return true;
}

void add_finding(FindingKind k, uintptr_t address, const Site& site, std::string detail, const Thread* who) {
  Launch& L = *g_launch;
  L.kind_counts[static_cast<int>(k)]++;
  if (who == nullptr) who = L.current;
  Finding f;
  f.kind = k;
  if (who != nullptr) {
    f.block = who->block->idx;
    f.thread = who->builtins.thread_idx;
  }
  f.address = address;
  f.site = site;
  f.detail = std::move(detail);
  L.report.findings.push_back(std::move(f));
}

std::string thread_name(uint32_t gtid) {
  const Launch& L = *g_launch;
  const uint32_t blk = gtid / L.threads_per_block;
  std::string s = "thread ";
  s += dims(unflatten3(gtid % L.threads_per_block, L.opts.block));
  if (L.current == nullptr || L.current->block->linear != blk) {
    s += " of block ";
    s += dims(unflatten3(blk, L.opts.grid));
  }
  return s;
}

}  // namespace rt

std::string Site::name() const {
  auto frame = [](const char* f, uint32_t l) {
    return std::string((f != nullptr && *f) ? f : "?") + ':' + std::to_string(l);
  };
  std::string s = frame(file, line);
  if (depth == 0) return s;
  s += " (via ";
  const uint32_t kept = depth < static_cast<uint32_t>(kMaxCallers) ? depth : kMaxCallers;
  for (uint32_t i = 0; i < kept; ++i) {
    if (i > 0) s += ", ";
    s += frame(callers[i].file, callers[i].line);
  }
  if (depth > kept) s += ", ...";
  s += ')';
  return s;
}

std::string Site::name_beside(const Site& other) const {
  std::string s = name();
  if (s == other.name() && column != other.column)
    s += " [column " + std::to_string(column) + "; the other call: column " + std::to_string(other.column) + "]";
  return s;
}

std::string Finding::to_string() const {
  std::string s = finding_kind_name(kind);
  s += " at ";
  s += site.name();
  s += " block ";
  s += rt::dims(block);
  s += " thread ";
  s += rt::dims(thread);
  if (address != 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " addr 0x%llx", static_cast<unsigned long long>(address));
    s += buf;
  }
  s += ": ";
  s += detail;
  return s;
}

bool LaunchReport::has(FindingKind k) const {
  for (const Finding& f : findings) {
    if (f.kind == k) return true;
  }
  return false;
}

std::string LaunchReport::summary() const {
  std::string s = "tejas emu: sm_" + std::to_string(arch) + " seed " + std::to_string(seed) + ", " +
                  std::to_string(findings.size()) + " finding(s)";
  if (findings_dropped > 0) s += " (" + std::to_string(findings_dropped) + " more dropped)";
  s += '\n';
  for (const Finding& f : findings) {
    s += "  ";
    s += f.to_string();
    s += '\n';
  }
  const Counters& c = counters;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "  global loads %llu req %llu sectors (%.2f/req, %llu over ideal), stores %llu req %llu sectors "
                "(%.2f/req, %llu over ideal)\n"
                "  unique bytes read %llu written %llu; shared %llu req %llu wavefronts (ideal %llu); "
                "barriers %llu; cp.async bytes %llu; blocks %llu, %llu launching dependents",
                static_cast<unsigned long long>(c.global_load_requests),
                static_cast<unsigned long long>(c.global_load_sectors), c.sectors_per_load_request(),
                static_cast<unsigned long long>(c.excess_load_sectors()),
                static_cast<unsigned long long>(c.global_store_requests),
                static_cast<unsigned long long>(c.global_store_sectors), c.sectors_per_store_request(),
                static_cast<unsigned long long>(c.excess_store_sectors()),
                static_cast<unsigned long long>(c.global_bytes_read_unique),
                static_cast<unsigned long long>(c.global_bytes_written_unique),
                static_cast<unsigned long long>(c.shared_requests),
                static_cast<unsigned long long>(c.shared_wavefronts),
                static_cast<unsigned long long>(c.shared_wavefronts_ideal),
                static_cast<unsigned long long>(c.barriers), static_cast<unsigned long long>(c.cp_async_bytes),
                static_cast<unsigned long long>(c.blocks), static_cast<unsigned long long>(c.dependent_launch_blocks));
  s += buf;
  for (const auto* ops : {&c.tensor_ops, &c.events})
    for (const auto& [name, n] : *ops) {
      s += "\n  ";
      s += name;
      s += ": ";
      s += std::to_string(n);
    }
  return s;
}

void report(FindingKind kind, const void* address, Site site, std::string detail) {
  if (!rt::want_finding(kind)) return;
  rt::add_finding(kind, reinterpret_cast<uintptr_t>(address), site, std::move(detail));
}

}  // namespace tejas::emu
