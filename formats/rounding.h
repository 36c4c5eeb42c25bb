// Rounding: modes, overflow and subnormal options, the counter-based random source of
// stochastic rounding, and the one routine that rounds an exact value into any format.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <string_view>

#include "formats/value.h"

namespace numfid {

/// 128-bit unsigned integer (a GCC/Clang extension; `__extension__` keeps -Wpedantic quiet).
__extension__ typedef unsigned __int128 uint128;

/// Number of significant bits of `v` (0 for 0).
constexpr int bit_length(uint128 v) {
  const auto hi = static_cast<std::uint64_t>(v >> 64);
  if (hi != 0) return 128 - std::countl_zero(hi);
  return 64 - std::countl_zero(static_cast<std::uint64_t>(v));
}

/// Rounding modes. `stochastic` rounds away from zero with probability exactly
/// proportional to the distance from the value toward zero's neighbour (see RoundOptions).
enum class Rounding : std::uint8_t { rne, rtz, rup, rdn, rna, stochastic };

/// What happens when a rounded value exceeds the largest finite value.
enum class Overflow : std::uint8_t {
  /// IEEE 754 §7.4: ±inf for rne/rna/stochastic and the directed modes rounding away;
  /// ±max finite for rtz and the directed modes rounding toward zero. Formats without
  /// infinity give NaN instead (the OCP OFP8 non-saturating mode); formats with neither
  /// (FP6/FP4) give ±max finite, as the OCP MX v1.0 §5.3 conversions clamp.
  /// Flags: a finite value that overflows raises overflow|inexact (also when it becomes NaN
  /// in a format without infinity: the operation itself was valid); an exact infinity
  /// (an infinite operand, x/0) that the format cannot hold becomes NaN with invalid, or
  /// ±max with overflow|inexact in FP6/FP4 (round_infinity).
  ieee,
  /// Finite overflow and ±inf become ±max finite; NaN stays NaN (OCP OFP8 saturating mode).
  saturate,
};

/// Options of every rounding step. A plain value: there is no global mode state.
struct RoundOptions {
  Rounding rounding = Rounding::rne;
  Overflow overflow = Overflow::ieee;
  bool ftz = false;  ///< flush subnormal results (after rounding) to ±0
  bool daz = false;  ///< read subnormal inputs as ±0
  /// Stochastic rounding: the random bits for one rounding are words (seed, stream, 0),
  /// (seed, stream, 1), ... of a counter-based generator, so the result depends on these
  /// three numbers only, on every machine. Bulk and CLI conversions use the element index
  /// as the stream.
  std::uint64_t seed = 0;
  std::uint64_t stream = 0;
  /// Stochastic rounding with a finite number of random bits (1..64), as hardware draws them:
  /// away from zero with probability ⌊f·2^R⌋/2^R for the fraction f of the spacing toward zero's
  /// neighbour — the top R discarded bits against R random bits (word (seed, stream, 0)), the
  /// bits below ignored — so biased toward zero by less than 2^-R of the spacing. 0: exact
  /// probability f (as many random bits as the value needs).
  int sr_bits = 0;
};

/// Word `counter` of the random stream (seed, stream): the SplitMix64 finaliser applied to a
/// counter (in the manner of Random123's counter-based generators): stateless, reproducible.
std::uint64_t random_word(std::uint64_t seed, std::uint64_t stream, std::uint64_t counter);

/// An exact real number waiting to be rounded:
///   (-1)^negative * (significand + f) * 2^exponent,  f = 0 if !sticky, 0 < f < 1 if sticky.
/// A sticky value must carry at least precision + 2 significant bits of the target so that
/// the guard and round decisions are exact; every producer in numfid keeps 60 or more.
/// Stochastic rounding of a sticky value resolves the unknown tail with one extra random bit,
/// so its probability can be off by at most 2^-(discarded bits); exact values are exact.
struct Unrounded {
  bool negative = false;
  uint128 significand = 0;
  int exponent = 0;
  bool sticky = false;
};

/// A finite double's exact value (binary64: 1 sign, 11 exponent bits with bias 1023, 52
/// trailing significand bits): ±m·2^e with m the significand as an integer, no sticky bit.
/// The one decoding of a double into an Unrounded (convert_double, exactly, the .npy reader).
Unrounded unrounded_of(double x);

/// Rounds an exact finite value into format `f` (float or integer) in one step.
/// Zero significands give a signed zero (+0 for formats without -0). Handles overflow,
/// subnormals, FTZ, the formats' non-finite rules and integer saturation.
/// Integer targets: NaN -> 0 and out-of-range -> the nearest bound, both flagged invalid
/// (IEEE 754 convertToInteger raises invalid; the saturating result is the one CUDA's
/// cvt.sat and Arm's FCVT* give).
Result round_to(const FormatSpec& f, const Unrounded& v, const RoundOptions& o);

/// The pattern for an exact ±infinity under the options' overflow mode.
Result round_infinity(const FormatSpec& f, bool negative, const RoundOptions& o);

/// The pattern for a NaN result: the canonical NaN, or for formats without NaN the
/// pattern documented at canonical_nan(); flagged invalid when `signal_invalid`.
Result round_nan(const FormatSpec& f, bool negative, bool signal_invalid);

/// Parses "rne", "rtz", "rup", "rdn", "rna", "stochastic" (and the aliases "nearest",
/// "nearest_even", "toward_zero", "up", "down", "nearest_away", "sr").
std::optional<Rounding> parse_rounding(std::string_view s);

/// Canonical name of a rounding mode.
std::string_view rounding_name(Rounding r);

}  // namespace numfid
