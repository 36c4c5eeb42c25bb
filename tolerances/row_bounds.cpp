// Derived bounds of row and elementwise ops by interval enclosure of the claimed arithmetic
// (tolerances/row_bounds.h).
#include "tolerances/row_bounds.h"

#include <algorithm>
#include <cmath>
#include <charconv>
#include <functional>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "formats/error.h"
#include "tolerances/check_detail.h"

namespace numfid {

namespace {

using LD = long double;

/// An enclosure [lo, hi] of a computed value and of the exact intermediate it stands for.
struct Iv {
  LD lo = 0, hi = 0;
};

Iv point(LD v) { return {v, v}; }
Iv hull(Iv a, Iv b) { return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)}; }
LD mag(Iv a) { return std::max(std::fabs(a.lo), std::fabs(a.hi)); }
const Iv kAll{-INFINITY, INFINITY};

/// Sanitises an interval: NaN endpoints (inf - inf, 0·inf) make it unbounded.
Iv sane(Iv a) {
  if (std::isnan(a.lo) || std::isnan(a.hi)) return kAll;
  return a;
}

/// The claimed arithmetic: round-to-nearest in `f`, functions within fn_ulps ulps + fn_abs.
class Arith {
 public:
  Arith(const FormatSpec& f, double fn_ulps, double fn_abs)
      : u_(std::ldexp(1.0L, -f.precision)),
        eta_(static_cast<LD>(min_positive(f)) / 2),
        tiny_(static_cast<LD>(min_positive(f))),
        max_(static_cast<LD>(max_finite(f))),
        k_(fn_ulps),
        abs_(fn_abs),
        p_(f.precision),
        emin_(emin(f)) {}

  LD u() const { return u_; }
  LD max() const { return max_; }
  LD eta() const { return eta_; }

  /// One rounding to nearest of a value in `a` (plus the slack of evaluating it in long double).
  Iv round(Iv a) const {
    a = sane(a);
    Iv r{a.lo - (u_ + kSlack) * std::fabs(a.lo) - eta_, a.hi + (u_ + kSlack) * std::fabs(a.hi) + eta_};
    return overflow(r);
  }
  /// A value of an exact operation evaluated in long double (only the evaluation slack).
  Iv exact(Iv a) const {
    a = sane(a);
    return {a.lo - kSlack * std::fabs(a.lo), a.hi + kSlack * std::fabs(a.hi)};
  }
  /// x cast into the compute format: exact when representable.
  Iv cast(LD x) const { return representable(x) ? point(x) : round(point(x)); }
  bool representable(LD x) const {
    if (x == 0 || !std::isfinite(x)) return true;
    if (std::fabs(x) > max_) return false;
    const int e = std::max(static_cast<int>(std::ilogb(x)), emin_);
    const LD scaled = std::ldexp(x, p_ - 1 - e);
    return scaled == std::trunc(scaled);
  }

  Iv add(Iv a, Iv b) const { return round({a.lo + b.lo, a.hi + b.hi}); }
  Iv sub(Iv a, Iv b) const { return round({a.lo - b.hi, a.hi - b.lo}); }
  Iv mul(Iv a, Iv b) const { return round(mul_exact(a, b)); }
  Iv div(Iv a, Iv b) const { return round(div_exact(a, b)); }
  Iv sqr(Iv a) const {
    a = sane(a);
    const LD l = std::fabs(a.lo), h = std::fabs(a.hi);
    if (a.lo <= 0 && a.hi >= 0) return round({0, std::max(l, h) * std::max(l, h)});
    return round({std::min(l, h) * std::min(l, h), std::max(l, h) * std::max(l, h)});
  }
  Iv sqrt(Iv a) const {  // correctly rounded (IEEE 754)
    a = sane(a);
    if (a.hi < 0) return kAll;
    return round({std::sqrt(std::max(a.lo, LD{0})), std::sqrt(a.hi)});
  }
  /// An elementary function, monotone on `a` (increasing or decreasing), within the claim.
  Iv fn(LD (*f)(LD), Iv a, bool increasing) const {
    a = sane(a);
    LD lo = f(a.lo), hi = f(a.hi);
    if (!increasing) std::swap(lo, hi);
    if (std::isnan(lo) || std::isnan(hi)) return kAll;
    // A value beyond long double's range (exp(11357)) is ±inf there: as the enclosure's inner
    // end it stands for "beyond every finite value", so the largest long double bounds it (else
    // inf - inf below makes the enclosure NaN, i.e. vacuous: sigmoid(-11357) = 1/(1 + inf)
    // accepted any output).
    if (lo == INFINITY) lo = std::numeric_limits<LD>::max();
    if (hi == -INFINITY) hi = -std::numeric_limits<LD>::max();
    const LD w = 2 * u_ * static_cast<LD>(k_);
    const LD add = static_cast<LD>(k_) * tiny_;
    Iv r{lo - (w + kFnSlack) * std::fabs(lo) - add, hi + (w + kFnSlack) * std::fabs(hi) + add};
    // Within k ulps keeps the sign of the exact result (no libm returns exp(x) < 0); an
    // absolute error (a polynomial approximation) may cross zero.
    if (lo >= 0) r.lo = std::max(r.lo, LD{0});
    if (hi <= 0) r.hi = std::min(r.hi, LD{0});
    r.lo -= static_cast<LD>(abs_);
    r.hi += static_cast<LD>(abs_);
    return overflow(r);
  }
  /// A sum of the terms in any order: every order's result differs from the sum of the
  /// computed terms by at most ((1 + u)^(n-1) - 1)·Σ|terms|; non-negative terms: never below
  /// the largest.
  Iv sum(std::span<const Iv> t) const {
    LD lo = 0, hi = 0, abs = 0, top = 0;
    bool nonneg = true;
    for (const Iv& v : t) {
      lo += v.lo;
      hi += v.hi;
      abs += mag(v);
      nonneg = nonneg && v.lo >= 0;
      top = std::max(top, v.lo);
    }
    const LD n = static_cast<LD>(t.size());
    const LD g = n > 1 ? std::expm1((n - 1) * std::log1p(u_)) : 0;
    const LD w = g * abs + n * kSlack * abs;
    Iv r{lo - w, hi + w};
    if (nonneg) r.lo = std::max(r.lo, top);
    if (abs * (1 + g) > max_) {  // a partial sum may overflow
      r.hi = INFINITY;
      if (!nonneg) r.lo = -INFINITY;
    }
    return sane(r);
  }
  /// (1 + u)^(n-1) - 1, for the derivation text.
  double sum_coefficient(std::size_t n) const {
    return n > 1 ? static_cast<double>(std::expm1(static_cast<LD>(n - 1) * std::log1p(u_))) : 0.0;
  }

  static Iv mul_exact(Iv a, Iv b) {
    a = sane(a);
    b = sane(b);
    const auto m = [](LD x, LD y) { return (x == 0 || y == 0) ? LD{0} : x * y; };
    const LD c[] = {m(a.lo, b.lo), m(a.lo, b.hi), m(a.hi, b.lo), m(a.hi, b.hi)};
    return sane({*std::min_element(c, c + 4), *std::max_element(c, c + 4)});
  }
  static Iv div_exact(Iv a, Iv b) {
    a = sane(a);
    b = sane(b);
    if (b.lo <= 0 && b.hi >= 0) return kAll;
    const auto d = [](LD x, LD y) { return std::isinf(y) ? (std::isinf(x) ? LD{NAN} : LD{0}) : x / y; };
    const LD c[] = {d(a.lo, b.lo), d(a.lo, b.hi), d(a.hi, b.lo), d(a.hi, b.hi)};
    for (const LD v : c)
      if (std::isnan(v)) return kAll;
    return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
  }

 private:
  /// A value beyond the largest finite one may have rounded to ±inf.
  Iv overflow(Iv r) const {
    if (r.hi > max_) r.hi = INFINITY;
    if (r.lo < -max_) r.lo = -INFINITY;
    return r;
  }
  static constexpr LD kSlack = 0x1p-60L;    // long double evaluation of the enclosure
  static constexpr LD kFnSlack = 0x1p-56L;  // long double libm functions (a few ulps)
  LD u_, eta_, tiny_, max_;
  double k_, abs_;
  int p_, emin_;
};

