// Neighbours, unit in the last place and ulp distance of values of any format, computed on
// bit patterns (the ordering trick of Highway's math tests: for sign-magnitude formats the
// magnitude bits increase with the value).
#pragma once

#include <cstdint>
#include <optional>

#include "formats/value.h"

namespace numfid {

/// The least value of `f` greater than `x` (IEEE 754-2019 §5.3.1 nextUp), as a pattern.
///  - ±0 -> the least positive value (the least subnormal where the format has them);
///  - -(least positive) -> -0 (+0 in formats without -0: FNUZ);
///  - -inf -> -max finite; +inf -> +inf (as IEEE);
///  - +max finite -> +inf where the format has infinity; std::nullopt where it does not
///    (E4M3FN, FNUZ, FP6, FP4, E8M0: there is no greater value and saturating to max
///    would hide that the neighbour does not exist);
///  - NaN -> std::nullopt (NaN has no place in the order);
///  - integers: x + 1, std::nullopt at the largest value.
std::optional<Bits> next_up(const FormatSpec& f, Bits x);

/// The greatest value of `f` less than `x` (IEEE nextDown = -nextUp(-x)): the mirror image
/// of next_up(). ±0 -> -(least positive); +inf -> +max finite; -inf -> -inf; -max finite
/// -> -inf or std::nullopt; E8M0 (no sign, no zero) has nothing below 2^-127: std::nullopt.
std::optional<Bits> next_down(const FormatSpec& f, Bits x);

/// Exponent of ulp(x): the spacing 2^(e - p + 1) of the binade [2^e, 2^(e+1)) holding |x|,
/// with e clamped to emin (so zeros and subnormals have the spacing of the subnormals, the
/// least positive value). This is Goldberg's ulp: at a power of two the gap *below* is half
/// of it. ±inf: the ulp of max finite (the top binade). NaN: std::nullopt.
/// Integer formats: 0 (spacing 1).
std::optional<int> ulp_exponent(const FormatSpec& f, Bits x);

/// ulp(x) as a double (exact: a power of two inside double's normal range, so no caller's
/// DAZ/FTZ or rounding mode can change it); NaN for NaN.
double ulp(const FormatSpec& f, Bits x);

/// Position of `x` in the increasing order of the format's distinct non-NaN values, zero at
/// 0: ±0 are one value (ordinal 0), the least positive value is 1, the greatest negative -1,
/// ±inf follow ±max finite. E8M0 (no zero, no sign) counts from 2^-127 = 0. Integers: the
/// value. NaN: std::nullopt.
std::optional<std::int64_t> ordinal(const FormatSpec& f, Bits x);

/// Number of steps between two values: |ordinal(a) - ordinal(b)|, i.e. how many times
/// next_up() leads from the smaller to the larger. Counts across zero and signs, ±0 as one
/// value, ±inf as one step beyond ±max finite. std::nullopt if either is NaN.
std::optional<std::uint64_t> ulp_distance(const FormatSpec& f, Bits a, Bits b);

}  // namespace numfid
