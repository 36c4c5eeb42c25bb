// Tests of formats/arith against the MPFR oracle (tests/support): add, sub, mul, div and sqrt
// on every operand (pair) of every 8-, 6- and 4-bit float format, fma on every triple of the
// 6- and 4-bit formats and sampled triples of the 8-bit ones; fp16, bf16, tf32 and fp32 on
// boundary patterns crossed with seeded random ones and on operands built so that the exact
// result is a rounding tie. Every rounding mode (rne rtz rup rdn rna), both overflow modes,
// FTZ and DAZ; flags compared as mpfr_oracle.h's checked_flags() says.
//
// E8M0 is excluded: OCP MX v1.0 §5.4.1 defines it only as a power-of-two scale (no sign, no
// zero, no arithmetic), so there is no specified result for e.g. x - x to test against.
#include "formats/arith.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
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
constexpr std::array<ArithOp, 4> kBinaryOps{ArithOp::add, ArithOp::sub, ArithOp::mul, ArithOp::div};

/// One 32-bit draw (mt19937's result type is wider than 32 bits on LP64).
std::uint32_t u32(std::mt19937& gen) { return static_cast<std::uint32_t>(gen()); }

std::string operands_text(const FormatSpec& f, std::span<const Bits> x) {
  std::string s;
  for (const Bits b : x) s += (s.empty() ? "" : ", ") + show(f, b);
  return s;
}