LD rsqrt_ld(LD x) { return 1 / std::sqrt(x); }
LD recip_ld(LD x) { return 1 / x; }
LD identity_ld(LD x) { return x; }
LD exp_ld(LD x) { return std::exp(x); }
LD log_ld(LD x) { return std::log(x); }
LD tanh_ld(LD x) { return std::tanh(x); }
LD erf_ld(LD x) { return std::erf(x); }

/// A constant c rounded once into the compute format (or its reciprocal computed there).
Iv constant(const Arith& a, LD c) { return Iv{c * (1 - 2 * a.u()), c * (1 + 2 * a.u())}; }

/// 1/sqrt(v) both ways kernels evaluate it: rsqrt(v) within the claim, or 1/sqrt(v) correctly
/// rounded; `num` multiplied by the first or divided by the second.
Iv times_rsqrt(const Arith& a, Iv num, Iv v) {
  const Iv r = a.fn(rsqrt_ld, v, false);
  return hull(a.mul(num, r), a.div(num, a.sqrt(v)));
}

/// The row's length as the compute format divides by it (n, or 1/n rounded, then multiplied).
Iv over_n(const Arith& a, Iv s, std::size_t n) {
  return a.div(s, a.round(point(static_cast<LD>(n))));
}

struct Stats {
  Iv mean, var;
};

/// Σ_j (x_j - μ)² of the exact row and its mean, in long double (the slack below covers it).
std::pair<LD, LD> exact_moments(std::span<const double> x) {
  LD mu = 0;
  for (const double v : x) mu += v;
  mu /= static_cast<LD>(x.size());
  LD W = 0;
  for (const double v : x) W += (v - mu) * (v - mu);
  return {mu, W};
}

/// What the Chan bound needs of a merge tree over n elements (Welford steps are merges with
/// n_b = 1): the mean leaf depth Σ_v n_v/n (a merge's own error reaches μ weighted n_v/n),
/// S_w = Σ_v n_a·n_b/n_v (left 0 where only the shape is described), the most additions an M2
/// increment passes on its way to the root, and how many extra roundings the counts may take
/// (n_a, n_b, n converted into the compute format: 3 when one of them is not a value of it).
struct MergeTree {
  LD mean_depth = 0, sw = 0, additions = 0;
  int count_roundings = 0;
};

/// The worst case over every tree: mean leaf depth <= (n + 1)/2 (a chain), S_w <= (n/4)·log2 n
/// (w <= ab/(a + b), and a log a + b log b + 4ab/n <= n log n since H(p) >= 4p(1 - p)), at most
/// 2(n - 1) additions; counts above 2^p may round.
MergeTree any_tree(const Arith& a, std::size_t n) {
  const LD N = static_cast<LD>(n);
  MergeTree t;
  t.mean_depth = (N + 1) / 2;
  t.sw = n > 1 ? N / 4 * std::log2(N) : 0;
  t.additions = n > 1 ? 2 * (N - 1) : 0;
  // Every integer up to 2^p (= 1/u) is a value of the format and 2^p + 1 is not: some count
  // rounds exactly when n exceeds 2^p.
  t.count_roundings = N > 1 / a.u() ? 3 : 0;
  return t;
}

/// Walks PyTorch's CPU RowwiseMoments tree over n elements with V lanes (moments_utils.h;
/// reproduced bit for bit on torch 1.13 outputs, tests/torch_layernorm_model_test.cpp): lane l
/// holds elements l, l + V, ... of the first ⌊n/V⌋·V; per lane, chunks of 16 Welford steps
/// (merge(run, leaf)), each chunk merged into a binary-counter stack (stack[0], carries upward
/// while the chunk count's low bits are 1), the stack levels merged into stack[0]; the n mod V
/// tail elements a scalar Welford run; then lane after lane merged into the tail's moments.
/// merge(acc, add) is called for every merge in the kernel's order (`add` is the side torch
/// scales by n_add/n; either may be empty: a copy); returns the root.
template <class Node, class Leaf, class Merge>
Node walk_rowwise_moments(std::size_t n, int lanes, const Leaf& leaf, const Merge& merge) {
  const auto V = static_cast<std::size_t>(lanes);
  const std::size_t nv = n / V, chunks = (nv + 15) / 16;
  std::size_t depth = 0;
  while ((std::size_t{1} << depth) < chunks) ++depth;  // CeilLog2
  Node total{};
  for (std::size_t j = nv * V; j < n; ++j) total = merge(total, leaf(j));  // the scalar tail
  for (std::size_t l = 0; l < V; ++l) {
    std::vector<Node> stack(std::max<std::size_t>(depth, 1));
    for (std::size_t i = 0; i < chunks; ++i) {
      Node chunk{};
      for (std::size_t p = 16 * i; p < std::min(nv, 16 * i + 16); ++p) chunk = merge(chunk, leaf(p * V + l));
      stack[0] = merge(stack[0], chunk);
      std::size_t mask = i + 1;
      for (std::size_t d = 1; d < depth && (mask & 1) == 0; ++d) {
        stack[d] = merge(stack[d], stack[d - 1]);
        stack[d - 1] = Node{};
        mask >>= 1;
      }
    }
    for (std::size_t d = 1; d < depth; ++d) stack[0] = merge(stack[0], stack[d]);
    total = merge(total, stack[0]);
  }
  return total;
}

/// The shape of that tree over n elements (walk_rowwise_moments), for the derivation only (the
/// bound itself walks the tree with the row's values: rowwise_moments_stats): the mean leaf
/// depth, the most additions an increment passes, whether every count is a value of the format.
MergeTree rowwise_moments_tree(const Arith& a, std::size_t n, int lanes) {
  struct Part {
    LD count = 0;
    LD path = 0;  ///< merges above the deepest increment inside (so far)
  };
  MergeTree t;
  bool counts_exact = true;
  const Part root = walk_rowwise_moments<Part>(
      n, lanes, [](std::size_t) { return Part{1, 0}; },
      [&](const Part& x, const Part& y) {
        if (x.count == 0) return y;
        if (y.count == 0) return x;
        const LD c = x.count + y.count;
        t.mean_depth += c;
        counts_exact = counts_exact && a.representable(x.count) && a.representable(y.count) && a.representable(c);
        return Part{c, std::max(x.path, y.path) + 1};
      });
  t.mean_depth /= static_cast<LD>(std::max<std::size_t>(n, 1));
  t.additions = 2 * root.path;
  t.count_roundings = counts_exact ? 0 : 3;
  return t;
}

