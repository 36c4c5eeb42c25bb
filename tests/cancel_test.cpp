// Cooperative cancellation (tolerances/cancel.h): a poll that says stop ends check_matmul,
// check_dot and check_sum with Cancelled after a bounded number of polls; a poll that never
// says stop changes nothing; scopes nest and are removed when they end.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tolerances/cancel.h"
#include "tolerances/check.h"

namespace numfid {
namespace {

/// An M×K bf16 tensor of small integers (exact in every accumulator).
TensorData ints(std::int64_t rows, std::int64_t cols, const char* name) {
  std::vector<float> v(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
  return view(std::span<const float>(v), {rows, cols}, "bf16", name);
}

TEST(Cancel, StopsAMatmulCheckAtTheNextRow) {
  const TensorData a = ints(64, 16, "A"), b = ints(16, 8, "B"), c = ints(64, 8, "C");
  const ClaimSpec claim = parse_claim("--in bf16 --acc fp32 --out bf16");
  int polls = 0;
  const CancelScope scope([&] { return ++polls >= 3; });
  EXPECT_THROW(check_matmul(a, b, c, claim), Cancelled);
  EXPECT_EQ(polls, 3) << "the third poll said stop: nothing after it may run";
}

TEST(Cancel, StopsDotAndSum) {
  const TensorData a = ints(64, 16, "A"), d = ints(64, 1, "D");
  const ClaimSpec claim = parse_claim("--in bf16 --acc fp32 --out bf16");
  const CancelScope scope([] { return true; });
  EXPECT_THROW(check_dot(a, a, d, claim), Cancelled);
  EXPECT_THROW(check_sum(a, ints(1, 16, "C"), 0, claim), Cancelled);
}

TEST(Cancel, APollThatNeverStopsChangesNothingAndScopesNest) {
  const TensorData a = ints(8, 16, "A"), b = ints(16, 4, "B");
  const ClaimSpec claim = parse_claim("--in bf16 --acc fp32 --out bf16");
  // C: the exact products (small integers) rounded to bf16 exactly: consistent.
  const TensorData exact = emulate_matmul(a, b, std::nullopt, parse_claim("--in bf16 --plan sequential --out bf16"));
  const CheckResult plain = check_matmul(a, b, exact, claim);
  int outer_polls = 0, inner_polls = 0;
  {
    const CancelScope outer([&] { return ++outer_polls < 0; });
    {
      const CancelScope inner([&] { return ++inner_polls < 0; });
      EXPECT_EQ(check_matmul(a, b, exact, claim).json(), plain.json());
    }
    EXPECT_GT(inner_polls, 0);
    EXPECT_EQ(outer_polls, 0) << "the inner scope replaces the outer one while it lives";
    EXPECT_EQ(check_matmul(a, b, exact, claim).json(), plain.json());
    EXPECT_GT(outer_polls, 0) << "the outer scope is back when the inner one ends";
  }
  const int before = outer_polls;
  check_cancelled();  // no scope: nothing to poll
  EXPECT_EQ(outer_polls, before);
  EXPECT_EQ(plain.verdict.kind, TensorKind::consistent) << plain.text();
}

}  // namespace
}  // namespace numfid
