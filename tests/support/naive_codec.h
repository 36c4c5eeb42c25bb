// A deliberately naive second decoder/encoder of every format, written from the field layout
// of the specs (via the FormatSpec data row) with ldexp/frexp on doubles, so that the test
// oracle never goes through formats/value.cpp or formats/rounding.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "formats/format_spec.h"
#include "formats/value.h"

namespace numfid::test {

/// The value of a pattern as a double (exact for every numfid format): NaN, ±inf and signed
/// zeros included. Reads the fields directly: sign | exponent | trailing significand, with
/// the NaN/inf encodings of the spec (IEEE exponent all ones; OCP E4M3FN S.1111.111; E8M0
/// 0xFF; FNUZ 0x80) and two's complement integers.
double naive_decode(const FormatSpec& f, Bits b);

/// True for a non-zero pattern whose exponent field is 0 in a format with subnormals.
bool naive_is_subnormal(const FormatSpec& f, Bits b);

/// The pattern of a finite value that the format represents exactly (±0 included; -0 maps
/// to +0 in formats without a negative zero). Aborts the test program (a bug in the test)
/// if `v` is not representable. Computed with frexp/ldexp, not through numfid.
Bits naive_encode(const FormatSpec& f, double v);

/// The pattern of `v` if the format represents it exactly (finite values only), else none.
std::optional<Bits> naive_try_encode(const FormatSpec& f, double v);

/// Properties found by scanning patterns with naive_decode (cached per format).
struct NaiveLimits {
  double max_finite;    ///< largest finite value
  double min_normal;    ///< smallest positive normal value (E8M0: 2^-127)
  double min_positive;  ///< smallest positive value
  Bits max_bits;        ///< pattern of +max_finite
};

/// The limits of a float format (not for integer formats).
const NaiveLimits& naive_limits(const FormatSpec& f);

/// The NaN pattern the oracle expects (written from the specs): IEEE quiet NaN (exponent all
/// ones, top trailing bit set), OCP all-ones S.1111.111 / E8M0 0xFF, FNUZ 0x80; for formats
/// without NaN the +max finite pattern (value.h documents this at canonical_nan), for
/// integers 0.
Bits naive_nan(const FormatSpec& f, bool negative);

/// ±infinity (IEEE exponent all ones, trailing zero). Only for formats that have it.
Bits naive_inf(const FormatSpec& f, bool negative);

/// "0x3c00 (1)" — hex bits and the decoded value (%a and %g), for failure messages.
std::string show(const FormatSpec& f, Bits b);

}  // namespace numfid::test
