// MPFR oracle for conversions and arithmetic (see mpfr_oracle.h for the method and rules).
#include "tests/support/mpfr_oracle.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <gmp.h>
#include <mpfr.h>

#include "tests/support/naive_codec.h"

namespace numfid::test {

namespace {

/// Sets MPFR's exponent range for one computation and restores the previous one afterwards
/// (MPFR keeps it in thread-local state; nothing else in the process may see the change).
class ExponentRange {
 public:
  ExponentRange(mpfr_exp_t emin, mpfr_exp_t emax) : old_min_(mpfr_get_emin()), old_max_(mpfr_get_emax()) {
    if (mpfr_set_emin(emin) != 0 || mpfr_set_emax(emax) != 0) {
      std::fprintf(stderr, "mpfr_oracle: exponent range [%ld, %ld] rejected\n", static_cast<long>(emin),
                   static_cast<long>(emax));
      std::abort();
    }
  }
  ~ExponentRange() {
    mpfr_set_emin(old_min_);
    mpfr_set_emax(old_max_);
  }
  ExponentRange(const ExponentRange&) = delete;
  ExponentRange& operator=(const ExponentRange&) = delete;

 private:
  mpfr_exp_t old_min_;
  mpfr_exp_t old_max_;
};

/// The emulated target in MPFR terms: precision p and the CORE-MATH exponent range. MPFR
/// writes x = 0.1b...b * 2^E, so an IEEE exponent e is MPFR's e + 1: the least subnormal
/// 2^(e_min - p + 1) has MPFR exponent e_min - p + 2, the largest binade MPFR exponent
/// e_max + 1. Derived from the naive limits (E8M0: least value 2^-127, p = 1, the same
/// formula gives its range without subnormals).
struct Target {
  mpfr_prec_t p;
  mpfr_exp_t emin;
  mpfr_exp_t emax;
  double max_finite;
  double min_normal;
};

Target target_of(const FormatSpec& f) {
  const NaiveLimits& l = naive_limits(f);
  return {f.precision, std::ilogb(l.min_positive) + 1, std::ilogb(l.max_finite) + 1, l.max_finite, l.min_normal};
}

/// The same grid with one more bit everywhere (precision p + 1, least quantum halved): its
/// points that are not on the target's grid are exactly the target's midpoints.
Target extended(Target t) {
  ++t.p;
  --t.emin;
  return t;
}

struct Work {
  mpfr_t in[3];  // operands (precision 53: doubles are exact)
  mpfr_t x;      // an exact source value
  mpfr_t r;      // the result
  mpfr_t x1;     // the result on the extended grid (ties)
  mpfr_t xz;     // a result toward zero (ties, tininess)
  Work() {
    for (auto& v : in) mpfr_init2(v, 53);
    mpfr_init2(x, 256);
    mpfr_init2(r, 64);
    mpfr_init2(x1, 64);
    mpfr_init2(xz, 64);
  }
  ~Work() {
    for (auto& v : in) mpfr_clear(v);
    mpfr_clear(x);
    mpfr_clear(r);
    mpfr_clear(x1);
    mpfr_clear(xz);
  }
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;
};

Work& work() {
  thread_local Work w;
  return w;
}

/// An operation producing a correctly rounded value in `rop` and returning its ternary.
struct Op {
  enum class Kind : std::uint8_t { set, add, sub, mul, div, fma, sqrt } kind;
  mpfr_srcptr a = nullptr;
  mpfr_srcptr b = nullptr;
  mpfr_srcptr c = nullptr;
  /// true: operands lie in the target's exponent range, compute inside it (CORE-MATH);
  /// false (conversions): compute in MPFR's default range, then mpfr_check_range, the
  /// documented way to bring a correctly rounded value into a narrower range.
  bool in_range = false;

