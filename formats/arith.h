// Correctly rounded add, sub, mul, div, fma and sqrt in any float format and every rounding
// mode, computed exactly with integer arithmetic and rounded once (a wider float would
// double-round). IEEE 754-2019 §5.4 and §6 for the special cases.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "formats/rounding.h"

namespace numfid {

/// Arithmetic operations of `numfid arith`.
enum class ArithOp : std::uint8_t { add, sub, mul, div, fma, sqrt };

/// a + b
Result add(const FormatSpec& f, Bits a, Bits b, const RoundOptions& o = {});
/// x + y for x a pattern of `fx` and y one of `fy`, correctly rounded into `to` in one step (an
/// epilogue adding an fp32 addend to a bf16 result). NaN, ±inf and signed zeros as add().
Result add_mixed(const FormatSpec& to, const FormatSpec& fx, Bits x, const FormatSpec& fy, Bits y,
                 const RoundOptions& o = {});
/// a - b
Result sub(const FormatSpec& f, Bits a, Bits b, const RoundOptions& o = {});
/// a * b
Result mul(const FormatSpec& f, Bits a, Bits b, const RoundOptions& o = {});
/// a / b
Result div(const FormatSpec& f, Bits a, Bits b, const RoundOptions& o = {});
/// a * b + c with a single rounding
Result fma(const FormatSpec& f, Bits a, Bits b, Bits c, const RoundOptions& o = {});
/// sqrt(a)
Result sqrt(const FormatSpec& f, Bits a, const RoundOptions& o = {});

/// The exact sum of two exact finite values (significands of at most 60 bits each), as an
/// Unrounded ready for round_to(): exact when the two overlap, otherwise with the smaller folded
/// into a sticky bit while keeping 70+ significant bits. An exact zero sum has sign +0; callers
/// apply IEEE 754 §6.3 (exact_zero_sum_sign) themselves.
Unrounded exact_add(const Unrounded& a, const Unrounded& b);

/// Sign of an exact zero sum x + y (IEEE 754 §6.3): the common sign if both are zeros of the
/// same sign, otherwise +0, or -0 when rounding toward negative.
bool exact_zero_sum_sign(bool x_negative, bool y_negative, bool both_zero, Rounding r);

/// Number of operands of an operation (sqrt 1, fma 3, others 2).
int arity(ArithOp op);
/// Parses "add", "sub", "mul", "div", "fma", "sqrt".
std::optional<ArithOp> parse_arith_op(std::string_view s);
/// Name of an operation.
std::string_view arith_op_name(ArithOp op);
/// Applies `op` to `operands` (exactly arity(op) of them).
Result apply(ArithOp op, const FormatSpec& f, std::span<const Bits> operands, const RoundOptions& o = {});

}  // namespace numfid
