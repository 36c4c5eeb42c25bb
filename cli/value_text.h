// Values as text for `numfid bits`: exact parsing of decimal and hex-float literals into an
// Unrounded (so that one call to round_to() rounds them correctly, never via strtod -> double,
// which would double-round), and exact printing of a pattern's value as hex float and decimal.
#pragma once

#include <string>
#include <string_view>

#include "formats/rounding.h"

namespace numfid::cli {

/// A parsed literal: a finite value (exact, or with its tail folded into the sticky bit),
/// an infinity or a NaN.
struct ParsedValue {
  enum class Kind { finite, infinite, nan } kind = Kind::finite;
  bool negative = false;
  Unrounded exact;  ///< kind == finite: carries 100+ significant bits when sticky
};

/// Parses [+-] followed by one of: `inf`, `infinity`, `nan` (any case); a decimal literal
/// `D[.D][e[+-]D]` (D: decimal digits, at least one digit in the mantissa); a hex float
/// `0xH[.H]p[+-]D` (the binary exponent is required, as in C's hexadecimal-floating-constant).
/// The decimal is converted exactly (N * 10^E as a quotient of big integers: the top 100+ bits
/// and a sticky bit for the remainder). Throws UsageError with a reason when malformed.
ParsedValue parse_value(std::string_view text);

/// True if `text` is a bit pattern rather than a value: `0x` followed by hex digits only
/// (no sign, no point, no `p` exponent).
bool looks_like_pattern(std::string_view text);

/// Exact value of (-1)^negative * significand * 2^exponent as a normalised hex float:
/// 0x1.8p-9, -0x1p+0, 0x0p+0.
std::string hex_float(bool negative, std::uint64_t significand, int exponent);

/// The same value in decimal, every digit: positional when the decimal exponent of the
/// leading digit is in [-6, 20], otherwise d.ddd...e±XX. Zeros print as 0 / -0.
std::string exact_decimal(bool negative, std::uint64_t significand, int exponent);

/// hex_float() and exact_decimal() of a finite pattern.
std::string hex_float(const FormatSpec& f, Bits b);
std::string exact_decimal(const FormatSpec& f, Bits b);

/// Short name of a value for lines such as `next_up`: hex float and decimal, or inf/nan.
std::string value_text(const FormatSpec& f, Bits b);

}  // namespace numfid::cli
