// MPFR oracles for reductions: exact dot products, sums and matmuls (the exact Σ of the
// products, one rounding into the output format), and round_exact.
#include "oracles/mpfr_oracles.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "formats/platform.h"
#include "oracles/mpfr_detail.h"

namespace numfid {

namespace detail::mpfr {

namespace {

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

}  // namespace

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

}  // namespace detail::mpfr

using namespace detail::mpfr;

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

}  // namespace numfid
