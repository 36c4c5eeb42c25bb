// MPFR oracles: exact dot/sum/matmul, interval (Ziv) evaluation of softmax, norms and the
// elementwise functions, and the conversion of MPFR values into numfid::Unrounded.
#include "oracles/mpfr_oracles.h"

#include <gmp.h>
#include <mpfr.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "formats/platform.h"

namespace numfid {

namespace {

// ---------------------------------------------------------------------------------------
// MPFR plumbing.

/// An mpfr_t with RAII (movable so that it can live in a vector).
class Mpfr {
 public:
  explicit Mpfr(mpfr_prec_t p) { mpfr_init2(v_, p); }
  Mpfr(Mpfr&& o) noexcept {
    mpfr_init2(v_, MPFR_PREC_MIN);
    mpfr_swap(v_, o.v_);
  }
  Mpfr(const Mpfr&) = delete;
  Mpfr& operator=(const Mpfr&) = delete;
  Mpfr& operator=(Mpfr&& o) noexcept {
    mpfr_swap(v_, o.v_);
    return *this;
  }
  ~Mpfr() { mpfr_clear(v_); }
  mpfr_ptr get() { return v_; }
  mpfr_srcptr get() const { return v_; }

 private:
  mpfr_t v_;
};

/// Widest MPFR exponent range for the duration of an oracle call (restored afterwards):
/// intermediate values such as exp(-1e9) stay representable, so that over- and underflow
/// are decided by the target format, not by MPFR.
class WideExponents {
 public:
  WideExponents() : emin_(mpfr_get_emin()), emax_(mpfr_get_emax()) {
    mpfr_set_emin(mpfr_get_emin_min());
    mpfr_set_emax(mpfr_get_emax_max());
  }
  WideExponents(const WideExponents&) = delete;
  WideExponents& operator=(const WideExponents&) = delete;
  ~WideExponents() {
    mpfr_set_emin(emin_);
    mpfr_set_emax(emax_);
  }