/// Chan et al.'s merges in any tree, Welford runs as its leaves (docs/verdict.md §8, "Chan").
/// A merge of (n_a, μ_a, M2_a) and (n_b, μ_b, M2_b) — a Welford step is one with n_b = 1 —
/// computes μ̂ = fl(μ̂_a + fl(δ̂·r̂)), δ̂ = fl(μ̂_b - μ̂_a), r̂ = n_b/n rounded (once or twice):
/// μ̂ - μ = (1 - r)e_a + r·e_b + r·θ₄·(μ̂_b - μ̂_a) + ε·μ̂, so a merge's own error reaches the root
/// weighted by the product of the weights above it, n_v/n; Σ_v n_v/n is the mean leaf depth, at
/// most (n + 1)/2: E <= (n + 1)/2 · (u·M' + γ₄·R' + 4η), M' = M + E, R' = R + 2E (solved for E; vacuous when the
/// factor reaches 1). M2: the exact increments c_v = δ_v²·w_v, w_v = n_a·n_b/n, sum to W = n·var
/// over any tree; ĉ_v = δ̂_v²·w_v·(1 + θ₅) (PyTorch's δ·δ·n_a·(n_b/n)), |δ̂ - δ| <= E_δ = 2E +
/// u·R', so |ĉ - c| <= w(2|δ|E_δ + E_δ²)(1 + γ₅) + γ₅·c; a Welford step's δ·(x - μ_new) errs by
/// at most (1 + u)(2|δ|E_δ + E_δ²) + u·c <= 2w(...) (w = (k-1)/k >= 1/2): a factor 2 covers both.
/// Σ_v w_v|δ_v| <= sqrt(S_w·W) (Cauchy–Schwarz), S_w = Σ_v w_v <= (n/4)·log2 n over every tree
/// (w <= (a b)/(a + b), and a log a + b log b + 4ab/n <= n log n since H(p) >= 4p(1 - p)).
/// Each increment then passes through at most 2(n - 1) additions of non-negative values.
/// The tree enters through MergeTree: the mean leaf depth (Σ_v n_v/n), S_w, the most additions
/// an increment passes and the roundings of counts; `any_tree` gives the worst case over every
/// tree (PyTorch's one tree is bounded node by node instead: rowwise_moments_stats).
Stats chan_moments(const Arith& a, std::span<const Iv> xc, std::span<const double> x, const MergeTree& tree) {
  const std::size_t n = xc.size();
  LD lo = INFINITY, hi = -INFINITY, cast_err = 0;
  for (std::size_t j = 0; j < n; ++j) {
    lo = std::min(lo, xc[j].lo);
    hi = std::max(hi, xc[j].hi);
    cast_err = std::max(cast_err, xc[j].hi - xc[j].lo);
  }
  const LD u = a.u(), eta = a.eta(), R = hi - lo, M = std::max(std::fabs(lo), std::fabs(hi));
  const auto [mu, W] = exact_moments(x);
  const LD N = static_cast<LD>(n);
  const auto gamma = [&](LD k) { return k * u / (1 - k * u); };
  const LD depth = tree.mean_depth, k = static_cast<LD>(tree.count_roundings);
  const LD factor = 1 - depth * (u + 2 * gamma(4 + k));
  const LD E = factor > 0 ? depth * (u * M + gamma(4 + k) * R + 4 * eta) / factor : LD{INFINITY};
  const LD Ed = 2 * E + u * (R + 2 * E);
  const LD Sw = tree.sw;
  const LD T = 2 * (1 + gamma(5 + k)) * (2 * Ed * std::sqrt(Sw * W) + Ed * Ed * Sw) + gamma(5 + k) * W + 3 * (N - 1) * eta;
  const LD g = std::expm1(tree.additions * std::log1p(u));
  const LD Ew = T + g * (W + T) + 0x1p-58L * N * N * M * M;  // + the long double evaluation of W
  const LD dm = E + cast_err, dw = Ew + N * (2 * std::sqrt(W / N) * cast_err + cast_err * cast_err);
  if (!std::isfinite(dm) || !std::isfinite(dw)) return {Iv{-INFINITY, INFINITY}, Iv{0, INFINITY}};
  const Iv M2{W - dw, W + dw};
  return {a.round({mu - dm, mu + dm}), over_n(a, M2, n)};
}

/// PyTorch's RowwiseMoments on this row, bounded node by node (docs/verdict.md §8.3): the tree
/// of rowwise_moments_tree walked with the row's values, each node carrying the exact mean and
/// M2 of its elements (Chan's exact merge, in long double) and bounds e, f on the computed
/// mean's and M2's errors. A merge of a (the accumulating side) and b (the added one, r = n_b/n,
/// w = n_a·n_b/n, δ = μ_b - μ_a; a Welford step has n_b = 1):
///   μ̂ - μ <= (1 - r)e_a + r·e_b + γ_(4+k)·r·(|δ| + e_a + e_b) + u·(|μ| + that) + 4η
/// (δ̂ rounded, r̂ = n_b/n rounded once or twice, the product, the sum; k = 3 when a count is not a
/// value of the format), and for M2 the increment ĉ = δ̂²·r̂·n_a (or δ̂·(x - μ̂_new)) against
/// c = δ²w: 2(1 + γ_(5+k))·w·(2|δ|E_δ + E_δ²) + γ_(5+k)·w·δ², E_δ = the larger of δ̂'s and
/// (x - μ̂_new)'s errors; then M̂2_a + M̂2_b + ĉ in two roundings: + γ₂·(their magnitudes) + 3η.
/// A cast of the inputs (c = the largest |x̂ - x|) widens |δ| by 2c, |μ| by c and each √M2 by
/// √count·c, and the result as for the other methods. Data-dependent: the running means of
/// zero-mean data are small, and the δ of large merges are differences of means.
Stats rowwise_moments_stats(const Arith& a, std::span<const Iv> xc, std::span<const double> x, int lanes) {
  struct Node {
    LD count = 0, mu = 0, m2 = 0, e = 0, f = 0;
  };
  const std::size_t n = xc.size();
  LD cast_err = 0, M = 0;
  for (std::size_t j = 0; j < n; ++j) {
    cast_err = std::max(cast_err, xc[j].hi - xc[j].lo);
    M = std::max(M, std::fabs(static_cast<LD>(x[j])));
  }
  const LD u = a.u(), eta = a.eta(), c = cast_err;
  const auto gamma = [&](LD k) { return k * u / (1 - k * u); };
  const auto merge = [&](const Node& A, const Node& B) {
    if (A.count == 0) return B;  // a copy: c = n_b/n = 1 exactly, n_a = 0
    if (B.count == 0) return A;
    Node v;
    v.count = A.count + B.count;
    const LD r = B.count / v.count, w = A.count * B.count / v.count, delta = B.mu - A.mu;
    v.mu = A.mu + delta * r;
    v.m2 = A.m2 + B.m2 + delta * delta * w;
    const bool counts_exact = a.representable(A.count) && a.representable(B.count) && a.representable(v.count);
    const LD k = counts_exact ? 0 : 3;
    const LD dabs = std::fabs(delta) + 2 * c, ein = A.e + B.e;
    const LD pre = (1 - r) * A.e + r * B.e + gamma(4 + k) * r * (dabs + ein);
    v.e = pre + u * (std::fabs(v.mu) + c + pre) + 4 * eta;
    const LD Ed = std::max(ein + u * (dabs + ein) + eta, v.e + u * (dabs + v.e) + eta);
    const LD dc = 2 * (1 + gamma(5 + k)) * w * (2 * dabs * Ed + Ed * Ed) + gamma(5 + k) * w * dabs * dabs;
    const auto widened = [&](const Node& t) {
      const LD sq = std::sqrt(std::max(t.m2, LD{0})) + std::sqrt(t.count) * c;
      return sq * sq;
    };
    v.f = A.f + B.f + dc + gamma(2) * (widened(A) + A.f + widened(B) + B.f + w * dabs * dabs + dc) + 3 * eta;
    return v;
  };
  const Node total = walk_rowwise_moments<Node>(
      n, lanes, [&](std::size_t j) { return Node{1, static_cast<LD>(x[j]), 0, 0, 0}; }, merge);
  const LD N = static_cast<LD>(n);
  const auto [mu, W] = exact_moments(x);
  // + the long double evaluation of the exact moments and of the tree's own exact values.
  const LD dm = total.e + c + 0x1p-58L * N * M;
  const LD dw = total.f + 0x1p-56L * N * N * M * M + N * (2 * std::sqrt(W / N) * c + c * c);
  if (!std::isfinite(dm) || !std::isfinite(dw)) return {Iv{-INFINITY, INFINITY}, Iv{0, INFINITY}};
  const Iv M2{W - dw, W + dw};
  return {a.round({mu - dm, mu + dm}), over_n(a, M2, n)};
}

