// Conversion between any two formats, correctly rounded in one step (never through an
// intermediate format, which would double-round).
#pragma once

#include "formats/rounding.h"

namespace numfid {

/// The exact value of a finite pattern as an Unrounded (no sticky). Subnormals read as zero
/// when `daz`. Precondition: the value is finite (not NaN or inf).
Unrounded exact_value(const FormatSpec& f, Bits x, bool daz = false);

/// Converts `x` from format `from` to format `to` under `o` (rounding, overflow, FTZ/DAZ,
/// stochastic seed/stream). NaN stays NaN (sign kept where the target encodes it; payload
/// not kept), ±inf follows round_infinity(), integers saturate (rounding.h).
Result convert(const FormatSpec& from, const FormatSpec& to, Bits x, const RoundOptions& o = {});

/// Converts a binary64 value (numfid has no fp64 format; NumPy's default float is one) to
/// format `to` under `o`, correctly rounded in one step as convert() does (a double carries
/// 53 bits exactly, so no intermediate format and no double rounding). NaN and ±inf as convert().
Result convert_double(const FormatSpec& to, double x, const RoundOptions& o = {});

}  // namespace numfid
