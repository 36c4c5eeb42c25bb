// Tests of next_up/next_down/ulp/ordinal/ulp_distance: exhaustive over every format of at most
// 19 bits against a deliberately naive oracle (all values sorted by to_double), boundary
// cases as bit patterns, and fp32 samples against the C library's nextafterf.
#include "formats/ulp.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace numfid {
namespace {

std::string describe(const FormatSpec& f, Bits b) { return fmt::format("{} ({})", to_hex(f, b), to_double(f, b)); }
std::string describe(const FormatSpec& f, std::optional<Bits> b) { return b ? describe(f, *b) : "none"; }

/// The naive oracle: every non-NaN value of the format, sorted and deduplicated (-0 == +0),
/// and for each value the pattern(s) that hold it.
struct NaiveOrder {
  std::vector<double> values;
  std::map<double, std::vector<std::uint32_t>> patterns;  // -0.0 and 0.0 share one key

  explicit NaiveOrder(const FormatSpec& f) {
    for (std::uint64_t raw = 0; raw <= storage_mask(f); ++raw) {
      const double v = to_double(f, Bits{static_cast<std::uint32_t>(raw)});
      if (std::isnan(v)) continue;
      values.push_back(v);
      patterns[v].push_back(static_cast<std::uint32_t>(raw));
    }
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
  }
  std::int64_t index(double v) const {
    return std::lower_bound(values.begin(), values.end(), v) - values.begin();
  }
  bool has_zero() const { return patterns.count(0.0) != 0; }
  /// The pattern of a non-zero value (unique), or of the zero of the requested sign.
  Bits pattern(const FormatSpec& f, double v, bool negative_zero) const {
    if (v == 0) return zero(f, negative_zero);
    return Bits{patterns.at(v).front()};
  }
};

struct Failures {
  int count = 0;
  bool report() { return ++count <= 10; }  // ADD_FAILURE for the first 10 only
};

/// Formats small enough to sweep every pattern (8/16-bit floats, fp6, fp4, tf32, ints).
std::vector<const FormatSpec*> sweepable() {
  std::vector<const FormatSpec*> out;
  for (const FormatSpec* f : all_formats)
    if (f->bits <= 19) out.push_back(f);
  return out;
}

TEST(UlpExhaustive, NeighboursMatchNaiveOrder) {
  for (const FormatSpec* fp : sweepable()) {
    const FormatSpec& f = *fp;
    SCOPED_TRACE(std::string(f.name));
    const NaiveOrder naive(f);
    const auto n = static_cast<std::int64_t>(naive.values.size());
    Failures fails;
    for (std::uint64_t raw = 0; raw <= storage_mask(f); ++raw) {
      const Bits x{static_cast<std::uint32_t>(raw)};
      const double v = to_double(f, x);
      std::optional<Bits> want_up;
      std::optional<Bits> want_down;
      if (!std::isnan(v)) {
        const std::int64_t i = naive.index(v);
        // IEEE nextUp(-least positive) = -0 and nextDown(+least positive) = +0: the zero
        // takes the sign of the value it was reached from.
        if (i + 1 < n) want_up = naive.pattern(f, naive.values[static_cast<std::size_t>(i + 1)], v < 0);
        else if (std::isinf(v)) want_up = x;
        if (i > 0) want_down = naive.pattern(f, naive.values[static_cast<std::size_t>(i - 1)], v < 0);
        else if (std::isinf(v)) want_down = x;
      }
      const std::optional<Bits> up = next_up(f, x);
      const std::optional<Bits> down = next_down(f, x);
      if (up != want_up && fails.report())
        ADD_FAILURE() << "next_up(" << describe(f, x) << ") = " << describe(f, up) << ", want " << describe(f, want_up);
      if (down != want_down && fails.report())
        ADD_FAILURE() << "next_down(" << describe(f, x) << ") = " << describe(f, down) << ", want "
                      << describe(f, want_down);
    }
    EXPECT_EQ(fails.count, 0) << "failures in " << f.name;
  }
}

TEST(UlpExhaustive, UlpIsGapAboveMagnitude) {
  for (const FormatSpec* fp : sweepable()) {
    const FormatSpec& f = *fp;
    SCOPED_TRACE(std::string(f.name));
    const NaiveOrder naive(f);
    std::vector<double> finite;
    for (double v : naive.values)
      if (std::isfinite(v) && v >= 0) finite.push_back(v);
    // Naive ulp of a finite magnitude a: the gap to the next larger finite value; at max
    // finite, the gap below it (doubled if max is a power of two, where the gap below is
    // half the binade's spacing: E8M0).
    auto naive_ulp = [&](double a) {
      const auto j = static_cast<std::size_t>(std::lower_bound(finite.begin(), finite.end(), a) - finite.begin());
      if (j + 1 < finite.size()) return finite[j + 1] - a;
      const double below = a - finite[j - 1];
      int e = 0;
      return std::frexp(a, &e) == 0.5 ? 2 * below : below;
    };
    Failures fails;
    for (std::uint64_t raw = 0; raw <= storage_mask(f); ++raw) {
      const Bits x{static_cast<std::uint32_t>(raw)};
      const double v = to_double(f, x);
      const double got = ulp(f, x);
      if (std::isnan(v)) {
        if (!std::isnan(got) && fails.report()) ADD_FAILURE() << "ulp(" << describe(f, x) << ") = " << got;
        continue;
      }
      // Integers are spaced 1 apart everywhere (int8's -128 has no positive mirror).
      const double want = !is_float(f) ? 1.0 : std::isinf(v) ? naive_ulp(finite.back()) : naive_ulp(std::fabs(v));
      if (got != want && fails.report())
        ADD_FAILURE() << fmt::format("ulp({}) = {:a}, want {:a}", describe(f, x), got, want);
      if (ulp_exponent(f, x) != std::ilogb(want) && fails.report())
        ADD_FAILURE() << "ulp_exponent(" << describe(f, x) << ") disagrees with ulp " << want;
    }
    EXPECT_EQ(fails.count, 0) << "failures in " << f.name;
  }
}

TEST(UlpExhaustive, OrdinalAndDistanceMatchSortedIndex) {
  for (const FormatSpec* fp : sweepable()) {
    const FormatSpec& f = *fp;
    SCOPED_TRACE(std::string(f.name));
    const NaiveOrder naive(f);
    const std::int64_t origin = naive.has_zero() ? naive.index(0.0) : 0;
    Failures fails;
    std::vector<Bits> all;
    for (std::uint64_t raw = 0; raw <= storage_mask(f); ++raw) all.push_back(Bits{static_cast<std::uint32_t>(raw)});
    for (Bits x : all) {
      const double v = to_double(f, x);
      const std::optional<std::int64_t> got = ordinal(f, x);
      if (std::isnan(v)) {
        if (got && fails.report()) ADD_FAILURE() << "ordinal(" << describe(f, x) << ") = " << *got << ", want none";
        continue;
      }
      const std::int64_t want = naive.index(v) - origin;
      if (got != want && fails.report())
        ADD_FAILURE() << "ordinal(" << describe(f, x) << ") = " << (got ? std::to_string(*got) : "none")
                      << ", want " << want;
    }
    // Distances: every pair for formats of at most 8 bits; every value against a set of
    // anchors (zeros, ±1, extremes, a NaN) for the wider ones.
    std::vector<Bits> anchors = all;
    if (f.bits > 8) {
      anchors = {Bits{0}, Bits{1}, max_finite_bits(f, false), max_finite_bits(f, true), infinity(f, true),
                 canonical_nan(f), zero(f, true)};
      for (double one : {1.0, -1.0})
        if (naive.patterns.count(one)) anchors.push_back(Bits{naive.patterns.at(one).front()});
    }
    for (Bits a : anchors) {
      SCOPED_TRACE(describe(f, a));
      const double va = to_double(f, a);
      for (Bits b : all) {
        const double vb = to_double(f, b);
        const std::optional<std::uint64_t> got = ulp_distance(f, a, b);
        if (std::isnan(va) || std::isnan(vb)) {
          if (got && fails.report())
            ADD_FAILURE() << "ulp_distance(" << describe(f, a) << ", " << describe(f, b) << ") = " << *got
                          << ", want none";
          continue;
        }
        const std::int64_t d = naive.index(va) - naive.index(vb);
        const auto want = static_cast<std::uint64_t>(d < 0 ? -d : d);
        if (got != want && fails.report())
          ADD_FAILURE() << "ulp_distance(" << describe(f, a) << ", " << describe(f, b)
                        << ") = " << (got ? std::to_string(*got) : "none") << ", want " << want;
      }
    }
    EXPECT_EQ(fails.count, 0) << "failures in " << f.name;
  }
}

// --- boundary cases, as bit patterns (expected values from the format definitions) ------

struct Case {
  const FormatSpec* f;
  std::uint32_t x;
  std::optional<std::uint32_t> up;
  std::optional<std::uint32_t> down;
  std::optional<int> ulp_exp;
};

std::optional<std::uint32_t> raw_of(std::optional<Bits> b) {
  return b ? std::optional<std::uint32_t>(b->raw) : std::nullopt;
}

// max_finite, min_normal and min_positive scale by one ldexp at run time and by a loop in
// constant evaluation (the static_asserts of format_spec.h): the run-time values are checked
// here against the format's own patterns, decoded — the largest finite value and the smallest
// positive one found by sweeping every pattern, the least normal one as the smallest positive
// value with a non-zero exponent field — and fp32 against <cfloat>'s limits.
TEST(FormatLimits, RunTimeValuesAreTheDecodedExtremes) {
  for (const FormatSpec* f : sweepable()) {
    if (f->kind != FormatKind::binary_float) continue;
    SCOPED_TRACE(f->name);
    const int frac = f->precision - 1;
    double largest = 0, smallest = INFINITY, least_normal = INFINITY;
    for (std::uint64_t raw = 0; raw <= storage_mask(*f); ++raw) {
      const double v = to_double(*f, Bits{static_cast<std::uint32_t>(raw)});
      if (!std::isfinite(v) || v <= 0) continue;
      largest = std::max(largest, v);
      smallest = std::min(smallest, v);
      if (((raw >> frac) & ((std::uint64_t{1} << f->exponent_bits) - 1)) != 0) least_normal = std::min(least_normal, v);
    }
    EXPECT_EQ(max_finite(*f), largest) << fmt::format("{:a} vs {:a}", max_finite(*f), largest);
    EXPECT_EQ(min_positive(*f), smallest) << fmt::format("{:a} vs {:a}", min_positive(*f), smallest);
    if (f->has_subnormals) {
      EXPECT_EQ(min_normal(*f), least_normal) << fmt::format("{:a} vs {:a}", min_normal(*f), least_normal);
    }
  }
  EXPECT_EQ(max_finite(fp32), static_cast<double>(FLT_MAX));
  EXPECT_EQ(min_normal(fp32), static_cast<double>(FLT_MIN));
  EXPECT_EQ(min_positive(fp32), static_cast<double>(FLT_TRUE_MIN));
}

TEST(UlpBoundaries, Table) {
  constexpr auto none = std::nullopt;
  const Case cases[] = {
      // fp32: zeros, least subnormal, 1.0, max finite, infinities, NaN.
      {&fp32, 0x00000000, 0x00000001, 0x80000001, -149},
      {&fp32, 0x80000000, 0x00000001, 0x80000001, -149},
      {&fp32, 0x80000001, 0x80000000, 0x80000002, -149},
      {&fp32, 0x00000001, 0x00000002, 0x00000000, -149},
      {&fp32, 0x007fffff, 0x00800000, 0x007ffffe, -149},
      {&fp32, 0x00800000, 0x00800001, 0x007fffff, -149},
      {&fp32, 0x3f800000, 0x3f800001, 0x3f7fffff, -23},
      {&fp32, 0x7f7fffff, 0x7f800000, 0x7f7ffffe, 104},
      {&fp32, 0x7f800000, 0x7f800000, 0x7f7fffff, 104},
      {&fp32, 0xff800000, 0xff7fffff, 0xff800000, 104},
      {&fp32, 0xff7fffff, 0xff7ffffe, 0xff800000, 104},
      {&fp32, 0x7fc00000, none, none, none},
      {&int32, 0x7fffffff, none, 0x7ffffffe, 0},
      {&int32, 0x80000000, 0x80000001, none, 0},
      {&int32, 0xffffffff, 0x00000000, 0xfffffffe, 0},
      // OCP E4M3FN: max 0x7e = 448 has no neighbour above (no inf); 0x7f is NaN.
      {&fp8_e4m3, 0x7e, none, 0x7d, 5},
      {&fp8_e4m3, 0xfe, 0xfd, none, 5},
      {&fp8_e4m3, 0x7f, none, none, none},
      {&fp8_e4m3, 0x80, 0x01, 0x81, -9},
      {&fp8_e4m3, 0x81, 0x80, 0x82, -9},
      {&fp8_e4m3, 0x08, 0x09, 0x07, -9},  // 2^-6, least normal: spacing as the subnormals
      // OCP E5M2: max 0x7b = 57344, then inf 0x7c.
      {&fp8_e5m2, 0x7b, 0x7c, 0x7a, 13},
      {&fp8_e5m2, 0x7c, 0x7c, 0x7b, 13},
      {&fp8_e5m2, 0xfc, 0xfb, 0xfc, 13},
      {&fp8_e5m2, 0x3c, 0x3d, 0x3b, -2},  // 1.0
      // FNUZ: one zero 0x00, NaN 0x80; -least positive 0x81 steps up to +0.
      {&fp8_e4m3fnuz, 0x00, 0x01, 0x81, -10},
      {&fp8_e4m3fnuz, 0x81, 0x00, 0x82, -10},
      {&fp8_e4m3fnuz, 0x01, 0x02, 0x00, -10},
      {&fp8_e4m3fnuz, 0x80, none, none, none},
      {&fp8_e4m3fnuz, 0x7f, none, 0x7e, 4},  // 240
      {&fp8_e5m2fnuz, 0xff, 0xfe, none, 13},
      // E8M0: no sign, no zero; 0x00 = 2^-127 is the least, 0xfe = 2^127 the greatest.
      {&e8m0, 0x00, 0x01, none, -127},
      {&e8m0, 0x7f, 0x80, 0x7e, 0},
      {&e8m0, 0xfe, none, 0xfd, 127},
      {&e8m0, 0xff, none, none, none},
      // FP6/FP4: finite only.
      {&fp6_e2m3, 0x1f, none, 0x1e, -1},  // 7.5
      {&fp6_e3m2, 0x3f, 0x3e, none, 2},   // -28
      {&fp4_e2m1, 0x7, none, 0x6, 1},     // 6.0
      {&fp4_e2m1, 0x8, 0x1, 0x9, -1},     // -0
      {&fp4_e2m1, 0x1, 0x2, 0x0, -1},     // 0.5
      {&fp4_e2m1, 0xf, 0xe, none, 1},     // -6.0
      {&int8, 0x7f, none, 0x7e, 0},
      {&int8, 0x80, 0x81, none, 0},
      {&int8, 0xff, 0x00, 0xfe, 0},
      {&uint8, 0x00, 0x01, none, 0},
      {&uint8, 0xff, none, 0xfe, 0},
  };
  for (const Case& c : cases) {
    const FormatSpec& f = *c.f;
    const Bits x{c.x};
    SCOPED_TRACE(fmt::format("{} {}", f.name, describe(f, x)));
    EXPECT_EQ(raw_of(next_up(f, x)), c.up);
    EXPECT_EQ(raw_of(next_down(f, x)), c.down);
    EXPECT_EQ(ulp_exponent(f, x), c.ulp_exp);
  }
}

TEST(UlpBoundaries, Distances) {
  EXPECT_EQ(ulp_distance(fp32, Bits{0x80000001}, Bits{0x00000001}), 2u);  // across ±0, one value
  EXPECT_EQ(ulp_distance(fp32, Bits{0x80000000}, Bits{0x00000000}), 0u);
  EXPECT_EQ(ulp_distance(fp32, Bits{0x7f7fffff}, Bits{0x7f800000}), 1u);
  EXPECT_EQ(ulp_distance(fp32, Bits{0xff800000}, Bits{0x7f800000}), 2u * 0x7f800000u);
  EXPECT_EQ(ulp_distance(fp32, Bits{0x3f800000}, Bits{0x40000000}), 0x800000u);  // one binade
  EXPECT_EQ(ulp_distance(fp32, Bits{0x7fc00000}, Bits{0}), std::nullopt);
  EXPECT_EQ(ulp_distance(fp8_e4m3fnuz, Bits{0x81}, Bits{0x01}), 2u);
  EXPECT_EQ(ulp_distance(fp8_e4m3, Bits{0xfe}, Bits{0x7e}), 2u * 126u);
  EXPECT_EQ(ulp_distance(e8m0, Bits{0x00}, Bits{0xfe}), 254u);
  EXPECT_EQ(ulp_distance(int32, Bits{0x80000000}, Bits{0x7fffffff}), 0xffffffffu);
  EXPECT_EQ(ordinal(fp32, Bits{0xff800000}), -std::int64_t{0x7f800000});
  EXPECT_EQ(ordinal(fp8_e4m3, Bits{0x7f}), std::nullopt);
}

// --- fp32: samples against the C library (an independent implementation of nextafter) ---

TEST(UlpFp32, RandomAgainstNextafterf) {
  std::mt19937_64 rng(20260101);  // fixed seed: reproducible
  Failures fails;
  for (int i = 0; i < 200000; ++i) {
    const Bits x{static_cast<std::uint32_t>(rng())};
    const float v = std::bit_cast<float>(x.raw);
    if (std::isnan(v)) continue;
    const auto up = next_up(fp32, x);
    const auto down = next_down(fp32, x);
    const float want_up = std::nextafter(v, INFINITY);
    const float want_down = std::nextafter(v, -INFINITY);
    if ((!up || std::bit_cast<float>(up->raw) != want_up || std::signbit(std::bit_cast<float>(up->raw)) != std::signbit(want_up)) &&
        fails.report())
      ADD_FAILURE() << "next_up(" << describe(fp32, x) << ") = " << describe(fp32, up) << ", want " << want_up;
    if ((!down || std::bit_cast<float>(down->raw) != want_down) && fails.report())
      ADD_FAILURE() << "next_down(" << describe(fp32, x) << ") = " << describe(fp32, down) << ", want " << want_down;
    const float a = std::fabs(v);
    if (std::isfinite(a) && a < 0x1.fffffep127f) {
      const double gap = static_cast<double>(std::nextafter(a, INFINITY)) - static_cast<double>(a);
      if (ulp(fp32, x) != gap && fails.report())
        ADD_FAILURE() << fmt::format("ulp({}) = {:a}, want {:a}", describe(fp32, x), ulp(fp32, x), gap);
    }
  }
  EXPECT_EQ(fails.count, 0);
}

}  // namespace
}  // namespace numfid
