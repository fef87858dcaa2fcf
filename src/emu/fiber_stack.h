// Pooled fiber stacks (one per emulated thread slot, reused across blocks and launches).
#pragma once
#include <cstddef>

namespace tejas::emu::rt {

// Top (highest address) of stack slot `index`, each `bytes` long (rounded up to pages). Changing
// `bytes` drops the pool.
void* fiber_stack_top(size_t index, size_t bytes);
size_t fiber_stack_bytes();  // usable bytes of each pooled stack

}  // namespace tejas::emu::rt