 private:
  mpfr_exp_t emin_;
  mpfr_exp_t emax_;
};

/// Bits the oracles keep: the Unrounded significand width.
constexpr mpfr_prec_t kKeep = 128;
/// Magnitudes beyond 2^±kFar are represented by a canonical value (see ExactValue).
constexpr mpfr_exp_t kFar = 4000;
/// Ziv: first and last working precision of the interval evaluations.
constexpr mpfr_prec_t kStartPrec = 192;
constexpr mpfr_prec_t kMaxPrec = 12288;

/// An input pattern read exactly.
struct Input {
  FpClass cls = FpClass::zero;
  bool negative = false;
  std::uint64_t significand = 0;
  int exponent = 0;
};

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

ExactValue inf_value(bool negative, Status flags = status_ok) {
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

struct Iv {
  explicit Iv(mpfr_prec_t p) : lo(p), hi(p) {}
  Mpfr lo;
  Mpfr hi;
  bool lo_strict = false;
  bool hi_strict = false;

  bool point() const { return !lo_strict && !hi_strict && mpfr_equal_p(lo.get(), hi.get()); }
  /// Certainly >= 0 / > 0 / <= 0 / < 0.
  bool nonneg() const { return mpfr_sgn(lo.get()) >= 0; }
  bool positive() const { return mpfr_sgn(lo.get()) > 0 || (mpfr_zero_p(lo.get()) && lo_strict); }
  bool nonpos() const { return mpfr_sgn(hi.get()) <= 0; }
  bool negative() const { return mpfr_sgn(hi.get()) < 0 || (mpfr_zero_p(hi.get()) && hi_strict); }
};

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

using UnaryMpfr = int (*)(mpfr_ptr, mpfr_srcptr, mpfr_rnd_t);

/// f(a) for a strictly monotone f. A point argument takes one round-to-nearest call: its
/// ternary value says on which side the exact value lies, and round-to-nearest puts it
/// strictly between the result and the neighbour on that side (also at MPFR's overflow to
/// inf and underflow to 0).
Iv monotone(UnaryMpfr f, const Iv& a, bool increasing) {
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

/// Ziv loop for one value: eval(p) encloses it at working precision p.
template <class Eval>
ExactValue ziv(Eval&& eval) {
  for (mpfr_prec_t p = kStartPrec;; p *= 2) {
    const Iv v = eval(p);
    if (const auto u = decide(v)) return finite_value(*u);
    if (p >= kMaxPrec) {
      ExactValue r = finite_value(presume(v));
      r.presumed_exact = true;
      return r;
    }
  }
}

double up_double(mpfr_srcptr x) { return mpfr_get_d(x, MPFR_RNDU); }

// ---------------------------------------------------------------------------------------
// Exact dot products.

/// Products at 128 bits (exact for every numfid format: significands of at most 32 bits),
/// reused across calls.
std::vector<Mpfr>& product_pool(std::size_t n) {
  thread_local std::vector<Mpfr> pool;
  if (pool.size() < n) {
    pool.reserve(n);
    while (pool.size() < n) pool.emplace_back(kKeep);
  }
  return pool;
}

/// The exact Σ of `n` terms held in the pool, with bound quantities. `nan_operand[k]`: term k
/// has a NaN operand. A NaN sum is invalid when it stays NaN without those terms (0*inf, or
/// infinities of both signs); otherwise the NaN was only propagated.
ExactValue exact_sum_of_pool(std::size_t n, const std::vector<bool>& nan_operand) {
  std::vector<Mpfr>& pool = product_pool(n);
  std::vector<mpfr_ptr> ptrs(n);
  mpfr_exp_t emax = std::numeric_limits<mpfr_exp_t>::min();
  mpfr_exp_t emin = std::numeric_limits<mpfr_exp_t>::max();
  for (std::size_t k = 0; k < n; ++k) {
    ptrs[k] = pool[k].get();
    if (mpfr_regular_p(ptrs[k])) {
      emax = std::max(emax, mpfr_get_exp(ptrs[k]));
      emin = std::min(emin, mpfr_get_exp(ptrs[k]) - kKeep);
    }
  }
  // Every term is a multiple of 2^emin below 2^emax: the sum needs emax - emin bits plus
  // log2(n) bits of carry.
  const mpfr_prec_t p = emax >= emin ? static_cast<mpfr_prec_t>(emax - emin) + 66 : 64;
  Mpfr s(p);
  const int tern = mpfr_sum(s.get(), ptrs.data(), n, MPFR_RNDN);
  ExactValue v;
  if (mpfr_nan_p(s.get())) {
    std::vector<mpfr_ptr> clean;
    for (std::size_t k = 0; k < n; ++k)
      if (!nan_operand[k]) clean.push_back(ptrs[k]);
    Mpfr c(64);
    mpfr_sum(c.get(), clean.data(), clean.size(), MPFR_RNDN);
    v = nan_value(mpfr_nan_p(c.get()) != 0);
  } else if (mpfr_inf_p(s.get())) {
    v = inf_value(mpfr_signbit(s.get()) != 0);
  } else {
    if (tern != 0) throw std::logic_error("oracle_dot: mpfr_sum was not exact");
    v = finite_value(truncate(s.get()));
    if (mpfr_zero_p(s.get())) {  // the sign of an exact zero depends on the direction
      mpfr_sum(s.get(), ptrs.data(), n, MPFR_RNDD);
      v.zero_negative_rdn = mpfr_signbit(s.get()) != 0;
    }
  }
  // Σ|terms| rounded up, max|term|.
  Mpfr big(kKeep);
  mpfr_set_zero(big.get(), 1);
  for (std::size_t k = 0; k < n; ++k) {
    mpfr_abs(ptrs[k], ptrs[k], MPFR_RNDN);
    if (!mpfr_nan_p(ptrs[k]) && mpfr_greater_p(ptrs[k], big.get())) mpfr_set(big.get(), ptrs[k], MPFR_RNDN);
  }
  Mpfr abs_sum(53);
  mpfr_sum(abs_sum.get(), ptrs.data(), n, MPFR_RNDU);
  v.abs_sum = up_double(abs_sum.get());
  v.max_abs = mpfr_get_d(big.get(), MPFR_RNDU);
  return v;
}

/// Exact Σ a[k*sa] * b[k*sb] (+ addend). fb == nullptr: Σ a[k*sa].
ExactValue exact_dot(const FormatSpec& fa, const Bits* a, std::ptrdiff_t sa, const FormatSpec* fb, const Bits* b,
                     std::ptrdiff_t sb, std::size_t n, std::optional<ScalarRef> addend, bool daz) {
  const std::size_t total = n + (addend ? 1 : 0);
  std::vector<Mpfr>& pool = product_pool(total);
  std::vector<bool> nan_operand(total, false);
  Mpfr y(64);
  for (std::size_t k = 0; k < n; ++k) {
    const Input x = read(fa, a[static_cast<std::ptrdiff_t>(k) * sa], daz);
    nan_operand[k] = x.cls == FpClass::nan;
    set_input(pool[k].get(), x);
    if (fb) {
      const Input z = read(*fb, b[static_cast<std::ptrdiff_t>(k) * sb], daz);
      nan_operand[k] = nan_operand[k] || z.cls == FpClass::nan;
      set_input(y.get(), z);
      mpfr_mul(pool[k].get(), pool[k].get(), y.get(), MPFR_RNDN);  // exact (<= 64-bit factors)
    }
  }
  if (addend) {
    const Input c = read(*addend->format, addend->bits, daz);
    nan_operand[n] = c.cls == FpClass::nan;
    set_input(pool[n].get(), c);
  }
  return exact_sum_of_pool(total, nan_operand);
}

void check_matrix(const MatrixRef& m, const char* what) {
  if (m.format == nullptr) throw std::invalid_argument(std::string(what) + ": no format");
  if (m.data.size() != m.rows * m.cols)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(m.data.size()) + " elements for shape " +
                                std::to_string(m.rows) + "x" + std::to_string(m.cols));
}

RoundOptions element_options(const RoundOptions& o, std::size_t i) {
  RoundOptions oi = o;
  oi.stream = o.stream + i;
  return oi;
}

OracleValue rounded(const ExactValue& v, const FormatSpec& out, const RoundOptions& o) {
  return {round_exact(out, v, o), v};
}

// ---------------------------------------------------------------------------------------
// Rows.

/// A row read exactly, with its special-value summary.
struct Row {
  std::vector<Input> x;
  bool any_nan = false;
  bool any_pos_inf = false;
  bool any_neg_inf = false;
  bool all_neg_inf = true;
};

Row read_row(const MatrixRef& m, std::size_t r, bool daz) {
  Row row;
  row.x.reserve(m.cols);
  for (std::size_t j = 0; j < m.cols; ++j) {
    const Input in = read(*m.format, m.data[r * m.cols + j], daz);
    row.any_nan = row.any_nan || in.cls == FpClass::nan;
    const bool inf = in.cls == FpClass::infinite;
    row.any_pos_inf = row.any_pos_inf || (inf && !in.negative);
    row.any_neg_inf = row.any_neg_inf || (inf && in.negative);
    row.all_neg_inf = row.all_neg_inf && inf && in.negative;
    row.x.push_back(in);
  }
  return row;
}

/// Precision at which sums and products of row elements (fp32 and narrower; eps a double)
/// are exact; every such operation is checked.
constexpr mpfr_prec_t kExactPrec = 4096;

void exact_op(int tern) {
  if (tern != 0) throw std::logic_error("oracle: an operation meant to be exact was rounded");
}

std::vector<OracleValue> softmax_like(const MatrixRef& x, const FormatSpec& out, const RoundOptions& o, bool log) {
  check_matrix(x, log ? "oracle_log_softmax" : "oracle_softmax");
  WideExponents wide;
  std::vector<OracleValue> result;
  result.reserve(x.data.size());
  for (std::size_t r = 0; r < x.rows; ++r) {
    const Row row = read_row(x, r, o.daz);
    const std::size_t base = r * x.cols;
    if (row.any_nan || row.any_pos_inf || row.all_neg_inf) {
      const ExactValue nan = nan_value(!row.any_nan);
      for (std::size_t j = 0; j < x.cols; ++j) result.push_back(rounded(nan, out, element_options(o, base + j)));
      continue;
    }
    // d_j = x_j - max (exact), -inf entries excluded.
    std::vector<Mpfr> d;
    d.reserve(x.cols);
    Mpfr m(kExactPrec);
    Mpfr t(kExactPrec);
    bool have_max = false;
    for (const Input& in : row.x) {
      if (in.cls == FpClass::infinite) continue;
      set_input(t.get(), in);
      if (!have_max || mpfr_greater_p(t.get(), m.get())) mpfr_set(m.get(), t.get(), MPFR_RNDN);
      have_max = true;
    }
    std::size_t imax = x.cols;
    for (std::size_t j = 0; j < x.cols; ++j) {
      d.emplace_back(kExactPrec);
      if (row.x[j].cls == FpClass::infinite) {
        mpfr_set_inf(d.back().get(), -1);
        continue;
      }
      set_input(t.get(), row.x[j]);
      exact_op(mpfr_sub(d.back().get(), t.get(), m.get(), MPFR_RNDN));
      if (imax == x.cols && mpfr_zero_p(d.back().get())) imax = j;
    }
    std::vector<std::optional<Unrounded>> decided(x.cols);
    std::vector<bool> presumed(x.cols, false);
    double abs_sum = 0;
    for (mpfr_prec_t p = kStartPrec;; p *= 2) {
      std::vector<Iv> e;
      e.reserve(x.cols);
      std::vector<const Iv*> all;
      std::vector<const Iv*> rest;  // every term but one maximal term: S = 1 + R
      for (std::size_t j = 0; j < x.cols; ++j) {
        if (mpfr_inf_p(d[j].get())) {
          e.push_back(point_si(0, p));
          continue;
        }
        e.push_back(monotone(mpfr_exp, point(d[j].get(), p), true));
      }
      for (std::size_t j = 0; j < x.cols; ++j) {
        all.push_back(&e[j]);
        if (j != imax) rest.push_back(&e[j]);
      }
      const Iv s = sum(all, p);
      abs_sum = up_double(s.hi.get());
      const Iv log_s = log ? monotone(mpfr_log1p, sum(rest, p), true) : Iv(p);
      bool all_done = true;
      for (std::size_t j = 0; j < x.cols; ++j) {
        if (decided[j]) continue;
        if (mpfr_inf_p(d[j].get())) {
          decided[j] = log ? Unrounded{true, 0, 0, false} : Unrounded{false, 0, 0, false};
          continue;
        }
        const Iv v = log ? sub(point(d[j].get(), p), log_s) : div(e[j], s);
        decided[j] = decide(v);
        if (!decided[j] && p >= kMaxPrec) {
          decided[j] = presume(v);
          presumed[j] = true;
        }
        all_done = all_done && decided[j].has_value();
      }
      if (all_done) break;
    }
    for (std::size_t j = 0; j < x.cols; ++j) {
      ExactValue v = log && mpfr_inf_p(d[j].get()) ? inf_value(true) : finite_value(*decided[j]);
      v.presumed_exact = presumed[j];
      v.abs_sum = abs_sum;
      v.max_abs = 1;
      result.push_back(rounded(v, out, element_options(o, base + j)));
    }
  }
  return result;
}

/// Layernorm (rms = false) or rmsnorm (rms = true).
std::vector<OracleValue> norm_rows(const MatrixRef& x, double eps, std::optional<VectorRef> gamma,
                                   std::optional<VectorRef> beta, const FormatSpec& out, const RoundOptions& o,
                                   bool rms) {
  const char* what = rms ? "oracle_rmsnorm" : "oracle_layernorm";
  check_matrix(x, what);
  if (!std::isfinite(eps) || eps < 0)
    throw std::invalid_argument(std::string(what) + ": eps must be finite and >= 0");
  for (const auto* v : {&gamma, &beta}) {
    if (*v && ((*v)->format == nullptr || (*v)->data.size() != x.cols))
      throw std::invalid_argument(std::string(what) + ": gamma/beta need a format and one element per column (" +
                                  std::to_string(x.cols) + ")");
  }
  WideExponents wide;
  std::vector<Input> g;
  std::vector<Input> bt;
  for (std::size_t j = 0; j < x.cols; ++j) {
    if (gamma) g.push_back(read(*gamma->format, gamma->data[j], o.daz));
    if (beta) bt.push_back(read(*beta->format, beta->data[j], o.daz));
  }
  std::vector<OracleValue> result;
  result.reserve(x.data.size());
  const auto n = static_cast<long>(x.cols);
  for (std::size_t r = 0; r < x.rows; ++r) {
    const Row row = read_row(x, r, o.daz);
    const std::size_t base = r * x.cols;
    if (row.any_nan || row.any_pos_inf || row.any_neg_inf || x.cols == 0) {
      const ExactValue nan = nan_value(!row.any_nan);
      for (std::size_t j = 0; j < x.cols; ++j) result.push_back(rounded(nan, out, element_options(o, base + j)));
      continue;
    }
    // Exact row sums: S1 = Σx, S2 = Σx², max|x|, max x².
    std::vector<Mpfr> xs;
    std::vector<Mpfr> sq;
    xs.reserve(x.cols);
    sq.reserve(x.cols);
    std::vector<mpfr_ptr> px;
    std::vector<mpfr_ptr> ps;
    double max_abs = 0;
    for (const Input& in : row.x) {
      xs.emplace_back(kKeep);
      set_input(xs.back().get(), in);
      sq.emplace_back(kKeep);
      exact_op(mpfr_sqr(sq.back().get(), xs.back().get(), MPFR_RNDN));
      px.push_back(xs.back().get());
      ps.push_back(sq.back().get());
      max_abs = std::max(max_abs, std::fabs(input_double(in)));
    }
    Mpfr s1(kExactPrec);
    Mpfr s2(kExactPrec);
    exact_op(mpfr_sum(s1.get(), px.data(), px.size(), MPFR_RNDN));
    exact_op(mpfr_sum(s2.get(), ps.data(), ps.size(), MPFR_RNDN));
    Mpfr q(kExactPrec);
    Mpfr t(kExactPrec);
    exact_op(mpfr_set_d(t.get(), eps, MPFR_RNDN));
    if (rms) {
      // mean(x²) + eps = (S2 + n eps) / n = Q / n.
      exact_op(mpfr_mul_si(t.get(), t.get(), n, MPFR_RNDN));
      exact_op(mpfr_add(q.get(), s2.get(), t.get(), MPFR_RNDN));
    } else {
      // σ² + eps = (n S2 - S1² + eps n²) / n².
      exact_op(mpfr_mul_si(t.get(), t.get(), n, MPFR_RNDN));
      exact_op(mpfr_mul_si(t.get(), t.get(), n, MPFR_RNDN));
      exact_op(mpfr_mul_si(q.get(), s2.get(), n, MPFR_RNDN));
      Mpfr s1sq(kExactPrec);
      exact_op(mpfr_sqr(s1sq.get(), s1.get(), MPFR_RNDN));
      exact_op(mpfr_sub(q.get(), q.get(), s1sq.get(), MPFR_RNDN));
      exact_op(mpfr_add(q.get(), q.get(), t.get(), MPFR_RNDN));
    }
    Mpfr abs_terms(53);
    if (rms) {
      mpfr_sum(abs_terms.get(), ps.data(), ps.size(), MPFR_RNDU);
    } else {
      for (mpfr_ptr v : px) mpfr_abs(v, v, MPFR_RNDN);
      mpfr_sum(abs_terms.get(), px.data(), px.size(), MPFR_RNDU);
      for (std::size_t j = 0; j < x.cols; ++j) set_input(xs[j].get(), row.x[j]);  // restore signs
    }
    const double abs_sum = up_double(abs_terms.get());
    const double max_term = rms ? max_abs * max_abs : max_abs;  // exact: a square of <= 24 bits
    if (mpfr_zero_p(q.get())) {  // 0 / 0
      const ExactValue nan = nan_value(true);
      for (std::size_t j = 0; j < x.cols; ++j) result.push_back(rounded(nan, out, element_options(o, base + j)));
      continue;
    }
    // Numerators: layernorm n x_j - S1, rmsnorm x_j.
    std::vector<Mpfr> num;
    num.reserve(x.cols);
    for (std::size_t j = 0; j < x.cols; ++j) {
      num.emplace_back(kExactPrec);
      if (rms) {
        exact_op(mpfr_set(num.back().get(), xs[j].get(), MPFR_RNDN));
      } else {
        exact_op(mpfr_mul_si(num.back().get(), xs[j].get(), n, MPFR_RNDN));
        exact_op(mpfr_sub(num.back().get(), num.back().get(), s1.get(), MPFR_RNDN));
      }
    }
    Mpfr gm(kKeep);
    Mpfr bm(kKeep);
    for (std::size_t j = 0; j < x.cols; ++j) {
      const bool bad_g = gamma && !finite(g[j]);
      const bool bad_b = beta && !finite(bt[j]);
      ExactValue v;
      if (bad_g || bad_b) {
        v = nan_value(!((gamma && g[j].cls == FpClass::nan) || (beta && bt[j].cls == FpClass::nan)));
      } else {
        if (gamma) set_input(gm.get(), g[j]);
        if (beta) set_input(bm.get(), bt[j]);
        v = ziv([&](mpfr_prec_t p) {
          // layernorm: num / sqrt(Q); rmsnorm: num / sqrt(Q / n). One square root of a
          // dyadic number (exact when it is a square), so that exact results are proved exact.
          const Iv radicand = rms ? div(point(q.get(), p), point_si(n, p)) : point(q.get(), p);
          Iv val = div(point(num[j].get(), p), monotone(mpfr_sqrt, radicand, true));
          if (gamma) val = mul(val, point(gm.get(), p));
          if (beta) val = add(val, point(bm.get(), p));
          return val;
        });
      }
      v.abs_sum = abs_sum;
      v.max_abs = max_term;
      result.push_back(rounded(v, out, element_options(o, base + j)));
    }
  }
  return result;
}

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

// ---------------------------------------------------------------------------------------

Result round_exact(const FormatSpec& f, const ExactValue& v, const RoundOptions& o) {
  Result r;
  switch (v.kind) {
    case ExactValue::Kind::nan:
      r = round_nan(f, false, (v.flags & status_invalid) != 0);
      break;
    case ExactValue::Kind::infinite:
      r = round_infinity(f, v.value.negative, o);
      break;
    case ExactValue::Kind::finite: {
      Unrounded u = v.value;
      if (u.significand == 0 && o.rounding == Rounding::rdn) u.negative = v.zero_negative_rdn;
      r = round_to(f, u, o);
      break;
    }
  }
  r.status |= v.flags;
  return r;
}

OracleValue oracle_dot(const FormatSpec& fa, std::span<const Bits> a, const FormatSpec& fb, std::span<const Bits> b,
                       const FormatSpec& out, const RoundOptions& o, std::optional<ScalarRef> addend) {
  const FpEnvGuard guard;
  if (a.size() != b.size())
    throw std::invalid_argument("oracle_dot: lengths differ (" + std::to_string(a.size()) + " vs " +
                                std::to_string(b.size()) + ")");
  if (addend && addend->format == nullptr) throw std::invalid_argument("oracle_dot: addend without a format");
  WideExponents wide;
  return rounded(exact_dot(fa, a.data(), 1, &fb, b.data(), 1, a.size(), addend, o.daz), out, o);
}

OracleValue oracle_sum(const FormatSpec& f, std::span<const Bits> x, const FormatSpec& out, const RoundOptions& o) {
  const FpEnvGuard guard;
  WideExponents wide;
  return rounded(exact_dot(f, x.data(), 1, nullptr, nullptr, 0, x.size(), std::nullopt, o.daz), out, o);
}

std::vector<OracleValue> oracle_matmul(const MatrixRef& a, const MatrixRef& b, const FormatSpec& out,
                                       const RoundOptions& o, std::optional<MatrixRef> c) {
  const FpEnvGuard guard;
  check_matrix(a, "oracle_matmul A");
  check_matrix(b, "oracle_matmul B");
  if (a.cols != b.rows)
    throw std::invalid_argument("oracle_matmul: A is " + std::to_string(a.rows) + "x" + std::to_string(a.cols) +
                                " but B is " + std::to_string(b.rows) + "x" + std::to_string(b.cols));
  if (c) {
    check_matrix(*c, "oracle_matmul C");
    if (c->rows != a.rows || c->cols != b.cols)
      throw std::invalid_argument("oracle_matmul: C must be " + std::to_string(a.rows) + "x" + std::to_string(b.cols));
  }
  WideExponents wide;
  std::vector<OracleValue> result;
  result.reserve(a.rows * b.cols);
  for (std::size_t i = 0; i < a.rows; ++i) {
    for (std::size_t j = 0; j < b.cols; ++j) {
      std::optional<ScalarRef> addend;
      if (c) addend = ScalarRef{c->format, c->data[i * b.cols + j]};
      const ExactValue v = exact_dot(*a.format, a.data.data() + i * a.cols, 1, b.format, b.data.data() + j,
                                     static_cast<std::ptrdiff_t>(b.cols), a.cols, addend, o.daz);
      result.push_back(rounded(v, out, element_options(o, i * b.cols + j)));
    }
  }
  return result;
}

std::vector<OracleValue> oracle_softmax(const MatrixRef& x, const FormatSpec& out, const RoundOptions& o) {
  const FpEnvGuard guard;
  return softmax_like(x, out, o, false);
}

std::vector<OracleValue> oracle_log_softmax(const MatrixRef& x, const FormatSpec& out, const RoundOptions& o) {
  const FpEnvGuard guard;
  return softmax_like(x, out, o, true);
}

std::vector<OracleValue> oracle_layernorm(const MatrixRef& x, double eps, std::optional<VectorRef> gamma,
                                          std::optional<VectorRef> beta, const FormatSpec& out,
                                          const RoundOptions& o) {
  const FpEnvGuard guard;
  return norm_rows(x, eps, gamma, beta, out, o, false);
}

std::vector<OracleValue> oracle_rmsnorm(const MatrixRef& x, double eps, std::optional<VectorRef> gamma,
                                        const FormatSpec& out, const RoundOptions& o) {
  const FpEnvGuard guard;
  return norm_rows(x, eps, gamma, std::nullopt, out, o, true);
}

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
