// Deliberately naive second implementations of the row and elementwise ops, evaluating each
// textbook formula in a compute format (every operation rounded to nearest by the few lines
// below, not by numfid's bounds code), with a choice of the legal freedoms a claim under
// --compute allows: summation order, variance method, rsqrt or 1/sqrt, the two textbook forms
// of sigmoid/SiLU/log-softmax, and each elementary function off by up to one ulp (rounded
// in a random direction) plus an optional absolute error. Defects are switched on by flags.
// Used by row_bounds_test (soundness and sharpness) and the row-op corpus.
#pragma once

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "formats/format_spec.h"
#include "tolerances/check.h"

namespace numfid::test {

/// Round-to-nearest-even (or directed: -1 down, +1 up) of a double into a float format of
/// precision p, least normal exponent emin and largest finite value max (overflow: ±inf).
inline double round_fmt(double v, int p, int emin, double max, int dir = 0) {
  if (v == 0 || !std::isfinite(v)) return v;
  const int e = std::max(std::ilogb(v), emin);
  const double scale = std::ldexp(1.0, e - p + 1);
  const double q = v / scale;  // exact: a power-of-two scaling
  const double r = dir < 0 ? std::floor(q) : dir > 0 ? std::ceil(q) : std::nearbyint(q);
  const double out = r * scale;
  if (std::fabs(out) > max) {
    if (dir == 0) return std::copysign(INFINITY, v);
    return (dir > 0) == (v > 0) ? std::copysign(INFINITY, v) : std::copysign(max, v);
  }
  return out;
}
inline double round_fmt(double v, const FormatSpec& f, int dir = 0) {
  const double r = round_fmt(v, f.precision, emin(f), max_finite(f), dir);
  if (!std::isinf(r)) return r;
  // An overflow in a format without inf: NaN (OCP E4M3, FNUZ), or the largest value (fp6, fp4:
  // no non-finite encodings, so a conversion saturates).
  return f.non_finite == NonFinite::nan_only ? NAN : f.non_finite == NonFinite::finite_only ? std::copysign(max_finite(f), v) : r;
}

/// Summation orders a kernel may use.
/// sorted_right_fold: the terms by decreasing value (sums, Welford: every prefix the largest of its
/// size), Chan's merges as a right fold over that order (each merge's accumulating side a single
/// element, n_b/n near 1) — the orders the any-tree bounds of §8.4 must cover at their worst.
enum class Order { sequential, reverse, pairwise, blocked16, shuffled, sorted_right_fold };

/// Defects a kernel may have (each a real bug seen in kernels).
struct Defects {
  bool eps_outside_sqrt = false;   ///< layernorm/rmsnorm: (x - μ)/(sqrt(var) + eps)
  bool no_max_subtraction = false; ///< softmax: exp(x)/Σexp(x)
  bool unbiased_variance = false;  ///< layernorm: Σ(x - μ)²/(n - 1)
  const FormatSpec* narrow_sum = nullptr;  ///< sums held in this (narrower) format
  bool gamma_shifted = false;      ///< gamma[j + 1] applied to column j (wrong broadcast)
  bool gelu_tanh_for_erf = false;  ///< gelu_erf computed with the tanh approximation
  bool truncate_output = false;    ///< output cast truncates instead of rounding to nearest
  bool truncate_compute = false;   ///< every arithmetic operation rounds toward zero (an RTZ mode left set)
  const FormatSpec* round_through = nullptr;  ///< output rounded to this format first, then cast (double rounding)
  const FormatSpec* narrow_fn = nullptr;  ///< elementary functions rounded to this narrower format
  const FormatSpec* compute_instead = nullptr;  ///< the whole op computed in this format, not the claimed one
};

/// One naive kernel: arithmetic in `compute` (nullptr = fp64), freedoms drawn from `rng`.
class NaiveKernel {
 public:
  NaiveKernel(const FormatSpec* claimed, std::uint64_t seed, double fn_abs = 0, Defects d = {})
      : p_(fmt_of(claimed, d) ? fmt_of(claimed, d)->precision : 53),
        emin_(fmt_of(claimed, d) ? emin(*fmt_of(claimed, d)) : -1022),
        max_(fmt_of(claimed, d) ? max_finite(*fmt_of(claimed, d)) : 1.7976931348623157e308),
        rng_(seed),
        fn_abs_(fn_abs),
        d_(d) {}

