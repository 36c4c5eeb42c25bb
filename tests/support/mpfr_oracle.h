// MPFR oracle for the formats core: the expected bit pattern and flags of a conversion or an
// arithmetic operation, computed with MPFR and the naive codec, independently of
// formats/rounding.cpp (no numfid rounding, encoding or special-value code is called).
//
// Method (CORE-MATH's use of MPFR): precision p of the target, exponent range
// emin = e_min - p + 2, emax = e_max + 1 (MPFR's exponents are one above IEEE's), the
// operation in the requested direction, mpfr_subnormalize; then the target's non-finite
// rules, written from the specs and the documentation in formats/rounding.h and value.h.
#pragma once

#include <span>
#include <string>

#include "formats/arith.h"
#include "formats/format_spec.h"
#include "formats/rounding.h"
#include "formats/value.h"

namespace numfid::test {

/// The outcome of rounding with MPFR, before the overflow mode, FTZ and the target's
/// non-finite rules are applied (so that one MPFR computation serves every variant).
struct Rounded {
  enum class Kind : std::uint8_t {
    finite,    ///< `value` is the rounded finite value (a signed zero included)
    overflow,  ///< a finite exact value whose rounding exceeds the largest finite value
    infinity,  ///< an exact infinity (an infinite operand, or division by zero)
    nan,       ///< NaN
  };
  Kind kind = Kind::finite;
  bool negative = false;       ///< sign of the exact result (of the rounded zero for zeros)
  bool exact_nonzero = false;  ///< the exact result is non-zero (it may round to zero)
  double value = 0;            ///< the rounded value (finite kind)
  bool inexact = false;        ///< the rounded value differs from the exact one
  bool tiny = false;           ///< 0 < |exact| < min normal (tininess before rounding)
  bool invalid = false;        ///< an IEEE invalid operation (not a propagated NaN)
  bool div_by_zero = false;    ///< exact infinity from finite operands (MPFR's divby0 flag)
};

/// Rounds an exact value (a double: every source value numfid has is one) into `to` with
/// rounding mode `r` (not stochastic). NaN and ±inf sources are allowed.
Rounded oracle_round_value(const FormatSpec& to, double x, Rounding r);

/// Rounds (-1)^negative * (significand + f) * 2^exponent, f = 0, or 0 < f < 1 when sticky
/// (the Unrounded of rounding.h; a sticky value is represented exactly by
/// (2 * significand + 1) * 2^(exponent - 1), which rounds like every value of the interval
/// when the significand has at least p + 2 bits).
Rounded oracle_round_scaled(const FormatSpec& to, bool negative, uint128 significand, int exponent, bool sticky,
                            Rounding r);

/// The correctly rounded result of `op` on values of format `f` (operands given as doubles
/// that `f` represents, NaN/inf allowed).
Rounded oracle_round_arith(ArithOp op, const FormatSpec& f, std::span<const double> operands, Rounding r);

/// x + y correctly rounded into `to`, for operands of other formats (not necessarily in `to`'s
/// exponent range: e5m2 + e4m3 into e4m3, fp32 + bf16 into bf16): the sum rounded at `to`'s
/// precision in MPFR's default range, then mpfr_check_range and mpfr_subnormalize, as for a
/// conversion.
Rounded oracle_round_sum(const FormatSpec& to, double x, double y, Rounding r);

/// Applies the overflow mode, FTZ and the target's rules to an MPFR outcome and encodes it
/// with the naive encoder. Rules (formats/rounding.h, value.h):
///  - overflow: ieee -> ±inf; ±max for the directed modes toward zero; formats without inf
///    give NaN (OCP OFP8 non-saturating), formats with neither (FP6/FP4) ±max; saturate ->
///    ±max. An exact infinity becomes ±inf / NaN / ±max the same way (saturate: ±max).
///  - NaN -> the format's NaN; formats without NaN: +max (value.h canonical_nan); integers 0.
///  - FNUZ formats have no -0: -0 -> +0. E8M0 (no sign, no zero): zero and values below
///    2^-127 -> 0x00 = 2^-127 (underflow), negative non-zero values -> NaN 0xFF (invalid).
///  - integers: round to integer, out of range -> the nearest bound, NaN -> 0 (invalid).
///  - FTZ flushes subnormal results (after rounding) to signed zero (underflow, inexact).
Result oracle_finish(const FormatSpec& to, const Rounded& rd, const RoundOptions& o);

/// oracle_finish(to, oracle_round_value(to, x, o.rounding), o).
Result oracle_convert_value(const FormatSpec& to, double x, const RoundOptions& o);

/// Converts a pattern of `from` (decoded naively; DAZ reads subnormals as signed zeros).
Result oracle_convert(const FormatSpec& from, const FormatSpec& to, Bits x, const RoundOptions& o);

/// `op` on patterns of `f` (decoded naively, DAZ applied), rounded and finished.
Result oracle_arith(ArithOp op, const FormatSpec& f, std::span<const Bits> operands, const RoundOptions& o);

/// Reads a pattern as the exact operand the oracle uses: naive_decode, then DAZ.
double oracle_operand(const FormatSpec& f, Bits x, bool daz);

/// Which flags a test compares. invalid and div_by_zero always; overflow, underflow and
/// inexact only when the exact result is finite (Kind finite/overflow) in a float format:
/// what an exact infinity or a NaN raises beyond invalid is not specified anywhere.
Status checked_flags(const FormatSpec& to, const Rounded& rd);

/// NaN-equivalence policies: the library's (formats/value.h). `any_nan`: both results are
/// NaN, payload and sign not compared (IEEE 754 §6.3 leaves the sign of a NaN result
/// unspecified: arithmetic). `same_sign`: both NaN and, where the format encodes a NaN sign,
/// the signs agree (conversions: formats/convert.h documents that the sign is kept). same_bits
/// below reads it through its own decoder, independent of the library's equivalent_bits.
using NanPolicy = numfid::NanPolicy;

/// True if `actual` is the expected pattern (bitwise, or NaN-equivalent under `policy`).
bool same_bits(const FormatSpec& f, Bits expected, Bits actual, NanPolicy policy);

/// Names of the flags set in `s`, e.g. "invalid|inexact" ("ok" if none).
std::string flag_names(Status s);

/// Self-check hook: what MPFR itself gives when rounding `x` to precision `p` with RNDN in
/// the default exponent range (rounding_test pins MPFR's precision-1 tie behaviour, which
/// the E8M0 oracle relies on).
double mpfr_round_to_precision(double x, int p);

}  // namespace numfid::test
