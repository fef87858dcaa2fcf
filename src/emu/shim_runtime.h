// Runtime entry points behind the CUDA intrinsics of cuda_shim.h (host builds only).
#pragma once
#include <cstddef>
#include <cstdint>

#include "emu/emu.h"

namespace tejas::emu::detail {

enum class BarrierOp : uint8_t { sync, count, all, any };
// Block-wide barrier; returns the predicate count / and / or over the threads that took part
// (exited threads count as arrived and contribute nothing).
int syncthreads(BarrierOp op, int pred, Site site);
void syncwarp(uint32_t mask, Site site);

enum class ShflMode : uint8_t { idx, up, down, bfly };
// `bytes` <= 8. A lane whose source is outside the mask receives poison (0xFF bytes).
void shfl(ShflMode mode, uint32_t mask, const void* value, uint32_t bytes, int arg, int width, void* out, Site site);

enum class VoteMode : uint8_t { ballot, any, all };
uint32_t vote(VoteMode mode, uint32_t mask, int pred, Site site);
uint32_t activemask();  // lanes of the caller's warp that have not exited
uint32_t match_any(uint32_t mask, uint64_t value, Site site);
uint32_t match_all(uint32_t mask, uint64_t value, int* pred, Site site);

enum class ReduceOp : uint8_t { add, smin, smax, umin, umax, band, bor, bxor };
uint32_t reduce(ReduceOp op, uint32_t mask, uint32_t value, Site site);

// Atomics: a scheduling point (another ready thread may run first), then the bounds / poison
// check. Returns whether the caller may perform the read-modify-write.
bool atomic_enter(void* p, size_t bytes, Site site);
// __nanosleep and friends: let other threads run (spin-waits inside one block make progress).
void yield();
// __trap(): reported, and the calling thread ends.
[[noreturn]] void trap(Site site);

}  // namespace tejas::emu::detail