  int operator()(mpfr_ptr rop, mpfr_rnd_t rnd) const {
    switch (kind) {
      case Kind::set: return mpfr_set(rop, a, rnd);
      case Kind::add: return mpfr_add(rop, a, b, rnd);
      case Kind::sub: return mpfr_sub(rop, a, b, rnd);
      case Kind::mul: return mpfr_mul(rop, a, b, rnd);
      case Kind::div: return mpfr_div(rop, a, b, rnd);
      case Kind::fma: return mpfr_fma(rop, a, b, c, rnd);
      case Kind::sqrt: return mpfr_sqrt(rop, a, rnd);
    }
    return 0;
  }
};

struct Eval {
  int ternary;
  bool overflow;
  bool div_by_zero;
};

/// One rounding of `op` onto the grid `t` in direction `rnd`, into `rop`.
Eval evaluate(mpfr_ptr rop, const Target& t, mpfr_rnd_t rnd, const Op& op) {
  mpfr_set_prec(rop, t.p);
  mpfr_clear_flags();
  int ternary;
  if (op.in_range) {
    const ExponentRange range(t.emin, t.emax);
    ternary = op(rop, rnd);
    ternary = mpfr_subnormalize(rop, ternary, rnd);
  } else {
    ternary = op(rop, rnd);
    const ExponentRange range(t.emin, t.emax);
    ternary = mpfr_check_range(rop, ternary, rnd);
    ternary = mpfr_subnormalize(rop, ternary, rnd);
  }
  return {ternary, mpfr_overflow_p() != 0, mpfr_divby0_p() != 0};
}

mpfr_rnd_t mpfr_mode(Rounding r) {
  switch (r) {
    case Rounding::rne: return MPFR_RNDN;
    case Rounding::rtz: return MPFR_RNDZ;
    case Rounding::rup: return MPFR_RNDU;
    case Rounding::rdn: return MPFR_RNDD;
    case Rounding::rna: return MPFR_RNDN;  // ties decided below
    case Rounding::stochastic: break;
  }
  std::fprintf(stderr, "mpfr_oracle: stochastic rounding has no MPFR oracle\n");
  std::abort();
}

/// Rounds `op` into float format `f` with rounding `r`.
///
/// Ties-to-away (rna): MPFR_RNDNA is only partially supported by MPFR (mpfr_round_raw and a
/// few functions), so it is built from supported modes: the exact result is a tie exactly
/// when, rounded toward zero on the extended grid (p + 1 bits, least quantum halved), it is
/// exact and not on the target grid; then the result is MPFR_RNDA's, otherwise MPFR_RNDN's
/// (they differ only at ties).
///
/// Precision 1 (E8M0): the two neighbours of a tie have the same significand 1, so "even"
/// does not choose. MPFR 4.2's RNDN rounds such a tie away from zero, to the larger power of
/// two (pinned by the test Oracle.MpfrPrecisionOneTiesGoAway); numfid does the same (its
/// kept significand 1 is odd). This oracle therefore uses plain MPFR_RNDN for E8M0: the
/// policy is "E8M0 ties go to the larger magnitude", and if MPFR ever changed, that test,
/// not a silent special case here, would say so.
Rounded round_float(const FormatSpec& f, const Op& op, Rounding r, bool any_nan_operand) {
  Work& w = work();
  const Target t = target_of(f);
  Eval e = evaluate(w.r, t, mpfr_mode(r), op);
  if (r == Rounding::rna && mpfr_number_p(w.r) != 0) {
    const Eval ext = evaluate(w.x1, extended(t), MPFR_RNDZ, op);
    if (ext.ternary == 0 && mpfr_zero_p(w.x1) == 0 && mpfr_number_p(w.x1) != 0) {
      (void)evaluate(w.xz, t, MPFR_RNDZ, op);
      if (mpfr_number_p(w.xz) == 0 || mpfr_cmp(w.x1, w.xz) != 0) e = evaluate(w.r, t, MPFR_RNDA, op);
    }
  }
  Rounded rd;
  if (mpfr_nan_p(w.r) != 0) {
    rd.kind = Rounded::Kind::nan;
    rd.invalid = !any_nan_operand;
    return rd;
  }
  rd.negative = mpfr_signbit(w.r) != 0;
  if (mpfr_inf_p(w.r) != 0 && !e.overflow) {
    rd.kind = Rounded::Kind::infinity;
    rd.exact_nonzero = true;
    rd.div_by_zero = e.div_by_zero;
    return rd;
  }
  rd.exact_nonzero = mpfr_zero_p(w.r) == 0 || e.ternary != 0;
  if (e.overflow || std::fabs(mpfr_get_d(w.r, MPFR_RNDN)) > t.max_finite) {
    rd.kind = Rounded::Kind::overflow;
    rd.inexact = true;
    return rd;
  }
  rd.value = mpfr_get_d(w.r, MPFR_RNDN);  // exact: at most 24 bits, exponent within double's
  rd.inexact = e.ternary != 0;
  if (rd.exact_nonzero && std::fabs(rd.value) <= t.min_normal) {
    // Tininess before rounding: |exact| < min normal iff its rounding toward zero on a grid
    // that contains min normal (precision p, unbounded exponents) is below min normal.
    mpfr_set_prec(w.xz, t.p);
    (void)op(w.xz, MPFR_RNDZ);
    rd.tiny = mpfr_cmp_d(w.xz, t.min_normal) < 0 && mpfr_cmp_d(w.xz, -t.min_normal) > 0;
  }
  return rd;
}

/// Rounds an exact value to an integer format: mpfr_rint (ties to even for RNDN) or
/// mpfr_round (ties away from zero) at 256 bits, then the range check.
Rounded round_integer(const FormatSpec& f, mpfr_srcptr x, Rounding r) {
  Work& w = work();
  Rounded rd;
  if (mpfr_nan_p(x) != 0) {
    rd.kind = Rounded::Kind::nan;
    return rd;
  }
  rd.negative = mpfr_signbit(x) != 0;
  rd.exact_nonzero = mpfr_zero_p(x) == 0;
  if (mpfr_inf_p(x) != 0) {
    rd.kind = Rounded::Kind::infinity;
    return rd;
  }
  mpfr_set_prec(w.r, 256);
  const int ternary = r == Rounding::rna ? mpfr_round(w.r, x) : mpfr_rint(w.r, x, mpfr_mode(r));
  const double lo = f.is_signed ? -std::ldexp(1.0, f.bits - 1) : 0.0;
  const double hi = f.is_signed ? std::ldexp(1.0, f.bits - 1) - 1 : std::ldexp(1.0, f.bits) - 1;
  if (mpfr_cmp_d(w.r, hi) > 0 || mpfr_cmp_d(w.r, lo) < 0) {
    rd.kind = Rounded::Kind::overflow;
    rd.negative = mpfr_sgn(w.r) < 0;
    return rd;
  }
  rd.value = mpfr_get_d(w.r, MPFR_RNDN);
  rd.inexact = ternary != 0;
  return rd;
}

/// Rounds the exact value in `x` (any precision, default exponent range) into `to`.
Rounded round_exact(const FormatSpec& to, mpfr_srcptr x, Rounding r) {
  if (to.kind == FormatKind::integer) return round_integer(to, x, r);
  Op op{Op::Kind::set, x, nullptr, nullptr, false};
  return round_float(to, op, r, mpfr_nan_p(x) != 0);
}

}  // namespace

Rounded oracle_round_value(const FormatSpec& to, double x, Rounding r) {
  if (std::isnan(x)) {
    Rounded rd;
    rd.kind = Rounded::Kind::nan;
    rd.negative = std::signbit(x);
    return rd;
  }
  Work& w = work();
  mpfr_set_prec(w.x, 53);
  mpfr_set_d(w.x, x, MPFR_RNDN);  // exact
  return round_exact(to, w.x, r);
}

Rounded oracle_round_scaled(const FormatSpec& to, bool negative, uint128 significand, int exponent, bool sticky,
                            Rounding r) {
  Work& w = work();
  mpz_t z;
  mpz_init(z);
  const std::uint64_t words[2] = {static_cast<std::uint64_t>(significand),
                                  static_cast<std::uint64_t>(significand >> 64)};
  mpz_import(z, 2, -1, sizeof(std::uint64_t), 0, 0, words);
  long e = exponent;
  if (sticky) {  // (2 * significand + 1) * 2^(exponent - 1): strictly inside the interval
    mpz_mul_2exp(z, z, 1);
    mpz_add_ui(z, z, 1);
    --e;
  }
  mpfr_set_prec(w.x, 256);
  mpfr_set_z_2exp(w.x, z, e, MPFR_RNDN);  // exact: at most 129 bits
  mpz_clear(z);
  if (negative) mpfr_neg(w.x, w.x, MPFR_RNDN);
  return round_exact(to, w.x, r);
}

Rounded oracle_round_arith(ArithOp op, const FormatSpec& f, std::span<const double> operands, Rounding r) {
  Work& w = work();
  bool any_nan = false;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    mpfr_set_d(w.in[i], operands[i], MPFR_RNDN);  // exact (values of f are doubles)
    any_nan = any_nan || std::isnan(operands[i]);
  }
  Op o{Op::Kind::set, w.in[0], operands.size() > 1 ? w.in[1] : nullptr, operands.size() > 2 ? w.in[2] : nullptr, true};
  switch (op) {
    case ArithOp::add: o.kind = Op::Kind::add; break;
    case ArithOp::sub: o.kind = Op::Kind::sub; break;
    case ArithOp::mul: o.kind = Op::Kind::mul; break;
    case ArithOp::div: o.kind = Op::Kind::div; break;
    case ArithOp::fma: o.kind = Op::Kind::fma; break;
    case ArithOp::sqrt: o.kind = Op::Kind::sqrt; break;
  }
  Rounded rd = round_float(f, o, r, any_nan);
  // inf * 0 + NaN: IEEE 754-2019 §7.2(c) lets the implementation signal invalid or not;
  // numfid's policy (arith.cpp) is to signal it, as for inf * 0 + a number.
  if (op == ArithOp::fma && rd.kind == Rounded::Kind::nan) {
    const auto inf_times_zero = [](double a, double b) { return std::isinf(a) && b == 0; };
    if (inf_times_zero(operands[0], operands[1]) || inf_times_zero(operands[1], operands[0])) rd.invalid = true;
  }
  return rd;
}

