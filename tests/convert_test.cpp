// Tests of formats/convert against the MPFR oracle (tests/support): every pattern of every
// format of at most 16 bits into every format, every rounding mode, both overflow modes,
// FTZ and DAZ; fp32 values at and around every target value and its midpoints; seeded
// random fp32 patterns; every tf32 pattern. Also self-checks of the oracle and the naive
// codec against facts quoted by the specs.
#include "formats/convert.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tests/support/mpfr_oracle.h"
#include "tests/support/naive_codec.h"
#include "tests/support/sweep.h"

namespace numfid {
namespace {

using test::naive_decode;
using test::NanPolicy;
using test::Rounded;
using test::show;
using test::Sweep;

constexpr std::array<Rounding, 5> kModes{Rounding::rne, Rounding::rtz, Rounding::rup, Rounding::rdn, Rounding::rna};

std::string pname(const FormatSpec& f) { return std::string(f.name); }

Bits fp32_bits(float v) { return Bits{std::bit_cast<std::uint32_t>(v)}; }

/// Checks convert(from, to, x) under mode `r` and every overflow x FTZ x DAZ variant
/// against the oracle. MPFR rounds once per case (once more for a subnormal input under
/// DAZ): the variants only change what oracle_finish does with the outcome.
void check_variants(Sweep& sweep, const FormatSpec& from, const FormatSpec& to, Bits x, Rounding r) {
  const double v = naive_decode(from, x);
  const Rounded rd = test::oracle_round_value(to, v, r);
  const bool subnormal = test::naive_is_subnormal(from, x);
  const Rounded rd_daz = subnormal ? test::oracle_round_value(to, std::copysign(0.0, v), r) : rd;
  for (const Overflow ovf : {Overflow::ieee, Overflow::saturate}) {
    for (const bool ftz : {false, true}) {
      for (const bool daz : {false, true}) {
        const RoundOptions o{r, ovf, ftz, daz, 0, 0};
        const Rounded& used = daz ? rd_daz : rd;
        const Result want = test::oracle_finish(to, used, o);
        const Result got = convert(from, to, x, o);
        sweep.check(to, want, got, test::checked_flags(to, used), NanPolicy::same_sign, [&] {
          return fmt::format("convert {} -> {} {} of {}", from.name, to.name, test::options_name(o), show(from, x));
        });
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// Self-checks of the oracle's parts.

TEST(NaiveCodec, AgreesWithNumfidDecodeAndRoundTrips) {
  // Two independent readings of the same field layout must agree on every pattern; the
  // naive encoder must invert the naive decoder.
  for (const FormatSpec* fp : all_formats) {
    const FormatSpec& f = *fp;
    if (f.bits > 19) continue;
    SCOPED_TRACE(pname(f));
    for (std::uint32_t raw = 0; raw <= storage_mask(f); ++raw) {
      const Bits x{raw};
      const double a = naive_decode(f, x);
      const double b = to_double(f, x);
      const bool same =
          (std::isnan(a) && std::isnan(b)) || std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
      if (!same) ADD_FAILURE() << show(f, x) << " numfid to_double " << b;
      if (std::isfinite(a)) {
        const Bits back = test::naive_encode(f, a);
        if (back != x) ADD_FAILURE() << show(f, x) << " re-encodes to " << show(f, back);
      }
    }
  }
}

TEST(NaiveCodec, AgreesWithToDoubleOnFp32Patterns) {
  // fp32 is too wide for the sweep above; to_double takes it (and bf16) through the hardware's
  // float, so compare with the naive field reading on its boundaries and 2^20 seeded patterns.
  std::vector<std::uint32_t> raws = {0x00000000, 0x00000001, 0x007fffff, 0x00800000, 0x00800001, 0x3f800000,
                                     0x7f7fffff, 0x7f800000, 0x7f800001, 0x7fc00000, 0x7fffffff};
  for (std::size_t i = 0, n = raws.size(); i < n; ++i) raws.push_back(raws[i] | 0x80000000u);
  std::mt19937 g(20261202);
  for (int i = 0; i < (1 << 20); ++i) raws.push_back(static_cast<std::uint32_t>(g()));
  int failures = 0;
  for (const std::uint32_t raw : raws) {
    const double a = naive_decode(fp32, Bits{raw});
    const double b = to_double(fp32, Bits{raw});
    const bool same = (std::isnan(a) && std::isnan(b)) || std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
    if (!same && ++failures <= 5) ADD_FAILURE() << show(fp32, Bits{raw}) << " numfid to_double " << b;
  }
}

TEST(NaiveCodec, LimitsMatchTheSpecs) {
  // The limits the specs quote (OFP8 §5.1 Table 1, MX §5.3 and §5.4.1, IEEE 754 Table 3.5).
  struct Row {
    const FormatSpec* f;
    double max, min_normal, min_positive;
  };
  const Row rows[] = {
      {&fp32, 0x1.fffffep127, 0x1p-126, 0x1p-149},
      {&fp16, 65504, 0x1p-14, 0x1p-24},
      {&bf16, 0x1.fep127, 0x1p-126, 0x1p-133},
      {&tf32, 0x1.ffcp127, 0x1p-126, 0x1p-136},
      {&fp8_e4m3, 448, 0x1p-6, 0x1p-9},
      {&fp8_e5m2, 57344, 0x1p-14, 0x1p-16},
      {&fp8_e4m3fnuz, 240, 0x1p-7, 0x1p-10},
      {&fp8_e5m2fnuz, 57344, 0x1p-15, 0x1p-17},
      {&fp6_e3m2, 28, 0x1p-2, 0x1p-4},
      {&fp6_e2m3, 7.5, 1, 0.125},
      {&fp4_e2m1, 6, 1, 0.5},
      {&e8m0, 0x1p127, 0x1p-127, 0x1p-127},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(pname(*r.f));
    const test::NaiveLimits& l = test::naive_limits(*r.f);
    EXPECT_EQ(l.max_finite, r.max);
    EXPECT_EQ(l.min_normal, r.min_normal);
    EXPECT_EQ(l.min_positive, r.min_positive);
  }
}

TEST(Oracle, MpfrPrecisionOneTiesGoAway) {
  // E8M0 has precision 1: a tie between 2^k and 2^(k+1) has no "even" neighbour. The oracle
  // relies on MPFR's RNDN rounding such ties away from zero (the policy numfid also has:
  // its kept significand 1 is odd, so ties round up). If this fails, MPFR changed and the
  // E8M0 tie policy has to be implemented explicitly in mpfr_oracle.cpp.
  for (int k = -130; k <= 130; k += 7) {
    const double tie = std::ldexp(1.5, k);
    EXPECT_EQ(test::mpfr_round_to_precision(tie, 1), std::ldexp(1.0, k + 1)) << "k=" << k;
    EXPECT_EQ(test::mpfr_round_to_precision(-tie, 1), -std::ldexp(1.0, k + 1)) << "k=" << k;
  }
}

TEST(Oracle, SpecExamples) {
  // Results quoted by the specs or derivable by hand, checked against the oracle (so that a
  // wrong oracle cannot silently agree with a wrong numfid) and against numfid.
  struct Case {
    const FormatSpec* to;
    float in;
    Rounding r;
    Overflow ovf;
    std::uint32_t want;
  };
  const Case cases[] = {
      {&fp8_e4m3, 464, Rounding::rne, Overflow::ieee, 0x7e},  // OFP8: the tie 464 rounds to 448
      {&fp8_e4m3, 464, Rounding::rna, Overflow::ieee, 0x7f},  // away: 480 overflows -> NaN
      {&fp8_e4m3, 464, Rounding::rna, Overflow::saturate, 0x7e},
      {&fp8_e4m3, 1e6f, Rounding::rtz, Overflow::ieee, 0x7e},   // toward zero: max
      {&fp8_e4m3, -1e6f, Rounding::rup, Overflow::ieee, 0xfe},  // toward zero: -max
      {&fp8_e4m3, -1e6f, Rounding::rdn, Overflow::ieee, 0xff},  // away: -NaN
      {&fp8_e5m2, 61440, Rounding::rne, Overflow::ieee, 0x7c},  // tie above max -> inf
      {&fp8_e5m2, 61439, Rounding::rne, Overflow::ieee, 0x7b},
      {&fp8_e4m3fnuz, -0x1p-12f, Rounding::rne, Overflow::ieee, 0x00},  // no -0
      {&fp8_e4m3fnuz, 1e6f, Rounding::rne, Overflow::ieee, 0x80},       // NaN
      {&fp16, 65520, Rounding::rne, Overflow::ieee, 0x7c00},
      {&fp16, 65519.996f, Rounding::rne, Overflow::ieee, 0x7bff},
      {&fp16, 0x1p-25f, Rounding::rne, Overflow::ieee, 0x0000},  // tie with 0: even
      {&fp16, 0x1p-25f, Rounding::rna, Overflow::ieee, 0x0001},
      {&fp16, 0x1.000002p-25f, Rounding::rne, Overflow::ieee, 0x0001},
      {&bf16, 0x1.03p0f, Rounding::rne, Overflow::ieee, 0x3f82},  // tie 0x3f81 | 0x3f82: even up
      {&bf16, 0x1.01p0f, Rounding::rne, Overflow::ieee, 0x3f80},  // tie 0x3f80 | 0x3f81: even down
      {&bf16, 0x1.01p0f, Rounding::rna, Overflow::ieee, 0x3f81},
      {&bf16, 0x1.01p0f, Rounding::rtz, Overflow::ieee, 0x3f80},
      {&bf16, -0x1.01p0f, Rounding::rdn, Overflow::ieee, 0xbf81},
      {&fp4_e2m1, 0.25f, Rounding::rne, Overflow::ieee, 0x0},  // tie 0 | 0.5: even 0
      {&fp4_e2m1, 0.25f, Rounding::rna, Overflow::ieee, 0x1},
      {&fp4_e2m1, 0.75f, Rounding::rne, Overflow::ieee, 0x2},   // tie 0.5 | 1: even 1.0
      {&fp4_e2m1, 5.0f, Rounding::rne, Overflow::ieee, 0x6},    // tie 4 | 6: even 4
      {&fp4_e2m1, 7.0f, Rounding::rne, Overflow::ieee, 0x7},    // tie 6 | (8): 8 overflows -> max
      {&fp4_e2m1, 100.0f, Rounding::rne, Overflow::ieee, 0x7},  // MX: clamp to max
      {&fp4_e2m1, -100.0f, Rounding::rup, Overflow::ieee, 0xf},
      {&fp6_e2m3, 7.75f, Rounding::rne, Overflow::ieee, 0x1f},  // 7.75: tie 7.5 | 8 -> 8 overflows -> max
      {&e8m0, 0.0f, Rounding::rne, Overflow::ieee, 0x00},       // no zero: 2^-127
      {&e8m0, 0x1.8p0f, Rounding::rne, Overflow::ieee, 0x80},   // tie 1 | 2: larger (policy above)
      {&e8m0, 0x1.7p0f, Rounding::rne, Overflow::ieee, 0x7f},
      {&e8m0, -1.0f, Rounding::rne, Overflow::ieee, 0xff},  // unsigned: NaN
      {&e8m0, 0x1p-140f, Rounding::rup, Overflow::ieee, 0x00},
      {&e8m0, 0x1.8p127f, Rounding::rne, Overflow::ieee, 0xff},  // tie 2^127 | 2^128: overflow -> NaN
      {&e8m0, 0x1.8p127f, Rounding::rne, Overflow::saturate, 0xfe},
      {&int8, 127.5f, Rounding::rne, Overflow::ieee, 0x7f},   // 128 saturates
      {&int8, -128.5f, Rounding::rne, Overflow::ieee, 0x80},  // tie: even -128
      {&int8, -128.5f, Rounding::rna, Overflow::ieee, 0x80},  // -129 saturates
      {&int8, 2.5f, Rounding::rne, Overflow::ieee, 0x02},
      {&int8, 2.5f, Rounding::rna, Overflow::ieee, 0x03},
      {&int8, -2.5f, Rounding::rdn, Overflow::ieee, 0xfd},
      {&uint8, -0.5f, Rounding::rne, Overflow::ieee, 0x00},
      {&uint8, -0.75f, Rounding::rne, Overflow::ieee, 0x00},  // -1 saturates to 0
      {&uint8, 255.5f, Rounding::rtz, Overflow::ieee, 0xff},
      {&int32, -0x1p31f, Rounding::rne, Overflow::ieee, 0x80000000},
      {&int32, 0x1p31f, Rounding::rne, Overflow::ieee, 0x7fffffff},
  };
  for (const Case& c : cases) {
    const RoundOptions o{c.r, c.ovf, false, false, 0, 0};
    const Result want = test::oracle_convert(fp32, *c.to, fp32_bits(c.in), o);
    const Result got = convert(fp32, *c.to, fp32_bits(c.in), o);
    const std::string what = fmt::format("{:a} -> {} {}", c.in, c.to->name, test::options_name(o));
    EXPECT_TRUE(test::same_bits(*c.to, Bits{c.want}, want.bits, NanPolicy::same_sign))
        << "oracle: " << what << " gives " << show(*c.to, want.bits) << ", spec " << show(*c.to, Bits{c.want});
    EXPECT_TRUE(test::same_bits(*c.to, Bits{c.want}, got.bits, NanPolicy::same_sign))
        << "numfid: " << what << " gives " << show(*c.to, got.bits) << ", spec " << show(*c.to, Bits{c.want});
  }
}

TEST(Oracle, SpecFlags) {
  // Flags by hand: NaN into a format without NaN and integer saturation are invalid; finite
  // overflow is overflow|inexact; a tiny inexact result is underflow|inexact.
  const auto flags = [](const FormatSpec& to, float x, RoundOptions o = {}) {
    return test::oracle_convert(fp32, to, fp32_bits(x), o).status;
  };
  EXPECT_EQ(flags(fp4_e2m1, NAN), status_invalid);
  EXPECT_EQ(flags(int8, NAN), status_invalid);
  EXPECT_EQ(flags(int8, 300), status_invalid);
  EXPECT_EQ(flags(fp8_e5m2, NAN), status_ok);
  EXPECT_EQ(flags(fp8_e4m3, INFINITY), status_invalid);
  EXPECT_EQ(flags(fp8_e4m3, 1000), status_overflow | status_inexact);
  EXPECT_EQ(flags(fp16, 0x1.8p-24f), status_underflow | status_inexact);
  EXPECT_EQ(flags(fp16, 0x1p-24f), status_ok);
  EXPECT_EQ(flags(fp16, 0x1.ff8p-15f, {Rounding::rne, Overflow::ieee, true, false, 0, 0}),
            status_underflow | status_inexact);  // FTZ of an exact subnormal
  EXPECT_EQ(flags(e8m0, -2), status_invalid);
}

// ---------------------------------------------------------------------------------------
// Every pattern of every format of at most 16 bits into every format.

class ConvertFromSmall : public ::testing::TestWithParam<const FormatSpec*> {};

TEST_P(ConvertFromSmall, EveryPatternEveryTargetEveryMode) {
  const FormatSpec& from = *GetParam();
  for (const FormatSpec* to : all_formats) {
    SCOPED_TRACE("to " + pname(*to));
    for (const Rounding r : kModes) {
      SCOPED_TRACE(std::string(rounding_name(r)));
      Sweep sweep(fmt::format("{} -> {} {}", from.name, to->name, rounding_name(r)));
      for (std::uint32_t raw = 0; raw <= storage_mask(from); ++raw) check_variants(sweep, from, *to, Bits{raw}, r);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, ConvertFromSmall,
                         ::testing::Values(&fp16, &bf16, &fp8_e4m3, &fp8_e5m2, &fp8_e4m3fnuz, &fp8_e5m2fnuz, &fp6_e3m2,
                                           &fp6_e2m3, &fp4_e2m1, &e8m0, &int8, &uint8),
                         test::format_param_name);

// ---------------------------------------------------------------------------------------
// fp32 into every narrower format: at and around every target value and midpoint.

/// fp32 sources probing every rounding boundary of `to`: for every non-negative value v of
/// the target (tf32: a sample, see below) (plus the value one ulp above max, where overflow starts, and for E8M0 the
/// values below its least one): v, v ± 1 fp32 ulp, the midpoint m to the next value, and
/// m ± 1 fp32 ulp; each with both signs. Integers: 0..300 (all of int8/uint8 and their
/// bounds) and each bound ± 3 (int32).
std::vector<float> boundary_probes(const FormatSpec& to) {
  // (v, the next larger value of the target) for each v probed.
  std::vector<std::pair<double, double>> steps;
  if (to.kind == FormatKind::integer) {
    const double lo = to.is_signed ? -std::ldexp(1.0, to.bits - 1) : 0;
    const double hi = to.is_signed ? std::ldexp(1.0, to.bits - 1) - 1 : std::ldexp(1.0, to.bits) - 1;
    const auto around = [&](double from, double to_v) {
      for (double v = from; v <= to_v; ++v) steps.emplace_back(v, v + 1);
    };
    around(0, 300);
    for (const double b : {hi, -lo}) around(b - 3, b + 3);
  } else {
    std::vector<double> values;
    for (std::uint32_t raw = 0; raw <= storage_mask(to); ++raw) {
      const double v = naive_decode(to, Bits{raw});
      if (std::isfinite(v) && !std::signbit(v)) values.push_back(v);
    }
    const test::NaiveLimits& l = test::naive_limits(to);
    // One quantum above max: where rounding to nearest starts to overflow (its midpoint).
    int e = 0;
    (void)std::frexp(l.max_finite, &e);
    values.push_back(l.max_finite + std::ldexp(1.0, e - to.precision));
    if (!to.has_subnormals) values.insert(values.end(), {0.0, l.min_positive / 2, l.min_positive / 4});
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    // tf32 has 2^18 non-negative values: to stay within the time budget probe every 7th and
    // the first and last three of every binade; the other targets every value.
    const std::size_t stride = to.bits > 16 ? 7 : 1;
    for (std::size_t i = 0; i + 1 < values.size(); ++i) {
      int ei = 0;
      int en = 0;
      (void)std::frexp(values[i], &ei);
      (void)std::frexp(values[std::min(i + 3, values.size() - 1)], &en);
      int ep = 0;
      (void)std::frexp(values[i >= 3 ? i - 3 : 0], &ep);
      if (i % stride == 0 || ei != en || ei != ep) steps.emplace_back(values[i], values[i + 1]);
    }
  }
  std::vector<float> out;
  const auto add = [&](double d) {
    const auto f = static_cast<float>(d);
    if (static_cast<double>(f) != d || std::isinf(f)) return;  // not an fp32 value
    for (const float g : {f, std::nextafter(f, INFINITY), std::nextafter(f, -INFINITY)}) {
      out.push_back(g);
      out.push_back(-g);
    }
  };
  for (const auto& [v, next] : steps) {
    add(v);
    add((v + next) / 2);
  }
  return out;
}

class ConvertFromFp32 : public ::testing::TestWithParam<const FormatSpec*> {};

TEST_P(ConvertFromFp32, AroundEveryValueAndMidpoint) {
  const FormatSpec& to = *GetParam();
  const std::vector<float> probes = boundary_probes(to);
  RecordProperty("probes", static_cast<int>(probes.size()));
  for (const Rounding r : kModes) {
    SCOPED_TRACE(std::string(rounding_name(r)));
    Sweep sweep(fmt::format("fp32 -> {} {} (boundaries)", to.name, rounding_name(r)));
    for (const float v : probes) check_variants(sweep, fp32, to, fp32_bits(v), r);
    for (const std::uint32_t raw :
         {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x00000001u,
          0x80000001u, 0x007fffffu, 0x00800000u, 0x7f7fffffu, 0xff7fffffu})
      check_variants(sweep, fp32, to, Bits{raw}, r);
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, ConvertFromFp32,
                         ::testing::Values(&fp16, &bf16, &tf32, &fp8_e4m3, &fp8_e5m2, &fp8_e4m3fnuz, &fp8_e5m2fnuz,
                                           &fp6_e3m2, &fp6_e2m3, &fp4_e2m1, &e8m0, &int8, &uint8, &int32),
                         test::format_param_name);

TEST(ConvertFromFp32Random, SeededPatterns) {
  // 10^6 random fp32 patterns (seed 20240601, std::mt19937, whose sequence the C++ standard
  // fixes), each into every narrower format; the mode and options cycle with the index so
  // that every combination is drawn about equally often.
  const std::vector<const FormatSpec*> targets{&fp16,         &bf16,         &tf32,     &fp8_e4m3, &fp8_e5m2,
                                               &fp8_e4m3fnuz, &fp8_e5m2fnuz, &fp6_e3m2, &fp6_e2m3, &fp4_e2m1,
                                               &e8m0,         &int8,         &uint8,    &int32};
  std::mt19937 gen(20240601);
  Sweep sweep("fp32 random -> narrower (seed 20240601)");
  constexpr int n = 1000000;
  for (int i = 0; i < n; ++i) {
    const Bits x{static_cast<std::uint32_t>(gen())};
    const auto k = static_cast<unsigned>(i);
    const RoundOptions o{kModes[k % 5],
                         (k / 5) % 2 != 0 ? Overflow::saturate : Overflow::ieee,
                         (k / 10) % 2 != 0,
                         (k / 20) % 2 != 0,
                         0,
                         0};
    for (const FormatSpec* to : targets) {
      const Rounded rd = test::oracle_round_value(*to, test::oracle_operand(fp32, x, o.daz), o.rounding);
      const Result want = test::oracle_finish(*to, rd, o);
      const Result got = convert(fp32, *to, x, o);
      sweep.check(*to, want, got, test::checked_flags(*to, rd), NanPolicy::same_sign, [&] {
        return fmt::format("case {}: fp32 -> {} {} of {}", i, to->name, test::options_name(o), show(fp32, x));
      });
    }
  }
  RecordProperty("cases", static_cast<int>(sweep.cases()));
}

// ---------------------------------------------------------------------------------------
// Every tf32 pattern (19 bits) into the narrower formats.

class ConvertFromTf32 : public ::testing::TestWithParam<const FormatSpec*> {};

TEST_P(ConvertFromTf32, EveryPattern) {
  const FormatSpec& to = *GetParam();
  for (const Rounding r : kModes) {
    SCOPED_TRACE(std::string(rounding_name(r)));
    Sweep sweep(fmt::format("tf32 -> {} {}", to.name, rounding_name(r)));
    for (std::uint32_t raw = 0; raw <= storage_mask(tf32); ++raw) {
      const Bits x{raw};
      const Rounded rd = test::oracle_round_value(to, naive_decode(tf32, x), r);
      for (const Overflow ovf : {Overflow::ieee, Overflow::saturate}) {
        const RoundOptions o{r, ovf, false, false, 0, 0};
        sweep.check(to, test::oracle_finish(to, rd, o), convert(tf32, to, x, o), test::checked_flags(to, rd),
                    NanPolicy::same_sign,
                    [&] { return fmt::format("tf32 -> {} {} of {}", to.name, test::options_name(o), show(tf32, x)); });
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, ConvertFromTf32,
                         ::testing::Values(&fp16, &bf16, &fp8_e4m3, &fp8_e5m2, &fp8_e4m3fnuz, &fp8_e5m2fnuz, &fp6_e3m2,
                                           &fp6_e2m3, &fp4_e2m1, &e8m0, &int8, &uint8),
                         test::format_param_name);

// convert_double (binary64 input, the Python module's float64 arrays) against the MPFR oracle:
// random doubles of every magnitude the targets care about, ties and near-ties of each
// target's precision, and the specials, in every deterministic mode and overflow mode.
TEST(ConvertDouble, MatchesMpfrForEveryFormatAndMode) {
  std::mt19937_64 gen(20261201);
  std::vector<double> xs{0.0, -0.0, 1.0, -1.0, 0x1p-149, 0x1p-200, 0x1.8p0, 65504.0, 65520.0, 3.4028235677973366e38,
                         0x1.0080000000001p0, 0x1.008p0, 0x1.0180000000000p0, -0x1.fffffffffffffp1023,
                         0x0.0000000000001p-1022, INFINITY, -INFINITY};
  std::uniform_int_distribution<int> exp(-160, 140);
  for (int i = 0; i < 4000; ++i) {
    const double m = std::ldexp(static_cast<double>(gen() >> 11), -53) + 1.0;  // [1, 2), 53 bits
    double x = std::ldexp(m, exp(gen));
    if (i % 3 == 0) x = std::ldexp(std::round(std::ldexp(x, 8)) + 0.5, -8);  // ties at 8 fraction bits
    xs.push_back(i % 2 ? -x : x);
  }
  for (const FormatSpec* f : all_formats)
    for (const Rounding r : {Rounding::rne, Rounding::rtz, Rounding::rup, Rounding::rdn, Rounding::rna})
      for (const Overflow ov : {Overflow::ieee, Overflow::saturate}) {
        RoundOptions o;
        o.rounding = r;
        o.overflow = ov;
        for (const double x : xs) {
          const Result got = convert_double(*f, x, o), want = test::oracle_convert_value(*f, x, o);
          ASSERT_EQ(got.bits.raw, want.bits.raw)
              << fmt::format("{} {:a} {} overflow {}", f->name, x, rounding_name(r), ov == Overflow::ieee ? "ieee" : "saturate");
        }
      }
  // NaN: the target's canonical NaN, as convert() gives for a NaN input.
  EXPECT_EQ(convert_double(bf16, NAN).bits.raw, convert(fp32, bf16, Bits{0x7fc00000}).bits.raw);
}

}  // namespace
}  // namespace numfid
