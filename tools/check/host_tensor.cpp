#include "check/host_tensor.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <utility>

#include "ops/common/ref_numeric.h"

namespace tejas::check {
namespace {
constexpr int64_t kGuard = 64;
constexpr uint8_t kGuardByte = 0xA5;
constexpr int64_t kPayloadAlign = 256;  // cudaMalloc's guarantee
constexpr uint8_t kLowNibble = 0x0F, kHighNibble = 0xF0;

thread_local uint8_t t_poison = kDefaultPoison;

void unflatten(const std::vector<int64_t>& shape, int64_t flat, int64_t* idx) {
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    const int64_t n = shape[d] > 0 ? shape[d] : 1;
    idx[d] = flat % n;
    flat /= n;
  }
}
}  // namespace

uint8_t current_poison() { return t_poison; }
ScopedPoison::ScopedPoison(uint8_t byte) : ScopedSet(t_poison, byte) {}

uint64_t poison_code(DType t, uint8_t byte) {
  const int bits = dtype_bits(t);
  if (bits < 8) return byte & kLowNibble;
  uint64_t code = 0;
  for (int b = 0; b < bits; b += 8) code |= uint64_t{byte} << b;
  return code;
}

HostTensor::HostTensor(DType dtype, std::vector<int64_t> shape, int64_t inner_pad) : shape_(std::move(shape)) {
  const int nd = static_cast<int>(shape_.size());
  view_.dtype = dtype;
  view_.ndim = nd;
  int64_t s = 1;
  for (int d = nd - 1; d >= 0; --d) {
    view_.shape[d] = shape_[d];
    view_.stride[d] = s;
    int64_t extent = shape_[d];
    if (d == nd - 1) extent += inner_pad;
    s *= extent;
  }
  payload_bytes_ = dtype_bytes(dtype, s);
  poison_byte_ = current_poison();
  allocate();
  poison();
}

void HostTensor::allocate() {
  storage_.assign(static_cast<size_t>(kPayloadAlign + kGuard + payload_bytes_ + kGuard), kGuardByte);
  const auto first = reinterpret_cast<uintptr_t>(storage_.data()) + kGuard;
  offset_ = kGuard + static_cast<int64_t>((kPayloadAlign - first % kPayloadAlign) % kPayloadAlign);
  view_.data = payload();
}

// A copy gets its own aligned storage: guards and payload bytes (padding too) carried over, and
// the view at the same offset from the payload start.
HostTensor::HostTensor(const HostTensor& other) { *this = other; }

HostTensor& HostTensor::operator=(const HostTensor& other) {
  if (this == &other) return *this;
  shape_ = other.shape_;
  payload_bytes_ = other.payload_bytes_;
  poison_byte_ = other.poison_byte_;
  view_ = other.view_;
  if (other.storage_.empty()) {  // default-constructed or moved from
    storage_.clear();
    offset_ = 0;
    view_.data = nullptr;
    return *this;
  }
  std::ptrdiff_t view_offset = static_cast<const uint8_t*>(other.view_.data) - other.payload();
  if (view_offset < 0 || view_offset > payload_bytes_) view_offset = 0;  // a view outside its storage
  allocate();
  std::memcpy(payload() - kGuard, other.payload() - kGuard, static_cast<size_t>(payload_bytes_ + 2 * kGuard));
  view_.data = payload() + view_offset;
  return *this;
}

// The vector's buffer moves with it, so the view (and offset_) stay valid; the source is left
// empty rather than pointing into storage it no longer owns.
HostTensor::HostTensor(HostTensor&& other) noexcept { *this = std::move(other); }

HostTensor& HostTensor::operator=(HostTensor&& other) noexcept {
  if (this == &other) return *this;
  shape_ = std::move(other.shape_);
  storage_ = std::move(other.storage_);
  payload_bytes_ = other.payload_bytes_;
  offset_ = other.offset_;
  poison_byte_ = other.poison_byte_;
  view_ = other.view_;
  other.shape_.clear();
  other.storage_.clear();
  other.payload_bytes_ = 0;
  other.offset_ = 0;
  other.view_ = TensorView{};
  return *this;
}

void HostTensor::poison() { std::memset(payload(), poison_byte_, static_cast<size_t>(payload_bytes_)); }

bool HostTensor::guards_intact() const {
  const uint8_t* p = payload();
  for (int64_t i = 1; i <= kGuard; ++i)
    if (p[-i] != kGuardByte || p[payload_bytes_ + i - 1] != kGuardByte) return false;
  return true;
}

