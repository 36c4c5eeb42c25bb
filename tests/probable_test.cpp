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
