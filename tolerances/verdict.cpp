// Classification of elements, the tensor verdict and the error-field signatures.
#include "tolerances/verdict.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <limits>
#include <stdexcept>
#include <tuple>

#include "formats/error.h"
#include "formats/ulp.h"
#include "tolerances/judged_detail.h"
#include "tolerances/parallel_detail.h"

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

bool is_signature_name(std::string_view name) {
  if (name.starts_with("reference-") && name != "reference-defect") name.remove_prefix(std::string_view("reference-").size());
  else if (name.starts_with("target-") && name != "target-defect") name.remove_prefix(std::string_view("target-").size());
  return std::find(std::begin(signature_names), std::end(signature_names), name) != std::end(signature_names);
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
  if (x.cls == FpClass::nan || y.cls == FpClass::nan) return equivalent_bits(f, a, b, NanPolicy::any_nan);
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

/// A stacked output: its leading axes (`lead`), the matrices they hold, the elements and rows of
/// each (matrices = 0: not a stack).
struct Stack {
  std::span<const std::int64_t> lead;
  std::int64_t matrices = 0, elements = 0, rows = 0;

  /// Matrix m's position over the leading axes, "[1, 2]".
  std::string position(std::int64_t m) const { return fmt::format("[{}]", fmt::join(position_in(m, lead), ", ")); }
};

/// The stack `shape` describes for an output of n elements (none where it has at most two axes
/// or is not the output's).
Stack stack_of(std::span<const std::int64_t> shape, std::int64_t n) {
  if (shape.size() <= 2 || !is_shape_of(shape, n)) return {};
  const std::int64_t per = shape[shape.size() - 2] * shape.back();
  if (per <= 0) return {};
  return {shape.first(shape.size() - 2), n / per, per, shape[shape.size() - 2]};
}

/// For each matrix of stack `st`, how many of its elements `which` selects (by each element's
/// flat index in the output as given: rows along another axis are judged on the moved grid).
/// One pass on the calling thread, as the signatures' sums (docs/performance.md).
template <class Which>
std::vector<std::int64_t> per_matrix(const detail::JudgedElements& all, const Stack& st, Which which) {
  std::vector<std::int64_t> count(static_cast<std::size_t>(st.matrices), 0);
  for (std::size_t i = 0; i < all.size(); ++i)
    if (which(i)) ++count[static_cast<std::size_t>(all.index(i) / st.elements)];
  return count;
}

template <class Reference>
void add_signatures(Verdict& v, const Claim& claim, const ReductionBound& b, const detail::JudgedElements& all,
                    const Reference& ref, Grid grid, std::span<const std::int64_t> shape, const Stack& st,
                    bool centre_is_reference) {
  const FormatSpec& out = *claim.output;
  // An addend at the end or after the output cast rounds once more before the output: its
  // rounding error (at the element's own values) is no error of the output's rounding or of the
  // accumulator, so both signatures below leave it out.
  const bool epilogue = claim.addend_at != AddendAt::start;
  const auto first_rounding = [&](std::size_t i) {
    const double exact = ref.exact(i), p = exact - ref.addend(i);
    if (claim.addend_at == AddendAt::output) return output_rounding_error(out, claim.output_rounding, std::fabs(p));
    const EpilogueAccumulator acc = epilogue_accumulator(claim);
    return output_rounding_error(*acc.format, acc.rounding, std::fabs(exact));
  };
  // Bias of the signed error, in output ulps, sign-normalised (negative = toward zero).
  // Round-to-nearest outputs average about 0; a truncating cast averages about -0.5. Under a
  // directed output rounding (rtz, rup, rdn), which is biased by claim, the difference from the
  // exact result rounded that way (ref.rounded: bit_exact_rounding) instead: 0 for every
  // correctly rounded element, whatever the data, so a correct output averages 0 there too.
  const Rounding out_rounding = claim.output_rounding;
  const bool directed = is_directed(out_rounding);
  // Sign-normalised (toward / away from zero), but for rup and rdn, whose direction is up or
  // down whatever the sign: a lean against it would cancel over results of both signs.
  const bool raw = out_rounding == Rounding::rup || out_rounding == Rounding::rdn;
  {
    // One pass on the calling thread (on every core it measured slower here: docs/performance.md,
    // "The judgement's serial passes").
    double sum = 0, sum2 = 0;
    std::int64_t n = 0;
    for (std::size_t i = 0; i < all.size(); ++i) {
      const double exact = all.exact(i);
      const double error_ulps =
          directed ? (all.value(i) - to_double(out, ref.rounded(i))) / ulp_at(out, std::fabs(exact)) : all.error_ulps(i);
      if (!std::isfinite(error_ulps) || !std::isfinite(all.error_ulps(i)) || exact == 0) continue;
      // The epilogue's first rounding reaching half an output ulp at the result: the output's
      // rounding direction is not what the error shows there.
      if (epilogue && first_rounding(i) >= 0.5 * ulp_at(out, std::fabs(exact))) continue;
      const double s = raw ? error_ulps : std::copysign(1.0, exact) * error_ulps;
      sum += s;
      sum2 += s * s;
      ++n;
    }
    if (n >= kBiasMinElements) {
      const double mean = sum / static_cast<double>(n);
      const double var = std::max(sum2 / static_cast<double>(n) - mean * mean, 1e-300);
      const double t = mean / std::sqrt(var / static_cast<double>(n));
      if (std::fabs(t) > kBiasMinT && std::fabs(mean) > kBiasMinMeanUlps)
        v.signatures.push_back(
            {"bias", directed ? fmt::format("mean signed difference from the {}-rounded exact results {:+.3f} output ulps "
                                            "({}), t = {:.1f} over {} elements; an output rounded as claimed "
                                            "averages 0",
                                            rounding_name(out_rounding), mean,
                                            out_rounding == Rounding::rtz ? (mean < 0 ? "toward zero" : "away from zero")
                                                                          : (mean < 0 ? "down" : "up"),
                                            t, n)
                              : fmt::format("mean signed error {:+.3f} output ulps ({} zero), t = {:.1f} over {} "
                                            "elements; {} rounding averages ~0, truncation ~-0.5",
                                            mean, mean < 0 ? "toward" : "away from", t, n,
                                            rounding_name(out_rounding))});
    }
  }
  // Growth: the error left after the output rounding, per unit of Σ|terms|, against the
  // √n·u growth of the claimed accumulator. The median, not the mean, so that a few wild
  // elements (an indexing defect) do not read as a narrow accumulator, which shows everywhere.
  {
    // On every core, into one array (NaN where an element has no excess), compacted afterwards:
    // the median is a value of the multiset, whatever order it is collected in.
    LargeArray<double> excess(all.size());
    detail::parallel_for(static_cast<std::int64_t>(all.size()), 1 << 16, [&](std::int64_t i0, std::int64_t i1) {
      for (auto i = static_cast<std::size_t>(i0); i < static_cast<std::size_t>(i1); ++i) {
        const double error = all.error(i);
        if (!std::isfinite(error) || ref.sum_abs(i) <= 0) {
          excess[i] = NAN;
          continue;
        }
        double orr = output_rounding_error(out, claim.output_rounding, std::fabs(ref.exact(i)));
        double terms = ref.sum_abs(i);
        if (epilogue) {  // the epilogue's rounding too, per Σ|a·b| of the products alone
          orr += first_rounding(i);
          terms = std::max(terms - std::fabs(ref.addend(i)), 0.0);
          if (terms <= 0) {
            excess[i] = NAN;
            continue;
          }
        }
        excess[i] = std::max(0.0, std::fabs(error) - orr) / terms;
      }
    });
    double* const kept = std::remove_if(excess.begin(), excess.end(), [](double x) { return std::isnan(x); });
    if (kept != excess.begin() && b.roundings > 0) {
      double* const mid = excess.begin() + (kept - excess.begin()) / 2;
      std::nth_element(excess.begin(), mid, kept);
      const double median = *mid;
      const double root_n = std::sqrt(static_cast<double>(b.roundings));
      // An input cast (--cast) errs by (δa + δb)·t per term, |δ| <= u' independently: for terms of
      // similar size the median |error| is about 0.674·u'·√(2/3)·√n·mean|t| = 0.55·u'/√n of Σ|terms|
      // (a normal sum of uniform errors; u' = input_cast/2 to first order) — the claim's too: a
      // legal cast output read as a narrow accumulator when only √n·u was allowed. 8× that leaves
      // room for spread terms (measured 1.2× it on N(0, 1) operands; a bf16 accumulator under a
      // bf16 cast 6.4× at 256 terms, 13× at 1024: CheckMatmul.TheInputCastsErrorIsNoNarrowAccumulator).
      const double cast = 0.55 * (b.input_cast / 2) / root_n;
      const double legal = root_n * b.u_acc + cast;
      if (median > kNarrowAccumulatorFactor * legal) {
        v.signatures.push_back(
            {"narrow-accumulator",
             fmt::format("median error beyond the output rounding = {:.3g}·Σ|terms| on every element alike, {:.0f}× "
                         "the √n·u = {:.3g} that rounding errors of the claimed {} accumulator reach at n = {}{}: "
                         "partial sums are held in fewer bits than claimed{}",
                         median, median / legal, root_n * b.u_acc, claim.acc.format->name, b.roundings,
                         cast > 0 ? fmt::format(" plus the input cast's 0.55·u'/√n = {:.3g}", cast) : "",
                         v.counts[3] > 0 ? ""
                                         : " — or structured data (e.g. equal terms) whose rounding errors do not "
                                           "cancel: no element is outside the deterministic bound")});
      }
    }
  }
  // Where the elements outside the probabilistic bound are: their count, bounding box and first
  // one, per chunk on every core, merged in chunk order (counts, minima and maxima: the same for
  // any thread count).
  // In a stack (an output of more than two axes) the same box is also taken in each matrix's own
  // rows and columns (lr, lc), with the first and last matrix touched (m): a defect at the same
  // place of every matrix (a tail row, an edge tile) is confined there though it spans the tensor.
  const std::int64_t st_cols = st.matrices > 1 ? st.elements / st.rows : 1;
  struct Box {
    std::int64_t count = 0, r0 = 0, r1 = -1, c0 = 0, c1 = -1;
    std::int64_t lr0 = 0, lr1 = -1, lc0 = 0, lc1 = -1, m0 = 0, m1 = -1;
    std::size_t first = 0;  // the first one's index (where count > 0)
  };
  const Box empty{0, grid.rows, -1, grid.cols, -1, st.rows, -1, st_cols, -1, st.matrices, -1, 0};
  constexpr std::int64_t kBoxGrain = 1 << 16;
  const auto n_all = static_cast<std::int64_t>(all.size());
  std::vector<Box> boxes(static_cast<std::size_t>((n_all + kBoxGrain - 1) / kBoxGrain));
  detail::parallel_for(n_all, kBoxGrain, [&](std::int64_t i0, std::int64_t i1) {
    Box x = empty;
    for (auto i = static_cast<std::size_t>(i0); i < static_cast<std::size_t>(i1); ++i) {
      const ElementClass cls = all.cls(i);
      if (cls != ElementClass::within_deterministic && cls != ElementClass::outside_deterministic) continue;
      if (x.count++ == 0) x.first = i;
      const std::int64_t row = all.row(i), col = all.col(i);
      x.r0 = std::min(x.r0, row), x.r1 = std::max(x.r1, row), x.c0 = std::min(x.c0, col), x.c1 = std::max(x.c1, col);
      if (st.matrices > 1) {
        const std::int64_t idx = all.index(i);  // in the output as given
        const std::int64_t m = idx / st.elements, lr = idx % st.elements / st_cols, lc = idx % st_cols;
        x.lr0 = std::min(x.lr0, lr), x.lr1 = std::max(x.lr1, lr), x.lc0 = std::min(x.lc0, lc);
        x.lc1 = std::max(x.lc1, lc), x.m0 = std::min(x.m0, m), x.m1 = std::max(x.m1, m);
      }
    }
    boxes[static_cast<std::size_t>(i0 / kBoxGrain)] = x;
  });
  Box bad = empty;
  for (const Box& x : boxes) {
    if (x.count == 0) continue;
    if (bad.count == 0) bad.first = x.first;
    bad.count += x.count;
    bad.r0 = std::min(bad.r0, x.r0), bad.r1 = std::max(bad.r1, x.r1), bad.c0 = std::min(bad.c0, x.c0),
    bad.c1 = std::max(bad.c1, x.c1);
    bad.lr0 = std::min(bad.lr0, x.lr0), bad.lr1 = std::max(bad.lr1, x.lr1), bad.lc0 = std::min(bad.lc0, x.lc0),
    bad.lc1 = std::max(bad.lc1, x.lc1), bad.m0 = std::min(bad.m0, x.m0), bad.m1 = std::max(bad.m1, x.m1);
  }
  const auto box_text = [](std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
    return r0 == r1 ? fmt::format("row {}", r0)
           : c0 == c1 ? fmt::format("column {}", c0)
                      : fmt::format("rows {}..{} × columns {}..{}", r0, r1, c0, c1);
  };
  const auto percent = [](std::int64_t part, std::int64_t whole) {
    return 100.0 * static_cast<double>(part) / static_cast<double>(whole);
  };
  if (bad.count >= 2) {
    const std::int64_t total = grid.rows * grid.cols;
    const std::int64_t area = (bad.r1 - bad.r0 + 1) * (bad.c1 - bad.c0 + 1);
    const std::int64_t local = (bad.lr1 - bad.lr0 + 1) * (bad.lc1 - bad.lc0 + 1);
    const std::string what = fmt::format("all {} elements outside the probabilistic bound lie in ", bad.count);
    if (st.matrices > 1 && bad.m0 == bad.m1) {
      // One matrix of several: located in it.
      v.signatures.push_back(
          {"confined", fmt::format("{}{} of matrix {} of the stack ({:.1f}% of the tensor): an indexing or tiling "
                                   "defect",
                                   what, box_text(bad.lr0, bad.lr1, bad.lc0, bad.lc1), st.position(bad.m0),
                                   percent(local, total))});
    } else if (st.matrices > 1 &&
               static_cast<double>(local) <= kConfinedMaxAreaFraction * static_cast<double>(st.elements)) {
      // The same place in each matrix they touch (counted here, in a stack only).
      const std::vector<std::int64_t> touched = per_matrix(all, st, [&](std::size_t i) {
        const ElementClass cls = all.cls(i);
        return cls == ElementClass::within_deterministic || cls == ElementClass::outside_deterministic;
      });
      v.signatures.push_back(
          {"confined", fmt::format("{}{} of each matrix they touch ({} of the stack's {}, from {} to {}; {:.1f}% of "
                                   "each matrix): the same place in each, as a tile, an edge or a tail handled "
                                   "wrongly leaves it",
                                   what, box_text(bad.lr0, bad.lr1, bad.lc0, bad.lc1),
                                   std::count_if(touched.begin(), touched.end(), [](std::int64_t c) { return c > 0; }),
                                   st.matrices, st.position(bad.m0),
                                   st.position(bad.m1), percent(local, st.elements))});
    } else if (static_cast<double>(area) <= kConfinedMaxAreaFraction * static_cast<double>(total)) {
      // A stack's box over several matrices: its rows are the leading axes flattened (said so).
      v.signatures.push_back(
          {"confined", fmt::format("{}{} ({:.1f}% of the tensor{}): an indexing or tiling defect", what,
                                   box_text(bad.r0, bad.r1, bad.c0, bad.c1), percent(area, total),
                                   st.matrices > 1 ? fmt::format("; rows over the leading axes flattened, matrices {} "
                                                                 "to {} of the stack",
                                                                 st.position(bad.m0), st.position(bad.m1))
                                                   : "")});
    }
  }
  // Zeros where the exact result is subnormal in the output format, and nothing else outside the
  // probabilistic bound: a kernel (or its libm) flushing subnormal results or inputs to zero, which
  // the claim does not allow (torch 1.13's bf16 GELU returns 0 for a subnormal input: golden
  // check_gelu_bf16_subnormal_flush). Named as such, not as a race (lone-outlier) or a tile (confined).
  bool flushed = false;
  if (bad.count > 0) {
    const double least_normal = min_normal(out);
    std::int64_t flushes = 0;
    for (std::size_t i = 0; i < all.size() && flushes >= 0; ++i) {
      const ElementClass cls = all.cls(i);
      if (cls != ElementClass::within_deterministic && cls != ElementClass::outside_deterministic) continue;
      const double exact = all.exact(i);
      flushes = all.value(i) == 0 && exact != 0 && std::fabs(exact) < least_normal ? flushes + 1 : -1;
    }
    if (flushes > 0) {
      flushed = true;
      std::erase_if(v.signatures, [](const Signature& g) { return g.name == "confined"; });  // a flush, not a tile
      const ElementReport e = all.report(bad.first);
      v.signatures.insert(v.signatures.begin(),
                          {"subnormal-flush",
                           fmt::format("{} element{} outside the probabilistic bound {} 0 where {} is "
                                       "subnormal in {} (below {:g}; element {}: {} {:.6g}): subnormal results or "
                                       "inputs flushed to zero (FTZ/DAZ), which the claim does not allow",
                                       flushes, flushes == 1 ? "" : "s", flushes == 1 ? "is" : "are",
                                       centre_is_reference ? "R (the reference)" : "the exact result", out.name,
                                       least_normal, e.index, centre_is_reference ? "R" : "exact", e.exact)});
    }
  }
  if (bad.count == 1 && all.size() >= kLoneOutlierMinElements && !flushed) {
    const ElementReport e = all.report(bad.first);
    // Where it is in the output as given (a stack's [b, h, i, j]; C's own row and column where
    // rows were taken along another axis), else the grid's row and column.
    const std::vector<std::int64_t> at = position_in(e.index, shape);
    const std::string where = at.size() > 2    ? fmt::format("at [{}]", fmt::join(at, ", "))
                              : at.size() == 2 ? fmt::format("row {}, column {}", at[0], at[1])
                                               : fmt::format("row {}, column {}", e.row, e.col);
    v.signatures.push_back({"lone-outlier", fmt::format("only element {} ({}) is outside the probabilistic bound, by "
                                                        "{:.3g}× its deterministic bound: a race or a single corrupted "
                                                        "write",
                                                        e.index, where, e.ratio)});
  }
  if (v.nonfinite_mismatches > 0)
    v.signatures.push_back({"non-finite", fmt::format("{} elements are NaN/inf where the exact result is finite (or the "
                                                      "reverse)",
                                                      v.nonfinite_mismatches)});
}

/// Two-sided normal quantile for false-alarm probability `alpha`: z with erfc(z/√2) = alpha
/// (bisection; erfc is monotone).
double normal_quantile_two_sided(double alpha) {
  double lo = 0, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (std::erfc(mid / std::sqrt(2.0)) > alpha ? lo : hi) = mid;
  }
  return hi;
}

