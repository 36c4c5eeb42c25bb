// Bounds and verdicts: formulas against hand derivations, and soundness (no legal summation
// order is called a defect) and sharpness (real defects are) on data whose exact dot products
// are representable in double, so that the exact reference needs no oracle.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <bit>
#include <cstring>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>

#include "formats/convert.h"
#include "tolerances/verdict.h"
#include <fmt/format.h>

namespace numfid {
namespace {

TEST(Bounds, UnitRoundoff) {
  EXPECT_EQ(unit_roundoff(fp32, Rounding::rne), 0x1p-24);
  EXPECT_EQ(unit_roundoff(fp32, Rounding::rtz), 0x1p-23);
  EXPECT_EQ(unit_roundoff(bf16, Rounding::rne), 0x1p-8);
  EXPECT_EQ(unit_roundoff(bf16, Rounding::stochastic), 0x1p-7);
  EXPECT_EQ(unit_roundoff(fp8_e4m3, Rounding::rne), 0x1p-4);
}

TEST(Bounds, GammaAndDeterministicCoefficient) {
  EXPECT_DOUBLE_EQ(gamma_n(4095, 0x1p-24), 4095 * 0x1p-24 / (1 - 4095 * 0x1p-24));
  // From n·u = 1/2 the product form (1 - u)^-n - 1, finite for every n (it was +inf from n·u = 1).
  EXPECT_DOUBLE_EQ(gamma_n(300, 0x1p-8), std::expm1(-300 * std::log1p(-0x1p-8)));
  EXPECT_DOUBLE_EQ(gamma_n(127, 0x1p-8), 127 * 0x1p-8 / (1 - 127 * 0x1p-8));
  for (const double n : {128.0, 255.0, 256.0, 4096.0}) {
    const double g = gamma_n(n, 0x1p-8);
    EXPECT_TRUE(std::isfinite(g)) << n;
    EXPECT_GE(g, std::pow(1 + 0x1p-8, n) - 1) << n;  // every product of n factors (1 + δ), |δ| <= u
    EXPECT_GE(g * (1 + 0x1p-40), std::pow(1 - 0x1p-8, -n) - 1) << n;  // and of n factors 1/(1 + δ)
    if (n * 0x1p-8 < 1) {
      EXPECT_LE(g, n * 0x1p-8 / (1 - n * 0x1p-8)) << n;
    }
  }
  Claim c;  // fp32 in, fp32 acc rne, fp32 out: a product does not fit fp32, n = m
  EXPECT_EQ(reduction_bound(c, 4096, false, 0.99).roundings, 4096);
  c.input = &bf16;  // bf16·bf16 fits fp32 exactly: n = m - 1
  const ReductionBound b = reduction_bound(c, 4096, false, 1 - 1e-6);
  EXPECT_EQ(b.roundings, 4095);
  EXPECT_DOUBLE_EQ(b.deterministic, gamma_n(4095, 0x1p-24));
  EXPECT_LT(b.probabilistic, b.deterministic);
  // λ from the confidence: 2n·exp(-λ²(1-u)²/2) = 1e-6.
  EXPECT_NEAR(2 * 4095 * std::exp(-b.lambda * b.lambda * (1 - 0x1p-24) * (1 - 0x1p-24) / 2), 1e-6, 1e-12);
  EXPECT_FALSE(b.derivation.empty());
  // With an addend and rounded products: m = k + 1 terms, n = m - 1 + 1.
  c.acc.products_rounded = true;
  EXPECT_EQ(reduction_bound(c, 4096, true, 0.99).roundings, 4097);
  c.roundings_per_term = 12;  // a plan's own count (pairwise over 4096)
  EXPECT_EQ(reduction_bound(c, 4096, false, 0.99).roundings, 13);
  // Truncating accumulation: no probabilistic bound.
  c.acc.rounding = Rounding::rtz;
  const ReductionBound t = reduction_bound(c, 64, false, 0.99);
  EXPECT_FALSE(t.probabilistic_applies);
  EXPECT_EQ(t.probabilistic, t.deterministic);
}

TEST(Bounds, InputCast) {
  Claim c;
  c.compute_input = &bf16;
  const ReductionBound b = reduction_bound(c, 128, false, 0.999);
  EXPECT_EQ(b.roundings, 127);
  EXPECT_DOUBLE_EQ(b.input_cast, 2 * 0x1p-8 + 0x1p-16);
  EXPECT_DOUBLE_EQ(b.deterministic, gamma_n(127, 0x1p-24) * (1 + b.input_cast) + b.input_cast);
}

// A product a·b has p_A + p_B significand bits: with B in its own format (--in-b) it may not fit
// the accumulator although A·A would, and then its first rounding is one more on its path.
TEST(Bounds, AProductOfTwoFormatsFitsOnlyWithBothPrecisions) {
  Claim c;
  c.input = &fp8_e4m3;
  c.acc.format = &fp16;
  EXPECT_EQ(reduction_bound(c, 1, false, 0.99).roundings, 0);  // 4 + 4 <= 11: exact
  c.input_b = &fp16;                                             // 4 + 11 > 11: rounded
  const ReductionBound one = reduction_bound(c, 1, false, 0.99);
  EXPECT_EQ(one.roundings, 1);
  EXPECT_DOUBLE_EQ(one.deterministic, gamma_n(1, 0x1p-11));
  EXPECT_EQ(reduction_bound(c, 10, false, 0.99).roundings, 10);  // n = m, not m - 1
  EXPECT_EQ(one.derivation[0].find("claim: in fp8_e4m3, in-b fp16, acc fp16"), 0u) << one.derivation[0];

  Claim w;  // bf16·bf16 fits fp32 (8 + 8 <= 24), bf16·fp32 does not (8 + 24 > 24)
  w.input = &bf16;
  EXPECT_EQ(reduction_bound(w, 10, false, 0.99).roundings, 9);
  w.input_b = &fp32;
  EXPECT_EQ(reduction_bound(w, 10, false, 0.99).roundings, 10);
  EXPECT_EQ(reduction_bound(w, 10, true, 0.99).roundings, 11);  // an addend: m = 11 terms
  const ReductionBound wp = reduction_bound(w, 10, false, 1 - 1e-6);
  EXPECT_LE(wp.probabilistic, wp.deterministic);  // the probabilistic model counts n = 10 roundings too
  EXPECT_NEAR(2 * 10 * std::exp(-wp.lambda * wp.lambda * (1 - 0x1p-24) * (1 - 0x1p-24) / 2), 1e-6, 1e-12);  // n = 10
  w.roundings_per_term = 9;  // a plan's own count (sequential over 10): + 1 for the product
  EXPECT_EQ(reduction_bound(w, 10, false, 0.99).roundings, 10);
  w.roundings_per_term.reset();
  // A cast applies to both operands: bf16·bf16 again, exact in fp32.
  w.compute_input = &bf16;
  const ReductionBound cast = reduction_bound(w, 10, false, 0.99);
  EXPECT_EQ(cast.roundings, 9);
  EXPECT_EQ(cast.derivation[0].find("claim: in bf16, in-b fp32, both cast to bf16 (rne)"), 0u) << cast.derivation[0];
  // A B format whose product with A's fits keeps the product exact: fp8_e4m3·bf16 in fp32, 4 + 8.
  Claim f;
  f.input = &fp8_e4m3;
  f.input_b = &bf16;
  EXPECT_EQ(reduction_bound(f, 10, false, 0.99).roundings, 9);
}

TEST(Bounds, OutputRounding) {
  EXPECT_EQ(output_rounding_error(bf16, Rounding::rne, 1.0), 0x1p-8);
  EXPECT_EQ(output_rounding_error(bf16, Rounding::rne, 1.99), 0x1p-8);
  EXPECT_EQ(output_rounding_error(bf16, Rounding::rtz, 2.0), 0x1p-6);
  EXPECT_EQ(output_rounding_error(fp8_e4m3, Rounding::rne, 0.0), 0x1p-10);  // half the least subnormal 2^-9
}

TEST(Bounds, UlpAtMatchesItsDefinition) {
  // ulp_at reads the double's exponent field; the definition: 2^(max(ilogb|x|, emin) - (p - 1)),
  // emin for zero, inf and NaN. Every format, doubles across the whole range (subnormal doubles,
  // powers of two and their neighbours, zeros, inf, NaN) and seeded random bit patterns.
  const auto naive = [](const FormatSpec& f, double x) {
    x = std::fabs(x);
    int e = x > 0 && std::isfinite(x) ? std::ilogb(x) : emin(f);
    e = std::max(e, emin(f));
    return std::ldexp(1.0, e - (f.precision - 1));
  };
  std::vector<double> xs = {0.0, 0x1p-1074, 0x1p-1022, 0x1.fffffffffffffp-1023, 1.0, 0x1.fffffffffffffp+1023, INFINITY, NAN};
  for (int e = -1080; e <= 1024; ++e) {
    const double p = std::ldexp(1.0, e);
    xs.insert(xs.end(), {p, std::nextafter(p, 0.0), std::nextafter(p, INFINITY), 1.5 * p});
  }
  std::mt19937_64 g(20261202);
  for (int i = 0; i < 100000; ++i) xs.push_back(std::bit_cast<double>(g()));
  for (std::size_t i = 0, n = xs.size(); i < n; ++i) xs.push_back(-xs[i]);
  for (const FormatSpec* f : all_formats) {
    SCOPED_TRACE(f->name);
    if (f->kind != FormatKind::binary_float) continue;
    int failures = 0;
    for (const double x : xs) {
      const double a = ulp_at(*f, x), b = naive(*f, x);
      if (std::bit_cast<std::uint64_t>(a) != std::bit_cast<std::uint64_t>(b) && ++failures <= 5)
        ADD_FAILURE() << fmt::format("ulp_at({}, {:a}) = {:a}, the definition gives {:a}", f->name, x, a, b);
    }
  }
}

TEST(Bounds, BinomialTailMatchesNaiveSum) {
  for (std::int64_t n : {1, 5, 40}) {
    for (double p : {0.5, 0.1, 1e-3}) {
      for (std::int64_t k = 0; k <= n; ++k) {
        double naive = 0;
        for (std::int64_t i = k; i <= n; ++i) {
          double c = 1;
          for (std::int64_t j = 0; j < i; ++j) c = c * static_cast<double>(n - j) / static_cast<double>(j + 1);
          naive += c * std::pow(p, static_cast<double>(i)) * std::pow(1 - p, static_cast<double>(n - i));
        }
        EXPECT_NEAR(binomial_tail(n, p, k), naive, 1e-12 + naive * 1e-9) << "n=" << n << " p=" << p << " k=" << k;
      }
    }
  }
  const std::int64_t k = binomial_threshold(65536, 1e-6, 1e-9);
  EXPECT_LE(binomial_tail(65536, 1e-6, k), 1e-9);
  EXPECT_GT(binomial_tail(65536, 1e-6, k - 1), 1e-9);
  // Far in the tail every term underflows: still positive (a probable defect printed
  // "false-alarm probability 0"), and still 0 where the count is impossible.
  EXPECT_EQ(binomial_tail(256, 1e-6, 73), std::numeric_limits<double>::min());
  EXPECT_EQ(binomial_tail(256, 1e-6, 257), 0.0);
  EXPECT_EQ(binomial_tail(256, 0.0, 1), 0.0);
}

// ---------------------------------------------------------------------------------------
// Corpus on double-exact data: bf16-representable inputs with exponents in [-6, 6]: every
// product has at most 16 significant bits within 2^-12..2^14, so any sum of up to 2^20 of
// them is exact in double.

enum class Data { normal, positive, cancellation, wide };

float bf16_value(std::mt19937_64& g, Data kind) {
  std::normal_distribution<float> nd(0, 1);
  std::uniform_real_distribution<float> ud(0.25f, 1.0f);
  float x = kind == Data::positive ? ud(g) : nd(g);
  if (kind == Data::wide) x = std::ldexp(x, static_cast<int>(g() % 11) - 5);
  x = std::clamp(x, -60.0f, 60.0f);
  if (std::fabs(x) < 0x1p-6f) x = 0x1p-6f;
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  const Result r = convert(fp32, bf16, Bits{u});
  return static_cast<float>(to_double(bf16, r.bits));
}

struct Case {
  std::int64_t m, k, n;
  std::vector<float> a, b;  // m×k, k×n
  std::vector<double> exact, sum_abs;
};

Case make_case(std::int64_t m, std::int64_t k, std::int64_t n, Data kind, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  Case c{m, k, n, std::vector<float>(static_cast<std::size_t>(m * k)), std::vector<float>(static_cast<std::size_t>(k * n)), {}, {}};
  for (auto& x : c.a) x = bf16_value(g, kind);
  for (auto& x : c.b) x = bf16_value(g, kind);
  if (kind == Data::cancellation) {  // second half of each row of A negates the first: sums near 0
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < k / 2; ++j) c.a[static_cast<std::size_t>(i * k + k / 2 + j)] = -c.a[static_cast<std::size_t>(i * k + j)];
    for (std::int64_t j = 0; j < k / 2; ++j)
      for (std::int64_t l = 0; l < n; ++l)
        c.b[static_cast<std::size_t>((k / 2 + j) * n + l)] = c.b[static_cast<std::size_t>(j * n + l)] * (g() % 2 ? 1.0f : 1.0078125f);
  }
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t l = 0; l < n; ++l) {
      double s = 0, sa = 0;
      for (std::int64_t j = 0; j < k; ++j) {
        const double p = static_cast<double>(c.a[static_cast<std::size_t>(i * k + j)]) * c.b[static_cast<std::size_t>(j * n + l)];
        s += p;
        sa += std::fabs(p);
      }
      c.exact.push_back(s);
      c.sum_abs.push_back(sa);
    }
  return c;
}