  double r(double v) const { return round_fmt(v, p_, emin_, max_, d_.truncate_compute ? (v > 0 ? -1 : 1) : 0); }
  /// An elementary function's result: the exact value (long double) perturbed by up to fn_abs,
  /// rounded in a random direction (within one ulp of the compute format).
  /// With --fn-ulps k > 1: after the faithful rounding, up to k - 1 further ulps either way.
  void set_fn_ulps(int k) { extra_steps_ = std::max(0, k - 1); }
  double fn(long double exact) {
    const double f = faithful(exact);
    if (extra_steps_ == 0 || !std::isfinite(f) || f == 0) return f;
    const int steps = std::uniform_int_distribution<int>(-extra_steps_, extra_steps_)(rng_);
    const double ulp = std::ldexp(1.0, std::max(std::ilogb(f), emin_) - p_ + 1);
    const double moved = f + steps * ulp;
    return (moved > 0) == (f > 0) ? moved : f;  // keeps the sign (as the bound assumes)
  }
  double faithful(long double exact) {
    long double v = exact;
    if (fn_abs_ > 0) v += std::uniform_real_distribution<double>(-fn_abs_, fn_abs_)(rng_);
    if (d_.narrow_fn) v = round_fmt(static_cast<double>(v), *d_.narrow_fn);
    const int dir = std::uniform_int_distribution<int>(0, 1)(rng_) ? 1 : -1;
    if (std::fabs(v) > max_) return std::copysign(INFINITY, static_cast<double>(v));  // overflow, as libm does
    // Directed rounding of the long double value: round its double image first only when
    // that is exact enough (compute narrower than double), else round from long double.
    if (p_ < 53) return round_fmt(static_cast<double>(v), p_, emin_, max_, dir);
    const double dv = static_cast<double>(v);
    if (static_cast<long double>(dv) == v) return dv;
    const bool below = static_cast<long double>(dv) < v;
    if ((dir > 0) == below) return std::nextafter(dv, dir > 0 ? INFINITY : -INFINITY);
    return dv;
  }
  double add(double a, double b) { return narrow(r(a + b)); }

  /// Σ t in the kernel's order, every addition rounded.
  double sum(std::vector<double> t) {
    switch (order_) {
      case Order::reverse: std::reverse(t.begin(), t.end()); break;
      case Order::shuffled: std::shuffle(t.begin(), t.end(), rng_); break;
      case Order::sorted_right_fold: std::sort(t.rbegin(), t.rend()); break;
      default: break;
    }
    if (order_ == Order::pairwise) return pairwise(t, 0, t.size());
    if (order_ == Order::blocked16) {
      std::vector<double> part;
      for (std::size_t i = 0; i < t.size(); i += 16) {
        double s = 0;
        for (std::size_t j = i; j < std::min(t.size(), i + 16); ++j) s = add(s, t[j]);
        part.push_back(s);
      }
      double s = 0;
      for (const double v : part) s = add(s, v);
      return s;
    }
    double s = 0;
    for (const double v : t) s = add(s, v);
    return s;
  }