/// The bias rule (docs/verdict.md §4.2): a probable defect when the outputs lean to one side of
/// the correctly rounded results by more than legal rounding errors can, at the targeted
/// false-alarm probability. Per element, D = sign(exact)·(output − RN(exact)) in output ulps:
/// 0 for a correctly rounded element, and for a legal one non-zero only where its computed
/// value and the exact one fall on two sides of a rounding boundary. If the reduction's own
/// error r (the probabilistic bound less the output rounding) is below half an ulp, |D| <= 1
/// and, with the exact value's place in its ulp not arranged by the data, P(D != 0) <=
/// 2r/ulp: legal outputs lean by at most m = mean(2r/ulp) even if every crossing goes one way.
/// A truncating cast gives D = -1 wherever the exact value's fraction exceeds one half (mean
/// about -0.5). Elements are grouped by exact value (repeated values are one observation);
/// t = (|mean D| - m) / (sd/√n) over n >= 32 groups, against the two-sided normal quantile
/// of the false-alarm probability (6.11 at 1e-9).
template <class Reference>
void bias_rule(Verdict& v, const Claim& claim, const detail::JudgedElements& all, const Reference& ref, double alpha) {
  const Rounding orr = claim.output_rounding;
  if (orr != Rounding::rne && orr != Rounding::rna) return;
  const FormatSpec& f = *claim.output;
  using Obs = detail::LeanObservation;
  using Lean = detail::LeanSums;
  // Collected, sorted and summed on every core, ordered by every field: the same sums for any
  // thread count.
  const Lean lean = detail::parallel_collect_ordered<Lean, Obs>(
      static_cast<std::int64_t>(all.size()), 1 << 16, [&](std::int64_t i0, std::int64_t i1, std::vector<Obs>& x) {
        for (auto i = static_cast<std::size_t>(i0); i < static_cast<std::size_t>(i1); ++i) {
          struct {
            double value, exact, prob_bound;
          } const e{all.value(i), ref.exact(i), all.record(i).prob_bound};
          if (!std::isfinite(e.value) || !std::isfinite(e.exact) || e.exact == 0) continue;
          const Bits rounded = ref.rounded(i);
          const double rn = to_double(f, rounded);
          if (!std::isfinite(rn)) continue;
          const double ulp = ulp_at(f, e.exact);
          const double r = std::max(0.0, e.prob_bound - 0.5 * ulp);
          if (!(r < 0.5 * ulp)) continue;  // the element's own error may cross a boundary: no last-bit evidence
          // A legal output differs from RN(exact) only where the reduction's own error (at most r)
          // can carry the computed value across a rounding boundary of the output next to the
          // exact value: that element may lean by one ulp, any other by none. Counted per
          // element on the data's own exact values — not as the chance 2r/ulp of a value placed
          // at random in its ulp: structured data put exact values next to a midpoint (an fp32
          // sum that lands on a bf16 tie and breaks it to even; SelfConsistency found one).
          const auto midpoint = [&](std::optional<Bits> next, double fallback) {
            const double neighbour = next ? to_double(f, *next) : NAN;
            return std::isfinite(neighbour) ? (rn + neighbour) / 2 : fallback;
          };
          const double below = midpoint(next_down(f, rounded), rn - 0.5 * ulp);
          const double above = midpoint(next_up(f, rounded), rn + 0.5 * ulp);
          const double distance = std::min(std::fabs(e.exact - below), std::fabs(above - e.exact));
          const bool may_cross = distance <= r + std::fabs(e.exact) * 0x1p-50;  // the exact value as a double
          x.push_back({e.exact, std::copysign(1.0, e.exact) * (e.value - rn) / ulp, may_cross ? 1.0 : 0.0});
        }
      },
      [](const Obs& x, const Obs& y) { return std::tie(x.exact, x.d, x.m) < std::tie(y.exact, y.d, y.m); },
      [](const Obs& x) { return x.exact; },
      [](Lean& into, const Lean& next) { into.merge(next); });
  const std::int64_t n = lean.n;
  if (n < kBiasMinElements) return;
  const double mean = lean.sum_d / static_cast<double>(n);
  const double legal = lean.legal / static_cast<double>(n);
  const double var = lean.m2 / static_cast<double>(n - 1);
  const double excess = std::fabs(mean) - legal;
  if (excess <= 0) return;
  const double se = std::sqrt(var / static_cast<double>(n));
  const double t = se > 0 ? excess / se : INFINITY;
  const double z = normal_quantile_two_sided(alpha);
  if (!(t > z)) return;
  v.kind = TensorKind::defect;
  v.probable = true;
  // Positive however far out t lies: erfc underflows to 0 from t ≈ 38, and a probability of 0
  // reads as a certainty (binomial_tail and the stochastic rule floor theirs alike).
  v.false_alarm_probability = std::max(std::erfc(t / std::sqrt(2.0)), std::numeric_limits<double>::min());
  v.reason = fmt::format("the outputs lean {} the correctly rounded results by {:+.3f} output ulps on average over {} "
                         "distinct exact values, beyond the {:.3f} that rounding errors the claim allows can cause: "
                         "t = {:.1f} > {:.2f} (false-alarm probability {:g}, normal approximation); a {} output should "
                         "not lean — a truncating or directed cast does",
                         mean < 0 ? "toward zero from" : "away from zero from", mean, n, legal, t, z, alpha,
                         rounding_name(orr));
}