Rounded oracle_round_sum(const FormatSpec& to, double x, double y, Rounding r) {
  Work& w = work();
  mpfr_set_d(w.in[0], x, MPFR_RNDN);  // exact
  mpfr_set_d(w.in[1], y, MPFR_RNDN);
  const Op o{Op::Kind::add, w.in[0], w.in[1], nullptr, false};
  return round_float(to, o, r, std::isnan(x) || std::isnan(y));
}

Result oracle_finish(const FormatSpec& f, const Rounded& rd, const RoundOptions& o) {
  using K = Rounded::Kind;
  if (f.kind == FormatKind::integer) {
    switch (rd.kind) {
      case K::nan: return {Bits{0}, status_invalid};
      case K::infinity:
      case K::overflow: {
        const double bound = rd.negative
                                 ? (f.is_signed ? -std::ldexp(1.0, f.bits - 1) : 0.0)
                                 : (f.is_signed ? std::ldexp(1.0, f.bits - 1) - 1 : std::ldexp(1.0, f.bits) - 1);
        return {naive_encode(f, bound), status_invalid};
      }
      case K::finite: return {naive_encode(f, rd.value + 0.0), rd.inexact ? status_inexact : status_ok};
    }
  }
  const NaiveLimits& l = naive_limits(f);
  const auto max = [&](bool neg) { return naive_encode(f, neg ? -l.max_finite : l.max_finite); };
  // What an infinity becomes when the format keeps it (IEEE overflow mode).
  const auto inf_pattern = [&](bool neg) -> Result {
    switch (f.non_finite) {
      case NonFinite::ieee: return {naive_inf(f, neg), status_ok};
      case NonFinite::nan_only: return {naive_nan(f, neg), status_invalid};  // OCP OFP8 non-saturating
      case NonFinite::finite_only: break;
    }
    return {max(neg), status_ok};  // OCP MX FP6/FP4 clamp
  };
  const bool unsigned_negative = !f.has_sign && rd.negative && rd.exact_nonzero;
  switch (rd.kind) {
    case K::nan:
      return {naive_nan(f, rd.negative), rd.invalid || f.nan == NanEncoding::none ? status_invalid : status_ok};
    case K::infinity: {
      Status st = rd.div_by_zero ? status_div_by_zero : status_ok;
      if (unsigned_negative) return {naive_nan(f, false), st | status_invalid};
      if (o.overflow == Overflow::saturate) return {max(rd.negative), st};
      Result res = inf_pattern(rd.negative);
      res.status |= st;
      return res;
    }
    case K::overflow: {
      if (unsigned_negative) return {naive_nan(f, false), status_invalid};
      // IEEE 754 §7.4: overflow and inexact; toward zero the result is ±max.
      const bool toward_zero = o.rounding == Rounding::rtz || (o.rounding == Rounding::rdn && !rd.negative) ||
                               (o.rounding == Rounding::rup && rd.negative);
      const Status st = status_overflow | status_inexact;
      if (o.overflow == Overflow::saturate || toward_zero) return {max(rd.negative), st};
      return {inf_pattern(rd.negative).bits, st};
    }
    case K::finite: break;
  }
  if (unsigned_negative) return {naive_nan(f, false), status_invalid};
  Status st = rd.inexact ? status_inexact : status_ok;
  if (rd.tiny && rd.inexact) st |= status_underflow;
  if (!f.has_subnormals && rd.value == 0)  // E8M0 has no zero: its least value 2^-127
    return {naive_encode(f, l.min_positive), status_underflow | status_inexact};
  if (o.ftz && rd.value != 0 && std::fabs(rd.value) < l.min_normal)
    return {naive_encode(f, std::copysign(0.0, rd.value)), st | status_underflow | status_inexact};
  return {naive_encode(f, rd.value), st};
}

