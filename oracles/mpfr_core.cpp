// MPFR oracle core: inputs read exactly into MPFR, MPFR values turned into Unrounded and
// ExactValue, interval arithmetic with strict/closed ends, and the Ziv loop's decision step.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "oracles/mpfr_detail.h"

namespace numfid::detail::mpfr {

// ---------------------------------------------------------------------------------------
// MPFR plumbing.

Input read(const FormatSpec& f, Bits x, bool daz) {
  const Decoded d = decode(f, x);
  Input in{d.cls, d.negative, d.significand, d.exponent};
  if (daz && is_float(f) && in.cls == FpClass::subnormal) {
    in.cls = FpClass::zero;
    in.significand = 0;
  }
  if (in.cls == FpClass::subnormal) in.cls = FpClass::normal;  // finite non-zero either way
  return in;
}

bool finite(const Input& in) { return in.cls == FpClass::zero || in.cls == FpClass::normal; }

/// Sets r to the input (exact when r has >= 64 bits; NaN and ±inf as such).
void set_input(mpfr_ptr r, const Input& in) {
  switch (in.cls) {
    case FpClass::nan:
      mpfr_set_nan(r);
      return;
    case FpClass::infinite:
      mpfr_set_inf(r, in.negative ? -1 : 1);
      return;
    case FpClass::zero:
      mpfr_set_zero(r, in.negative ? -1 : 1);
      return;
    default:
      break;
  }
  mpfr_set_uj_2exp(r, in.significand, in.exponent, MPFR_RNDN);
  if (in.negative) mpfr_neg(r, r, MPFR_RNDN);
}

double input_double(const Input& in) {
  switch (in.cls) {
    case FpClass::nan:
      return std::numeric_limits<double>::quiet_NaN();
    case FpClass::infinite:
      return in.negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    case FpClass::zero:
      return in.negative ? -0.0 : 0.0;
    default:
      break;
  }
  const double v = std::ldexp(static_cast<double>(in.significand), in.exponent);
  return in.negative ? -v : v;
}

Unrounded far_value(bool negative, bool huge) {
  return {negative, uint128{1} << 127, huge ? static_cast<int>(kFar) : -static_cast<int>(kFar) - 255, true};
}

/// |x| (finite, 128 bits of precision at most) to an Unrounded with the given sticky bit.
Unrounded unrounded_of(mpfr_srcptr x, bool sticky) {
  const bool negative = mpfr_signbit(x) != 0;
  if (mpfr_zero_p(x)) return {negative, 0, 0, sticky};
  const mpfr_exp_t e = mpfr_get_exp(x);  // |x| in [2^(e-1), 2^e)
  if (e > kFar) return far_value(negative, true);
  if (e < -kFar) return far_value(negative, false);
  mpz_t z;
  mpz_init(z);
  const mpfr_exp_t ez = mpfr_get_z_2exp(z, x);
  mpz_abs(z, z);
  std::uint64_t words[2] = {0, 0};
  std::size_t count = 0;
  mpz_export(words, &count, -1, sizeof(std::uint64_t), 0, 0, z);  // least significant word first
  mpz_clear(z);
  const uint128 sig = (uint128{words[1]} << 64) | words[0];
  return {negative, sig, static_cast<int>(ez), sticky};
}

/// The exact finite value x as an Unrounded: truncated to 128 bits, sticky if bits were lost.
Unrounded truncate(mpfr_srcptr x) {
  Mpfr t(kKeep);
  const int tern = mpfr_set(t.get(), x, MPFR_RNDZ);
  return unrounded_of(t.get(), tern != 0);
}

/// The nearest double to the value an Unrounded stands for (a sticky value is read as the
/// midpoint (2 sig + 1) 2^(e-1) of its open interval, which rounds like every point of it).
double nearest_double(const Unrounded& u) {
  if (u.significand == 0) return u.negative ? -0.0 : 0.0;
  mpz_t z;
  mpz_init(z);
  const std::uint64_t words[2] = {static_cast<std::uint64_t>(u.significand),
                                  static_cast<std::uint64_t>(u.significand >> 64)};
  mpz_import(z, 2, -1, sizeof(std::uint64_t), 0, 0, words);
  long e = u.exponent;
  if (u.sticky) {
    mpz_mul_2exp(z, z, 1);
    mpz_add_ui(z, z, 1);
    --e;
  }
  Mpfr v(kKeep + 2);
  mpfr_set_z_2exp(v.get(), z, e, MPFR_RNDN);  // exact
  mpz_clear(z);
  const double d = mpfr_get_d(v.get(), MPFR_RNDN);
  return u.negative ? -d : d;
}

ExactValue nan_value(bool invalid) {
  ExactValue v;
  v.kind = ExactValue::Kind::nan;
  v.flags = invalid ? status_invalid : status_ok;
  v.as_double = std::numeric_limits<double>::quiet_NaN();
  return v;
}

ExactValue inf_value(bool negative, Status flags) {
  ExactValue v;
  v.kind = ExactValue::Kind::infinite;
  v.value.negative = negative;
  v.flags = flags;
  v.as_double = negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  return v;
}

ExactValue finite_value(const Unrounded& u) {
  ExactValue v;
  v.value = u;
  v.zero_negative_rdn = u.negative;
  v.as_double = nearest_double(u);
  return v;
}

// ---------------------------------------------------------------------------------------
// Intervals: lo <= v <= hi, with lo < v when lo_strict and v < hi when hi_strict. Every
// endpoint is a directed rounding of an exact bound, strict when that rounding was inexact
// (MPFR's ternary value) or when strictness propagates through a strictly monotone step.

mpfr_prec_t prec_of(const Iv& a) { return mpfr_get_prec(a.lo.get()); }

Iv point(mpfr_srcptr x, mpfr_prec_t p) {
  Iv r(p);
  r.lo_strict = mpfr_set(r.lo.get(), x, MPFR_RNDD) != 0;
  r.hi_strict = mpfr_set(r.hi.get(), x, MPFR_RNDU) != 0;
  return r;
}

Iv point_si(long x, mpfr_prec_t p) {
  Iv r(p);
  mpfr_set_si(r.lo.get(), x, MPFR_RNDD);  // exact: p >= 64
  mpfr_set_si(r.hi.get(), x, MPFR_RNDU);
  return r;
}

Iv neg(const Iv& a) {
  Iv r(prec_of(a));
  mpfr_neg(r.lo.get(), a.hi.get(), MPFR_RNDD);
  mpfr_neg(r.hi.get(), a.lo.get(), MPFR_RNDU);
  r.lo_strict = a.hi_strict;
  r.hi_strict = a.lo_strict;
  return r;
}

Iv add(const Iv& a, const Iv& b) {
  Iv r(prec_of(a));
  r.lo_strict = (mpfr_add(r.lo.get(), a.lo.get(), b.lo.get(), MPFR_RNDD) != 0) || a.lo_strict || b.lo_strict;
  r.hi_strict = (mpfr_add(r.hi.get(), a.hi.get(), b.hi.get(), MPFR_RNDU) != 0) || a.hi_strict || b.hi_strict;
  return r;
}

Iv sub(const Iv& a, const Iv& b) { return add(a, neg(b)); }

Iv mul(const Iv& a, const Iv& b) {
  if (a.nonpos() && !a.nonneg()) return neg(mul(neg(a), b));
  if (b.nonpos() && !b.nonneg()) return neg(mul(a, neg(b)));
  Iv r(prec_of(a));
  if (a.nonneg() && b.nonneg()) {
    // v = x*y with 0 <= a.lo <= x, 0 <= b.lo <= y: a.lo*b.lo <= v, strict if a factor's bound
    // is strict and the other factor is certainly positive (and symmetrically above).
    r.lo_strict = (mpfr_mul(r.lo.get(), a.lo.get(), b.lo.get(), MPFR_RNDD) != 0) || (a.lo_strict && b.positive()) ||
                  (b.lo_strict && a.positive());
    r.hi_strict = (mpfr_mul(r.hi.get(), a.hi.get(), b.hi.get(), MPFR_RNDU) != 0) || (a.hi_strict && b.positive()) ||
                  (b.hi_strict && a.positive());
    return r;
  }
  // A factor straddles zero: the extreme corners, closed (sound, possibly not tight).
  Mpfr t(prec_of(a));
  mpfr_srcptr as[2] = {a.lo.get(), a.hi.get()};
  mpfr_srcptr bs[2] = {b.lo.get(), b.hi.get()};
  mpfr_set_inf(r.lo.get(), 1);
  mpfr_set_inf(r.hi.get(), -1);
  for (mpfr_srcptr x : as) {
    for (mpfr_srcptr y : bs) {
      mpfr_mul(t.get(), x, y, MPFR_RNDD);
      mpfr_min(r.lo.get(), r.lo.get(), t.get(), MPFR_RNDD);
      mpfr_mul(t.get(), x, y, MPFR_RNDU);
      mpfr_max(r.hi.get(), r.hi.get(), t.get(), MPFR_RNDU);
    }
  }
  return r;
}

Iv div(const Iv& a, const Iv& b) {
  if (b.negative()) return div(neg(a), neg(b));
  if (!b.positive()) throw std::logic_error("oracle interval division by an interval containing 0");
  if (a.nonpos() && !a.nonneg()) return neg(div(neg(a), b));
  Iv r(prec_of(a));
  if (a.nonneg()) {
    // v = x/y, 0 <= a.lo <= x <= a.hi, 0 < b.lo <= y <= b.hi.
    r.lo_strict = (mpfr_div(r.lo.get(), a.lo.get(), b.hi.get(), MPFR_RNDD) != 0) || a.lo_strict ||
                  (b.hi_strict && a.positive());
    r.hi_strict = (mpfr_div(r.hi.get(), a.hi.get(), b.lo.get(), MPFR_RNDU) != 0) || a.hi_strict ||
                  (b.lo_strict && a.positive());
    return r;
  }
  // a straddles zero, b > 0: [a.lo / b.lo, a.hi / b.lo], closed.
  mpfr_div(r.lo.get(), a.lo.get(), b.lo.get(), MPFR_RNDD);
  mpfr_div(r.hi.get(), a.hi.get(), b.lo.get(), MPFR_RNDU);
  return r;
}

void free_caches_at_thread_exit() {
  // A C++ thread_local's destructor runs when its thread ends, whoever started the thread (a
  // Python thread, a user's std::thread): MPFR's own per-thread caches have none.
  struct Release {
    ~Release() { mpfr_free_cache(); }
  };
  thread_local Release release;
  (void)release;
}

/// f(a) for a strictly monotone f. A point argument takes one round-to-nearest call: its
/// ternary value says on which side the exact value lies, and round-to-nearest puts it
/// strictly between the result and the neighbour on that side (also at MPFR's overflow to
/// inf and underflow to 0).
Iv monotone(UnaryMpfr f, const Iv& a, bool increasing) {
  free_caches_at_thread_exit();  // exp, log, erfc, ... fill MPFR's per-thread constant caches
  Iv r(prec_of(a));
  if (a.point()) {
    const int t = f(r.lo.get(), a.lo.get(), MPFR_RNDN);
    mpfr_set(r.hi.get(), r.lo.get(), MPFR_RNDN);
    if (t < 0) {
      mpfr_nextabove(r.hi.get());
      r.lo_strict = r.hi_strict = true;
    } else if (t > 0) {
      mpfr_nextbelow(r.lo.get());
      r.lo_strict = r.hi_strict = true;
    }
    return r;
  }
  const Mpfr& from_lo = increasing ? a.lo : a.hi;
  const Mpfr& from_hi = increasing ? a.hi : a.lo;
  const bool s_lo = increasing ? a.lo_strict : a.hi_strict;
  const bool s_hi = increasing ? a.hi_strict : a.lo_strict;
  r.lo_strict = (f(r.lo.get(), from_lo.get(), MPFR_RNDD) != 0) || s_lo;
  r.hi_strict = (f(r.hi.get(), from_hi.get(), MPFR_RNDU) != 0) || s_hi;
  return r;
}

/// Σ of intervals: mpfr_sum of the lower and of the upper ends (one rounding each).
Iv sum(const std::vector<const Iv*>& terms, mpfr_prec_t p) {
  Iv r(p);
  if (terms.empty()) {
    mpfr_set_zero(r.lo.get(), 1);
    mpfr_set_zero(r.hi.get(), 1);
    return r;
  }
  std::vector<mpfr_ptr> lo;
  std::vector<mpfr_ptr> hi;
  bool ls = false;
  bool hs = false;
  for (const Iv* t : terms) {
    lo.push_back(const_cast<mpfr_ptr>(t->lo.get()));  // mpfr_sum takes mpfr_ptr; it does not write
    hi.push_back(const_cast<mpfr_ptr>(t->hi.get()));
    ls = ls || t->lo_strict;
    hs = hs || t->hi_strict;
  }
  r.lo_strict = (mpfr_sum(r.lo.get(), lo.data(), lo.size(), MPFR_RNDD) != 0) || ls;
  r.hi_strict = (mpfr_sum(r.hi.get(), hi.data(), hi.size(), MPFR_RNDU) != 0) || hs;
  return r;
}

/// The truncation to 128 bits (and the sticky bit) of the exact value, if the enclosure
/// decides it; canonical far values for certainly tiny or huge magnitudes.
std::optional<Unrounded> decide(const Iv& v) {
  if (v.point()) {
    if (mpfr_zero_p(v.lo.get())) return Unrounded{false, 0, 0, false};  // exact zero: +0
    return truncate(v.lo.get());
  }
  const bool pos = v.positive();
  const bool negv = v.negative();
  if (!pos && !negv) return std::nullopt;
  // a <= |v| <= b.
  mpfr_srcptr a = pos ? v.lo.get() : v.hi.get();
  mpfr_srcptr b = pos ? v.hi.get() : v.lo.get();
  const bool a_strict = pos ? v.lo_strict : v.hi_strict;
  const bool b_strict = pos ? v.hi_strict : v.lo_strict;
  if (!mpfr_inf_p(b) && (mpfr_zero_p(b) || mpfr_get_exp(b) < -kFar)) return far_value(negv, false);
  if (mpfr_inf_p(a) || (!mpfr_zero_p(a) && mpfr_get_exp(a) > kFar + 1)) return far_value(negv, true);
  if (mpfr_zero_p(a) || mpfr_inf_p(b)) return std::nullopt;
  Mpfr y(kKeep);
  const int ta = mpfr_set(y.get(), a, MPFR_RNDZ);  // |y| <= |a|, < when inexact
  Mpfr next(kKeep);
  mpfr_set(next.get(), y.get(), MPFR_RNDN);
  if (negv) {
    mpfr_nextbelow(next.get());  // |next| = |y| + ulp
  } else {
    mpfr_nextabove(next.get());
  }
  const bool above_y = ta != 0 || a_strict;
  const int cmp = mpfr_cmpabs(b, next.get());
  const bool below_next = cmp < 0 || (cmp == 0 && b_strict);
  if (above_y && below_next) return unrounded_of(y.get(), true);
  return std::nullopt;
}

/// At the precision cap: the 128-bit number nearest the enclosure's midpoint, as exact.
Unrounded presume(const Iv& v) {
  if (mpfr_sgn(v.lo.get()) <= 0 && mpfr_sgn(v.hi.get()) >= 0) return {false, 0, 0, false};
  Mpfr mid(prec_of(v) + 1);
  mpfr_add(mid.get(), v.lo.get(), v.hi.get(), MPFR_RNDN);
  mpfr_div_2ui(mid.get(), mid.get(), 1, MPFR_RNDN);
  Mpfr y(kKeep);
  mpfr_set(y.get(), mid.get(), MPFR_RNDN);
  return unrounded_of(y.get(), false);
}

double up_double(mpfr_srcptr x) { return mpfr_get_d(x, MPFR_RNDU); }

}  // namespace numfid::detail::mpfr

namespace numfid {

void release_oracle_thread_caches() { mpfr_free_cache(); }

}  // namespace numfid