/// The lean rule for stochastically rounded outputs (docs/verdict.md §4.2). Given the value y_i
/// the deterministic arithmetic delivers to the output conversion, stochastic rounding returns
/// RU(y_i) with probability (y_i − RD(y_i))/(RU(y_i) − RD(y_i)), else RD(y_i), from random bits
/// independent of everything else: Z_i = s_i·(o_i − y_i)/w_i has mean 0 given y_i and lies in an
/// interval of length k_i = (the output spacing at |x_i| + d_i)/w_i, independently over the
/// elements (s_i = sign(x_i), w_i = the output spacing at the exact value x_i, d_i = the
/// deterministic bound of |y_i − x_i|: the claim's reduction and cast, no output rounding). So
/// X_i = s_i·(o_i − x_i)/w_i = Z_i + s_i·(y_i − x_i)/w_i, and with δ_i = d_i/w_i Hoeffding's
/// inequality gives P(|Σ X_i| − Σ δ_i >= t) <= 2·exp(−2t²/Σ k_i²). Elements with δ_i >= ½ are
/// left out before the outputs are read (their legal shift can hide a half-ulp lean: a
/// truncation), as are those that may reach the largest finite value or flush to zero, and
/// those whose bound the caller gave (a row op's derivation). Deterministic accumulation and
/// cast only: a stochastic one makes y_i random too.
template <class Reference>
void stochastic_lean_rule(Verdict& v, const Claim& claim, const ReductionBound& b, const detail::JudgedElements& all,
                          const Reference& ref, double alpha) {
  if (claim.output_rounding != Rounding::stochastic || claim.ulps) return;
  const bool stochastic_inside = (!claim.block_fma && claim.acc.rounding == Rounding::stochastic) ||
                                 (claim.compute_input && claim.input_rounding == Rounding::stochastic);
  if (stochastic_inside) {
    v.reason += "; lean rule for stochastic outputs (§4.2) not applied: the accumulation or the input cast rounds "
                "stochastically too, so the value the output rounds is random itself";
    return;
  }
  const FormatSpec& f = *claim.output;
  struct Part {
    double x = 0, shift = 0, range2 = 0;
    std::int64_t n = 0, given = 0, wide = 0;  // admitted; left out: bound given by the caller, δ >= ½
  };
  constexpr std::int64_t kGrain = 1 << 16;
  const auto n_all = static_cast<std::int64_t>(all.size());
  std::vector<Part> parts(static_cast<std::size_t>((n_all + kGrain - 1) / kGrain));
  const double top = max_finite(f), least_normal = min_normal(f);
  // Per chunk of fixed bounds, added up in chunk order: the same sums for any thread count.
  detail::parallel_for(n_all, kGrain, [&](std::int64_t i0, std::int64_t i1) {
    Part& part = parts[static_cast<std::size_t>(i0 / kGrain)];
    for (auto i = static_cast<std::size_t>(i0); i < static_cast<std::size_t>(i1); ++i) {
      const double value = all.value(i), exact = ref.exact(i);
      if (!std::isfinite(value) || !std::isfinite(exact) || exact == 0) continue;
      if (ref.det_bound(i)) {
        ++part.given;
        continue;
      }
      const ElementBound eb = element_bound(b, claim, exact, ref.sum_abs(i), ref.finite_opposite(i), ref.addend(i));
      const double d = eb.deterministic - eb.output_rounding;  // reduction, cast and |x|·2^-52
      const double mag = std::fabs(exact);
      if (!std::isfinite(d) || eb.may_overflow || mag + d >= top || (claim.output_ftz && mag - d < least_normal)) continue;
      const double w = ulp_at(f, mag);
      const double k = ulp_at(f, mag + d) / w;
      // A stochastic rounding of R random bits leans toward zero by less than 2^-R of the spacing
      // at y_i (k_i output ulps at most): a shift like the deterministic one.
      const double delta = d / w + (claim.output_sr_bits > 0 ? k * std::ldexp(1.0, -claim.output_sr_bits) : 0.0);
      if (!(delta < 0.5)) {
        ++part.wide;
        continue;
      }
      part.x += std::copysign(1.0, exact) * (value - exact) / w;
      part.shift += delta;
      part.range2 += k * k;
      ++part.n;
    }
  });
  Part sum;
  for (const Part& p : parts)
    sum.x += p.x, sum.shift += p.shift, sum.range2 += p.range2, sum.n += p.n, sum.given += p.given, sum.wide += p.wide;
  if (sum.n == 0) {
    // Said, not skipped silently: which elements could not carry evidence, and why.
    if (sum.given + sum.wide > 0)
      v.reason += fmt::format("; lean rule for stochastic outputs (§4.2) not applied: no element admitted ({} whose "
                              "deterministic shift of the rounded value is half an ulp or more, {} whose bound is the "
                              "op's own derivation)",
                              sum.wide, sum.given);
    return;
  }
  const double excess = std::fabs(sum.x) - sum.shift;
  if (!(excess > 0)) return;
  const double log_p = std::log(2.0) - 2 * excess * excess / sum.range2;
  if (!(log_p <= std::log(alpha))) return;
  v.kind = TensorKind::defect;
  v.probable = true;
  // Below the least normal double the bound is still a bound: the least normal double.
  v.false_alarm_probability = std::max(std::exp(log_p), std::numeric_limits<double>::min());
  const double mean = sum.x / static_cast<double>(sum.n);
  v.reason = fmt::format(
      "the stochastically rounded outputs lean {} the exact results by {:+.3f} output ulps on average over {} elements; "
      "stochastic rounding is unbiased given the value it rounds{}, and the claim's deterministic arithmetic moves that "
      "value by at most {:.3g} ulps on average: Hoeffding's tail 2·exp(−2(|Σ| − Σδ)²/Σk²) = {} <= {:g} — a truncating "
      "or otherwise biased rounding does this",
      mean < 0 ? "toward zero from" : "away from zero from", mean, sum.n,
      claim.output_sr_bits > 0 ? fmt::format(" (with {} random bits, up to 2^-{} of the spacing toward zero, counted in "
                                             "δ)",
                                             claim.output_sr_bits, claim.output_sr_bits)
                               : std::string(),
      sum.shift / static_cast<double>(sum.n),
      log_p < -700 ? fmt::format("10^{:.0f}", log_p / std::log(10.0)) : fmt::format("{:.3g}", std::exp(log_p)), alpha);
}

