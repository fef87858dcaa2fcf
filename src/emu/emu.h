// The CPU emulator's interface (host builds only). Contract between the emulator runtime
// (src/emu/*.cpp), the device layer's host bodies (src/device/**) and the ops' emulator
// launchers (src/ops/**/launch_emu.cpp).
//
// Model: every CUDA thread is a fiber. Blocks run one at a time (a cluster's blocks together,
// later) in a seeded order; between synchronization points a block's ready threads run in a
// seeded random order. Warp collectives rendezvous across the lanes named in their mask.
// Asynchronous copies land when the kernel waits for them. Misuse becomes a Finding, never a
// hang or a crash: a block whose threads can make no progress is ended and reported.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <source_location>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <vector_types.h>  // dim3, uint3 (CUDA headers, usable by the host compiler)

namespace tejas::emu {

// Source location of a device-layer call (file:line:column), captured by default arguments, and the
// chain of helper calls that led to it. A kernel that reaches a wrapper through a helper
// (norm's load_raw, rope's load_vec) passes its location down: the helper takes
// TEJAS_CALLER_PARAM and calls the wrapper with TEJAS_NESTED_SITE (device/prelude.h), which is
// Site::nested(caller). On the GPU each inlined call of a helper is its own instruction; here
// two calls of one helper differ by `chain`, so requests keyed by the whole site are per
// instruction too. A wrapper called directly from the kernel body has chain 0.
struct SiteFrame {
  const char* file = "";
  uint32_t line = 0;
  uint32_t column = 0;
};
struct Site {
  static constexpr int kMaxCallers = 4;
  const char* file = "";   // the wrapper call itself (innermost)
  uint32_t line = 0;
  uint32_t column = 0;     // two calls on one line (`c ? f(a) : f(b)`) are two instructions
  uint32_t depth = 0;      // helper calls enclosing it; callers[] keeps the nearest kMaxCallers
  uint64_t chain = 0;      // hash of every enclosing call's file:line:column (0: none)
  SiteFrame callers[kMaxCallers] = {};  // callers[0]: the call of the innermost helper

  static constexpr Site here(std::source_location l = std::source_location::current()) {
    return Site{l.file_name(), l.line(), l.column()};
  }
  // The current location inside a helper that `caller` called.
  static Site nested(const Site& caller, std::source_location l = std::source_location::current()) {
    Site s{l.file_name(), l.line(), l.column()};
    s.depth = caller.depth + 1;
    s.chain = mix(mix(mix(caller.chain ^ reinterpret_cast<uintptr_t>(caller.file)) ^ caller.line) ^ caller.column) | 1;
    s.callers[0] = SiteFrame{caller.file, caller.line, caller.column};
    for (int i = 1; i < kMaxCallers; ++i) s.callers[i] = caller.callers[i - 1];
    return s;
  }
  // One instruction: the same file:line:column reached through the same helper calls.
  bool same_instruction(const Site& o) const {
    return line == o.line && column == o.column && chain == o.chain &&
           (file == o.file || __builtin_strcmp(file, o.file) == 0);
  }
  // "file:line", then " (via file:line, file:line)" for the enclosing helper calls, nearest first.
  std::string name() const;
  // name(), and when `other` has the same name (two calls on one line), both columns.
  std::string name_beside(const Site& other) const;

