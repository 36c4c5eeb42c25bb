// The exact long accumulator against the MPFR oracle (mpfr_sum of exact MPFR products):
// bit-identical exact values and roundings on random and adversarial dot products and sums in
// every format, every rounding mode, both overflow modes and FTZ; plus hand-checked cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "formats/convert.h"
#include "formats/format_spec.h"
#include "oracles/accumulator.h"
#include "oracles/mpfr_oracles.h"

namespace numfid {
namespace {

// ---------------------------------------------------------------------------------------
// Helpers.

std::string describe(const FormatSpec& f, Bits b) {
  return to_hex(f, b) + " (" + std::to_string(to_double(f, b)) + ")";
}

std::string describe(const Result& r, const FormatSpec& f) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", to_double(f, r.bits));
  return to_hex(f, r.bits) + " = " + buf + " status " + std::to_string(+r.status);
}

std::string describe(const Unrounded& u) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s0x%016llx%016llx * 2^%d%s", u.negative ? "-" : "+",
                static_cast<unsigned long long>(u.significand >> 64), static_cast<unsigned long long>(u.significand),
                u.exponent, u.sticky ? " + sticky" : "");
  return buf;
}

std::string describe(const RoundOptions& o) {
  return std::string(rounding_name(o.rounding)) + (o.overflow == Overflow::saturate ? " saturate" : "") +
         (o.ftz ? " ftz" : "") + (o.daz ? " daz" : "") +
         (o.rounding == Rounding::stochastic ? " seed " + std::to_string(o.seed) + " stream " + std::to_string(o.stream)
                                             : "");
}

/// Result comparison policy: bitwise, flags included. Both sides produce NaN through
/// round_nan (the canonical NaN), so NaN-equivalence is bitwise equality here.
::testing::AssertionResult same_result(const FormatSpec& f, const Result& expected, const Result& actual) {
  if (expected == actual) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "into " << f.name << ": expected " << describe(expected, f) << ", got "
                                       << describe(actual, f);
}

bool same_unrounded(const Unrounded& a, const Unrounded& b) {
  return a.negative == b.negative && a.significand == b.significand &&
         (a.significand == 0 || (a.exponent == b.exponent && a.sticky == b.sticky));
}

