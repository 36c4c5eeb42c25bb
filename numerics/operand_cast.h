// The one rule for the format operands are cast to before multiplying: a claim's --cast
// (tolerances/claim_text.cpp) and a profile's input_cast.format (numerics/profile.cpp).
#pragma once

#include <string_view>

#include "formats/format_spec.h"

namespace numfid {

/// Why operands cannot be cast to `f` before multiplying, or empty when they can. A float
/// format without a sign (E8M0, a scale format) holds no 0 and no negative operand; an integer
/// format's rounding error is not relative (0.01 cast up to 1 is 100 times itself), and the
/// cast's bound is a relative one (docs/verdict.md §2: 2u' + u'² per product).
constexpr std::string_view operand_cast_problem(const FormatSpec& f) {
  if (!is_float(f)) return "not a signed float format (an integer cast's error is not a relative rounding error)";
  return !can_accumulate(f) ? "not a signed float format (operands are signed and may be 0)" : "";
}

}  // namespace numfid