 private:
  static constexpr uint64_t mix(uint64_t x) {  // splitmix64's finalizer
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  }
};

enum class FindingKind : uint8_t {
  shared_race,             // two threads touch one shared byte in one barrier interval, >= 1 writes
  global_race,             // the same for global memory (non-atomic), within one launch
  divergent_barrier,       // __syncthreads (or a named barrier) not reached by every live thread
  partial_warp_collective, // a collective / .aligned instruction executed by part of its mask or warp
  mask_excludes_caller,    // a *_sync mask that leaves out the calling lane
  out_of_bounds,           // device-layer access outside every registered buffer / the block's smem
  write_to_input,          // a store into a buffer registered read-only
  misaligned,              // access not aligned to its size (or ldmatrix row not 16 B aligned)
  poison_read,             // read of bytes never written (emulator allocations, shared memory)
  async_read_before_wait,  // read of a cp.async destination before the wait for its group
  smem_over_limit,         // dynamic shared memory above the emulated architecture's cap
  unsupported,             // an instruction the emulated architecture does not have
  deadlock,                // threads blocked forever for another reason
  stale_nc_read,           // ld.global.nc / __ldg of bytes written earlier in the same launch
  grid_dependency,         // programmatic launch: a global access or an exit before griddepcontrol.wait
};
const char* finding_kind_name(FindingKind k);

struct Finding {
  FindingKind kind;
  uint3 block{0, 0, 0};
  uint3 thread{0, 0, 0};
  uintptr_t address = 0;   // 0 when not an access
  Site site;
  std::string detail;      // human-readable specifics
  std::string to_string() const;  // "shared_race at kernel.cuh:42 block (0,0,0) thread (33,0,0) addr smem+0x40: ..."
};

struct Counters {
  // Global memory, device-layer accesses. A request is one warp-level instruction (the lanes of
  // one warp executing the same call site for the same time); sectors are the distinct 32-byte
  // segments its lanes touch.
  uint64_t global_load_requests = 0, global_load_sectors = 0;
  uint64_t global_store_requests = 0, global_store_sectors = 0;
  // The fewest sectors each request could have touched for the bytes it used: ceil(distinct
  // bytes / 32), summed over requests (lanes reading the same bytes count once). Sectors above
  // it are fetched but partly unused: strided or scattered lanes, or a contiguous run that starts
  // mid-sector (at most one extra sector per request). 0 excess = every sector fully used.
  uint64_t global_load_sectors_ideal = 0, global_store_sectors_ideal = 0;
  // Distinct global bytes read / written by the launch (compulsory HBM traffic). A read of
  // bytes a plain store of the launch wrote earlier (a read-back, an L2 hit on the GPU) is not
  // counted; a read of bytes an atomic wrote is.
  uint64_t global_bytes_read_unique = 0, global_bytes_written_unique = 0;
  // Shared memory: wavefronts actually needed vs the conflict-free minimum for the same accesses.
  uint64_t shared_requests = 0, shared_wavefronts = 0, shared_wavefronts_ideal = 0;
  std::map<std::string, uint64_t> tensor_ops;  // "mma.m16n8k16.bf16.f32" -> warp-instructions
  uint64_t barriers = 0;                       // block-wide barrier completions
  std::map<std::string, uint64_t> events;      // dev::count_event names -> calls (kernel-defined)
  uint64_t global_prefetches = 0;              // prefetch.L2 instructions, per thread
  uint64_t cp_async_bytes = 0;
  uint64_t blocks = 0;                         // blocks run
  // Blocks in which griddepcontrol.launch_dependents ran (once per block counts, as on the GPU);
  // equal to `blocks` when every block lets the next kernel launch early.
  uint64_t dependent_launch_blocks = 0;
  double sectors_per_load_request() const;
  double sectors_per_store_request() const;
  uint64_t excess_load_sectors() const;   // global_load_sectors - global_load_sectors_ideal
  uint64_t excess_store_sectors() const;
  uint64_t bank_conflict_wavefronts() const { return shared_wavefronts - shared_wavefronts_ideal; }
};

struct LaunchReport {
  std::vector<Finding> findings;  // first kMaxFindingsPerKind of each kind are kept
  uint64_t findings_dropped = 0;
  Counters counters;
  uint64_t seed = 0;
  int arch = 90;
  bool ok() const { return findings.empty(); }
  bool has(FindingKind k) const;
  std::string summary() const;  // one line per finding plus the counters
};
inline constexpr int kMaxFindingsPerKind = 16;

struct LaunchOptions {
  dim3 grid{1, 1, 1};
  dim3 block{1, 1, 1};
  size_t dynamic_smem_bytes = 0;
  int arch = 90;               // 80 or 90; sets the smem cap (163 KB / 227 KB) and instruction set
  uint64_t seed = 0;           // 0: TEJAS_EMU_SEED if set, else a fixed default (reproducible)
  bool print_report = false;   // also when TEJAS_EMU_REPORT=1
  // Cluster dims: the blocks of one cluster run together (interleaved by the scheduler).
  dim3 cluster{1, 1, 1};
  size_t stack_bytes = 0;      // per-thread fiber stack; 0: TEJAS_EMU_STACK_KB if set, else 64 KB
  // The kernel's limit on dynamic shared memory per block: CUDA's default (48 KiB) unless the
  // launcher raised it, as cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
  // ...) does on a GPU; a launch above it fails there, and here gets a smem_over_limit finding.
  // The architecture's cap (kSmemCapSm90 / 80) still applies above a raised limit.
  size_t max_dynamic_smem_bytes = 0;  // 0: kDefaultMaxDynamicSmem
  // Launched as the programmatic dependent of the kernel before it (sm_90 only; the cuda
  // launchers' cudaLaunchAttributeProgrammaticStreamSerialization): until a thread has executed
  // griddepcontrol.wait, that kernel may still be running, so each global access (loads, stores,
  // atomics, cp.async sources) it makes is a grid_dependency finding, and so is its exit
  // without the wait (the grid could complete before its predecessor). prefetch.L2 is allowed.
  // Without it, griddepcontrol.wait returns at once, as on the GPU.
  bool programmatic = false;
};
inline constexpr size_t kDefaultStackBytes = 64 * 1024;
inline constexpr size_t kSmemCapSm90 = 232448;  // 227 KB opt-in dynamic shared memory per block
inline constexpr size_t kSmemCapSm80 = 166912;  // 163 KB
inline constexpr size_t kDefaultMaxDynamicSmem = 49152;  // 48 KiB: any kernel, without the opt-in attribute

// ---- launching ------------------------------------------------------------------------------
namespace detail {
// Runs `body(ctx)` as each thread of the launch. The body calls the kernel with its arguments.
using ThreadBody = void (*)(void* ctx);
LaunchReport run(const LaunchOptions& opts, ThreadBody body, void* ctx);
}  // namespace detail

// Launches `kernel(args...)` over the grid. Arguments are copied once, like kernel parameters.
template <class... KArgs, class... Args>
LaunchReport launch(const LaunchOptions& opts, void (*kernel)(KArgs...), Args&&... args) {
  struct Ctx {
    void (*k)(KArgs...);
    std::tuple<std::decay_t<KArgs>...> a;
  } ctx{kernel, std::tuple<std::decay_t<KArgs>...>(std::forward<Args>(args)...)};
  auto body = [](void* p) {
    auto* c = static_cast<Ctx*>(p);
    std::apply(c->k, c->a);
  };
  return detail::run(opts, body, &ctx);
}

template <class... KArgs, class... Args>
LaunchReport launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t dynamic_smem_bytes, Args&&... args) {
  LaunchOptions o;
  o.grid = grid;
  o.block = block;
  o.dynamic_smem_bytes = dynamic_smem_bytes;
  return launch(o, kernel, std::forward<Args>(args)...);
}