double oracle_operand(const FormatSpec& f, Bits x, bool daz) {
  const double v = naive_decode(f, x);
  return daz && naive_is_subnormal(f, x) ? std::copysign(0.0, v) : v;
}

Result oracle_convert_value(const FormatSpec& to, double x, const RoundOptions& o) {
  return oracle_finish(to, oracle_round_value(to, x, o.rounding), o);
}

Result oracle_convert(const FormatSpec& from, const FormatSpec& to, Bits x, const RoundOptions& o) {
  return oracle_convert_value(to, oracle_operand(from, x, o.daz), o);
}

Result oracle_arith(ArithOp op, const FormatSpec& f, std::span<const Bits> operands, const RoundOptions& o) {
  double v[3] = {0, 0, 0};
  for (std::size_t i = 0; i < operands.size() && i < 3; ++i) v[i] = oracle_operand(f, operands[i], o.daz);
  return oracle_finish(f, oracle_round_arith(op, f, std::span<const double>(v, operands.size()), o.rounding), o);
}

Status checked_flags(const FormatSpec& to, const Rounded& rd) {
  Status s = status_invalid | status_div_by_zero;
  if (to.kind == FormatKind::integer) return rd.kind == Rounded::Kind::finite ? s | status_inexact : s;
  if (rd.kind == Rounded::Kind::finite || rd.kind == Rounded::Kind::overflow)
    s |= status_overflow | status_underflow | status_inexact;
  return s;
}

