// Tests of numerics/int_gemm against independent implementations written here: plain int64
// loops for the GEMM, brute force over every operand pair for the overflow K, exact rationals
// (Boost.Multiprecision) rounded by hand for the requantisation, the hardware's double -> float
// cast for fp32 outputs, and the fixed-point pipeline restated as exact rational roundings.
#include "numerics/int_gemm.h"

#include <gtest/gtest.h>

#include <boost/multiprecision/cpp_int.hpp>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <fmt/format.h>

namespace numfid {
namespace {

using boost::multiprecision::cpp_int;
using boost::multiprecision::cpp_rational;

std::int64_t naive_value(const FormatSpec& f, std::uint32_t raw) {
  if (f == uint8) return raw & 0xff;
  if (f == int8) return static_cast<std::int8_t>(raw & 0xff);
  return static_cast<std::int32_t>(raw);
}

/// x rounded to an integer under r, by the definitions (floor, the fraction against 1/2).
cpp_int naive_round(const cpp_rational& x, Rounding r) {
  const cpp_int num = numerator(x), den = denominator(x);
  cpp_int fl = num / den;
  if (num < 0 && fl * den != num) fl -= 1;
  const cpp_rational frac = x - cpp_rational(fl);
  const cpp_rational half(1, 2);
  if (frac == 0) return fl;
  switch (r) {
    case Rounding::rne: return frac > half ? fl + 1 : frac < half ? fl : (fl % 2 != 0 ? fl + 1 : fl);
    case Rounding::rna: return frac > half ? fl + 1 : frac < half ? fl : (x > 0 ? fl + 1 : fl);
    case Rounding::rtz: return x > 0 ? fl : fl + 1;
    case Rounding::rup: return fl + 1;
    case Rounding::rdn: return fl;
    default: ADD_FAILURE() << "no such requantisation rounding"; return 0;
  }
}

std::int64_t naive_requant(std::int64_t acc, double scale, const FormatSpec& out, std::int64_t zp, Rounding r,
                           bool* overflow) {
  const cpp_int y = naive_round(cpp_rational(acc) * cpp_rational(scale), r) + zp;
  const std::int64_t lo = out == uint8 ? 0 : out == int8 ? -128 : std::numeric_limits<std::int32_t>::min();
  const std::int64_t hi = out == uint8 ? 255 : out == int8 ? 127 : std::numeric_limits<std::int32_t>::max();
  *overflow = y < lo || y > hi;
  return y < lo ? lo : y > hi ? hi : static_cast<std::int64_t>(y);
}

TEST(IntGemm, ValuesOfEveryPattern) {
  for (std::uint32_t raw = 0; raw < 256; ++raw) {
    EXPECT_EQ(integer_value(int8, Bits{raw}), naive_value(int8, raw)) << raw;
    EXPECT_EQ(integer_value(uint8, Bits{raw}), naive_value(uint8, raw)) << raw;
    EXPECT_EQ(integer_bits(int8, integer_value(int8, Bits{raw})), Bits{raw});
  }
  EXPECT_EQ(integer_value(int32, Bits{0x80000000u}), -2147483648LL);
  EXPECT_EQ(integer_value(int32, Bits{0xffffffffu}), -1);
  EXPECT_EQ(integer_min(int8), -128);
  EXPECT_EQ(integer_max(int8), 127);
  EXPECT_EQ(integer_min(uint8), 0);
  EXPECT_EQ(integer_max(uint8), 255);
  EXPECT_EQ(integer_min(int32), -2147483648LL);
  EXPECT_EQ(integer_max(int32), 2147483647LL);
}

TEST(IntGemm, ExactAgainstNaiveLoops) {
  std::mt19937 gen(12);
  for (const auto& [fa, fb] : {std::pair{&int8, &int8}, std::pair{&uint8, &int8}, std::pair{&uint8, &uint8}}) {
    for (int trial = 0; trial < 20; ++trial) {
      const std::int64_t M = 1 + gen() % 5, K = 1 + gen() % 70, N = 1 + gen() % 6;
      const IntOperand a{fa, static_cast<std::int64_t>(gen() % 256) + integer_min(*fa)};
      const IntOperand b{fb, static_cast<std::int64_t>(gen() % 256) + integer_min(*fb)};
      std::vector<Bits> A(static_cast<std::size_t>(M * K)), B(static_cast<std::size_t>(K * N));
      for (Bits& x : A) x = Bits{static_cast<std::uint32_t>(gen() & 0xffu)};
      for (Bits& x : B) x = Bits{static_cast<std::uint32_t>(gen() & 0xffu)};
      std::vector<std::int64_t> bias(static_cast<std::size_t>(M * N));
      for (auto& x : bias) x = static_cast<std::int32_t>(gen());
      const auto got = int_gemm_exact(a, A, b, B, {M, K, N, false}, bias);
      for (std::int64_t i = 0; i < M; ++i)
        for (std::int64_t j = 0; j < N; ++j) {
          std::int64_t want = bias[static_cast<std::size_t>(i * N + j)];
          for (std::int64_t k = 0; k < K; ++k)
            want += (naive_value(*fa, A[static_cast<std::size_t>(i * K + k)].raw) - a.zero_point) *
                    (naive_value(*fb, B[static_cast<std::size_t>(k * N + j)].raw) - b.zero_point);
          ASSERT_EQ(got[static_cast<std::size_t>(i * N + j)], want) << fmt::format("[{}, {}] of {}x{}x{}", i, j, M, K, N);
        }
      // Row-wise: B is R×K like A.
      std::vector<Bits> B2(A.size());
      for (Bits& x : B2) x = Bits{static_cast<std::uint32_t>(gen() & 0xffu)};
      const auto rows = int_gemm_exact(a, A, b, B2, {M, K, 1, true});
      for (std::int64_t i = 0; i < M; ++i) {
        std::int64_t want = 0;
        for (std::int64_t k = 0; k < K; ++k)
          want += (naive_value(*fa, A[static_cast<std::size_t>(i * K + k)].raw) - a.zero_point) *
                  (naive_value(*fb, B2[static_cast<std::size_t>(i * K + k)].raw) - b.zero_point);
        ASSERT_EQ(rows[static_cast<std::size_t>(i)], want);
      }
    }
  }
}

TEST(IntGemm, OverflowKAgainstBruteForce) {
  // Every pair of operand values: the extreme terms; then the K from them by the definition.
  for (const auto& [fa, fb] : {std::pair{&int8, &int8}, std::pair{&uint8, &int8}, std::pair{&uint8, &uint8}})
    for (const std::int64_t za : {std::int64_t{0}, integer_min(*fa) + 3, integer_max(*fa)})
      for (const std::int64_t zb : {std::int64_t{0}, integer_min(*fb)}) {
        std::int64_t lo = 0, hi = 0;
        for (std::int64_t x = integer_min(*fa); x <= integer_max(*fa); ++x)
          for (std::int64_t y = integer_min(*fb); y <= integer_max(*fb); ++y) {
            lo = std::min(lo, (x - za) * (y - zb));
            hi = std::max(hi, (x - za) * (y - zb));
          }
        const Int32OverflowK r = int32_overflow_k({fa, za}, {fb, zb});
        SCOPED_TRACE(fmt::format("{} zp {} x {} zp {}", fa->name, za, fb->name, zb));
        EXPECT_EQ(r.min_term, lo);
        EXPECT_EQ(r.max_term, hi);
        const auto fits = [&](std::int64_t k) { return k * hi <= 2147483647LL && k * lo >= -2147483648LL; };
        EXPECT_TRUE(fits(r.first_k - 1));
        EXPECT_FALSE(fits(r.first_k));
      }
  // The textbook case: int8 × int8, 128·128 = 2^14 per term, so K = 2^17 can reach 2^31.
  EXPECT_EQ(int32_overflow_k({&int8, 0}, {&int8, 0}).first_k, 131072);
}

TEST(IntGemm, WrapIsModulo2To32) {
  EXPECT_EQ(wrap_int32(2147483648LL), std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(wrap_int32(-2147483649LL), std::numeric_limits<std::int32_t>::max());
  EXPECT_EQ(wrap_int32((1LL << 32) + 5), 5);
}

TEST(IntGemm, RequantExhaustiveAgainstRationals) {
  // Every accumulator in [-2^12, 2^12] × scales with ties and long fractions × every mode ×
  // int8/uint8/int32 outputs with their zero points, with and without saturation. The rational
  // rounding is done once per (acc, scale, mode); the outputs only shift and clamp it.
  const double scales[] = {0.5, 0.25, 0x1.8p-3, 1.0 / 3, 0x1.234568p-9, 0.0078125, 3.0, 0x1.fffffep-1};
  for (const double s : scales)
    for (const Rounding r : {Rounding::rne, Rounding::rna, Rounding::rtz, Rounding::rup, Rounding::rdn}) {
      int failures = 0;
      for (std::int64_t acc = -(1 << 12); acc <= (1 << 12) && failures < 3; ++acc) {
        const auto rounded = static_cast<std::int64_t>(naive_round(cpp_rational(acc) * cpp_rational(s), r));
        for (const FormatSpec* out : {&int8, &uint8, &int32})
          for (const bool sat : {false, true}) {
            const std::int64_t zp = *out == uint8 ? 128 : *out == int8 ? -5 : 7;
            const std::int64_t lo = integer_min(*out), hi = integer_max(*out), y = rounded + zp;
            const bool ov = y < lo || y > hi;
            const std::int64_t want = std::clamp(y, lo, hi);
            const RequantResult got = requantize(acc, s, {out, zp, r, sat, false});
            if (got.bits != integer_bits(*out, want) || got.overflow != (ov && !sat)) {
              ++failures;
              ADD_FAILURE() << fmt::format("acc {} scale {:a} {} -> {} zp {} sat {}: got {} (overflow {}), want {} "
                                           "(overflow {})",
                                           acc, s, rounding_name(r), out->name, zp, sat,
                                           integer_value(*out, got.bits), got.overflow, want, ov && !sat);
            }
          }
      }
    }
}

TEST(IntGemm, RequantLargeAccumulators) {
  std::mt19937_64 gen(5);
  for (int i = 0; i < 20000; ++i) {
    const auto acc = static_cast<std::int64_t>(gen()) >> (gen() % 40);
    const double s = std::ldexp(static_cast<double>(gen() >> 11), -53 - static_cast<int>(gen() % 40));
    if (s == 0) continue;
    for (const Rounding r : {Rounding::rne, Rounding::rna, Rounding::rtz, Rounding::rup, Rounding::rdn}) {
      bool ov = false;
      const std::int64_t want = naive_requant(acc, s, int32, 0, r, &ov);
      ASSERT_EQ(requantize(acc, s, {&int32, 0, r, true, false}).bits, integer_bits(int32, want))
          << fmt::format("acc {} scale {:a} {}", acc, s, rounding_name(r));
    }
  }
}

TEST(IntGemm, RequantToFp32IsOneRounding) {
  // |acc| < 2^20 and fp32 scales (24 bits): acc × scale is exact in double, so the hardware's
  // double -> float cast (round to nearest even) is the single correct rounding.
  std::mt19937 gen(9);
  for (int i = 0; i < 200000; ++i) {
    const std::int64_t acc = static_cast<std::int64_t>(gen() % (1u << 21)) - (1 << 20);
    float sf = 0;
    const std::uint32_t bits = 0x30000000u + gen() % 0x10000000u;  // scales around 2^-31 ... 2^1
    std::memcpy(&sf, &bits, 4);
    const float want = static_cast<float>(static_cast<double>(acc) * sf);
    std::uint32_t wb = 0;
    std::memcpy(&wb, &want, 4);
    const RequantResult got = requantize(acc, sf, {&fp32, 0, Rounding::rne, false, false});
    ASSERT_EQ(got.bits, Bits{wb}) << fmt::format("acc {} scale {:a}", acc, sf);
  }
}

TEST(IntGemm, QuantizeMultiplierAsTfLite) {
  // Hand-derived from TFLite's QuantizeMultiplier: 0.5 = 0.5·2^0 -> 2^30, shift 0; 0.75 ->
  // 0.75·2^31, shift 0; 2^-10 -> 2^30, shift -9; 1 - 2^-40 rounds q up to 2^31 -> halved, shift 1.
  EXPECT_EQ(quantize_multiplier(0.5).multiplier, 1 << 30);
  EXPECT_EQ(quantize_multiplier(0.5).shift, 0);
  EXPECT_EQ(quantize_multiplier(0.75).multiplier, 0x60000000);
  EXPECT_EQ(quantize_multiplier(0x1p-10).multiplier, 1 << 30);
  EXPECT_EQ(quantize_multiplier(0x1p-10).shift, -9);
  EXPECT_EQ(quantize_multiplier(1 - 0x1p-40).multiplier, 1 << 30);
  EXPECT_EQ(quantize_multiplier(1 - 0x1p-40).shift, 1);
  EXPECT_EQ(quantize_multiplier(0x1p-40).multiplier, 0);  // shift -39 < -31: flushed to zero
}

TEST(IntGemm, FixedPointAgainstRationals) {
  // The fixed-point pipeline restated: r1 = floor(x·M / 2^31 + 1/2) (the doubling high mul's
  // nudge then truncating division: ties toward +inf, also for negative products), then
  // round-half-away(r1 / 2^right) (RoundingDivideByPOT), both exact rationals.
  std::mt19937 gen(3);
  const auto away = [](const cpp_rational& v) { return naive_round(v, Rounding::rna); };
  for (int i = 0; i < 50000; ++i) {
    const auto x = static_cast<std::int32_t>(gen()) >> (gen() % 24);
    const FixedPointMultiplier m{static_cast<std::int32_t>((1u << 30) + gen() % (1u << 30)), -static_cast<int>(gen() % 32)};
    const cpp_int r1 =
        naive_round(cpp_rational(cpp_int(x) * m.multiplier, cpp_int(1) << 31) + cpp_rational(1, 2), Rounding::rdn);
    const cpp_int r2 = away(cpp_rational(r1, cpp_int(1) << -m.shift));
    ASSERT_EQ(multiply_by_quantized_multiplier(x, m), static_cast<std::int32_t>(r2))
        << fmt::format("x {} M {:#x} shift {}", x, m.multiplier, m.shift);
  }
  // The one saturating case of SaturatingRoundingDoublingHighMul.
  EXPECT_EQ(multiply_by_quantized_multiplier(std::numeric_limits<std::int32_t>::min(),
                                             {std::numeric_limits<std::int32_t>::min(), 0}),
            std::numeric_limits<std::int32_t>::max());
  // requantize with the fixed-point form (scale 0.5: M = 2^30, shift 0): 5 × 0.5 = 2.5 -> 3
  // (rne of the exact value: 2), and -2.5 -> -2: the high mul's ties go toward +inf.
  const Requantization q{&int8, 0, Rounding::rne, true, true};
  EXPECT_EQ(integer_value(int8, requantize(5, 0.5, q).bits), 3);
  EXPECT_EQ(integer_value(int8, requantize(-5, 0.5, q).bits), -2);
  EXPECT_TRUE(requantize(1LL << 31, 0.5, q).overflow);  // the int32 pipeline cannot hold it
}

}  // namespace
}  // namespace numfid
