// What judge() reads and keeps of every element while it judges a tensor (internal; not
// installed). Kept: a compact record per element, the rest read again from the output's bits,
// the oracle's values and the element's index (an ElementReport is 96 bytes, 1.6 GB for a
// 4096 × 4096 output; only the worst few are made whole). Read: the oracle's side either from
// ReferenceElements or, for check matmul, straight from the exact elements the reference holds
// plus 5 bytes of its own per element, instead of a 56-byte ReferenceElement copy of each
// (docs/performance.md, "An exact element of 24 bytes, and the judgement's own records").
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "formats/format_spec.h"
#include "formats/value.h"
#include "tolerances/check.h"
#include "tolerances/large_memory.h"
#include "tolerances/parallel_detail.h"
#include "tolerances/verdict.h"

namespace numfid {
namespace detail {

/// The fields of an ElementReport that are computed and not derived from others: 40 bytes
/// (the ratio to the deterministic bound is bound_ratio(error, det_bound)).
struct JudgedElement {
  double error = 0, error_ulps = 0, det_bound = 0, prob_bound = 0;
  ElementClass cls = ElementClass::bit_exact;
};

/// ElementReport::ratio from an element's error and deterministic bound: |error| / bound; 0
/// for no error, ∞ for an error where the bound is 0, and ∞ for an infinite error (judge()
/// gives one to an illegal non-finite result, 0 to a legal one).
inline double bound_ratio(double error, double det_bound) {
  const double a = std::fabs(error);
  if (!std::isfinite(a)) return INFINITY;
  return det_bound > 0 ? a / det_bound : (a > 0 ? INFINITY : 0);
}

}  // namespace detail

/// Zero bytes are JudgedElement{} (tests/large_memory_test.cpp checks it field by field).
template <>
struct ZeroIsDefault<detail::JudgedElement> : std::true_type {};

namespace detail {

/// Each element's addend where the claim adds it at the end or after the output cast
/// (element_bound reads it then); empty otherwise, and then 0.
struct Addends {
  std::span<const Bits> bits = {};
  const FormatSpec* format = nullptr;
  double operator()(std::size_t i) const { return bits.empty() ? 0 : to_double(*format, bits[i]); }
};

/// The oracle's side of each element, read from ReferenceElements (judge()'s public input).
struct ReferenceElements {
  std::span<const ReferenceElement> ref;
  Bits rounded(std::size_t i) const { return ref[i].rounded; }
  double exact(std::size_t i) const { return ref[i].exact; }
  double sum_abs(std::size_t i) const { return ref[i].sum_abs; }
  double finite_opposite(std::size_t i) const { return ref[i].finite_opposite; }
  std::optional<double> det_bound(std::size_t i) const { return ref[i].det_bound; }
  std::optional<double> prob_bound(std::size_t i) const { return ref[i].prob_bound; }
  std::optional<double> before_output(std::size_t i) const { return ref[i].before_output; }
  bool may_overflow(std::size_t i) const { return ref[i].may_overflow; }
  Addends addends = {};  ///< judge() sets them from JudgeOptions::addend (required then)
  double addend(std::size_t i) const { return addends(i); }
  const double* first_exact() const { return ref.empty() ? nullptr : &ref[0].exact; }
  static constexpr std::size_t kStride = sizeof(ReferenceElement);
};

/// The oracle's side of each element, read from a MatmulReference's exact elements: the same
/// values as the ReferenceElement {elements[i].rounded(output), exact, sum_abs} that check
/// matmul used to copy them into, with the bounds derived from the claim except where an
/// operand's cast may overflow (vacuous there: ±inf/NaN legal, as mark_cast_overflow says).
struct ExactReference {
  std::span<const ExactElement> elements;
  std::span<const Bits> rounded_bits;  ///< elements[i].rounded(claim's output)
  std::span<const char> cast_overflow;  ///< empty, or 1 where an operand's cast may overflow
  Addends addends = {};  ///< where the claim adds the addend after the chain
  double addend(std::size_t i) const { return addends(i); }
  Bits rounded(std::size_t i) const { return rounded_bits[i]; }
  double exact(std::size_t i) const { return elements[i].exact; }
  double sum_abs(std::size_t i) const { return elements[i].sum_abs; }
  double finite_opposite(std::size_t i) const { return elements[i].opposite; }
  bool may_overflow(std::size_t i) const { return !cast_overflow.empty() && cast_overflow[i] != 0; }
  std::optional<double> det_bound(std::size_t i) const {
    return may_overflow(i) ? std::optional<double>(INFINITY) : std::nullopt;
  }
  std::optional<double> prob_bound(std::size_t i) const { return det_bound(i); }
  std::optional<double> before_output(std::size_t) const { return std::nullopt; }
  const double* first_exact() const { return elements.empty() ? nullptr : &elements[0].exact; }
  static constexpr std::size_t kStride = sizeof(ExactElement);
};

/// judge() with the oracle's side read from the exact elements (check matmul and dot).
Verdict judge_exact(const Claim& claim, const ReductionBound& b, std::span<const Bits> out, const ExactReference& ref,
                    Grid grid, const JudgeOptions& opt);

/// Every element of one output as judge() classified it: its records, and the output and
/// oracle they were computed from. report(i) is the ElementReport judge() used to hold.
class JudgedElements {
 public:
  template <class Reference>
  JudgedElements(const FormatSpec& format, std::span<const Bits> out, const Reference& ref, Grid grid)
      : format_(&format),
        out_(out),
        exact_(reinterpret_cast<const unsigned char*>(ref.first_exact())),
        exact_stride_(Reference::kStride),
        grid_(grid),
        records_(static_cast<std::int64_t>(out.size())) {}

