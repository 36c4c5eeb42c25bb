#include "tolerances/row_scale.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "formats/format_spec.h"
#include "tolerances/bounds.h"
#include "tolerances/parallel_detail.h"

namespace numfid::detail {
namespace {

using LD = long double;

/// Round to nearest even into a float format of precision p and least normal exponent `emn`
/// (subnormals kept). The rule admits rows far below the largest value, so no overflow here.
/// A double operation rounded once more this way is the format's correctly rounded operation for
/// p <= 26 (53 >= 2p + 2: Figueroa, "When is double rounding innocuous?", SIGNUM 30(3), 1995);
/// p = 53 is the double itself.
double rn(double v, int p, int emn) {
  if (v == 0 || !std::isfinite(v) || p >= 53) return v;
  const int e = std::max(std::ilogb(v), emn);
  const double scale = std::ldexp(1.0, e - p + 1);
  return std::nearbyint(v / scale) * scale;
}

/// λ = √(2 ln(2/10^-6)): a legal row's scale error leaves λ standard deviations with probability
/// at most 10^-6 under the model (Azuma–Hoeffding, as §4.1's radius).
const double kLambda = std::sqrt(2 * std::log(2 / 1e-6));

/// The orders the emulated legal kernels sum in (§8.4: the model check on the data).
enum class Order { sequential, reverse, pairwise, increasing, decreasing };
constexpr Order kOrders[] = {Order::sequential, Order::reverse, Order::pairwise, Order::increasing, Order::decreasing};
constexpr const char* kOrderNames[] = {"sequential", "reverse", "pairwise", "increasing |term|", "decreasing |term|"};
/// How the emulated kernels form the scale: rsqrt (correctly rounded), 1/sqrt then a product,
/// or a division of every element by sqrt(v).
enum class Path { rsqrt, reciprocal, divide };
constexpr Path kPaths[] = {Path::rsqrt, Path::reciprocal, Path::divide};
constexpr const char* kPathNames[] = {"rsqrt", "1/sqrt", "division by sqrt"};

template <class Round>
double pairwise(const std::vector<double>& t, std::size_t lo, std::size_t hi, const Round& r) {
  if (hi == lo) return 0;
  if (hi - lo == 1) return t[lo];
  const std::size_t mid = lo + (hi - lo) / 2;
  return r(pairwise(t, lo, mid, r) + pairwise(t, mid, hi, r));
}

/// The order's permutation of `t` for a sequential pass (pairwise: index order; the caller
/// builds the tree).
std::vector<double> ordered(std::vector<double> t, Order o) {
  switch (o) {
    case Order::reverse:
      std::reverse(t.begin(), t.end());
      break;
    case Order::increasing:
      std::stable_sort(t.begin(), t.end(), [](double a, double b) { return std::fabs(a) < std::fabs(b); });
      break;
    case Order::decreasing:
      std::stable_sort(t.begin(), t.end(), [](double a, double b) { return std::fabs(a) > std::fabs(b); });
      break;
    default:
      break;
  }
  return t;
}

/// Σ t in order `o`, every addition rounded by `r`.
template <class Round>
double sum_in(std::vector<double> t, Order o, const Round& r) {
  t = ordered(std::move(t), o);
  if (o == Order::pairwise) return pairwise(t, 0, t.size(), r);
  double s = 0;
  for (const double v : t) s = r(s + v);
  return s;
}

/// Count, mean and M2 of a part, merged as Chan et al. (and PyTorch's WelfordOps::combine) do.
struct Moments {
  double n = 0, mean = 0, m2 = 0;
};

template <class Round>
Moments chan_tree(const std::vector<double>& x, std::size_t lo, std::size_t hi, const Round& r) {
  if (hi - lo == 1) return {1, x[lo], 0};
  const std::size_t mid = lo + (hi - lo) / 2;
  const Moments a = chan_tree(x, lo, mid, r), b = chan_tree(x, mid, hi, r);
  Moments c;
  c.n = a.n + b.n;
  const double nb_over_n = r(b.n / c.n), delta = r(b.mean - a.mean);
  c.mean = r(a.mean + r(delta * nb_over_n));
  c.m2 = r(r(a.m2 + b.m2) + r(r(r(delta * delta) * a.n) * nb_over_n));
  return c;
}

/// The mean and biased variance a legal kernel computes of row `x` by `method` in order `o`
/// (rmsnorm, `ln` false: the mean square), every operation rounded by `r`; n_c = fl(n).
template <class Round>
std::pair<double, double> emulated_moments(const std::vector<double>& x, VarianceMethod method, Order o, bool ln,
                                           double n_c, const Round& r) {
  const std::size_t n = x.size();
  if (!ln) {
    std::vector<double> q(n);
    for (std::size_t j = 0; j < n; ++j) q[j] = r(x[j] * x[j]);
    return {0.0, r(sum_in(q, o, r) / n_c)};
  }
  switch (method) {
    case VarianceMethod::welford:
    case VarianceMethod::chan: {
      if (method == VarianceMethod::chan || o == Order::pairwise) {
        const Moments m = chan_tree(ordered(x, o == Order::pairwise ? Order::sequential : o), 0, n, r);
        return {m.mean, r(m.m2 / n_c)};
      }
      double m = 0, m2 = 0, k = 0;
      for (const double v : ordered(x, o)) {
        k += 1;
        const double delta = r(v - m);
        m = r(m + r(delta / k));
        m2 = r(m2 + r(delta * r(v - m)));
      }
      return {m, r(m2 / n_c)};
    }
    case VarianceMethod::sumsq: {
      const double mean = r(sum_in(x, o, r) / n_c);
      std::vector<double> q(n);
      for (std::size_t j = 0; j < n; ++j) q[j] = r(x[j] * x[j]);
      return {mean, std::max(0.0, r(r(sum_in(q, o, r) / n_c) - r(mean * mean)))};
    }
    default: {
      const double mean = r(sum_in(x, o, r) / n_c);
      std::vector<double> q(n);
      for (std::size_t j = 0; j < n; ++j) {
        const double dv = r(x[j] - mean);
        q[j] = r(dv * dv);
      }
      return {mean, r(sum_in(q, o, r) / n_c)};
    }
  }
}

/// The variance's relative error under one method (row_scale_rule).
/// `shift` bounds the systematic part always, `shift_g` on the event G of §8.4 (<= shift).
struct VarModel {
  double V = 0, b = 0, det = 0, shift = 0, shift_g = 0;
};

/// A row's model (§8.4): the weights w_j of its scale estimate, and the variance bound V, the
/// largest increment b and the systematic shift of the estimate under the claim.
struct RowModel {
  bool admitted = false;
  std::vector<double> w;
  // `shift` bounds the systematic part always; `shift_g` (<= shift) on the event G of §8.4.
  double sw2 = 0, V = 0, b = 0, shift = 0, shift_g = 0;
};

/// Σ_(j=2..m) B(j)² and B(m) for the terms `t` (>= 0 or signed): the partial-sum bound of §4.1
/// (bounds.h partial_sum_bound) over their magnitudes, with the slack of its double sums.
std::pair<double, double> partial_sum_squares(std::span<const double> t, double u, int extra) {
  std::vector<double> pos, neg;
  double abs_sum = 0;
  for (const double v : t) {
    (v >= 0 ? pos : neg).push_back(std::fabs(v));
    abs_sum += std::fabs(v);
  }
  std::sort(pos.rbegin(), pos.rend());
  std::sort(neg.rbegin(), neg.rend());
  const auto [sum, last] = partial_sum_bound(pos, neg, t.size(), abs_sum, u, extra);
  const double slack = 1 + static_cast<double>(t.size() + 2) * 0x1p-52;  // the double sums
  return {sum * slack * slack, last * slack};
}

}  // namespace

RowScaleFinding row_scale_rule(RowOp op, const RowClaim& c, const RowScaleData& d, double alpha) {
  RowScaleFinding f;
  const FormatSpec& fc = *c.compute;
  const FormatSpec& fo = *c.out;
  if (op != RowOp::layernorm && op != RowOp::rmsnorm) return f;
  const bool ln = op == RowOp::layernorm;
  if (c.fn_abs > 0) {
    f.why_not = "--fn-abs gives the function an absolute error, which the rule's model does not bound";
    return f;
  }
  const bool stochastic = c.out_rounding == Rounding::stochastic;
  if (c.out_rounding != Rounding::rne && c.out_rounding != Rounding::rna && !stochastic) {
    f.why_not = "the output rounding is directed (one-sided by design, no mean-zero law)";
    return f;
  }
  const int p = fc.precision, emn = emin(fc);
  const auto R = [&](double v) { return rn(v, p, emn); };
  const auto exact_in_compute = [&](std::span<const double> v) {
    return std::ranges::all_of(
        v, [&](double a) { return !std::isfinite(a) || (std::fabs(a) <= max_finite(fc) && R(a) == a); });
  };
  if (!exact_in_compute(d.x) || !exact_in_compute(d.gamma) || !exact_in_compute(d.beta)) {
    f.why_not = fmt::format(
        "an input, gamma or beta is not a value of the compute format {} (its cast is not modelled)", fc.name);
    return f;
  }
  const std::size_t n = d.cols;
  const double u = std::ldexp(1.0, -p), eta = min_positive(fc), N = static_cast<double>(n);
  const bool cast_exact = cast_is_exact(fc, fo);
  const bool shifted = ln && c.norm_form == NormForm::shifted;
  const double fn_rel = c.fn_ulps * 2 * u;  // a function within fn_ulps ulps: relative error <= fn_ulps·2u
  std::vector<RowModel> model(d.rows);
  // The event G of §8.4: every running mean of every row's merge tree within λ_G standard
  // deviations of its exact mean (Azuma–Hoeffding), and every row's variance within λ_G of its
  // (Freedman), rows·(n + 1) events of probability at most 2·exp(−λ_G²/2) each, together at most
  // beta_g. Off G nothing is claimed: beta_g is added to the false-alarm probability where a
  // row's systematic bound uses G (tighter than the deterministic one), and only then.
  const double beta_g = alpha * 1e-3;
  const double L_g = std::log(2 * static_cast<double>(d.rows) * (static_cast<double>(d.cols) + 1) / beta_g);
  const double lambda_g2 = 2 * L_g;
  // Each row on its own (on every core): 0 left out, 1 admitted, 2 vacuous, 3 counts not exact,
  // 4 left out near the format's range (its squares summed, or its results, could overflow).
  std::vector<char> status(d.rows, 0);
  const auto analyse = [&](std::size_t r) {
    RowModel& m = model[r];
    const std::span<const double> x = d.x.subspan(r * n, n), y = d.exact.subspan(r * n, n), o = d.out.subspan(r * n, n);
    bool finite = true;
    double xmax = 0, ymax = 0;
    for (std::size_t j = 0; j < n; ++j) {
      finite = finite && std::isfinite(x[j]) && std::isfinite(y[j]) && std::isfinite(o[j]);
      xmax = std::max(xmax, std::fabs(x[j]));
      ymax = std::max(ymax, std::fabs(y[j]));
    }
    if (!finite || n < 2) return;
    if (xmax * xmax * N * 4 >= max_finite(fc) || ymax * 4 >= std::min(max_finite(fc), max_finite(fo))) {
      status[r] = 4;
      return;
    }
    // The exact row: mean, terms t_j = d_j² (d_j = x_j − μ; rmsnorm: x_j²), their sum S.
    LD mu = 0, abs_x = 0;
    if (ln)
      for (const double v : x) mu += v, abs_x += std::fabs(static_cast<LD>(v));
    mu /= static_cast<LD>(n);
    LD S = 0;
    for (const double v : x) S += (v - mu) * (v - mu);
    if (!(S > 0)) return;
    const LD var = S / static_cast<LD>(n), v_eps = var + static_cast<LD>(c.eps);
    const double kappa = static_cast<double>(var / v_eps), rstar = static_cast<double>(1 / std::sqrt(v_eps));
    const double Sd = static_cast<double>(S), vard = static_cast<double>(var), mud = static_cast<double>(mu);
    const double amu = std::fabs(mud);
    // The variance's relative error Δvar/var under each method the claim allows (§8.4): its
    // martingale part's variance bound V and largest increment b, a deterministic first-order
    // bound `det` (admission and the second-order allowance) and the systematic part: `shift`
    // always, `shift_g` on the event G. The mean's error e_μ likewise (Rm: the martingale's scale,
    // Bm: its largest increment), for the mean's leak into y through a varying gamma.
    VarModel vm;
    double R_mu = 0, B_mu = 0;
    bool vacuous = false;
    std::vector<double> dev(n);
    double range_lo = INFINITY, range_hi = -INFINITY;
    for (std::size_t j = 0; j < n; ++j) {
      dev[j] = static_cast<double>(x[j] - mu);
      range_lo = std::min(range_lo, x[j]);
      range_hi = std::max(range_hi, x[j]);
    }
    const double X = std::max(std::fabs(range_lo), std::fabs(range_hi)), Rg = range_hi - range_lo;
    // A sum of the row in any order, then one or two roundings of the division by n.
    const auto [sqx, Bx] = partial_sum_squares(x, u, 0);
    const double g_sum = gamma_n(N - 1, u) * static_cast<double>(abs_x) / N;
    const double E_sum = g_sum * (1 + u) * (1 + u) + (2 * u + u * u) * (amu + g_sum) + 2 * eta;
    const double R_sum = std::sqrt(u * u * sqx / (N * N) + 2 * std::pow(u * (amu + E_sum), 2));
    bool ok = true;
    const auto take = [&](const VarModel& a, double Rm, double Bm) {
      vm = {std::max(vm.V, a.V), std::max(vm.b, a.b), std::max(vm.det, a.det), std::max(vm.shift, a.shift),
            std::max(vm.shift_g, a.shift_g)};
      R_mu = std::max(R_mu, Rm), B_mu = std::max(B_mu, Bm);
    };
    const VarianceMethod method = ln ? c.variance : VarianceMethod::two_pass;
    if (method == VarianceMethod::two_pass || method == VarianceMethod::any) {
      // Two-pass (rmsnorm: the sum of squares, E_μ = 0): terms d̂_j² within E_μ and a rounding
      // of each deviation, squared and rounded; B(j) over these envelopes bounds every addition
      // of j terms. Leaves: the square's rounding (magnitude t_j) and the deviation's (2t_j).
      // Σ(x_j − μ̂)² = S + n·e_μ² exactly: the systematic part.
      const double E = ln ? E_sum : 0;
      std::vector<double> tup(n);
      double sum_up = 0, sum_up2 = 0;
      for (std::size_t j = 0; j < n; ++j) {
        const double a = ln ? (std::fabs(dev[j]) + E) * (1 + u) : std::fabs(dev[j]);
        tup[j] = a * a * (1 + u);
        sum_up += tup[j];
        sum_up2 += tup[j] * tup[j];
      }
      const auto [sq, Bn] = partial_sum_squares(tup, u, 1);
      take({u * u * (sq + (ln ? 5 : 1) * sum_up2) / (Sd * Sd), u * Bn / Sd,
            (sum_up - Sd) / Sd + gamma_n(N - 1, u) * sum_up / Sd + (N + 2) * eta / Sd,
            N * E * E / Sd + (N + 2) * eta / Sd, N * E * E / Sd + (N + 2) * eta / Sd},
           ln ? R_sum : 0, ln ? u * Bx / N : 0);
    }
    if (method == VarianceMethod::welford || method == VarianceMethod::chan ||
        method == VarianceMethod::rowwise_moments || method == VarianceMethod::any) {
      // A tree of merges (Welford's steps merge one element; Chan's and RowwiseMoments' merge
      // parts). A merge's M2 roundings (at most 7, their magnitudes' squares adding up to at most
      // 10·B(s)², B(s) >= the merged part's M2: the s largest squared deviations — the deviation
      // δ's rounding reaches δ²·n_a·n_b/n twice) and its mean's (at most 4 of magnitude
      // <= u·(max|x| + range)), each reaching var through ∂M2/∂μ_w = 2·n_w·(μ_w − μ) (<= 2·D(s),
      // D(s) the s largest deviations of one sign) and Welford's direct use of the new mean
      // (<= range). A tree of n leaves has at most n − s + 1 merges of s or more elements (§4.1),
      // so sums over merges are bounded by sums over s = 2..n. The counts must be exact.
      if (N > std::ldexp(1.0, p)) {
        ok = false;
      } else {
        std::vector<double> sq_dev(n);
        for (std::size_t j = 0; j < n; ++j) sq_dev[j] = dev[j] * dev[j] * (1 + 4 * u);
        const auto [sqB, Bn] = partial_sum_squares(sq_dev, u, 1);
        std::vector<double> pos, neg;
        for (const double v : dev) (v >= 0 ? pos : neg).push_back(std::fabs(v));
        std::sort(pos.rbegin(), pos.rend());
        std::sort(neg.rbegin(), neg.rend());
        // A merge's mean roundings by the size s of the part it makes: fl(μ̂_a + ·)'s of
        // magnitude |μ̂_v| <= |μ| + D(s)/s + E (the part's mean lies within D(s)/s of the row's),
        // and three — δ̂ = μ̂_b − μ̂_a's, r̂'s, the product's — of |μ̂_v − μ̂_a| <= min(range,
        // D(s)/s + max|x_j − μ|) + 2E (a right fold's singleton a has r ≈ 1: the δ term is real).
        // E bounds every part's mean error deterministically: 4 roundings per merge of at most
        // um = u·(max|x| + range + 2E) + η (the computed values' magnitudes), weighted n_v/n_w
        // (Σ over a part's merges <= Σ_(t=2..n) t/n = sumW): E = 4·um·sumW, solved for E.
        double sumW = 0;
        for (std::size_t j = 2; j <= n; ++j) sumW += static_cast<double>(j) / N;
        const double den = 1 - 8 * u * sumW;
        const double E = den > 0 ? 4 * (u * (X + Rg) + eta) * sumW / den : INFINITY;
        const double um = u * (X + Rg + 2 * E) + eta;
        if (!std::isfinite(E)) vacuous = true;
        const double dmax = std::max(pos.empty() ? 0.0 : pos[0], neg.empty() ? 0.0 : neg[0]);
        double pp = 0, qq = 0, sumD2 = 0, sumD = 0, Dn = 0, sumW2 = 0;
        for (std::size_t j = 1; j <= n; ++j) {
          if (j <= pos.size()) pp += pos[j - 1];
          if (j <= neg.size()) qq += neg[j - 1];
          if (j < 2) continue;
          const double Ds = std::max(pp, qq), sj = static_cast<double>(j);
          const double m1 = u * (amu + Ds / sj + E) + eta, m3 = u * (std::min(Rg, Ds / sj + dmax) + 2 * E) + eta;
          const double coef = Rg + 2 * Ds;
          sumD2 += coef * coef * (m1 * m1 + 3 * m3 * m3), sumD += coef * (m1 + 3 * m3);
          Dn = std::max(Dn, coef * std::max(m1, m3));
          sumW2 += (sj / N) * (sj / N) * (m1 * m1 + 3 * m3 * m3);
        }
        // Second order: M2 as computed from the computed means is Σ_v w_v·(δ_v + e_b − e_a)²
        // (Chan) or Σ (x − μ_a − e_a)(x − μ_v − e_v) (Welford), so beyond the first-order terms
        // above it moves by Σ_v w_v·(e_b − e_a)² <= 2·w_v·(h(n_a)² + h(n_b)²), resp. h(n_a)·h(n_v),
        // h(s) a bound on a part of s elements' mean error. With h(s)² <= K·s^q both are at most
        // 2K·n_a·n_b·n_v^(q−1), and Σ_v n_a·n_b = n(n − 1)/2 over every tree (each pair of leaves
        // meets once). Deterministically h(s) <= 4·um·(s + 1)/2 <= 3·um·s (q = 2); on G, h(s) <=
        // λ_G·σ(s) with σ(s)² <= 4·um²·Σ_(t=2..s) (t/s)²·c <= (8/3)·c·um²·s (q = 1), c = (1 +
        // γ_2n)² for the rounded weights r̂ (at most two roundings per level of a path of <= n).
        const double c_r = (1 + gamma_n(2 * N, u)) * (1 + gamma_n(2 * N, u));
        const double Q_det = 9 * um * um * N * N * (N - 1);
        const double Q_g = (16.0 / 3.0) * c_r * lambda_g2 * um * um * N * (N - 1);
        // ... and the products of δ's (or Welford's factors') own roundings with e_b − e_a and with
        // themselves (γ₃ and 10u², Cauchy–Schwarz against Σ w·δ² = S), carried through the M2
        // additions (at most 2(n − 1) of non-negative values).
        const double g3 = 3 * u / (1 - 3 * u);
        const auto second_order = [&](double Q) {
          return (Q + g3 * (2 * std::sqrt(Sd * Q) + Q) + 10 * u * u * Sd) * (1 + gamma_n(2 * N, u));
        };
        take({(10 * u * u * sqB + sumD2) / (Sd * Sd), std::max(2 * u * Bn, Dn) / Sd,
              (10 * gamma_n(N, u) * Sd * (1 + 4 * u) + sumD) / Sd + (N + 2) * eta / Sd,
              (second_order(Q_det) + (N + 2) * eta) / Sd, (second_order(std::min(Q_det, Q_g)) + (N + 2) * eta) / Sd},
             std::sqrt(sumW2), um);
      }
    }
    if (method == VarianceMethod::sumsq || method == VarianceMethod::any) {
      // var = fl(fl(Σx²/n) − fl(μ̂²)): the sum of squares (terms x²(1 + u)), two roundings of
      // its division, μ̂²'s and the subtraction's, and the mean's error through −2μ·e_μ; −e_μ² is
      // systematic. Relative to var: cancellation amplifies all of it when |μ| >> σ.
      std::vector<double> x2(n);
      double S2 = 0, S2up = 0, x4 = 0;
      for (std::size_t j = 0; j < n; ++j) {
        x2[j] = x[j] * x[j] * (1 + u);
        S2 += x[j] * x[j];
        S2up += x2[j];
        x4 += x2[j] * x2[j];
      }
      const auto [sq2, B2n] = partial_sum_squares(x2, u, 1);
      const double m2 = (amu + E_sum) * (amu + E_sum), ms = S2 / N;
      take({(u * u * (sq2 + x4) / (N * N) + 2 * u * u * ms * ms + u * u * m2 * m2 + u * u * vard * vard +
             4 * amu * amu * R_sum * R_sum) /
                (vard * vard),
            u * std::max({B2n / N, ms, m2, vard, 2 * amu * Bx / N}) / vard,
            ((gamma_n(N - 1, u) * S2up + (S2up - S2)) / N + 2 * u * ms + u * m2 + u * vard + 2 * amu * E_sum +
             E_sum * E_sum) /
                vard,
            (E_sum * E_sum + (N + 2) * eta / N) / vard, (E_sum * E_sum + (N + 2) * eta / N) / vard},
           R_sum, u * Bx / N);
    }
    if (!ok) {
      status[r] = 3;
      return;
    }
    if (vacuous) {
      status[r] = 2;
      return;
    }
    // Deterministic relative error of v̂ = fl(fl(var̂) + fl(eps)): the method's, the division's
    // two roundings (in the method's own `det` for sumsq) and the sum's, eps's.
    const double theta = kappa * (vm.det + 2 * u + u * u) + 2 * u;
    if (!(theta < 0.25)) {
      status[r] = 2;
      return;
    }
    const double eps_det = 0.5 * std::fabs(std::log1p(-theta)) + fn_rel + 2 * u;
    // The scale's second order, (ε + 4u)², needs a bound ε of |ε_r|: the deterministic one, or on
    // G the variance's martingale within Freedman's radius at λ_G plus its systematic part.
    const double b3 = vm.b * L_g / 3;
    const double t_var = b3 + std::sqrt(b3 * b3 + 2 * L_g * vm.V);
    const double theta_g = kappa * (t_var + vm.shift_g + 2 * u + u * u) + 2 * u;
    const double eps_g = theta_g < theta ? 0.5 * std::fabs(std::log1p(-theta_g)) + fn_rel + 2 * u : eps_det;
    // The weights: w_j = (x_j − μ)·r·g_j, the exact value before beta.
    m.w.resize(n);
    double sw2 = 0, swg = 0;
    for (std::size_t j = 0; j < n; ++j) {
      const double g = d.gamma.empty() ? 1.0 : d.gamma[j];
      m.w[j] = static_cast<double>((x[j] - mu) * static_cast<LD>(rstar) * g);
      sw2 += m.w[j] * m.w[j];
      swg += m.w[j] * g;
    }
    if (!(sw2 > 0)) return;
    // The elements' own roundings (each <= u·magnitude: the deviation, the product with r, with
    // gamma — 3w² — beta's sum y², the shifted form's x·r and r·μ), the output cast's (<= ½ ulp,
    // mean zero under A), and their absolute underflow allowances.
    double per_el = 0, b_el = 0, abs_sys = 0;
    for (std::size_t j = 0; j < n; ++j) {
      const double g = d.gamma.empty() ? 1.0 : std::fabs(d.gamma[j]);
      const double w = m.w[j], w2 = w * w;
      double mags = 3 * w2, big = w2;
      if (!d.beta.empty()) mags += y[j] * y[j], big = std::max(big, y[j] * y[j]);
      if (shifted) {
        const double xr = x[j] * rstar * g, mr = static_cast<double>(mu) * rstar * g;
        mags += xr * xr + mr * mr;
        big = std::max({big, xr * xr, mr * mr});
      }
      per_el += w2 * mags * u * u;
      b_el = std::max(b_el, std::fabs(w) * u * std::sqrt(big));
      if (!cast_exact) {
        // Round to nearest: |ρ| <= half the spacing, mean zero under A. Stochastic rounding: |ρ|
        // below the spacing, mean zero given the value by construction (variance p(1 − p)·s² <=
        // s²/4), less a lean toward zero of up to 2^-R of the spacing with R random bits (§4.2).
        const double spacing = ulp_at(fo, std::fabs(y[j]) * (1 + 2 * eps_det) + 8 * eta);
        const double reach = stochastic ? spacing : spacing / 2;
        per_el += w2 * (stochastic ? spacing * spacing / 4 : reach * reach);
        b_el = std::max(b_el, std::fabs(w) * reach);
        if (stochastic && d.sr_bits > 0) abs_sys += std::fabs(w) * std::ldexp(spacing, -d.sr_bits);
      }
      abs_sys += std::fabs(w) * (4 * eta + std::fabs(y[j]) * 0x1p-52);
    }
    const double leak = ln ? rstar * std::fabs(swg) / sw2 : 0;  // the mean's error reaches δ_r through gamma
    m.V = (kappa / 2) * (kappa / 2) * (vm.V + 2 * u * u) + u * u / 4 + 2 * u * u + leak * leak * R_mu * R_mu +
          per_el / (sw2 * sw2);
    m.b = std::max({(kappa / 2) * vm.b, u, leak * B_mu, b_el / sw2});
    const double sys = fn_rel + (1 - kappa) * u + abs_sys / sw2;
    m.shift = sys + (kappa / 2) * vm.shift + (eps_det + 4 * u) * (eps_det + 4 * u);
    m.shift_g = std::min(m.shift, sys + (kappa / 2) * vm.shift_g + (eps_g + 4 * u) * (eps_g + 4 * u));
    m.sw2 = sw2;
    m.admitted = true;
    status[r] = 1;
  };
  detail::parallel_for(static_cast<std::int64_t>(d.rows),
                       static_cast<std::int64_t>(std::max<std::size_t>(1, 65536 / std::max<std::size_t>(n, 1))),
                       [&](std::int64_t r0, std::int64_t r1) {
                         for (auto r = static_cast<std::size_t>(r0); r < static_cast<std::size_t>(r1); ++r) analyse(r);
                       });
  const auto count = [&](char k) { return static_cast<std::size_t>(std::count(status.begin(), status.end(), k)); };
  const std::size_t admitted = count(1), vacuous = count(2), uncounted = count(3), near_range = count(4);
  if (admitted == 0) {
    f.why_not = vacuous > 0 ? fmt::format(
                                  "no row's variance is bounded within a quarter of itself by the claim's "
                                  "deterministic analysis ({} is too narrow for rows of {})",
                                  fc.name, n)
                : uncounted > 0
                    ? fmt::format("rows of {} elements: a merge's counts are not all values of {}", n, fc.name)
                : near_range > 0
                    ? fmt::format("{} of {} rows are near the formats' range (4·n·max|x|² reaches {}'s largest "
                                  "value, {:g}, or 4·max|y| the output's), where the analysis does not bound the "
                                  "roundings; no other row has finite values and a non-zero spread",
                                  near_range, d.rows, fc.name, max_finite(fc))
                    : "no row has finite values and a non-zero spread";
    return f;
  }
  // Freedman's tail for the inverse-variance weighted mean of the rows' δ_r (over `rows`, the
  // outputs `out_of(r)` of each). Shared roundings (the deviation feeds the sum and the element,
  // r feeds every element) count twice in V and b. `on_g`: the systematic parts' bounds on G.
  bool on_g = false;
  const auto shift_of = [&](const RowModel& m) { return on_g ? m.shift_g : m.shift; };
  const auto judge = [&](const std::vector<std::size_t>& rows, const auto& out_of, double& lean, double& sd) {
    double sw = 0, swx = 0, sws = 0, wb = 0;
    for (const std::size_t r : rows) {
      const RowModel& m = model[r];
      const std::span<const double> y = d.exact.subspan(r * n, n);
      const std::span<const double> o = out_of(r);
      double num = 0;
      for (std::size_t j = 0; j < n; ++j) num += m.w[j] * (o[j] - y[j]);
      const double delta = num / m.sw2, wr = 1 / m.V;
      sw += wr, swx += wr * delta, sws += wr * shift_of(m), wb = std::max(wb, wr * m.b);
    }
    lean = swx / sw;
    const double V = 2 / sw, b = 2 * wb / sw, t = std::fabs(lean) - sws / sw;
    sd = std::sqrt(V);
    if (!(t > 0)) return 0.0;
    return std::min(0.0, std::log(2.0) - t * t / (2 * (V + b * t / 3)));  // log P
  };
  std::vector<std::size_t> all;
  for (std::size_t r = 0; r < d.rows; ++r)
    if (model[r].admitted) all.push_back(r);
  double lean = 0, sd = 0;
  const auto output_row = [&](std::size_t r) { return d.out.subspan(r * n, n); };
  double log_f = judge(all, output_row, lean, sd);
  // Where the bounds that hold always do not decide, those on G may (off G they say nothing: G's
  // probability is added to the false-alarm probability).
  if (!(log_f <= std::log(alpha)) &&
      std::ranges::any_of(all, [&](std::size_t r) { return model[r].shift_g < model[r].shift; })) {
    on_g = true;
    log_f = judge(all, output_row, lean, sd);
  }
  const double log_p = on_g ? std::log(std::exp(log_f) + beta_g) : log_f;
  // Below the least normal double the bound is still a bound: the least normal double.
  f.p = std::max(std::exp(log_p), std::numeric_limits<double>::min());
  f.applies = true;
  if (!(log_p <= std::log(alpha))) return f;
  // The model on these data: legal kernels emulated on up to 64 of the rows, judged the same way.
  std::vector<std::size_t> sample;
  const std::size_t S = std::min<std::size_t>(all.size(), 64);
  for (std::size_t i = 0; i < S; ++i) sample.push_back(all[i * all.size() / S]);
  std::vector<double> emulated(sample.size() * n);  // row sample[i] at i·n
  std::vector<std::size_t> slot(d.rows);
  for (std::size_t i = 0; i < sample.size(); ++i) slot[sample[i]] = i;
  const auto emulated_row = [&](std::size_t r) { return std::span<const double>(emulated).subspan(slot[r] * n, n); };
  const double eps_c = R(c.eps), n_c = R(N);
  // The variance methods emulated: the claim's (any: two-pass, Welford, Σx²; a tree of merges:
  // Welford's steps and Chan's pairwise merges).
  std::vector<VarianceMethod> methods{VarianceMethod::two_pass};
  if (ln) switch (c.variance) {
      case VarianceMethod::any:
        methods = {VarianceMethod::two_pass, VarianceMethod::welford, VarianceMethod::sumsq};
        break;
      case VarianceMethod::chan:
      case VarianceMethod::rowwise_moments:
        methods = {VarianceMethod::welford, VarianceMethod::chan};
        break;
      default:
        methods = {c.variance};
        break;
    }
  for (const VarianceMethod method : methods)
    for (std::size_t oi = 0; oi < std::size(kOrders); ++oi)
      for (std::size_t pi = 0; pi < std::size(kPaths); ++pi) {
        const Order ord = kOrders[oi];
        const Path path = kPaths[pi];
        detail::parallel_for(static_cast<std::int64_t>(sample.size()), 1, [&](std::int64_t i0, std::int64_t i1) {
          for (std::int64_t i = i0; i < i1; ++i) {
            const std::size_t r = sample[static_cast<std::size_t>(i)];
            const std::span<const double> x = d.x.subspan(r * n, n);
            const std::vector<double> xv(x.begin(), x.end());
            const auto [mean, var] = emulated_moments(xv, method, ord, ln, n_c, R);
            std::vector<double> dev(n);
            for (std::size_t j = 0; j < n; ++j) dev[j] = ln ? R(x[j] - mean) : x[j];
            const double ve = R(var + eps_c);
            const double sdv = R(std::sqrt(ve));
            const double rs =
                path == Path::rsqrt ? R(static_cast<double>(1 / std::sqrt(static_cast<LD>(ve)))) : R(1 / sdv);
            for (std::size_t j = 0; j < n; ++j) {
              double z = path == Path::divide && !shifted ? R(dev[j] / sdv) : R(dev[j] * rs);
              if (shifted) z = R(R(x[j] * rs) + R(-rs * mean));
              if (!d.gamma.empty()) z = R(z * d.gamma[j]);
              if (!d.beta.empty()) z = R(z + d.beta[j]);
              emulated[static_cast<std::size_t>(i) * n + j] = cast_exact ? z : rn(z, fo.precision, emin(fo));
            }
          }
        });
        // Each emulated row against its own radius λ·sd_r (λ for confidence 1 − 10^-6, as §4.1's ρ):
        // a legal row beyond it means these data break the model (equal or structured terms).
        for (const std::size_t r : sample) {
          const RowModel& m = model[r];
          const std::span<const double> e = emulated_row(r);
          double num = 0;
          for (std::size_t j = 0; j < n; ++j) num += m.w[j] * (e[j] - d.exact[r * n + j]);
          const double delta = num / m.sw2, radius = kLambda * std::sqrt(2 * m.V);
          if (std::fabs(delta) - shift_of(m) > radius) {
            f.applies = false;
            f.why_not = fmt::format(
                "a legal kernel emulated on row {} ({}{} sum, {}) moves its scale by {:+.3g}, beyond "
                "the radius {:.3g} (λ = {:.3g} standard deviations) of the rule's model: these data "
                "break it (equal or structured terms)",
                r, ln ? fmt::format("{} variance, ", variance_method_name(method)) : "", kOrderNames[oi],
                kPathNames[pi], delta, radius + shift_of(m), kLambda);
            return f;
          }
        }
        double l2 = 0, sd2 = 0;
        const double p2 = std::exp(judge(sample, emulated_row, l2, sd2));
        if (p2 <= alpha) {
          f.applies = false;
          f.why_not = fmt::format(
              "a legal kernel emulated on {} of the rows ({}{} sum, {}) leans {:+.3g} (P = {:.3g}): "
              "these data break the rule's model",
              sample.size(), ln ? fmt::format("{} variance, ", variance_method_name(method)) : "", kOrderNames[oi],
              kPathNames[pi], l2, p2);
          return f;
        }
      }
  f.evidence = fmt::format(
      "the rows' scales lean {:+.3g} (relative, {}; weighted mean over {} rows) from the exact 1/sqrt({} + eps) where "
      "the rounding errors the claim allows have standard deviation at most {:.3g} and its systematic errors (the "
      "function's --fn-ulps, eps's rounding, {}second-order terms) are bounded apart: "
      "Freedman's tail 2·exp(−t²/(2(V + b·t/3))) = {}{}; {} legal kernels emulated on {} of the rows stay below "
      "that (docs/verdict.md §8.4)",
      lean, lean > 0 ? "too large" : "too small", all.size(), ln ? "var" : "mean(x²)", sd,
      ln ? "the mean's error squared, " : "",
      std::exp(log_f) >= std::numeric_limits<double>::min() ? fmt::format("{:.3g}", std::exp(log_f))
                                                            : fmt::format("10^{:.0f}", log_f / std::log(10.0)),
      on_g ? fmt::format(", plus {:g} for the event that bounds the second-order terms (every running mean and "
                         "variance within λ = {:.3g} of its standard deviation)",
                         beta_g, std::sqrt(lambda_g2))
           : std::string(),
      methods.size() * std::size(kOrders) * std::size(kPaths), sample.size());
  return f;
}

}  // namespace numfid::detail
