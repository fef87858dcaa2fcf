// Host-side tensors, seeded random inputs and comparisons: shared by the test suite and the
// `tejas check` command (so the GPU path needs no GoogleTest).
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "runtime/scoped_set.h"
#include "tejas/tensor.h"

namespace tejas::check {

// Poison: the byte a new HostTensor's storage is filled with, so an output element the op never
// wrote is visible. 0xFF by default: NaN in f32, f16, bf16, e4m3 and e5m2, but a valid value in
// other formats (the e2m1 nibble 0xF is -6) and ue8m0's own NaN code, so an expected NaN scale,
// NaN code or -6 that was never written would pass against it. Tests that expect such outputs
// run again under a finite poison (ScopedPoison below; e.g. 0x00 and 0x55, whose two nibbles
// are equal, so every fp4 element of an untouched byte holds the same code).
inline constexpr uint8_t kDefaultPoison = 0xFF;
uint8_t current_poison();  // this thread's poison byte for new tensors

// Sets this thread's poison byte for HostTensors constructed while it lives (and for what
// `tejas check` clones from them); restores the previous byte when it ends. Scopes nest.
class ScopedPoison : tejas::detail::ScopedSet<uint8_t> {
 public:
  explicit ScopedPoison(uint8_t byte);
};

// The code an element of dtype `t` holds in storage filled with `byte` (e2m1: the low nibble,
// which is an even element's; equal for odd ones when both nibbles of `byte` are equal).
uint64_t poison_code(DType t, uint8_t byte);

// Owning host tensor. Storage is filled with the poison byte (current_poison() at construction,
// kept by copies and by poison()), and guard bytes around it are checked by `guards_intact()`.
// The payload starts
// on a 256-byte boundary, like a cudaMalloc'd buffer, so vector widths and the emulator's sector
// counts never depend on where the heap happened to put it (views move off it explicitly).
class HostTensor {
 public:
  HostTensor() = default;
  // Contiguous. `inner_pad` > 0 pads the outermost-but-one layout: row stride becomes
  // shape[-1] + inner_pad elements (a non-contiguous view with a contiguous inner dim).
  HostTensor(DType dtype, std::vector<int64_t> shape, int64_t inner_pad = 0);
  // Copies own their storage: the copy's view points into the copy, at the same offset from the
  // payload start (views moved off it, e.g. misaligned on purpose, stay so). A moved-from tensor
  // is empty (no data), like a default-constructed one.
  HostTensor(const HostTensor& other);
  HostTensor& operator=(const HostTensor& other);
  HostTensor(HostTensor&& other) noexcept;
  HostTensor& operator=(HostTensor&& other) noexcept;

  const TensorView& view() const { return view_; }
  TensorView& view() { return view_; }
  operator const TensorView&() const { return view_; }
  DType dtype() const { return view_.dtype; }
  int64_t numel() const { return view_.numel(); }
  const std::vector<int64_t>& shape() const { return shape_; }

  void poison();               // every storage byte (padding too) = poison_byte()
  uint8_t poison_byte() const { return poison_byte_; }
  uint64_t poison_code() const { return check::poison_code(dtype(), poison_byte_); }
  bool guards_intact() const;  // the 64 bytes before and after the storage are untouched
  // Bytes outside the view's elements (padding) untouched since poison()? (fp4: nibble exact)
  bool padding_intact() const;

  double get(std::initializer_list<int64_t> idx) const;
  void set(std::initializer_list<int64_t> idx, double v);
  double get_flat(int64_t i) const;  // row-major logical index
  void set_flat(int64_t i, double v);
  uint64_t bits_flat(int64_t i) const;
  void set_bits_flat(int64_t i, uint64_t bits);
  void copy_from(const HostTensor& other);  // same shape; values re-rounded to this dtype

 private:
  std::vector<int64_t> shape_;
  std::vector<uint8_t> storage_;  // slack + kGuard + payload + kGuard
  int64_t payload_bytes_ = 0;
  int64_t offset_ = 0;  // payload start in storage_: 256-byte aligned address
  uint8_t poison_byte_ = kDefaultPoison;
  void allocate();      // sizes storage_ for payload_bytes_, sets offset_, fills guards
  uint8_t* payload() { return storage_.data() + offset_; }
  const uint8_t* payload() const { return storage_.data() + offset_; }
  TensorView view_;
};

// splitmix64-seeded xoshiro256**: reproducible across platforms.
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next();
  double uniform(double lo = 0.0, double hi = 1.0);
  double normal(double mean = 0.0, double stddev = 1.0);
  int64_t randint(int64_t lo, int64_t hi);  // inclusive
  uint64_t seed() const { return seed_; }

 private:
  uint64_t s_[4];
  uint64_t seed_;
};

// The seed for one test or check run: TEJAS_SEED if set, else fresh from the OS.
uint64_t fresh_seed();
std::string seed_note(uint64_t seed);  // "seed 123 (rerun with TEJAS_SEED=123)"

void fill_normal(HostTensor& t, Rng& rng, double mean = 0.0, double stddev = 1.0);
void fill_uniform(HostTensor& t, Rng& rng, double lo, double hi);
void fill_randint(HostTensor& t, Rng& rng, int64_t lo, int64_t hi);

// Distance in units in the last place between two codes of a dtype: the number of representable
// values from one to the other. Sign-magnitude float formats are mapped onto one monotone line
// (+0 and -0 are 0 apart); ue8m0 and u8 are unsigned (the code is its own ordinal); signed
// integers are two's complement (the distance is the difference of the values). NaN against
// anything (ue8m0 0xFF included): huge.
int64_t ulp_distance(DType t, uint64_t a_bits, uint64_t b_bits);

struct Tolerance {
  double abs = 0.0;   // |got - want| <= abs + rel * |want|  (closeness test)
  double rel = 0.0;
  int64_t ulps = -1;  // >= 0: also pass when within this many ulps of want in got's dtype
};

struct CompareResult {
  bool ok = true;
  int64_t checked = 0;
  int64_t mismatches = 0;
  int64_t first_bad = -1;  // flat index
  double got_at_first = 0, want_at_first = 0;
  double max_abs_err = 0, max_rel_err = 0;
  int64_t max_ulps = 0;
  int64_t ties = 0;        // compare_codes: elements accepted at a rounding tie
  std::string message;     // "12 of 4096 mismatch; first at [3, 17]: got 1.5 want 1.25; max abs err ..."
};

// Compares `got` (any float dtype) with `want`, elementwise over the logical shape. Positions
// where `want` is NaN must be NaN in `got`; a NaN elsewhere always fails; infinities must match
// exactly.
CompareResult compare(const HostTensor& got, const HostTensor& want, const Tolerance& tol);
// The same, with `close(i)` judging element i (row-major) wherever neither side is NaN or
// infinite (a per-element tolerance: the caller reads got and want at i).
CompareResult compare_with(const HostTensor& got, const HostTensor& want, const std::function<bool(int64_t)>& close);
// Bitwise equality of codes (quantized outputs), with the same report.
CompareResult compare_exact(const HostTensor& got, const HostTensor& want);
// Bitwise equality, except that element i (row-major) may instead hold tie_lo[i] or tie_hi[i]:
// the codes its exact value gives when moved by a tie window down or up (rounding ties). A NaN
// code on either side passes only against a NaN code.
CompareResult compare_codes(const HostTensor& got, const HostTensor& want, const std::vector<uint64_t>& tie_lo,
                            const std::vector<uint64_t>& tie_hi);

std::string index_string(const std::vector<int64_t>& shape, int64_t flat);

}  // namespace tejas::check
