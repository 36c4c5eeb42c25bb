// The trust checks of docs/verdict.md §4.3 and the verdict line's proven/probable label: a
// truncating bf16 cast after fp32 softmax is a defect and the round-to-nearest output of the
// same values is not (the probable rules are measured in verdict_heldout_test.cpp), NaN where the exact result is NaN is bit-exact, an empty
// output is nothing to check.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "formats/convert.h"
#include "formats/error.h"
#include "numerics/plan.h"
#include "tolerances/calibrate.h"
#include "tolerances/check.h"

namespace numfid {
namespace {

/// A 4 × 64 softmax input (fp32 patterns) and its result computed in double, rounded once to
/// fp32 (inside the --compute fp32 claim), then cast to bf16 with rounding `r`.
std::pair<TensorData, TensorData> softmax_case(Rounding r) {
  std::mt19937_64 g(7);
  std::normal_distribution<double> nd(0, 2);
  const std::int64_t rows = 4, cols = 64;
  TensorData x{&fp32, {rows, cols}, {}, "x"}, y{&bf16, {rows, cols}, {}, "y"};
  RoundOptions o;
  o.rounding = r;
  for (std::int64_t i = 0; i < rows; ++i) {
    std::vector<float> v(cols);
    double m = -INFINITY, s = 0;
    for (float& f : v) f = static_cast<float>(nd(g)), m = std::max(m, static_cast<double>(f));
    for (const float f : v) s += std::exp(f - m);
    for (const float f : v) {
      x.values.push_back(Bits{std::bit_cast<std::uint32_t>(f)});
      const float yi = static_cast<float>(std::exp(f - m) / s);
      y.values.push_back(convert(fp32, bf16, Bits{std::bit_cast<std::uint32_t>(yi)}, o).bits);
    }
  }
  return {x, y};
}

TEST(ProbableDefects, TruncatingBf16CastAfterFp32SoftmaxIsADefectAndRoundingIsNot) {
  // Under the derived softmax bound the truncation is already provable for most elements; the
  // probable (lean) rule is exercised where it is not, in VerdictHeldOut (truncating output cast).
  const ClaimSpec claim = parse_claim("--in fp32 --out bf16 --compute fp32");
  const auto [x, rtz] = softmax_case(Rounding::rtz);
  const CheckResult bad = check_rows(RowOp::softmax, x, rtz, claim);
  EXPECT_EQ(bad.verdict.kind, TensorKind::defect) << bad.text();
  EXPECT_NE(bad.text().find("DEFECT (proven)"), std::string::npos) << bad.text();
  const auto [x2, rne] = softmax_case(Rounding::rne);
  const CheckResult good = check_rows(RowOp::softmax, x2, rne, claim);
  EXPECT_NE(good.verdict.kind, TensorKind::defect) << good.text();
}

/// bf16 operands A (m×k) and B (k×n) from N(0, 1), row-major.
std::pair<TensorData, TensorData> bf16_operands(std::int64_t m, std::int64_t k, std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> nd(0, 1);
  TensorData a{&bf16, {m, k}, {}, "A"}, b{&bf16, {k, n}, {}, "B"};
  for (std::int64_t i = 0; i < m * k; ++i) a.values.push_back(convert_double(bf16, nd(g)).bits);
  for (std::int64_t i = 0; i < k * n; ++i) b.values.push_back(convert_double(bf16, nd(g)).bits);
  return {a, b};
}

/// The sequential fp32 sum of each element's exact products, or of the products sorted
/// positive first, decreasing (the order whose partial sums reach the largest subset sum: not
/// among the calibration's orders, so the radius must hold for it unseen).
std::vector<Bits> fp32_sums(const TensorData& a, const TensorData& b, bool positive_first) {
  const std::int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  std::vector<Bits> out;
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      std::vector<Term> t;
      for (std::int64_t l = 0; l < k; ++l)
        t.push_back(exact_product(bf16, a.values[static_cast<std::size_t>(i * k + l)], bf16,
                                  b.values[static_cast<std::size_t>(l * n + j)]));
      if (positive_first)
        std::stable_sort(t.begin(), t.end(), [](const Term& x, const Term& y) {
          auto v = [](const Term& z) {
            const double mag = z.cls == FpClass::normal ? std::ldexp(static_cast<double>(z.value.significand), z.value.exponent) : 0;
            return z.value.negative ? -mag : mag;
          };
          return v(x) > v(y);
        });
      out.push_back(reduce(ReductionPlan{}, AccumulatorModel{}, t));
    }
  return out;
}

TEST(CalibratedRules, TreeRadiusHoldsForAnUnseenWorstOrderAndIsTighterThanHighamMary) {
  const auto [a, b] = bf16_operands(4, 2048, 4, 11);
  const MatmulReference ref = matmul_reference(a, b);
  const MatmulCalibration cal = calibrate_matmul(ref, parse_claim("--in bf16 --acc fp32 --out fp32"));
  ASSERT_TRUE(cal.applies) << cal.why_not;
  EXPECT_LE(cal.rho, 1.0) << cal.rho_where;
  const std::vector<Bits> worst = fp32_sums(a, b, true);
  for (std::size_t i = 0; i < cal.sample.size(); ++i) {
    EXPECT_LT(cal.radius[i], cal.radius_hm[i]) << "element " << cal.sample[i];
    const double legal = to_double(fp32, worst[static_cast<std::size_t>(cal.sample[i])]);
    EXPECT_LE(std::fabs(legal - cal.center[i]), cal.radius[i]) << "element " << cal.sample[i];
  }
}

// Which rule catches it depends on K (at K = 8192 the narrow-grid rule, VerdictHeldOut); here
// the verdict and its false-alarm probability are checked, and that legal sums (the sequential
// one, and the worst order for the radius) stay consistent.
TEST(CalibratedRules, Fp32OutputRoundedThroughFp16IsAProbableDefectAndTheSumsAreNot) {
  const auto [a, b] = bf16_operands(8, 1024, 8, 12);
  const MatmulReference ref = matmul_reference(a, b);
  const ClaimSpec claim = parse_claim("--in bf16 --acc fp32 --out fp32");
  for (const bool positive_first : {false, true}) {
    const std::vector<Bits> sums = fp32_sums(a, b, positive_first);
    const CheckResult good = check_matmul(ref, TensorData{&fp32, {8, 8}, sums, "C"}, claim);
    EXPECT_EQ(good.verdict.kind, TensorKind::consistent) << good.text();
    std::vector<Bits> narrow;
    for (const Bits x : sums) narrow.push_back(convert(fp16, fp32, convert(fp32, fp16, x).bits).bits);
    const CheckResult bad = check_matmul(ref, TensorData{&fp32, {8, 8}, narrow, "C"}, claim);
    EXPECT_EQ(bad.verdict.kind, TensorKind::defect) << bad.text();
    EXPECT_TRUE(bad.verdict.probable) << bad.text();
    EXPECT_LE(bad.verdict.false_alarm_probability, 1e-9) << bad.text();
  }
}

TEST(TrustChecks, NanWhereExactIsNanIsBitExact) {
  // exp(NaN) = NaN: a NaN output (another payload) is the exact result.
  TensorData x{&fp32, {1}, {Bits{0x7fc00001}}, "x"}, c{&fp32, {1}, {Bits{0x7fc00000}}, "c"};
  const CheckResult r = check_rows(RowOp::exp, x, c, parse_claim("--in fp32 --out fp32 --ulps 1"));
  EXPECT_EQ(r.verdict.counts[0], 1) << r.text();
  EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();
}

TEST(TrustChecks, EmptyOutputIsNothingToCheck) {
  TensorData a{&bf16, {0, 4}, {}, "a"}, b{&bf16, {4, 3}, std::vector<Bits>(12, Bits{0x3f80}), "b"};
  TensorData c{&bf16, {0, 3}, {}, "c"};
  EXPECT_THROW(check_matmul(a, b, c, parse_claim("--in bf16 --out bf16")), InputError);
}

TEST(TrustChecks, RowOpsCompareShapes) {
  TensorData x{&fp32, {8, 16}, std::vector<Bits>(128, Bits{0x3f800000}), "x"};
  TensorData c{&fp32, {4, 32}, std::vector<Bits>(128, Bits{0x402df854}), "c"};
  EXPECT_THROW(check_rows(RowOp::exp, x, c, parse_claim("--in fp32 --out fp32 --ulps 1")), InputError);
}

}  // namespace
}  // namespace numfid