// ---- memory ---------------------------------------------------------------------------------
// Emulator allocations: filled with 0xFF (NaN in every float format), tracked as never written,
// bounds-checked. Registered until freed.
void* device_malloc(size_t bytes, const char* name = "device_malloc");
void device_free(void* p);

enum class Access : uint8_t { read = 1, write = 2, read_write = 3 };
// Makes caller-owned host memory visible to kernels (ops register their tensors' byte extents).
// `initialized` false: reads before a device-layer write are poison reads.
void register_buffer(const void* p, size_t bytes, Access access, const char* name, bool initialized = true);
void unregister_buffer(const void* p);
// Host-side initialization of emulator memory (like cudaMemcpy / cudaMemset): the bytes count as
// written from then on. Writes made outside the device layer are not seen by the emulator, so
// host code fills device_malloc memory through these (or calls mark_initialized afterwards).
void copy_to_device(void* dst, const void* src, size_t bytes);
void fill_device(void* dst, unsigned char value, size_t bytes);
void mark_initialized(const void* p, size_t bytes);
struct ScopedBuffer {
  ScopedBuffer(const void* p, size_t bytes, Access access, const char* name, bool initialized = true)
      : p_(p) { register_buffer(p, bytes, access, name, initialized); }
  ~ScopedBuffer() { unregister_buffer(p_); }
  ScopedBuffer(const ScopedBuffer&) = delete;
  ScopedBuffer& operator=(const ScopedBuffer&) = delete;
 private:
  const void* p_;
};