/// Layernorm's mean and (biased) variance of the computed row `xc` by `m`.
Stats variance_of(const Arith& a, VarianceMethod m, int lanes, std::span<const Iv> xc, std::span<const double> x) {
  const std::size_t n = xc.size();
  std::vector<Iv> t(n);
  const Iv mean = over_n(a, a.sum(xc), n);
  switch (m) {
    case VarianceMethod::two_pass: {
      for (std::size_t j = 0; j < n; ++j) t[j] = a.sqr(a.sub(xc[j], mean));
      return {mean, over_n(a, a.sum(t), n)};
    }
    case VarianceMethod::sumsq: {
      for (std::size_t j = 0; j < n; ++j) t[j] = a.sqr(xc[j]);
      const Iv ms = over_n(a, a.sum(t), n);
      Iv v = a.sub(ms, a.sqr(mean));
      v.lo = std::max(v.lo, LD{0});  // clamped at 0, as single-pass kernels do
      v.hi = std::max(v.hi, LD{0});
      return {mean, v};
    }
    case VarianceMethod::chan: return chan_moments(a, xc, x, any_tree(a, n));
    case VarianceMethod::rowwise_moments: return rowwise_moments_stats(a, xc, x, lanes);
    case VarianceMethod::welford:
    case VarianceMethod::any: break;
  }
  // Welford, elements in any order: m_k = m_(k-1) + (x_k - m_(k-1))/k, M2 += δ_k·(x_k - m_k).
  // Every computed m_k lies in [min x, max x] (an update moves toward x_k by less than the
  // whole way), so the mean's error E <= R = max x - min x; the recursion's own bound is
  // E <= (2u + u²)(R + E) + (u(M + E)/(1 - u) + 2η)(n + 1)/2 (each error shrinks by (1 - 1/k)
  // per later step). The exact terms t_k = δ_k ε_k >= 0 sum to W = n·var, Σ|δ_k| <=
  // sqrt(2(n-1)W), and |δ̂ - δ|, |ε̂ - ε| <= E1 = E + u·R.
  LD lo = INFINITY, hi = -INFINITY, cast_err = 0;
  for (std::size_t j = 0; j < n; ++j) {
    lo = std::min(lo, xc[j].lo);
    hi = std::max(hi, xc[j].hi);
    cast_err = std::max(cast_err, xc[j].hi - xc[j].lo);
  }
  const LD u = a.u(), R = hi - lo, M = std::max(std::fabs(lo), std::fabs(hi));
  const LD eta = a.eta();
  const auto [mu, W] = exact_moments(x);
  const LD N = static_cast<LD>(n);
  const LD ac = 2 * u + u * u;
  const LD factor = 1 - ac - u * (N + 1) / (2 * (1 - u));
  LD E = R;
  if (factor > 0) E = std::min(R, (ac * R + (u * M / (1 - u) + 2 * eta) * (N + 1) / 2) / factor);
  const LD E1 = E + u * R;
  const LD sd = std::sqrt(2 * (N - 1) * W);
  // Σ_k |t̂_k - t_k|: the perturbed factors, then each product's rounding (u·|t| + η).
  const LD T = (1 + u) * (E1 * 2 * sd + (N - 1) * E1 * E1) + u * W + (N - 1) * eta;
  const LD g = N > 2 ? std::expm1((N - 2) * std::log1p(u)) : 0;
  const LD Ew = T + g * (W + T) + 0x1p-58L * N * N * M * M;  // + the long double evaluation of W
  // Cast errors (x̂ - x <= δ): the mean moves by <= δ, the rms deviation by <= δ.
  const LD dm = E + cast_err, dw = Ew + N * (2 * std::sqrt(W / N) * cast_err + cast_err * cast_err);
  const Iv M2{W - dw, W + dw};
  return {a.round({mu - dm, mu + dm}), over_n(a, M2, n)};
}

/// Layernorm/rmsnorm outputs of the row under one variance method: enclosures per element.
/// NormForm::shifted (layernorm): r = 1/sqrt(var + eps) and b = fl(-r·μ) in the compute format,
/// y = fl(fl(x·r) + b) (or one FMA). For the computed r̂, μ̂: x·r̂ - r̂·μ̂ = (x - μ̂)·r̂ exactly, so
/// y lies in (x - [μ̂])·[r̂] (exact interval product: r̂'s error reaches y through x - μ̂ only)
/// widened by b's rounding (u·|r̂μ̂| + η), the product's (u·|x·r̂| + η) and the sum's (u·|y| + η).
std::vector<Iv> norm_row(const Arith& a, RowOp op, VarianceMethod m, int lanes, NormForm form, std::span<const Iv> xc,
                         std::span<const double> x, Iv eps, std::span<const Iv> g, std::span<const Iv> b) {
  const std::size_t n = xc.size();
  std::vector<Iv> out(n);
  Iv mean{0, 0}, var;
  if (op == RowOp::rmsnorm) {
    std::vector<Iv> t(n);
    for (std::size_t j = 0; j < n; ++j) t[j] = a.sqr(xc[j]);
    var = over_n(a, a.sum(t), n);
  } else {
    const Stats s = variance_of(a, m, lanes, xc, x);
    mean = s.mean;
    var = s.var;
  }
  const Iv ve = a.add(var, eps);
  const bool shifted = op == RowOp::layernorm && form == NormForm::shifted;
  Iv r{}, rmu{};
  if (shifted) {
    r = hull(a.fn(rsqrt_ld, ve, false), a.div(point(1), a.sqrt(ve)));
    rmu = Arith::mul_exact(r, mean);
  }
  const auto widen = [&](Iv v, LD by) { return sane(Iv{v.lo - by, v.hi + by}); };
  for (std::size_t j = 0; j < n; ++j) {
    Iv z;
    if (shifted) {
      const Iv dev{xc[j].lo - mean.hi, xc[j].hi - mean.lo};  // x - μ̂, exact
      const Iv y = Arith::mul_exact(dev, r);
      const LD errs = a.u() * (mag(rmu) + mag(Arith::mul_exact(xc[j], r))) + 2 * a.eta();
      z = a.round(widen(y, errs));  // + the sum's own rounding
    } else {
      const Iv dev = op == RowOp::rmsnorm ? xc[j] : a.sub(xc[j], mean);
      z = times_rsqrt(a, dev, ve);
    }
    if (!g.empty()) z = a.mul(z, g[j]);
    if (!b.empty()) z = a.add(z, b[j]);
    out[j] = z;
  }
  return out;
}

/// The online denominator (SoftmaxMethod::online, docs/verdict.md §8 "Online softmax"): every
/// term e_k = exp(x_k - m) reaches the result through at most D = n - 1 merges, each rescaling
/// its partial sum by exp(m_old - m_new) (within fn_ulps: relative w = 2u·fn_ulps, absolute
/// fn_ulps·tiny), multiplying (u) and adding (u); its exponent's pieces (x_k - m_k, then each
/// m_old - m_new) have one sign and add up to x_k - m, so their roundings shift the exponent by at
/// most u·|x_k - m| in all, as the textbook's one subtraction does. So the computed sum lies in
/// [Σ e_k^lo·e^(-u|x_k - m|)·(1 - w)^(D+1)(1 - u)^(2D) - A, Σ e_k^hi·e^(u|x_k - m|)·(1 + w)^(D+1)(1 + u)^(2D) + A],
/// A = 6n·(2·fn_ulps + 1)·η·(the upper factor): every absolute (subnormal-range) error of the
/// computation's at most 6n roundings, later multiplied by factors of at most 1 + w and 1 + u.
Iv online_sum(const Arith& a, std::span<const Iv> xc, Iv m, const std::vector<bool>& masked, double fn_ulps) {
  const std::size_t n = xc.size();
  const LD u = a.u(), w = 2 * u * static_cast<LD>(fn_ulps), D = static_cast<LD>(n > 0 ? n - 1 : 0);
  const LD up = std::exp((D + 1) * std::log1p(w) + 2 * D * std::log1p(u));
  const LD down = std::exp((D + 1) * std::log1p(-w) + 2 * D * std::log1p(-u));
  // Every rounding of the whole computation (n leaf exps; per merge two rescale exps, two
  // products, one sum: at most 6n) may err once by its subnormal-range allowance (fn_ulps·2η for
  // a function, η for an operation), later scaled by factors of at most `up`.
  const LD A = 6 * static_cast<LD>(n) * (2 * static_cast<LD>(fn_ulps) + 1) * a.eta() * up;
  constexpr LD slack = 0x1p-56L;  // long double exp
  LD lo = 0, hi = 0;
  for (std::size_t j = 0; j < n; ++j) {
    if (masked[j]) continue;
    const LD dl = std::min(xc[j].lo - m.hi, LD{0}), dh = std::min(xc[j].hi - m.lo, LD{0});
    lo += std::exp(dl) * (1 - slack) * std::exp(u * dl) * down;  // dl <= 0: e^(-u·|dl|)
    hi += std::exp(dh) * (1 + slack) * std::exp(-u * dl) * up;
  }
  return {std::max(lo - A, LD{0}), hi + A};
}