using Products = std::vector<float>;  // exact in fp32: bf16 × bf16 has 16 significant bits
using Summer = std::function<float(const Products&)>;

float sequential(const Products& p) { float s = 0; for (float x : p) s += x; return s; }
float reversed(const Products& p) { float s = 0; for (auto it = p.rbegin(); it != p.rend(); ++it) s += *it; return s; }
float pairwise_range(const float* p, std::size_t n) {
  if (n == 1) return p[0];
  std::size_t h = 1;
  while (h * 2 < n) h *= 2;
  return pairwise_range(p, h) + pairwise_range(p + h, n - h);
}
float pairwise(const Products& p) { return pairwise_range(p.data(), p.size()); }
float blocked128(const Products& p) {
  float s = 0;
  for (std::size_t t = 0; t < p.size(); t += 128) {
    float tile = 0;
    for (std::size_t i = t; i < std::min(p.size(), t + 128); ++i) tile += p[i];
    s += tile;
  }
  return s;
}
float strided32(const Products& p) {
  std::vector<float> lane(32, 0.0f);
  for (std::size_t i = 0; i < p.size(); ++i) lane[i % 32] += p[i];
  for (std::size_t w = 16; w >= 1; w /= 2)
    for (std::size_t i = 0; i < w; ++i) lane[i] += lane[i + w];
  return lane[0];
}
float splitk4(const Products& p) {
  const std::size_t c = (p.size() + 3) / 4;
  float total = 0;
  for (std::size_t s = 0; s < p.size(); s += c) {
    float part = 0;
    for (std::size_t i = s; i < std::min(p.size(), s + c); ++i) part += p[i];
    total += part;
  }
  return total;
}