// ---- hooks for the device layer (valid only inside a launch, from a thread fiber) ------------
// Validate and record an access of `bytes` at p (bounds, alignment, poison, races, pending
// cp.async, counters). Space is found from the address. Returns whether the caller may perform
// the access: false after a fault (out of bounds, misaligned, store into a read-only buffer,
// read of a pending cp.async destination); a load then yields poison (fill 0xFF), a store is
// dropped. The result may be ignored only where the access is known to be in bounds.
// `flags`: kAccessNoBankCount for accesses whose shared-memory wavefronts the caller counts
// itself through count_shared_phase (ldmatrix / stmatrix rows).
inline constexpr uint32_t kAccessNoBankCount = 1;
// kAccessNonCoherent: a load through the non-coherent path (ld.global.nc, __ldg), valid only for
// data that nothing writes during the launch.
inline constexpr uint32_t kAccessNonCoherent = 2;
bool on_load(const void* p, size_t bytes, const Site& site, uint32_t flags = 0);
bool on_store(void* p, size_t bytes, const Site& site, uint32_t flags = 0);
// Atomics: bounds, alignment, poison (an atomic reads the old value); recorded as writes that
// race with unordered plain accesses, never with other atomics.
bool on_atomic(void* p, size_t bytes, const Site& site);

inline constexpr unsigned char kPoisonByte = 0xFF;

template <class T>
inline T load(const T* p, const Site& site = Site::here(), uint32_t flags = 0) {
  T v;
  if (on_load(p, sizeof(T), site, flags)) {
    __builtin_memcpy(&v, p, sizeof(T));
  } else {
    __builtin_memset(&v, kPoisonByte, sizeof(T));
  }
  return v;
}
template <class T>
inline void store(T* p, const T& v, const Site& site = Site::here()) {
  if (on_store(p, sizeof(T), site)) __builtin_memcpy(p, &v, sizeof(T));
}

// Warp collectives. Every non-exited lane named in `mask` calls with its own `in` / `out`; the
// call returns once all of them have arrived (or exited) and `fn` has run over their slots, as
// PTX waits only for the non-exited threads of a membermask.
// `aligned`: the instruction is .aligned (every lane of the warp must take part: mask must be
// full and no lane may have exited). A mask that omits the caller, an .aligned instruction by
// part of the warp, or lanes that stay alive but never arrive are reported, and the call then
// returns with `out` untouched.
struct WarpSlots {
  uint32_t mask = 0;       // the lanes taking part (the call's mask less the exited lanes)
  uint32_t requested = 0;  // the call's mask
  const void* in[32] = {};
  void* out[32] = {};
};
using CollectiveFn = void (*)(WarpSlots& slots, void* user);
void warp_collective(const char* name, uint32_t mask, bool aligned, const void* in, void* out, CollectiveFn fn,
                     void* user, Site site);

// Shared-memory wavefront accounting for warp-wide matrix instructions (ldmatrix, stmatrix):
// one call per phase of up to 8 row addresses of 16 bytes each.
void count_shared_phase(const uintptr_t* row_addrs, int n, int bytes_each);
// A prefetch.L2 of `p` by the current thread (ptx::prefetch_l2): counted, no data moves (a GPU
// prefetch changes no values and faults on no address). An address outside every registered
// buffer is an out_of_bounds finding all the same: the kernel computed it wrong.
void count_prefetch(const void* p, const Site& site);
void count_tensor_op(const char* name);
// A kernel-defined event (dev::count_event, device/probe.h): counted by name, nothing else.
void count_event(const char* name);

// cp.async: copies `cp_size` bytes (4, 8, 16) from gmem to smem, of which the last
// cp_size - src_size are zero-filled. The data lands at cp_async_wait for its group.
void cp_async(void* smem, const void* gmem, int cp_size, int src_size, Site site);
void cp_async_commit(Site site);
void cp_async_wait(int n, Site site);  // at most n most recent groups stay pending