/// softmax / log-softmax enclosures of one row (masked -inf entries: exact 0 / -inf).
std::vector<Iv> softmax_row(const Arith& a, bool log, std::span<const Iv> xc, const std::vector<bool>& masked,
                            SoftmaxMethod method = SoftmaxMethod::textbook, double fn_ulps = 1) {
  const std::size_t n = xc.size();
  Iv m{-INFINITY, -INFINITY};
  for (std::size_t j = 0; j < n; ++j)
    if (!masked[j]) m = {std::max(m.lo, xc[j].lo), std::max(m.hi, xc[j].hi)};
  std::vector<Iv> d(n), e;
  for (std::size_t j = 0; j < n; ++j) {
    if (masked[j]) continue;
    d[j] = a.sub(xc[j], m);
    d[j].hi = std::min(d[j].hi, LD{0});  // x_j - max <= 0, and rounding keeps it so
    e.push_back(a.fn(exp_ld, d[j], true));
  }
  const Iv s = method == SoftmaxMethod::online ? online_sum(a, xc, m, masked, fn_ulps) : a.sum(e);
  std::vector<Iv> out(n);
  if (!log) {
    std::size_t k = 0;
    for (std::size_t j = 0; j < n; ++j) out[j] = masked[j] ? point(0) : a.div(e[k++], s);
    return out;
  }
  const Iv l = a.fn(log_ld, s, true);
  const Iv lse = a.add(m, l);  // the other textbook form: x - (m + log Σ)
  for (std::size_t j = 0; j < n; ++j)
    out[j] = masked[j] ? point(-INFINITY) : hull(a.sub(d[j], l), a.sub(xc[j], lse));
  return out;
}

/// Elementwise enclosure of op(x̂).
Iv unary(const Arith& a, RowOp op, Iv x) {
  const Iv one = point(1), half = point(0.5L);
  switch (op) {
    case RowOp::exp: return a.fn(exp_ld, x, true);
    case RowOp::log: return x.lo <= 0 ? kAll : a.fn(log_ld, x, true);
    case RowOp::tanh: return a.fn(tanh_ld, x, true);
    case RowOp::reciprocal: return (x.lo <= 0 && x.hi >= 0) ? kAll : a.fn(recip_ld, x, false);
    case RowOp::rsqrt: return x.lo <= 0 ? kAll : a.fn(rsqrt_ld, x, false);
    case RowOp::sigmoid:
    case RowOp::silu: {
      // 1/(1 + exp(-x)), or for x < 0 the stable exp(x)/(1 + exp(x)); SiLU: x/(1 + exp(-x))
      // or x·sigmoid(x).
      const Iv nx{-x.hi, -x.lo};
      const Iv den = a.add(one, a.fn(exp_ld, nx, true));
      Iv sig = a.div(one, den);
      if (x.hi < 0) {
        const Iv ex = a.fn(exp_ld, x, true);
        sig = hull(sig, a.div(ex, a.add(one, ex)));
      }
      if (op == RowOp::sigmoid) return sig;
      return hull(a.div(x, den), a.mul(x, sig));
    }
    case RowOp::gelu_erf: {
      // x/2·(1 + erf(x·(1/√2))): the constant rounded (or x/√2 with √2 rounded).
      const Iv t = a.mul(x, constant(a, 0.70710678118654752440L));
      const Iv w = a.add(one, a.fn(erf_ld, t, true));
      return hull(a.mul(a.mul(half, x), w), a.mul(half, a.mul(x, w)));
    }
    case RowOp::gelu_tanh: {
      // x/2·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
      const Iv x3 = a.mul(a.sqr(x), x);
      const Iv inner = a.add(x, a.mul(constant(a, 0.044715L), x3));
      const Iv t = a.mul(constant(a, 0.79788456080286535588L), inner);
      const Iv w = a.add(one, a.fn(tanh_ld, t, true));
      return hull(a.mul(a.mul(half, x), w), a.mul(half, a.mul(x, w)));
    }
    default: break;
  }
  return kAll;
}

bool is_row_op(RowOp op) {
  return op == RowOp::softmax || op == RowOp::log_softmax || op == RowOp::layernorm || op == RowOp::rmsnorm;
}

}  // namespace

bool cast_is_exact(const FormatSpec& compute, const FormatSpec& out) {
  return out.precision >= compute.precision && emin(out) <= emin(compute) && emax(out) >= emax(compute);
}

std::string_view variance_method_name(VarianceMethod m) {
  switch (m) {
    case VarianceMethod::any: return "any";
    case VarianceMethod::two_pass: return "two-pass";
    case VarianceMethod::welford: return "welford";
    case VarianceMethod::sumsq: return "sumsq";
    case VarianceMethod::chan: return "chan";
    case VarianceMethod::rowwise_moments: return "rowwise-moments";
  }
  return "?";
}

VarianceChoice variance_named(std::string_view s) {
  constexpr std::string_view kRm = "rowwise-moments(";
  if (s.substr(0, kRm.size()) == kRm && s.size() > kRm.size() + 1 && s.back() == ')') {
    const std::string_view v = s.substr(kRm.size(), s.size() - kRm.size() - 1);
    int lanes = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), lanes);
    if (ec != std::errc{} || end != v.data() + v.size() || lanes < 1 || lanes > 1024)
      throw InputError(fmt::format("--variance '{}': the lane count V of rowwise-moments(V) must be an integer from 1 "
                                   "to 1024 (16 for bf16, 8 for fp32 on AVX2; 32 and 16 on AVX-512)",
                                   s));
    return {VarianceMethod::rowwise_moments, lanes};
  }
  for (const VarianceMethod m :
       {VarianceMethod::any, VarianceMethod::two_pass, VarianceMethod::welford, VarianceMethod::sumsq, VarianceMethod::chan})
    if (variance_method_name(m) == s) return {m, 0};
  throw InputError(fmt::format(
      "--variance '{}': unknown method (valid: two-pass, welford, sumsq, chan, rowwise-moments(V), any)", s));
}

std::string variance_choice_name(VarianceChoice v) {
  return v.method == VarianceMethod::rowwise_moments ? fmt::format("rowwise-moments({})", v.lanes)
                                                     : std::string(variance_method_name(v.method));
}

void set_row_method_options(RowCheckOptions& o, std::string_view variance, std::string_view norm_form) {
  const VarianceChoice v = variance_named(variance);
  o.variance = v.method;
  o.variance_lanes = v.lanes;
  o.norm_form = norm_form_named(norm_form);
}

std::string_view norm_form_name(NormForm f) { return f == NormForm::shifted ? "shifted" : "centred"; }

NormForm norm_form_named(std::string_view s) {
  for (const NormForm f : {NormForm::centred, NormForm::shifted})
    if (norm_form_name(f) == s) return f;
  throw InputError(fmt::format("--norm-form '{}': unknown form (valid: centred, shifted)", s));
}

std::string_view softmax_method_name(SoftmaxMethod m) { return m == SoftmaxMethod::online ? "online" : "textbook"; }

SoftmaxMethod softmax_method_named(std::string_view s) {
  for (const SoftmaxMethod m : {SoftmaxMethod::textbook, SoftmaxMethod::online})
    if (softmax_method_name(m) == s) return m;
  throw InputError(fmt::format("--softmax '{}': unknown method (valid: textbook, online)", s));
}

