// Tests of the CLI's text handling: decimal and hex-float literals rounded in one step must
// agree with MPFR's own correctly rounded string conversion (mpfr_strtofr at the target
// precision and exponent range, then mpfr_subnormalize: the CORE-MATH recipe), on random
// literals and on literals at, just above and just below the midpoints between neighbours;
// exact printing; hex pattern parsing and its errors.
#include "cli/stream_io.h"
#include "cli/value_text.h"

#include <gtest/gtest.h>
#include <mpfr.h>

#include <cmath>
#include <random>
#include <string>

#include <fmt/format.h>

#include "cli/errors.h"
#include "formats/ulp.h"

namespace numfid::cli {
namespace {

/// MPFR's value of `literal` rounded into `f` (finite result only; nullopt when it overflows
/// the format, whose rules are round_to()'s business, tested in the formats tests).
std::optional<double> mpfr_reference(const FormatSpec& f, const std::string& literal, Rounding r) {
  const mpfr_rnd_t rnd = r == Rounding::rne ? MPFR_RNDN : r == Rounding::rtz ? MPFR_RNDZ : r == Rounding::rup ? MPFR_RNDU : MPFR_RNDD;
  const mpfr_exp_t old_emin = mpfr_get_emin();
  const mpfr_exp_t old_emax = mpfr_get_emax();
  // MPFR's exponents are one above IEEE's: emin = e_min - p + 2, emax = e_max + 1.
  mpfr_set_emin(emin(f) - f.precision + 2);
  mpfr_set_emax(emax(f) + 1);
  mpfr_t x;
  mpfr_init2(x, f.precision);
  char* end = nullptr;
  int t = mpfr_strtofr(x, literal.c_str(), &end, 0, rnd);
  t = mpfr_subnormalize(x, t, rnd);
  const double v = mpfr_get_d(x, MPFR_RNDN);  // exact: p <= 24 and the exponent fits a double
  const bool consumed = *end == '\0';
  mpfr_clear(x);
  mpfr_set_emin(old_emin);
  mpfr_set_emax(old_emax);
  EXPECT_TRUE(consumed) << "MPFR did not read all of " << literal;
  if (std::isinf(v) || std::fabs(v) > max_finite(f)) return std::nullopt;
  return v;
}

Result numfid_round(const FormatSpec& f, const std::string& literal, Rounding r) {
  const ParsedValue v = parse_value(literal);
  EXPECT_EQ(v.kind, ParsedValue::Kind::finite) << literal;
  RoundOptions o;
  o.rounding = r;
  return round_to(f, v.exact, o);
}

struct Failures {
  int count = 0;
  bool report() { return ++count <= 10; }
};

/// Compares one literal in the four MPFR rounding directions.
void check_literal(const FormatSpec& f, const std::string& literal, Failures& fails) {
  for (Rounding r : {Rounding::rne, Rounding::rtz, Rounding::rup, Rounding::rdn}) {
    const std::optional<double> want = mpfr_reference(f, literal, r);
    if (!want) continue;
    const Result got = numfid_round(f, literal, r);
    const double g = to_double(f, got.bits);
    // Signed zero where the format has one (FNUZ formats have only +0).
    const bool same = g == *want && (!f.signed_zero || std::signbit(g) == std::signbit(*want));
    if (!same && fails.report())
      ADD_FAILURE() << fmt::format("{} {} '{}': numfid {} = {:a}, MPFR {:a}", f.name, rounding_name(r), literal,
                                   to_hex(f, got.bits), g, *want);
  }
}

const FormatSpec* const kFloatFormats[] = {&fp32, &fp16, &bf16, &tf32, &fp8_e4m3, &fp8_e5m2, &fp8_e4m3fnuz,
                                           &fp8_e5m2fnuz, &fp6_e3m2, &fp6_e2m3, &fp4_e2m1};

TEST(ValueTextMpfr, RandomDecimalLiterals) {
  std::mt19937_64 rng(7);  // fixed seed: reproducible
  for (const FormatSpec* fp : kFloatFormats) {
    const FormatSpec& f = *fp;
    SCOPED_TRACE(std::string(f.name));
    Failures fails;
    const double lo = std::log10(min_positive(f)) - 2;  // down to well below the least subnormal
    const double hi = std::log10(max_finite(f));
    std::uniform_real_distribution<double> mag(lo, hi);
    for (int i = 0; i < 3000; ++i) {
      const int digits = 1 + static_cast<int>(rng() % 40);
      std::string d;
      for (int k = 0; k < digits; ++k) d += static_cast<char>('0' + rng() % 10);
      if (d[0] == '0') d[0] = '1';
      const auto e10 = static_cast<long>(std::floor(mag(rng))) - (digits - 1);
      std::string literal;
      switch (rng() % 3) {
        case 0: literal = fmt::format("{}e{}", d, e10); break;  // integer mantissa
        case 1: literal = fmt::format("{}.{}E{:+d}", d.substr(0, 1), d.substr(1), e10 + digits - 1); break;
        default:  // positional, as long as it stays short
          if (e10 < 0 && -e10 < 60) {
            const auto point = static_cast<long>(d.size()) + e10;
            literal = point > 0 ? d.substr(0, static_cast<std::size_t>(point)) + "." + d.substr(static_cast<std::size_t>(point))
                                : "0." + std::string(static_cast<std::size_t>(-point), '0') + d;
          } else {
            literal = fmt::format("{}e{}", d, e10);
          }
      }
      if (rng() % 2) literal = "-" + literal;
      SCOPED_TRACE(literal);
      check_literal(f, literal, fails);
    }
    EXPECT_EQ(fails.count, 0);
  }
}

TEST(ValueTextMpfr, LiteralsAtAndAroundMidpoints) {
  std::mt19937_64 rng(11);
  for (const FormatSpec* fp : kFloatFormats) {
    const FormatSpec& f = *fp;
    SCOPED_TRACE(std::string(f.name));
    Failures fails;
    for (int i = 0; i < 1500; ++i) {
      // A random positive finite pattern and its upper neighbour; their midpoint in decimal,
      // exactly (a dyadic rational: 250 significant digits are more than enough).
      const Bits a{static_cast<std::uint32_t>(rng()) & (storage_mask(f) >> 1)};
      const std::optional<Bits> b = next_up(f, a);
      if (is_nan(f, a) || !b || !std::isfinite(to_double(f, *b))) continue;
      mpfr_t mid;
      mpfr_init2(mid, 80);
      mpfr_set_d(mid, to_double(f, a), MPFR_RNDN);
      mpfr_add_d(mid, mid, to_double(f, *b), MPFR_RNDN);
      mpfr_div_2ui(mid, mid, 1, MPFR_RNDN);
      mpfr_exp_t exp = 0;
      char* s = mpfr_get_str(nullptr, &exp, 10, 250, mid, MPFR_RNDN);
      std::string digits(s);
      mpfr_free_str(s);
      mpfr_clear(mid);
      while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
      // value = 0.digits * 10^exp
      std::string below = digits;
      below.back() = static_cast<char>(below.back() - 1);  // last digit of a dyadic midpoint is 5
      const std::string lits[] = {fmt::format("0.{}e{}", digits, exp), fmt::format("0.{}0000000001e{}", digits, exp),
                                  fmt::format("0.{}99999999e{}", below, exp),
                                  fmt::format("-0.{}e{}", digits, exp)};
      for (const std::string& literal : lits) {
        SCOPED_TRACE(literal);
        check_literal(f, literal, fails);
      }
    }
    EXPECT_EQ(fails.count, 0);
  }
}

TEST(ValueTextMpfr, HexFloatLiterals) {
  std::mt19937_64 rng(13);
  Failures fails;
  for (const FormatSpec* fp : kFloatFormats) {
    const FormatSpec& f = *fp;
    SCOPED_TRACE(std::string(f.name));
    for (int i = 0; i < 1000; ++i) {
      const std::uint64_t m = rng() >> (rng() % 64);
      const int e = static_cast<int>(rng() % 80) - 60 + emin(f);
      const std::string literal = fmt::format("{}0x{:x}.{:x}p{:+d}", rng() % 2 ? "-" : "", m >> 20,
                                              m & 0xfffff, e);
      SCOPED_TRACE(literal);
      check_literal(f, literal, fails);
    }
  }
  EXPECT_EQ(fails.count, 0);
}

TEST(ValueText, SpecialLiteralsAndOutOfRange) {
  EXPECT_EQ(parse_value("inf").kind, ParsedValue::Kind::infinite);
  EXPECT_TRUE(parse_value("-Infinity").negative);
  EXPECT_EQ(parse_value("NaN").kind, ParsedValue::Kind::nan);
  // Far beyond every format: the side is kept, rounding then overflows or underflows.
  const RoundOptions rup{Rounding::rup};
  EXPECT_EQ(round_to(fp32, parse_value("1e999999999999").exact, {}).bits, Bits{0x7f800000});
  EXPECT_EQ(round_to(fp32, parse_value("-1e-999999999999").exact, {}).bits, Bits{0x80000000});
  EXPECT_EQ(round_to(fp32, parse_value("1e-999999").exact, rup).bits, Bits{0x00000001});
  EXPECT_EQ(round_to(fp32, parse_value("0.000e5").exact, {}).bits, Bits{0});
  EXPECT_EQ(round_to(fp32, parse_value("-0x0p+0").exact, {}).bits, Bits{0x80000000});
  // A long literal whose 60th digit decides the rounding (fp32 midpoint 1 + 2^-24).
  EXPECT_EQ(round_to(fp32, parse_value("1.00000005960464477539062500000000000000000000000000000000001").exact, {}).bits,
            Bits{0x3f800001});
  EXPECT_EQ(round_to(fp32, parse_value("1.000000059604644775390625").exact, {}).bits, Bits{0x3f800000});
  for (const char* bad : {"", "-", "1.5.5", "e5", "1e", "1e+", "0x", "0x1.8", "0x1pz", "--1", "1,5", "infinite", "0x.p1"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(parse_value(bad), UsageError);
  }
}

// Control bytes of a bad literal are escaped in the message (found by fuzz_value: an ANSI
// escape reached the terminal raw).
TEST(ValueText, MessagesEscapeControlBytes) {
  auto message = [](std::string_view text) -> std::string {
    try {
      (void)parse_value(text);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_EQ(message("1\x1b[2J"), "'1\\x1b[2J' is not a number (decimal like 0.1, -1e-3, 448; hex float like 0x1p-9; "
                                  "inf; nan; or a bit pattern like 0x7e)");
  EXPECT_EQ(message("0x1\n"), "'0x1\\x0a': a hex float needs a binary exponent (e.g. 0x1.8p-3); a bit pattern "
                              "takes no sign, point or exponent");
  EXPECT_EQ(message("1e\xff"), "'1e\\xff': malformed exponent");
}

TEST(ValueText, ExactPrinting) {
  EXPECT_EQ(hex_float(fp8_e4m3, Bits{0x7e}), "0x1.cp+8");
  EXPECT_EQ(exact_decimal(fp8_e4m3, Bits{0x7e}), "448");
  EXPECT_EQ(hex_float(fp32, Bits{0x00000001}), "0x1p-149");
  EXPECT_EQ(exact_decimal(fp16, Bits{0x0001}), "5.9604644775390625e-08");
  EXPECT_EQ(exact_decimal(fp16, Bits{0x3555}), "0.333251953125");
  EXPECT_EQ(exact_decimal(fp32, Bits{0x7f7fffff}), "3.4028234663852885981170418348451692544e+38");
  EXPECT_EQ(exact_decimal(fp16, Bits{0x7bff}), "65504");
  EXPECT_EQ(exact_decimal(fp16, Bits{0x8000}), "-0");
  EXPECT_EQ(hex_float(fp16, Bits{0x8000}), "-0x0p+0");
  EXPECT_EQ(exact_decimal(fp32, Bits{0x358637bd}), "9.999999974752427078783512115478515625e-07");  // fp32(1e-6)
  EXPECT_EQ(exact_decimal(false, 1, 66), "73786976294838206464");                               // 2^66, 20 digits
  EXPECT_EQ(exact_decimal(false, 1, 70), "1.180591620717411303424e+21");
}

TEST(StreamIo, HexPatterns) {
  Bits b;
  EXPECT_EQ(parse_hex(fp8_e4m3, "0x7e", b), PatternError::none);
  EXPECT_EQ(b, Bits{0x7e});
  EXPECT_EQ(parse_hex(fp8_e4m3, "7E", b), PatternError::none);
  EXPECT_EQ(b, Bits{0x7e});
  EXPECT_EQ(parse_hex(fp8_e4m3, "0X00000000007e", b), PatternError::none);  // leading zeros
  EXPECT_EQ(b, Bits{0x7e});
  EXPECT_EQ(parse_hex(tf32, "0x7ffff", b), PatternError::none);
  EXPECT_EQ(parse_hex(tf32, "0x80000", b), PatternError::too_wide);
  EXPECT_EQ(parse_hex(fp8_e4m3, "0x100", b), PatternError::too_wide);
  EXPECT_EQ(parse_hex(fp4_e2m1, "0x10", b), PatternError::too_wide);
  EXPECT_EQ(parse_hex(fp6_e2m3, "0x3f", b), PatternError::none);
  EXPECT_EQ(parse_hex(fp6_e2m3, "0x40", b), PatternError::too_wide);
  EXPECT_EQ(parse_hex(fp32, "0xffffffff", b), PatternError::none);
  EXPECT_EQ(b, Bits{0xffffffff});
  EXPECT_EQ(parse_hex(fp32, "0x100000000", b), PatternError::too_wide);
  EXPECT_EQ(parse_hex(fp32, "0x1000000000000000000000000000000000000", b), PatternError::too_wide);
  EXPECT_EQ(parse_hex(fp32, "0x10000000000000000000000000000000000zz", b), PatternError::malformed);
  for (const char* bad : {"", "0x", "0xg", "x7e", "-0x1", "0x 1", "0x7e,"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(parse_hex(fp8_e4m3, bad, b), PatternError::malformed);
  }
  char buf[16];
  EXPECT_EQ(std::string(buf, write_hex(buf, 0x7ffff, hex_digits(tf32))), "0x7ffff");
  EXPECT_EQ(std::string(buf, write_hex(buf, 0x7, hex_digits(fp4_e2m1))), "0x7");
  EXPECT_EQ(std::string(buf, write_hex(buf, 0x1, hex_digits(fp32))), "0x00000001");
  std::string_view tok[3];
  EXPECT_EQ(split_tokens(" \t0x1  0x2\r", tok, 3), 2);
  EXPECT_EQ(tok[1], "0x2");
  EXPECT_EQ(split_tokens("a b c d", tok, 3), 4);
  EXPECT_EQ(split_tokens(" \r", tok, 3), 0);
  EXPECT_EQ(quote(std::string_view("a\x01", 2)), "'a\\x01'");
}

}  // namespace
}  // namespace numfid::cli
