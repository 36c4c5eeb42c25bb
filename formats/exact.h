// The pattern of a double in a format when the format holds it exactly: how in-memory
// containers (float, double arrays holding bf16 or fp8 values) become numfid values.
#pragma once

#include <optional>

#include "formats/value.h"

namespace numfid {

/// The pattern of `v` in `f` if `f` holds it exactly: NaN maps to the canonical NaN (where
/// `f` has one), ±inf to ±inf (where `f` has infinities), -0 to +0 where `f` has no negative
/// zero; otherwise (inexact, out of range, or a non-finite value `f` cannot hold) nullopt.
std::optional<Bits> exactly(const FormatSpec& f, double v);

}  // namespace numfid
