// The one rule for the format operands are cast to before multiplying: a claim's --cast
// (tolerances/claim_text.cpp) and a profile's input_cast.format (numerics/profile.cpp).
#pragma once

#include <string_view>

#include "formats/format_spec.h"

namespace numfid {

/// Why operands cannot be cast to `f` before multiplying, or empty when they can. A float
/// format without a sign (E8M0, a scale format) holds no 0 and no negative operand.
constexpr std::string_view operand_cast_problem(const FormatSpec& f) {
  return is_float(f) && !can_accumulate(f) ? "not a signed float format (operands are signed and may be 0)" : "";
}

}  // namespace numfid
