#include "emu/emu.h"

namespace tejas::emu {

const char* finding_kind_name(FindingKind k) {
  switch (k) {
    case FindingKind::shared_race: return "shared_race";
    case FindingKind::global_race: return "global_race";
    case FindingKind::divergent_barrier: return "divergent_barrier";
    case FindingKind::partial_warp_collective: return "partial_warp_collective";
    case FindingKind::mask_excludes_caller: return "mask_excludes_caller";
    case FindingKind::out_of_bounds: return "out_of_bounds";
    case FindingKind::write_to_input: return "write_to_input";
    case FindingKind::misaligned: return "misaligned";
    case FindingKind::poison_read: return "poison_read";
    case FindingKind::async_read_before_wait: return "async_read_before_wait";
    case FindingKind::smem_over_limit: return "smem_over_limit";
    case FindingKind::unsupported: return "unsupported";
    case FindingKind::deadlock: return "deadlock";
    case FindingKind::stale_nc_read: return "stale_nc_read";
    case FindingKind::grid_dependency: return "grid_dependency";
  }
  return "?";
}

}  // namespace tejas::emu