bool same_double(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

const std::vector<const FormatSpec*>& input_formats() {
  static const std::vector<const FormatSpec*> v{&fp32,         &fp16,         &bf16,     &tf32,     &fp8_e4m3,
                                                &fp8_e5m2,     &fp8_e4m3fnuz, &fp8_e5m2fnuz, &fp6_e3m2, &fp6_e2m3,
                                                &fp4_e2m1,     &e8m0,         &int8,     &uint8,    &int32};
  return v;
}

/// Every rounding option combination (seeded stochastic rounding included).
std::vector<RoundOptions> all_options() {
  std::vector<RoundOptions> v;
  for (Rounding r : {Rounding::rne, Rounding::rtz, Rounding::rup, Rounding::rdn, Rounding::rna, Rounding::stochastic})
    for (Overflow ov : {Overflow::ieee, Overflow::saturate})
      for (bool ftz : {false, true}) {
        RoundOptions o;
        o.rounding = r;
        o.overflow = ov;
        o.ftz = ftz;
        o.seed = 0x5eed;
        o.stream = 7;
        v.push_back(o);
      }
  return v;
}

bool is_finite_pattern(const FormatSpec& f, Bits b) {
  const FpClass c = classify(f, b);
  return c != FpClass::nan && c != FpClass::infinite;
}

Bits random_pattern(const FormatSpec& f, std::mt19937_64& rng) {
  return Bits{static_cast<std::uint32_t>(rng()) & storage_mask(f)};
}

Bits random_finite(const FormatSpec& f, std::mt19937_64& rng) {
  for (;;) {
    const Bits b = random_pattern(f, rng);
    if (is_finite_pattern(f, b)) return b;
  }
}

/// -x as a pattern of f, if f has it.
std::optional<Bits> negate(const FormatSpec& f, Bits x) {
  const Decoded d = decode(f, x);
  if (!is_float(f)) {
    if (!f.is_signed) return d.significand == 0 ? std::optional<Bits>(x) : std::nullopt;
    if (d.significand > (std::uint64_t{1} << (f.bits - 1)) - 1) return std::nullopt;
    return Bits{(~x.raw + 1) & storage_mask(f)};
  }
  if (!f.has_sign) return std::nullopt;
  if (d.cls == FpClass::zero && !f.signed_zero) return x;  // FNUZ: -0 is the NaN
  return Bits{x.raw ^ (std::uint32_t{1} << (f.bits - 1))};
}

/// A pattern whose magnitude lies among the `tail` smallest (small) or largest (!small)
/// finite magnitudes of f, random sign where f has one.
Bits extreme(const FormatSpec& f, std::mt19937_64& rng, bool small, std::uint32_t tail = 8) {
  for (;;) {
    const auto k = static_cast<std::uint32_t>(rng() % tail);
    if (!is_float(f)) {  // integers: the value k, or k away from the range's end
      const auto max = static_cast<std::int64_t>(max_finite(f));
      const std::int64_t lo = f.is_signed ? -max - 1 : 0;
      std::int64_t v = small ? static_cast<std::int64_t>(k) : max - static_cast<std::int64_t>(k);
      if (f.is_signed && (rng() & 1)) v = small ? -v : lo + static_cast<std::int64_t>(k);
      return Bits{static_cast<std::uint32_t>(static_cast<std::uint64_t>(v)) & storage_mask(f)};
    }
    const std::uint32_t top = max_finite_bits(f, false).raw;
    std::uint32_t mag = small ? std::min(k, top) : top - std::min(k, top);
    if (f.has_sign && (rng() & 1)) mag |= std::uint32_t{1} << (f.bits - 1);
    const Bits b{mag};
    if (is_finite_pattern(f, b)) return b;
  }
}

/// A finite pattern with its trailing significand cleared (a signed power of two, or zero).
Bits power_of_two(const FormatSpec& f, std::mt19937_64& rng) {
  if (!is_float(f)) return random_finite(f, rng);
  for (;;) {
    const Bits b = random_finite(f, rng);
    const Bits p{b.raw & ~((std::uint32_t{1} << mantissa_bits(f)) - 1)};
    if (is_finite_pattern(f, p)) return p;
  }
}

/// One test dot product: a and b (b empty for a plain sum).
struct Case {
  std::vector<Bits> a;
  std::vector<Bits> b;
};

using Generator = std::function<Case(const FormatSpec&, const FormatSpec*, std::size_t, std::mt19937_64&)>;

struct NamedGenerator {
  const char* name;
  Generator make;
};

/// Fills a case term by term from a per-term generator.
Case per_term(const FormatSpec& fa, const FormatSpec* fb, std::size_t k, std::mt19937_64& rng,
              const std::function<Bits(const FormatSpec&, std::mt19937_64&)>& gen) {
  Case c;
  for (std::size_t i = 0; i < k; ++i) {
    c.a.push_back(gen(fa, rng));
    if (fb) c.b.push_back(gen(*fb, rng));
  }
  return c;
}

const std::vector<NamedGenerator>& generators() {
  static const std::vector<NamedGenerator> g{
      {"uniform finite",
       [](const FormatSpec& fa, const FormatSpec* fb, std::size_t k, std::mt19937_64& rng) {
         return per_term(fa, fb, k, rng, random_finite);
       }},
      {"uniform patterns (NaN/inf included)",
       [](const FormatSpec& fa, const FormatSpec* fb, std::size_t k, std::mt19937_64& rng) {
         return per_term(fa, fb, k, rng, random_pattern);
       }},
      {"cancellation: x, -x pairs and a tiny residue",
       [](const FormatSpec& fa, const FormatSpec* fb, std::size_t k, std::mt19937_64& rng) {
         Case c;
         const std::size_t pairs = k / 2;
         for (std::size_t i = 0; i < pairs; ++i) {
           const Bits a = random_finite(fa, rng);
           const Bits b = fb ? random_finite(*fb, rng) : Bits{};
           std::optional<Bits> na = negate(fa, a);
           std::optional<Bits> nb = fb ? negate(*fb, b) : std::nullopt;
           c.a.push_back(a);
           if (fb) c.b.push_back(b);
           if (fb && nb) {
             c.a.push_back(a);
             c.b.push_back(*nb);
           } else if (na) {
             c.a.push_back(*na);
             if (fb) c.b.push_back(b);
           } else {  // neither format has -x (e8m0 * e8m0, uint8): plain term
             c.a.push_back(random_finite(fa, rng));
             if (fb) c.b.push_back(random_finite(*fb, rng));
           }
         }
         if (k % 2 == 1) {  // a residue at the bottom of the range
           c.a.push_back(extreme(fa, rng, true));
           if (fb) c.b.push_back(extreme(*fb, rng, true));
         }
         std::vector<std::size_t> order(c.a.size());
         for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
         std::shuffle(order.begin(), order.end(), rng);
         Case s;
         for (std::size_t i : order) {
           s.a.push_back(c.a[i]);
           if (fb) s.b.push_back(c.b[i]);
         }
         return s;
       }},
      {"wide exponent range: smallest and largest magnitudes",
       [](const FormatSpec& fa, const FormatSpec* fb, std::size_t k, std::mt19937_64& rng) {
         return per_term(fa, fb, k, rng,
                         [](const FormatSpec& f, std::mt19937_64& r) { return extreme(f, r, (r() & 1) != 0, 16); });
       }},
      {"underflow: products of the smallest magnitudes",
       [](const FormatSpec& fa, const FormatSpec* fb, std::size_t k, std::mt19937_64& rng) {
         return per_term(fa, fb, k, rng, [](const FormatSpec& f, std::mt19937_64& r) { return extreme(f, r, true, 4); });
       }},
      {"overflow: largest magnitudes, one sign",
       [](const FormatSpec& fa, const FormatSpec* fb, std::size_t k, std::mt19937_64& rng) {
         Case c = per_term(fa, fb, k, rng, [](const FormatSpec& f, std::mt19937_64& r) { return extreme(f, r, false, 4); });
         for (Bits& x : c.a)  // make every a positive (so that with b >= 0 all terms share a sign)
           if (is_float(fa) && fa.has_sign) x.raw &= storage_mask(fa) >> 1;
         for (Bits& x : c.b)
           if (fb && is_float(*fb) && fb->has_sign) x.raw &= storage_mask(*fb) >> 1;
         return c;
       }},
      {"signed zeros and cancellations to zero",
       [](const FormatSpec& fa, const FormatSpec* fb, std::size_t k, std::mt19937_64& rng) {
         Case c;
         const int mode = static_cast<int>(rng() % 4);  // all +0, all -0, mixed, zeros + x - x
         for (std::size_t i = 0; i < k; ++i) {
           auto z = [&](const FormatSpec& f, bool neg) { return zero(f, neg); };
           bool na = mode == 1 || (mode >= 2 && (rng() & 1));
           c.a.push_back(z(fa, na));
           if (fb) c.b.push_back(mode == 1 ? zero(*fb, false) : random_finite(*fb, rng));
         }
         if (mode == 3 && k >= 2) {
           const Bits x = random_finite(fa, rng);
           if (auto nx = negate(fa, x)) {
             c.a[0] = x;
             c.a[1] = *nx;
             if (fb) c.b[1] = c.b[0];
           }
         }
         return c;
       }},
      {"specials: finite terms with inf, NaN and 0*inf mixed in",
       [](const FormatSpec& fa, const FormatSpec* fb, std::size_t k, std::mt19937_64& rng) {
         Case c = per_term(fa, fb, k, rng, random_finite);
         if (k == 0) return c;
         const std::size_t i = rng() % k;
         switch (rng() % 4) {
           case 0:
             c.a[i] = infinity(fa, (rng() & 1) != 0);
             break;
           case 1:
             c.a[i] = canonical_nan(fa);
             break;
           case 2:
             c.a[i] = infinity(fa, false);
             c.a[(i + 1) % k] = infinity(fa, true);
             break;
           default:
             c.a[i] = infinity(fa, false);
             if (fb) c.b[i] = zero(*fb, false);
             break;
         }
         return c;
       }},
      {"sparse: signed powers of two (exact ties in narrow outputs)",
       [](const FormatSpec& fa, const FormatSpec* fb, std::size_t k, std::mt19937_64& rng) {
         return per_term(fa, fb, k, rng, power_of_two);
       }},
  };
  return g;
}

/// sign(x − d) for an exact finite value x and a finite double d, both normalised to a top bit
/// at 127 and compared as (exponent, significand, sticky): a naive second comparison, not the
/// accumulator's rounding logic.
int side_of(const Unrounded& x, double d) {
  const Unrounded y = unrounded_of(d);
  auto normalised = [](const Unrounded& u) {
    const auto hi = static_cast<std::uint64_t>(u.significand >> 64);
    const int shift = hi != 0 ? std::countl_zero(hi) : 64 + std::countl_zero(static_cast<std::uint64_t>(u.significand));
    return std::pair<int, uint128>{u.exponent - shift, u.significand << shift};
  };
  const bool zx = x.significand == 0 && !x.sticky, zy = y.significand == 0;
  const int sx = zx ? 0 : (x.negative ? -1 : 1), sy = zy ? 0 : (y.negative ? -1 : 1);
  if (sx != sy) return sx > sy ? 1 : -1;
  if (sx == 0) return 0;
  const auto [ex, mx] = normalised(x);
  const auto [ey, my] = normalised(y);
  int mag = ex != ey ? (ex > ey ? 1 : -1) : mx != my ? (mx > my ? 1 : -1) : (x.sticky ? 1 : 0);
  return sx * mag;
}

/// Compares the accumulator with the oracle on one case: the exact value and its companions,
/// then the rounding into `outs` under `opts`. Returns false on the first mismatch.
bool check_case(const FormatSpec& fa, const FormatSpec* fb, const Case& c, bool daz,
                const std::vector<const FormatSpec*>& outs, const std::vector<RoundOptions>& opts) {
  LongAccumulator acc;
  RoundOptions od;
  od.daz = daz;
  OracleValue ref;
  if (fb) {
    acc.add_dot(fa, c.a, *fb, c.b, daz);
    ref = oracle_dot(fa, c.a, *fb, c.b, fp32, od);
  } else {
    acc.add_sum(fa, c.a, daz);
    ref = oracle_sum(fa, c.a, fp32, od);
  }
  const ExactValue& e = ref.exact;
  bool ok = true;
  if (e.kind == ExactValue::Kind::finite) {
    EXPECT_FALSE(acc.is_nan());
    EXPECT_EQ(acc.infinity_sign(), 0);
    const Unrounded v = acc.value();
    EXPECT_TRUE(same_unrounded(e.value, v)) << "exact value: MPFR " << describe(e.value) << ", accumulator "
                                           << describe(v);
    ok = ok && same_unrounded(e.value, v);
  } else if (e.kind == ExactValue::Kind::nan) {
    EXPECT_TRUE(acc.is_nan());
    EXPECT_EQ(acc.is_invalid(), (e.flags & status_invalid) != 0) << "invalid flag";
    ok = ok && acc.is_nan() && acc.is_invalid() == ((e.flags & status_invalid) != 0);
  } else {
    EXPECT_EQ(acc.infinity_sign(), e.value.negative ? -1 : 1);
    ok = ok && acc.infinity_sign() == (e.value.negative ? -1 : 1);
  }
  EXPECT_TRUE(same_double(e.as_double, acc.to_double())) << "to_double: MPFR " << e.as_double << " accumulator "
                                                         << acc.to_double();
  EXPECT_TRUE(same_double(e.abs_sum, acc.abs_sum_upper())) << "abs_sum: MPFR " << e.abs_sum << " accumulator "
                                                           << acc.abs_sum_upper();
  // nearest_double: MPFR's nearest double, and the side of it MPFR's exact value lies on.
  const LongAccumulator::NearestDouble nd = acc.nearest_double();
  const int want_side = e.kind == ExactValue::Kind::finite ? side_of(e.value, e.as_double) : 0;
  EXPECT_TRUE(same_double(e.as_double, nd.value)) << "nearest_double: MPFR " << e.as_double << " accumulator " << nd.value;
  EXPECT_EQ(nd.side, want_side) << "nearest_double's side of " << e.as_double;
  ok = ok && same_double(e.as_double, nd.value) && nd.side == want_side;
  EXPECT_TRUE(same_double(e.max_abs, acc.max_abs())) << "max_abs: MPFR " << e.max_abs << " accumulator "
                                                     << acc.max_abs();
  ok = ok && same_double(e.as_double, acc.to_double()) && same_double(e.abs_sum, acc.abs_sum_upper()) &&
       same_double(e.max_abs, acc.max_abs());
  EXPECT_EQ(acc.count(), c.a.size());
  for (const FormatSpec* out : outs) {
    for (const RoundOptions& o : opts) {
      const Result want = round_exact(*out, e, o);
      const Result got = acc.round(*out, o);
      if (want != got) {
        ADD_FAILURE() << same_result(*out, want, got).message() << " under " << describe(o);
        return false;
      }
    }
  }
  return ok;
}

std::string describe_case(const FormatSpec& fa, const FormatSpec* fb, const Case& c) {
  std::string s;
  for (std::size_t i = 0; i < c.a.size() && i < 12; ++i) {
    s += ' ';
    s += describe(fa, c.a[i]);
    if (fb) {
      s += '*';
      s += describe(*fb, c.b[i]);
    }
  }
  if (c.a.size() > 12) s += " ...";
  return s;
}

// ---------------------------------------------------------------------------------------
// Hand-checked cases (expected values as bit patterns).

Bits f32(float x) { return Bits{std::bit_cast<std::uint32_t>(x)}; }

TEST(LongAccumulator, EmptySumIsPositiveZero) {
  const LongAccumulator acc;
  EXPECT_EQ(acc.round(fp32).bits, Bits{0x00000000});
  RoundOptions rdn;
  rdn.rounding = Rounding::rdn;
  EXPECT_EQ(acc.round(fp32, rdn).bits, Bits{0x00000000});
  EXPECT_EQ(acc.count(), 0u);
  EXPECT_EQ(acc.abs_sum_upper(), 0.0);
}

TEST(LongAccumulator, CancellationIsExact) {
  // 2^100 + 1 - 2^100 = 1 exactly (a double or fp32 sum would give 0).
  LongAccumulator acc;
  const std::vector<Bits> x{Bits{0x71800000}, Bits{0x3f800000}, Bits{0xf1800000}};
  acc.add_sum(fp32, x);
  EXPECT_EQ(acc.round(fp32).bits, Bits{0x3f800000});
  EXPECT_EQ(acc.to_double(), 1.0);
  EXPECT_EQ(acc.abs_sum_upper(), 0x1.0000000000001p101);  // 2^101 + 1 rounded up
  EXPECT_EQ(acc.max_abs(), 0x1p100);
}

TEST(LongAccumulator, ZeroSigns) {
  RoundOptions rdn;
  rdn.rounding = Rounding::rdn;
  {
    SCOPED_TRACE("x + (-x)");
    LongAccumulator acc;
    acc.add_sum(fp32, std::vector<Bits>{f32(1.5f), f32(-1.5f)});
    EXPECT_EQ(acc.round(fp32).bits, Bits{0x00000000});
    EXPECT_EQ(acc.round(fp32, rdn).bits, Bits{0x80000000});
  }
  {
    SCOPED_TRACE("all -0");
    LongAccumulator acc;
    acc.add_sum(fp32, std::vector<Bits>{Bits{0x80000000}, Bits{0x80000000}});
    EXPECT_EQ(acc.round(fp32).bits, Bits{0x80000000});
    EXPECT_EQ(acc.round(fp32, rdn).bits, Bits{0x80000000});
  }
  {
    SCOPED_TRACE("+0 + -0");
    LongAccumulator acc;
    acc.add_sum(fp32, std::vector<Bits>{Bits{0x00000000}, Bits{0x80000000}});
    EXPECT_EQ(acc.round(fp32).bits, Bits{0x00000000});
    EXPECT_EQ(acc.round(fp32, rdn).bits, Bits{0x80000000});
  }
  {
    SCOPED_TRACE("all +0 under rdn");
    LongAccumulator acc;
    acc.add_product(fp32, Bits{0x80000000}, fp32, Bits{0x80000000});  // (-0)(-0) = +0
    EXPECT_EQ(acc.round(fp32, rdn).bits, Bits{0x00000000});
  }
  {
    SCOPED_TRACE("(-0) * 5 = -0 as the only term");
    LongAccumulator acc;
    acc.add_product(bf16, Bits{0x8000}, bf16, Bits{0x40a0});
    EXPECT_EQ(acc.round(bf16).bits, Bits{0x8000});
  }
}

TEST(LongAccumulator, SpecialValues) {
  {
    SCOPED_TRACE("inf - inf");
    LongAccumulator acc;
    acc.add_sum(fp32, std::vector<Bits>{Bits{0x7f800000}, Bits{0xff800000}});
    EXPECT_TRUE(acc.is_nan());
    EXPECT_EQ(acc.round(fp32), (Result{Bits{0x7fc00000}, status_invalid}));
  }
  {
    SCOPED_TRACE("0 * inf");
    LongAccumulator acc;
    acc.add_product(fp16, Bits{0x0000}, fp16, Bits{0x7c00});
    EXPECT_EQ(acc.round(fp16), (Result{Bits{0x7e00}, status_invalid}));
  }
  {
    SCOPED_TRACE("NaN propagates quietly");
    LongAccumulator acc;
    acc.add_sum(bf16, std::vector<Bits>{Bits{0x3f80}, Bits{0x7fc1}});
    EXPECT_EQ(acc.round(bf16), (Result{Bits{0x7fc0}, status_ok}));
  }
  {
    SCOPED_TRACE("inf + finite; into E4M3 (no inf): NaN");
    LongAccumulator acc;
    acc.add_sum(fp32, std::vector<Bits>{Bits{0xff800000}, f32(3.0f)});
    EXPECT_EQ(acc.infinity_sign(), -1);
    EXPECT_EQ(acc.round(fp32).bits, Bits{0xff800000});
    EXPECT_EQ(acc.round(fp8_e4m3).bits, Bits{0xff});
  }
}

TEST(LongAccumulator, UnderflowAndOverflow) {
  // (2^-149)^2 = 2^-298: rounds to +0 to nearest, to the least subnormal upward.
  LongAccumulator tiny;
  tiny.add_product(fp32, Bits{0x00000001}, fp32, Bits{0x00000001});
  EXPECT_EQ(tiny.round(fp32), (Result{Bits{0x00000000}, status_underflow | status_inexact}));
  RoundOptions up;
  up.rounding = Rounding::rup;
  EXPECT_EQ(tiny.round(fp32, up).bits, Bits{0x00000001});
  EXPECT_EQ(tiny.to_double(), 0x1p-298);
  // 4 * max^2 overflows fp32 (to inf; to max finite toward zero).
  LongAccumulator big;
  for (int i = 0; i < 4; ++i) big.add_product(fp32, Bits{0x7f7fffff}, fp32, Bits{0x7f7fffff});
  EXPECT_EQ(big.round(fp32), (Result{Bits{0x7f800000}, status_overflow | status_inexact}));
  RoundOptions tz;
  tz.rounding = Rounding::rtz;
  EXPECT_EQ(big.round(fp32, tz).bits, Bits{0x7f7fffff});
  EXPECT_EQ(big.max_abs(), 0x1.fffffep127 * 0x1.fffffep127);
}

TEST(LongAccumulator, AddExactRejectsValuesOutsideTheRegister) {
  LongAccumulator acc;
  EXPECT_THROW(acc.add_exact(false, 1, -2000), std::out_of_range);
  EXPECT_THROW(acc.add_exact(false, 1, 1000), std::out_of_range);
  acc.add_exact(true, 3, -1000);
  EXPECT_EQ(acc.to_double(), -3 * 0x1p-1000);
}

TEST(LongAccumulator, MismatchedLengthsThrow) {
  LongAccumulator acc;
  const std::vector<Bits> a(3), b(2);
  EXPECT_THROW(acc.add_dot(fp32, a, fp32, b), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------
// Against MPFR.

/// Runs `iterations` random cases (see MatchesMpfrOnRandomAndAdversarialCases).
void random_cases(int iterations, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto& fmts = input_formats();
  const std::vector<RoundOptions> opts = all_options();
  const auto& gens = generators();
  int failures = 0;
  int cases = 0;
  for (int it = 0; it < iterations && failures < 10; ++it) {
    const FormatSpec& fa = *fmts[rng() % fmts.size()];
    const bool is_sum = rng() % 5 == 0;
    const FormatSpec* fb = is_sum ? nullptr : (rng() % 4 == 0 ? &fa : fmts[rng() % fmts.size()]);
    const std::uint64_t r = rng() % 100;
    const std::size_t k = r < 70 ? rng() % 17 : r < 97 ? 17 + rng() % 240 : 257 + rng() % 3000;
    const NamedGenerator& g = gens[static_cast<std::size_t>(it) % gens.size()];
    const bool daz = rng() % 8 == 0;
    const Case c = g.make(fa, fb, k, rng);
    std::vector<const FormatSpec*> outs{&fp32, &bf16, all_formats[rng() % all_formats.size()],
                                        all_formats[rng() % all_formats.size()]};
    std::vector<RoundOptions> some;
    for (int i = 0; i < 4; ++i) {
      RoundOptions o = opts[rng() % opts.size()];
      o.seed = rng();
      some.push_back(o);
    }
    SCOPED_TRACE("case " + std::to_string(it) + ": " + g.name + ", " + std::string(fa.name) +
                 (fb ? " * " + std::string(fb->name) : std::string(" sum")) + ", K = " + std::to_string(k) +
                 (daz ? ", daz" : "") + ":" + describe_case(fa, fb, c));
    if (!check_case(fa, fb, c, daz, outs, some)) ++failures;
    ++cases;
  }
  EXPECT_EQ(failures, 0) << "of " << cases << " cases";
}

/// Every generator for every format pair, rounded into every format under every option set.
void every_format_and_mode(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::vector<RoundOptions> opts = all_options();
  std::vector<const FormatSpec*> outs(all_formats.begin(), all_formats.end());
  int failures = 0;
  for (const FormatSpec* fa : input_formats()) {
    SCOPED_TRACE(std::string("a: ") + std::string(fa->name));
    for (const FormatSpec* fb : input_formats()) {
      SCOPED_TRACE(std::string("b: ") + std::string(fb->name));
      for (const NamedGenerator& g : generators()) {
        SCOPED_TRACE(g.name);
        if (failures >= 10) return;
        const Case c = g.make(*fa, fb, 1 + rng() % 24, rng);
        SCOPED_TRACE(describe_case(*fa, fb, c));
        if (!check_case(*fa, fb, c, false, outs, opts)) ++failures;
      }
    }
  }
}

/// Forces the portable scalar loop for the lifetime of the object.
struct ScalarPath {
  ScalarPath() { detail::accumulator_force_scalar(true); }
  ScalarPath(const ScalarPath&) = delete;
  ScalarPath& operator=(const ScalarPath&) = delete;
  ~ScalarPath() { detail::accumulator_force_scalar(false); }
};

// 100,000 random dot products and sums over every pair of input formats and every generator,
// K mostly small (the MPFR oracle costs ~100 ns a term); each exact value compared, each
// rounded into fp32, bf16 and two random formats under four random option sets.
// About 2.5 s (CPU) in a Release build.
TEST(LongAccumulator, MatchesMpfrOnRandomAndAdversarialCases) { random_cases(100000, 20240611); }

// Every generator for every format pair once more, rounded into every format under every
// option set (smaller K: the point is the breadth of the roundings). About 0.5 s.
TEST(LongAccumulator, MatchesMpfrInEveryFormatAndMode) { every_format_and_mode(77); }

// The portable scalar loop (the AVX2 one runs above where the CPU has it). About 1 s.
TEST(LongAccumulator, ScalarPathMatchesMpfr) {
  const ScalarPath scalar;
  random_cases(20000, 99);
  every_format_and_mode(78);
}

// Carry propagation at the boundaries of the deferred-carry blocks, and a long sum of the
// largest products (2^20 * (2^128)^2 ~ 2^276: far beyond fp32, within the register).
TEST(LongAccumulator, CarryBoundariesAndLongSums) {
  std::mt19937_64 rng(5);
  const std::vector<RoundOptions> opts = all_options();
  const std::vector<const FormatSpec*> outs{&fp32, &bf16, &fp8_e5m2};
  for (std::size_t k : {1023u, 1024u, 1025u, 4095u, 4096u, 4097u, 4099u, 8193u}) {
    SCOPED_TRACE("K = " + std::to_string(k));
    const Case c = per_term(bf16, &bf16, k, rng, random_finite);
    EXPECT_TRUE(check_case(bf16, &bf16, c, false, outs, opts));
    // Same-sign maximal terms: every limb near its bound when the carries are deferred.
    const Case m = per_term(fp32, &fp32, k, rng, [](const FormatSpec&, std::mt19937_64& r) {
      return Bits{0x7f7fffffu - static_cast<std::uint32_t>(r() % 4)};
    });
    EXPECT_TRUE(check_case(fp32, &fp32, m, false, outs, opts));
  }
  {
    SCOPED_TRACE("2^20 products of max fp32 values plus one tiny negative product");
    Case c = per_term(fp32, &fp32, std::size_t{1} << 20, rng,
                      [](const FormatSpec&, std::mt19937_64&) { return Bits{0x7f7fffff}; });
    c.a.push_back(Bits{0x80000001});
    c.b.push_back(Bits{0x00000001});
    EXPECT_TRUE(check_case(fp32, &fp32, c, false, outs, opts));
  }
}

TEST(LongAccumulator, StridedMergedAndScalarPathsAgree) {
  std::mt19937_64 rng(11);
  for (const FormatSpec* f : {&fp32, &bf16, &fp16, &fp8_e4m3, &int32}) {
    SCOPED_TRACE(std::string(f->name));
    const std::size_t k = 3001;
    const Case c = per_term(*f, f, k, rng, random_finite);
    LongAccumulator whole;
    whole.add_dot(*f, c.a, *f, c.b);
    // Column access: b interleaved with junk at stride 3.
    std::vector<Bits> strided(3 * k, Bits{0x7fc00000 & storage_mask(*f)});
    for (std::size_t i = 0; i < k; ++i) strided[3 * i] = c.b[i];
    LongAccumulator col;
    col.add_dot_strided(*f, c.a.data(), 1, *f, strided.data(), 3, k);
    // Three partial accumulators merged, one of them fed term by term.
    LongAccumulator p1, p2, p3;
    p1.add_dot(*f, std::span(c.a).first(1000), *f, std::span(c.b).first(1000));
    for (std::size_t i = 1000; i < 2000; ++i) p2.add_product(*f, c.a[i], *f, c.b[i]);
    p3.add_dot(*f, std::span(c.a).subspan(2000), *f, std::span(c.b).subspan(2000));
    p1.merge(p2);
    p1.merge(p3);
    for (const LongAccumulator* acc : {&col, &p1}) {
      EXPECT_TRUE(same_unrounded(whole.value(), acc->value())) << describe(whole.value()) << " vs "
                                                               << describe(acc->value());
      EXPECT_TRUE(same_unrounded(whole.abs_sum(), acc->abs_sum()));
      EXPECT_EQ(whole.max_abs(), acc->max_abs());
      EXPECT_EQ(acc->count(), k);
    }
  }
}

TEST(LongAccumulator, StochasticRoundingIsReproducible) {
  // 1 + 2^-5 into E4M3 (ulp 2^-3 at 1): up with probability exactly 1/4.
  LongAccumulator acc;
  acc.add_dot(bf16, std::vector<Bits>{Bits{0x3f80}, Bits{0x3d00}}, bf16, std::vector<Bits>{Bits{0x3f80}, Bits{0x3f80}});
  RoundOptions o;
  o.rounding = Rounding::stochastic;
  o.seed = 42;
  const Bits lo{0x38};  // 1.0
  const Bits hi{0x39};  // 1.125
  int saw_hi = 0;
  for (std::uint64_t stream = 0; stream < 1024; ++stream) {
    o.stream = stream;
    const Result a = acc.round(fp8_e4m3, o);
    EXPECT_EQ(a, acc.round(fp8_e4m3, o)) << "same seed and stream, different result";
    EXPECT_TRUE(a.bits == lo || a.bits == hi) << describe(fp8_e4m3, a.bits);
    saw_hi += a.bits == hi;
  }
  // Binomial(1024, 1/4): mean 256, sd 13.9; the seed is fixed, so this is deterministic.
  EXPECT_GT(saw_hi, 256 - 5 * 14);
  EXPECT_LT(saw_hi, 256 + 5 * 14);
}

}  // namespace
}  // namespace numfid