std::string_view masked_row_name(MaskedRow m) { return m == MaskedRow::zero ? "zero" : "nan"; }

MaskedRow masked_row_named(std::string_view s) {
  for (const MaskedRow m : {MaskedRow::nan, MaskedRow::zero})
    if (masked_row_name(m) == s) return m;
  throw InputError(fmt::format("--masked-row '{}': unknown choice (valid: nan, zero)", s));
}

VarianceMethod variance_method_named(std::string_view s) {
  const VarianceChoice v = variance_named(s);
  if (v.method == VarianceMethod::rowwise_moments)
    throw InputError(fmt::format("--variance '{}': a method with a parameter (read it with variance_named)", s));
  return v.method;
}

std::vector<std::optional<double>> row_element_bounds(RowOp op, const RowClaim& c, std::span<const double> x,
                                                      std::span<const double> y, std::span<const double> gamma,
                                                      std::span<const double> beta, std::vector<char>* may_overflow,
                                                      std::vector<double>* before_output,
                                                      std::vector<std::pair<double, double>>* sides) {
  const std::size_t n = x.size();
  std::vector<std::optional<double>> bound(n);
  if (may_overflow) may_overflow->assign(n, 0);
  if (before_output) before_output->assign(n, NAN);
  if (sides) sides->assign(n, {NAN, NAN});
  const Arith a(*c.compute, c.fn_ulps, c.fn_abs);
  const bool exact_cast = cast_is_exact(*c.compute, *c.out);
  const auto finish = [&](std::size_t j, Iv v) {
    if (!std::isfinite(y[j])) return;  // the oracle's special value decides
    v = sane(v);
    // An infinite end: some intermediate may be ±inf (an overflow, or a division by an enclosure
    // of 0), and inf - inf, 0·inf or inf/inf may follow: ±inf and NaN are legal results
    // (ReferenceElement::may_overflow, as for a matmul whose partial sums may overflow). A finite
    // result is still one of the compute format's finite values: on one infinite side the bound
    // is the farther end of the enclosure's finite part (clipped at the largest finite value;
    // [max, max] where the whole enclosure lies beyond it); both sides infinite: none.
    const bool inf_lo = std::isinf(v.lo), inf_hi = std::isinf(v.hi);
    if ((inf_lo || inf_hi) && may_overflow) (*may_overflow)[j] = 1;
    if (inf_lo != inf_hi) {
      v.lo = std::min(std::max(v.lo, -a.max()), a.max());
      v.hi = std::max(std::min(v.hi, a.max()), -a.max());
    }
    const LD yj = y[j];
    const LD d = std::max(yj - v.lo, v.hi - yj);
    if (std::isnan(d)) return;
    double out_round = 0;
    // Under a saturating cast at the largest finite value at most (|sat(RN(z)) - clamp(y)| <=
    // |z - y| + the rounding of a value within the range: docs/verdict.md §2).
    const LD top = c.out_saturate ? LD{max_finite(*c.out)} : LD{1e300};
    if (!exact_cast) out_round = output_rounding_error(*c.out, c.out_rounding, static_cast<double>(std::min(mag(v), top)));
    // Slack for evaluating the bound itself and for the exact result held as a double.
    const double slack = static_cast<double>(d * (1 + 0x1p-50L));
    const double repr = static_cast<double>(std::min(LD{std::fabs(y[j])}, top)) * 0x1p-52;
    bound[j] = slack + out_round + repr;
    if (before_output) (*before_output)[j] = slack + repr;
    // Each side on its own: the enclosure need not be centred on y (a softmax's denominator is
    // never below its largest term but may be far above it), and an output below y is legal only
    // down to the lower end, however far the upper one reaches.
    if (sides) {
      const auto side = [&](LD e) { return static_cast<double>(std::max(e, LD{0}) * (1 + 0x1p-50L)) + out_round + repr; };
      (*sides)[j] = {side(yj - v.lo), side(v.hi - yj)};
    }
  };
  std::vector<Iv> xc(n);
  bool finite = true, any_pos_inf = false, all_masked = true;
  std::vector<bool> masked(n, false);
  for (std::size_t j = 0; j < n; ++j) {
    finite = finite && std::isfinite(x[j]);
    any_pos_inf = any_pos_inf || std::isnan(x[j]) || (std::isinf(x[j]) && x[j] > 0);
    masked[j] = std::isinf(x[j]) && x[j] < 0;
    all_masked = all_masked && masked[j];
    xc[j] = masked[j] ? point(x[j]) : a.cast(x[j]);
  }
  if (!is_row_op(op)) {
    for (std::size_t j = 0; j < n; ++j) {
      if (std::isfinite(x[j])) {
        finish(j, unary(a, op, xc[j]));
      } else if (std::isinf(x[j]) && std::isfinite(y[j])) {
        // An infinite input with a finite result (exp(-inf) = 0, tanh(±inf) = ±1, 1/±inf = ±0,
        // sigmoid(±inf), rsqrt(+inf) = 0, silu/GELU's -0 at -inf): the formula's functions at
        // their limits, each within the function claim, and at most one rounding after
        // (sigmoid's 1/(1 + exp(-x)) at +inf): the claim's allowance of one function and one
        // rounding around the exact limit. (Formerly no bound: a zero of the other sign, as a
        // clamped kernel's silu(-inf) = +0, was a proven defect, stricter than --ulps 0.5.)
        finish(j, a.round(a.fn(identity_ld, point(y[j]), true)));
      }
    }
    return bound;
  }
  if (n == 0) return bound;
  if (op == RowOp::softmax || op == RowOp::log_softmax) {
    if (all_masked && !any_pos_inf && op == RowOp::softmax && c.masked_row == MaskedRow::zero) {
      std::fill(bound.begin(), bound.end(), 0.0);  // zeros, exactly: no arithmetic is claimed there
      return bound;
    }
    if (any_pos_inf || all_masked) return bound;  // NaN rows: the oracle decides
    if (c.softmax == SoftmaxMethod::online && c.fn_abs > 0)
      throw InputError("--softmax online with --fn-abs: no derived bound (an absolute error on a small rescale factor "
                       "exp(m_old - m_new) is unbounded relative to it); give --fn-ulps");
    const std::vector<Iv> v = softmax_row(a, op == RowOp::log_softmax, xc, masked, c.softmax, c.fn_ulps);
    for (std::size_t j = 0; j < n; ++j) {
      if (masked[j]) {
        if (op == RowOp::softmax) bound[j] = 0;  // exp(-inf) = 0 exactly: a masked entry is 0
        continue;
      }
      finish(j, v[j]);
    }
    return bound;
  }
  if (!finite) return bound;
  std::vector<Iv> g(gamma.size()), b(beta.size());
  for (std::size_t j = 0; j < gamma.size(); ++j) g[j] = a.cast(gamma[j]);
  for (std::size_t j = 0; j < beta.size(); ++j) b[j] = a.cast(beta[j]);
  const Iv eps = a.cast(c.eps);
  std::vector<Iv> v;
  if (op == RowOp::layernorm && c.variance == VarianceMethod::any) {
    v = norm_row(a, op, VarianceMethod::two_pass, 0, c.norm_form, xc, x, eps, g, b);
    for (const VarianceMethod m : {VarianceMethod::welford, VarianceMethod::sumsq}) {
      const std::vector<Iv> w = norm_row(a, op, m, 0, c.norm_form, xc, x, eps, g, b);
      for (std::size_t j = 0; j < n; ++j) v[j] = hull(v[j], w[j]);
    }
  } else {
    v = norm_row(a, op, c.variance, c.variance_lanes, c.norm_form, xc, x, eps, g, b);
  }
  for (std::size_t j = 0; j < n; ++j) finish(j, v[j]);
  return bound;
}

