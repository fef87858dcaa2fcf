// Host-side tensors, seeded random inputs and comparisons: shared by the test suite and the
// `tejas check` command (so the GPU path needs no GoogleTest).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "tejas/tensor.h"

namespace tejas::check {

// Owning host tensor. Storage is filled with 0xFF (poison: NaN in every float format) at
// construction, and guard bytes around it are checked by `guards_intact()`. The payload starts
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

  void poison();               // every storage byte (padding too) = 0xFF
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

// Distance in units in the last place between two values of a float dtype (same sign side
// ordering; +0 and -0 are 0 apart). NaN against anything: huge.
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
  std::string message;     // "12 of 4096 mismatch; first at [3, 17]: got 1.5 want 1.25; max abs err ..."
};

// Compares `got` (any float dtype) with `want`, elementwise over the logical shape. Positions
// where `want` is NaN must be NaN in `got`; a NaN elsewhere always fails; infinities must match
// exactly.
CompareResult compare(const HostTensor& got, const HostTensor& want, const Tolerance& tol);
// Bitwise equality of codes (quantized outputs), with the same report.
CompareResult compare_exact(const HostTensor& got, const HostTensor& want);

std::string index_string(const std::vector<int64_t>& shape, int64_t flat);

}  // namespace tejas::check
