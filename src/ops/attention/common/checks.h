// Validation rules shared by the attention ops that the generic Validator does not offer.
// Messages keep the "<op>: <argument>: expected ..., got ..." form.
#pragma once
#include <utility>
#include <cmath>
#include <sstream>
#include <string>

#include "runtime/validate.h"
#include "tejas/tensor.h"

namespace tejas::attn {

// Shortest round-trip-ish text for a parameter value in a message ("nan", "-inf", "0.125").
inline std::string format_value(double x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

// A double parameter that must be finite and >= 0.
inline void require_finite_nonnegative(detail::Validator& v, double x, const char* name, const char* note) {
  v.require(std::isfinite(x) && x >= 0.0,
            [&] { return std::string(name) + ": expected a finite value >= 0" + note + ", got " + format_value(x); });
}

}  // namespace tejas::attn