  void set_order(Order o) { order_ = o; }
  void set_variance(VarianceMethod m) { variance_ = m; }
  /// rowwise-moments: PyTorch CPU's RowwiseMoments tree with this many lanes.
  void set_lanes(int v) { lanes_ = v; }
  /// layernorm as y = x·r + b, b = -r·μ rounded (PyTorch CPU), instead of (x - μ)·r.
  void set_shifted(bool s) { shifted_ = s; }
  void set_rsqrt(bool b) { rsqrt_ = b; }
  void set_alt_form(bool b) { alt_ = b; }
  /// softmax/log-softmax: the online denominator (running max and rescaled sum; merged in the
  /// kernel's order: sequentially, in blocks of 16, pairwise, or in a random tree when shuffled).
  void set_online(bool b) { online_ = b; }

  /// (max, sum) of the online softmax over xc[lo, hi) in the kernel's order.
  std::pair<double, double> online(const std::vector<double>& xc, std::size_t lo, std::size_t hi) {
    using P = std::pair<double, double>;
    const auto merge = [&](P a, P b) {  // m = max; d = d_a·exp(m_a - m) + d_b·exp(m_b - m)
      if (std::isinf(a.first) && a.first < 0) return b;
      if (std::isinf(b.first) && b.first < 0) return a;
      const double m = std::max(a.first, b.first);
      const double fa = fn(std::exp(static_cast<long double>(r(a.first - m))));
      const double fb = fn(std::exp(static_cast<long double>(r(b.first - m))));
      return P{m, add(r(a.second * fa), r(b.second * fb))};
    };
    const auto leaf = [&](std::size_t j) {
      const bool masked = std::isinf(xc[j]) && xc[j] < 0;
      return masked ? P{-INFINITY, 0.0} : P{xc[j], fn(std::exp(0.0L))};  // exp(x - x): within the function claim
    };
    if (order_ == Order::pairwise && hi - lo > 1) {
      const std::size_t mid = lo + (hi - lo) / 2;
      return merge(online(xc, lo, mid), online(xc, mid, hi));
    }
    std::vector<P> parts;
    for (std::size_t j = lo; j < hi; ++j) parts.push_back(leaf(j));
    if (order_ == Order::reverse) std::reverse(parts.begin(), parts.end());
    if (order_ == Order::shuffled) {  // a random merge tree
      while (parts.size() > 1) {
        const std::size_t i = rng_() % parts.size();
        std::size_t k = rng_() % (parts.size() - 1);
        if (k >= i) ++k;
        parts[std::min(i, k)] = merge(parts[i], parts[k]);
        parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(std::max(i, k)));
      }
      return parts.empty() ? P{-INFINITY, 0.0} : parts[0];
    }
    const std::size_t block = order_ == Order::blocked16 ? 16 : parts.size();
    P run{-INFINITY, 0.0};
    for (std::size_t b0 = 0; b0 < parts.size(); b0 += std::max<std::size_t>(block, 1)) {
      P part{-INFINITY, 0.0};
      for (std::size_t j = b0; j < std::min(parts.size(), b0 + block); ++j) part = merge(part, parts[j]);
      run = merge(run, part);
    }
    return run;
  }