float round_float(const FormatSpec& f, float x, Rounding r = Rounding::rne) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  RoundOptions o;
  o.rounding = r;
  return static_cast<float>(to_double(f, convert(fp32, f, Bits{u}, o).bits));
}

Summer narrow_accumulator(const FormatSpec& f, Rounding r) {
  return [&f, r](const Products& p) {
    float s = 0;
    for (float x : p) s = round_float(f, s + x, r);
    return s;
  };
}

/// Runs `sum` over every element, rounds into `out` with `out_rounding`, judges under `claim`.
Verdict run(const Case& c, const Summer& sum, const Claim& claim, Rounding out_rounding = Rounding::rne) {
  std::vector<Bits> out;
  std::vector<ReferenceElement> ref;
  Products p(static_cast<std::size_t>(c.k));
  for (std::int64_t i = 0; i < c.m; ++i)
    for (std::int64_t l = 0; l < c.n; ++l) {
      for (std::int64_t j = 0; j < c.k; ++j) p[static_cast<std::size_t>(j)] = c.a[static_cast<std::size_t>(i * c.k + j)] * c.b[static_cast<std::size_t>(j * c.n + l)];
      float s = sum(p);
      std::uint32_t u;
      std::memcpy(&u, &s, 4);
      RoundOptions o;
      o.rounding = out_rounding;
      out.push_back(convert(fp32, *claim.output, Bits{u}, o).bits);
      const std::size_t e = static_cast<std::size_t>(i * c.n + l);
      // Correctly rounded reference: the exact double is exact here, so one rounding of it.
      const double ex = c.exact[e];
      const int ee = ex == 0 ? 0 : std::ilogb(ex) - 52;
      const auto sig = static_cast<std::uint64_t>(std::fabs(std::ldexp(ex, -ee)));
      ref.push_back({round_to(*claim.output, {ex < 0, sig, ee, false}, {}).bits, ex, c.sum_abs[e]});
    }
  return judge(claim, reduction_bound(claim, c.k, false, 1 - 1e-6), out, ref, {c.m, c.n});
}

