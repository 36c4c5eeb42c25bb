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
  // binary64: 1 sign, 11 exponent bits (bias 1023), 52 trailing significand bits.
  const auto raw = std::bit_cast<std::uint64_t>(v);
  const auto field = static_cast<int>((raw >> 52) & 0x7ff);
  const std::uint64_t m = raw & ((std::uint64_t{1} << 52) - 1);
  Unrounded u;
  u.negative = (raw >> 63) != 0;
  u.significand = field == 0 ? m : m | (std::uint64_t{1} << 52);
  u.exponent = (field == 0 ? 1 : field) - 1075;
  const Result r = round_to(f, u, RoundOptions{});
  if (r.status != status_ok) return std::nullopt;
  if (u.negative && u.significand == 0 && !f.has_sign) return zero(f, false);
  return r.bits;
}

}  // namespace numfid
