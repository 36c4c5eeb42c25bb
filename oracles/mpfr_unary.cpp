// MPFR oracles for elementwise functions (exp, log, tanh, sigmoid, silu, gelu, reciprocal,
// rsqrt): special inputs by table, every other input through the Ziv loop; their names.
#include "oracles/mpfr_oracles.h"

#include <cmath>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "formats/platform.h"
#include "oracles/mpfr_detail.h"

namespace numfid {

namespace detail::mpfr {

namespace {

// ---------------------------------------------------------------------------------------
// Elementwise functions.

ExactValue exact_of(bool negative, std::uint64_t sig, int exponent) {
  return finite_value(Unrounded{negative, sig, exponent, false});
}

/// Special inputs (NaN, ±inf, ±0 where the result is not what the general evaluation gives,
/// and arguments outside the domain).
std::optional<ExactValue> unary_special(UnaryFn fn, const Input& in) {
  if (in.cls == FpClass::nan) return nan_value(false);
  const bool inf = in.cls == FpClass::infinite;
  const bool zero = in.cls == FpClass::zero;
  const bool neg = in.negative;
  switch (fn) {
    case UnaryFn::exp:
      if (inf) return neg ? exact_of(false, 0, 0) : inf_value(false);
      break;
    case UnaryFn::log:
      if (zero) return inf_value(true, status_div_by_zero);
      if (neg) return nan_value(true);
      if (inf) return inf_value(false);
      break;
    case UnaryFn::tanh:
      if (inf) return exact_of(neg, 1, 0);
      if (zero) return exact_of(neg, 0, 0);
      break;
    case UnaryFn::sigmoid:
      if (inf) return neg ? exact_of(false, 0, 0) : exact_of(false, 1, 0);
      break;
    case UnaryFn::silu:
    case UnaryFn::gelu_erf:
    case UnaryFn::gelu_tanh:
      if (inf) return neg ? exact_of(true, 0, 0) : inf_value(false);
      if (zero) return exact_of(neg, 0, 0);
      break;
    case UnaryFn::reciprocal:
      if (zero) return inf_value(neg, status_div_by_zero);
      if (inf) return exact_of(neg, 0, 0);
      break;
    case UnaryFn::rsqrt:
      if (zero) return inf_value(neg, status_div_by_zero);
      if (neg) return nan_value(true);
      if (inf) return exact_of(false, 0, 0);
      break;
  }
  return std::nullopt;
}

/// Encloses fn(x) for a finite x (outside unary_special's cases) at precision p.
Iv unary_enclosure(UnaryFn fn, mpfr_srcptr x, mpfr_prec_t p) {
  const Iv X = point(x, p);
  const Iv one = point_si(1, p);
  switch (fn) {
    case UnaryFn::exp:
      return monotone(mpfr_exp, X, true);
    case UnaryFn::log:
      return monotone(mpfr_log, X, true);
    case UnaryFn::tanh:
      return monotone(mpfr_tanh, X, true);
    case UnaryFn::sigmoid:
      return div(one, add(one, monotone(mpfr_exp, neg(X), true)));
    case UnaryFn::silu:
      return div(X, add(one, monotone(mpfr_exp, neg(X), true)));
    case UnaryFn::gelu_erf: {
      // x/2 (1 + erf(x/√2)) = x/2 erfc(-x/√2): no cancellation for negative x.
      const Iv inv_sqrt2 = monotone(mpfr_rec_sqrt, point_si(2, p), false);
      const Iv e = monotone(mpfr_erfc, mul(neg(X), inv_sqrt2), false);
      Mpfr half(kKeep);
      mpfr_div_2ui(half.get(), x, 1, MPFR_RNDN);  // exact
      return mul(point(half.get(), p), e);
    }
    case UnaryFn::gelu_tanh: {
      // x/2 (1 + tanh(u)) = x / (1 + exp(-2u)), u = √(2/π) (x + 0.044715 x³).
      Mpfr cube(3 * kKeep);
      mpfr_pow_ui(cube.get(), x, 3, MPFR_RNDN);  // exact: <= 3*64 bits
      const Iv k = div(point_si(44715, p), point_si(1000000, p));
      const Iv w = add(X, mul(k, point(cube.get(), p)));
      Iv pi(p);
      free_caches_at_thread_exit();
      mpfr_const_pi(pi.lo.get(), MPFR_RNDD);
      mpfr_const_pi(pi.hi.get(), MPFR_RNDU);
      pi.lo_strict = pi.hi_strict = true;  // π is irrational
      const Iv c = monotone(mpfr_sqrt, div(point_si(2, p), pi), true);
      const Iv u2 = mul(point_si(-2, p), mul(c, w));
      return div(X, add(one, monotone(mpfr_exp, u2, true)));
    }
    case UnaryFn::reciprocal:
      return div(one, X);
    case UnaryFn::rsqrt:
      return monotone(mpfr_rec_sqrt, X, false);
  }
  throw std::logic_error("unary_enclosure: unknown function");
}

ExactValue exact_unary(UnaryFn fn, const FormatSpec& in, Bits xb, bool daz) {
  const Input x = read(in, xb, daz);
  const double ax = std::fabs(input_double(x));
  ExactValue v;
  if (auto s = unary_special(fn, x)) {
    v = *s;
  } else {
    Mpfr xm(kKeep);
    set_input(xm.get(), x);
    v = ziv([&](mpfr_prec_t p) { return unary_enclosure(fn, xm.get(), p); });
  }
  v.abs_sum = ax;
  v.max_abs = ax;
  return v;
}

}  // namespace

}  // namespace detail::mpfr

using namespace detail::mpfr;

std::string_view unary_fn_name(UnaryFn fn) {
  switch (fn) {
    case UnaryFn::exp: return "exp";
    case UnaryFn::log: return "log";
    case UnaryFn::tanh: return "tanh";
    case UnaryFn::sigmoid: return "sigmoid";
    case UnaryFn::silu: return "silu";
    case UnaryFn::gelu_erf: return "gelu_erf";
    case UnaryFn::gelu_tanh: return "gelu_tanh";
    case UnaryFn::reciprocal: return "reciprocal";
    case UnaryFn::rsqrt: return "rsqrt";
  }
  return "?";
}

std::optional<UnaryFn> parse_unary_fn(std::string_view s) {
  for (UnaryFn fn : all_unary_fns)
    if (s == unary_fn_name(fn)) return fn;
  if (s == "gelu") return UnaryFn::gelu_erf;
  if (s == "swish") return UnaryFn::silu;
  if (s == "rcp" || s == "recip") return UnaryFn::reciprocal;
  if (s == "rec_sqrt") return UnaryFn::rsqrt;
  return std::nullopt;
}

OracleValue oracle_unary(UnaryFn fn, const FormatSpec& in, Bits x, const FormatSpec& out, const RoundOptions& o) {
  const FpEnvGuard guard;
  WideExponents wide;
  return rounded(exact_unary(fn, in, x, o.daz), out, o);
}

std::vector<OracleValue> oracle_unary(UnaryFn fn, const FormatSpec& in, std::span<const Bits> x,
                                      const FormatSpec& out, const RoundOptions& o) {
  const FpEnvGuard guard;
  WideExponents wide;
  std::vector<OracleValue> result;
  result.reserve(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    result.push_back(rounded(exact_unary(fn, in, x[i], o.daz), out, element_options(o, i)));
  return result;
}

}  // namespace numfid