/// Says in the verdict when the output could not show much: every element zero with only
/// zero terms, or a claim that leaves nothing to round but the output.
/// `trivial`: elements whose exact result and Σ|terms| are 0; `zeros`: elements whose output and
/// exact result are 0; `unbounded`: elements with a finite exact result but no finite bound
/// (counted with the classes, in judge).
void degenerate_note(Verdict& v, const ReductionBound& b, const Claim& claim, std::int64_t trivial, std::int64_t zeros,
                     std::int64_t unbounded) {
  if (unbounded > 0 && v.kind != TensorKind::defect)
    v.reason += fmt::format("; {} of {} elements have no finite bound under this claim (it is vacuous there: e.g. "
                            "a running mean's error analysis that fails at this row length in the compute format, a "
                            "partial sum that may reach the accumulator's largest finite value, an operand beyond a "
                            "cast's range): there the check tests nothing",
                            unbounded, v.elements);
  if (zeros == v.elements)
    v.reason += fmt::format("; degenerate: all {} outputs and exact results are 0, which tests little", v.elements);
  else if (2 * trivial > v.elements && v.kind != TensorKind::defect)  // a defect among them was tested
    v.reason += fmt::format("; degenerate: {} of {} elements are 0 by construction (every term zero) and test nothing",
                            trivial, v.elements);
  if (!claim.ulps && b.roundings == 0 && b.terms > 0 && v.kind != TensorKind::defect)
    v.reason += "; the claim leaves no rounding to the reduction (n = 0): only the output rounding was tested";
}