std::string row_claim_order(RowOp op, const RowClaim& c) {
  std::string s = fmt::format("{} in {}", row_op_name(op), c.compute->name);
  if (op == RowOp::layernorm)
    s += c.variance == VarianceMethod::any
             ? " (variance: two-pass, welford or sumsq)"
             : fmt::format(" (variance: {})", variance_choice_name({c.variance, c.variance_lanes}));
  if (op == RowOp::layernorm && c.norm_form == NormForm::shifted) s += " (shifted: x·r + b)";
  if ((op == RowOp::softmax || op == RowOp::log_softmax) && c.softmax == SoftmaxMethod::online) s += " (online)";
  if (op == RowOp::layernorm || op == RowOp::rmsnorm) s += fmt::format(", eps {}", c.eps);
  s += fmt::format(", functions within {} ulps", c.fn_ulps);
  if (c.fn_abs > 0) s += fmt::format(" + {:g} absolute", c.fn_abs);
  return s;
}

/// The online softmax denominator's bound in words (online_sum).
static std::string online_derivation(std::size_t n) {
  return fmt::format("online (Milakov & Gimelshein 2018): running (max, sum) pairs merged in any tree, a partial sum "
                     "rescaled by exp(m_old - m_new) when its max grows; each term passes at most D = n - 1 = {} merges "
                     "(a rescale within the function claim w = 2u·fn_ulps, a multiplication and an addition, u each), "
                     "and its exponent's pieces add up to x_k - m with one sign (their roundings: u·|x_k - m| in all): "
                     "S within [Σ e_k·e^(-u|x_k-m|)·(1-w)^(D+1)(1-u)^(2D), Σ e_k·e^(u|x_k-m|)·(1+w)^(D+1)(1+u)^(2D)] "
                     "± 6n(2·fn_ulps + 1)η·(the upper factor) for the subnormal range; the numerators e_i use the final max",
                     n > 0 ? n - 1 : 0);
}

std::vector<std::string> row_bound_derivation(RowOp op, const RowClaim& c, std::size_t n, bool gamma, bool beta) {
  std::vector<std::string> d;
  const Arith a(*c.compute, c.fn_ulps, c.fn_abs);
  const double u = static_cast<double>(a.u());
  d.push_back(fmt::format("claim: {} by its textbook formula, every operation in {} rounded to nearest (u = 2^{}), "
                          "each elementary function within {} ulps of {}{}, reductions over the row in any order, "
                          "then one cast to {} {}",
                          row_op_name(op), c.compute->name, std::ilogb(u), c.fn_ulps, c.compute->name,
                          c.fn_abs > 0 ? fmt::format(" and/or {:g} absolute", c.fn_abs) : "", c.out->name,
                          rounding_name(c.out_rounding)));
  switch (op) {
    case RowOp::softmax:
      d.emplace_back(fmt::format("formula: m = max x; e_j = exp(x_j - m); S = Σ e_j; y_i = e_i / S. Masked entries "
                                 "(-inf) give exactly 0; a fully masked row (every entry -inf) must give {}",
                                 c.masked_row == MaskedRow::zero
                                     ? "0 in every element (--masked-row zero: the guard of PyTorch's _safe_softmax and "
                                       "FlashAttention-style kernels)"
                                     : "NaN, as torch.softmax does (0/0; --masked-row zero for kernels that write 0)"));
      if (c.softmax == SoftmaxMethod::online) d.push_back(online_derivation(n));
      break;
    case RowOp::log_softmax:
      d.emplace_back("formula: y_i = (x_i - m) - log Σ_j exp(x_j - m), or x_i - (m + log Σ) (both covered); masked "
                     "entries give -inf, a fully masked row NaN. The error is on the scale of |x_i - m| and log Σ "
                     "(the row), not of y_i: an --ulps claim fails near y = 0");
      if (c.softmax == SoftmaxMethod::online) d.push_back(online_derivation(n));
      break;
    case RowOp::layernorm:
      d.push_back(fmt::format("formula: μ = Σx/n; variance {} (biased, /n); y = (x - μ)·rsqrt(var + eps) or "
                              "(x - μ)/sqrt(var + eps) (both covered), eps = {} inside the root{}{}. The error is on "
                              "the row's scale (μ, var), not y's: an --ulps claim fails near y = 0",
                              c.variance == VarianceMethod::any
                                  ? "by two-pass Σ(x - μ)²/n, Welford's update (any order) or Σx²/n - μ² clamped at 0"
                                  : variance_choice_name({c.variance, c.variance_lanes}),
                              c.eps, gamma ? ", then ·gamma" : "", beta ? ", +beta" : ""));
      if (c.norm_form == NormForm::shifted)
        d.emplace_back("shifted form (PyTorch CPU): r = 1/sqrt(var + eps) and b = -r·μ rounded, then y = x·r + b (two "
                       "roundings or one FMA); x·r̂ - r̂·μ̂ = (x - μ̂)·r̂ exactly, so y within (x - [μ̂])·[r̂] ± (u·|r̂μ̂| + "
                       "u·|x·r̂| + 2η), then the sum's rounding: b's rounding is on the scale of |μ|·r, not of y");
      if (c.variance == VarianceMethod::rowwise_moments) {
        const Arith ar(*c.compute, c.fn_ulps, c.fn_abs);
        const MergeTree t = rowwise_moments_tree(ar, n, c.variance_lanes);
        d.push_back(fmt::format(
            "rowwise-moments({}): PyTorch CPU's RowwiseMoments tree for n = {}: {} lanes of Welford runs in chunks of 16, "
            "chunks merged by Chan's update (δ = μ_b - μ_a, μ += δ·n_b/n, M2 += M2_b + δ²·n_b/n·n_a) in a binary-counter "
            "stack, the n mod V tail by a scalar Welford run, the lanes merged one by one (mean leaf depth {:.4g}, at "
            "most {:.0f} additions per M2 increment{}); bounded node by node on the row's values: each node holds the "
            "exact mean and M2 of its elements and bounds e, f on the computed ones, e <= (1 - r)e_a + r·e_b + "
            "γ_(4+k)·r·(|δ| + e_a + e_b) + u·(|μ| + ...) + 4η, f <= f_a + f_b + 2(1 + γ_(5+k))·w·(2|δ|E_δ + E_δ²) + "
            "γ_(5+k)·w·δ² + γ₂·(the magnitudes added) + 3η (r = n_b/n, w = n_a·n_b/n, k = 3 where a count is not a "
            "value of {}, E_δ = δ̂'s or (x - μ̂)'s error); var = M2/n",
            c.variance_lanes, n, c.variance_lanes, static_cast<double>(t.mean_depth), static_cast<double>(t.additions),
            t.count_roundings ? "; some counts round" : "", c.compute->name));
      }
      if (c.variance == VarianceMethod::chan)
        d.emplace_back("Chan: Welford runs merged by δ = μ_b - μ_a, μ = μ_a + δ·n_b/n, M2 = M2_a + M2_b + δ²·n_a·n_b/n in any "
                       "tree; a merge's error reaches μ weighted n_v/n, mean leaf depth <= (n+1)/2: E <= (n+1)/2·(u·M' + "
                       "γ₄·R' + 4η), M' = M + E, R' = R + 2E; M2 error <= 2(1+γ₅)(2E_δ·sqrt(S_w·W) + E_δ²·S_w) + γ₅·W, "
                       "E_δ = 2E + u·R', S_w = Σ n_a·n_b/n <= (n/4)·log2 n, then ((1+u)^(2(n-1)) - 1)(W + ...); "
                       "vacuous once (n+1)/2·(u + 2γ₄) >= 1");
      if (c.variance == VarianceMethod::any || c.variance == VarianceMethod::welford)
        d.emplace_back("Welford: every computed running mean stays in [min x, max x]; mean error E <= min(R, ((2u+u²)R + "
                     "u·M·(n+1)/(2(1-u)))/(1 - 2u - u² - u(n+1)/(2(1-u)))), M2 error <= (1+u)(2E₁·sqrt(2(n-1)W) + "
                     "(n-1)E₁²) + u·W + ((1+u)^(n-2) - 1)(W + ...), E₁ = E + u·R, R = max x - min x, W = n·var");
      break;
    case RowOp::rmsnorm:
      d.push_back(fmt::format("formula: y = x·rsqrt(Σx²/n + eps) or x/sqrt(Σx²/n + eps) (both covered), eps = {}{}",
                              c.eps, gamma ? ", then ·gamma" : ""));
      break;
    case RowOp::sigmoid:
      d.emplace_back("formula: 1/(1 + exp(-x)), or for x < 0 exp(x)/(1 + exp(x)) (both covered); exp(-x) may "
                     "overflow to inf and give 0 where the exact result is tiny (subnormal or below)");
      break;
    case RowOp::silu:
      d.emplace_back("formula: x/(1 + exp(-x)) or x·sigmoid(x) (both covered); exp(-x) may overflow and give 0");
      break;
    case RowOp::gelu_erf:
      d.emplace_back("formula: x/2·(1 + erf(x·(1/√2))), the constant rounded once; for x < 0, 1 + erf cancels: its "
                     "error is erf's ulps at 1, so the bound is on that scale, not on y's");
      break;
    case RowOp::gelu_tanh:
      d.emplace_back("formula: x/2·(1 + tanh(√(2/π)·(x + 0.044715·x³))), constants rounded once; 1 + tanh cancels "
                     "for x < 0");
      break;
    case RowOp::reciprocal: d.emplace_back("formula: 1/x, within the function claim"); break;
    case RowOp::rsqrt: d.emplace_back("formula: 1/sqrt(x), within the function claim"); break;
    default: d.push_back(fmt::format("formula: {}(x), within the function claim", row_op_name(op))); break;
  }
  d.push_back(fmt::format("each element: an interval enclosing every value the claimed arithmetic can produce (and the "
                          "exact intermediate), operation by operation: a rounding widens an endpoint z by u·|z| + η, "
                          "η = {:.3g} (half the least subnormal of {}); a function by {}·(2u·|z| + {:.3g}){} "
                          "(the ulps part keeping the exact result's sign; both kinds added, so either is covered); "
                          "a value beyond {:.6g} may be ±inf",
                          a.u() > 0 ? static_cast<double>(min_positive(*c.compute) / 2) : 0.0, c.compute->name,
                          c.fn_ulps, min_positive(*c.compute), c.fn_abs > 0 ? fmt::format(" + {:g}", c.fn_abs) : "",
                          max_finite(*c.compute)));
  if (is_row_op(op))
    d.push_back(fmt::format("a sum of n terms in any order: ± ((1 + u)^(n-1) - 1)·Σ|terms| (Higham ASNA §4.2, valid "
                            "for every n; here n = {}: {:.3g}); a sum of non-negative terms is never below its largest",
                            n, a.sum_coefficient(n)));
  d.push_back(fmt::format("bound = distance from the exact result to the end of the interval on the output's side (an "
                          "output below the exact result against the lower end, above it against the upper; the "
                          "farther end is the probabilistic bound){}",
                          cast_is_exact(*c.compute, *c.out)
                              ? fmt::format(" (the cast to {} is exact)", c.out->name)
                              : fmt::format(", + the {} cast to {} at that magnitude", rounding_name(c.out_rounding),
                                            c.out->name)));
  if (!cast_is_exact(*c.compute, *c.out) && is_directed(c.out_rounding))
    d.push_back(directed_output_derivation(c.out_rounding, *c.out, "the cast", "the distance alone", false));
  return d;
}

