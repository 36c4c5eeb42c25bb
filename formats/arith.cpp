// Exact integer arithmetic on decoded significands, then one call to round_to().
#include "formats/arith.h"

#include <bit>
#include <cmath>

#include "formats/convert.h"

namespace numfid {

using u128 = uint128;

namespace {


/// An operand: its class after DAZ, and its exact value.
struct Operand {
  FpClass cls;
  Unrounded v;
};

Operand operand(const FormatSpec& f, Bits x, const RoundOptions& o) {
  Decoded d = decode(f, x);
  if (o.daz && d.cls == FpClass::subnormal) d.cls = FpClass::zero;
  return {d.cls, {d.negative, d.cls == FpClass::zero ? 0 : d.significand, d.exponent, false}};
}

bool is_zero(const Operand& x) { return x.cls == FpClass::zero; }
bool is_inf(const Operand& x) { return x.cls == FpClass::infinite; }
bool is_nan(const Operand& x) { return x.cls == FpClass::nan; }

Result nan_result(const FormatSpec& f, bool invalid) { return round_nan(f, false, invalid); }

Result inf_result(const FormatSpec& f, bool negative, const RoundOptions& o, Status extra = status_ok) {
  Result r = round_infinity(f, negative, o);
  r.status |= extra;
  return r;
}

/// Exact sum of two non-zero terms whose significands have at most 60 bits. The term with
/// the higher leading bit is placed with its leading bit at position 125; the other is
/// aligned to it, its bits below the window folded into a sticky bit. When a sticky bit is
/// set, the result keeps more than 70 significant bits, so rounding it is exact.
Unrounded exact_sum(Unrounded a, Unrounded b) {
  if (a.significand == 0) return b;
  if (b.significand == 0) return a;
  if (a.exponent + bit_length(a.significand) < b.exponent + bit_length(b.significand)) std::swap(a, b);
  const int sa = 125 - (bit_length(a.significand) - 1);
  const u128 A = a.significand << sa;
  const int ea = a.exponent - sa;
  const int shift = b.exponent - ea;
  u128 B;
  bool sticky = false;
  if (shift >= 0) {
    B = b.significand << shift;  // b's leading bit is at or below a's: fits
  } else if (-shift >= 128) {
    B = 0;
    sticky = true;
  } else {
    B = b.significand >> -shift;
    sticky = (b.significand & ((u128{1} << -shift) - 1)) != 0;
  }
  if (a.negative == b.negative) return {a.negative, A + B, ea, sticky};
  // b = B + t with 0 < t < 1 (in units of 2^ea) when sticky: A - b = (A - B - 1) + (1 - t).
  if (sticky) return {a.negative, A - B - 1, ea, true};
  if (A >= B) return {a.negative, A - B, ea, false};
  return {b.negative, B - A, ea, false};
}

bool zero_sum_sign(bool x_negative, bool y_negative, bool both_zero, const RoundOptions& o) {
  return exact_zero_sum_sign(x_negative, y_negative, both_zero, o.rounding);
}

Result add_operands(const FormatSpec& f, const Operand& x, const Operand& y, const RoundOptions& o) {
  if (is_nan(x) || is_nan(y)) return nan_result(f, false);
  if (is_inf(x) || is_inf(y)) {
    if (is_inf(x) && is_inf(y) && x.v.negative != y.v.negative) return nan_result(f, true);
    return inf_result(f, is_inf(x) ? x.v.negative : y.v.negative, o);
  }
  if (is_zero(x) && is_zero(y)) return round_to(f, {zero_sum_sign(x.v.negative, y.v.negative, true, o), 0, 0, false}, o);
  if (is_zero(x)) return round_to(f, y.v, o);
  if (is_zero(y)) return round_to(f, x.v, o);
  Unrounded s = exact_sum(x.v, y.v);
  if (s.significand == 0 && !s.sticky) s.negative = zero_sum_sign(x.v.negative, y.v.negative, false, o);
  return round_to(f, s, o);
}

u128 isqrt(u128 n) {
  auto r = static_cast<u128>(std::sqrt(static_cast<long double>(n)));
  while (r * r > n) --r;
  while ((r + 1) * (r + 1) <= n) ++r;
  return r;
}

bool require_float(const FormatSpec& f) { return f.kind == FormatKind::binary_float; }

}  // namespace

Unrounded exact_add(const Unrounded& a, const Unrounded& b) { return exact_sum(a, b); }

bool exact_zero_sum_sign(bool x_negative, bool y_negative, bool both_zero, Rounding r) {
  if (both_zero && x_negative == y_negative) return x_negative;
  return r == Rounding::rdn;
}

Result add(const FormatSpec& f, Bits a, Bits b, const RoundOptions& o) {
  if (!require_float(f)) return {Bits{0}, status_invalid};
  return add_operands(f, operand(f, a, o), operand(f, b, o), o);
}

Result add_mixed(const FormatSpec& to, const FormatSpec& fx, Bits x, const FormatSpec& fy, Bits y,
                 const RoundOptions& o) {
  if (!require_float(to) || !require_float(fx) || !require_float(fy)) return {Bits{0}, status_invalid};
  return add_operands(to, operand(fx, x, o), operand(fy, y, o), o);
}

Result sub(const FormatSpec& f, Bits a, Bits b, const RoundOptions& o) {
  if (!require_float(f)) return {Bits{0}, status_invalid};
  Operand y = operand(f, b, o);
  if (!is_nan(y)) y.v.negative = !y.v.negative;
  return add_operands(f, operand(f, a, o), y, o);
}

Result mul(const FormatSpec& f, Bits a, Bits b, const RoundOptions& o) {
  if (!require_float(f)) return {Bits{0}, status_invalid};
  const Operand x = operand(f, a, o);
  const Operand y = operand(f, b, o);
  const bool neg = x.v.negative != y.v.negative;
  if (is_nan(x) || is_nan(y)) return nan_result(f, false);
  if (is_inf(x) || is_inf(y)) {
    if (is_zero(x) || is_zero(y)) return nan_result(f, true);
    return inf_result(f, neg, o);
  }
  return round_to(f, {neg, x.v.significand * y.v.significand, x.v.exponent + y.v.exponent, false}, o);
}

Result div(const FormatSpec& f, Bits a, Bits b, const RoundOptions& o) {
  if (!require_float(f)) return {Bits{0}, status_invalid};
  const Operand x = operand(f, a, o);
  const Operand y = operand(f, b, o);
  const bool neg = x.v.negative != y.v.negative;
  if (is_nan(x) || is_nan(y)) return nan_result(f, false);
  if (is_inf(x)) return is_inf(y) ? nan_result(f, true) : inf_result(f, neg, o);
  if (is_inf(y)) return round_to(f, {neg, 0, 0, false}, o);
  if (is_zero(y)) return is_zero(x) ? nan_result(f, true) : inf_result(f, neg, o, status_div_by_zero);
  if (is_zero(x)) return round_to(f, {neg, 0, 0, false}, o);
  // Significands have at most 24 bits: shifting by 100 leaves a quotient of 77+ bits, and the
  // remainder only says whether the tail is non-zero.
  constexpr int k = 100;
  const u128 n = x.v.significand << k;
  const u128 q = n / y.v.significand;
  const bool sticky = n % y.v.significand != 0;
  return round_to(f, {neg, q, x.v.exponent - y.v.exponent - k, sticky}, o);
}

Result fma(const FormatSpec& f, Bits a, Bits b, Bits c, const RoundOptions& o) {
  if (!require_float(f)) return {Bits{0}, status_invalid};
  const Operand x = operand(f, a, o);
  const Operand y = operand(f, b, o);
  const Operand z = operand(f, c, o);
  const bool pneg = x.v.negative != y.v.negative;
  if (is_nan(x) || is_nan(y) || is_nan(z)) {
    // IEEE 754 §7.2(c) leaves inf*0 + qNaN to the implementation; it is invalid here too.
    const bool invalid = (is_inf(x) && is_zero(y)) || (is_zero(x) && is_inf(y));
    return nan_result(f, invalid);
  }
  if (is_inf(x) || is_inf(y)) {
    if (is_zero(x) || is_zero(y)) return nan_result(f, true);
    if (is_inf(z) && z.v.negative != pneg) return nan_result(f, true);
    return inf_result(f, pneg, o);
  }
  if (is_inf(z)) return inf_result(f, z.v.negative, o);
  Operand p{FpClass::normal, {pneg, x.v.significand * y.v.significand, x.v.exponent + y.v.exponent, false}};
  if (is_zero(x) || is_zero(y)) p = {FpClass::zero, {pneg, 0, 0, false}};
  return add_operands(f, p, z, o);
}

Result sqrt(const FormatSpec& f, Bits a, const RoundOptions& o) {
  if (!require_float(f)) return {Bits{0}, status_invalid};
  const Operand x = operand(f, a, o);
  if (is_nan(x)) return nan_result(f, false);
  if (is_zero(x)) return round_to(f, {x.v.negative, 0, 0, false}, o);
  if (x.v.negative) return nan_result(f, true);
  if (is_inf(x)) return inf_result(f, false, o);
  // sqrt(m * 2^e) = sqrt(m * 2^s) * 2^((e - s)/2) with e - s even and m * 2^s about 2^120:
  // the integer root has 60 bits, and a non-zero remainder marks the tail.
  int s = 120 - bit_length(x.v.significand);
  if (((x.v.exponent - s) & 1) != 0) ++s;
  const u128 n = x.v.significand << s;
  const u128 r = isqrt(n);
  return round_to(f, {false, r, (x.v.exponent - s) / 2, r * r != n}, o);
}

int arity(ArithOp op) {
  switch (op) {
    case ArithOp::sqrt: return 1;
    case ArithOp::fma: return 3;
    default: return 2;
  }
}

std::optional<ArithOp> parse_arith_op(std::string_view s) {
  if (s == "add") return ArithOp::add;
  if (s == "sub") return ArithOp::sub;
  if (s == "mul") return ArithOp::mul;
  if (s == "div") return ArithOp::div;
  if (s == "fma") return ArithOp::fma;
  if (s == "sqrt") return ArithOp::sqrt;
  return std::nullopt;
}

std::string_view arith_op_name(ArithOp op) {
  switch (op) {
    case ArithOp::add: return "add";
    case ArithOp::sub: return "sub";
    case ArithOp::mul: return "mul";
    case ArithOp::div: return "div";
    case ArithOp::fma: return "fma";
    case ArithOp::sqrt: return "sqrt";
  }
  return "?";
}

Result apply(ArithOp op, const FormatSpec& f, std::span<const Bits> x, const RoundOptions& o) {
  switch (op) {
    case ArithOp::add: return add(f, x[0], x[1], o);
    case ArithOp::sub: return sub(f, x[0], x[1], o);
    case ArithOp::mul: return mul(f, x[0], x[1], o);
    case ArithOp::div: return div(f, x[0], x[1], o);
    case ArithOp::fma: return fma(f, x[0], x[1], x[2], o);
    case ArithOp::sqrt: return sqrt(f, x[0], o);
  }
  return {Bits{0}, status_invalid};
}

}  // namespace numfid
