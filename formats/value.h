// Values are bits: the strong type `Bits`, its decoding into sign/significand/exponent
// through a FormatSpec, and the status flags every operation returns.
#pragma once

#include <cstdint>
#include <string>

#include "formats/format_spec.h"

namespace numfid {

/// A stored value: the raw bit pattern, right-aligned (an fp8 uses the low 8 bits).
/// A strong type (as SoftFloat's float16_t) so that native arithmetic on it does not compile.
struct Bits {
  std::uint32_t raw = 0;
  constexpr Bits() = default;
  constexpr explicit Bits(std::uint32_t r) : raw(r) {}
  friend constexpr bool operator==(Bits, Bits) = default;
};

/// IEEE 754 exception flags, returned as a bitmask (no global flag state).
enum Status : std::uint8_t {
  status_ok = 0,
  status_invalid = 1,
  status_div_by_zero = 2,
  status_overflow = 4,
  status_underflow = 8,
  status_inexact = 16,
};
constexpr Status operator|(Status a, Status b) { return static_cast<Status>(+a | +b); }
constexpr Status& operator|=(Status& a, Status b) { return a = a | b; }

/// A value together with the flags raised computing it.
struct Result {
  Bits bits;
  Status status = status_ok;
  friend constexpr bool operator==(const Result&, const Result&) = default;
};

/// IEEE-style class of a value.
enum class FpClass : std::uint8_t { zero, subnormal, normal, infinite, nan };

/// A value decoded exactly: (-1)^negative * significand * 2^exponent, for finite values.
/// For normal values the significand has its hidden bit at position precision-1.
/// Integer formats decode to (|v|, 0).
struct Decoded {
  FpClass cls = FpClass::zero;
  bool negative = false;
  std::uint64_t significand = 0;
  int exponent = 0;
};

/// True if `b` has no bits set outside the format's width.
constexpr bool fits(const FormatSpec& f, Bits b) { return (b.raw & ~storage_mask(f)) == 0; }

/// Decodes a bit pattern. The pattern must fit the format (checked by callers at input).
Decoded decode(const FormatSpec& f, Bits b);

/// Classifies a value.
inline FpClass classify(const FormatSpec& f, Bits b) { return decode(f, b).cls; }

/// True if the value is a NaN.
inline bool is_nan(const FormatSpec& f, Bits b) { return classify(f, b) == FpClass::nan; }

/// NaN-equivalence policies: what counts as the same result where both are NaN. `any_nan`:
/// payload and sign not compared — IEEE 754-2019 §6.3 leaves the sign of a NaN an operation
/// produces unspecified (x86 gives 0xffc00000 for an invalid fp32 operation, Arm 0x7fc00000),
/// so arithmetic results, and `--expect bit-exact`'s model, compare so (docs/verdict.md §4.3,
/// §4.4). `same_sign`: where the format encodes a NaN sign, the signs agree (conversions, which
/// keep it: formats/convert.h). The conformance tests' same_bits (tests/support) reads the same
/// policy through its own decoder.
enum class NanPolicy : std::uint8_t { any_nan, same_sign };

/// True if `a` and `b` are the same result under `policy`: the same bits, or both NaN (any
/// payload; the same sign where the policy asks for it and the format encodes one).
bool equivalent_bits(const FormatSpec& f, Bits a, Bits b, NanPolicy policy);

/// The canonical NaN of a format with the given sign (where the encoding has one).
/// Formats without NaN have no canonical NaN: returns their +max finite pattern, which is
/// what conversions and operations produce for an invalid result there (see rounding.h).
Bits canonical_nan(const FormatSpec& f, bool negative = false);

/// ±infinity; for formats without infinity, the pattern an exact infinity becomes under
/// IEEE overflow: NaN, or ±max finite where there is no NaN either.
Bits infinity(const FormatSpec& f, bool negative);

/// ±max finite value.
Bits max_finite_bits(const FormatSpec& f, bool negative);

/// ±0 (+0 where the format has no negative zero; for E8M0, which has no zero, its
/// smallest value 2^-127).
Bits zero(const FormatSpec& f, bool negative);

/// The value as a double: exact for every format numfid has (at most 24-bit significands,
/// exponents within double's range). NaN and ±inf map to their double counterparts.
/// Needs no FpEnvGuard: every result is a normal double (|v| >= 2^-149), which std::ldexp
/// builds exactly whatever the caller's DAZ/FTZ or rounding mode.
double to_double(const FormatSpec& f, Bits b);

/// Number of hex digits used to print a pattern of this format (tf32: 5).
constexpr int hex_digits(const FormatSpec& f) { return (f.bits + 3) / 4; }

/// "0x" followed by the zero-padded hex pattern.
std::string to_hex(const FormatSpec& f, Bits b);

}  // namespace numfid