/// Checks apply(op, f, x) in mode `r` under every overflow x FTZ x DAZ variant. MPFR runs
/// once (once more under DAZ when an operand is subnormal).
void check_variants(Sweep& sweep, ArithOp op, const FormatSpec& f, std::span<const Bits> x, Rounding r) {
  std::array<double, 3> v{};
  std::array<double, 3> vd{};
  bool any_subnormal = false;
  for (std::size_t i = 0; i < x.size(); ++i) {
    v[i] = naive_decode(f, x[i]);
    vd[i] = test::oracle_operand(f, x[i], true);
    any_subnormal = any_subnormal || test::naive_is_subnormal(f, x[i]);
  }
  const std::span<const double> sv(v.data(), x.size());
  const Rounded rd = test::oracle_round_arith(op, f, sv, r);
  const Rounded rd_daz =
      any_subnormal ? test::oracle_round_arith(op, f, std::span<const double>(vd.data(), x.size()), r) : rd;
  for (const Overflow ovf : {Overflow::ieee, Overflow::saturate}) {
    for (const bool ftz : {false, true}) {
      for (const bool daz : {false, true}) {
        const RoundOptions o{r, ovf, ftz, daz, 0, 0};
        const Rounded& used = daz ? rd_daz : rd;
        sweep.check(f, test::oracle_finish(f, used, o), apply(op, f, x, o), test::checked_flags(f, used),
                    NanPolicy::any_nan, [&] {
                      return fmt::format("{} {} {} ({})", arith_op_name(op), f.name, test::options_name(o),
                                         operands_text(f, x));
                    });
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// 8-, 6- and 4-bit formats: every operand pair.

class ArithSmall : public ::testing::TestWithParam<const FormatSpec*> {};

TEST_P(ArithSmall, EveryPairEveryMode) {
  const FormatSpec& f = *GetParam();
  const std::uint32_t n = storage_mask(f) + 1;
  for (const ArithOp op : kBinaryOps) {
    SCOPED_TRACE(std::string(arith_op_name(op)));
    for (const Rounding r : kModes) {
      SCOPED_TRACE(std::string(rounding_name(r)));
      Sweep sweep(fmt::format("{} {} {}", arith_op_name(op), f.name, rounding_name(r)));
      for (std::uint32_t a = 0; a < n; ++a)
        for (std::uint32_t b = 0; b < n; ++b) {
          const std::array<Bits, 2> x{Bits{a}, Bits{b}};
          check_variants(sweep, op, f, x, r);
        }
    }
  }
}

TEST_P(ArithSmall, SqrtEveryOperandEveryMode) {
  const FormatSpec& f = *GetParam();
  for (const Rounding r : kModes) {
    SCOPED_TRACE(std::string(rounding_name(r)));
    Sweep sweep(fmt::format("sqrt {} {}", f.name, rounding_name(r)));
    for (std::uint32_t a = 0; a <= storage_mask(f); ++a) {
      const std::array<Bits, 1> x{Bits{a}};
      check_variants(sweep, ArithOp::sqrt, f, x, r);
    }
  }
}

TEST_P(ArithSmall, FmaTriples) {
  // Every triple for the 6- and 4-bit formats (2^18 and 2^12); 8-bit formats: 2 * 10^5
  // seeded random triples (the mode cycles with the index) plus every (a, b) with
  // c in {±0, ±least subnormal, ±max}.
  const FormatSpec& f = *GetParam();
  const std::uint32_t n = storage_mask(f) + 1;
  if (f.bits <= 6) {
    for (const Rounding r : kModes) {
      SCOPED_TRACE(std::string(rounding_name(r)));
      Sweep sweep(fmt::format("fma {} {}", f.name, rounding_name(r)));
      for (std::uint32_t a = 0; a < n; ++a)
        for (std::uint32_t b = 0; b < n; ++b)
          for (std::uint32_t c = 0; c < n; ++c) {
            const std::array<Bits, 3> x{Bits{a}, Bits{b}, Bits{c}};
            check_variants(sweep, ArithOp::fma, f, x, r);
          }
    }
    return;
  }
  std::mt19937 gen(7u + static_cast<unsigned>(f.bits));
  Sweep sweep(fmt::format("fma {} (sampled, seed {})", f.name, 7 + f.bits));
  for (int i = 0; i < 200000; ++i) {
    const std::array<Bits, 3> x{Bits{u32(gen) & storage_mask(f)}, Bits{u32(gen) & storage_mask(f)},
                                Bits{u32(gen) & storage_mask(f)}};
    check_variants(sweep, ArithOp::fma, f, x, kModes[static_cast<std::size_t>(i) % kModes.size()]);
  }
  const test::NaiveLimits& l = test::naive_limits(f);
  const std::array<double, 6> addends{0.0, -0.0, l.min_positive, -l.min_positive, l.max_finite, -l.max_finite};
  for (const double c : addends) {
    const Bits cb = test::naive_encode(f, c);
    for (const Rounding r : {Rounding::rne, Rounding::rna, Rounding::rdn})
      for (std::uint32_t a = 0; a < n; ++a)
        for (std::uint32_t b = 0; b < n; ++b) {
          const std::array<Bits, 3> x{Bits{a}, Bits{b}, cb};
          check_variants(sweep, ArithOp::fma, f, x, r);
        }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, ArithSmall,
                         ::testing::Values(&fp8_e4m3, &fp8_e5m2, &fp8_e4m3fnuz, &fp8_e5m2fnuz, &fp6_e3m2, &fp6_e2m3,
                                           &fp4_e2m1),
                         test::format_param_name);

// ---------------------------------------------------------------------------------------
// fp16, bf16, tf32, fp32: boundary patterns crossed with random ones, and ties.

/// TestFloat-style boundary operands: exponent fields {0, 1, 2, bias-1, bias, bias+1,
/// top-2, top-1, top} crossed with trailing significands {0, 1, 2, 3, 100...0, 100...01,
/// 011...1, 0101..., 1010..., 11...10, 11...1}, both signs: zeros, subnormals, min normal,
/// 1, max finite, inf and NaNs among them.
std::vector<Bits> boundary_pool(const FormatSpec& f) {
  const int t = f.precision - 1;
  const std::uint32_t tmask = (1u << t) - 1;
  const std::uint32_t top = (1u << f.exponent_bits) - 1;
  const std::uint32_t b = static_cast<std::uint32_t>(f.bias);
  const std::uint32_t fields[] = {0, 1, 2, b - 1, b, b + 1, top - 2, top - 1, top};
  const std::uint32_t trailing[] = {0,
                                    1,
                                    2,
                                    3,
                                    1u << (t - 1),
                                    (1u << (t - 1)) | 1,
                                    (1u << (t - 1)) - 1,
                                    0x55555555u & tmask,
                                    0xaaaaaaaau & tmask,
                                    tmask - 1,
                                    tmask};
  std::vector<Bits> out;
  for (const std::uint32_t e : fields)
    for (const std::uint32_t m : trailing)
      for (const std::uint32_t s : {0u, 1u}) out.push_back(Bits{(s << (f.bits - 1)) | (e << t) | m});
  std::sort(out.begin(), out.end(), [](Bits x, Bits y) { return x.raw < y.raw; });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

/// Random finite non-zero normal pattern with an exponent field in [lo, hi].
Bits random_normal(std::mt19937& gen, const FormatSpec& f, std::uint32_t lo, std::uint32_t hi) {
  const int t = f.precision - 1;
  std::uniform_int_distribution<std::uint32_t> field(lo, hi);
  const std::uint32_t sign = u32(gen) & 1u;
  return Bits{(sign << (f.bits - 1)) | (field(gen) << t) | (u32(gen) & ((1u << t) - 1))};
}

/// Operand tuples whose exact result is a midpoint between two neighbours of the format
/// (the cases where rne and rna differ and where a wrong tie rule shows):
///  add: x + (±ulp(x)/2 * {1, 3}); mul: 3 * 2^i times m * 2^j with m odd in
///  [2^p / 3, 2^(p-1)) (3m has p + 1 bits and is odd); div: an odd multiple of the least
///  subnormal divided by 2 (a tie on the subnormal grid; normal quotients cannot be ties);
///  fma: a mul tie plus {±0, ±least subnormal} (the second shows a lost sticky bit);
///  sqrt: exact squares (sqrt of a format value is never a tie in the normal range).
std::vector<std::array<Bits, 3>> tie_cases(ArithOp op, const FormatSpec& f, std::mt19937& gen, int count) {
  const int p = f.precision;
  const std::uint32_t top = (1u << f.exponent_bits) - 1;
  const test::NaiveLimits& l = test::naive_limits(f);
  std::vector<std::array<Bits, 3>> out;
  const auto enc = [&](double v) { return test::naive_try_encode(f, v); };
  std::uniform_int_distribution<int> small_exp(-12, 12);
  for (int tries = 0; static_cast<int>(out.size()) < count && tries < 20 * count; ++tries) {
    switch (op) {
      case ArithOp::add:
      case ArithOp::sub: {
        const Bits a = random_normal(gen, f, 1, top - 2);
        const double x = naive_decode(f, a);
        int e = 0;
        (void)std::frexp(x, &e);
        const double half_ulp = std::ldexp((u32(gen) & 1u) != 0 ? 3.0 : 1.0, e - 1 - p);
        const auto b = enc((op == ArithOp::sub) == ((u32(gen) & 1u) != 0) ? half_ulp : -half_ulp);
        if (b) out.push_back({a, *b, Bits{}});
        break;
      }
      case ArithOp::mul:
      case ArithOp::fma: {
        const double lo_m = std::ceil(std::ldexp(1.0, p) / 3);
        const double hi_m = std::ldexp(1.0, p - 1);
        std::uniform_real_distribution<double> pick(lo_m, hi_m);
        double m = std::floor(pick(gen));
        if (std::fmod(m, 2.0) == 0) m += 1;
        if (m >= hi_m) break;
        const auto a = enc(std::ldexp(3.0, small_exp(gen)) * ((u32(gen) & 1u) != 0 ? -1 : 1));
        const auto b = enc(std::ldexp(m, small_exp(gen) - (p - 2)));
        if (!a || !b) break;
        if (op == ArithOp::mul) {
          out.push_back({*a, *b, Bits{}});
        } else {
          const double cs[] = {0.0, -0.0, l.min_positive, -l.min_positive};
          out.push_back({*a, *b, test::naive_encode(f, cs[u32(gen) % 4])});
        }
        break;
      }
      case ArithOp::div: {
        const double k = static_cast<double>((u32(gen) % (1u << (p - 1))) | 1u);
        const auto a = enc(std::ldexp(k, 0) * l.min_positive);
        const auto b = enc((u32(gen) & 1u) != 0 ? 2.0 : -2.0);
        if (a && b) out.push_back({*a, *b, Bits{}});
        break;
      }
      case ArithOp::sqrt: {  // exact squares: sqrt must be exact (no flags) in every mode
        const double m = static_cast<double>(u32(gen) % (1u << ((p + 1) / 2)));
        const auto a = enc(std::ldexp(m * m, 2 * small_exp(gen)));
        if (a && m != 0) out.push_back({*a, Bits{}, Bits{}});
        break;
      }
    }
  }
  return out;
}

class ArithWide : public ::testing::TestWithParam<const FormatSpec*> {};

/// Per op and format: pool x pool in every mode, then `kRandom` cases of each kind (pool x
/// random, random x random, random x nearby random) with the mode cycling, then ties in
/// every mode: about 3.4 * 10^5 (operands, mode) cases per op and format (printed), so more
/// than 10^6 per op over the four formats, each checked in the 8 overflow/FTZ/DAZ variants.
constexpr int kRandom = 40000;
constexpr int kRandomSqrt = 250000;  // sqrt has one operand: no pool x pool part
constexpr int kTies = 4000;

TEST_P(ArithWide, BoundaryRandomAndTies) {
  const FormatSpec& f = *GetParam();
  const std::vector<Bits> pool = boundary_pool(f);
  const std::uint32_t mask = storage_mask(f);
  for (const ArithOp op : {ArithOp::add, ArithOp::sub, ArithOp::mul, ArithOp::div, ArithOp::sqrt, ArithOp::fma}) {
    SCOPED_TRACE(std::string(arith_op_name(op)));
    std::mt19937 gen(1000u + static_cast<unsigned>(op) * 17u + static_cast<unsigned>(f.bits));
    Sweep sweep(fmt::format("{} {} (seed {})", arith_op_name(op), f.name, 1000 + static_cast<int>(op) * 17 + f.bits));
    const auto random_bits = [&] { return Bits{u32(gen) & mask}; };
    const auto pool_bits = [&] { return pool[u32(gen) % pool.size()]; };
    const auto nearby = [&](Bits a) { return Bits{(a.raw + (u32(gen) % 64u) - 32u) & mask}; };
    const int k = arity(op);
    // Pool x pool (x a pool sample for fma), every mode.
    for (const Rounding r : kModes) {
      for (const Bits a : pool) {
        if (k == 1) {
          const std::array<Bits, 1> x{a};
          check_variants(sweep, op, f, x, r);
          continue;
        }
        for (const Bits b : pool) {
          const std::array<Bits, 3> x{a, b, pool_bits()};
          check_variants(sweep, op, f, std::span<const Bits>(x.data(), static_cast<std::size_t>(k)), r);
        }
      }
    }
    // Random cases, the mode cycling.
    const int random_cases = op == ArithOp::sqrt ? kRandomSqrt : 3 * kRandom;
    for (int i = 0; i < random_cases; ++i) {
      const Rounding r = kModes[static_cast<std::size_t>(i) % kModes.size()];
      std::array<Bits, 3> x{};
      switch (i % 3) {
        case 0: x = {pool_bits(), random_bits(), random_bits()}; break;
        case 1: x = {random_bits(), random_bits(), pool_bits()}; break;
        default: {
          x[0] = random_bits();
          x[1] = nearby(x[0]);
          x[2] = (u32(gen) & 1u) != 0 ? nearby(x[0]) : random_bits();
          if ((u32(gen) & 1u) != 0) x[2].raw ^= 1u << (f.bits - 1);  // cancellation in fma
          break;
        }
      }
      if (op == ArithOp::sqrt && (u32(gen) & 1u) != 0) x[0].raw &= mask >> 1;  // mostly non-negative
      check_variants(sweep, op, f, std::span<const Bits>(x.data(), static_cast<std::size_t>(k)), r);
    }
    // Ties, every mode. Self-check of the construction: at an exact tie rne and rna differ
    // whenever the even neighbour is the one toward zero, i.e. for about half of them (a
    // quarter for fma, where half the addends are ±least subnormal, which breaks the tie).
    int rne_rna_differ = 0;
    const auto ties = tie_cases(op, f, gen, kTies);
    for (const auto& x : ties) {
      const std::span<const Bits> xs(x.data(), static_cast<std::size_t>(k));
      for (const Rounding r : kModes) check_variants(sweep, op, f, xs, r);
      const RoundOptions ne{Rounding::rne, Overflow::saturate, false, false, 0, 0};
      const RoundOptions na{Rounding::rna, Overflow::saturate, false, false, 0, 0};
      if (test::oracle_arith(op, f, xs, ne).bits != test::oracle_arith(op, f, xs, na).bits) ++rne_rna_differ;
    }
    if (op != ArithOp::sqrt) {
      EXPECT_GT(rne_rna_differ, static_cast<int>(ties.size()) / 8) << "the tie constructions do not hit ties";
      EXPECT_GE(static_cast<int>(ties.size()), kTies / 2);
    }
    // Each (operands, mode) case is checked in 8 variants (overflow x FTZ x DAZ).
    const long long cases = static_cast<long long>(sweep.cases()) / 8;
    RecordProperty(std::string(arith_op_name(op)) + "_cases", static_cast<int>(cases));
    std::printf("%s %s: %lld (operands, mode) cases x 8 variants\n", std::string(arith_op_name(op)).c_str(),
                std::string(f.name).c_str(), cases);
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, ArithWide, ::testing::Values(&fp16, &bf16, &tf32, &fp32), test::format_param_name);

// add_mixed: x of one format + y of another, rounded once into a third (an epilogue's add of
// an fp32 addend to a bf16 result), against MPFR adding the two exact values.
void check_mixed(Sweep& sweep, const FormatSpec& to, const FormatSpec& fx, Bits x, const FormatSpec& fy, Bits y,
                 Rounding r) {
  for (const bool ftz : {false, true}) {
    for (const bool daz : {false, true}) {
      const RoundOptions o{r, Overflow::ieee, ftz, daz, 0, 0};
      const std::array<double, 2> v{test::oracle_operand(fx, x, daz), test::oracle_operand(fy, y, daz)};
      const Rounded rd = test::oracle_round_sum(to, v[0], v[1], r);
      sweep.check(to, test::oracle_finish(to, rd, o), add_mixed(to, fx, x, fy, y, o), test::checked_flags(to, rd),
                  NanPolicy::any_nan, [&] {
                    return fmt::format("{} {} + {} {} into {} {}", fx.name, show(fx, x), fy.name, show(fy, y), to.name,
                                       test::options_name(o));
                  });
    }
  }
}

TEST(ArithMixed, EveryPairOfTwoEightBitFormats) {
  // Every E4M3 x every E5M2 pattern, into fp16 (both exact there: the sum rounds once), bf16
  // and E4M3 itself (the sum rounds into one operand's format), every mode.
  for (const FormatSpec* to : {&fp16, &bf16, &fp8_e4m3}) {
    SCOPED_TRACE(std::string(to->name));
    for (const Rounding r : kModes) {
      SCOPED_TRACE(std::string(rounding_name(r)));
      Sweep sweep(fmt::format("e4m3 + e5m2 into {} {}", to->name, rounding_name(r)));
      for (std::uint32_t a = 0; a < 256; ++a)
        for (std::uint32_t b = 0; b < 256; ++b) check_mixed(sweep, *to, fp8_e4m3, Bits{a}, fp8_e5m2, Bits{b}, r);
    }
  }
}

TEST(ArithMixed, WideFormatsBoundaryAndRandom) {
  // A result's format plus an fp32 addend (and the reverse): boundary patterns of both, then
  // seeded random pairs, random pairs of nearby magnitudes with opposite signs (cancellation)
  // and pairs far apart (the smaller one only a sticky bit).
  struct Case {
    const FormatSpec *to, *fx, *fy;
  };
  for (const Case c : {Case{&bf16, &bf16, &fp32}, Case{&fp16, &fp16, &fp32}, Case{&fp32, &fp32, &bf16},
                       Case{&fp32, &fp16, &fp32}, Case{&bf16, &fp32, &fp16}}) {
    SCOPED_TRACE(fmt::format("{} + {} into {}", c.fx->name, c.fy->name, c.to->name));
    Sweep sweep(fmt::format("{} + {} into {} (seed 77)", c.fx->name, c.fy->name, c.to->name));
    const std::vector<Bits> px = boundary_pool(*c.fx), py = boundary_pool(*c.fy);
    for (const Rounding r : kModes)
      for (const Bits x : px)
        for (const Bits y : py) check_mixed(sweep, *c.to, *c.fx, x, *c.fy, y, r);
    std::mt19937 gen(77);
    const std::uint32_t mx = storage_mask(*c.fx), my = storage_mask(*c.fy);
    for (int i = 0; i < 60000; ++i) {
      const Rounding r = kModes[static_cast<std::size_t>(i) % kModes.size()];
      const Bits x{u32(gen) & mx};
      Bits y{u32(gen) & my};
      if (i % 3 == 1) {  // y near -x: cancellation
        const double v = -test::naive_decode(*c.fx, x);
        if (std::isfinite(v)) {
          const RoundOptions o{Rounding::rne, Overflow::ieee, false, false, 0, 0};
          y = test::oracle_convert_value(*c.fy, v, o).bits;
          y.raw = (y.raw + (u32(gen) % 16u) - 8u) & my;
        }
      }
      check_mixed(sweep, *c.to, *c.fx, x, *c.fy, y, r);
    }
    EXPECT_GT(sweep.cases(), 240000);
  }
}

TEST(ArithIntegers, AreInvalid) {
  // Arithmetic is defined on float formats only; integer formats answer invalid.
  for (const FormatSpec* f : {&int8, &uint8, &int32}) {
    const Result r = add(*f, Bits{1}, Bits{2});
    EXPECT_EQ(r.status, status_invalid) << f->name;
  }
}

}  // namespace
}  // namespace numfid
