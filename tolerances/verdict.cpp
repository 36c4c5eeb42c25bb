// Classification of elements, the tensor verdict and the error-field signatures.
#include "tolerances/verdict.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace numfid {

std::string_view class_name(ElementClass c) {
  switch (c) {
    case ElementClass::bit_exact: return "bit-exact";
    case ElementClass::within_probabilistic: return "within probabilistic bound";
    case ElementClass::within_deterministic: return "within deterministic bound only";
    case ElementClass::outside_deterministic: return "outside deterministic bound";
  }
  return "?";
}

std::string_view kind_name(TensorKind k) {
  switch (k) {
    case TensorKind::consistent: return "consistent";
    case TensorKind::suspicious: return "suspicious";
    case TensorKind::defect: return "defect";
  }
  return "?";
}

namespace {

bool same_nonfinite(const FormatSpec& f, Bits a, Bits b) {
  const Decoded x = decode(f, a), y = decode(f, b);
  if (x.cls == FpClass::nan || y.cls == FpClass::nan) return x.cls == y.cls;  // NaN policy: any NaN
  return x.cls == y.cls && x.negative == y.negative;
}

// Signature thresholds. Signatures are evidence printed beside the verdict, never the verdict
// itself (that comes from the bounds alone), so their thresholds trade missed evidence against
// evidence that legal data also shows; each is set with that in mind:

/// Fewest elements over which a mean signed error is read as a bias: below ~30 samples the
/// t statistic's null distribution is far from normal (heavy-tailed Student t).
constexpr std::int64_t kBiasMinElements = 32;
/// |t| beyond which the mean signed error is a bias: 6 standard errors, a false-alarm
/// probability of about 2e-9 for a normal statistic (the verdict's own false-alarm level, 1e-9).
constexpr double kBiasMinT = 6;
/// |mean| (output ulps) below which a significant bias is too small to name: round-to-nearest
/// outputs of structured data can show a consistent few-hundredths drift; a truncating cast
/// shows about -0.5 (half an ulp toward zero on average).
constexpr double kBiasMinMeanUlps = 0.1;
/// Median excess error per Σ|terms| over √n·u beyond which partial sums are narrower than
/// claimed: legal round-to-nearest accumulation stays near √n·u·(a small constant) at the
/// median (Higham & Mary 2019); one bit fewer in the accumulator doubles u, bf16 instead of fp32
/// multiplies it by 2^16 — 8× leaves room for the constant and catches 3 or more bits lost.
constexpr double kNarrowAccumulatorFactor = 8;
/// Elements whose bounding box must cover at most this fraction of the tensor for the
/// exceedances to be "confined" (a tile, a row, a column) rather than spread over it.
constexpr double kConfinedMaxAreaFraction = 0.5;
/// Fewest elements for a single exceedance to be a "lone outlier" rather than a small tensor's
/// one bad element among few.
constexpr std::size_t kLoneOutlierMinElements = 16;

void add_signatures(Verdict& v, const Claim& claim, const ReductionBound& b, std::span<const ElementReport> all,
                    std::span<const ReferenceElement> ref, Grid grid) {
  const FormatSpec& out = *claim.output;
  // Bias of the signed error, in output ulps, sign-normalised (negative = toward zero).
  // Round-to-nearest outputs average about 0; a truncating cast averages about -0.5.
  {
    double sum = 0, sum2 = 0;
    std::int64_t n = 0;
    for (const ElementReport& e : all) {
      if (!std::isfinite(e.error_ulps) || e.exact == 0) continue;
      const double s = std::copysign(1.0, e.exact) * e.error_ulps;
      sum += s;
      sum2 += s * s;
      ++n;
    }
    if (n >= kBiasMinElements) {
      const double mean = sum / static_cast<double>(n);
      const double var = std::max(sum2 / static_cast<double>(n) - mean * mean, 1e-300);
      const double t = mean / std::sqrt(var / static_cast<double>(n));
      if (std::fabs(t) > kBiasMinT && std::fabs(mean) > kBiasMinMeanUlps)
        v.signatures.push_back({"bias", fmt::format("mean signed error {:+.3f} output ulps ({} zero), t = {:.1f} over {} "
                                                    "elements; {} rounding averages ~0, truncation ~-0.5",
                                                    mean, mean < 0 ? "toward" : "away from", t, n,
                                                    rounding_name(claim.output_rounding))});
    }
  }
  // Growth: the error left after the output rounding, per unit of Σ|terms|, against the
  // √n·u growth of the claimed accumulator. The median, not the mean, so that a few wild
  // elements (an indexing defect) do not read as a narrow accumulator, which shows everywhere.
  {
    std::vector<double> excess;
    for (std::size_t i = 0; i < all.size(); ++i) {
      const ElementReport& e = all[i];
      if (!std::isfinite(e.error) || ref[i].sum_abs <= 0) continue;
      const double orr = output_rounding_error(out, claim.output_rounding, std::fabs(e.exact));
      excess.push_back(std::max(0.0, std::fabs(e.error) - orr) / ref[i].sum_abs);
    }
    if (!excess.empty() && b.roundings > 0) {
      auto mid = excess.begin() + static_cast<std::ptrdiff_t>(excess.size() / 2);
      std::nth_element(excess.begin(), mid, excess.end());
      const double median = *mid;
      const double u_eff = median / std::sqrt(static_cast<double>(b.roundings));
      if (u_eff > kNarrowAccumulatorFactor * b.u_acc) {
        v.signatures.push_back(
            {"narrow-accumulator",
             fmt::format("median error beyond the output rounding = {:.3g}·Σ|terms| on every element alike, {:.0f}× "
                         "the √n·u = {:.3g} that rounding errors of the claimed {} accumulator reach at n = {}: "
                         "partial sums are held in fewer bits than claimed{}",
                         median, u_eff / b.u_acc, std::sqrt(static_cast<double>(b.roundings)) * b.u_acc,
                         claim.acc.format->name, b.roundings,
                         v.counts[3] > 0 ? ""
                                         : " — or structured data (e.g. equal terms) whose rounding errors do not "
                                           "cancel: no element is outside the deterministic bound")});
      }
    }
  }
  // Where the elements outside the probabilistic bound are.
  std::vector<const ElementReport*> bad;
  for (const ElementReport& e : all)
    if (e.cls == ElementClass::within_deterministic || e.cls == ElementClass::outside_deterministic) bad.push_back(&e);
  if (bad.size() >= 2) {
    std::int64_t r0 = grid.rows, r1 = -1, c0 = grid.cols, c1 = -1;
    for (const ElementReport* e : bad) {
      r0 = std::min(r0, e->row), r1 = std::max(r1, e->row), c0 = std::min(c0, e->col), c1 = std::max(c1, e->col);
    }
    const std::int64_t area = (r1 - r0 + 1) * (c1 - c0 + 1);
    const std::int64_t total = grid.rows * grid.cols;
    if (static_cast<double>(area) <= kConfinedMaxAreaFraction * static_cast<double>(total)) {
      std::string where = r0 == r1 ? fmt::format("row {}", r0)
                          : c0 == c1 ? fmt::format("column {}", c0)
                                     : fmt::format("rows {}..{} × columns {}..{}", r0, r1, c0, c1);
      v.signatures.push_back({"confined", fmt::format("all {} elements outside the probabilistic bound lie in {} ({:.1f}% "
                                                      "of the tensor): an indexing or tiling defect",
                                                      bad.size(), where, 100.0 * static_cast<double>(area) /
                                                                              static_cast<double>(total))});
    }
  }
  if (bad.size() == 1 && all.size() >= kLoneOutlierMinElements) {
    const ElementReport& e = *bad[0];
    v.signatures.push_back({"lone-outlier", fmt::format("only element {} (row {}, column {}) is outside the probabilistic "
                                                        "bound, by {:.3g}× its deterministic bound: a race or a single "
                                                        "corrupted write",
                                                        e.index, e.row, e.col, e.ratio)});
  }
  if (v.nonfinite_mismatches > 0)
    v.signatures.push_back({"non-finite", fmt::format("{} elements are NaN/inf where the exact result is finite (or the "
                                                      "reverse)",
                                                      v.nonfinite_mismatches)});
}

}  // namespace