/// The positions of the `count` elements of largest |error| / bound, largest first, every element
/// outside the deterministic bound before the others (an outside element's ratio exceeds 1 and
/// every other's does not, save where its bound is not a number: such an element, classed
/// outside with error 0, was left off the list): positions sorted (4 bytes each where they
/// fit), not records; partial_sort moves positions of either width exactly as it would move the
/// records, since it makes the same comparisons, so ties come out in the same order as they
/// always have.
template <class Position>
std::vector<std::size_t> worst_positions(const detail::JudgedElements& all, int count) {
  detail::ParallelArray<Position> sorted(static_cast<std::int64_t>(all.size()));
  detail::parallel_for(static_cast<std::int64_t>(sorted.size()), 65536, [&](std::int64_t i0, std::int64_t i1) {
    for (auto i = static_cast<std::size_t>(i0); i < static_cast<std::size_t>(i1); ++i) sorted[i] = static_cast<Position>(i);
  });
  const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(count), sorted.size());
  std::partial_sort(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k), sorted.end(),
                    [&all](Position x, Position y) {
                      const bool ox = all.cls(x) == ElementClass::outside_deterministic;
                      const bool oy = all.cls(y) == ElementClass::outside_deterministic;
                      return ox != oy ? ox : all.ratio(x) > all.ratio(y);
                    });
  return {sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k)};
}

