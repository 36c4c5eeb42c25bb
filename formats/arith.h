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

/// Number of operands of an operation (sqrt 1, fma 3, others 2).
int arity(ArithOp op);
/// Parses "add", "sub", "mul", "div", "fma", "sqrt".
std::optional<ArithOp> parse_arith_op(std::string_view s);
/// Name of an operation.
std::string_view arith_op_name(ArithOp op);
/// Applies `op` to `operands` (exactly arity(op) of them).
Result apply(ArithOp op, const FormatSpec& f, std::span<const Bits> operands, const RoundOptions& o = {});

}  // namespace numfid