bool same_bits(const FormatSpec& f, Bits expected, Bits actual, NanPolicy policy) {
  const std::uint32_t mask = f.bits >= 32 ? 0xffffffffu : (1u << f.bits) - 1u;
  if ((expected.raw & mask) == (actual.raw & mask) && (actual.raw & ~mask) == 0) return true;
  if (f.kind != FormatKind::binary_float || (actual.raw & ~mask) != 0) return false;
  const double e = naive_decode(f, expected);
  const double a = naive_decode(f, actual);
  if (!std::isnan(e) || !std::isnan(a)) return false;
  if (policy == NanPolicy::any_nan || !f.has_sign || f.nan == NanEncoding::negative_zero) return true;
  const std::uint32_t sign = 1u << (f.bits - 1);
  return (expected.raw & sign) == (actual.raw & sign);
}

std::string flag_names(Status s) {
  std::string out;
  const auto add = [&](Status bit, const char* name) {
    if ((s & bit) == 0) return;
    if (!out.empty()) out += '|';
    out += name;
  };
  add(status_invalid, "invalid");
  add(status_div_by_zero, "div_by_zero");
  add(status_overflow, "overflow");
  add(status_underflow, "underflow");
  add(status_inexact, "inexact");
  return out.empty() ? "ok" : out;
}

double mpfr_round_to_precision(double x, int p) {
  mpfr_t y;
  mpfr_init2(y, p);
  mpfr_set_d(y, x, MPFR_RNDN);
  const double out = mpfr_get_d(y, MPFR_RNDN);
  mpfr_clear(y);
  return out;
}

}  // namespace numfid::test
