// Tests of formats/rounding: stochastic rounding (reproducibility per (seed, stream), and
// the frequency of rounding away from zero against the exact proportional probability within
// a 6-sigma binomial bound), and round_to on random wide significands with and without the
// sticky bit against the MPFR oracle (tests/support) in every deterministic mode.
#include "formats/rounding.h"

#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "formats/convert.h"
#include "tests/support/mpfr_oracle.h"
#include "tests/support/naive_codec.h"
#include "tests/support/sweep.h"

namespace numfid {
namespace {

using test::naive_decode;
using test::NanPolicy;
using test::show;
using test::Sweep;

constexpr std::array<Rounding, 5> kModes{Rounding::rne, Rounding::rtz, Rounding::rup, Rounding::rdn, Rounding::rna};

Bits fp32_bits(float v) { return Bits{std::bit_cast<std::uint32_t>(v)}; }

RoundOptions stochastic(std::uint64_t seed, std::uint64_t stream) {
  RoundOptions o;
  o.rounding = Rounding::stochastic;
  o.seed = seed;
  o.stream = stream;
  return o;
}

// ---------------------------------------------------------------------------------------
// Stochastic rounding: reproducibility.

TEST(UnroundedOf, IsTheDoublesValue) {
  // ±m·2^e read back by ldexp (exact: m has at most 53 bits) equals the double, sign of zero
  // included: normal, subnormal, the extremes, and seeded random patterns.
  std::mt19937_64 g(17);
  std::vector<double> xs{0.0, -0.0, 0x1p-1074, -0x1p-1074, 0x1.fffffffffffffp-1023, 0x1p-1022, 1.0, -1.5,
                         0x1.fffffffffffffp1023, -0x1.fffffffffffffp1023};
  for (int i = 0; i < 20000; ++i) {
    const double x = std::bit_cast<double>(g());
    if (std::isfinite(x)) xs.push_back(x);
  }
  int failures = 0;
  for (const double x : xs) {
    const Unrounded u = unrounded_of(x);
    const double back = std::ldexp(static_cast<double>(static_cast<std::uint64_t>(u.significand)), u.exponent);
    const double signed_back = u.negative ? -back : back;
    if ((std::bit_cast<std::uint64_t>(signed_back) != std::bit_cast<std::uint64_t>(x) || u.sticky ||
         (u.significand >> 53) != 0) &&
        ++failures <= 5)
      ADD_FAILURE() << fmt::format("unrounded_of({:a}) = {}{:x}·2^{} sticky {}", x, u.negative ? "-" : "",
                                   static_cast<std::uint64_t>(u.significand), u.exponent, u.sticky);
  }
  EXPECT_EQ(failures, 0);
  EXPECT_GT(xs.size(), 19000u);
}

TEST(Stochastic, ReproduciblePerSeedAndStream) {
  // A value exactly between two bf16 neighbours: each rounding is a fair coin, so 1000
  // streams give a 1000-bit sequence; it must repeat exactly for the same seed and differ
  // for another seed (equal by chance with probability 2^-1000).
  const Bits x = fp32_bits(0x1.01p0f);  // 1 + 2^-8: midway between 1 and 1 + 2^-7 in bf16
  const auto sequence = [&](std::uint64_t seed) {
    std::vector<std::uint32_t> out;
    for (std::uint64_t stream = 0; stream < 1000; ++stream)
      out.push_back(convert(fp32, bf16, x, stochastic(seed, stream)).bits.raw);
    return out;
  };
  const std::vector<std::uint32_t> a = sequence(42);
  EXPECT_EQ(a, sequence(42)) << "same (seed, stream) must give the same rounding";
  EXPECT_NE(a, sequence(43)) << "different seeds gave identical sequences";
  // Different streams of one seed are different sequences too (no stream reuse).
  int ups = 0;
  for (const std::uint32_t r : a) ups += r == 0x3f81 ? 1 : 0;
  EXPECT_GT(ups, 0);
  EXPECT_LT(ups, 1000);
  for (std::uint64_t c = 0; c < 4; ++c) EXPECT_EQ(random_word(1, 2, c), random_word(1, 2, c));
  EXPECT_NE(random_word(1, 2, 0), random_word(1, 3, 0));
  EXPECT_NE(random_word(1, 2, 0), random_word(2, 2, 0));
  EXPECT_NE(random_word(1, 2, 0), random_word(1, 2, 1));
}

TEST(Stochastic, ExactValuesNeverMove) {
  // A representable value has probability 0 of moving, in every stream.
  for (std::uint64_t stream = 0; stream < 10000; ++stream) {
    ASSERT_EQ(convert(fp32, bf16, fp32_bits(1.5f), stochastic(9, stream)).bits, Bits{0x3fc0});
    ASSERT_EQ(convert(fp32, fp4_e2m1, fp32_bits(-6.0f), stochastic(9, stream)).bits, Bits{0xf});
    ASSERT_EQ(convert(fp32, e8m0, fp32_bits(0x1p-127f), stochastic(9, stream)).bits, Bits{0x00});
  }
}

// ---------------------------------------------------------------------------------------
// Stochastic rounding: frequencies.

/// A value to round stochastically: (-1)^negative * significand * 2^exponent (+ sticky).
struct Case {
  std::string name;
  const FormatSpec* to;
  Unrounded v;
};

Unrounded from_fp32(float x) { return exact_value(fp32, fp32_bits(x)); }

/// The two neighbours of v in `to` (rounded toward zero, and away from it) from the oracle,
/// and the exact probability of rounding away, (|v| - |lo|) / (|hi| - |lo|), in long double
/// (64-bit significand: its error is below 2^-60, negligible next to sigma).
struct Expectation {
  Bits lo;
  Bits hi;
  long double p;
};

Expectation expect_stochastic(const Case& c) {
  RoundOptions o;
  o.overflow = Overflow::saturate;
  o.rounding = Rounding::rtz;
  const Bits lo =
      test::oracle_finish(
          *c.to,
          test::oracle_round_scaled(*c.to, c.v.negative, c.v.significand, c.v.exponent, c.v.sticky, Rounding::rtz), o)
          .bits;
  o.rounding = c.v.negative ? Rounding::rdn : Rounding::rup;
  const Bits hi =
      test::oracle_finish(
          *c.to, test::oracle_round_scaled(*c.to, c.v.negative, c.v.significand, c.v.exponent, c.v.sticky, o.rounding),
          o)
          .bits;
  const long double lo_v = std::fabs(static_cast<long double>(naive_decode(*c.to, lo)));
  const long double hi_v = std::fabs(static_cast<long double>(naive_decode(*c.to, hi)));
  // |v| = significand * 2^exponent (the sticky tail, below 2^(exponent), is left out: it
  // moves p by less than 2^-60 for these cases).
  const long double hi_part = static_cast<long double>(static_cast<std::uint64_t>(c.v.significand >> 64));
  const long double lo_part = static_cast<long double>(static_cast<std::uint64_t>(c.v.significand));
  const long double mag = std::ldexp(hi_part, c.v.exponent + 64) + std::ldexp(lo_part, c.v.exponent);
  const long double p = hi_v == lo_v ? 0.0L : (mag - lo_v) / (hi_v - lo_v);
  return {lo, hi, p};
}

TEST(Stochastic, FrequencyMatchesExactProbability) {
  const uint128 one = 1;
  const std::vector<Case> cases{
      {"1+2^-8 (fp32) -> bf16, p = 1/2", &bf16, from_fp32(0x1.01p0f)},
      {"1+2^-8+2^-9 (fp32) -> bf16, p = 3/4", &bf16, from_fp32(0x1.018p0f)},
      {"-(1+2^-23) (fp32) -> bf16, p = 2^-16", &bf16, from_fp32(-0x1.000002p0f)},
      {"1.5-2^-23 (fp32) -> bf16, p = 1-2^-16", &bf16, from_fp32(0x1.7ffffep0f)},
      {"-1.25 (fp32) -> fp4, p = 1/2", &fp4_e2m1, from_fp32(-1.25f)},
      {"2.3f -> int8", &int8, from_fp32(2.3f)},
      {"-0.01f -> fp8_e4m3 (subnormal neighbours)", &fp8_e4m3, from_fp32(-0.01f)},
      // fp32 subnormals: 148 bits discarded into fp4, 22 into e8m0.
      {"2^-127 (fp32 subnormal) -> fp4, p = 2^-126", &fp4_e2m1, from_fp32(0x1p-127f)},
      {"1.5*2^-127 (fp32 subnormal) -> e8m0, p = 1/2", &e8m0, from_fp32(0x1.8p-127f)},
      {"2^-127+2^-149 (fp32 subnormal) -> e8m0, p = 2^-22", &e8m0, from_fp32(0x1.000004p-127f)},
      {"1.75*2^-127 (fp32 subnormal) -> e8m0, p = 3/4", &e8m0, from_fp32(0x1.cp-127f)},
      // Wide exact values: more than 64 discarded bits.
      {"0.75+2^-101 -> fp4, p = 1/2+2^-100 (101 bits discarded)",
       &fp4_e2m1,
       {false, (one << 100) + (one << 99) + 1, -101, false}},
      {"1+2^-120 -> fp8_e4m3: one bit set 117 places down", &fp8_e4m3, {false, (one << 120) + 1, -120, false}},
      {"1+2^-4+2^-100 -> fp8_e4m3 (a tie plus a far bit), p = 1/2+2^-97",
       &fp8_e4m3,
       {false, (one << 100) + (one << 96) + 1, -100, false}},
      {"0.5+2^-12+2^-76 -> fp16: 65 bits discarded, set in both words, p = 1/2+2^-65",
       &fp16,
       {false, (one << 64) + 1 + (one << 75), -76, false}},
      {"-(1 + 0.3) with a sticky tail -> fp6_e2m3",
       &fp6_e2m3,
       {true, (one << 62) + (static_cast<uint128>(0x4ccccccccccccccdULL) >> 2), -62, true}},
  };
  constexpr int n = 1000000;
  std::uint64_t seed = 2024;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ++seed;  // independent draws per case
    const Expectation e = expect_stochastic(c);
    std::int64_t away = 0;
    std::int64_t other = 0;
    for (int i = 0; i < n; ++i) {
      const Bits r = round_to(*c.to, c.v, stochastic(seed, static_cast<std::uint64_t>(i))).bits;
      if (r == e.hi && e.hi != e.lo)
        ++away;
      else if (r != e.lo)
        ++other;
    }
    const long double mean = n * e.p;
    const long double sigma = std::sqrt(n * e.p * (1 - e.p));
    const long double bound = 6 * sigma;
    const long double freq = static_cast<long double>(away) / n;
    std::printf("%-70s observed %.6Lf expected %.6Lg sigma(count) %.3Lf  |away - n p| = %.2Lf <= 6 sigma = %.2Lf\n",
                c.name.c_str(), freq, e.p, sigma, std::fabs(away - mean), bound);
    EXPECT_EQ(other, 0) << "results other than the neighbours " << show(*c.to, e.lo) << " and " << show(*c.to, e.hi);
    EXPECT_LE(std::fabs(away - mean), bound)
        << "away " << away << " of " << n << ", expected " << static_cast<double>(mean)
        << " (p = " << static_cast<double>(e.p) << "), 6 sigma = " << static_cast<double>(bound);
  }
}

// ---------------------------------------------------------------------------------------
// Stochastic rounding with R random bits (RoundOptions::sr_bits), as hardware draws them.

// Each decision against a naive second implementation from the bit patterns: an fp32 value of
// bf16's range rounds away from zero iff the random word's top R bits, read as an integer, are
// below the top R of the 16 discarded bits (padded with zeros past the 16th); every value a
// representable neighbour; 200 000 random fp32 patterns (finite, bf16 normal range), R in
// {1, 2, 4, 8, 13, 16, 20, 32, 64}, a stream per value.
TEST(Stochastic, RandomBitsDecideByTheTopBitsOfTheFraction) {
  std::mt19937_64 g(20261205);
  int failures = 0;
  for (const int r : {1, 2, 4, 8, 13, 16, 20, 32, 64}) {
    SCOPED_TRACE(fmt::format("R = {}", r));
    for (std::uint64_t stream = 0; stream < 200000 && failures < 5; ++stream) {
      std::uint32_t x = static_cast<std::uint32_t>(g());
      const std::uint32_t exp = (x >> 23) & 0xff;
      if (exp == 0 || exp >= 0xfe) continue;  // subnormal, or near the top (overflow is another rule)
      RoundOptions o = stochastic(77, stream);
      o.sr_bits = r;
      const Bits got = convert(fp32, bf16, Bits{x}, o).bits;
      const std::uint64_t frac16 = x & 0xffffu;
      const std::uint64_t top = r <= 16 ? frac16 >> (16 - r) : frac16 << (r - 16);
      const std::uint64_t u = random_word(77, stream, 0) >> (64 - r);
      const std::uint32_t toward = x >> 16;
      const std::uint32_t want = toward + (u < top ? 1u : 0u);  // magnitude + 1 ulp (sign-magnitude)
      if (got.raw != want && ++failures <= 5)
        ADD_FAILURE() << fmt::format("fp32 0x{:08x} stream {}: got bf16 0x{:04x}, want 0x{:04x} (top {:#x}, u {:#x})", x,
                                     stream, got.raw, want, top, u);
    }
  }
}

// The bias R random bits leave: 1 + 0.7·2^-7 (fp32) into bf16 has fraction 0.7 of an ulp; with
// R = 2 the top two bits read 0b10, so it rounds away with probability exactly 1/2 (biased toward
// zero by 0.2 ulp, under 2^-2), with R = 8 with 179/256, exactly with the default.
TEST(Stochastic, RandomBitsBiasTowardZeroByLessThanTwoToMinusR) {
  const Bits x = fp32_bits(0x1.0166666p0f);  // 1 + 0x0166666·2^-24 ≈ 1 + 0.7·2^-7
  const auto frac = static_cast<double>(std::bit_cast<std::uint32_t>(0x1.0166666p0f) & 0xffff) / 65536.0;
  constexpr int n = 400000;
  for (const int r : {0, 2, 8}) {
    SCOPED_TRACE(fmt::format("R = {}", r));
    const double p = r == 0 ? frac : std::floor(frac * std::ldexp(1.0, r)) / std::ldexp(1.0, r);
    int away = 0;
    for (int i = 0; i < n; ++i) {
      RoundOptions o = stochastic(5, static_cast<std::uint64_t>(i));
      o.sr_bits = r;
      away += convert(fp32, bf16, x, o).bits == Bits{0x3f81} ? 1 : 0;
    }
    const double sigma = std::sqrt(n * p * (1 - p));
    EXPECT_LE(std::fabs(away - n * p), 6 * sigma) << "away " << away << " of " << n << ", p = " << p;
    EXPECT_LT(frac - p, r == 0 ? 1e-12 : std::ldexp(1.0, -r));
  }
}

// ---------------------------------------------------------------------------------------
// round_to on wide significands vs MPFR.

TEST(RoundTo, WideSignificandsAgainstMpfr) {
  // Random significands of 1..128 bits, exponents placing the value anywhere from below the
  // least subnormal to beyond max, sticky or not (a sticky value gets at least p + 2 bits
  // above its rounding position, rounding.h's precondition); every format, every
  // deterministic mode, both overflow modes, FTZ on and off. Seed 77, std::mt19937_64.
  std::mt19937_64 gen(77);
  constexpr int n = 100000;
  for (const FormatSpec* fp : all_formats) {
    const FormatSpec& f = *fp;
    SCOPED_TRACE(std::string(f.name));
    Sweep sweep(fmt::format("round_to {} (seed 77)", f.name));
    // log2 of the least and largest magnitudes of interest.
    const int lo_e = is_float(f) ? std::ilogb(test::naive_limits(f).min_positive) - 4 : -6;
    // Integers: up to 2^(bits + 40), past round_to's 64-bit shortcut for huge values.
    const int hi_e = is_float(f) ? std::ilogb(test::naive_limits(f).max_finite) + 3 : f.bits + 40;
    const int p = is_float(f) ? f.precision : f.bits;
    for (int i = 0; i < n; ++i) {
      const int len = 1 + static_cast<int>(gen() % 128);
      uint128 sig = (static_cast<uint128>(gen()) << 64) | gen();
      sig = len == 128 ? sig : sig & ((uint128{1} << len) - 1);
      sig |= uint128{1} << (len - 1);
      if (gen() % 4 == 0)
        sig &= ~((uint128{1} << (len - 1)) - 1) | (uint128{1} << (gen() % static_cast<std::uint64_t>(len)));  // sparse
      const int top = lo_e + static_cast<int>(gen() % static_cast<std::uint64_t>(hi_e - lo_e + 1));  // log2 |v|
      Unrounded v{(gen() & 1) != 0, sig, top - (bit_length(sig) - 1), (gen() & 1) != 0};
      if (v.sticky) {
        // The rounding position is at most 2^(top - p + 1) (normal) or the subnormal quantum
        // (coarser): p + 2 bits above the exponent keep guard and round bits exact.
        const int needed = is_float(f) ? p + 2 : top + 3;
        if (bit_length(v.significand) < needed) {
          const int shift = needed - bit_length(v.significand);
          if (bit_length(v.significand) + shift > 127) continue;
          v.significand <<= shift;
          v.exponent -= shift;
        }
        if (!is_float(f) && v.exponent > -2) continue;
      }
      const Rounding r = kModes[static_cast<std::size_t>(i) % kModes.size()];
      const test::Rounded rd = test::oracle_round_scaled(f, v.negative, v.significand, v.exponent, v.sticky, r);
      for (const Overflow ovf : {Overflow::ieee, Overflow::saturate})
        for (const bool ftz : {false, true}) {
          const RoundOptions o{r, ovf, ftz, false, 0, 0};
          sweep.check(f, test::oracle_finish(f, rd, o), round_to(f, v, o), test::checked_flags(f, rd),
                      NanPolicy::same_sign, [&] {
                        return fmt::format("case {}: round_to {} {} of {}(0x{:x}{:016x} + {}) * 2^{}", i, f.name,
                                           test::options_name(o), v.negative ? "-" : "",
                                           static_cast<std::uint64_t>(v.significand >> 64),
                                           static_cast<std::uint64_t>(v.significand), v.sticky ? "f" : "0", v.exponent);
                      });
        }
    }
  }
}

}  // namespace
}  // namespace numfid
