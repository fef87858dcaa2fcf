// CUDA synchronization, warp-collective, atomic and cached-load intrinsics for emulation builds
// (included by cuda_shim.h). Each takes a trailing defaulted Site so findings name the kernel's
// source line.
#pragma once
#include <cstdint>
#include <cstring>

#include "emu/emu.h"
#include "emu/shim_runtime.h"

namespace tejas::emu::detail {

inline constexpr unsigned kShimFullMask = 0xffffffffu;

template <class T>
inline T poison_value() {
  T v;
  std::memset(static_cast<void*>(&v), kPoisonByte, sizeof(T));
  return v;
}

template <class T>
inline T shfl_t(ShflMode mode, unsigned mask, T var, int arg, int width, Site site) {
  static_assert(sizeof(T) <= 8, "shuffles move at most 8 bytes");
  T out;
  shfl(mode, mask, static_cast<const void*>(&var), sizeof(T), arg, width, static_cast<void*>(&out), site);
  return out;
}

template <class T>
inline uint64_t match_key(T v) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "__match_*_sync takes 32- or 64-bit values");
  uint64_t k = 0;
  std::memcpy(&k, static_cast<const void*>(&v), sizeof(T));
  return k;
}

// Read-modify-write after the scheduling point; a faulting address returns poison, writes nothing.
template <class T, class F>
inline T atomic_rmw(T* p, F f, Site site) {
  if (!atomic_enter(p, sizeof(T), site)) return poison_value<T>();
  T old;
  std::memcpy(static_cast<void*>(&old), p, sizeof(T));
  const T next = f(old);
  std::memcpy(static_cast<void*>(p), &next, sizeof(T));
  return old;
}

}  // namespace tejas::emu::detail

// ---- barriers ---------------------------------------------------------------------------------
inline void __syncthreads(tejas::emu::Site s = tejas::emu::Site::here()) {
  tejas::emu::detail::syncthreads(tejas::emu::detail::BarrierOp::sync, 0, s);
}
inline int __syncthreads_count(int pred, tejas::emu::Site s = tejas::emu::Site::here()) {
  return tejas::emu::detail::syncthreads(tejas::emu::detail::BarrierOp::count, pred, s);
}
inline int __syncthreads_and(int pred, tejas::emu::Site s = tejas::emu::Site::here()) {
  return tejas::emu::detail::syncthreads(tejas::emu::detail::BarrierOp::all, pred, s);
}
inline int __syncthreads_or(int pred, tejas::emu::Site s = tejas::emu::Site::here()) {
  return tejas::emu::detail::syncthreads(tejas::emu::detail::BarrierOp::any, pred, s);
}
inline void __syncwarp(unsigned mask = tejas::emu::detail::kShimFullMask,
                       tejas::emu::Site s = tejas::emu::Site::here()) {
  tejas::emu::detail::syncwarp(mask, s);
}
// The emulator runs one fiber at a time, so memory is sequentially consistent: fences are no-ops.
inline void __threadfence() {}
inline void __threadfence_block() {}
inline void __threadfence_system() {}
inline void __nanosleep(unsigned) { tejas::emu::detail::yield(); }
[[noreturn]] inline void __trap(tejas::emu::Site s = tejas::emu::Site::here()) { tejas::emu::detail::trap(s); }

// ---- shuffles -----------------------------------------------------------------------------------
template <class T>
inline T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize,
                     tejas::emu::Site s = tejas::emu::Site::here()) {
  return tejas::emu::detail::shfl_t(tejas::emu::detail::ShflMode::idx, mask, var, src_lane, width, s);
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                        tejas::emu::Site s = tejas::emu::Site::here()) {
  return tejas::emu::detail::shfl_t(tejas::emu::detail::ShflMode::up, mask, var, static_cast<int>(delta), width, s);
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                          tejas::emu::Site s = tejas::emu::Site::here()) {
  return tejas::emu::detail::shfl_t(tejas::emu::detail::ShflMode::down, mask, var, static_cast<int>(delta), width,
                                    s);
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize,
                         tejas::emu::Site s = tejas::emu::Site::here()) {
  return tejas::emu::detail::shfl_t(tejas::emu::detail::ShflMode::bfly, mask, var, lane_mask, width, s);
}

// ---- votes, match, reduce ---------------------------------------------------------------------
inline unsigned __ballot_sync(unsigned mask, int pred, tejas::emu::Site s = tejas::emu::Site::here()) {
  return tejas::emu::detail::vote(tejas::emu::detail::VoteMode::ballot, mask, pred, s);
}
inline int __any_sync(unsigned mask, int pred, tejas::emu::Site s = tejas::emu::Site::here()) {
  return static_cast<int>(tejas::emu::detail::vote(tejas::emu::detail::VoteMode::any, mask, pred, s));
}
inline int __all_sync(unsigned mask, int pred, tejas::emu::Site s = tejas::emu::Site::here()) {
  return static_cast<int>(tejas::emu::detail::vote(tejas::emu::detail::VoteMode::all, mask, pred, s));
}
inline unsigned __activemask() { return tejas::emu::detail::activemask(); }
template <class T>
inline unsigned __match_any_sync(unsigned mask, T value, tejas::emu::Site s = tejas::emu::Site::here()) {
  return tejas::emu::detail::match_any(mask, tejas::emu::detail::match_key(value), s);
}
template <class T>
inline unsigned __match_all_sync(unsigned mask, T value, int* pred, tejas::emu::Site s = tejas::emu::Site::here()) {
  return tejas::emu::detail::match_all(mask, tejas::emu::detail::match_key(value), pred, s);
}

