// detail::WideSum (tolerances/wide_sum_detail.h), the scaled GEMM check's fixed-point element
// sum, against Boost.Multiprecision's integers: every sum rebuilt exactly, then its top 128 bits,
// sticky bit and exponent compared with value() and abs_value(). Random values of every width,
// and values built for long carry and borrow chains (words of all ones, differences of one).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include <boost/multiprecision/cpp_int.hpp>
#include <fmt/format.h>

#include "tolerances/wide_sum_detail.h"

namespace numfid {
namespace {

using boost::multiprecision::cpp_int;

struct Term {
  bool negative;
  uint128 m;
  int e;
};

cpp_int big(uint128 m) {
  cpp_int x = static_cast<std::uint64_t>(m >> 64);
  x <<= 64;
  x += static_cast<std::uint64_t>(m);
  return x;
}

/// The top 128 bits of x > 0 (its top bit at 127), the sticky bit and the exponent, for x·2^base.
Unrounded naive_top(const cpp_int& x, bool negative, int base) {
  const int t = static_cast<int>(boost::multiprecision::msb(x));
  cpp_int sig = t >= 127 ? cpp_int(x >> (t - 127)) : cpp_int(x << (127 - t));
  const bool sticky = t > 127 && cpp_int(sig << (t - 127)) != x;  // bits below the kept 128
  const uint128 s = (uint128{static_cast<std::uint64_t>(sig >> 64)} << 64) | static_cast<std::uint64_t>(sig & UINT64_MAX);
  return {negative, s, base + t - 127, sticky};
}

std::string text(const Unrounded& u) {
  return fmt::format("{}0x{:016x}{:016x}·2^{}{}", u.negative ? "-" : "+", static_cast<std::uint64_t>(u.significand >> 64),
                     static_cast<std::uint64_t>(u.significand), u.exponent, u.sticky ? " +sticky" : "");
}

TEST(WideSum, SumsEqualExactIntegers) {
  std::mt19937_64 gen(7);
  int failures = 0, zeros = 0, compared = 0;
  for (int c = 0; c < 20000 && failures < 5; ++c) {
    const int base = static_cast<int>(gen() % 600) - 400;
    const int n = 1 + static_cast<int>(gen() % 60);
    const int carry_bits = 6;
    const int kind = c % 4;  // 0 random, 1 all-ones words, 2 pairs differing by one unit, 3 one binade
    std::vector<Term> terms;
    for (int i = 0; i < n; ++i) {
      const int width = 1 + static_cast<int>(gen() % 128);
      uint128 m = (uint128{gen()} << 64) | gen();
      if (kind == 1) m = ~uint128{0};
      m = width == 128 ? m : m & ((uint128{1} << width) - 1);
      if (m == 0) m = 1;
      const int span = 512 - carry_bits - 128;
      const int shift = kind == 3 ? static_cast<int>(gen() % 8) : static_cast<int>(gen() % static_cast<unsigned>(span + 1));
      const bool negative = gen() % 2 != 0;
      terms.push_back({negative, m, base + shift});
      if (kind == 2) terms.push_back({!negative, m - (gen() % 2), base + shift});  // equal or one apart
    }
    detail::WideSum w(base, carry_bits);
    cpp_int pos = 0, neg = 0, abs = 0;
    for (const Term& t : terms) {
      ASSERT_TRUE(w.add(t.negative, t.m, t.e));
      ASSERT_TRUE(w.add_abs(t.m, t.e));
      (t.negative ? neg : pos) += big(t.m) << (t.e - base);
      abs += big(t.m) << (t.e - base);
    }
    SCOPED_TRACE(fmt::format("case {} (kind {}): {} values from 2^{}", c, kind, terms.size(), base));
    Unrounded v;
    const bool nonzero = w.value(v);
    if (pos == neg) {
      ++zeros;
      EXPECT_FALSE(nonzero) << "an exact zero";
    } else {
      cpp_int d = pos > neg ? pos : neg;
      d -= pos > neg ? neg : pos;
      const Unrounded want = naive_top(d, neg > pos, base);
      ++compared;
      if (!nonzero || v.negative != want.negative || v.significand != want.significand || v.exponent != want.exponent ||
          v.sticky != want.sticky) {
        ++failures;
        ADD_FAILURE() << "sum " << (nonzero ? text(v) : "zero") << ", exact " << text(want);
      }
    }
    const Unrounded a = w.abs_value(), want_abs = naive_top(abs, false, base);
    if (a.significand != want_abs.significand || a.exponent != want_abs.exponent || a.sticky != want_abs.sticky) {
      ++failures;
      ADD_FAILURE() << "Σ|·| " << text(a) << ", exact " << text(want_abs);
    }
  }
  EXPECT_GT(zeros, 30);  // kind 2 where every pair is equal: the sum cancels exactly
  EXPECT_GT(compared, 15000);
}

TEST(WideSum, RefusesWhatDoesNotFitAndAddsNothing) {
  detail::WideSum w(-10, 4);  // room up to bit 508
  ASSERT_TRUE(w.add(false, 5, -10));
  EXPECT_FALSE(w.add(false, 1, -11)) << "below the unit 2^base";
  EXPECT_FALSE(w.add(true, uint128{1} << 100, -10 + 408)) << "bits up to 509";
  EXPECT_FALSE(w.add_abs(3, -12));
  EXPECT_TRUE(w.add(true, uint128{1} << 100, -10 + 407)) << "bits up to 508";
  EXPECT_TRUE(w.add(false, 0, -1000)) << "zero adds nothing, wherever";
  Unrounded v;
  ASSERT_TRUE(w.value(v));
  cpp_int x = cpp_int(1) << 507;
  x -= 5;
  const Unrounded want = naive_top(x, true, -10);
  EXPECT_EQ(v.significand, want.significand);
  EXPECT_EQ(v.exponent, want.exponent);
  EXPECT_EQ(v.sticky, want.sticky);
  EXPECT_TRUE(v.negative);
}

}  // namespace
}  // namespace numfid