struct Scenario {
  Data data;
  std::int64_t k;
};

std::string ScenarioName(const ::testing::TestParamInfo<Scenario>& p) {
  static const char* const kinds[] = {"normal", "positive", "cancellation", "wide"};
  return std::string(kinds[static_cast<int>(p.param.data)]) + "_k" + std::to_string(p.param.k);
}

class Corpus : public ::testing::TestWithParam<Scenario> {};

TEST_P(Corpus, LegalOrdersAreNeverDefects) {
  const Scenario s = GetParam();
  const Case c = make_case(8, s.k, 8, s.data, 17 + static_cast<std::uint64_t>(s.k));
  const std::vector<std::pair<const char*, Summer>> orders{{"sequential", sequential}, {"reverse", reversed},
                                                           {"pairwise", pairwise},     {"blocked(128)", blocked128},
                                                           {"strided(32)", strided32}, {"splitk(4)", splitk4}};
  for (const FormatSpec* out : {&fp32, &bf16}) {
    Claim claim;
    claim.input = &bf16;
    claim.output = out;
    for (const auto& [name, sum] : orders) {
      SCOPED_TRACE(testing::Message() << name << " -> " << out->name);
      const Verdict v = run(c, sum, claim);
      EXPECT_NE(v.kind, TensorKind::defect) << v.reason;
      EXPECT_EQ(v.counts[3], 0);
    }
  }
}

