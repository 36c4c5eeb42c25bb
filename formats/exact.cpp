// exactly(): a double's pattern in a format, by the one rounding routine with an exactness check.
#include "formats/exact.h"

#include <bit>
#include <cmath>
#include <cstdint>

#include "formats/rounding.h"

namespace numfid {

std::optional<Bits> exactly(const FormatSpec& f, double v) {
  if (std::isnan(v)) {
    if (f.nan == NanEncoding::none) return std::nullopt;
    return canonical_nan(f, std::signbit(v));
  }
  if (std::isinf(v)) {
    if (f.non_finite != NonFinite::ieee || (!f.has_sign && v < 0)) return std::nullopt;
    return infinity(f, v < 0);
  }
  const Unrounded u = unrounded_of(v);
  const Result r = round_to(f, u, RoundOptions{});
  if (r.status != status_ok) return std::nullopt;
  if (u.negative && u.significand == 0 && !f.has_sign) return zero(f, false);
  return r.bits;
}

}  // namespace numfid
