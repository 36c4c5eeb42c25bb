// MPFR oracles for row operations: softmax and log-softmax (Ziv loop over a whole row) and
// layernorm and rmsnorm (exact row sums, one square root enclosed per element).
#include "oracles/mpfr_oracles.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "formats/platform.h"
#include "oracles/mpfr_detail.h"

namespace numfid {

namespace detail::mpfr {

namespace {

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

}  // namespace

}  // namespace detail::mpfr

using namespace detail::mpfr;

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

}  // namespace numfid