  /// One row of `op` (x and gamma/beta already values of their formats).
  std::vector<double> row(RowOp op, std::span<const double> x, double eps, std::span<const double> gamma = {},
                          std::span<const double> beta = {}) {
    const std::size_t n = x.size();
    std::vector<double> xc(n), y(n);
    for (std::size_t j = 0; j < n; ++j) xc[j] = r(x[j]);
    switch (op) {
      case RowOp::softmax:
      case RowOp::log_softmax: {
        double m = d_.no_max_subtraction ? 0 : -INFINITY;
        if (!d_.no_max_subtraction)
          for (const double v : xc) m = std::max(m, v);
        std::vector<double> d(n), e(n);
        for (std::size_t j = 0; j < n; ++j) {
          d[j] = std::isinf(xc[j]) && xc[j] < 0 ? -INFINITY : r(xc[j] - m);
          e[j] = std::isinf(d[j]) ? 0.0 : fn(std::exp(static_cast<long double>(d[j])));
        }
        double s = 0;
        if (online_ && !d_.no_max_subtraction) {
          const auto [om, os] = online(xc, 0, n);
          (void)om;  // the final max is the row's max: exact
          s = os;
        } else {
          s = sum(e);
        }
        if (op == RowOp::softmax) {
          for (std::size_t j = 0; j < n; ++j) y[j] = r(e[j] / s);
        } else {
          const double l = fn(std::log(static_cast<long double>(s)));
          const double lse = r(m + l);
          for (std::size_t j = 0; j < n; ++j) y[j] = alt_ ? r(xc[j] - lse) : r(d[j] - l);
        }
        return y;
      }
      case RowOp::layernorm:
      case RowOp::rmsnorm: {
        double mean = 0, var = 0;
        const double nn = r(static_cast<double>(n));
        const double div_n = d_.unbiased_variance ? r(static_cast<double>(n - 1)) : nn;
        if (op == RowOp::rmsnorm) {
          std::vector<double> q(n);
          for (std::size_t j = 0; j < n; ++j) q[j] = r(xc[j] * xc[j]);
          var = r(sum(q) / nn);
        } else if (variance_ == VarianceMethod::chan) {
          // Per-lane Welford over a strided slice, lanes merged by Chan's update: by a butterfly
          // (warp shuffles, 32 or 4 lanes) or, under the shuffled order, in a random tree.
          struct Moments {
            double n = 0, mean = 0, m2 = 0;
          };
          const auto combine = [&](const Moments& a, const Moments& b) {
            if (a.n == 0) return b;
            if (b.n == 0) return a;
            Moments c;
            c.n = a.n + b.n;  // counts are exact (integers held apart from the compute format)
            const double nb_over_n = r(b.n / c.n), delta = r(b.mean - a.mean);
            c.mean = r(a.mean + r(delta * nb_over_n));
            c.m2 = add(add(a.m2, b.m2), r(r(r(delta * delta) * a.n) * nb_over_n));  // PyTorch's WelfordOps::combine
            return c;
          };
          const std::size_t lanes = order_ == Order::blocked16 ? 4 : 32;
          std::vector<Moments> lane(order_ == Order::shuffled ? n : lanes);
          if (order_ == Order::sorted_right_fold) {
            std::vector<double> v(xc);
            std::sort(v.rbegin(), v.rend());
            Moments acc{1, v[n - 1], 0};
            for (std::size_t k = n - 1; k-- > 0;) acc = combine(Moments{1, v[k], 0}, acc);
            lane.assign(1, acc);
          } else if (order_ == Order::shuffled) {
            for (std::size_t j = 0; j < n; ++j) lane[j] = {1, xc[j], 0};
            while (lane.size() > 1) {  // merge two random partials until one is left
              const std::size_t i = rng_() % lane.size();
              std::size_t k = rng_() % (lane.size() - 1);
              if (k >= i) ++k;
              lane[std::min(i, k)] = combine(lane[i], lane[k]);
              lane.erase(lane.begin() + static_cast<std::ptrdiff_t>(std::max(i, k)));
            }
          } else {
            for (std::size_t j = 0; j < n; ++j) {  // Welford in each lane
              Moments& l = lane[j % lanes];
              l.n += 1;
              const double delta = r(xc[j] - l.mean);
              l.mean = r(l.mean + r(delta / l.n));
              l.m2 = add(l.m2, r(delta * r(xc[j] - l.mean)));
            }
            for (std::size_t w = lanes / 2; w >= 1; w /= 2)
              for (std::size_t i = 0; i < w; ++i) lane[i] = combine(lane[i], lane[i + w]);
          }
          mean = lane[0].mean;
          var = r(lane[0].m2 / div_n);
        } else if (variance_ == VarianceMethod::rowwise_moments) {
          // PyTorch CPU's RowwiseMoments (moments_utils.h; tests/torch_layernorm_model_test.cpp
          // reproduces torch with it): lanes of Welford in chunks of 16 (m1 += δ·(1/(j+1))), chunks
          // merged by AddMoments into a binary-counter stack, a scalar Welford tail (m1 += δ/k),
          // the lanes merged one by one into the tail; every operation (and count) rounded here.
          struct Mo {
            double n = 0, m1 = 0, m2 = 0;
          };
          const auto add_moments = [&](const Mo& b, Mo& a) {
            if (b.n == 0) return;
            const double nn2 = a.n + b.n;
            const double c = r(r(b.n) / r(nn2)), delta = r(b.m1 - a.m1);
            a.m1 = r(a.m1 + r(c * delta));
            a.m2 = r(a.m2 + r(b.m2 + r(r(r(delta * delta) * c) * r(a.n))));
            a.n = nn2;
          };
          const auto V = static_cast<std::size_t>(lanes_);
          const std::size_t nv = n / V, chunks = (nv + 15) / 16;
          std::size_t depth = 0;
          while ((std::size_t{1} << depth) < chunks) ++depth;
          Mo total;
          for (std::size_t j = nv * V; j < n; ++j) {
            const double delta = r(xc[j] - total.m1);
            total.n += 1;
            total.m1 = r(total.m1 + r(delta / r(total.n)));
            total.m2 = r(total.m2 + r(delta * r(xc[j] - total.m1)));
          }
          for (std::size_t l = 0; l < V; ++l) {
            std::vector<Mo> stack(std::max<std::size_t>(depth, 1));
            for (std::size_t i = 0; i < chunks; ++i) {
              Mo chunk;
              for (std::size_t p = 16 * i; p < std::min(nv, 16 * i + 16); ++p) {
                const double v = xc[p * V + l], delta = r(v - chunk.m1);
                chunk.m1 = r(chunk.m1 + r(delta * r(1.0 / r(chunk.n + 1))));
                chunk.m2 = r(chunk.m2 + r(delta * r(v - chunk.m1)));
                chunk.n += 1;
              }
              add_moments(chunk, stack[0]);
              std::size_t mask = i + 1;
              for (std::size_t dd = 1; dd < depth && (mask & 1) == 0; ++dd) {
                add_moments(stack[dd - 1], stack[dd]);
                stack[dd - 1] = Mo{};
                mask >>= 1;
              }
            }
            for (std::size_t dd = 1; dd < depth; ++dd) add_moments(stack[dd], stack[0]);
            add_moments(stack[0], total);
          }
          mean = total.m1;
          var = r(total.m2 / div_n);
        } else if (variance_ == VarianceMethod::welford) {
          std::vector<std::size_t> idx(n);
          std::iota(idx.begin(), idx.end(), 0);
          if (order_ == Order::reverse) std::reverse(idx.begin(), idx.end());
          if (order_ == Order::shuffled) std::shuffle(idx.begin(), idx.end(), rng_);
          if (order_ == Order::sorted_right_fold)
            std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return xc[a] > xc[b]; });
          double m = 0, m2 = 0;
          for (std::size_t k = 0; k < n; ++k) {
            const double v = xc[idx[k]];
            const double delta = r(v - m);
            m = r(m + r(delta / static_cast<double>(k + 1)));
            m2 = add(m2, r(delta * r(v - m)));
          }
          mean = m;
          var = r(m2 / div_n);
        } else {
          mean = r(sum(xc) / nn);
          if (variance_ == VarianceMethod::sumsq) {
            std::vector<double> q(n);
            for (std::size_t j = 0; j < n; ++j) q[j] = r(xc[j] * xc[j]);
            var = std::max(0.0, r(r(sum(q) / div_n) - r(mean * mean)));
          } else {
            std::vector<double> q(n);
            for (std::size_t j = 0; j < n; ++j) {
              const double dv = r(xc[j] - mean);
              q[j] = r(dv * dv);
            }
            var = r(sum(q) / div_n);
          }
        }
        const double ec = r(eps);
        double rs = 0, sd = 0;
        if (d_.eps_outside_sqrt) {
          sd = r(r(std::sqrt(var)) + ec);
        } else {
          rs = fn(1 / std::sqrt(static_cast<long double>(r(var + ec))));
          sd = r(std::sqrt(r(var + ec)));
        }
        const double shift_r = rsqrt_ ? rs : r(1 / sd), shift_b = r(-shift_r * mean);  // PyTorch's scale and bias
        for (std::size_t j = 0; j < n; ++j) {
          const double dev = op == RowOp::rmsnorm ? xc[j] : r(xc[j] - mean);
          double z = (rsqrt_ && !d_.eps_outside_sqrt) ? r(dev * rs) : r(dev / sd);
          if (shifted_ && op == RowOp::layernorm && !d_.eps_outside_sqrt)
            z = r(r(xc[j] * shift_r) + shift_b);
          if (!gamma.empty()) z = r(z * r(gamma[d_.gamma_shifted ? (j + 1) % n : j]));
          if (!beta.empty()) z = r(z + r(beta[j]));
          y[j] = z;
        }
        return y;
      }
      default:
        for (std::size_t j = 0; j < n; ++j) y[j] = unary(op, xc[j]);
        return y;
    }
  }

 private:
  static const FormatSpec* fmt_of(const FormatSpec* claimed, const Defects& d) {
    return d.compute_instead ? d.compute_instead : claimed;
  }
  double narrow(double v) const { return d_.narrow_sum ? round_fmt(v, *d_.narrow_sum) : v; }
  double pairwise(const std::vector<double>& t, std::size_t lo, std::size_t hi) {
    if (hi - lo == 0) return 0;
    if (hi - lo == 1) return t[lo];
    const std::size_t mid = lo + (hi - lo) / 2;
    return add(pairwise(t, lo, mid), pairwise(t, mid, hi));
  }
  double unary(RowOp op, double x) {
    using LDbl = long double;
    const LDbl X = x;
    switch (op) {
      case RowOp::exp: return fn(std::exp(X));
      case RowOp::log: return fn(std::log(X));
      case RowOp::tanh: return fn(std::tanh(X));
      case RowOp::reciprocal: return fn(1 / X);
      case RowOp::rsqrt: return fn(1 / std::sqrt(X));
      case RowOp::sigmoid:
      case RowOp::silu: {
        double sig = 0;
        if (alt_ && x < 0) {  // the stable form for negative x
          const double e = fn(std::exp(X));
          sig = r(e / r(1 + e));
        } else {
          sig = r(1 / r(1 + fn(std::exp(-X))));
        }
        if (op == RowOp::sigmoid) return sig;
        return alt_ ? r(x * sig) : r(x / r(1 + fn(std::exp(-X))));
      }
      case RowOp::gelu_erf:
      case RowOp::gelu_tanh: {
        double w = 0;
        if (op == RowOp::gelu_tanh || d_.gelu_tanh_for_erf) {
          const double x3 = r(r(x * x) * x);
          const double inner = r(x + r(r(0.044715) * x3));
          const double t = r(r(0.7978845608028654) * inner);
          w = r(1 + fn(std::tanh(static_cast<LDbl>(t))));
        } else {
          const double t = r(x * r(0.7071067811865476));
          w = r(1 + fn(std::erf(static_cast<LDbl>(t))));
        }
        return alt_ ? r(r(0.5 * x) * w) : r(0.5 * r(x * w));
      }
      default: return NAN;
    }
  }

  int p_, emin_;
  double max_;
  std::mt19937_64 rng_;
  double fn_abs_;
  Defects d_;
  bool online_ = false;
  Order order_ = Order::sequential;
  VarianceMethod variance_ = VarianceMethod::two_pass;
  int lanes_ = 16;
  bool shifted_ = false;
  bool rsqrt_ = true, alt_ = false;
  int extra_steps_ = 0;
};

}  // namespace numfid::test