/// The one direction a directed output rounding (rtz, rup, rdn) moves the output in, as seen
/// from the exact value: +1 (an error below -c is illegal), -1 (above +c is illegal), 0 (both
/// ways up to the symmetric bound `det_bound`, c + the output's rounding), where c bounds the
/// computed value ŝ's distance from the exact value (everything before the output's rounding:
/// ElementBound::before_output, or ReferenceElement::before_output where the bounds are given).
/// rup: RU(ŝ) >= ŝ >= exact - c, so +1; rdn: -1. rtz: for exact > 0, RZ(ŝ) <= ŝ <= exact + c
/// where ŝ >= 0, and RZ(ŝ) <= 0 < exact where ŝ < 0: -1 whatever ŝ's sign; +1 for exact < 0.
/// 0 wherever that premise may fail: round to nearest or stochastic; an --ulps claim;
/// an addend at the end (the accumulator's rounding between), or after the output cast under rtz
/// or --ftz (directed_one_sided; under rup/rdn both roundings go the output's way, and c is the
/// chain's bound before them); a non-finite or vacuous bound; a result that may reach the
/// output's largest finite value (an overflow or saturation to ±max moves against the
/// direction); rup/rdn where a
/// flushing output (--ftz) may turn a result below the least normal value into 0, against the
/// direction (rtz's flush is toward zero, its own direction).
int directed_side(const Claim& claim, const FormatSpec& f, double exact, double c, double det_bound, bool may_overflow) {
  const Rounding r = claim.output_rounding;
  if (!is_directed(r) || claim.ulps ||
      !directed_one_sided(r, claim.addend_at, claim.addend_at != AddendAt::start, claim.output_ftz) ||
      !std::isfinite(exact) || !std::isfinite(det_bound) || may_overflow || !(c <= det_bound))
    return 0;
  if (!(std::fabs(exact) + c < max_finite(f))) return 0;
  if (r == Rounding::rtz) return exact > 0 ? -1 : exact < 0 ? 1 : 0;
  if (claim.output_ftz && std::fabs(exact) - c < min_normal(f)) return 0;
  return r == Rounding::rup ? 1 : -1;
}

