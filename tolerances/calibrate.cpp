// The probable-defect rule's calibration: legal orders emulated on a sample of the output
// elements with the plan evaluator, and the rule itself (tolerances/calibrate.h).
#include "tolerances/calibrate.h"

#include <algorithm>
#include <numeric>
#include <bit>
#include <climits>
#include <functional>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "formats/convert.h"
#include "formats/error.h"
#include "formats/platform.h"
#include "numerics/profile.h"
#include "numerics/tensor_engine.h"
#include "oracles/accumulator.h"
#include "tolerances/check_detail.h"
#include "tolerances/parallel_detail.h"

namespace numfid {

namespace {

/// |term| as a double (for sorting only).
double magnitude(const Term& t) {
  if (t.cls != FpClass::normal) return 0.0;
  const double m = static_cast<double>(t.value.significand);
  const int e = t.value.exponent;
  // Once per term (a normal double for every product of formats of <= 32 bits): ldexp_fast.
  return ldexp_fast(m, e);
}

std::vector<Bits> cast_all(const TensorData& t, const FormatSpec& to, Rounding r) {
  RoundOptions o;
  o.rounding = r;
  std::vector<Bits> v(t.values.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = convert(*t.format, to, t.values[i], o).bits;
  return v;
}

/// A term's magnitude and index, for sorting the terms by magnitude (ties in index order).
struct ByMagnitude {
  double magnitude;
  std::uint32_t index;
  bool operator<(const ByMagnitude& o) const {
    return magnitude < o.magnitude || (magnitude == o.magnitude && index < o.index);
  }
};

/// The terms' magnitudes (`mag`, in term order) and the terms in increasing magnitude, ties in
/// index order (`order`): what the radius (tree_spread) and the orders "increasing |term|" and
/// "decreasing |term|" read, sorted once.
void by_magnitude(const std::vector<Term>& terms, std::vector<double>& mag, std::vector<ByMagnitude>& order) {
  mag.resize(terms.size());
  order.resize(terms.size());
  for (std::size_t k = 0; k < terms.size(); ++k) {
    mag[k] = magnitude(terms[k]);
    order[k] = {mag[k], static_cast<std::uint32_t>(k)};
  }
  std::sort(order.begin(), order.end());
}

/// R = u·√(Σ_v B(s_v)²) bounded over every binary summation tree of `terms` (docs/verdict.md
/// §4.1): the error of a tree is Σ_v δ_v·y_v over its additions v (y_v the unrounded sum there,
/// |δ_v| <= u), and |y_v| <= B(s) = M_s + γ_(s−1+extra)·Σ|t| for an addition of s terms, M_s =
/// the larger of the s largest positive and the s largest |negative| terms' sums (an exact
/// subset sum of s terms) plus the deterministic error of its two operands. A tree of m leaves
/// has at most m − s + 1 additions of s or more terms, as the sequential one has, so with B
/// non-decreasing Σ_v B(s_v)² <= Σ_(j=2..m) B(j)². Leaves rounded on entry (`extra`) add Σ t².
/// `mag` holds each term's magnitude(), `order` the terms in increasing magnitude (by_magnitude).
double tree_spread(const std::vector<Term>& terms, const std::vector<double>& mag,
                   const std::vector<ByMagnitude>& order, double abs_sum, double u, int extra,
                   std::vector<double>& pos, std::vector<double>& neg, double& largest) {
  pos.clear();
  neg.clear();
  double leaves = 0;
  for (std::size_t k = 0; k < terms.size(); ++k)
    if (terms[k].cls == FpClass::normal) leaves += mag[k] * mag[k];
  // Each sign's magnitudes in decreasing order: the common order read backwards.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Term& t = terms[it->index];
    if (t.cls == FpClass::normal) (t.value.negative ? neg : pos).push_back(it->magnitude);
  }
  const std::size_t m = terms.size();
  const auto [sum, last] = partial_sum_bound(pos, neg, m, abs_sum, u, extra, extra ? leaves : 0);
  largest = m >= 2 ? last
                   : pos.empty() && neg.empty() ? 0
                                                : std::max(pos.empty() ? 0 : pos[0], neg.empty() ? 0 : neg[0]);
  // Sums of doubles: each step errs by at most 2^-52 relatively; m steps.
  return u * std::sqrt(sum) * (1 + static_cast<double>(m + 2) * 0x1p-52);
}

/// 2^f, f the lowest set bit of any finite non-zero term (+inf when there is none).
double lattice(const std::vector<Term>& terms) {
  int f = INT_MAX;
  for (const Term& t : terms)
    if (t.cls == FpClass::normal && t.value.significand != 0) {
      const auto lo = static_cast<std::uint64_t>(t.value.significand);
      const int tz = lo != 0 ? std::countr_zero(lo) : 64 + std::countr_zero(static_cast<std::uint64_t>(t.value.significand >> 64));
      f = std::min(f, t.value.exponent + tz);
    }
  return f == INT_MAX ? INFINITY : std::ldexp(1.0, f);
}

MatmulCalibration not_applicable(std::string why) {
  MatmulCalibration c;
  c.why_not = std::move(why);
  return c;
}

}  // namespace

MatmulCalibration calibrate_matmul(const MatmulReference& ref, const ClaimSpec& claim, std::int64_t max_elements) {
  return calibrate_matmul(ref, ref.a, ref.b, claim, max_elements);
}

namespace {

/// A claim's arithmetic as calibrate_matmul emulates it: the claim itself, or for a profile the
/// same claim written out — the profile's accumulator, its input cast where an operand is not
/// already in that format (as detail::make_claim reads it), and its order: a plan profile's
/// plan, a tensor-engine profile's Tensor Engine model (`te`). A block-FMA profile has none:
/// `why_not` says why.
struct Arithmetic {
  ClaimSpec claim;
  std::optional<TensorEngineModel> te;
  std::string why_not;
};

Arithmetic arithmetic_of(const ClaimSpec& claim, const TensorData& A) {
  Arithmetic x{claim, std::nullopt, {}};
  if (!claim.profile) return x;
  const Profile& p = *claim.profile;
  ClaimSpec& c = x.claim;
  if (p.model == ProfileModel::scaled_gemm) {  // (routed to the scaled check before this; said in case)
    x.why_not = fmt::format("profile {} is a block-scaled GEMM recipe, judged by its own check", p.name);
    return x;
  }
  if (p.model == ProfileModel::block_fma) {
    // A block FMA aligns its products to the largest exponent and truncates them (no sticky bit,
    // often a final rounding toward zero): its errors are one-signed by design, not the
    // mean-independent roundings of model M, so no radius about the centre holds for it.
    x.why_not = fmt::format("profile {} is a tensor-core block FMA, whose truncations are one-signed by design, not "
                            "the mean-zero roundings the radius models (docs/verdict.md §4.1)",
                            p.name);
    return x;
  }
  const AccumulatorModel& acc = p.reduction.acc;
  c.acc = acc.format;
  c.acc_rounding = acc.rounding.rounding;
  c.products_rounded = acc.products_rounded;
  c.acc_ftz = acc.rounding.ftz;
  c.acc_daz = acc.rounding.daz;
  c.acc_zero_start = acc.zero_start;
  // The profile's cast converts each operand not already in its format (make_claim's rule).
  if (detail::profile_casts(p, *claim.in, claim.in_b)) {
    c.cast = p.input_cast;
    c.cast_rounding = p.input_cast_rounding;
  }
  c.profile = nullptr;
  if (p.model == ProfileModel::plan) {
    c.plan = p.reduction.plan;
    return x;
  }
  c.plan.reset();
  x.te = tensor_engine_for(p, c.cast ? *c.cast : *A.format);
  const TensorEngineModel& te = *x.te;
  const auto same = [](const AccumulatorModel& m, const AccumulatorModel& n) {
    return *m.format == *n.format && m.rounding.rounding == n.rounding.rounding && m.rounding.ftz == n.rounding.ftz &&
           m.rounding.daz == n.rounding.daz && m.products_rounded == n.products_rounded;
  };
  if (!same(te.array_acc, te.psum) || !same(te.array_acc, acc))
    x.why_not = fmt::format("profile {}: the PE array and PSUM accumulate in different arithmetic, and the radius "
                            "models one accumulator",
                            p.name);
  return x;
}

}  // namespace

MatmulCalibration calibrate_matmul(const MatmulReference& ref, const TensorData& A, const TensorData& B,
                                   const ClaimSpec& stated, std::int64_t max_elements) {
  const FpEnvGuard env;
  // A profile is calibrated as the plan claim it stands for (docs/verdict.md §4.1): the same
  // cast, accumulator and order.
  const Arithmetic arith = arithmetic_of(stated, A);
  if (!arith.why_not.empty()) return not_applicable(arith.why_not);
  const ClaimSpec& claim = arith.claim;
  const std::optional<TensorEngineModel>& te = arith.te;
  if (claim.acc_rounding != Rounding::rne && claim.acc_rounding != Rounding::rna)
    return not_applicable(claim.acc_rounding == Rounding::stochastic
                              ? "stochastic rounding: the probabilistic bound is a theorem, no calibration needed"
                              : "directed rounding: no probabilistic model");
  if (claim.ulps) return not_applicable("an accuracy claim in ulps has no reduction model");
  if (claim.cast && claim.cast_rounding == Rounding::stochastic)
    return not_applicable("a stochastic input cast is not deterministic");
  if (ref.addend && stated.addend_at == AddendAt::output)
    return not_applicable("the addend added after the output cast: a second output rounding, which the legal orders "
                          "emulated here do not model");
  if ((claim.plan || te) && ref.addend)
    return not_applicable(te ? "a Tensor Engine model with an addend" : "a plan with an addend");
  if (claim.acc_ftz || claim.acc_daz)
    return not_applicable("a flushing accumulator (ftz/daz): what it flushes is not the mean-zero rounding error the "
                          "radius models");
  const std::int64_t K = ref.dims.k, N = ref.dims.n;
  const std::int64_t total = static_cast<std::int64_t>(ref.elements.size());
  if (total == 0 || K == 0) return not_applicable("nothing to calibrate");

  // The claim's deterministic part: operands cast as claimed (round-to-nearest or directed:
  // one value each), then the bound of the reduction alone about their exact products.
  const FormatSpec& fa = claim.cast ? *claim.cast : *A.format;
  const FormatSpec& fb = claim.cast ? *claim.cast : *B.format;
  // The operands as the kernel reads them: cast copies only where the claim casts (no copy of
  // the operands otherwise: at model scale they are the largest arrays of a check).
  std::vector<Bits> a_cast, b_cast;
  if (claim.cast) {
    a_cast = cast_all(A, fa, claim.cast_rounding);
    b_cast = cast_all(B, fb, claim.cast_rounding);
  }
  const std::vector<Bits>& av = claim.cast ? a_cast : A.values;
  const std::vector<Bits>& bv = claim.cast ? b_cast : B.values;
  // (A profile stays in the bound's claim: its own count of roundings on a term's path.)
  ClaimSpec reduction_only = claim;
  reduction_only.profile = stated.profile;
  reduction_only.in = &fa;
  reduction_only.in_b = &fb;
  reduction_only.cast = nullptr;
  const bool has_addend = ref.addend.has_value();
  const detail::ClaimSetup s = detail::make_claim(reduction_only, K, has_addend, true);
  const ReductionBound b = reduction_bound(s.claim, K, has_addend, claim.confidence);
  if (!b.probabilistic_applies) return not_applicable("no probabilistic model for this accumulator");

  std::vector<ReductionPlan> plans;
  MatmulCalibration cal;
  // The radius over every summation tree (§4.1): one Azuma–Hoeffding tail for the whole sum,
  // λ = √(2 ln(2/(1 − C))); an extra rounding on every leaf when a product does not fit the
  // accumulator or products are rounded; every rounding of the tree (m − 1 additions, + m
  // leaves) may add η in the subnormal range.
  const std::int64_t m_terms = b.terms;
  const int extra = b.roundings > (s.claim.roundings_per_term ? *s.claim.roundings_per_term : m_terms - 1) ? 1 : 0;
  cal.lambda = std::sqrt(2 * std::log(2 / (1 - claim.confidence)));
  cal.absolute = static_cast<double>(m_terms - 1 + extra * m_terms) *
                 output_rounding_error(*claim.acc, claim.acc_rounding, 0);
  if (claim.plan) {
    plans.push_back(*claim.plan);
  } else if (te) {
    cal.orders.push_back(fmt::format("profile {} (Tensor Engine: {} rows per instruction{}, PSUM in program order)",
                                     stated.profile->name, te->tile_k, te->double_row ? ", double-row pairs" : ""));
  } else {
    for (const char* t : {"sequential", "reverse", "pairwise", "blocked(16)", "blocked(128)", "blocked(128, pairwise)",
                          "splitk(4)", "strided(32)", "numpy"})
      plans.push_back(*ReductionPlan::parse(t));
  }
  for (const ReductionPlan& p : plans) cal.orders.push_back(p.text());
  const bool any_order = !claim.plan && !te;
  if (any_order)
    for (const char* t : {"random permutation 1", "random permutation 2", "increasing |term|", "decreasing |term|"})
      cal.orders.emplace_back(t);
  const auto F = static_cast<std::int64_t>(cal.orders.size());

  // The sample: evenly spaced elements, as many as the budget allows (at least 32).
  std::int64_t S = std::min<std::int64_t>(total, max_elements);
  S = std::min(S, std::max<std::int64_t>(std::min<std::int64_t>(total, 32), kCalibrationBudget / ((F + 1) * K)));
  AccumulatorModel acc;
  acc.format = claim.acc;
  acc.rounding.rounding = claim.acc_rounding;
  acc.rounding.ftz = claim.acc_ftz;
  acc.rounding.daz = claim.acc_daz;
  acc.zero_start = claim.acc_zero_start;
  acc.products_rounded = claim.products_rounded;
  // Each sampled element on its own (every core: tolerances/parallel_detail.h), then merged in
  // sample order, so that the result is the same for any thread count.
  struct Sampled {
    bool finite = false;
    double center = 0, radius = 0, spread = 0, radius_hm = 0, lattice = 0;
    std::vector<double> legal;  // [order]
  };
  std::vector<Sampled> out(static_cast<std::size_t>(S));
  detail::parallel_for(S, 4, [&](std::int64_t lo, std::int64_t hi) {
    std::vector<Term> terms(static_cast<std::size_t>(K)), scratch;
    std::vector<std::uint32_t> perm;
    std::vector<Bits> col(static_cast<std::size_t>(K));
    std::vector<double> pos, neg, mag;
    std::vector<ByMagnitude> order;
    LongAccumulator exact;
    for (std::int64_t i = lo; i < hi; ++i) {
      Sampled& o = out[static_cast<std::size_t>(i)];
      const std::int64_t e = i * total / S;
      const std::int64_t row = ref.rowwise_dot ? e : e / N, cj = ref.rowwise_dot ? 0 : e % N;
      const std::int64_t b0 = ref.rowwise_dot ? 0 : ref.dims.b_offset(row);  // its matrix of a batch of B
      terms.resize(static_cast<std::size_t>(K));
      bool finite = true;
      for (std::int64_t k = 0; k < K; ++k) {
        const Bits x = av[static_cast<std::size_t>(row * K + k)];
        const Bits y = ref.rowwise_dot ? bv[static_cast<std::size_t>(row * K + k)]
                                       : bv[static_cast<std::size_t>(b0 + k * N + cj)];
        col[static_cast<std::size_t>(k)] = y;
        terms[static_cast<std::size_t>(k)] = exact_product(fa, x, fb, y);
        finite = finite && (terms[static_cast<std::size_t>(k)].cls == FpClass::zero ||
                            terms[static_cast<std::size_t>(k)].cls == FpClass::normal);
      }
      exact.clear();
      exact.add_dot(fa, std::span<const Bits>(av).subspan(static_cast<std::size_t>(row * K), static_cast<std::size_t>(K)),
                    fb, col);
      if (has_addend) {
        const Bits d = ref.addend->values[static_cast<std::size_t>(e)];
        exact.add(*ref.addend->format, d);
        terms.push_back(as_term(*ref.addend->format, d));
      }
      const double center = exact.to_double();
      if (!finite || !std::isfinite(center) || exact.is_nan()) continue;
      o.finite = true;
      const double abs_sum = exact.abs_sum_upper();
      double largest = 0;  // B(m): no partial sum of any order exceeds it
      by_magnitude(terms, mag, order);
      o.spread = tree_spread(terms, mag, order, abs_sum, b.u_acc, extra, pos, neg, largest);
      o.radius = cal.lambda * o.spread + cal.absolute;
      o.center = center;
      o.radius_hm = b.probabilistic * abs_sum + b.absolute;
      // The final addition of any order of m >= 3 terms has a rounded operand, a multiple of its
      // own spacing, at most the accumulator's spacing at B(m); the terms are multiples of 2^f.
      o.lattice = std::max(lattice(terms), ulp_at(*claim.acc, largest));
      o.legal.reserve(static_cast<std::size_t>(F));
      auto record = [&](Bits v) { o.legal.push_back(to_double(*claim.acc, v)); };
      OrderedSums sums(acc, terms);  // the terms read once for every order below
      for (const ReductionPlan& p : plans) record(sums.sum(p));
      if (te) record(tensor_engine_sum(*te, terms, std::nullopt, static_cast<std::uint64_t>(e), scratch));
      if (any_order) {
        perm.resize(terms.size());
        for (std::uint64_t p = 1; p <= 2; ++p) {
          std::iota(perm.begin(), perm.end(), 0U);
          std::mt19937_64 g(0x9e3779b97f4a7c15ULL * p + static_cast<std::uint64_t>(e));
          std::shuffle(perm.begin(), perm.end(), g);
          record(sums.sum(ReductionPlan{}, perm));
        }
        // Increasing |term|, ties in index order (the order a stable sort gives): by_magnitude's.
        for (std::size_t k = 0; k < terms.size(); ++k) perm[k] = order[k].index;
        record(sums.sum(ReductionPlan{}, perm));
        std::reverse(perm.begin(), perm.end());
        record(sums.sum(ReductionPlan{}, perm));
      }
    }
  });
  cal.legal.assign(static_cast<std::size_t>(F), {});
  for (std::int64_t i = 0; i < S; ++i) {
    const Sampled& o = out[static_cast<std::size_t>(i)];
    if (!o.finite) continue;
    const std::int64_t e = i * total / S;
    cal.sample.push_back(e);
    cal.center.push_back(o.center);
    cal.radius.push_back(o.radius);
    cal.spread.push_back(o.spread);
    cal.radius_hm.push_back(o.radius_hm);
    cal.lattice.push_back(o.lattice);
    for (std::int64_t f = 0; f < F; ++f) {
      const double x = o.legal[static_cast<std::size_t>(f)];
      cal.legal[static_cast<std::size_t>(f)].push_back(x);
      const double dev = std::fabs(x - o.center);
      const double ratio = dev == 0 ? 0.0 : o.radius > 0 ? dev / o.radius : INFINITY;
      if (ratio > cal.rho || (std::isnan(ratio) && !std::isnan(cal.rho))) {
        cal.rho = std::isnan(ratio) ? INFINITY : ratio;
        cal.rho_order = cal.orders[static_cast<std::size_t>(f)];
        cal.rho_element = e;
      }
    }
    cal.term_additions += (F + 1) * K;
  }
  if (cal.sample.empty()) return not_applicable("no sampled element has a finite exact result");
  cal.applies = true;
  cal.cast = claim.cast != nullptr;
  return cal;
}

namespace {

/// A probable defect found by one rule: its false-alarm probability and the evidence line.
struct Finding {
  double p = 1;
  std::string evidence;
};

/// `x` (an accumulator value) rounded into the output under the claim's output rounding.
double round_out(const FormatSpec& out, Rounding r, bool saturate, double x) {
  RoundOptions o;
  o.rounding = r;
  if (saturate) o.overflow = Overflow::saturate;
  return to_double(out, convert_double(out, x, o).bits);
}

/// How far x lies beyond the reals that round to the output value o: half o's spacing about it
/// (round to nearest; the spacing above o, the larger one at a binade's bottom) or a whole
/// spacing (directed); and where o is the largest finite value of a conversion that saturates
/// there (a format without inf and NaN — fp6, fp4 —, a rounding toward zero on o's side, or a
/// saturating cast: --saturate), every real beyond o rounds to it too.
double beyond_preimage(const FormatSpec& out, Rounding orr, bool saturate, bool nearest, double o, double x) {
  const double h = (nearest ? 0.5 : 1.0) * ulp_at(out, std::fabs(o));
  if (std::fabs(o) == max_finite(out)) {
    const bool up = o > 0;
    const bool saturates = saturate || out.non_finite == NonFinite::finite_only || orr == Rounding::rtz ||
                           (up ? orr == Rounding::rdn : orr == Rounding::rup);
    if (saturates && (up ? x >= o : x <= o)) return 0;
  }
  return std::fabs(o - x) - h;
}

/// Variance, in output ulps², of a round-to-nearest output rounding error ρ = RN(y) − y given
/// the reduction error, under assumption A (§4.1: y uniform over the multiples of its lattice
/// spacing L modulo twice the output spacing): 0 when L >= ulp, else the discrete uniform law on
/// [−½, ½] with half-weight ties at ±½, variance 1/12 + (L/ulp)²/6 <= 1/8 (at L = ulp/2).
constexpr double kRoundingVariance = 0.125;

/// Rule (b), the calibrated lean (§4.1): T = Σ w_e X_e / Σ w_e, X_e = sign(c_e)·(o_e − c_e) in
/// output ulps = the reduction error (a martingale of the roundings δ_v·y_v, |δ_v·y_v| <= u·B,
/// Σ (u·B)² <= R_e²) plus the output rounding error (|ρ| <= ½, variance <= 1/8), w_e = 1/v_e,
/// v_e = (R_e/ulp)² + k²/8 (k = the output spacing at |c_e| + r_e over the one at |c_e|: 1 unless
/// the radius reaches the next binade). Freedman's inequality (Ann. Probab. 3(1), 1975) for a
/// martingale of increments at most b and predictable variance at most V = 1/Σw: P(|T| − shift
/// >= t) <= 2·exp(−t²/(2(V + b·t/3))), b = max_e w_e·max(k/2, R_e/ulp)/Σw; shift = the weighted underflow
/// allowance η_total/ulp (not mean zero). `value(i)` gives element i's output.
template <class Value>
Finding lean(const MatmulCalibration& cal, const FormatSpec& out, Value value) {
  double sw = 0, swx = 0, swa = 0, wb = 0;
  std::int64_t n = 0;
  for (std::size_t i = 0; i < cal.sample.size(); ++i) {
    const double o = value(i), c = cal.center[i];
    // Near the output's largest finite value the output may saturate: no rounding-error model.
    if (!std::isfinite(o) || c == 0 || std::fabs(c) + cal.radius[i] > max_finite(out)) continue;
    const double ulp = ulp_at(out, std::fabs(c));
    // The output spacing where the accumulator's result can be (within the radius), in ulps at
    // c: 1, or 2 (4, ...) where the radius reaches a higher binade.
    const double k = ulp_at(out, std::fabs(c) + cal.radius[i]) / ulp;
    const double x = std::copysign(1.0, c) * (o - c) / ulp;
    const double w = 1 / ((cal.spread[i] / ulp) * (cal.spread[i] / ulp) + k * k * kRoundingVariance);
    sw += w, swx += w * x, swa += w * cal.absolute / ulp;
    wb = std::max(wb, w * std::max(0.5 * k, cal.spread[i] / ulp));
    ++n;
  }
  if (n == 0 || sw == 0) return {};
  const double t = swx / sw, excess = std::fabs(t) - swa / sw, V = 1 / sw, b = wb / sw;
  if (!(excess > 0)) return {};
  Finding f;
  f.p = std::min(1.0, 2 * std::exp(-excess * excess / (2 * (V + b * excess / 3))));
  f.evidence = fmt::format("the outputs lean {} the exact results by {:+.3f} output ulps (weighted mean over {} sampled "
                           "elements) where the reduction and output-rounding errors the claim allows have standard "
                           "deviation at most {:.3g}: Freedman's tail 2·exp(−t²/(2(V + b·t/3))) = {:.3g}",
                           t < 0 ? "toward zero from" : "away from zero from", t, n, std::sqrt(V), f.p);
  return f;
}

/// Significant bits of a finite non-zero double (leading to last set bit).
int significant_bits(double x) {
  int e = 0;
  const auto i = static_cast<std::uint64_t>(std::ldexp(std::frexp(std::fabs(x), &e), 53));
  return 53 - std::countr_zero(i);
}

/// P(at least k successes) of independent trials with success probabilities `q` (the
/// Poisson-binomial tail, by the exact recurrence over trials).
double poisson_binomial_tail(const std::vector<double>& q, std::int64_t k) {
  if (k <= 0) return 1;
  std::vector<double> p(q.size() + 1, 0.0);  // p[j] = P(j successes so far)
  p[0] = 1;
  for (std::size_t i = 0; i < q.size(); ++i)
    for (std::size_t j = i + 1; j > 0; --j) p[j] = p[j] * (1 - q[i]) + p[j - 1] * q[i];
  for (std::size_t i = 0; i < q.size(); ++i) p[0] *= 1 - q[i];
  double tail = 0;
  for (auto j = static_cast<std::size_t>(k); j < p.size(); ++j) tail += p[j];
  return std::min(1.0, tail);
}

/// Rule (c), the narrow grid (§4.1): outputs holding at most p significant bits (bf16's 8,
/// fp16's 11) where the output format has p_out > p. Under assumption A a legal result lands
/// on that grid with probability at most q_e = max(1.5, L_e/ulp)·2^-(p_out − p), L_e the
/// element's lattice (`MatmulCalibration::lattice`), ulp the output spacing at |c_e| − r_e.
Finding narrow_grid(const MatmulCalibration& cal, const TensorData& c, const FormatSpec& out, Rounding orr, bool saturate,
                    double alpha) {
  std::vector<int> grids;
  for (const int p : {8, 11})
    if (p < out.precision) grids.push_back(p);
  Finding best;
  for (const int p : grids) {
    auto on_grid = [&](double x) {
      return std::isfinite(x) && x != 0 && std::fabs(x) >= min_normal(out) && significant_bits(x) <= p;
    };
    std::vector<double> q_hit;
    std::vector<std::size_t> used;
    std::int64_t arranged = 0, hits = 0;
    for (std::size_t i = 0; i < cal.sample.size(); ++i) {
      const double o = to_double(out, c.values[static_cast<std::size_t>(cal.sample[i])]);
      if (!std::isfinite(o)) continue;
      const double ctr = cal.center[i];
      const double ulp = ulp_at(out, std::max(0.0, std::fabs(ctr) - cal.radius[i]));
      const double q = std::max(1.5, cal.lattice[i] / ulp) * std::ldexp(1.0, p - out.precision);
      // An exact result on the grid (small integers, equal products) is structure, not chance:
      // the element is left out, and the others are judged given that theirs is not.
      if (q >= 0.5 || on_grid(round_out(out, orr, saturate, ctr))) {
        ++arranged;
        continue;
      }
      q_hit.push_back(q / (1 - q));
      used.push_back(i);
      hits += on_grid(o);
    }
    if (hits == 0) continue;
    // Assumption A on these data: every emulated legal order, judged by the same rule, must
    // pass it; one that would not means the data put legal results on the grid.
    bool legal_hits = false;
    for (std::size_t f = 0; f < cal.legal.size() && !legal_hits; ++f) {
      std::int64_t h = 0;
      for (const std::size_t i : used) h += on_grid(round_out(out, orr, saturate, cal.legal[f][i]));
      legal_hits = h > 0 && static_cast<double>(grids.size()) * poisson_binomial_tail(q_hit, h) <= alpha;
    }
    if (legal_hits) continue;
    const double pv = std::min(1.0, static_cast<double>(grids.size()) * poisson_binomial_tail(q_hit, hits));
    if (pv < best.p) {
      const double qmax = *std::max_element(q_hit.begin(), q_hit.end());
      best.p = pv;
      best.evidence = fmt::format(
          "{} of {} sampled elements hold at most {} significant bits ({} grid) where the {}-bit output format and the "
          "exact results do not, nor do {} emulated legal orders beyond chance; a legal result lands there with "
          "probability at most {:.3g} each (max(1.5, lattice/ulp)·2^-{}, assumption A): P(>= {}) × {} grid{} = {:.3g}{}",
          hits, q_hit.size(), p, p == 8 ? "bf16's" : "fp16's", out.precision, cal.orders.size(), qmax,
          out.precision - p, hits, grids.size(), grids.size() > 1 ? "s" : "", pv,
          arranged > 0 ? fmt::format(" ({} elements left out: exact result on the grid, or partial sums on a lattice "
                                     "too coarse to tell)",
                                     arranged)
                       : "");
    }
  }
  return best;
}

}  // namespace

void apply_calibration(CheckResult& r, const MatmulCalibration& cal, const TensorData& c, const ClaimSpec& claim) {
  Verdict& v = r.verdict;
  if (v.kind == TensorKind::defect && !v.probable) return;
  if (!cal.applies) {
    // Said, not skipped silently: a reader of the verdict learns which rules did not speak.
    if (!cal.why_not.empty()) v.reason += fmt::format("; probable-defect rules of §4.1 not applied: {}", cal.why_not);
    return;
  }
  const FormatSpec& out = *claim.out;
  const Rounding orr = claim.output_rounding();
  const bool sat = claim.output_saturates();
  const bool nearest = orr == Rounding::rne || orr == Rounding::rna;
  const double alpha = 1e-9;
  const double tighter = [&] {
    double s = 0;
    std::int64_t n = 0;
    for (std::size_t i = 0; i < cal.radius.size(); ++i)
      if (cal.radius_hm[i] > 0 && std::isfinite(cal.radius_hm[i])) s += cal.radius[i] / cal.radius_hm[i], ++n;
    return n > 0 ? s / static_cast<double>(n) : 1.0;
  }();
  // Elements are named by their place in C as given ([b, h, i, j] in a stack), as the report does.
  const std::string rho_where = fmt::format("{} at element {}", cal.rho_order, r.locate(cal.rho_element));
  const std::string model = fmt::format(
      "the model holds on these operands: {} legal orders emulated on the sample stay within {:.3g} of the radius "
      "(λ = {:.3g}, partial-sum bound over every order, on average {:.2f}× the Higham–Mary radius)",
      cal.orders.size(), cal.rho, cal.lambda, tighter);
  auto set_probable = [&](const Finding& f, const std::string& why) {
    v.kind = TensorKind::defect;
    v.probable = true;
    v.false_alarm_probability = f.p;
    v.reason = why;
  };
  // (a) Elements outside the radius.
  std::int64_t outside = 0, judged = 0;
  for (std::size_t i = 0; i < cal.sample.size(); ++i) {
    const double o = to_double(out, c.values[static_cast<std::size_t>(cal.sample[i])]);
    if (!std::isfinite(o)) continue;  // non-finite outputs are judged by the bounds (a proof either way)
    ++judged;
    const double slack = std::fabs(cal.center[i]) * 0x1p-50;  // double arithmetic on centre and radius
    if (beyond_preimage(out, orr, sat, nearest, o, cal.center[i]) > cal.radius[i] + slack) ++outside;
  }
  const double p_exceed = 1 - r.bound.confidence;
  const std::int64_t threshold = binomial_threshold(judged, p_exceed, alpha);
  if (outside > 0 && outside >= threshold) {
    const double p = binomial_tail(judged, p_exceed, outside);
    const std::string evidence = fmt::format(
        "{} of {} sampled elements lie outside the partial-sum radius about the exact result{} (confidence {:.12g} each; "
        "docs/verdict.md §4.1: a radius from the data's own partial sums, tighter than the per-element probabilistic "
        "bound the element counts use); "
        "chance explains at most {} at false-alarm probability {:g} (P = {:.3g})",
        outside, judged, cal.cast ? " of the cast operands" : "", r.bound.confidence, threshold - 1, alpha, p);
    if (cal.rho <= 1) {
      if (v.kind == TensorKind::defect) return;  // already probable by the bias rule
      set_probable({p, evidence}, fmt::format("{}; {}", evidence, model));
      return;
    }
    if (v.kind == TensorKind::consistent) {
      v.kind = TensorKind::suspicious;
      v.reason = fmt::format("{}; but the legal orders emulated on these operands leave the radius themselves ({}: "
                             "{:.3g}× it): structured data break the model of independent errors, so this is evidence, "
                             "not proof",
                             evidence, rho_where, cal.rho);
    } else if (v.kind == TensorKind::suspicious) {
      v.reason += fmt::format("; the legal orders emulated on these operands leave the partial-sum radius themselves "
                              "({}: {:.3g}× it): the data break the model, no probable verdict",
                              rho_where, cal.rho);
    }
  }
  if (v.kind == TensorKind::defect) return;
  // (d) The most extreme element: its accumulator result is at least e·R_e from the centre,
  // which one element of S reaches by chance with probability <= S·2·exp(−e²/2) (Azuma).
  if (cal.rho <= 1) {
    double e_max = 0;
    std::size_t where = 0;
    for (std::size_t i = 0; i < cal.sample.size(); ++i) {
      const double o = to_double(out, c.values[static_cast<std::size_t>(cal.sample[i])]);
      if (!std::isfinite(o) || !(cal.spread[i] > 0)) continue;
      const double slack = std::fabs(cal.center[i]) * 0x1p-50;
      const double e = (beyond_preimage(out, orr, sat, nearest, o, cal.center[i]) - slack - cal.absolute) / cal.spread[i];
      if (e > e_max) e_max = e, where = i;
    }
    const double p = std::min(1.0, 2 * static_cast<double>(judged) * std::exp(-e_max * e_max / 2));
    if (judged > 0 && e_max > 0 && p <= alpha) {  // no finite sampled output: nothing to read (p would be 0)
      set_probable({p, ""},
                   fmt::format("sampled element {} lies {:.3g} sub-Gaussian scales R = u·√(Σ B_j²) = {:.3g} beyond the "
                               "values that round to it from the exact result{}: one of {} elements does that by chance "
                               "with probability at most {}·2·exp(−e²/2) = {:.3g} <= {:g}; {}",
                               r.locate(cal.sample[where]), e_max, cal.spread[where], cal.cast ? " of the cast operands" : "",
                               judged, judged, p, alpha, model));
      return;
    }
  }
  // (b) The calibrated lean, round-to-nearest outputs, where the model holds and no emulated
  // legal order leans on these operands.
  if (nearest && cal.rho <= 1) {
    const Finding f =
        lean(cal, out, [&](std::size_t i) { return to_double(out, c.values[static_cast<std::size_t>(cal.sample[i])]); });
    bool legal_lean = false;
    for (std::size_t o = 0; o < cal.legal.size() && f.p <= alpha && !legal_lean; ++o)
      legal_lean = lean(cal, out, [&](std::size_t i) { return round_out(out, orr, sat, cal.legal[o][i]); }).p <= alpha;
    if (f.p <= alpha && !legal_lean) {
      set_probable(f, fmt::format("{}; false-alarm probability {:g} at most; {}", f.evidence, alpha, model));
      return;
    }
  }
  // (c) The narrow grid.
  const Finding g = narrow_grid(cal, c, out, orr, sat, alpha);
  if (g.p <= alpha)
    set_probable(g, fmt::format("{} <= {:g}: the output was stored in fewer bits than claimed (e.g. rounded through a "
                                "narrower format)",
                                g.evidence, alpha));
}

void apply_bit_exact_expectation(CheckResult& r, const TensorData& c) {
  if (!r.model || r.predicted.size() != c.values.size())
    throw InputError("--expect bit-exact: the model's output could not be computed for this check");
  Verdict& v = r.verdict;
  const FormatSpec& f = *c.format;
  // The same result bit for bit, NaN of any payload and sign for a NaN (NanPolicy::any_nan:
  // IEEE 754 leaves an invalid operation's NaN sign to the platform; docs/verdict.md §4.4).
  std::vector<std::size_t> differ;
  for (std::size_t e = 0; e < c.values.size(); ++e)
    if (!equivalent_bits(f, c.values[e], r.predicted[e], NanPolicy::any_nan)) differ.push_back(e);
  v.probable = false;
  v.false_alarm_probability = 0;
  if (differ.empty()) {
    v.kind = TensorKind::consistent;
    v.reason = fmt::format("matches the model bit for bit: all {} elements equal the output {} predicts", v.elements,
                           r.model->model);
    return;
  }
  v.kind = TensorKind::defect;
  std::string list;
  for (std::size_t i = 0; i < differ.size() && i < 8; ++i) {
    const std::size_t e = differ[i];
    const std::int64_t idx = static_cast<std::int64_t>(e);
    list += fmt::format("{}{} {} ({:.9g}), model {} ({:.9g})", i ? "; " : "",
                        r.locate(idx),
                        to_hex(f, c.values[e]), to_double(f, c.values[e]), to_hex(f, r.predicted[e]),
                        to_double(f, r.predicted[e]));
  }
  v.reason = fmt::format("{} of {} elements differ from the bit-exact output {} predicts (--expect bit-exact): {}{}",
                         differ.size(), v.elements, r.model->model, list, differ.size() > 8 ? "; ..." : "");
}

}  // namespace numfid
