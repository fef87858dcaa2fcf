#include "ops/quant/reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/common/ref_numeric.h"

namespace tejas::ref {
namespace {

constexpr int kUe8m0Bias = 127;         // ue8m0 code c means 2^(c - 127)
constexpr int kMinScaleExponent = -127; // ue8m0 code 0: MX exponents clamp here
constexpr int kE4m3Emax = 8;            // floor(log2(448)): OCP emax_elem of e4m3
constexpr int kE2m1Emax = 2;            // floor(log2(6)): OCP emax_elem of e2m1
constexpr double kE2m1Max = 6.0;
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();  // positive: fixes q's NaN code

// Element indices of one row of a [..., K] tensor; the leading dims flatten row-major, so the
// same row number addresses x, q, scales and out alike.
class Row {
 public:
  Row(const TensorView& t, int64_t row) : last_(t.ndim - 1) {
    for (int d = last_ - 1; d >= 0; --d) {
      idx_[d] = row % t.shape[d];
      row /= t.shape[d];
    }
  }
  const int64_t* at(int64_t k) {
    idx_[last_] = k;
    return idx_;
  }

 private:
  int64_t idx_[kMaxDims] = {};
  int last_;
};

int64_t num_rows(const TensorView& t) {
  int64_t n = 1;
  for (int d = 0; d + 1 < t.ndim; ++d) n *= t.shape[d];
  return n;
}

// x's element with +-Inf replaced by +-(largest finite value of x's dtype): Inf saturates.
double load_finite(const TensorView& x, const int64_t* idx) {
  const double v = load(x, idx);
  return std::isinf(v) ? std::copysign(max_finite(x.dtype), v) : v;
}

struct GroupStats {
  double amax = 0;
  bool has_nan = false;
};

GroupStats group_stats(const TensorView& x, Row& row, int64_t k0, int64_t n) {
  GroupStats g;
  for (int64_t k = k0; k < k0 + n; ++k) {
    const double v = load_finite(x, row.at(k));
    if (std::isnan(v)) g.has_nan = true;
    else g.amax = std::max(g.amax, std::fabs(v));
  }
  return g;
}

void fill_codes(const TensorView& q, Row& row, int64_t k0, int64_t n, uint64_t bits) {
  for (int64_t k = k0; k < k0 + n; ++k) store_bits(q, row.at(k), bits);
}

void quantize_group(const TensorView& x, const TensorView& q, Row& xr, Row& qr, int64_t k0, int64_t n,
                    double scale) {
  for (int64_t k = k0; k < k0 + n; ++k) store(q, qr.at(k), load_finite(x, xr.at(k)) / scale);
}

void dequantize_group(const TensorView& q, const TensorView& out, Row& qr, Row& outr, int64_t k0, int64_t n,
                      double scale) {
  for (int64_t k = k0; k < k0 + n; ++k) store(out, outr.at(k), load(q, qr.at(k)) * scale);
}

// Stores the block's scale (per format) and returns the value to divide x by (0: all q = +0).
double store_mx_scale(MxFormat format, const TensorView& scales, const int64_t* sidx, double amax,
                      const TensorView& tensor_scale) {
  if (format == MxFormat::nvfp4) {
    const double ts = at(tensor_scale, 0);
    store(scales, sidx, amax / (kE2m1Max * ts));  // sat_rne_e4m3
    return load(scales, sidx) * ts;
  }
  const int emax = format == MxFormat::mxfp8 ? kE4m3Emax : kE2m1Emax;
  const int e = amax > 0 ? std::max(std::ilogb(amax) - emax, kMinScaleExponent) : kMinScaleExponent;
  store_bits(scales, sidx, static_cast<uint64_t>(e + kUe8m0Bias));
  return std::ldexp(1.0, e);
}

}  // namespace

void quant_fp8_group(const TensorView& x, const TensorView& q, const TensorView& scales, int group_size) {
  const int64_t K = x.shape[x.ndim - 1], groups = K / group_size;
  for (int64_t r = 0, rows = num_rows(x); r < rows; ++r) {
    Row xr(x, r), qr(q, r), sr(scales, r);
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t k0 = g * group_size;
      const GroupStats st = group_stats(x, xr, k0, group_size);
      if (st.has_nan) {
        store(scales, sr.at(g), kNan);
        fill_codes(q, qr, k0, group_size, encode(q.dtype, kNan));
        continue;
      }
      // encode() rounds f32 to nearest and ue8m0 up; q uses the scale as stored.
      store(scales, sr.at(g), std::max(st.amax, kFp8MinAmax) / kE4m3Max);
      quantize_group(x, q, xr, qr, k0, group_size, load(scales, sr.at(g)));
    }
  }
}

void dequant_fp8_group(const TensorView& q, const TensorView& scales, const TensorView& out, int group_size) {
  const int64_t K = q.shape[q.ndim - 1], groups = K / group_size;
  for (int64_t r = 0, rows = num_rows(q); r < rows; ++r) {
    Row qr(q, r), sr(scales, r), outr(out, r);
    for (int64_t g = 0; g < groups; ++g)
      dequantize_group(q, out, qr, outr, g * group_size, group_size, load(scales, sr.at(g)));
  }
}

void quant_mx(MxFormat format, const TensorView& x, const TensorView& q, const TensorView& scales,
              const TensorView& tensor_scale) {
  const int block = mx_block_size(format);
  const int64_t K = x.shape[x.ndim - 1], blocks = K / block;
  for (int64_t r = 0, rows = num_rows(x); r < rows; ++r) {
    Row xr(x, r), qr(q, r), sr(scales, r);
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t k0 = b * block;
      const GroupStats st = group_stats(x, xr, k0, block);
      if (st.has_nan) {
        store(scales, sr.at(b), kNan);
        fill_codes(q, qr, k0, block, encode(q.dtype, kNan));
        continue;
      }
      const double divisor = store_mx_scale(format, scales, sr.at(b), st.amax, tensor_scale);
      if (divisor == 0) fill_codes(q, qr, k0, block, 0);
      else quantize_group(x, q, xr, qr, k0, block, divisor);
    }
  }
}

void dequant_mx(MxFormat format, const TensorView& q, const TensorView& scales, const TensorView& tensor_scale,
                const TensorView& out) {
  const int block = mx_block_size(format);
  const double ts = format == MxFormat::nvfp4 ? at(tensor_scale, 0) : 1.0;
  const int64_t K = q.shape[q.ndim - 1], blocks = K / block;
  for (int64_t r = 0, rows = num_rows(q); r < rows; ++r) {
    Row qr(q, r), sr(scales, r), outr(out, r);
    for (int64_t b = 0; b < blocks; ++b)
      dequantize_group(q, out, qr, outr, b * block, block, load(scales, sr.at(b)) * ts);
  }
}

}  // namespace tejas::ref
