// Tests of the error-field summary (tolerances/error_field.h) against naive recomputations:
// quantiles and their order-statistic confidence limits (binomial tails summed directly in long
// double, not with the library's binomial_tail), the largest errors, bias moments, the
// max-pooled heatmap and the histogram; and the bias signature's count over a tensor larger than
// one chunk (65536 elements) of the judgement's parallel passes.
#include "tolerances/error_field.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "formats/convert.h"
#include "formats/format_spec.h"
#include "tolerances/check.h"
#include "tolerances/verdict.h"

namespace numfid {
namespace {

/// P(Binomial(n, p) >= k) by the pmf recurrence, in long double (for p > 1/2 through the
/// complement of the mirrored tail, so that (1 - p)^n does not underflow).
long double naive_tail(std::int64_t n, long double p, std::int64_t k) {
  if (p > 0.5L) return 1 - naive_tail(n, 1 - p, n - k + 1);
  long double pmf = std::pow(1 - p, static_cast<long double>(n)), tail = 0;  // P(X = 0)
  for (std::int64_t i = 0; i <= n; ++i) {
    if (i >= k) tail += pmf;
    pmf *= static_cast<long double>(n - i) / static_cast<long double>(i + 1) * p / (1 - p);
  }
  return tail;
}

std::int64_t naive_threshold(std::int64_t n, long double p, long double alpha) {
  for (std::int64_t k = 0; k <= n; ++k)
    if (naive_tail(n, p, k) <= alpha) return k;
  return n + 1;
}

std::vector<ElementReport> elements(std::int64_t rows, std::int64_t cols) {
  std::vector<ElementReport> v(static_cast<std::size_t>(rows * cols));
  for (std::int64_t i = 0; i < rows * cols; ++i) {
    ElementReport& e = v[static_cast<std::size_t>(i)];
    e.index = i, e.row = i / cols, e.col = i % cols;
    e.exact = (i % 3 == 0 ? -1.0 : 1.0) * (1 + static_cast<double>(i));
    // |error| a permutation of 1..n ulps (distinct), signed away from zero on 2 of 3 elements
    const double u = static_cast<double>((i * 7919) % (rows * cols) + 1) / 16;
    e.error_ulps = (i % 3 == 1 ? -1 : 1) * std::copysign(u, e.exact);
    e.ratio = u / 1000;
  }
  return v;
}

TEST(ErrorField, QuantilesAndLimitsMatchANaiveComputation) {
  const std::int64_t rows = 50, cols = 60, n = rows * cols;  // 3000 elements
  const std::vector<ElementReport> all = elements(rows, cols);
  const ErrorField f = error_field(all, Grid{rows, cols}, 1e-9);
  std::vector<double> u;
  for (const ElementReport& e : all) u.push_back(std::fabs(e.error_ulps));
  std::sort(u.begin(), u.end());
  const auto at = [&](std::int64_t k) { return u[static_cast<std::size_t>(k - 1)]; };
  EXPECT_EQ(f.elements, n);
  EXPECT_EQ(f.max_ulps, at(n));
  EXPECT_EQ(f.p99_ulps, at(2970));  // ⌈0.99 · 3000⌉
  const std::int64_t l = n + 1 - naive_threshold(n, 0.01L, 1e-9L), h = naive_threshold(n, 0.99L, 1e-9L);
  ASSERT_GE(l, 1);
  ASSERT_LE(h, n);
  EXPECT_LT(l, 2970);
  EXPECT_GT(h, 2970);
  EXPECT_EQ(f.p99_low, at(l));
  EXPECT_EQ(f.p99_high, at(h));
  ASSERT_EQ(f.top_ulps.size(), ErrorField::kTop);
  for (std::size_t i = 0; i < ErrorField::kTop; ++i) EXPECT_EQ(f.top_ulps[i], at(n - static_cast<std::int64_t>(i)));
  EXPECT_EQ(f.max_ratio, at(n) / 1000);
  // Bias: sign-normalised signed errors (sign(exact) · error): +u on 2 of 3 elements, -u on 1.
  double sum = 0, sum2 = 0;
  for (const ElementReport& e : all) {
    const double s = std::copysign(1.0, e.exact) * e.error_ulps;
    sum += s, sum2 += s * s;
  }
  EXPECT_NEAR(f.bias_mean, sum / static_cast<double>(n), 1e-12);
  EXPECT_NEAR(f.bias_sd, std::sqrt(sum2 / static_cast<double>(n) - f.bias_mean * f.bias_mean), 1e-9);
  EXPECT_EQ(f.bias_elements, n);
  // Histogram: every finite element once, over [-R, R] with R the power of two above the max.
  EXPECT_EQ(f.hist_range, 256.0);  // max 3000/16 = 187.5
  std::int64_t total = 0;
  for (const std::int64_t c : f.histogram) total += c;
  EXPECT_EQ(total, n);
}

// The counts and the bias's sums over 75000 elements (more than one 65536-element chunk of the
// judgement's parallel passes), with non-finite errors and unbounded elements on both sides of
// element 65536: the naive loop's (the mean to rounding, should the order of the sum differ).
TEST(ErrorField, CountsAndBiasCoverEveryChunk) {
  const std::int64_t rows = 300, cols = 250, n = rows * cols;
  std::vector<ElementReport> all = elements(rows, cols);
  for (const std::int64_t i : {7, 65535, 65536, 74999}) all[static_cast<std::size_t>(i)].error_ulps = NAN;
  for (std::size_t i = 0; i < all.size(); ++i) all[i].det_bound = i % 9000 == 1 ? INFINITY : 1.0;
  const ErrorField f = error_field(all, Grid{rows, cols}, 1e-9);
  double sum = 0, sum2 = 0;
  std::int64_t finite = 0, unbounded = 0;
  for (const ElementReport& e : all) {
    unbounded += std::isinf(e.det_bound);
    if (!std::isfinite(e.error_ulps)) continue;
    const double s = std::copysign(1.0, e.exact) * e.error_ulps;
    sum += s, sum2 += s * s, ++finite;
  }
  EXPECT_EQ(f.nonfinite, 4);
  EXPECT_EQ(f.unbounded, unbounded);
  EXPECT_EQ(unbounded, 9);  // 1, 9001, ..., 72001
  EXPECT_EQ(f.bias_elements, finite);
  EXPECT_EQ(finite, n - 4);
  const double mean = sum / static_cast<double>(finite);
  EXPECT_NEAR(f.bias_mean, mean, 1e-12 * std::fabs(mean));
  EXPECT_NEAR(f.bias_sd, std::sqrt(sum2 / static_cast<double>(finite) - mean * mean), 1e-9);
}

// The bias signature over 75000 elements, the last 35000 truncated to bf16 (on both sides of
// element 65536): it counts every element (the count is the naive one: all exact results are non-zero
// and finite), and its mean is that of the elements' signed errors.
TEST(BiasSignature, CountsEveryChunk) {
  const std::int64_t n = 75000;
  TensorData x{&fp32, {n}, {}, "x"}, y{&bf16, {n}, {}, "y"};
  RoundOptions rtz;
  rtz.rounding = Rounding::rtz;
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = -4 + 8 * static_cast<double>((i * 7919) % n) / static_cast<double>(n);
    x.values.push_back(convert_double(fp32, v).bits);
    const Bits e = convert_double(fp32, std::exp(to_double(fp32, x.values.back()))).bits;
    y.values.push_back(i < 40000 ? convert(fp32, bf16, e).bits : convert(fp32, bf16, e, rtz).bits);
  }
  const CheckResult r = check_rows(RowOp::exp, x, y, parse_claim("--in fp32 --compute fp32 --out bf16"));
  const auto bias = std::find_if(r.verdict.signatures.begin(), r.verdict.signatures.end(),
                                 [](const Signature& g) { return g.name == "bias"; });
  ASSERT_NE(bias, r.verdict.signatures.end()) << r.text();
  EXPECT_NE(bias->evidence.find("over 75000 elements"), std::string::npos) << bias->evidence;
  EXPECT_NE(bias->evidence.find(fmt::format("mean signed error {:+.3f}", r.verdict.field.bias_mean)), std::string::npos)
      << bias->evidence;
}

TEST(ErrorField, TooFewElementsLeaveTheUpperLimitOpen) {
  const std::vector<ElementReport> all = elements(10, 10);
  const ErrorField f = error_field(all, Grid{10, 10}, 1e-9);
  EXPECT_TRUE(std::isinf(f.p99_high));  // 0.99^100 > 1e-9: no order statistic bounds p99 from above
  std::vector<double> u;
  for (const ElementReport& e : all) u.push_back(std::fabs(e.error_ulps));
  std::sort(u.begin(), u.end());
  EXPECT_EQ(f.p99_low, u[static_cast<std::size_t>(100 - naive_threshold(100, 0.01L, 1e-9L))]);
}

TEST(ErrorField, HeatmapIsTheMaximumPerCell) {
  std::vector<ElementReport> all = elements(128, 96);
  for (ElementReport& e : all) e.ratio = 0.25;
  all[100 * 96 + 50].ratio = 2;        // one element beyond its bound ...
  all[3 * 96 + 7].ratio = INFINITY;    // ... and a non-finite one
  const ErrorField f = error_field(all, Grid{128, 96}, 1e-9);
  ASSERT_EQ(f.heat_rows, 64);
  ASSERT_EQ(f.heat_cols, 64);
  const auto cell = [&](std::int64_t r, std::int64_t c) { return f.heatmap[static_cast<std::size_t>(r * 64 + c)]; };
  EXPECT_EQ(cell(50, 50 * 64 / 96), 2.0f);  // row 100 -> cell 50; column 50 -> cell 33
  EXPECT_TRUE(std::isinf(cell(1, 7 * 64 / 96)));
  std::int64_t others = 0;
  for (const float v : f.heatmap) others += v == 0.25f ? 1 : 0;
  EXPECT_EQ(others, 64 * 64 - 2);
}

}  // namespace
}  // namespace numfid
