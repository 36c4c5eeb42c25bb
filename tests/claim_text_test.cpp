// The claim's one text form (parse_claim, ClaimSpec::text) and tensor views (view): the
// pieces of tolerances/claim_text.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cfenv>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <vector>

#include <unistd.h>

#include "formats/convert.h"
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif
#include "formats/error.h"
#include "numerics/profile.h"
#include "tolerances/check.h"

namespace numfid {
namespace {

using ::testing::HasSubstr;

/// The message of the InputError that `f` throws ("" if none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// ------------------------------------------------------------------- claim text

TEST(ParseClaim, ASeedNeedsAStochasticRounding) {
  // Refused where nothing would draw from it (exit 2 at the CLI), as convert refuses it.
  for (const char* text : {"--in bf16 --out bf16 --seed 3", "--in bf16 --out bf16 --out-rounding rtz --seed 0",
                           "--in bf16 --profile trn2 --out bf16 --seed 5", "--in bf16 --cast bf16 --out fp32 --seed 1",
                           "--in bf16 --out fp32 --compute fp32 --seed 2"}) {
    SCOPED_TRACE(text);
    try {
      (void)parse_claim(text);
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("no rounding of this claim is stochastic"), std::string::npos) << e.what();
    }
  }
  // Accepted wherever a rounding is stochastic: the accumulator's, the output's, the cast's.
  for (const char* text : {"--in bf16 --acc bf16 --acc-rounding stochastic --out bf16 --seed 3",
                           "--in bf16 --out bf16 --out-rounding stochastic --seed 3",
                           "--in bf16 --profile trn2 --out bf16 --out-rounding stochastic --seed 7",
                           "--in fp32 --cast bf16 --cast-rounding stochastic --out fp32 --seed 4"}) {
    SCOPED_TRACE(text);
    EXPECT_NE(parse_claim(text).seed, 0u);
  }
  // A profile that states a stochastic rounding itself: the seed is its.
  {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / fmt::format("numfid-sr-{}", ::getpid());
    std::filesystem::create_directories(dir);
    const char* old = std::getenv("NUMFID_PROFILES");
    const std::string saved = old ? old : "";
    {
      std::ofstream f(dir / "sr-test.yaml");
      f << "name: sr-test\nversion: 1\nsummary: \"sequential fp32, stochastic rounding\"\nmodel: plan\n"
           "plan:\n  order:\n    value: sequential\n    assumed: \"a test profile\"\n"
           "accumulator:\n  format:\n    value: fp32\n    assumed: \"a test profile\"\n"
           "  rounding:\n    value: stochastic\n    assumed: \"a test profile\"\n";
    }
    ::setenv("NUMFID_PROFILES", dir.c_str(), 1);
    EXPECT_EQ(parse_claim("--in bf16 --profile sr-test --out bf16 --seed 5").seed, 5u);
    EXPECT_THROW((void)parse_claim("--in bf16 --profile cpu-sequential --out bf16 --seed 5"), InputError)
        << "a profile missing from the directory";
    if (old) ::setenv("NUMFID_PROFILES", saved.c_str(), 1);
    else ::unsetenv("NUMFID_PROFILES");
    std::filesystem::remove_all(dir);
  }
  // A reference profile keeps the seed only where it rounds stochastically itself.
  const ClaimSpec sr = parse_claim("--in bf16 --acc bf16 --acc-rounding stochastic --out bf16 --seed 3");
  EXPECT_EQ(claim_with_profile(sr, "trn2").seed, 0u);
  const ClaimSpec out_sr = parse_claim("--in bf16 --out bf16 --out-rounding stochastic --seed 3");
  EXPECT_EQ(claim_with_profile(out_sr, "trn2").seed, 3u);
}

TEST(ParseClaim, ReadsEveryOption) {
  const ClaimSpec c = parse_claim(
      "--in bf16 --in-b fp16 --acc fp32 --acc-rounding rtz --products-rounded --ftz --daz --zero-start --cast bf16 "
      "--cast-rounding stochastic "
      "--plan 'blocked(128, pairwise)' --out fp16 --out-rounding rup --seed 18446744073709551615 --confidence 0.99 "
      "--probabilistic-defects");
  EXPECT_EQ(c.in, &bf16);
  EXPECT_EQ(c.in_b, &fp16);
  EXPECT_EQ(c.acc, &fp32);
  EXPECT_EQ(c.acc_rounding, Rounding::rtz);
  EXPECT_TRUE(c.products_rounded);
  EXPECT_TRUE(c.acc_ftz);
  EXPECT_TRUE(c.acc_daz);
  EXPECT_TRUE(c.acc_zero_start);
  EXPECT_EQ(c.cast, &bf16);
  EXPECT_EQ(c.cast_rounding, Rounding::stochastic);
  ASSERT_TRUE(c.plan.has_value());
  EXPECT_EQ(c.plan->text(), "blocked(128, pairwise)");
  EXPECT_EQ(c.out, &fp16);
  EXPECT_EQ(c.output_rounding(), Rounding::rup);
  EXPECT_EQ(c.seed, 18446744073709551615u);
  EXPECT_EQ(c.confidence, 0.99);
  EXPECT_TRUE(c.probabilistic_defects);
  EXPECT_FALSE(c.ulps.has_value());
}

TEST(ParseClaim, TextRoundTrips) {
  for (const char* text : {"--in bf16 --out bf16", "--in bf16 --acc bf16 --acc-rounding stochastic --out bf16 --seed 3",
                           "--in fp8_e4m3 --plan 'blocked(128, pairwise)' --out bf16",
                           "--in bf16 --ftz --daz --zero-start --plan sequential --out fp32",
                           "--in bf16 --profile trn2 --out bf16 --out-rounding stochastic --seed 7",
                           "--in fp32 --out fp32 --ulps 2", "--in fp32 --out bf16 --compute fp32 --fn-ulps 1",
                           "--in bf16 --out bf16 --compute fp64 --fn-ulps 2 --fn-abs 3e-07"}) {
    SCOPED_TRACE(text);
    const ClaimSpec c = parse_claim(text);
    EXPECT_EQ(c.text(), text);
    EXPECT_EQ(parse_claim(c.text()).text(), c.text());
  }
}

TEST(ParseClaim, ExpUlpsIsFnUlpsOlderName) {
  const ClaimSpec c = parse_claim("--in fp32 --out bf16 --compute fp32 --exp-ulps 3");
  EXPECT_EQ(c.fn_ulps, 3);
  EXPECT_EQ(c.text(), "--in fp32 --out bf16 --compute fp32 --fn-ulps 3");
  EXPECT_EQ(parse_claim("--in fp32 --out fp32 --compute float64").compute->precision, 53);
}

TEST(ParseClaim, DefaultsAreAbsentNotSentinels) {
  const ClaimSpec c = parse_claim("--in bf16 --out bf16");
  EXPECT_FALSE(c.out_rounding.has_value());
  EXPECT_FALSE(c.plan.has_value());
  EXPECT_FALSE(c.ulps.has_value());
  EXPECT_EQ(c.profile, nullptr);
  EXPECT_EQ(c.output_rounding(), Rounding::rne);
  // Under a profile, the output rounding left out is the profile's, not rne-by-default.
  const ClaimSpec p = parse_claim("--in bf16 --out bf16 --profile trn2");
  EXPECT_FALSE(p.out_rounding.has_value());
  ASSERT_NE(p.profile, nullptr);
  EXPECT_EQ(p.profile->name, "trn2");
}

TEST(ParseClaim, InlineValuesAndQuotes) {
  EXPECT_EQ(parse_claim("--in=bf16 --out=\"bf16\" --plan=splitk(4)").text(), "--in bf16 --plan splitk(4) --out bf16");
}

// A value the claim keeps as text (a scale file name) holding spaces and both kinds of quote is
// printed as one token that parses back to itself: text() is a fixed point. Until 2026-12-05 a
// value with both quotes was wrapped in "..." and split at its own " (the claim fuzz target's
// finding: --scale-b 'c"n x' printed as "c"n x" parsed as c + n + x).
TEST(ParseClaim, ValuesWithBothQuotesPrintAsOneToken) {
  for (const char* name : {"a'b\"c", "\"lead", "trail\"", "x \"y\" 'z'", "\"\"", "it's \"", "'\"'"}) {
    SCOPED_TRACE(name);
    ClaimSpec c = parse_claim("--in fp8_e4m3 --out bf16 --scale-a 0.5 --scale-b x");
    ASSERT_EQ(c.quant.scale_b_text, "x");
    c.quant.scale_b_text = name;
    const std::string text = c.text();
    const ClaimSpec again = parse_claim(text);
    EXPECT_EQ(again.quant.scale_b_text, name) << text;
    EXPECT_EQ(again.text(), text);
  }
}

TEST(ParseClaim, ErrorsNameTheToken) {
  const std::pair<const char*, const char*> cases[] = {
      {"--in bf16 --out bf16 --acc fp99", "unknown format 'fp99'"},
      // E8M0 holds no 0 and no negative value: no sum, computation or cast is in it.
      {"--in bf16 --out bf16 --acc e8m0", "--acc e8m0: not a signed float format"},
      {"--in bf16 --out bf16 --compute e8m0", "--compute e8m0: not a signed float format"},
      {"--in bf16 --out bf16 --cast e8m0", "--cast e8m0: not a signed float format"},
      // An integer cast's error is not relative (0.01 cast up to 1): the cast bound does not hold.
      {"--in fp32 --out fp32 --cast int8", "--cast int8: not a signed float format (an integer cast's error"},
      {"--in fp32 --out fp32 --cast uint8", "--cast uint8: not a signed float format (an integer cast's error"},
      {"--in bf16 --out bf16 --cast-rounding rtz", "--cast-rounding needs --cast F"},
      {"--in bf16 --out bf16 --acc-rounding sideways", "--acc-rounding 'sideways': unknown rounding mode"},
      {"--in bf16 --out bf16 --plan 'blocked(0)'", "--plan: plan 'blocked(0)': '0' is not a positive integer"},
      {"--in bf16 --out bf16 --seed 18446744073709551616", "--seed '18446744073709551616' must be an integer in [0, 2^64 - 1]"},
      {"--in bf16 --out bf16 --seed -1", "--seed '-1' must be an integer"},
      {"--in bf16 --out bf16 --ulps nan", "--ulps 'nan' must be a positive number"},
      {"--in bf16 --out bf16 --ulps -1", "--ulps '-1' must be a positive number"},
      {"--in bf16 --out bf16 --confidence 1", "--confidence '1' must be a probability strictly between 0 and 1"},
      {"--in bf16 --out bf16 --frobnicate", "claim: unknown option '--frobnicate'"},
      // check's own options written into the claim text (the README's row-op examples show them
      // beside the claim): said where they go, not "unknown".
      {"--in bf16 --out bf16 --compute fp32 --softmax online",
       "claim: '--softmax' is an option of `numfid check` (softmax, log_softmax), not part of the claim text"},
      {"--in bf16 --out bf16 --compute fp32 --variance welford",
       "claim: '--variance' is an option of `numfid check` (layernorm), not part of the claim text: give it beside the "
       "claim (a gate case's key 'variance'"},
      {"--in bf16 --out bf16 --compute fp32 --norm-form=shifted", "claim: '--norm-form' is an option of `numfid check`"},
      {"--in bf16 --out bf16 --ref r.npy", "claim: '--ref' is an option of `numfid check` (matmul, dot)"},
      {"--in bf16 --out bf16 bf16", "claim: unexpected token 'bf16'"},
      {"--in bf16 --in fp16 --out bf16", "claim: --in given twice"},
      {"--out bf16", "claim: --in F is required"},
      {"--in bf16", "claim: --out F is required"},
      {"--in bf16 --out", "claim: --out needs a value"},
      {"--in bf16 --out bf16 --plan sequential --profile trn2", "--plan and --profile are exclusive"},
      {"--in bf16 --out bf16 --profile trn2 --acc fp16", "--acc: profile trn2 states the accumulation itself"},
      {"--in bf16 --out bf16 --ftz --profile nvidia-h100-tc", "--ftz: profile nvidia-h100-tc states the accumulation"},
      {"--in bf16 --out bf16 --profile trn2 --acc-rounding rtz", "--acc-rounding: profile trn2 states the accumulation"},
      {"--in bf16 --out bf16 --ulps 1 --compute fp32", "--ulps and --compute are exclusive"},
      {"--in bf16 --out bf16 --profile trn9", "unknown profile 'trn9'"},
      {"--in bf16 --out bf16 --fn-ulps 2", "--fn-ulps needs --compute F"},
      {"--in bf16 --out bf16 --compute fp32 --fn-abs -1", "--fn-abs '-1' must be a finite number >= 0"},
      // The claim's numbers read as the CLI's number options (read_decimal): a number beyond
      // double's range is out of range, not "not a number".
      {"--in bf16 --out bf16 --compute fp32 --fn-abs 1e400", "--fn-abs: '1e400' is out of range"},
      {"--in bf16 --out bf16 --compute fp32 --fn-abs 1e-5x", "--fn-abs: '1e-5x' is not a number"},
      {"--in bf16 --out bf16 --compute fp32 --fn-ulps 1 --exp-ulps 1", "--exp-ulps is --fn-ulps's older name"},
      {"--in bf16 --out bf16 --products-rounded=1", "--products-rounded is a flag"},
      {"--in bf16 --out 'bf16", "unterminated quote"},
  };
  for (const auto& [text, message] : cases) {
    SCOPED_TRACE(text);
    EXPECT_THAT(error_of([&] { parse_claim(text); }), HasSubstr(message));
  }
}

TEST(ParseClaimWithProfile, ClaimOptionsInPlaceOfAProfileAreNamedAsSuch) {
  // '--in bf16' as a profile made the claim text '... --profile --in bf16', and parse_claim said
  // "--profile needs a value" about a --profile nobody wrote.
  EXPECT_EQ(error_of([] { parse_claim_with_profile("--in bf16 --out bf16", "--in bf16"); }),
            "the target's profile '--in bf16' is not a profile: give a profile's name or file (`numfid profiles` lists "
            "them), not claim options");
  EXPECT_EQ(error_of([] { claim_with_profile(parse_claim("--in bf16 --out bf16"), "", "ref_profile="); }),
            "ref_profile= '' is not a profile: give a profile's name or file (`numfid profiles` lists them), not claim "
            "options");
  double v = 0;
  EXPECT_EQ(read_decimal("0x1p-1074", v), "");  // the least subnormal: a number (strtod may set ERANGE)
  EXPECT_EQ(v, 0x1p-1074);
  EXPECT_EQ(read_decimal("1e-400", v), "'1e-400' is out of range");
  EXPECT_EQ(read_decimal("", v), "'' is not a number");
}

TEST(ParseClaimWithProfile, ReplacesTheProfileAndRefusesAccumulatorOptions) {
  // tol --target-profile and Python's target_profile=: the profile replaces one the claim names,
  // the rest of the text (quoted plans, inline values) is kept and parsed as given.
  EXPECT_EQ(parse_claim_with_profile("--in bf16 --out=bf16 --profile cpu-sequential", "trn2").text(),
            "--in bf16 --profile trn2 --out bf16");
  EXPECT_EQ(parse_claim_with_profile("--in bf16 --out bf16 --profile=trn2", "nvidia-h100-tc").profile_name,
            "nvidia-h100-tc");
  EXPECT_EQ(parse_claim_with_profile("--in bf16 --out 'bf16'", "trn2").profile_name, "trn2");
  // Accumulator options and a plan are refused as beside --profile itself (not dropped silently):
  // even --acc fp32, a profile's own accumulator, since the claim states what the profile states.
  EXPECT_THAT(error_of([] { parse_claim_with_profile("--in bf16 --acc fp16 --out bf16", "trn2"); }),
              HasSubstr("--acc: profile trn2 states the accumulation itself"));
  EXPECT_THAT(error_of([] { parse_claim_with_profile("--in bf16 --acc fp32 --out bf16", "trn2"); }),
              HasSubstr("--acc: profile trn2 states the accumulation itself"));
  EXPECT_THAT(error_of([] { parse_claim_with_profile("--in bf16 --out bf16 --plan 'blocked(128, pairwise)'", "trn2"); }),
              HasSubstr("--plan and --profile are exclusive"));
  EXPECT_THAT(error_of([] { parse_claim_with_profile("--in bf16 --out bf16", "trn9"); }), HasSubstr("unknown profile 'trn9'"));
  // A reference profile, by contrast, replaces the accumulator options (claim_with_profile).
  EXPECT_EQ(claim_with_profile(parse_claim("--in bf16 --acc fp16 --out bf16"), "trn2").text(),
            "--in bf16 --profile trn2 --out bf16");
}

// ------------------------------------------------------------------- views

TEST(View, FloatContainersHoldValuesOfTheDeclaredFormat) {
  const std::vector<float> v{1.0f, -0x1.fep+1f, 0.0f};
  const TensorData t = view(std::span<const float>(v), {3}, "bf16", "x");
  EXPECT_EQ(t.format, &bf16);
  ASSERT_EQ(t.values.size(), 3u);
  EXPECT_EQ(t.values[0], Bits{0x3f80});
  EXPECT_EQ(t.values[1], Bits{0xc07f});
  EXPECT_EQ(t.values[2], Bits{0x0000});
  const std::vector<float> bad{1.0f, 0x1.002p0f};
  EXPECT_THAT(error_of([&] { view(std::span<const float>(bad), {2}, "bf16", "x"); }),
              HasSubstr("x: element 1 = 1.00048828125 (0x1.002p+0) is not a bf16 value"));
  EXPECT_THAT(error_of([&] { view(std::span<const float>(v), {2, 2}, "bf16", "x"); }),
              HasSubstr("x: shape [2, 2] holds 4 elements, the data has 3"));
  const std::vector<double> d{448.0, 464.0};
  EXPECT_THAT(error_of([&] { view(std::span<const double>(d), {2}, "fp8_e4m3", "d"); }), HasSubstr("element 1 = 464"));
}

TEST(View, PatternsMustFitTheFormat) {
  const std::vector<std::uint8_t> fp6{0x3f, 0x40};
  EXPECT_THAT(error_of([&] { view(std::span<const std::uint8_t>(fp6), {2}, "fp6_e3m2", "w"); }),
              HasSubstr("w: element 1 = 0x40 has bits outside the 6-bit fp6_e3m2 pattern"));
  const std::vector<std::uint16_t> b{0x7fc0};
  EXPECT_EQ(view(std::span<const std::uint16_t>(b), {1}, "bf16").values[0], Bits{0x7fc0});
}

}  // namespace
}  // namespace numfid