TEST_P(Corpus, DefectsAreCaught) {
  const Scenario s = GetParam();
  const Case c = make_case(8, s.k, 8, s.data, 29 + static_cast<std::uint64_t>(s.k));
  Claim claim;
  claim.input = &bf16;
  claim.output = &bf16;
  {
    SCOPED_TRACE("bf16 accumulator claimed fp32");
    const Verdict v = run(c, narrow_accumulator(bf16, Rounding::rne), claim);
    EXPECT_EQ(v.kind, TensorKind::defect) << v.reason;
    const bool narrow = std::any_of(v.signatures.begin(), v.signatures.end(),
                                    [](const Signature& g) { return g.name == "narrow-accumulator"; });
    EXPECT_TRUE(narrow || s.data == Data::cancellation);  // cancellation: Σ|terms| hides the growth
  }
  {
    SCOPED_TRACE("truncating output cast claimed rne");
    const Verdict v = run(c, sequential, claim, Rounding::rtz);
    // Truncation errs by up to one output ulp, inside γ_n·Σ for large k: provable only where the
    // bound is below an ulp. Always visible as a bias.
    const bool bias = std::any_of(v.signatures.begin(), v.signatures.end(), [](const Signature& g) { return g.name == "bias"; });
    EXPECT_TRUE(v.kind == TensorKind::defect || bias) << v.reason;
  }
}

