// The probable-defect rule's calibration: legal orders emulated on a sample of the output
// elements with the plan evaluator, and the rule itself (tolerances/calibrate.h).
#include "tolerances/calibrate.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "formats/convert.h"
#include "formats/error.h"
#include "formats/platform.h"
#include "oracles/accumulator.h"
#include "tolerances/check_detail.h"
#include "tolerances/parallel_detail.h"

namespace numfid {

namespace {

/// |term| as a double (for sorting only).
double magnitude(const Term& t) {
  return t.cls == FpClass::normal ? std::ldexp(static_cast<double>(t.value.significand), t.value.exponent) : 0.0;
}

std::vector<Bits> cast_all(const TensorData& t, const FormatSpec& to, Rounding r) {
  RoundOptions o;
  o.rounding = r;
  std::vector<Bits> v(t.values.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = convert(*t.format, to, t.values[i], o).bits;
  return v;
}

MatmulCalibration not_applicable(std::string why) {
  MatmulCalibration c;
  c.why_not = std::move(why);
  return c;
}

}  // namespace

MatmulCalibration calibrate_matmul(const MatmulReference& ref, const ClaimSpec& claim, std::int64_t max_elements) {
  const FpEnvGuard env;
  if (claim.profile) return not_applicable("a profile names the platform's model (use --expect bit-exact)");
  if (claim.acc_rounding != Rounding::rne && claim.acc_rounding != Rounding::rna)
    return not_applicable(claim.acc_rounding == Rounding::stochastic
                              ? "stochastic rounding: the probabilistic bound is a theorem, no calibration needed"
                              : "directed rounding: no probabilistic model");
  if (claim.ulps) return not_applicable("an accuracy claim in ulps has no reduction model");
  if (claim.cast && claim.cast_rounding == Rounding::stochastic)
    return not_applicable("a stochastic input cast is not deterministic");
  if (claim.plan && ref.addend) return not_applicable("a plan with an addend");
  const std::int64_t K = ref.dims.k, N = ref.dims.n;
  const std::int64_t total = static_cast<std::int64_t>(ref.elements.size());
  if (total == 0 || K == 0) return not_applicable("nothing to calibrate");

  // The claim's deterministic part: operands cast as claimed (round-to-nearest or directed:
  // one value each), then the bound of the reduction alone about their exact products.
  const FormatSpec& fa = claim.cast ? *claim.cast : *ref.a.format;
  const FormatSpec& fb = claim.cast ? *claim.cast : *ref.b.format;
  const std::vector<Bits> av = claim.cast ? cast_all(ref.a, fa, claim.cast_rounding) : ref.a.values;
  const std::vector<Bits> bv = claim.cast ? cast_all(ref.b, fb, claim.cast_rounding) : ref.b.values;
  ClaimSpec reduction_only = claim;
  reduction_only.in = &fa;
  reduction_only.in_b = &fb;
  reduction_only.cast = nullptr;
  const bool has_addend = ref.addend.has_value();
  const detail::ClaimSetup s = detail::make_claim(reduction_only, K, has_addend, true);
  const ReductionBound b = reduction_bound(s.claim, K, has_addend, claim.confidence);
  if (!b.probabilistic_applies) return not_applicable("no probabilistic model for this accumulator");

  std::vector<ReductionPlan> plans;
  MatmulCalibration cal;
  if (claim.plan) {
    plans.push_back(*claim.plan);
  } else {
    for (const char* t : {"sequential", "reverse", "pairwise", "blocked(16)", "blocked(128)", "blocked(128, pairwise)",
                          "splitk(4)", "strided(32)", "numpy"})
      plans.push_back(*ReductionPlan::parse(t));
  }
  for (const ReductionPlan& p : plans) cal.orders.push_back(p.text());
  const bool any_order = !claim.plan;
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
  acc.products_rounded = claim.products_rounded;
  cal.legal.assign(static_cast<std::size_t>(F), {});
  // Each sampled element on its own, on every core (tolerances/parallel_detail.h); the results
  // are gathered afterwards in sample order, so they do not depend on the thread count.
  struct Sampled {
    bool used = false;
    double center = 0, radius = 0;
    std::vector<double> legal;  // [order]
  };
  std::vector<Sampled> sampled(static_cast<std::size_t>(S));
  detail::parallel_for(S, 1, [&](std::int64_t i0, std::int64_t i1) {
    std::vector<Term> terms(static_cast<std::size_t>(K)), work;
    std::vector<Bits> col(static_cast<std::size_t>(K));
    LongAccumulator exact;
    for (std::int64_t i = i0; i < i1; ++i) {
      const std::int64_t e = i * total / S;
      const std::int64_t row = ref.rowwise_dot ? e : e / N, cj = ref.rowwise_dot ? 0 : e % N;
      bool finite = true;
      for (std::int64_t k = 0; k < K; ++k) {
        const Bits x = av[static_cast<std::size_t>(row * K + k)];
        const Bits y =
            ref.rowwise_dot ? bv[static_cast<std::size_t>(row * K + k)] : bv[static_cast<std::size_t>(k * N + cj)];
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
      if (finite && std::isfinite(center) && !exact.is_nan()) {
        Sampled& out = sampled[static_cast<std::size_t>(i)];
        out.used = true;
        out.center = center;
        out.radius = b.probabilistic * exact.abs_sum_upper() + b.absolute;
        auto record = [&](Bits v) { out.legal.push_back(to_double(*claim.acc, v)); };
        for (const ReductionPlan& p : plans) record(reduce(p, acc, terms));
        if (any_order) {
          for (std::uint64_t p = 1; p <= 2; ++p) {
            work = terms;
            std::mt19937_64 g(0x9e3779b97f4a7c15ULL * p + static_cast<std::uint64_t>(e));
            std::shuffle(work.begin(), work.end(), g);
            record(reduce(ReductionPlan{}, acc, work));
          }
          work = terms;
          std::stable_sort(work.begin(), work.end(),
                           [](const Term& x, const Term& y) { return magnitude(x) < magnitude(y); });
          record(reduce(ReductionPlan{}, acc, work));
          std::reverse(work.begin(), work.end());
          record(reduce(ReductionPlan{}, acc, work));
        }
      }
      if (has_addend) terms.pop_back();
    }
  });
  for (std::int64_t i = 0; i < S; ++i) {
    const Sampled& x = sampled[static_cast<std::size_t>(i)];
    if (!x.used) continue;
    const std::int64_t e = i * total / S;
    const std::int64_t row = ref.rowwise_dot ? e : e / N, cj = ref.rowwise_dot ? 0 : e % N;
    cal.sample.push_back(e);
    cal.center.push_back(x.center);
    cal.radius.push_back(x.radius);
    for (std::int64_t f = 0; f < F; ++f) {
      const double v = x.legal[static_cast<std::size_t>(f)];
      cal.legal[static_cast<std::size_t>(f)].push_back(v);
      const double dev = std::fabs(v - x.center);
      const double ratio = dev == 0 ? 0.0 : x.radius > 0 ? dev / x.radius : INFINITY;
      if (ratio > cal.rho || (std::isnan(ratio) && !std::isnan(cal.rho))) {
        cal.rho = std::isnan(ratio) ? INFINITY : ratio;
        cal.rho_where = fmt::format("{} at element {}", cal.orders[static_cast<std::size_t>(f)],
                                    ref.rowwise_dot ? fmt::format("[{}]", e) : fmt::format("[{}, {}]", row, cj));
      }
    }
    cal.term_additions += (F + 1) * K;
  }
  if (cal.sample.empty()) return not_applicable("no sampled element has a finite exact result");
  cal.applies = true;
  return cal;
}

void apply_calibration(CheckResult& r, const MatmulCalibration& cal, const TensorData& c, const ClaimSpec& claim) {
  Verdict& v = r.verdict;
  if (!cal.applies || (v.kind == TensorKind::defect && !v.probable)) return;
  const FormatSpec& out = *claim.out;
  const Rounding orr = claim.output_rounding();
  const bool nearest = orr == Rounding::rne || orr == Rounding::rna;
  std::int64_t outside = 0, judged = 0;
  for (std::size_t i = 0; i < cal.sample.size(); ++i) {
    const double o = to_double(out, c.values[static_cast<std::size_t>(cal.sample[i])]);
    if (!std::isfinite(o)) continue;  // non-finite outputs are judged by the bounds (a proof either way)
    ++judged;
    // The values that round to o: within half its spacing (round-to-nearest; the spacing above
    // o, which is the larger one at a binade's bottom) or a whole spacing (directed).
    const double h = (nearest ? 0.5 : 1.0) * ulp_at(out, std::fabs(o));
    const double slack = std::fabs(cal.center[i]) * 0x1p-50;  // double arithmetic on centre and radius
    if (std::fabs(o - cal.center[i]) > cal.radius[i] + h + slack) ++outside;
  }
  const double p_exceed = 1 - r.bound.confidence;
  const double alpha = 1e-9;
  const std::int64_t threshold = binomial_threshold(judged, p_exceed, alpha);
  if (outside == 0 || outside < threshold) return;
  const double p = binomial_tail(judged, p_exceed, outside);
  const std::string evidence = fmt::format(
      "{} of {} sampled elements lie outside the probabilistic bound about the exact result{} (confidence {} each); "
      "chance explains at most {} at false-alarm probability {:g} (P = {:.3g})",
      outside, judged, claim.cast ? " of the cast operands" : "", r.bound.confidence, threshold - 1, alpha, p);
  if (cal.rho <= 1) {
    if (v.kind == TensorKind::defect) return;  // already probable by the bias rule
    v.kind = TensorKind::defect;
    v.probable = true;
    v.false_alarm_probability = p;
    v.reason = fmt::format("{}; the model holds on these operands: {} legal orders emulated on the sample stay within "
                           "{:.3g} of the bound",
                           evidence, cal.orders.size(), cal.rho);
  } else if (v.kind == TensorKind::consistent) {
    v.kind = TensorKind::suspicious;
    v.reason = fmt::format("{}; but the legal orders emulated on these operands leave the bound themselves ({}: {:.3g}× "
                           "it): structured data break the model of independent errors, so this is evidence, not proof",
                           evidence, cal.rho_where, cal.rho);
  } else if (v.kind == TensorKind::suspicious) {
    v.reason += fmt::format("; the legal orders emulated on these operands leave the probabilistic bound themselves ({}: "
                            "{:.3g}× it): the data break the model, no probable verdict",
                            cal.rho_where, cal.rho);
  }
}

void apply_bit_exact_expectation(CheckResult& r, const TensorData& c) {
  if (!r.model || r.predicted.size() != c.values.size())
    throw InputError("--expect bit-exact: the model's output could not be computed for this check");
  Verdict& v = r.verdict;
  const FormatSpec& f = *c.format;
  const std::int64_t cols = r.matrix && !c.shape.empty() ? c.shape.back() : 0;
  std::vector<std::size_t> differ;
  for (std::size_t e = 0; e < c.values.size(); ++e)
    if (c.values[e] != r.predicted[e]) differ.push_back(e);
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
                        cols > 0 ? fmt::format("[{}, {}]", idx / cols, idx % cols) : fmt::format("[{}]", idx),
                        to_hex(f, c.values[e]), to_double(f, c.values[e]), to_hex(f, r.predicted[e]),
                        to_double(f, r.predicted[e]));
  }
  v.reason = fmt::format("{} of {} elements differ from the bit-exact output {} predicts (--expect bit-exact): {}{}",
                         differ.size(), v.elements, r.model->model, list, differ.size() > 8 ? "; ..." : "");
}

}  // namespace numfid
