// A compact summary of a check's whole error field: the per-element errors reduced to what
// reports draw (a downsampled |error| / bound heatmap, a histogram of errors in output ulps)
// and what baselines compare (tail quantiles with distribution-free confidence limits, the
// largest errors, the mean signed error). judge() fills it from every element it classified,
// so the gate's reports and baselines come from the check pipeline itself (docs/gate.md).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace numfid {

struct ElementReport;
struct Grid;

/// The error field of one checked tensor, in a size independent of the tensor's.
struct ErrorField {
  /// Largest errors kept (desc): enough to count how many elements of a later run exceed a
  /// baseline's maximum for the exchangeability test of docs/gate.md (30 suffice at 1e-9).
  static constexpr std::size_t kTop = 64;
  /// Heatmap cells per side at most (downsampled by the maximum over each cell).
  static constexpr std::int64_t kHeatmapSide = 64;
  /// Histogram bins over [-range, range] output ulps.
  static constexpr int kBins = 32;

  std::int64_t elements = 0;
  std::int64_t nonfinite = 0;  ///< elements whose error is not finite (NaN/inf mismatches)
  /// |error| in output ulps: maximum, 99th percentile (order statistic ⌈0.99·n⌉), and its
  /// one-sided distribution-free confidence limits at false-alarm probability `alpha`
  /// (p99_low <= true p99 <= p99_high, each with probability >= 1 - alpha; p99_high is +inf
  /// when n is too small to bound the 99th percentile from above).
  double max_ulps = 0, p99_ulps = 0, p99_low = 0, p99_high = 0;
  double max_ratio = 0;   ///< max |error| / deterministic bound (fraction of the bound used)
  /// Elements whose deterministic bound is not finite (a vacuous claim, e.g. a bf16
  /// accumulator at large K): their |error| / bound is 0 and says nothing.
  std::int64_t unbounded = 0;
  double alpha = 1e-9;
  /// Signed error in output ulps, sign-normalised as the bias signature (negative = toward
  /// zero), over finite elements with a non-zero exact value: mean and standard deviation.
  std::int64_t bias_elements = 0;
  double bias_mean = 0, bias_sd = 0;
  std::vector<double> top_ulps;   ///< largest |error| ulps, descending (at most kTop)
  std::vector<double> top_ratio;  ///< largest |error| / bound, descending (at most kTop)
  /// |error| / bound, max over each cell: heat_rows × heat_cols, row-major, over the grid
  /// rows × cols.
  std::int64_t rows = 1, cols = 1, heat_rows = 0, heat_cols = 0;
  std::vector<float> heatmap;
  /// Histogram of finite signed errors (output ulps) in kBins equal bins over [-range, range];
  /// range: the smallest power of two >= max |error| (at least 1/2).
  double hist_range = 0.5;
  std::vector<std::int64_t> histogram;
};

/// The error field of `all` (every element as judge() classified it, in index order) on
/// `grid`, with confidence limits at false-alarm probability `alpha`.
ErrorField error_field(std::span<const ElementReport> all, const Grid& grid, double alpha);

}  // namespace numfid