INSTANTIATE_TEST_SUITE_P(Data, Corpus,
                         ::testing::Values(Scenario{Data::normal, 64}, Scenario{Data::normal, 4096},
                                           Scenario{Data::positive, 1024}, Scenario{Data::cancellation, 2048},
                                           Scenario{Data::wide, 512}),
                         ScenarioName);

// Equal products summed sequentially in fp32 (RNE): legal, but the rounding errors repeat
// within each binade of the partial sum and grow like n·u, beyond the Higham–Mary model.
// Probabilistic exceedances alone are then evidence (suspicious), not a defect, unless asked.
TEST(Verdict, ProbabilisticExceedancesAloneAreNotADefectUnderRne) {
  const std::int64_t rows = 16, k = 4096;
  Claim claim;
  claim.input = &bf16;
  std::vector<Bits> out;
  std::vector<ReferenceElement> ref;
  for (std::int64_t r = 0; r < rows; ++r) {
    // a product of two bf16 values: 16 significant bits, so k·p needs up to 28 and rounds
    const float p = static_cast<float>(to_double(bf16, Bits{static_cast<std::uint32_t>(0x3dcd + 3 * r)}) *
                                       to_double(bf16, Bits{0x3fab}));
    float s = 0;
    for (std::int64_t i = 0; i < k; ++i) s += p;  // legal: sequential fp32 RNE
    const double exact = static_cast<double>(p) * static_cast<double>(k);
    std::uint32_t u;
    std::memcpy(&u, &s, 4);
    out.push_back(Bits{u});
    const int ee = std::ilogb(exact) - 52;
    ref.push_back({round_to(fp32, {false, static_cast<std::uint64_t>(std::ldexp(exact, -ee)), ee, false}, {}).bits, exact,
                   std::fabs(exact)});
  }
  const ReductionBound b = reduction_bound(claim, k, false, 1 - 1e-6);
  const Verdict v = judge(claim, b, out, ref, {rows, 1});
  EXPECT_EQ(v.counts[3], 0) << "a legal output outside the deterministic bound: the bound is unsound";
  ASSERT_GT(v.outside_probabilistic, 0) << "the data no longer exercises the case";
  EXPECT_NE(v.kind, TensorKind::defect) << v.reason;
  JudgeOptions strict;
  strict.probabilistic_defects = true;
  if (v.outside_probabilistic >= v.chance_threshold) {
    EXPECT_EQ(v.kind, TensorKind::suspicious);
    EXPECT_EQ(judge(claim, b, out, ref, {rows, 1}, strict).kind, TensorKind::defect);
  }
}

TEST(Verdict, ZeroedColumnIsConfinedDefect) {
  const Case c = make_case(16, 256, 16, Data::positive, 5);
  Claim claim;
  claim.input = &bf16;
  std::vector<Bits> out;
  std::vector<ReferenceElement> ref;
  for (std::size_t e = 0; e < c.exact.size(); ++e) {
    const double ex = c.exact[e];
    const int ee = std::ilogb(ex) - 52;
    const auto sig = static_cast<std::uint64_t>(std::ldexp(ex, -ee));
    const Bits r = round_to(fp32, {ex < 0, sig, ee, false}, {}).bits;
    ref.push_back({r, ex, c.sum_abs[e]});
    out.push_back(e % 16 == 3 ? Bits{0} : r);
  }
  const Verdict v = judge(claim, reduction_bound(claim, 256, false, 1 - 1e-6), out, ref, {16, 16});
  EXPECT_EQ(v.kind, TensorKind::defect);
  EXPECT_EQ(v.counts[3], 16);
  ASSERT_EQ(v.signatures.size(), 1u) << v.signatures[0].name << ": " << v.signatures[0].evidence;
  EXPECT_EQ(v.signatures[0].name, "confined") << v.signatures[0].evidence;
  EXPECT_NE(v.signatures[0].evidence.find("column 3"), std::string::npos) << v.signatures[0].evidence;
}

}  // namespace
}  // namespace numfid

