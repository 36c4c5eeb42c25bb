// Internals of the MPFR oracles shared by their source files (mpfr_core.cpp, mpfr_oracles.cpp,
// mpfr_rows.cpp, mpfr_unary.cpp): RAII MPFR values, inputs read exactly, interval arithmetic
// and the Ziv loop. Included by those files only: MPFR types stay inside oracles/ (DESIGN.md).
#pragma once

#include <gmp.h>
#include <mpfr.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "oracles/mpfr_oracles.h"

namespace numfid::detail::mpfr {

// ---------------------------------------------------------------------------------------
// MPFR plumbing (mpfr_core.cpp).

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

/// The pattern x of format f read exactly (subnormals as finite non-zero; as zero under `daz`).
Input read(const FormatSpec& f, Bits x, bool daz);

/// True if the input is finite (zero or non-zero).
bool finite(const Input& in);

/// Sets r to the input (exact when r has >= 64 bits; NaN and ±inf as such).
void set_input(mpfr_ptr r, const Input& in);

/// The input's value as a double (NaN and ±inf as such).
double input_double(const Input& in);

/// The canonical Unrounded standing for a magnitude beyond 2^kFar (`huge`) or below 2^-kFar.
Unrounded far_value(bool negative, bool huge);

/// |x| (finite, 128 bits of precision at most) to an Unrounded with the given sticky bit.
Unrounded unrounded_of(mpfr_srcptr x, bool sticky);

/// The exact finite value x as an Unrounded: truncated to 128 bits, sticky if bits were lost.
Unrounded truncate(mpfr_srcptr x);

/// The nearest double to the value an Unrounded stands for.
double nearest_double(const Unrounded& u);

/// A NaN result, `invalid` when the operation raised the invalid flag.
ExactValue nan_value(bool invalid);

/// An infinite result with the given flags.
ExactValue inf_value(bool negative, Status flags = status_ok);

/// A finite result (zero_negative_rdn follows the sign, as_double the nearest double).
ExactValue finite_value(const Unrounded& u);

// ---------------------------------------------------------------------------------------
// Intervals: lo <= v <= hi, with lo < v when lo_strict and v < hi when hi_strict. Every
// endpoint is a directed rounding of an exact bound, strict when that rounding was inexact
// (MPFR's ternary value) or when strictness propagates through a strictly monotone step.
// The operations are in mpfr_core.cpp.

/// An enclosure of one exact value at working precision prec_of(*this).
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

/// Working precision of an interval.
mpfr_prec_t prec_of(const Iv& a);

/// The enclosure [x, x] at precision p (directed roundings of x, strict where inexact).
Iv point(mpfr_srcptr x, mpfr_prec_t p);

/// The exact enclosure [x, x] of a small integer (p >= 64).
Iv point_si(long x, mpfr_prec_t p);

/// -a, a + b, a - b, a·b, a / b (b certainly non-zero, else std::logic_error).
Iv neg(const Iv& a);
Iv add(const Iv& a, const Iv& b);
Iv sub(const Iv& a, const Iv& b);
Iv mul(const Iv& a, const Iv& b);
Iv div(const Iv& a, const Iv& b);

/// An MPFR function of one argument (mpfr_exp, mpfr_log, ...).
using UnaryMpfr = int (*)(mpfr_ptr, mpfr_srcptr, mpfr_rnd_t);

/// f(a) for a strictly monotone f, increasing or decreasing.
/// Arms the calling thread to free its MPFR caches (mpfr_free_cache) when it ends; called
/// before every MPFR function that fills them (constants such as log 2 and π).
void free_caches_at_thread_exit();
Iv monotone(UnaryMpfr f, const Iv& a, bool increasing);

/// Σ of intervals: mpfr_sum of the lower and of the upper ends (one rounding each).
Iv sum(const std::vector<const Iv*>& terms, mpfr_prec_t p);

/// The truncation to 128 bits (and the sticky bit) of the exact value, if the enclosure
/// decides it; canonical far values for certainly tiny or huge magnitudes.
std::optional<Unrounded> decide(const Iv& v);

/// At the precision cap: the 128-bit number nearest the enclosure's midpoint, as exact.
Unrounded presume(const Iv& v);

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

/// x rounded up to a double.
double up_double(mpfr_srcptr x);

// ---------------------------------------------------------------------------------------
// Shared by the public functions (mpfr_oracles.cpp).

/// Throws std::invalid_argument unless m has a format and rows·cols elements.
void check_matrix(const MatrixRef& m, const char* what);

/// The options of element i: o with stochastic stream o.stream + i.
RoundOptions element_options(const RoundOptions& o, std::size_t i);

/// v rounded into `out`, paired with v.
OracleValue rounded(const ExactValue& v, const FormatSpec& out, const RoundOptions& o);

}  // namespace numfid::detail::mpfr
