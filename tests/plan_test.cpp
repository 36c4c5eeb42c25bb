// Reduction plans and emulated ops against a deliberately naive second implementation:
// every plan written as the obvious loops over doubles, each addition an exact MPFR sum
// rounded by the independent MPFR oracle of tests/support (never numfid's rounding code).
#include <gtest/gtest.h>
#include <mpfr.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <random>

#include "formats/convert.h"
#include "formats/error.h"
#include "numerics/emulate.h"
#include "tests/support/mpfr_oracle.h"

namespace numfid {
namespace {

// ------------------------------------------------------------------- parsing and counts

TEST(PlanText, ParsesEveryForm) {
  for (const char* t : {"sequential", "reverse", "pairwise", "blocked(128)", "blocked(64, pairwise)", "splitk(4)",
                        "strided(32)"}) {
    std::string err;
    const auto p = ReductionPlan::parse(t, &err);
    ASSERT_TRUE(p) << t << ": " << err;
    EXPECT_EQ(p->text(), t);
  }
  EXPECT_EQ(ReductionPlan::parse(" blocked( 8 , sequential ) ")->text(), "blocked(8)");
  EXPECT_EQ(ReductionPlan::parse("numpy")->text(), "blocked(8192, numpy)");
}

TEST(PlanText, RejectsBadPlansWithAReason) {
  const std::pair<const char*, const char*> bad[] = {
      {"zigzag", "unknown plan 'zigzag'"},        {"blocked", "takes 1 or 2 parameters"},
      {"blocked(0)", "not a positive integer"},   {"strided(24)", "power of two"},
      {"splitk(4", "missing ')'"},                {"pairwise(2)", "takes no parameter"},
      {"blocked(8, zigzag)", "inner order 'zigzag'"}, {"splitk(4, pairwise)", "splitk takes 1 parameter"}};
  for (const auto& [text, why] : bad) {
    std::string err;
    EXPECT_FALSE(ReductionPlan::parse(text, &err)) << text;
    EXPECT_NE(err.find(why), std::string::npos) << text << " -> " << err;
  }
  // A long plan (a generated tree) is shown by its ends and length, not echoed whole.
  const std::string deep = "tree(" + std::string(20000, '(') + "0" + std::string(20000, ')') + ")";
  std::string err;
  EXPECT_FALSE(ReductionPlan::parse(deep, &err));
  EXPECT_LT(err.size(), 400u) << err.substr(0, 400);
  EXPECT_NE(err.find("...(" + std::to_string(deep.size()) + " characters)..."), std::string::npos) << err;
  EXPECT_NE(err.find("a node has 1 children"), std::string::npos) << err;
}

TEST(PlanText, RoundingCounts) {
  auto n = [](const char* t, std::int64_t k, bool c = false) { return ReductionPlan::parse(t)->roundings(k, c); };
  EXPECT_EQ(n("sequential", 4096), 4095);
  EXPECT_EQ(n("sequential", 4096, true), 4096);
  EXPECT_EQ(n("pairwise", 4096), 12);
  EXPECT_EQ(n("pairwise", 4097), 13);
  EXPECT_EQ(n("blocked(128)", 4096), 127 + 31);
  EXPECT_EQ(n("blocked(128, pairwise)", 4096), 7 + 31);
  EXPECT_EQ(n("splitk(4)", 4096), 1023 + 3);
  EXPECT_EQ(n("strided(32)", 4096), 127 + 5);
  EXPECT_EQ(n("blocked(128)", 100), 99);
  EXPECT_EQ(n("blocked(8192, numpy)", 7), 6);
  EXPECT_EQ(n("blocked(8192, numpy)", 128), 15 + 3);
  EXPECT_EQ(n("blocked(8192, numpy)", 130), 1 + 7 + 3 + 2);  // split 64 | 66; 66 = 8 lanes of 8 + 2 left over
  EXPECT_EQ(n("blocked(8192, numpy)", 256), 1 + 15 + 3);   // split 128 | 128
  EXPECT_EQ(n("blocked(8192, numpy)", 16384), 1 + 6 + 18);  // two buffers; 8192 halves 6 times to 128
}

// Plan parameters are bounded (max_plan_parameter = 2^40, lanes 2^20) and every count is
// exact up to K = 2^63 - 1: splitk(2^63 - 1) used to overflow ceil_div and divide by zero.
TEST(PlanText, RefusesParametersBeyondTheLimitWithTheMessage) {
  const std::pair<const char*, const char*> bad[] = {
      {"splitk(9223372036854775807)",
       "plan 'splitk(9223372036854775807)': '9223372036854775807' is larger than the largest plan parameter "
       "1099511627776 (2^40)"},
      {"blocked(1099511627777)",
       "plan 'blocked(1099511627777)': '1099511627777' is larger than the largest plan parameter 1099511627776 "
       "(2^40)"},
      {"blocked(99999999999999999999999, pairwise)",
       "plan 'blocked(99999999999999999999999, pairwise)': '99999999999999999999999' is larger than the largest "
       "plan parameter 1099511627776 (2^40)"},
      {"strided(2097152)", "plan 'strided(2097152)': '2097152' is larger than the largest lane count 1048576 (2^20)"},
      {"splitk(-9223372036854775809)", "plan 'splitk(-9223372036854775809)': '-9223372036854775809' is not a positive integer"},
      {"blocked()", "plan 'blocked()': '' is not a positive integer"},
      {"", "empty plan text (valid: sequential, reverse, pairwise, numpy, blocked(T), blocked(T, pairwise), "
           "blocked(T, numpy), splitk(S), strided(L), tree((0 1) (2 3)))"},
      {" \t ", "empty plan text (valid: sequential, reverse, pairwise, numpy, blocked(T), blocked(T, pairwise), "
              "blocked(T, numpy), splitk(S), strided(L), tree((0 1) (2 3)))"},
  };
  for (const auto& [text, why] : bad) {
    std::string err;
    EXPECT_FALSE(ReductionPlan::parse(text, &err)) << text;
    EXPECT_EQ(err, why) << text;
  }
  EXPECT_EQ(ReductionPlan::parse("blocked(1099511627776)")->param, max_plan_parameter);
  EXPECT_EQ(ReductionPlan::parse("strided(1048576)")->param, max_plan_lanes);
}

TEST(PlanText, RoundingCountsDoNotOverflow) {
  constexpr std::int64_t kmax = INT64_MAX;  // 2^63 - 1
  auto n = [](const char* t, std::int64_t k, bool c = false) { return ReductionPlan::parse(t)->roundings(k, c); };
  EXPECT_EQ(n("splitk(1099511627776)", 16), 15);  // one term per chunk: the chunk sums are added in order
  EXPECT_EQ(n("splitk(1099511627776)", 16, true), 16);
  EXPECT_EQ(n("blocked(1099511627776)", 16), 15);
  EXPECT_EQ(n("sequential", kmax, true), kmax);
  EXPECT_EQ(n("pairwise", kmax), 63);
  EXPECT_EQ(n("pairwise", (std::int64_t{1} << 62) + 1), 63);
  EXPECT_EQ(n("pairwise", std::int64_t{1} << 62), 62);
  // ceil((2^63 - 1) / 2^40) = 2^23 tiles of 2^40
  EXPECT_EQ(n("blocked(1099511627776)", kmax), (std::int64_t{1} << 40) - 1 + (std::int64_t{1} << 23) - 1);
  // chunks of ceil((2^63 - 1) / 2^40) = 2^23 terms, ceil((2^63 - 1) / 2^23) = 2^40 of them
  EXPECT_EQ(n("splitk(1099511627776)", kmax), (std::int64_t{1} << 23) - 1 + (std::int64_t{1} << 40) - 1);
  EXPECT_EQ(n("splitk(3)", kmax), 3074457345618258602 + 2);  // chunks of ceil((2^63 - 1) / 3) = 3074457345618258603
  EXPECT_EQ(n("strided(1048576)", kmax), (std::int64_t{1} << 43) - 1 + 20);
  EXPECT_EQ(n("blocked(1)", kmax, true), kmax);
  EXPECT_EQ(n("blocked(1099511627776, numpy)", 16384), 1 + 6 + 18);
  // 2^40 halves 33 times down to 128 (fuzz_plan: the unmemoised recursion ran for minutes).
  EXPECT_EQ(n("blocked(1099511627776, numpy)", std::int64_t{1} << 40), 33 + 18);
  // depth(801104857690) = 49 (a memoised Python transcription of numpy_depth), 3597911 tiles
  EXPECT_EQ(n("blocked(801104857690, numpy)", 0x2800000000100001), 49 + 3597911 - 1);
}

TEST(PlanText, ACountOfAPlanWithoutAParameterThrows) {
  const ReductionPlan p{PlanKind::splitk, 0};
  EXPECT_THROW((void)p.roundings(16, false), std::invalid_argument);
  EXPECT_EQ((ReductionPlan{PlanKind::sequential, 0}.roundings(16, false)), 15);
}

// numpy's float32 np.sum recorded by scripts/record-numpy-sums.py (numpy 1.24.2): the
// `numpy` plan must reproduce every result bit for bit.
std::uint64_t splitmix64(std::uint64_t& state) {
  state += 0x9E3779B97F4A7C15ULL;
  std::uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

TEST(NumpySum, ReproducesRecordedNumpy) {
  std::FILE* f = std::fopen(NUMFID_TEST_DATA "/numpy/sum_f32.txt", "r");
  ASSERT_NE(f, nullptr) << NUMFID_TEST_DATA "/numpy/sum_f32.txt";
  char line[256];
  int cases = 0, bad = 0;
  AccumulatorModel acc;  // fp32, round to nearest
  const ReductionPlan plan = *ReductionPlan::parse("numpy");
  while (std::fgets(line, sizeof line, f)) {
    if (line[0] == '#') continue;
    unsigned long long n = 0, seed = 0;
    unsigned int want = 0;
    ASSERT_EQ(std::sscanf(line, "%llu %llu %x", &n, &seed, &want), 3) << line;
    std::uint64_t state = seed;
    std::vector<Term> terms;
    for (unsigned long long i = 0; i < n; ++i) {
      const std::uint64_t z = splitmix64(state);
      const auto bits = static_cast<std::uint32_t>(((z >> 63) << 31) | ((127 - 20 + (z >> 32) % 41) << 23) | (z & 0x7fffff));
      terms.push_back(as_term(fp32, Bits{bits}));
    }
    const Bits got = reduce(plan, acc, terms);
    ++cases;
    if (got.raw != want && ++bad <= 5)
      ADD_FAILURE() << "n=" << n << " seed=" << seed << ": numfid " << to_hex(fp32, got) << " numpy 0x" << std::hex << want;
  }
  std::fclose(f);
  EXPECT_EQ(cases, 46);
  // The recorded results also tell the plan from plain pairwise: most large-n cases differ.
}

// ------------------------------------------------------------------- naive evaluator

/// fl(x + y) in `acc` under rounding r: the exact sum by MPFR, rounded by the oracle.
double naive_add(const FormatSpec& acc, Rounding r, double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return NAN;
  if (std::isinf(x) || std::isinf(y)) {
    if (std::isinf(x) && std::isinf(y) && (x > 0) != (y > 0)) return NAN;
    return std::isinf(x) ? x : y;
  }
  mpfr_t a, b, s;
  mpfr_inits2(2200, a, b, s, static_cast<mpfr_ptr>(nullptr));
  mpfr_set_d(a, x, MPFR_RNDN);
  mpfr_set_d(b, y, MPFR_RNDN);
  mpfr_add(s, a, b, MPFR_RNDN);  // exact at 2200 bits
  double out;
  if (mpfr_zero_p(s)) {
    const bool neg = (std::signbit(x) && std::signbit(y)) || ((x != 0 || y != 0 || std::signbit(x) != std::signbit(y)) && r == Rounding::rdn);
    out = neg ? -0.0 : 0.0;
  } else {
    mpz_t z;
    mpz_init(z);
    long e = mpfr_get_z_2exp(z, s);
    const bool neg = mpz_sgn(z) < 0;
    mpz_abs(z, z);
    bool sticky = false;
    const long bits = static_cast<long>(mpz_sizeinbase(z, 2));
    if (bits > 120) {  // keep 120 bits, the rest as a sticky bit
      const auto drop = static_cast<mp_bitcnt_t>(bits - 120);
      sticky = mpz_scan1(z, 0) < drop;
      mpz_fdiv_q_2exp(z, z, drop);
      e += static_cast<long>(drop);
    }
    uint128 sig = 0;
    for (long i = static_cast<long>(mpz_sizeinbase(z, 2)) - 1; i >= 0; --i)
      sig = (sig << 1) | static_cast<uint128>(mpz_tstbit(z, static_cast<mp_bitcnt_t>(i)));
    mpz_clear(z);
    const test::Rounded rd = test::oracle_round_scaled(acc, neg, sig, static_cast<int>(e), sticky, r);
    RoundOptions o;
    o.rounding = r;
    out = to_double(acc, test::oracle_finish(acc, rd, o).bits);
  }
  mpfr_clears(a, b, s, static_cast<mpfr_ptr>(nullptr));
  return out;
}

/// fl(x) alone (the first term of a sum): x + (-0) is x for every x.
double naive_round(const FormatSpec& acc, Rounding r, double x) { return naive_add(acc, r, x, -0.0); }

double naive_pairwise(const FormatSpec& acc, Rounding r, const std::vector<double>& t, std::size_t lo, std::size_t n) {
  if (n == 1) return naive_round(acc, r, t[lo]);
  std::size_t h = 1;
  while (h * 2 < n) h *= 2;
  return naive_add(acc, r, naive_pairwise(acc, r, t, lo, h), naive_pairwise(acc, r, t, lo + h, n - h));
}

/// The plan written out as loops (DESIGN.md's definitions), `c` the optional addend.
double naive_reduce(const std::string& plan, const FormatSpec& acc, Rounding r, const std::vector<double>& t,
                    std::optional<double> c) {
  const std::size_t n = t.size();
  if (plan == "sequential" || plan == "reverse") {
    std::optional<double> s = c;
    for (std::size_t i = 0; i < n; ++i) {
      const double x = plan == "sequential" ? t[i] : t[n - 1 - i];
      s = s ? naive_add(acc, r, *s, x) : naive_round(acc, r, x);
    }
    return *s;
  }
  if (plan == "pairwise") {
    const double p = naive_pairwise(acc, r, t, 0, n);
    return c ? naive_add(acc, r, *c, p) : p;
  }
  std::size_t tile = 0;
  bool inner_pairwise = false;
  if (plan.rfind("blocked(", 0) == 0) {
    tile = std::stoul(plan.substr(8));
    inner_pairwise = plan.find("pairwise") != std::string::npos;
    EXPECT_EQ(plan.find("numpy"), std::string::npos) << "naive_reduce has no numpy order: see NumpySum";
  } else if (plan.rfind("splitk(", 0) == 0) {
    const std::size_t s = std::stoul(plan.substr(7));
    tile = (n + s - 1) / s;
  }
  if (tile > 0) {
    std::optional<double> run = c;
    for (std::size_t lo = 0; lo < n; lo += tile) {
      const std::size_t len = std::min(tile, n - lo);
      double part;
      if (inner_pairwise) {
        part = naive_pairwise(acc, r, t, lo, len);
      } else {
        part = naive_round(acc, r, t[lo]);
        for (std::size_t i = lo + 1; i < lo + len; ++i) part = naive_add(acc, r, part, t[i]);
      }
      run = run ? naive_add(acc, r, *run, part) : part;
    }
    return *run;
  }
  // strided(L)
  const std::size_t lanes = std::stoul(plan.substr(8));
  std::vector<std::optional<double>> lane(lanes);
  lane[0] = c;
  for (std::size_t i = 0; i < n; ++i) {
    auto& l = lane[i % lanes];
    l = l ? naive_add(acc, r, *l, t[i]) : naive_round(acc, r, t[i]);
  }
  std::vector<double> v(lanes);
  for (std::size_t i = 0; i < lanes; ++i) v[i] = lane[i] ? *lane[i] : 0.0;
  for (std::size_t w = lanes / 2; w >= 1; w /= 2)
    for (std::size_t i = 0; i < w; ++i) v[i] = naive_add(acc, r, v[i], v[i + w]);
  return v[0];
}

// ------------------------------------------------------------------- data

Bits random_value(std::mt19937_64& g, const FormatSpec& f, int kind) {
  // kind 0: well-scaled normal values; 1: wide exponent range incl. subnormals;
  // 2: any pattern (inf/NaN included)
  const std::uint32_t mask = storage_mask(f);
  for (;;) {
    Bits b{static_cast<std::uint32_t>(g()) & mask};
    const Decoded d = decode(f, b);
    if (kind == 2) return b;
    if (d.cls == FpClass::nan || d.cls == FpClass::infinite) continue;
    if (kind == 0) {
      const double v = std::fabs(to_double(f, b));
      if (v != 0 && (v < 0x1p-4 || v > 0x1p4)) continue;
    }
    return b;
  }
}

struct ModelSetup {
  const FormatSpec* in;
  const FormatSpec* acc;
  Rounding r;
};

void PrintTo(const ModelSetup& s, std::ostream* os) {
  *os << "in " << s.in->name << ", acc " << s.acc->name << " " << rounding_name(s.r);
}

class PlanVsNaive : public ::testing::TestWithParam<ModelSetup> {};

TEST_P(PlanVsNaive, EveryPlanBitExact) {
  const ModelSetup s = GetParam();
  std::mt19937_64 g(1234);
  const std::vector<std::string> plans{"sequential", "reverse",  "pairwise",    "blocked(8)", "blocked(8, pairwise)",
                                       "splitk(3)",  "strided(4)", "strided(16)"};
  int failures = 0;
  for (int trial = 0; trial < 200 && failures < 5; ++trial) {
    const int kind = trial % 3;
    const std::size_t n = 1 + g() % 70;
    const bool with_c = trial % 4 == 1;
    std::vector<Term> terms;
    std::vector<double> exact;
    for (std::size_t i = 0; i < n; ++i) {
      Bits a = random_value(g, *s.in, kind), b = random_value(g, *s.in, kind);
      if (g() % 16 == 0) a = zero(*s.in, g() % 2 == 0);  // ±0 products
      terms.push_back(exact_product(*s.in, a, *s.in, b));
      double p = to_double(*s.in, a) * to_double(*s.in, b);  // exact: ≤ 48-bit significands
      if (trial % 5 == 4 && i % 2 == 1) {  // cancellation: each odd product negates the previous
        terms.back() = terms[terms.size() - 2];
        terms.back().value.negative = !terms.back().value.negative;
        p = -exact[exact.size() - 1];
      }
      exact.push_back(p);
    }
    std::optional<Bits> c;
    std::optional<double> cd;
    if (with_c) {
      c = random_value(g, *s.acc, kind == 2 ? 1 : kind);
      cd = to_double(*s.acc, *c);
    }
    for (const std::string& pt : plans) {
      SCOPED_TRACE(testing::Message() << "trial " << trial << " n=" << n << " plan " << pt << " in " << s.in->name
                                      << " acc " << s.acc->name << " " << rounding_name(s.r));
      AccumulatorModel acc;
      acc.format = s.acc;
      acc.rounding.rounding = s.r;
      const Bits got = reduce(*ReductionPlan::parse(pt), acc, terms, c);
      const double want = naive_reduce(pt, *s.acc, s.r, exact, cd);
      const double gotd = to_double(*s.acc, got);
      const bool same = (std::isnan(want) && std::isnan(gotd)) ||
                        (want == gotd && std::signbit(want) == std::signbit(gotd));
      if (!same && ++failures <= 5)
        ADD_FAILURE() << "numfid " << to_hex(*s.acc, got) << " = " << gotd << ", naive " << want;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, PlanVsNaive,
                         ::testing::Values(ModelSetup{&bf16, &fp32, Rounding::rne}, ModelSetup{&fp16, &fp32, Rounding::rne},
                                           ModelSetup{&fp32, &fp32, Rounding::rne}, ModelSetup{&bf16, &bf16, Rounding::rne},
                                           ModelSetup{&fp8_e4m3, &fp16, Rounding::rne}, ModelSetup{&bf16, &fp32, Rounding::rtz},
                                           ModelSetup{&fp16, &fp32, Rounding::rdn}, ModelSetup{&fp8_e5m2, &bf16, Rounding::rup}));

// ------------------------------------------------------------------- reduce's hardware path

/// A double as an exact term (53-bit significand).
Term term_of(double x) {
  Term t;
  t.value.negative = std::signbit(x);
  if (x == 0) return t;
  t.cls = FpClass::normal;
  int e = 0;
  const double m = std::frexp(std::fabs(x), &e);
  t.value.significand = static_cast<uint128>(static_cast<std::uint64_t>(std::ldexp(m, 53)));
  t.value.exponent = e - 53;
  return t;
}

/// `reduce` sums an fp32 round-to-nearest accumulator on the hardware (TwoSum + the double →
/// float conversion + a midpoint fix-up); the generic evaluator (exact_add + round_to, itself
/// checked against MPFR above) must give the same bits on every plan, model switch and kind of
/// data, above all on sums that land exactly on an fp32 midpoint with a tiny remainder either
/// side (the one case the conversion alone gets wrong), zeros of both signs and the subnormal range.
TEST(PlanFastPath, Fp32RoundToNearestMatchesTheGenericEvaluatorBitForBit) {
  std::mt19937_64 g(77);
  std::normal_distribution<double> nd;
  const std::vector<std::string> plans{"sequential", "reverse",   "pairwise",   "blocked(4)", "blocked(4, pairwise)",
                                       "blocked(16, numpy)", "splitk(3)", "strided(4)", "numpy"};
  int failures = 0, ties = 0, narrow = 0;
  for (int trial = 0; trial < 3500 && failures < 5; ++trial) {
    const int kind = trial % 7;
    const std::size_t n = 1 + g() % 40;
    std::vector<double> x(n);
    for (std::size_t i = 0; i < n; ++i) {
      const float a = static_cast<float>(nd(g)), b = static_cast<float>(nd(g));
      switch (kind) {
        case 0: x[i] = static_cast<double>(a) * b; break;  // fp32 × fp32: 48-bit products
        case 1:  // a running sum of fp32 values, then a term that puts it on a midpoint, ± a tiny term
          x[i] = i % 3 == 0 ? std::ldexp(std::round(nd(g) * 64), static_cast<int>(g() % 6)) - 0.0
                 : i % 3 == 1 ? std::ldexp(g() % 2 ? 1.0 : -1.0, -17 - static_cast<int>(g() % 8)) *
                                    (1 + std::ldexp(g() % 2 ? 1.0 : -1.0, -30 - static_cast<int>(g() % 20)) * (g() % 2 ? 1 : 0))
                              : std::ldexp(g() % 2 ? 1.0 : -1.0, -60 - static_cast<int>(g() % 40)) * (g() % 4 == 0 ? 0 : 1);
          break;
        case 2: x[i] = std::ldexp(static_cast<double>(a) * b, -140 - static_cast<int>(g() % 30)); break;  // subnormal range
        case 3: x[i] = i % 2 ? -x[i - 1] : static_cast<double>(a); break;  // cancellation to zero
        case 4: x[i] = g() % 3 == 0 ? (g() % 2 ? -0.0 : 0.0) : std::ldexp(static_cast<double>(a), static_cast<int>(g() % 200) - 100); break;
        case 5: x[i] = std::ldexp(static_cast<double>(a), 100 + static_cast<int>(g() % 20)); break;  // near the top
        default:  // fp32 values only (Fp32NarrowAdder's path): bf16 × bf16 products from fp32's
                  // subnormal range up, and terms that put a sum of them on an fp32 midpoint
          switch (i % 3) {
            case 0: {
              const double p = std::ldexp(std::round(a * 128) * std::round(b * 128), -14);  // <= 16 bits
              x[i] = static_cast<float>(std::ldexp(p, -150 + static_cast<int>(g() % 160)));
              break;
            }
            case 1: x[i] = std::ldexp(1.0 + static_cast<double>(g() % 256) / 256, static_cast<int>(g() % 5)); break;
            default: x[i] = std::ldexp(g() % 2 ? 1.0 : -1.0, -24 - static_cast<int>(g() % 4)); break;
          }
      }
    }
    if (std::all_of(x.begin(), x.end(), [](double v) { return static_cast<double>(static_cast<float>(v)) == v; })) ++narrow;
    std::vector<Term> terms;
    for (double v : x) terms.push_back(term_of(v));
    std::optional<Bits> c;
    if (trial % 4 == 1) c = Bits{std::bit_cast<std::uint32_t>(static_cast<float>(nd(g)))};
    for (const std::string& pt : plans)
      for (int model = 0; model < 4; ++model) {
        SCOPED_TRACE(testing::Message() << "trial " << trial << " kind " << kind << " n=" << n << " plan " << pt
                                        << " products_rounded " << (model & 1) << " zero_start " << (model >> 1));
        AccumulatorModel acc;
        acc.products_rounded = (model & 1) != 0;
        acc.zero_start = (model >> 1) != 0;
        const ReductionPlan plan = *ReductionPlan::parse(pt);
        detail::set_reduce_fast_path(true);
        const Bits fast = reduce(plan, acc, terms, c);
        detail::set_reduce_fast_path(false);
        const Bits generic = reduce(plan, acc, terms, c);
        detail::set_reduce_fast_path(true);
        if (kind == 1) ++ties;
        if (fast != generic && ++failures <= 5)
          ADD_FAILURE() << "hardware path 0x" << std::hex << fast.raw << ", generic evaluator 0x" << generic.raw;
      }
  }
  EXPECT_GT(ties, 0);
  EXPECT_GT(narrow, 500);  // trials whose terms are all fp32 values: the narrow path
}

/// OrderedSums (the terms read once, summed in many orders: the calibration's legal orders) gives
/// the generic evaluator's bits on the terms permuted (reduce() with its fast paths off), for
/// every plan and model switch: fp32 values (the single-precision path), 48-bit products
/// (TwoSum's path, through reduce), an fp16 accumulator (the generic evaluator), with and
/// without an addend, the order as given and permuted.
TEST(PlanFastPath, OrderedSumsAreReduceOfThePermutedTerms) {
  std::mt19937_64 g(91);
  std::normal_distribution<double> nd;
  const std::vector<std::string> plans{"sequential", "reverse", "pairwise", "blocked(4, pairwise)", "splitk(3)",
                                       "strided(4)", "numpy"};
  int failures = 0;
  for (int trial = 0; trial < 600 && failures < 5; ++trial) {
    const int kind = trial % 3;
    const std::size_t n = 1 + g() % 60;
    std::vector<Term> terms;
    for (std::size_t i = 0; i < n; ++i) {
      const float a = static_cast<float>(nd(g)), b = static_cast<float>(nd(g));
      const double x = kind == 1 ? static_cast<double>(a) * b  // 48-bit products
                                 : std::ldexp(std::round(a * 128) * std::round(b * 128), -14 - static_cast<int>(g() % 40));
      terms.push_back(term_of(x));
    }
    std::vector<std::uint32_t> perm(n);
    std::iota(perm.begin(), perm.end(), 0U);
    std::shuffle(perm.begin(), perm.end(), g);
    std::vector<Term> permuted;
    for (const std::uint32_t k : perm) permuted.push_back(terms[k]);
    std::optional<Bits> c;
    if (trial % 4 == 1) c = Bits{std::bit_cast<std::uint32_t>(static_cast<float>(nd(g)))};
    for (int model = 0; model < 4; ++model) {
      AccumulatorModel acc;
      acc.products_rounded = (model & 1) != 0;
      acc.zero_start = (model >> 1) != 0;
      if (kind == 2) acc.format = &fp16;
      const std::optional<Bits> addend = c && kind == 2 ? std::optional<Bits>(convert(fp32, fp16, *c).bits) : c;
      OrderedSums sums(acc, terms, addend);
      for (const std::string& pt : plans) {
        SCOPED_TRACE(testing::Message() << "trial " << trial << " kind " << kind << " n=" << n << " plan " << pt
                                        << " model " << model);
        const ReductionPlan plan = *ReductionPlan::parse(pt);
        const Bits as_given = sums.sum(plan), in_order = sums.sum(plan, perm);
        detail::set_reduce_fast_path(false);
        const Bits want_given = reduce(plan, acc, terms, addend), want_order = reduce(plan, acc, permuted, addend);
        detail::set_reduce_fast_path(true);
        if ((as_given != want_given || in_order != want_order) && ++failures <= 5)
          ADD_FAILURE() << "OrderedSums 0x" << std::hex << as_given.raw << " / 0x" << in_order.raw << ", reduce 0x"
                        << want_given.raw << " / 0x" << want_order.raw;
      }
    }
  }
}

/// The case the hardware conversion alone gets wrong: 1 + (2^-24 + 2^-70) in one fused step is
/// the fp32 midpoint 1 + 2^-24 in double arithmetic (2^-70 is below a double's spacing at 1), and
/// converting it ties to even (1); the exact sum is above the midpoint and rounds up. Mutating the
/// fix-up in Fp32Adder::add makes this fail.
TEST(PlanFastPath, AMidpointWithATinyRemainderRoundsTowardIt) {
  const ReductionPlan seq = *ReductionPlan::parse("sequential");
  const AccumulatorModel acc;
  const Bits one{0x3f800000u};
  EXPECT_EQ(reduce(seq, acc, std::vector<Term>{term_of(0x1p-24 + 0x1p-70)}, one).raw, 0x3f800001u);
  EXPECT_EQ(reduce(seq, acc, std::vector<Term>{term_of(0x1p-24 - 0x1p-70)}, one).raw, 0x3f800000u);
  EXPECT_EQ(reduce(seq, acc, std::vector<Term>{term_of(0x1p-24)}, one).raw, 0x3f800000u);  // a true tie: to even
  EXPECT_EQ(reduce(seq, acc, std::vector<Term>{term_of(-0x1p-25 - 0x1p-70)}, one).raw, 0x3f7fffffu);
  const std::vector<Term> opposite{term_of(1.0), term_of(-1.0)}, negzeros{term_of(-0.0), term_of(-0.0)};
  EXPECT_EQ(reduce(seq, acc, opposite).raw, 0x00000000u);   // x + (-x) = +0 under RNE
  EXPECT_EQ(reduce(seq, acc, negzeros).raw, 0x80000000u);   // -0 + -0 = -0
}

// ------------------------------------------------------------------- the fp32 fast path

TEST(EmulateMatmul, FastPathMatchesGenericPath) {
  std::mt19937_64 g(7);
  for (const FormatSpec* in : {&bf16, &fp16, &fp32, &fp8_e4m3}) {
    for (const char* pt : {"sequential", "blocked(16)", "splitk(3)"}) {
      for (int kind : {0, 1, 2}) {
        for (bool with_c : {false, true}) {
          SCOPED_TRACE(testing::Message() << in->name << " " << pt << " kind " << kind << " C " << with_c);
          const std::int64_t M = 5, K = 37, N = 19;
          std::vector<Bits> a(M * K), b(K * N), bt(N * K), c(M * N);
          for (auto& x : a) x = random_value(g, *in, kind);
          for (auto& x : b) x = random_value(g, *in, kind);
          for (auto& x : c) x = random_value(g, fp32, kind == 2 ? 1 : kind);
          for (std::int64_t k = 0; k < K; ++k)
            for (std::int64_t j = 0; j < N; ++j) bt[static_cast<std::size_t>(j * K + k)] = b[static_cast<std::size_t>(k * N + j)];
          ReductionModel m;
          m.plan = *ReductionPlan::parse(pt);
          m.output = &bf16;
          ASSERT_TRUE(matmul_fast_path(m, *in, *in));
          const std::optional<MatrixView> cv =
              with_c ? std::optional<MatrixView>(MatrixView{&fp32, c, M, N}) : std::nullopt;
          const auto fast = emulate_matmul({in, a, M, K}, {in, b, K, N}, cv, m);
          // Generic path: row-wise dots of A's row i with B's column j.
          int bad = 0;
          for (std::int64_t i = 0; i < M; ++i)
            for (std::int64_t j = 0; j < N; ++j) {
              const std::span<const Bits> arow(a.data() + i * K, static_cast<std::size_t>(K));
              const std::span<const Bits> bcol(bt.data() + j * K, static_cast<std::size_t>(K));
              std::vector<Bits> ce{c[static_cast<std::size_t>(i * N + j)]};
              const auto generic = emulate_dot_rows({in, arow, 1, K}, {in, bcol, 1, K},
                                                    with_c ? std::optional<MatrixView>(MatrixView{&fp32, ce, 1, 1})
                                                           : std::nullopt,
                                                    m);
              const Bits f = fast[static_cast<std::size_t>(i * N + j)];
              if (!(f == generic[0]) && ++bad <= 3)
                ADD_FAILURE() << "(" << i << "," << j << ") fast " << to_hex(bf16, f) << " generic "
                              << to_hex(bf16, generic[0]);
            }
        }
      }
    }
  }
}

TEST(EmulateSum, AxesAndStochasticReproducibility) {
  const std::vector<Bits> x{Bits{0x3f800000}, Bits{0x40000000}, Bits{0x40400000},
                            Bits{0x40800000}, Bits{0x40a00000}, Bits{0x40c00000}};  // [[1,2,3],[4,5,6]]
  ReductionModel m;
  const auto cols = emulate_sum({&fp32, x, 2, 3}, 0, m);
  const auto rows = emulate_sum({&fp32, x, 2, 3}, 1, m);
  ASSERT_EQ(cols.size(), 3u);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(cols[0], Bits{0x40a00000});  // 5
  EXPECT_EQ(cols[2], Bits{0x41100000});  // 9
  EXPECT_EQ(rows[0], Bits{0x40c00000});  // 6
  EXPECT_EQ(rows[1], Bits{0x41700000});  // 15
  // Stochastic accumulation: the same seed gives the same bits, another seed (usually) not.
  std::vector<Bits> y(4096);
  std::mt19937_64 g(3);
  for (auto& v : y) v = random_value(g, bf16, 0);
  ReductionModel sr;
  sr.acc.format = &bf16;
  sr.acc.rounding.rounding = Rounding::stochastic;
  sr.acc.rounding.seed = 11;
  sr.output = &bf16;
  const auto s1 = emulate_sum({&bf16, y, 64, 64}, 1, sr);
  EXPECT_EQ(s1, emulate_sum({&bf16, y, 64, 64}, 1, sr));
  sr.acc.rounding.seed = 12;
  EXPECT_NE(s1, emulate_sum({&bf16, y, 64, 64}, 1, sr));
}


// ------------------------------------------------------------------- tree(...) plans

TEST(PlanTree, ParsesPrintsAndCounts) {
  for (const char* t : {"tree(0)", "tree(0 1)", "tree((0 1) 2)", "tree(((0 1) 2) 3)", "tree((0 3) (1 2))", "tree((2 (0 1)) 3)"}) {
    std::string err;
    const auto p = ReductionPlan::parse(t, &err);
    ASSERT_TRUE(p) << t << ": " << err;
    EXPECT_EQ(p->kind, PlanKind::tree);
    EXPECT_EQ(p->text(), t);
    EXPECT_EQ(*ReductionPlan::parse(p->text()), *p);
  }
  EXPECT_EQ(ReductionPlan::parse("tree( ( (0 1)  2 ) 3 )")->text(), "tree(((0 1) 2) 3)");
  EXPECT_EQ(ReductionPlan::parse(" tree( 0 ) ")->text(), "tree(0)");
  auto n = [](const char* t, std::int64_t k, bool c = false) { return ReductionPlan::parse(t)->roundings(k, c); };
  EXPECT_EQ(n("tree(((0 1) 2) 3)", 4), 3);
  EXPECT_EQ(n("tree((0 1) (2 3))", 4), 2);
  EXPECT_EQ(n("tree((0 1) (2 3))", 4, true), 3);
  EXPECT_EQ(n("tree((0 1) (2 3))", 10), 9);  // another K: the bound of any order
  const std::pair<const char*, const char*> bad[] = {
      {"tree((0 1) 2 3)", "more than two children"},  {"tree((0 1 2) 3)", "more than two children"},
      {"tree((0) 1)", "1 children"},  {"tree((0 1)) (2 3)", "1 children"},                   {"tree(0 2)", "leaves must be 0..1"},
      {"tree((0 0) 2)", "leaf 0 appears twice"},          {"tree(((0 1) 2)", "unbalanced"},
      {"tree(0 x)", "unexpected 'x'"},                {"tree", "tree(LEFT RIGHT)"},
      {"tree(0 99999999)", "largest tree"}};
  for (const auto& [text, why] : bad) {
    std::string err;
    EXPECT_FALSE(ReductionPlan::parse(text, &err)) << text;
    EXPECT_NE(err.find(why), std::string::npos) << text << " -> " << err;
  }
}

TEST(PlanTree, AgreesWithTheShapesAndWithCompiledFloatCode) {
  std::mt19937_64 g(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  AccumulatorModel exact, rounded;
  rounded.products_rounded = true;
  const ReductionPlan seq = *ReductionPlan::parse("sequential"), pw = *ReductionPlan::parse("pairwise");
  const ReductionPlan tseq = *ReductionPlan::parse("tree(((0 1) 2) 3)"), tpw = *ReductionPlan::parse("tree((0 1) (2 3))");
  const ReductionPlan odd = *ReductionPlan::parse("tree((0 3) (1 2))");
  for (int t = 0; t < 2000; ++t) {
    float a[4], b[4];
    std::vector<Term> terms, sums;
    for (int i = 0; i < 4; ++i) {
      a[i] = u(g), b[i] = u(g);
      terms.push_back(exact_product(fp32, convert_double(fp32, a[i]).bits, fp32, convert_double(fp32, b[i]).bits));
      sums.push_back(as_term(fp32, convert_double(fp32, a[i]).bits));
    }
    ASSERT_EQ(reduce(tseq, exact, terms), reduce(seq, exact, terms));  // fused: leaves enter exactly
    ASSERT_EQ(reduce(tpw, rounded, terms), reduce(pw, rounded, terms));
    // The compiler's own fp32 arithmetic: ((x0 + x3) + (x1 + x2)).
    volatile float l = a[0] + a[3], r = a[1] + a[2];
    const float want = l + r;
    ASSERT_EQ(reduce(odd, exact, sums).raw, std::bit_cast<std::uint32_t>(want));
  }
  EXPECT_THROW(reduce(odd, exact, std::vector<Term>(5)), InputError);
}

// zero_start against the obvious loop of a kernel that zeroes its register: s = +0, then
// s = FTZ(fl32(s + p)) for each product in order. The products of two bf16-precision values
// near 2^-64 are exact doubles, and so is s + p (their exponents lie within 53 bits): the
// compiler's double sum rounded once to float is fl32(s + p).
TEST(PlanZeroStart, MatchesAZeroedRegisterLoopWithAndWithoutFtz) {
  std::mt19937_64 g(11);
  std::uniform_int_distribution<int> mant(128, 255), ex(-70, -60);
  const auto ftz32 = [](float x, bool on) { return on && x != 0 && std::fabs(x) < 0x1p-126f ? std::copysign(0.0f, x) : x; };
  const ReductionPlan seq = *ReductionPlan::parse("sequential");
  // vdpbf16ps's pair order: the odd product of each pair first.
  const ReductionPlan pairs = *ReductionPlan::parse("tree(((((1 0) 3) 2) 5) 4)");
  const std::vector<std::size_t> pair_order{1, 0, 3, 2, 5, 4};
  int flushed_differently = 0;
  for (bool ftz : {false, true}) {
    AccumulatorModel zs, plain;
    zs.zero_start = true;
    zs.rounding.ftz = plain.rounding.ftz = ftz;
    for (int t = 0; t < 3000; ++t) {
      std::vector<Term> terms;
      std::vector<double> p;
      for (int i = 0; i < 6; ++i) {
        const double x = (g() & 1 ? -1.0 : 1.0) * std::ldexp(mant(g), ex(g) - 7);
        const double y = std::ldexp(mant(g), ex(g) - 7);
        p.push_back(x * y);
        terms.push_back(exact_product(fp32, convert_double(fp32, x).bits, fp32, convert_double(fp32, y).bits));
      }
      float s = 0.0f;
      for (std::size_t i : pair_order) s = ftz32(static_cast<float>(static_cast<double>(s) + p[i]), ftz);
      ASSERT_EQ(reduce(pairs, zs, terms).raw, std::bit_cast<std::uint32_t>(s)) << "ftz " << ftz << " row " << t;
      float q = 0.0f;
      for (double v : p) q = ftz32(static_cast<float>(static_cast<double>(q) + v), ftz);
      ASSERT_EQ(reduce(seq, zs, terms).raw, std::bit_cast<std::uint32_t>(q)) << "ftz " << ftz << " row " << t;
      // Without a zeroed register the first term is rounded in alone: the same value here
      // (fl(+0 + p) = fl(p) for p != 0 under rne), so the two agree on these rows.
      ASSERT_EQ(reduce(seq, plain, terms), reduce(seq, zs, terms));
      // The canonical (0 1) tree flushes p0 where the loop flushes p1.
      const ReductionPlan canon = *ReductionPlan::parse("tree(((((0 1) 3) 2) 5) 4)");
      flushed_differently += reduce(canon, zs, terms) == reduce(pairs, zs, terms) ? 0 : 1;
    }
  }
  EXPECT_GT(flushed_differently, 0) << "the data never made the leaf order of the first pair matter";
  // The sign of zero: -0 terms sum to +0 from a zeroed register, to -0 from the first term.
  const std::vector<Term> negzeros(4, Term{FpClass::zero, {true, 0, 0, false}});
  AccumulatorModel zs, plain;
  zs.zero_start = true;
  EXPECT_EQ(reduce(seq, zs, negzeros).raw, 0x00000000u);
  EXPECT_EQ(reduce(seq, plain, negzeros).raw, 0x80000000u);
  EXPECT_EQ(reduce(*ReductionPlan::parse("pairwise"), zs, negzeros).raw, 0x00000000u);
  EXPECT_EQ(reduce(*ReductionPlan::parse("pairwise"), plain, negzeros).raw, 0x80000000u);
}

}  // namespace
}  // namespace numfid