// griddepcontrol (ptx::griddepcontrol_wait / _launch_dependents): the wait marks the calling
// thread as ordered after the prerequisite grid (LaunchOptions::programmatic); launch_dependents
// marks its block (Counters::dependent_launch_blocks). Both report `unsupported` below sm_90.
void griddepcontrol_wait(Site site);
void griddepcontrol_launch_dependents(Site site);

// Reports a finding from the device layer (e.g. an instruction the emulated arch lacks).
void report(FindingKind kind, const void* address, Site site, std::string detail);

// ---- math functions with the GPU's error (src/device/math.h calls these) --------------------
// CUDA's expf and rsqrtf are not correctly rounded: the CUDA C++ Programming Guide's
// Mathematical Functions appendix ("Single-Precision Mathematical Standard Library Functions
// with Maximum ULP Error") gives expf 2 ulp and rsqrtf 2 ulp (full range). In `gpu` mode the
// emulator returns the correctly rounded value moved by k ulps, |k| <= that bound, k a hash of
// (seed, function, input bits): equal inputs give equal results within a launch, as on hardware,
// and other seeds probe other errors. The seed is the running launch's (LaunchReport::seed),
// outside a launch TEJAS_EMU_SEED or the fixed default. Special values are exact (NaN, +-Inf,
// 0, expf(+-0) = 1), and a finite nonzero result never becomes 0 or Inf.
enum class MathMode : uint8_t {
  gpu,    // bounded perturbation (default)
  exact,  // correctly rounded
};
inline constexpr int kExpfMaxUlps = 2;
inline constexpr int kRsqrtfMaxUlps = 2;
// The fast intrinsics (CUDA C++ Programming Guide, "Intrinsic Functions", single precision):
// __expf(x) errs by at most 2 + floor(|1.173 x|) ulp (ex2.approx.ftz of x log2(e): the rounding of
// that product grows with |x|), and its subnormal results are flushed to +0; __fdividef(x, y)
// by 2 ulp for |y| in [2^-126, 2^126], and is 0 for 2^126 < |y| < 2^128 (NaN if x is infinite).
int fast_expf_max_ulps(float x);
inline constexpr int kFdividefMaxUlps = 2;
float gpu_fast_expf(float x);       // __expf, by math_mode()
// ex2.approx.ftz.f32 (ptx::ex2_approx_ftz_f32): 2^x within kEx2ApproxMaxUlps of the correctly
// rounded result (PTX ISA, "Floating Point Instructions: ex2"), subnormal inputs and results
// flushed to sign-preserving zero (so a subnormal x gives 1, and a result below 2^-126 is +0);
// -Inf -> +0, +-0 -> 1, +Inf -> +Inf, NaN -> NaN, exact. By math_mode().
inline constexpr int kEx2ApproxMaxUlps = 2;
float gpu_ex2_approx_ftz(float x);
float gpu_fdividef(float x, float y);  // __fdividef, by math_mode()
MathMode math_mode();           // TEJAS_EMU_MATH=gpu|exact, read once (unknown values: gpu, warned)
void set_math_mode(MathMode m); // overrides the environment for the process (tests)
bool parse_math_mode(const char* text, MathMode* out);  // "gpu" / "exact"; false otherwise
float gpu_expf(float x);        // by math_mode()
float gpu_rsqrtf(float x);
float correctly_rounded_expf(float x);
float correctly_rounded_rsqrtf(float x);

// How this build switches fibers: "boost" (Boost.Context) or "ucontext" (CMake TEJAS_EMU_FIBERS).
const char* fiber_implementation();
float perturbed_expf(float x, uint64_t seed);  // gpu mode's result under `seed`
float perturbed_rsqrtf(float x, uint64_t seed);

// The current thread's view (inside a launch).
namespace detail {
// CUDA built-in variables of the running fiber (cuda_shim.h maps threadIdx etc. onto these).
struct Builtins {
  uint3 thread_idx{0, 0, 0};
  uint3 block_idx{0, 0, 0};
  dim3 block_dim{1, 1, 1};
  dim3 grid_dim{1, 1, 1};
};
extern thread_local const Builtins* tls_builtins;
}  // namespace detail
int current_arch();
void* dynamic_smem_base();
size_t dynamic_smem_size();
bool in_launch();
int lane_id();  // threadIdx linearized, modulo 32

}  // namespace tejas::emu