Verdict judge(const Claim& claim, const ReductionBound& b, std::span<const Bits> out,
              std::span<const ReferenceElement> ref, Grid grid, const JudgeOptions& opt) {
  const FormatSpec& f = *claim.output;
  Verdict v;
  v.elements = static_cast<std::int64_t>(out.size());
  std::vector<ElementReport> all(out.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    ElementReport& e = all[i];
    e.index = static_cast<std::int64_t>(i);
    e.row = grid.cols > 0 ? e.index / grid.cols : 0;
    e.col = grid.cols > 0 ? e.index % grid.cols : e.index;
    e.bits = out[i];
    e.value = to_double(f, out[i]);
    e.exact = ref[i].exact;
    if (ref[i].det_bound) {
      e.det_bound = *ref[i].det_bound;
      e.prob_bound = ref[i].prob_bound.value_or(*ref[i].det_bound);
    } else {
      const ElementBound eb = element_bound(b, claim, ref[i].exact, ref[i].sum_abs);
      e.det_bound = eb.deterministic;
      e.prob_bound = eb.probabilistic;
    }
    const bool bit_exact = out[i] == ref[i].rounded;
    e.cls = ElementClass::bit_exact;
    if (!bit_exact && (!std::isfinite(e.value) || !std::isfinite(e.exact))) {
      // Non-finite on either side: legal only as the same non-finite value, or as an overflow
      // the deterministic bound allows (the exact value within the bound of the range's end).
      const bool legal = same_nonfinite(f, out[i], ref[i].rounded) ||
                         (std::isinf(e.value) && std::isfinite(e.exact) &&
                          std::fabs(e.exact) + e.det_bound > max_finite(f) && (e.value > 0) == (e.exact > 0));
      e.cls = legal ? ElementClass::within_deterministic : ElementClass::outside_deterministic;
      if (!legal) ++v.nonfinite_mismatches;
      e.error = legal ? 0 : INFINITY;
      e.ratio = legal ? 0 : INFINITY;
    }
    if (bit_exact && !(std::isfinite(e.value) && std::isfinite(e.exact))) {
      e.error = 0;  // the same non-finite value as the oracle's
    } else if (std::isfinite(e.value) && std::isfinite(e.exact)) {
      e.error = e.value - e.exact;
      const double a = std::fabs(e.error);
      if (!bit_exact)
        e.cls = a <= e.prob_bound  ? ElementClass::within_probabilistic
                : a <= e.det_bound ? ElementClass::within_deterministic
                                   : ElementClass::outside_deterministic;
      e.ratio = e.det_bound > 0 ? a / e.det_bound : (a > 0 ? INFINITY : 0);
    }
    e.error_ulps = std::isfinite(e.error) ? e.error / ulp_at(f, e.exact) : e.error;
    if (std::isfinite(e.error_ulps)) v.max_error_ulps = std::max(v.max_error_ulps, std::fabs(e.error_ulps));
    ++v.counts[static_cast<std::size_t>(e.cls)];
  }
  v.outside_probabilistic = v.counts[2] + v.counts[3];
  const double p_exceed = 1 - b.confidence;
  v.chance_threshold = binomial_threshold(v.elements, p_exceed, opt.false_alarm);
  v.chance_probability = binomial_tail(v.elements, p_exceed, v.outside_probabilistic);
  if (v.counts[3] > 0) {
    v.kind = TensorKind::defect;
    v.reason = fmt::format("{} of {} elements lie outside the deterministic bound: no computation the claim allows "
                           "can produce them",
                           v.counts[3], v.elements);
  } else if (b.probabilistic_applies && v.outside_probabilistic >= v.chance_threshold && v.outside_probabilistic > 0) {
    const bool decisive = opt.probabilistic_defects.value_or(claim.acc.rounding == Rounding::stochastic);
    v.kind = decisive ? TensorKind::defect : TensorKind::suspicious;
    v.reason = fmt::format("{} of {} elements lie outside the probabilistic bound (confidence {} each); chance explains "
                           "at most {} at false-alarm probability {:g} (P = {:.3g}){}",
                           v.outside_probabilistic, v.elements, b.confidence, v.chance_threshold - 1, opt.false_alarm,
                           v.chance_probability,
                           decisive ? ""
                                    : "; all are inside the deterministic bound, and round-to-nearest errors on "
                                      "structured data (e.g. equal terms) can break the bound's model of independent "
                                      "errors: evidence, not proof (--probabilistic-defects makes it a defect)");
  } else if (b.probabilistic_applies && v.outside_probabilistic > 0 && v.chance_probability < 1e-3) {
    v.kind = TensorKind::suspicious;
    v.reason = fmt::format("{} elements outside the probabilistic bound (P = {:.3g} by chance), all inside the "
                           "deterministic bound",
                           v.outside_probabilistic, v.chance_probability);
  } else {
    v.kind = TensorKind::consistent;
    v.reason = fmt::format("every element is within the bounds of the claim ({} bit-exact of {})", v.counts[0],
                           v.elements);
  }
  add_signatures(v, claim, b, all, ref, grid);
  v.field = error_field(all, grid, opt.false_alarm);
  std::vector<ElementReport> sorted = all;
  const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(opt.worst), sorted.size());
  std::partial_sort(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k), sorted.end(),
                    [](const ElementReport& x, const ElementReport& y) { return x.ratio > y.ratio; });
  v.worst.assign(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k));
  return v;
}

}  // namespace numfid