void validate_row_options(RowOp op, const RowCheckOptions& opt, std::string_view command) {
  if (opt.variance == VarianceMethod::rowwise_moments && (opt.variance_lanes < 1 || opt.variance_lanes > 1024))
    throw InputError(fmt::format("{}: rowwise-moments needs its lane count V (1..1024), e.g. rowwise-moments(16)", command));
  if (opt.norm_form == NormForm::shifted && op != RowOp::layernorm)
    throw InputError(fmt::format("{}: --norm-form shifted is a layernorm form (x·r + b with b = -r·μ)", command));
  if ((op == RowOp::layernorm || op == RowOp::rmsnorm) && !(std::isfinite(opt.eps) && opt.eps >= 0))
    throw InputError(fmt::format("{}: --eps {}: must be a finite number >= 0 (added to the variance inside the square "
                                 "root)",
                                 command, opt.eps));
}

RowClaim row_claim(const ClaimSpec& claim, const RowCheckOptions& opt) {
  RowClaim rc;
  rc.in = claim.in;
  rc.compute = claim.compute;
  rc.fn_ulps = claim.fn_ulps;
  rc.fn_abs = claim.fn_abs;
  rc.param = opt.param_format ? opt.param_format : claim.in;
  rc.variance = opt.variance;
  rc.variance_lanes = opt.variance_lanes;
  rc.norm_form = opt.norm_form;
  rc.softmax = opt.softmax;
  rc.masked_row = opt.masked_row;
  rc.eps = opt.eps;
  rc.out = claim.out;
  rc.out_rounding = claim.output_rounding();
  rc.out_saturate = claim.output_saturates();
  return rc;
}

ToleranceResult row_tolerance(RowOp op, const ClaimSpec& claim, std::size_t n, const RowCheckOptions& opt) {
  if (!claim.compute)
    throw InputError(fmt::format("tol {}: give the arithmetic with --compute F (the bound is derived from it)", row_op_name(op)));
  validate_row_options(op, opt, fmt::format("tol {}", row_op_name(op)));
  detail::refuse_options_of_other_ops(claim, true, fmt::format("tol {}", row_op_name(op)));
  detail::refuse_exp_ulps_outside_softmax(claim, op, fmt::format("tol {}", row_op_name(op)));
  const RowClaim rc = row_claim(claim, opt);
  ToleranceResult r;
  r.op = std::string(row_op_name(op));
  r.k = static_cast<std::int64_t>(n);
  r.claim_text = fmt::format("in {}, {}, out {} {}", claim.in->name, row_claim_order(op, rc), claim.out->name,
                             rounding_name(rc.out_rounding));
  r.order = row_claim_order(op, rc);
  r.output = claim.out;
  r.output_rounding_half = rc.out_rounding == Rounding::rne || rc.out_rounding == Rounding::rna;
  r.bound.derivation = row_bound_derivation(op, rc, n, opt.gamma.has_value(), opt.beta.has_value());
  const std::string note = fmt::format(
      "each element's bound depends on its row's values (numfid check {} computes it per element); the derivation "
      "for rows of {} elements",
      r.op, n);
  r.row_text = fmt::format("numfid tol {}: {}\n{}:\n", r.op, r.claim_text, note);
  for (const std::string& line : r.bound.derivation) r.row_text += fmt::format("  {}\n", line);
  nlohmann::json j;
  j["op"] = r.op;
  j["k"] = r.k;
  j["claim"] = r.claim_text;
  j["order"] = r.order;
  j["per_element"] = true;
  j["note"] = note;
  j["derivation"] = r.bound.derivation;
  r.json_text = j.dump(2) + "\n";
  return r;
}

// The softmax bound of bounds.h, now one case of the derived row bounds.
std::vector<ElementBound> softmax_element_bounds(const SoftmaxClaim& sc, const FormatSpec& out, Rounding out_rounding,
                                                 std::span<const double> x, std::span<const double> y,
                                                 std::vector<std::string>* derivation) {
  RowClaim c;
  c.in = &fp32;
  c.compute = sc.compute;
  c.fn_ulps = sc.exp_ulps;
  c.out = &out;
  c.out_rounding = out_rounding;
  const auto b = row_element_bounds(RowOp::softmax, c, x, y);
  std::vector<ElementBound> r(b.size());
  for (std::size_t j = 0; j < b.size(); ++j) r[j].deterministic = r[j].probabilistic = b[j].value_or(0);
  if (derivation && derivation->empty()) *derivation = row_bound_derivation(RowOp::softmax, c, x.size());
  return r;
}

}  // namespace numfid
