// Conversion between formats: decode exactly, round once.
#include "formats/convert.h"

#include <cmath>
#include <cstdint>

namespace numfid {

Unrounded exact_value(const FormatSpec& f, Bits x, bool daz) {
  const Decoded d = decode(f, x);
  if (d.cls == FpClass::zero || (daz && d.cls == FpClass::subnormal)) return {d.negative, 0, 0, false};
  return {d.negative, d.significand, d.exponent, false};
}

Result convert(const FormatSpec& from, const FormatSpec& to, Bits x, const RoundOptions& o) {
  const Decoded d = decode(from, x);
  switch (d.cls) {
    case FpClass::nan:
      return round_nan(to, d.negative, false);
    case FpClass::infinite:
      return round_infinity(to, d.negative, o);
    default:
      return round_to(to, exact_value(from, x, o.daz), o);
  }
}

Result convert_double(const FormatSpec& to, double x, const RoundOptions& o) {
  if (std::isnan(x)) return round_nan(to, std::signbit(x), false);
  if (std::isinf(x)) return round_infinity(to, x < 0, o);
  return round_to(to, unrounded_of(x), o);
}

}  // namespace numfid