#define TEJAS_EMU_REDUCE(NAME, UOP, SOP)                                                                    \
  inline unsigned NAME(unsigned mask, unsigned v, tejas::emu::Site s = tejas::emu::Site::here()) {          \
    return tejas::emu::detail::reduce(tejas::emu::detail::ReduceOp::UOP, mask, v, s);                     \
  }                                                                                                       \
  inline int NAME(unsigned mask, int v, tejas::emu::Site s = tejas::emu::Site::here()) {                    \
    return static_cast<int>(                                                                              \
        tejas::emu::detail::reduce(tejas::emu::detail::ReduceOp::SOP, mask, static_cast<unsigned>(v), s)); \
  }
TEJAS_EMU_REDUCE(__reduce_add_sync, add, add)
TEJAS_EMU_REDUCE(__reduce_min_sync, umin, smin)
TEJAS_EMU_REDUCE(__reduce_max_sync, umax, smax)
#undef TEJAS_EMU_REDUCE
inline unsigned __reduce_and_sync(unsigned mask, unsigned v, tejas::emu::Site s = tejas::emu::Site::here()) {
  return tejas::emu::detail::reduce(tejas::emu::detail::ReduceOp::band, mask, v, s);
}
inline unsigned __reduce_or_sync(unsigned mask, unsigned v, tejas::emu::Site s = tejas::emu::Site::here()) {
  return tejas::emu::detail::reduce(tejas::emu::detail::ReduceOp::bor, mask, v, s);
}
inline unsigned __reduce_xor_sync(unsigned mask, unsigned v, tejas::emu::Site s = tejas::emu::Site::here()) {
  return tejas::emu::detail::reduce(tejas::emu::detail::ReduceOp::bxor, mask, v, s);
}

// ---- atomics (global or shared; race only with unordered plain accesses; each is a scheduling point)
#define TEJAS_EMU_ATOMIC(NAME, T, EXPR)                                                          \
  inline T NAME(T* p, T v, tejas::emu::Site s = tejas::emu::Site::here()) {                     \
    return tejas::emu::detail::atomic_rmw(p, [v]([[maybe_unused]] T old) -> T { return static_cast<T>(EXPR); }, s); \
  }
#define TEJAS_EMU_ATOMIC_INTS(NAME, EXPR)              \
  TEJAS_EMU_ATOMIC(NAME, int, EXPR)                    \
  TEJAS_EMU_ATOMIC(NAME, unsigned, EXPR)               \
  TEJAS_EMU_ATOMIC(NAME, unsigned long long, EXPR)
TEJAS_EMU_ATOMIC_INTS(atomicAdd, old + v)
TEJAS_EMU_ATOMIC(atomicAdd, float, old + v)
TEJAS_EMU_ATOMIC(atomicAdd, double, old + v)
TEJAS_EMU_ATOMIC(atomicSub, int, old - v)
TEJAS_EMU_ATOMIC(atomicSub, unsigned, old - v)
TEJAS_EMU_ATOMIC_INTS(atomicExch, v)
TEJAS_EMU_ATOMIC(atomicExch, float, v)
TEJAS_EMU_ATOMIC_INTS(atomicMax, old > v ? old : v)
TEJAS_EMU_ATOMIC(atomicMax, long long, old > v ? old : v)
TEJAS_EMU_ATOMIC_INTS(atomicMin, old < v ? old : v)
TEJAS_EMU_ATOMIC(atomicMin, long long, old < v ? old : v)
TEJAS_EMU_ATOMIC_INTS(atomicAnd, old & v)
TEJAS_EMU_ATOMIC_INTS(atomicOr, old | v)
TEJAS_EMU_ATOMIC_INTS(atomicXor, old ^ v)
TEJAS_EMU_ATOMIC(atomicInc, unsigned, old >= v ? 0u : old + 1u)
TEJAS_EMU_ATOMIC(atomicDec, unsigned, (old == 0u || old > v) ? v : old - 1u)
#undef TEJAS_EMU_ATOMIC_INTS
#undef TEJAS_EMU_ATOMIC

#define TEJAS_EMU_ATOMIC_CAS(T)                                                                           \
  inline T atomicCAS(T* p, T compare, T v, tejas::emu::Site s = tejas::emu::Site::here()) {              \
    return tejas::emu::detail::atomic_rmw(p, [compare, v](T old) -> T { return old == compare ? v : old; }, s); \
  }
TEJAS_EMU_ATOMIC_CAS(int)
TEJAS_EMU_ATOMIC_CAS(unsigned)
TEJAS_EMU_ATOMIC_CAS(unsigned long long)
TEJAS_EMU_ATOMIC_CAS(unsigned short)
#undef TEJAS_EMU_ATOMIC_CAS

// ---- cached loads / stores: checked device-layer accesses; the cache hints do nothing here ------
template <class T>
inline T __ldg(const T* p, tejas::emu::Site s = tejas::emu::Site::here()) {
  return tejas::emu::load(p, s, tejas::emu::kAccessNonCoherent);
}
template <class T>
inline T __ldcg(const T* p, tejas::emu::Site s = tejas::emu::Site::here()) {
  return tejas::emu::load(p, s);
}
template <class T>
inline T __ldca(const T* p, tejas::emu::Site s = tejas::emu::Site::here()) {
  return tejas::emu::load(p, s);
}
template <class T>
inline T __ldcs(const T* p, tejas::emu::Site s = tejas::emu::Site::here()) {
  return tejas::emu::load(p, s);
}
template <class T>
inline void __stcg(T* p, T v, tejas::emu::Site s = tejas::emu::Site::here()) {
  tejas::emu::store(p, v, s);
}
template <class T>
inline void __stcs(T* p, T v, tejas::emu::Site s = tejas::emu::Site::here()) {
  tejas::emu::store(p, v, s);
}