  std::size_t size() const { return records_.size(); }
  JudgedElement& record(std::size_t i) { return records_[i]; }
  const JudgedElement& record(std::size_t i) const { return records_[i]; }

  /// The exact result, read in place: the field `exact` of the reference's element i.
  double exact(std::size_t i) const { return *reinterpret_cast<const double*>(exact_ + i * exact_stride_); }
  double value(std::size_t i) const { return to_double(*format_, out_[i]); }
  double error(std::size_t i) const { return records_[i].error; }
  double error_ulps(std::size_t i) const { return records_[i].error_ulps; }
  double det_bound(std::size_t i) const { return records_[i].det_bound; }
  double ratio(std::size_t i) const { return bound_ratio(records_[i].error, records_[i].det_bound); }
  ElementClass cls(std::size_t i) const { return records_[i].cls; }
  std::int64_t row(std::size_t i) const { return grid_.cols > 0 ? static_cast<std::int64_t>(i) / grid_.cols : 0; }
  std::int64_t col(std::size_t i) const {
    return grid_.cols > 0 ? static_cast<std::int64_t>(i) % grid_.cols : static_cast<std::int64_t>(i);
  }

  /// Element i's flat index in the output as given (the grid's own where rows run along the
  /// last axis; Grid::index maps a moved grid back).
  std::int64_t index(std::size_t i) const {
    return grid_.inner == 1 ? static_cast<std::int64_t>(i) : grid_.index(row(i), col(i));
  }

  /// Element i whole, as judge() lists it.
  ElementReport report(std::size_t i) const {
    const JudgedElement& r = records_[i];
    ElementReport e;
    e.row = row(i);
    e.col = col(i);
    e.index = index(i);
    e.bits = out_[i];
    e.value = value(i);
    e.exact = exact(i);
    e.error = r.error;
    e.error_ulps = r.error_ulps;
    e.det_bound = r.det_bound;
    e.prob_bound = r.prob_bound;
    e.ratio = ratio(i);
    e.cls = r.cls;
    return e;
  }

 private:
  const FormatSpec* format_;
  std::span<const Bits> out_;
  const unsigned char* exact_;
  std::size_t exact_stride_;
  Grid grid_;
  ParallelArray<JudgedElement> records_;
};

/// One observation of the bias rule (docs/verdict.md §4.2): an element's exact value, its lean
/// D (sign(exact)·(output − RN(exact)) in output ulps) and m (1 where a legal output may lean).
struct LeanObservation {
  double exact, d, m;
};

/// The bias rule's sums over observations added in increasing exact value: elements of one
/// exact value are one group (its mean D, its largest m), closed by the next value or finish();
/// n groups, the sums of their D and m, and D's mean and sum of squared deviations by Welford's
/// update. merge() appends the groups of another (later exact values: no group is split) by
/// Chan, Golub and LeVeque's pairwise update ("Updating formulae and a pairwise algorithm for
/// computing sample variances", 1979).
struct LeanSums {
  std::int64_t n = 0;
  double sum_d = 0, legal = 0, mean = 0, m2 = 0;
  double exact = 0, d = 0, m = 0;  // the open group
  std::int64_t count = 0;

  void add(const LeanObservation& x) {
    if (count > 0 && x.exact == exact) {
      d += x.d, m = std::max(m, x.m), ++count;
      return;
    }
    finish();
    exact = x.exact, d = x.d, m = x.m, count = 1;
  }
  void finish() {
    if (count == 0) return;
    const double dg = d / static_cast<double>(count);
    ++n;
    sum_d += dg;
    legal += m;
    const double delta = dg - mean;
    mean += delta / static_cast<double>(n);
    m2 += delta * (dg - mean);
    count = 0;
  }
  void merge(const LeanSums& next) {
    if (next.n == 0) return;
    const auto na = static_cast<double>(n), nb = static_cast<double>(next.n), nn = na + nb;
    const double delta = next.mean - mean;
    mean += delta * nb / nn;
    m2 += next.m2 + delta * delta * na * nb / nn;
    n += next.n, sum_d += next.sum_d, legal += next.legal;
  }
};

/// error_field() over judged elements, without making an ElementReport of each.
ErrorField error_field(const JudgedElements& all, const Grid& grid, double alpha);

}  // namespace detail
}  // namespace numfid