/// judge() over the oracle's side read through `ref` (detail::ReferenceElements or
/// detail::ExactReference, tolerances/judged_detail.h).
template <class Reference>
Verdict judge_with(const Claim& claim, const ReductionBound& b, std::span<const Bits> out, const Reference& ref,
                   Grid grid, const JudgeOptions& opt) {
  const FormatSpec& f = *claim.output;
  if (out.empty())
    throw InputError("nothing to check: the output has no elements (an empty operand or output); a verdict would "
                     "claim a check that did not happen");
  Verdict v;
  v.elements = static_cast<std::int64_t>(out.size());
  // Each element's record (48 bytes; its ElementReport is made only for the few listed), first
  // touched on every core (tolerances/judged_detail.h).
  detail::JudgedElements all(f, out, ref, grid);
  // Each element is classified on its own, on every core (tolerances/parallel_detail.h), and
  // counted per chunk of fixed bounds, the chunks' counts added up afterwards: integers and a
  // maximum, the same for any thread count.
  struct Tally {
    std::array<std::int64_t, 4> counts{};
    // mismatches: NaN/inf where the exact result is finite, or the reverse; sticky: partial sums
    // may overflow under a sticky overflow (ReductionBound::overflow_sticky): non-finite results
    // are legal there, a finite one meets the finite bound.
    std::int64_t mismatches = 0, trivial = 0, zeros = 0, unbounded = 0, sticky = 0;
    // Outside the bound at ±max where the exact result overflows the output (its correctly
    // rounded value non-finite) under a claim without --saturate: a saturating cast's output.
    std::int64_t unclaimed_saturation = 0;
    double max_ulps = 0;
  };
  constexpr std::int64_t kGrain = 4096;
  const auto n_all = static_cast<std::int64_t>(out.size());
  std::vector<Tally> tallies(static_cast<std::size_t>((n_all + kGrain - 1) / kGrain));
  // A saturating output cast (Claim::output_saturate) turns what would be ±inf — or NaN in a
  // format without inf — into the largest finite value of its sign: the correctly rounded
  // result saturates too, and a finite element's error is measured from the exact value
  // clamped to the range (clamping moves no two values apart, so a bound on the unclamped error
  // bounds the clamped one).
  const bool sat = claim.output_saturate && f.kind == FormatKind::binary_float;
  const double top = max_finite(f);
  const Bits top_pos = sat ? max_finite_bits(f, false) : Bits{}, top_neg = sat ? max_finite_bits(f, true) : Bits{};
  const auto rounded_of = [&](std::size_t i) {
    const Bits r = ref.rounded(i);
    const double x = ref.exact(i);
    if (!sat || std::isnan(x) || std::isfinite(to_double(f, r))) return r;
    return x < 0 ? top_neg : top_pos;  // an overflow of the exact value, or an infinite one
  };
  // The accumulator's own NaN and infinities: under a saturating output an infinity leaves
  // the cast as ±max, never as NaN, so only the accumulator's lack of inf makes an overflow
  // NaN (overflow_allows reads the output format for that alone).
  const FormatSpec& acc = claim.block_fma ? *claim.block_fma->output : *claim.acc.format;
  const FormatSpec& nonfinite_out = sat ? acc : f;
  // A directed output rounding: each element's side (directed_side), asked only then.
  const bool directed = is_directed(claim.output_rounding);
  detail::parallel_for(n_all, kGrain, [&](std::int64_t i0, std::int64_t i1) {
    Tally& t = tallies[static_cast<std::size_t>(i0 / kGrain)];
    for (auto i = static_cast<std::size_t>(i0); i < static_cast<std::size_t>(i1); ++i) {
      struct {
        double value, exact, error = 0, error_ulps = 0, det_bound = 0, prob_bound = 0;
        ElementClass cls = ElementClass::bit_exact;
      } e{to_double(f, out[i]), ref.exact(i)};
      bool sticky = false;
      bool may_overflow = ref.may_overflow(i);  // a step may overflow: ±inf and NaN are legal too
      // The infinities a partial sum can reach (a sticky overflow, or an infinite term): what
      // overflow_allows reads. None where the caller gives the bounds.
      ElementBound reach;
      // A directed output rounding's one side (directed_side): the bounds an error against it
      // meets instead (the reduction's own, without the output's rounding).
      int side = 0;
      double against_det = 0, against_prob = 0;
      if (const std::optional<double> given = ref.det_bound(i)) {
        e.det_bound = *given;
        e.prob_bound = ref.prob_bound(i).value_or(*given);
        // A given bound may carry its part before the output cast: a row op's derivation
        // (check_rows), a scaled GEMM element's with its scale-product allowance.
        if (const std::optional<double> c = directed ? ref.before_output(i) : std::nullopt) {
          side = directed_side(claim, f, ref.exact(i), *c, e.det_bound, may_overflow);
          against_det = *c;
          against_prob = std::min(*c, e.prob_bound);
        }
      } else {
        const ElementBound eb =
            element_bound(b, claim, ref.exact(i), ref.sum_abs(i), ref.finite_opposite(i), ref.addend(i));
        e.det_bound = eb.deterministic;
        e.prob_bound = eb.probabilistic;
        if (directed) {
          side = directed_side(claim, f, ref.exact(i), eb.before_output, eb.deterministic, eb.may_overflow);
          against_det = eb.before_output;
          against_prob = eb.before_output_probabilistic;
        }
        const bool eb_sticky = eb.may_overflow && std::isfinite(eb.deterministic);
        // (Where the exact result is ±inf, eb.may_overflow says only that a finite partial sum
        // may overflow, of either sign: which NaN needs is overflow_allows' to say.)
        if (std::isfinite(ref.exact(i))) may_overflow = may_overflow || (eb.may_overflow && !eb_sticky);
        reach.overflow_pos = eb.overflow_pos;
        reach.overflow_neg = eb.overflow_neg;
        sticky = eb_sticky && std::isfinite(ref.exact(i));
      }
      // NaN where the exact result is NaN, or the same infinity, is the exact result (NaN payloads
      // and signs carry no value: the NaN policy of same_nonfinite).
      const Bits rounded = rounded_of(i);
      const bool bit_exact = out[i] == rounded ||
                             (!std::isfinite(e.value) && !std::isfinite(e.exact) && same_nonfinite(f, out[i], rounded));
      e.cls = ElementClass::bit_exact;
      // What a finite output is measured from (the exact value, clamped under --saturate).
      const double target = saturated_target(f, sat, e.exact);
      if (!bit_exact && (!std::isfinite(e.value) || !std::isfinite(e.exact))) {
        // Non-finite on either side: legal only as the same non-finite value, or as an overflow
        // the deterministic bound allows (the exact value within the bound of the range's end).
        // An infinity of either sign is reachable when a value the bound allows lies beyond the
        // range on that side (the bound may exceed |exact|: then the sign may differ too).
        // An output format without infinities (OCP E4M3, FNUZ) overflows to NaN instead.
        const auto overflows_to = [&](double bound) {
          if (!std::isfinite(e.exact) || sat) return false;  // saturated: ±max, judged as a finite value
          const bool above = e.exact + bound > max_finite(f), below = e.exact - bound < -max_finite(f);
          if (std::isinf(e.value)) return e.value > 0 ? above : below;
          return std::isnan(e.value) && f.non_finite == NonFinite::nan_only && (above || below);
        };
        // A sticky overflow gives the infinity of the partial sum's sign, NaN from inf - inf, or
        // NaN for either where the accumulator or the output has no infinity (OCP E4M3, FNUZ: an
        // overflow is NaN there, so an accumulator without inf never gives ±inf); an infinite
        // term meeting a partial sum overflowed to the other infinity gives NaN: the one rule of
        // overflow_allows (tolerances/bounds.h).
        // A saturating cast never gives ±inf.
        const bool sticky_legal = !(sat && std::isinf(e.value)) && overflow_allows(reach, acc, nonfinite_out, e.exact, e.value);
        // A step that may overflow (an operand's cast) makes ±inf and NaN legal; where the exact
        // result is ±inf (an infinite term), NaN: the step's infinity may be the other one.
        const bool step_legal = may_overflow && !(sat && std::isinf(e.value)) &&
                                (std::isfinite(e.exact) || (std::isinf(e.exact) && std::isnan(e.value)));
        const bool legal = same_nonfinite(f, out[i], rounded) || overflows_to(e.det_bound) || step_legal ||
                           sticky_legal;
        // A legal non-finite result is within the probabilistic bound where that bound reaches the
        // overflow too (or is vacuous: the accumulator may overflow), else within the deterministic only.
        const bool prob_legal = legal && (step_legal || sticky_legal || overflows_to(e.prob_bound));
        e.cls = prob_legal ? ElementClass::within_probabilistic
                : legal    ? ElementClass::within_deterministic
                           : ElementClass::outside_deterministic;
        t.mismatches += !legal;
        e.error = legal ? 0 : INFINITY;  // the ratio to the bound follows: detail::bound_ratio
      }
      if (bit_exact && !(std::isfinite(e.value) && std::isfinite(e.exact))) {
        e.error = 0;  // the same non-finite value as the oracle's
      } else if (std::isfinite(e.value) && std::isfinite(e.exact)) {
        e.error = e.value - target;
        // Against a directed output rounding's direction the rounding adds nothing: the bound
        // there is the reduction's own (docs/verdict.md §2, "Directed output roundings").
        if (!bit_exact && side != 0 && (side > 0 ? e.error < 0 : e.error > 0)) {
          e.det_bound = against_det;
          e.prob_bound = against_prob;
        }
        const double a = std::fabs(e.error);
        // (A given deterministic bound may be the near side's, below the symmetric probabilistic
        // one: check_rows. Outside it is outside, whatever the probabilistic bound says.)
        if (!bit_exact)
          e.cls = a <= std::min(e.prob_bound, e.det_bound) ? ElementClass::within_probabilistic
                  : a <= e.det_bound ? ElementClass::within_deterministic
                                     : ElementClass::outside_deterministic;
        // ±max under a saturating cast is what an overflow of a partial sum or an operand's
        // cast becomes (±inf there): legal wherever that infinity would be.
        if (sat && e.cls == ElementClass::outside_deterministic && std::fabs(e.value) == top) {
          const double inf = std::copysign(INFINITY, e.value);
          if (may_overflow || overflow_allows(reach, acc, nonfinite_out, e.exact, inf)) {
            e.cls = ElementClass::within_probabilistic;
            e.error = 0;  // as for the infinity it stands for (the non-finite branch above)
          }
        }
      }
      e.error_ulps = std::isfinite(e.error) ? e.error / ulp_at(f, target) : e.error;
      all.record(i) = {e.error, e.error_ulps, e.det_bound, e.prob_bound, e.cls};
      t.unclaimed_saturation += !sat && e.cls == ElementClass::outside_deterministic && std::fabs(e.value) == top &&
                                std::isfinite(e.exact) && !std::isfinite(to_double(f, rounded)) && (e.value > 0) == (e.exact > 0);
      if (std::isfinite(e.error_ulps)) t.max_ulps = std::max(t.max_ulps, std::fabs(e.error_ulps));
      ++t.counts[static_cast<std::size_t>(e.cls)];
      t.trivial += ref.exact(i) == 0 && ref.sum_abs(i) == 0;
      t.zeros += e.value == 0 && e.exact == 0;
      t.unbounded += std::isfinite(e.exact) && !std::isfinite(e.det_bound);
      t.sticky += sticky;
    }
  });
  std::int64_t trivial = 0, zeros = 0, unbounded = 0, overflowable = 0, unclaimed_saturation = 0;
  for (const Tally& t : tallies) {
    unclaimed_saturation += t.unclaimed_saturation;
    for (std::size_t c = 0; c < 4; ++c) v.counts[c] += t.counts[c];
    v.nonfinite_mismatches += t.mismatches;
    v.max_error_ulps = std::max(v.max_error_ulps, t.max_ulps);
    trivial += t.trivial;
    zeros += t.zeros;
    unbounded += t.unbounded;
    overflowable += t.sticky;
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
    v.reason = fmt::format("{} of {} elements lie outside the probabilistic bound (confidence {:.12g} each); chance explains "
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
  if (unclaimed_saturation > 0)
    v.reason += fmt::format("; {} of them are ±{:g} where the exact result overflows {}: the output cast saturates "
                            "(OCP saturating mode, CUDA .satfinite): claim --saturate if the kernel's cast should",
                            unclaimed_saturation, top, f.name);
  if (v.kind != TensorKind::defect) bias_rule(v, claim, all, ref, opt.false_alarm);
  if (v.kind != TensorKind::defect) stochastic_lean_rule(v, claim, b, all, ref, opt.false_alarm);
  degenerate_note(v, b, claim, trivial, zeros, unbounded);
  if (overflowable > 0) {
    const bool acc_inf = acc.non_finite == NonFinite::ieee;
    v.reason += fmt::format("; {} of {} elements' partial sums may overflow the {} accumulator: {} is legal there, a "
                            "finite output must meet the finite bound (an overflow is {}, and stays non-finite)",
                            overflowable, v.elements, acc.name, acc_inf ? "±inf or NaN" : "NaN",
                            acc_inf ? "±inf" : "NaN in a format without inf");
  }
  // Which matrices of a stack hold the proven defects (a broken head of an attention batch):
  // counted only where there are any.
  const Stack stack = stack_of(opt.shape, n_all);
  if (stack.matrices > 0) {
    v.matrices = stack.matrices;
    if (v.counts[3] > 0) {
      const std::vector<std::int64_t> outside =
          per_matrix(all, stack, [&](std::size_t i) { return all.cls(i) == ElementClass::outside_deterministic; });
      for (std::size_t m = 0; m < outside.size(); ++m)
        if (outside[m] > 0) v.outside_by_matrix.push_back({static_cast<std::int64_t>(m), outside[m]});
      std::stable_sort(
          v.outside_by_matrix.begin(), v.outside_by_matrix.end(),
          [](const Verdict::MatrixCount& x, const Verdict::MatrixCount& y) { return x.outside > y.outside; });
    }
  }
  add_signatures(v, claim, b, all, ref, grid, is_shape_of(opt.shape, n_all) ? opt.shape : std::span<const std::int64_t>{},
                 stack, opt.centre_is_reference);
  v.field = detail::error_field(all, grid, opt.false_alarm);
  // The worst elements, made whole from their records.
  for (const std::size_t i : all.size() <= std::numeric_limits<std::uint32_t>::max() ? worst_positions<std::uint32_t>(all, opt.worst)
                                                      : worst_positions<std::size_t>(all, opt.worst))
    v.worst.push_back(all.report(i));
  return v;
}

}  // namespace

bool is_shape_of(std::span<const std::int64_t> shape, std::int64_t n) {
  std::int64_t total = 1;
  for (const std::int64_t d : shape) total *= d;
  return !shape.empty() && total == n;
}

std::vector<std::int64_t> position_in(std::int64_t index, std::span<const std::int64_t> shape) {
  std::vector<std::int64_t> p(shape.size());
  for (std::size_t a = shape.size(); a-- > 0;) {
    const std::int64_t d = std::max<std::int64_t>(shape[a], 1);
    p[a] = index % d;
    index /= d;
  }
  return p;
}

Verdict judge(const Claim& claim, const ReductionBound& b, std::span<const Bits> out,
              std::span<const ReferenceElement> ref, Grid grid, const JudgeOptions& opt) {
  if (ref.size() != out.size())
    throw std::invalid_argument(fmt::format("judge: {} reference elements for {} outputs", ref.size(), out.size()));
  detail::ReferenceElements r{ref};
  if (claim.addend_at != AddendAt::start) {
    if (opt.addend.size() != out.size() || opt.addend_format == nullptr)
      throw std::invalid_argument(fmt::format("judge: the claim adds its addend after the chain (--addend-at {}): "
                                              "give {} addends (JudgeOptions::addend), not {}",
                                              addend_at_name(claim.addend_at), out.size(), opt.addend.size()));
    r.addends = {opt.addend, opt.addend_format};
  }
  return judge_with(claim, b, out, r, grid, opt);
}

Verdict detail::judge_exact(const Claim& claim, const ReductionBound& b, std::span<const Bits> out,
                            const ExactReference& ref, Grid grid, const JudgeOptions& opt) {
  if (ref.elements.size() != out.size() || ref.rounded_bits.size() != out.size() ||
      (!ref.cast_overflow.empty() && ref.cast_overflow.size() != out.size()))
    throw std::invalid_argument(fmt::format("judge: {} exact elements, {} rounded, {} cast flags for {} outputs",
                                            ref.elements.size(), ref.rounded_bits.size(), ref.cast_overflow.size(),
                                            out.size()));
  return judge_with(claim, b, out, ref, grid, opt);
}

}  // namespace numfid