bool HostTensor::padding_intact() const {
  // Mark every element position, then every unmarked nibble must still hold the poison's.
  const int bits = dtype_bits(view_.dtype);
  std::vector<uint8_t> used(static_cast<size_t>(payload_bytes_ * 2), 0);  // per nibble
  const int64_t n = numel();
  std::vector<int64_t> idx(shape_.size());
  for (int64_t i = 0; i < n; ++i) {
    unflatten(shape_, i, idx.data());
    int64_t off = 0;
    for (size_t d = 0; d < shape_.size(); ++d) off += idx[d] * view_.stride[d];
    const int64_t nib0 = off * bits / 4, nibs = bits / 4;
    for (int64_t k = 0; k < nibs; ++k) used[static_cast<size_t>(nib0 + k)] = 1;
  }
  const uint8_t* p = payload();
  for (int64_t b = 0; b < payload_bytes_; ++b) {
    if (!used[2 * b] && (p[b] & kLowNibble) != (poison_byte_ & kLowNibble)) return false;
    if (!used[2 * b + 1] && (p[b] & kHighNibble) != (poison_byte_ & kHighNibble)) return false;
  }
  return true;
}

double HostTensor::get(std::initializer_list<int64_t> idx) const { return ref::load(view_, idx.begin()); }
void HostTensor::set(std::initializer_list<int64_t> idx, double v) { ref::store(view_, idx.begin(), v); }

double HostTensor::get_flat(int64_t i) const {
  int64_t idx[kMaxDims];
  unflatten(shape_, i, idx);
  return ref::load(view_, idx);
}
void HostTensor::set_flat(int64_t i, double v) {
  int64_t idx[kMaxDims];
  unflatten(shape_, i, idx);
  ref::store(view_, idx, v);
}
uint64_t HostTensor::bits_flat(int64_t i) const {
  int64_t idx[kMaxDims];
  unflatten(shape_, i, idx);
  return ref::load_bits(view_, idx);
}
void HostTensor::set_bits_flat(int64_t i, uint64_t bits) {
  int64_t idx[kMaxDims];
  unflatten(shape_, i, idx);
  ref::store_bits(view_, idx, bits);
}
void HostTensor::copy_from(const HostTensor& other) {
  const int64_t n = numel();
  for (int64_t i = 0; i < n; ++i) set_flat(i, other.get_flat(i));
}

