// The error field's summary (tolerances/error_field.h): quantiles with distribution-free
// limits, the largest errors, bias moments, a max-pooled heatmap and a histogram.
#include "tolerances/error_field.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "tolerances/bounds.h"
#include "tolerances/judged_detail.h"
#include "tolerances/parallel_detail.h"
#include "tolerances/verdict.h"

namespace numfid {

namespace {

/// Smallest k in [0, n + 1] with P(Binomial(n, p) >= k) <= alpha (n + 1: none). The tail
/// falls as k grows: a binary search, over mean ± 40 standard deviations only (beyond them the
/// tail is within 1e-300 of 1 or 0), so that each tail sums O(√n) terms even at n = 10^8.
std::int64_t threshold(std::int64_t n, double p, double alpha) {
  const double mean = static_cast<double>(n) * p, sd = std::sqrt(static_cast<double>(n) * p * (1 - p));
  std::int64_t lo = std::max<std::int64_t>(0, static_cast<std::int64_t>(std::floor(mean - 40 * sd - 1)));
  std::int64_t hi = std::min<std::int64_t>(n + 1, static_cast<std::int64_t>(std::ceil(mean + 40 * sd + 1)));
  if (binomial_tail(n, p, hi) > alpha) return n + 1;  // alpha below 1e-300: nothing qualifies
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (binomial_tail(n, p, mid) <= alpha) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/// The `count` largest values of `value(i)` over i < n, descending, without copying them all:
/// a min-heap of the best `count` so far (a value enters only if it beats the heap's least).
/// Values are doubles compared by `<`, so equal values are interchangeable: the same list as a
/// partial sort of the whole array.
template <typename Value>
std::vector<double> top_of_range(std::size_t i0, std::size_t i1, std::size_t count, Value value) {
  std::vector<double> heap;
  heap.reserve(std::min(count, i1 - i0));
  for (std::size_t i = i0; i < i1; ++i) {
    const double x = value(i);
    if (heap.size() < count) {
      heap.push_back(x);
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
    } else if (count > 0 && x > heap.front()) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<>());
      heap.back() = x;
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
    }
  }
  std::sort(heap.begin(), heap.end(), std::greater<>());
  return heap;
}

/// top_of_range over [0, n), chunk by chunk on every core: the `count` largest of the union
/// are the `count` largest of the chunks' own lists, so the list is the same for any thread count.
template <typename Value>
std::vector<double> top(std::size_t n, std::size_t count, Value value) {
  constexpr std::size_t kGrain = std::size_t{1} << 16;
  std::vector<std::vector<double>> parts((n + kGrain - 1) / kGrain);
  detail::parallel_for(static_cast<std::int64_t>(n), static_cast<std::int64_t>(kGrain), [&](std::int64_t i0, std::int64_t i1) {
    parts[static_cast<std::size_t>(i0) / kGrain] =
        top_of_range(static_cast<std::size_t>(i0), static_cast<std::size_t>(i1), count, value);
  });
  std::vector<double> all;
  for (const std::vector<double>& p : parts) all.insert(all.end(), p.begin(), p.end());
  std::sort(all.begin(), all.end(), std::greater<>());
  if (all.size() > count) all.resize(count);
  return all;
}

/// ElementReports read through the accessors of detail::JudgedElements.
struct Reports {
  std::span<const ElementReport> all;
  std::size_t size() const { return all.size(); }
  double exact(std::size_t i) const { return all[i].exact; }
  double error_ulps(std::size_t i) const { return all[i].error_ulps; }
  double det_bound(std::size_t i) const { return all[i].det_bound; }
  double ratio(std::size_t i) const { return all[i].ratio; }
  std::int64_t row(std::size_t i) const { return all[i].row; }
  std::int64_t col(std::size_t i) const { return all[i].col; }
};

/// The error field of elements read through `all`'s accessors (size, exact, error_ulps,
/// det_bound, ratio, row, col): ElementReports (Reports) or judge()'s records.
template <class Elements>
ErrorField field_of(const Elements& all, const Grid& grid, double alpha) {
  ErrorField f;
  f.alpha = alpha;
  f.elements = static_cast<std::int64_t>(all.size());
  f.rows = std::max<std::int64_t>(grid.rows, 1);
  f.cols = std::max<std::int64_t>(grid.cols, 1);
  // |error| in ulps of every element (the quantiles below select in it), filled on every core.
  LargeArray<double> ulps(all.size());
  detail::parallel_for(static_cast<std::int64_t>(all.size()), 1 << 16, [&](std::int64_t i0, std::int64_t i1) {
    for (auto i = static_cast<std::size_t>(i0); i < static_cast<std::size_t>(i1); ++i)
      ulps[i] = std::isfinite(all.error_ulps(i)) ? std::fabs(all.error_ulps(i)) : INFINITY;
  });
  // The counts and the bias's sums: one pass on the calling thread (on every core it measured
  // slower here: docs/performance.md, "The judgement's serial passes").
  double sum = 0, sum2 = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const double error_ulps = all.error_ulps(i), exact = all.exact(i);
    if (!std::isfinite(error_ulps)) ++f.nonfinite;
    if (!std::isfinite(all.det_bound(i))) ++f.unbounded;
    if (std::isfinite(error_ulps) && exact != 0) {
      const double s = std::copysign(1.0, exact) * error_ulps;  // as the bias signature
      sum += s, sum2 += s * s, ++f.bias_elements;
    }
  }
  if (f.bias_elements > 0) {
    const double n = static_cast<double>(f.bias_elements);
    f.bias_mean = sum / n;
    f.bias_sd = std::sqrt(std::max(sum2 / n - f.bias_mean * f.bias_mean, 0.0));
  }
  f.top_ulps = top(ulps.size(), ErrorField::kTop, [&](std::size_t i) { return ulps[i]; });
  f.top_ratio = top(all.size(), ErrorField::kTop, [&](std::size_t i) { return std::isnan(all.ratio(i)) ? INFINITY : all.ratio(i); });
  if (!f.top_ulps.empty()) f.max_ulps = f.top_ulps[0];
  if (!f.top_ratio.empty()) f.max_ratio = f.top_ratio[0];
  // Quantiles of the sorted |errors|: x(k) is the k-th smallest (1-based). The number B of
  // elements at or below the true 99th percentile q is Binomial(n, 0.99), so
  //   P(x(l) > q) = P(B < l) = P(n - B >= n + 1 - l) <= alpha  for l = n + 1 - T(n, 0.01),
  //   P(x(u) < q) <= P(B >= u) <= alpha                        for u = T(n, 0.99),
  // with T(n, p) the smallest k of P(Binomial(n, p) >= k) <= alpha (order-statistic limits,
  // distribution-free: David & Nagaraja, Order Statistics, 3rd ed., §7.1).
  const std::int64_t n = f.elements;
  if (n > 0) {
    const std::int64_t k99 = static_cast<std::int64_t>(std::ceil(0.99 * static_cast<double>(n)));
    const std::int64_t l = n + 1 - threshold(n, 0.01, alpha);
    const std::int64_t u = threshold(n, 0.99, alpha);
    // Only the order statistics from the lowest one needed up are sorted (about 2% of n).
    const std::int64_t first = std::clamp<std::int64_t>(std::min(l, k99), 1, n) - 1;
    std::nth_element(ulps.begin(), ulps.begin() + first, ulps.end());
    std::sort(ulps.begin() + first, ulps.end());
    const auto at = [&](std::int64_t k) { return ulps[static_cast<std::size_t>(std::clamp<std::int64_t>(k, 1, n) - 1)]; };
    f.p99_ulps = at(k99);
    f.p99_low = l >= 1 ? at(l) : 0.0;
    f.p99_high = u <= n ? at(u) : INFINITY;
  }
  // Heatmap: max |error| / bound per cell; at most kHeatmapSide cells per side. Then the
  // histogram of signed errors. Both on every core (tolerances/parallel_detail.h), chunk by
  // chunk into local cells merged afterwards: maxima and counts, so the same for any thread
  // count.
  f.heat_rows = std::min(f.rows, ErrorField::kHeatmapSide);
  f.heat_cols = std::min(f.cols, ErrorField::kHeatmapSide);
  f.heatmap.assign(static_cast<std::size_t>(f.heat_rows * f.heat_cols), 0.0f);
  const auto count = static_cast<std::int64_t>(all.size());
  constexpr std::int64_t kGrain = 1 << 16;
  const std::int64_t chunks = (count + kGrain - 1) / kGrain;
  std::vector<std::vector<float>> heat(static_cast<std::size_t>(chunks));
  std::vector<double> finite_maxima(static_cast<std::size_t>(chunks), 0.0);
  detail::parallel_for(count, kGrain, [&](std::int64_t i0, std::int64_t i1) {
    std::vector<float>& h = heat[static_cast<std::size_t>(i0 / kGrain)];
    h.assign(f.heatmap.size(), 0.0f);
    double finite_max = 0;
    for (std::int64_t i = i0; i < i1; ++i) {
      const auto e = static_cast<std::size_t>(i);
      const std::int64_t r = std::clamp<std::int64_t>(all.row(e), 0, f.rows - 1) * f.heat_rows / f.rows;
      const std::int64_t c = std::clamp<std::int64_t>(all.col(e), 0, f.cols - 1) * f.heat_cols / f.cols;
      float& cell = h[static_cast<std::size_t>(r * f.heat_cols + c)];
      const double ratio = all.ratio(e);
      const double v = std::isnan(ratio) ? INFINITY : ratio;
      cell = std::max(cell, static_cast<float>(v));
      const double error_ulps = all.error_ulps(e);
      if (std::isfinite(error_ulps)) finite_max = std::max(finite_max, std::fabs(error_ulps));
    }
    finite_maxima[static_cast<std::size_t>(i0 / kGrain)] = finite_max;
  });
  double finite_max = 0;
  for (std::size_t c = 0; c < heat.size(); ++c) {
    for (std::size_t i = 0; i < f.heatmap.size(); ++i) f.heatmap[i] = std::max(f.heatmap[i], heat[c][i]);
    finite_max = std::max(finite_max, finite_maxima[c]);
  }
  f.hist_range = 0.5;
  while (f.hist_range < finite_max && f.hist_range < 0x1p60) f.hist_range *= 2;
  std::vector<std::vector<std::int64_t>> hist(static_cast<std::size_t>(chunks));
  detail::parallel_for(count, kGrain, [&](std::int64_t i0, std::int64_t i1) {
    std::vector<std::int64_t>& h = hist[static_cast<std::size_t>(i0 / kGrain)];
    h.assign(ErrorField::kBins, 0);
    for (std::int64_t i = i0; i < i1; ++i) {
      const double error_ulps = all.error_ulps(static_cast<std::size_t>(i));
      if (!std::isfinite(error_ulps)) continue;
      const double t = (error_ulps + f.hist_range) / (2 * f.hist_range) * ErrorField::kBins;
      const int bin = std::clamp(static_cast<int>(std::floor(t)), 0, ErrorField::kBins - 1);
      ++h[static_cast<std::size_t>(bin)];
    }
  });
  f.histogram.assign(ErrorField::kBins, 0);
  for (const std::vector<std::int64_t>& h : hist)
    for (std::size_t b = 0; b < h.size(); ++b) f.histogram[b] += h[b];
  return f;
}

}  // namespace

ErrorField error_field(std::span<const ElementReport> all, const Grid& grid, double alpha) {
  return field_of(Reports{all}, grid, alpha);
}

ErrorField detail::error_field(const JudgedElements& all, const Grid& grid, double alpha) {
  return field_of(all, grid, alpha);
}

}  // namespace numfid