// ---------------------------------------------------------------------------------------
// Softmax bounds derived from the claim: sound for legal fp32 softmaxes (glibc expf, any sum
// order), sharp enough to catch an exp or a sum held in bf16.

namespace numfid {
namespace {

struct SoftmaxRun {
  double worst_ratio = 0;  // max |error| / bound over legal outputs
  int outside = 0;         // elements outside their bound
};

float bf16_round_f(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return static_cast<float>(to_double(bf16, convert(fp32, bf16, Bits{u}).bits));
}

/// One row softmax in fp32 as a kernel computes it; `narrow` holds exp and the sum in bf16.
std::vector<float> kernel_softmax(const std::vector<float>& x, bool reverse_sum, bool narrow) {
  const float m = *std::max_element(x.begin(), x.end());
  std::vector<float> e(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    e[i] = std::exp(x[i] - m);  // glibc expf: within 1 ulp
    if (narrow) e[i] = bf16_round_f(e[i]);
  }
  float s = 0;
  for (std::size_t k = 0; k < e.size(); ++k) {
    s += e[reverse_sum ? e.size() - 1 - k : k];
    if (narrow) s = bf16_round_f(s);
  }
  std::vector<float> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = e[i] / s;
  return y;
}

SoftmaxRun run_softmax(const FormatSpec& out, bool narrow) {
  std::mt19937_64 g(41);
  SoftmaxRun r;
  for (int kind = 0; kind < 3; ++kind)
    for (std::size_t n : {8u, 64u, 1000u})
      for (bool reverse : {false, true}) {
        std::normal_distribution<float> nd(0, kind == 1 ? 8.0f : 1.0f);
        std::vector<float> x(n);
        for (auto& v : x) v = bf16_round_f(nd(g));
        if (kind == 2)  // masked entries
          for (std::size_t i = 0; i < n; i += 3) x[i] = -10000.0f;
        const std::vector<float> y = kernel_softmax(x, reverse, narrow);
        // exact reference in long double (ample here: relative error ~1e-18 << the bounds)
        long double m = *std::max_element(x.begin(), x.end()), s = 0;
        for (float v : x) s += std::exp(static_cast<long double>(v) - m);
        std::vector<double> xd(x.begin(), x.end()), yd(n);
        for (std::size_t i = 0; i < n; ++i) yd[i] = static_cast<double>(std::exp(static_cast<long double>(x[i]) - m) / s);
        const auto b = softmax_element_bounds({&fp32, 1.0}, out, Rounding::rne, xd, yd);
        for (std::size_t i = 0; i < n; ++i) {
          std::uint32_t u;
          std::memcpy(&u, &y[i], 4);
          const double got = to_double(out, convert(fp32, out, Bits{u}).bits);
          const double ratio = std::fabs(got - yd[i]) / b[i].deterministic;
          r.worst_ratio = std::max(r.worst_ratio, ratio);
          if (ratio > 1) ++r.outside;
        }
      }
  return r;
}

TEST(SoftmaxBounds, SoundForLegalFp32Softmax) {
  for (const FormatSpec* out : {&fp32, &bf16}) {
    const SoftmaxRun r = run_softmax(*out, false);
    EXPECT_EQ(r.outside, 0) << out->name << ": worst |error|/bound " << r.worst_ratio;
    RecordProperty(std::string("worst_ratio_") + std::string(out->name), std::to_string(r.worst_ratio));
    EXPECT_GT(r.worst_ratio, 0.01) << out->name << ": the bound is vacuous";  // not 100x too loose
  }
}

TEST(SoftmaxBounds, ExpAndSumInBf16AreCaught) {
  const SoftmaxRun r = run_softmax(fp32, true);
  EXPECT_GT(r.outside, 0) << "worst |error|/bound " << r.worst_ratio;
}

}  // namespace
}  // namespace numfid