namespace {
uint64_t splitmix(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

Rng::Rng(uint64_t seed) : seed_(seed) {
  uint64_t x = seed;
  for (auto& s : s_) s = splitmix(x);
}

uint64_t Rng::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform(double lo, double hi) { return lo + (hi - lo) * (static_cast<double>(next() >> 11) * 0x1.0p-53); }

double Rng::normal(double mean, double stddev) {
  double u1 = uniform();
  while (u1 <= 0.0) u1 = uniform();
  const double u2 = uniform();
  return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

int64_t Rng::randint(int64_t lo, int64_t hi) {
  const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  return lo + static_cast<int64_t>(span == 0 ? next() : next() % span);
}

uint64_t fresh_seed() {
  if (const char* env = std::getenv("TEJAS_SEED"); env && *env) return std::strtoull(env, nullptr, 0);
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
         static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

std::string seed_note(uint64_t seed) {
  return "seed " + std::to_string(seed) + " (rerun with TEJAS_SEED=" + std::to_string(seed) + ")";
}

void fill_normal(HostTensor& t, Rng& rng, double mean, double stddev) {
  for (int64_t i = 0, n = t.numel(); i < n; ++i) t.set_flat(i, rng.normal(mean, stddev));
}
void fill_uniform(HostTensor& t, Rng& rng, double lo, double hi) {
  for (int64_t i = 0, n = t.numel(); i < n; ++i) t.set_flat(i, rng.uniform(lo, hi));
}
void fill_randint(HostTensor& t, Rng& rng, int64_t lo, int64_t hi) {
  for (int64_t i = 0, n = t.numel(); i < n; ++i) t.set_flat(i, static_cast<double>(rng.randint(lo, hi)));
}

int64_t ulp_distance(DType t, uint64_t a, uint64_t b) {
  const double da = ref::decode(t, a), db = ref::decode(t, b);
  if (std::isnan(da) || std::isnan(db)) return std::numeric_limits<int64_t>::max();
  if (da == db) return 0;
  const int bits = dtype_bits(t);
  const uint64_t top = uint64_t{1} << (bits - 1);
  // Each code's position on a monotone integer line of the dtype's values.
  auto ordinal = [&](uint64_t v) -> __int128 {
    switch (t) {
      case DType::ue8m0:  // 2^(code - 127): the code itself orders the values
      case DType::u8:
        return static_cast<__int128>(v);
      case DType::i8:
      case DType::i32:
      case DType::i64:  // two's complement: sign-extend
        return (v & top) ? static_cast<__int128>(v) - (static_cast<__int128>(top) << 1) : static_cast<__int128>(v);
      default: {  // sign-magnitude floats
        const uint64_t mag = v & (top - 1);
        return (v & top) ? -static_cast<__int128>(mag) : static_cast<__int128>(mag);
      }
    }
  };
  const __int128 d = ordinal(a) - ordinal(b), ad = d < 0 ? -d : d;
  constexpr auto kMax = std::numeric_limits<int64_t>::max();
  return ad > kMax ? kMax : static_cast<int64_t>(ad);
}

std::string index_string(const std::vector<int64_t>& shape, int64_t flat) {
  int64_t idx[kMaxDims] = {};
  unflatten(shape, flat, idx);
  std::ostringstream os;
  os << "[";
  for (size_t d = 0; d < shape.size(); ++d) os << (d ? ", " : "") << idx[d];
  os << "]";
  return os.str();
}

namespace {
// tol == nullptr: codes (bitwise), with tie_lo / tie_hi (when given) as allowed alternatives.
CompareResult compare_impl(const HostTensor& got, const HostTensor& want, const Tolerance* tol,
                           const std::vector<uint64_t>* tie_lo = nullptr, const std::vector<uint64_t>* tie_hi = nullptr,
                           const std::function<bool(int64_t)>* close = nullptr) {
  CompareResult r;
  if (got.shape() != want.shape()) {
    r.ok = false;
    r.message = "shape mismatch";
    return r;
  }
  const int64_t n = got.numel();
  if (tie_lo && (static_cast<int64_t>(tie_lo->size()) != n || static_cast<int64_t>(tie_hi->size()) != n)) {
    r.ok = false;
    r.message = "tie codes: " + std::to_string(tie_lo->size()) + " for " + std::to_string(n) + " elements";
    return r;
  }
  for (int64_t i = 0; i < n; ++i) {
    ++r.checked;
    const double g = got.get_flat(i), w = want.get_flat(i);
    bool good;
    if (!tol && !close) {
      const uint64_t bits = got.bits_flat(i);
      good = bits == want.bits_flat(i);
      if (!good && tie_lo && !std::isnan(g) && !std::isnan(w) &&
          (bits == (*tie_lo)[static_cast<size_t>(i)] || bits == (*tie_hi)[static_cast<size_t>(i)])) {
        good = true;
        ++r.ties;
      }
      if (!std::isnan(g) && !std::isnan(w)) {
        r.max_abs_err = std::max(r.max_abs_err, std::fabs(g - w));
        r.max_ulps = std::max(r.max_ulps, ulp_distance(got.dtype(), bits, want.bits_flat(i)));
      }
    } else if (std::isnan(w) || std::isnan(g)) {
      good = std::isnan(w) && std::isnan(g);
    } else if (std::isinf(w) || std::isinf(g)) {
      good = g == w;
    } else {
      const double err = std::fabs(g - w);
      if (close) {
        good = (*close)(i);
      } else {
        good = err <= tol->abs + tol->rel * std::fabs(w);
        if (!good && tol->ulps >= 0 && got.dtype() == want.dtype())
          good = ulp_distance(got.dtype(), got.bits_flat(i), want.bits_flat(i)) <= tol->ulps;
      }
      r.max_abs_err = std::max(r.max_abs_err, err);
      if (w != 0) r.max_rel_err = std::max(r.max_rel_err, err / std::fabs(w));
      if (got.dtype() == want.dtype())
        r.max_ulps = std::max(r.max_ulps, ulp_distance(got.dtype(), got.bits_flat(i), want.bits_flat(i)));
    }
    if (!good) {
      if (r.mismatches == 0) {
        r.first_bad = i;
        r.got_at_first = g;
        r.want_at_first = w;
      }
      ++r.mismatches;
    }
  }
  r.ok = r.mismatches == 0;
  if (n == 0) {
    r.message = "no elements";
    return r;
  }
  std::ostringstream os;
  if (!r.ok) {
    os << r.mismatches << " of " << r.checked << " mismatch; first at " << index_string(got.shape(), r.first_bad)
       << ": got " << r.got_at_first << " want " << r.want_at_first << "; ";
  } else {
    os << r.checked << " match; ";
  }
  os << "max abs err " << r.max_abs_err << ", max rel err " << r.max_rel_err << ", max ulps " << r.max_ulps;
  if (tie_lo) os << ", " << r.ties << " at rounding ties";
  r.message = os.str();
  return r;
}
}  // namespace

CompareResult compare(const HostTensor& got, const HostTensor& want, const Tolerance& tol) {
  return compare_impl(got, want, &tol);
}
CompareResult compare_with(const HostTensor& got, const HostTensor& want, const std::function<bool(int64_t)>& close) {
  return compare_impl(got, want, nullptr, nullptr, nullptr, &close);
}
CompareResult compare_exact(const HostTensor& got, const HostTensor& want) { return compare_impl(got, want, nullptr); }
CompareResult compare_codes(const HostTensor& got, const HostTensor& want, const std::vector<uint64_t>& tie_lo,
                            const std::vector<uint64_t>& tie_hi) {
  return compare_impl(got, want, nullptr, &tie_lo, &tie_hi);
}

}  // namespace tejas::check
