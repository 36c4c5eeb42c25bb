// Tests of formats/quantize: every fp16/bf16/fp8 input against an exact rational oracle (GMP),
// dequantisation against MPFR, hand-picked single-rounding cases, stochastic frequencies.
#include "formats/quantize.h"

#include <gmp.h>
#include <gtest/gtest.h>
#include <mpfr.h>

#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace numfid {
namespace {

// ---------------------------------------------------------------------------------------
// Independent side: a naive decoder written from the format definitions (IEEE 754, OCP OFP8,
// OCP MX §5.3), not from numfid's decode().

enum class Specials { ieee, e4m3, none };

/// A small float format by its field widths, bias and special encodings.
struct NaiveFormat {
  const FormatSpec* spec;
  int ebits;
  int mbits;
  int bias;
  Specials specials;
};

constexpr NaiveFormat naive_fp16{&fp16, 5, 10, 15, Specials::ieee};
constexpr NaiveFormat naive_bf16{&bf16, 8, 7, 127, Specials::ieee};
constexpr NaiveFormat naive_e4m3{&fp8_e4m3, 4, 3, 7, Specials::e4m3};
constexpr NaiveFormat naive_e5m2{&fp8_e5m2, 5, 2, 15, Specials::ieee};
constexpr NaiveFormat naive_e3m2{&fp6_e3m2, 3, 2, 3, Specials::none};
constexpr NaiveFormat naive_e2m3{&fp6_e2m3, 2, 3, 1, Specials::none};
constexpr NaiveFormat naive_e2m1{&fp4_e2m1, 2, 1, 1, Specials::none};

/// The value of a pattern as a double (NaN / ±inf for the special patterns).
double naive_value(const NaiveFormat& f, std::uint32_t raw) {
  const std::uint32_t emask = (1u << f.ebits) - 1;
  const bool negative = (raw >> (f.ebits + f.mbits)) & 1;
  const std::uint32_t e = (raw >> f.mbits) & emask;
  const std::uint32_t m = raw & ((1u << f.mbits) - 1);
  if (f.specials == Specials::ieee && e == emask)
    return m != 0 ? std::numeric_limits<double>::quiet_NaN() : (negative ? -INFINITY : INFINITY);
  if (f.specials == Specials::e4m3 && e == emask && m == (1u << f.mbits) - 1)
    return std::numeric_limits<double>::quiet_NaN();
  const double mag = e == 0 ? std::ldexp(m, 1 - f.bias - f.mbits)
                            : std::ldexp(m + (1u << f.mbits), static_cast<int>(e) - f.bias - f.mbits);
  return negative ? -mag : mag;
}

double fp32_value(std::uint32_t raw) {
  float v;
  std::memcpy(&v, &raw, 4);
  return v;
}

std::uint32_t fp32_bits(float v) {
  std::uint32_t raw;
  std::memcpy(&raw, &v, 4);
  return raw;
}

/// round(x / s) of two doubles, exactly (GMP rationals): floor and where the fraction lies.
struct ExactQuotient {
  std::int64_t floor = 0;  // clamped to ±2^40 (every such value saturates every target)
  int frac = 0;            // 0: integer, 1: below one half, 2: exactly one half, 3: above
};

ExactQuotient exact_quotient(double x, double s) {
  mpq_t q, d;
  mpz_t fl, rem, twice;
  mpq_inits(q, d, nullptr);
  mpz_inits(fl, rem, twice, nullptr);
  mpq_set_d(q, x);  // exact: every double is a dyadic rational
  mpq_set_d(d, s);
  mpq_div(q, q, d);
  mpz_fdiv_qr(fl, rem, mpq_numref(q), mpq_denref(q));  // denominator > 0 (canonical)
  ExactQuotient r;
  if (mpz_sgn(rem) != 0) {
    mpz_mul_2exp(twice, rem, 1);
    const int c = mpz_cmp(twice, mpq_denref(q));
    r.frac = c < 0 ? 1 : c == 0 ? 2 : 3;
  }
  const std::int64_t big = std::int64_t{1} << 40;
  if (mpz_cmp_si(fl, big) > 0) r.floor = big;
  else if (mpz_cmp_si(fl, -big) < 0) r.floor = -big;
  else r.floor = mpz_get_si(fl);
  mpq_clears(q, d, nullptr);
  mpz_clears(fl, rem, twice, nullptr);
  return r;
}

std::int64_t round_quotient(const ExactQuotient& q, Rounding m) {
  const std::int64_t f = q.floor;
  if (q.frac == 0) return f;
  switch (m) {
    case Rounding::rtz: return f >= 0 ? f : f + 1;  // value = f + t, 0 < t < 1: negative iff f < 0
    case Rounding::rdn: return f;
    case Rounding::rup: return f + 1;
    case Rounding::rne: return q.frac == 1 ? f : q.frac == 3 ? f + 1 : (f % 2 == 0 ? f : f + 1);
    case Rounding::rna: return q.frac == 1 ? f : q.frac == 3 ? f + 1 : (f >= 0 ? f + 1 : f);
    case Rounding::stochastic: break;
  }
  ADD_FAILURE() << "no deterministic oracle for stochastic rounding";
  return 0;
}

struct IntTarget {
  const FormatSpec* spec;
  std::int64_t lo;
  std::int64_t hi;
  std::vector<std::int32_t> zero_points;  // odd ones make rne's "round, then add" visible
};

const std::vector<IntTarget>& int_targets() {
  static const std::vector<IntTarget> t{
      {&int8, -128, 127, {0, -37}},
      {&uint8, 0, 255, {128, 3}},
      {&int32, -2147483648LL, 2147483647LL, {0, -1000001}},
  };
  return t;
}

std::int64_t int_of(const FormatSpec& f, Bits b) {
  if (f.is_signed) {
    const std::uint32_t sign = 1u << (f.bits - 1);
    const std::int64_t v = b.raw & storage_mask(f);
    return (b.raw & sign) != 0 ? v - (std::int64_t{1} << f.bits) : v;
  }
  return b.raw & storage_mask(f);
}

Bits int_bits(const FormatSpec& f, std::int64_t v) {
  return Bits{static_cast<std::uint32_t>(static_cast<std::uint64_t>(v)) & storage_mask(f)};
}

constexpr Rounding deterministic_modes[] = {Rounding::rne, Rounding::rtz, Rounding::rup, Rounding::rdn, Rounding::rna};

/// Scales of the sweep (fp32 unless said): powers of two, 0.1-ish, 3 (periodic quotients),
/// tiny (subnormal), huge, negative, and a bf16 scale.
struct ScaleCase {
  const FormatSpec* format;
  std::uint32_t raw;
};
const std::vector<ScaleCase>& sweep_scales() {
  static const std::vector<ScaleCase> s{
      {&fp32, 0x3f800000u},  // 1
      {&fp32, 0x3e000000u},  // 2^-3
      {&fp32, 0x42000000u},  // 2^5
      {&fp32, 0x3dcccccdu},  // 0.1f
      {&fp32, 0x3c23d70au},  // 0.01f
      {&fp32, 0x40400000u},  // 3
      {&fp32, 0x00000800u},  // 2^-138 (subnormal)
      {&fp32, 0x7e967699u},  // 1e38
      {&fp32, 0xbf000000u},  // -0.5
      {&bf16, 0x3dcdu},      // bf16 0.10009765625
  };
  return s;
}

double scale_value(const ScaleCase& s) {
  return *s.format == fp32 ? fp32_value(s.raw) : fp32_value(s.raw << 16);
}

std::string describe(const FormatSpec& f, Bits b, double v) {
  return fmt::format("{} {} ({:a} = {})", f.name, to_hex(f, b), v, v);
}

/// Every pattern of `src` quantised with every sweep scale, integer target, zero point and
/// deterministic mode, compared with the exact rational oracle (value and flags).
void sweep_quantize(const NaiveFormat& src) {
  SCOPED_TRACE(fmt::format("source {}", src.spec->name));
  const std::uint32_t count = 1u << src.spec->bits;
  int failures = 0;
  long checked = 0;
  for (const ScaleCase& sc : sweep_scales()) {
    const double s = scale_value(sc);
    const QuantParams base{sc.format, Bits{sc.raw}, 0};
    SCOPED_TRACE(fmt::format("scale {}", describe(*sc.format, base.scale, s)));
    for (std::uint32_t raw = 0; raw < count; ++raw) {
      const double x = naive_value(src, raw);
      const ExactQuotient q = std::isfinite(x) ? exact_quotient(x, s) : ExactQuotient{};
      for (const IntTarget& t : int_targets()) {
        for (const std::int32_t zp : t.zero_points) {
          QuantParams p = base;
          p.zero_point = zp;
          for (const Rounding m : deterministic_modes) {
            std::int64_t want;
            Status want_st = status_ok;
            if (std::isnan(x)) {
              want = zp;
              want_st = status_invalid;
            } else if (std::isinf(x)) {
              want = (x < 0) != (s < 0) ? t.lo : t.hi;
              want_st = status_invalid;
            } else {
              want = round_quotient(q, m) + zp;
              if (q.frac != 0) want_st |= status_inexact;
              if (want < t.lo || want > t.hi) {
                want = want < t.lo ? t.lo : t.hi;
                want_st |= status_invalid;
              }
            }
            RoundOptions o;
            o.rounding = m;
            const Result got = quantize(*src.spec, Bits{raw}, *t.spec, p, o);
            ++checked;
            if (got.bits != int_bits(*t.spec, want) || got.status != want_st) {
              if (++failures <= 10)
                ADD_FAILURE() << "quantize x=" << describe(*src.spec, Bits{raw}, x) << " to " << t.spec->name
                              << " zp=" << zp << " mode=" << rounding_name(m) << ": got "
                              << to_hex(*t.spec, got.bits) << " = " << int_of(*t.spec, got.bits) << " flags "
                              << +got.status << ", want " << want << " flags " << +want_st;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(failures, 0) << "of " << checked << " cases";
}

TEST(QuantizeSweep, Fp8E4m3AllPatterns) { sweep_quantize(naive_e4m3); }
TEST(QuantizeSweep, Fp8E5m2AllPatterns) { sweep_quantize(naive_e5m2); }
TEST(QuantizeSweep, Fp16AllPatterns) { sweep_quantize(naive_fp16); }
TEST(QuantizeSweep, Bf16AllPatterns) { sweep_quantize(naive_bf16); }

// ---------------------------------------------------------------------------------------
// Dequantisation against MPFR: (q - zp) * scale is exact at 128 bits; it is rounded to the
// target's quantum at its binade, 2^(max(floor(log2|v|), emin) - (p - 1)) (IEEE 754 §3.3:
// subnormals share emin's quantum), with mpfr_rint / mpfr_round (ties away) on v / quantum;
// the format's own overflow rules are applied on top (E4M3's max 448 is below 2^(emax+1)).

struct FloatTarget {
  const FormatSpec* spec;
  int p;
  int emin;
  double max;
  enum { ieee_inf, nan_only, finite_only } overflow;
  const NaiveFormat* naive;  // nullptr: fp32, encoded through memcpy
};

const std::vector<FloatTarget>& float_targets() {
  static const std::vector<FloatTarget> t{
      {&fp32, 24, -126, 0x1.fffffep127, FloatTarget::ieee_inf, nullptr},
      {&fp16, 11, -14, 65504.0, FloatTarget::ieee_inf, &naive_fp16},
      {&bf16, 8, -126, 0x1.fep127, FloatTarget::ieee_inf, &naive_bf16},
      {&fp8_e4m3, 4, -6, 448.0, FloatTarget::nan_only, &naive_e4m3},
      {&fp8_e5m2, 3, -14, 57344.0, FloatTarget::ieee_inf, &naive_e5m2},
      {&fp6_e3m2, 3, -2, 28.0, FloatTarget::finite_only, &naive_e3m2},
      {&fp6_e2m3, 4, 0, 7.5, FloatTarget::finite_only, &naive_e2m3},
      {&fp4_e2m1, 2, 0, 6.0, FloatTarget::finite_only, &naive_e2m1},
  };
  return t;
}

/// value -> pattern, from enumerating the naive decoder (finite values; -0 kept apart).
std::uint32_t encode_naive(const NaiveFormat& f, double v) {
  static std::map<const NaiveFormat*, std::map<std::pair<double, bool>, std::uint32_t>> tables;
  auto& table = tables[&f];
  if (table.empty()) {
    for (std::uint32_t raw = 0; raw < (1u << (1 + f.ebits + f.mbits)); ++raw) {
      const double d = naive_value(f, raw);
      if (std::isfinite(d)) table.emplace(std::make_pair(d, std::signbit(d)), raw);
    }
  }
  const auto it = table.find({v, std::signbit(v)});
  if (it == table.end()) {
    ADD_FAILURE() << "oracle: " << v << " not representable in " << f.spec->name;
    return 0;
  }
  return it->second;
}

/// v rounded to a multiple of the target's quantum at v's binade (no overflow handling).
double mpfr_round_to_target(const mpfr_t v, const FloatTarget& t, Rounding m) {
  if (mpfr_zero_p(v)) return mpfr_signbit(v) ? -0.0 : 0.0;
  const long e = static_cast<long>(mpfr_get_exp(v)) - 1;  // MPFR: v = f * 2^exp, 1/2 <= |f| < 1
  const long quantum = (e > t.emin ? e : t.emin) - (t.p - 1);
  mpfr_t w;
  mpfr_init2(w, 256);
  mpfr_div_2si(w, v, quantum, MPFR_RNDN);  // exact
  switch (m) {
    case Rounding::rne: mpfr_rint(w, w, MPFR_RNDN); break;
    case Rounding::rtz: mpfr_rint(w, w, MPFR_RNDZ); break;
    case Rounding::rup: mpfr_rint(w, w, MPFR_RNDU); break;
    case Rounding::rdn: mpfr_rint(w, w, MPFR_RNDD); break;
    case Rounding::rna: mpfr_round(w, w); break;
    case Rounding::stochastic: ADD_FAILURE() << "no deterministic oracle for stochastic rounding"; break;
  }
  mpfr_mul_2si(w, w, quantum, MPFR_RNDN);
  double d = mpfr_get_d(w, MPFR_RNDN);  // exact: at most p + 1 bits, within double's range
  if (d == 0) d = mpfr_signbit(v) ? -0.0 : 0.0;
  mpfr_clear(w);
  return d;
}

/// The expected pattern of round(v) in the target under mode m and overflow mode ov.
std::uint32_t expected_float(const mpfr_t v, const FloatTarget& t, Rounding m, Overflow ov) {
  const bool negative = mpfr_signbit(v) != 0;
  double r = mpfr_round_to_target(v, t, m);
  if (std::isinf(r) || std::fabs(r) > t.max) {
    const bool toward_zero = m == Rounding::rtz || (m == Rounding::rdn && !negative) || (m == Rounding::rup && negative);
    if (ov == Overflow::saturate || toward_zero || t.overflow == FloatTarget::finite_only) {
      r = negative ? -t.max : t.max;
    } else if (t.overflow == FloatTarget::nan_only) {
      return negative ? 0xffu : 0x7fu;  // OFP8 E4M3 NaN S.1111.111
    } else {
      r = negative ? -INFINITY : INFINITY;
    }
  }
  if (t.naive == nullptr) return fp32_bits(static_cast<float>(r));
  if (std::isinf(r)) {
    const std::uint32_t inf = ((1u << t.naive->ebits) - 1) << t.naive->mbits;
    return negative ? inf | (1u << (t.naive->ebits + t.naive->mbits)) : inf;
  }
  return encode_naive(*t.naive, r);
}

std::vector<std::int64_t> int32_samples() {
  std::vector<std::int64_t> v{-2147483648LL, -2147483647LL, -16777217, -16777216, -1000001, -255, -1, 0, 1, 2,
                              3, 255, 256, 16777215, 16777217, 33554435, 1000000007, 2147483646, 2147483647};
  std::uint64_t z = 12345;
  for (int i = 0; i < 60; ++i) {
    z = z * 6364136223846793005ULL + 1442695040888963407ULL;  // LCG: fixed, reproducible
    v.push_back(static_cast<std::int32_t>(z >> 32));
  }
  return v;
}

TEST(DequantizeSweep, AgainstMpfr) {
  int failures = 0;
  long checked = 0;
  mpfr_t v;
  mpfr_init2(v, 128);
  for (const IntTarget& src : int_targets()) {
    SCOPED_TRACE(fmt::format("source {}", src.spec->name));
    std::vector<std::int64_t> qs;
    if (src.spec->bits == 8)
      for (std::int64_t q = src.lo; q <= src.hi; ++q) qs.push_back(q);
    else
      qs = int32_samples();
    for (const ScaleCase& sc : sweep_scales()) {
      const double s = scale_value(sc);
      SCOPED_TRACE(fmt::format("scale {}", describe(*sc.format, Bits{sc.raw}, s)));
      for (const std::int32_t zp : src.zero_points) {
        const QuantParams p{sc.format, Bits{sc.raw}, zp};
        for (const std::int64_t q : qs) {
          mpfr_set_si(v, static_cast<long>(q - zp), MPFR_RNDN);  // exact (34 bits)
          mpfr_mul_d(v, v, s, MPFR_RNDN);                      // exact (34 + 24 bits); +0 * -s = -0
          for (const FloatTarget& t : float_targets()) {
            for (const Rounding m : deterministic_modes) {
              for (const Overflow ov : {Overflow::ieee, Overflow::saturate}) {
                RoundOptions o;
                o.rounding = m;
                o.overflow = ov;
                const std::uint32_t want = expected_float(v, t, m, ov);
                const Result got = dequantize(*src.spec, int_bits(*src.spec, q), *t.spec, p, o);
                ++checked;
                if (got.bits.raw != want && ++failures <= 10)
                  ADD_FAILURE() << "dequantize q=" << q << " zp=" << zp << " to " << t.spec->name
                                << " mode=" << rounding_name(m) << (ov == Overflow::saturate ? " saturate" : " ieee")
                                << ": got " << to_hex(*t.spec, got.bits) << " (" << to_double(*t.spec, got.bits)
                                << "), want " << to_hex(*t.spec, Bits{want}) << " (" << to_double(*t.spec, Bits{want})
                                << "), exact " << mpfr_get_d(v, MPFR_RNDN);
              }
            }
          }
        }
      }
    }
  }
  mpfr_clear(v);
  EXPECT_EQ(failures, 0) << "of " << checked << " cases";
}

// ---------------------------------------------------------------------------------------
// Hand-picked cases: each shows one rule with values checked by hand (Python fractions).

Result q8(std::uint32_t x_fp32, std::uint32_t scale_fp32, std::int32_t zp, Rounding m,
          const FormatSpec& to = int8) {
  RoundOptions o;
  o.rounding = m;
  return quantize(fp32, Bits{x_fp32}, to, {&fp32, Bits{scale_fp32}, zp}, o);
}

TEST(Quantize, OneRoundingNotTwo) {
  // 0.7f / 0.1f = 6.99999977648... exactly; the fp32 quotient would be 7.0 (double rounding).
  EXPECT_EQ(q8(0x3f333333u, 0x3dcccccdu, 0, Rounding::rtz).bits, Bits{6});
  EXPECT_EQ(q8(0x3f333333u, 0x3dcccccdu, 0, Rounding::rne).bits, Bits{7});
  // 0.3f / 0.1f = 3.0000000745...: rounding up gives 4, not the 3 of an fp32 quotient.
  EXPECT_EQ(q8(0x3e99999au, 0x3dcccccdu, 0, Rounding::rup).bits, Bits{4});
  EXPECT_EQ(q8(0x3e99999au, 0x3dcccccdu, 0, Rounding::rup).status, status_inexact);
}

TEST(Quantize, RoundThenAddZeroPoint) {
  // 2.5 / 1: rne 2, rna 3. With zero point 1: rne(2.5) + 1 = 3 (ONNX), not rne(3.5) = 4.
  EXPECT_EQ(q8(0x40200000u, 0x3f800000u, 0, Rounding::rne).bits, Bits{2});
  EXPECT_EQ(q8(0x40200000u, 0x3f800000u, 0, Rounding::rna).bits, Bits{3});
  EXPECT_EQ(q8(0x40200000u, 0x3f800000u, 1, Rounding::rne).bits, Bits{3});
  // -2.5: rtz -2, rdn -3, rup -2; zero point -3 added afterwards.
  EXPECT_EQ(q8(0xc0200000u, 0x3f800000u, -3, Rounding::rtz).bits, int_bits(int8, -5));
  EXPECT_EQ(q8(0xc0200000u, 0x3f800000u, -3, Rounding::rdn).bits, int_bits(int8, -6));
  EXPECT_EQ(q8(0xc0200000u, 0x3f800000u, -3, Rounding::rup).bits, int_bits(int8, -5));
}

TEST(Quantize, SaturationAndSpecials) {
  // 200 / 1 -> int8 127 (invalid); -1 -> uint8 0 (invalid); NaN -> zero point; ±inf -> bounds.
  EXPECT_EQ(q8(0x43480000u, 0x3f800000u, 0, Rounding::rne), (Result{Bits{0x7f}, status_invalid}));
  EXPECT_EQ(q8(0xbf800000u, 0x3f800000u, 0, Rounding::rne, uint8), (Result{Bits{0}, status_invalid}));
  EXPECT_EQ(q8(0x7fc00000u, 0x3f800000u, 5, Rounding::rne), (Result{Bits{5}, status_invalid}));
  EXPECT_EQ(q8(0x7f800000u, 0x3f800000u, 5, Rounding::rne), (Result{Bits{0x7f}, status_invalid}));
  EXPECT_EQ(q8(0xff800000u, 0x3f800000u, 5, Rounding::rne), (Result{Bits{0x80}, status_invalid}));
  // -inf with a negative scale is +inf.
  EXPECT_EQ(q8(0xff800000u, 0xbf800000u, 0, Rounding::rne), (Result{Bits{0x7f}, status_invalid}));
  // -0.4 rounds to 0 then zp 0: exactly the zero point, inexact; -0 itself is exact.
  EXPECT_EQ(q8(0xbecccccdu, 0x3f800000u, 0, Rounding::rne), (Result{Bits{0}, status_inexact}));
  EXPECT_EQ(q8(0x80000000u, 0x3f800000u, 0, Rounding::rne), (Result{Bits{0}, status_ok}));
  // -1e-45 (fp32 min subnormal) with rdn is -1; with daz it reads as 0.
  EXPECT_EQ(q8(0x80000001u, 0x3f800000u, 0, Rounding::rdn).bits, int_bits(int8, -1));
  RoundOptions daz;
  daz.rounding = Rounding::rdn;
  daz.daz = true;
  EXPECT_EQ(quantize(fp32, Bits{0x80000001u}, int8, {&fp32, Bits{0x3f800000u}, 0}, daz).bits, Bits{0});
}

TEST(Quantize, Int32QuotientBeyondInt32ComesBackWithZeroPoint) {
  // 3e9 / 1 = 3000000000 > INT32_MAX, zero point -2e9: 1e9 is in range (no saturation).
  const Result r = quantize(fp32, Bits{0x4f32d05eu}, int32, {&fp32, Bits{0x3f800000u}, -2000000000});
  EXPECT_EQ(int_of(int32, r.bits), 3000000000LL - 2000000000LL);
  EXPECT_EQ(r.status, status_ok);
}

TEST(Quantize, InvalidParametersThrow) {
  EXPECT_THROW(quantize(fp32, Bits{0}, fp16, {}), std::invalid_argument);                         // not an integer
  EXPECT_THROW(quantize(fp32, Bits{0}, int8, {&fp32, Bits{0}, 0}), std::invalid_argument);        // scale 0
  EXPECT_THROW(quantize(fp32, Bits{0}, int8, {&fp32, Bits{0x7f800000u}, 0}), std::invalid_argument);  // inf
  EXPECT_THROW(quantize(fp32, Bits{0}, int8, {&int8, Bits{1}, 0}), std::invalid_argument);        // int scale
  EXPECT_THROW(quantize(fp32, Bits{0}, uint8, {&fp32, Bits{0x3f800000u}, -1}), std::invalid_argument);  // zp
  EXPECT_THROW(dequantize(fp32, Bits{0}, fp32, {}), std::invalid_argument);
  EXPECT_THROW(dequantize(int8, Bits{0}, int32, {}), std::invalid_argument);
}

TEST(Dequantize, HandPicked) {
  // (100 - (-28)) * 0.1f = 12.800000190734863...; fp16: 12.8 is between 0x4a66 (12.796875) and
  // 0x4a67 (12.8046875), closer to 12.796875 by 0.0031, rne -> 0x4a66, rup -> 0x4a67.
  const QuantParams p{&fp32, Bits{0x3dcccccdu}, -28};
  EXPECT_EQ(dequantize(int8, Bits{100}, fp16, p).bits, Bits{0x4a66});
  RoundOptions up;
  up.rounding = Rounding::rup;
  EXPECT_EQ(dequantize(int8, Bits{100}, fp16, p, up).bits, Bits{0x4a67});
  // q == zp gives +0, or -0 with a negative scale.
  EXPECT_EQ(dequantize(int8, int_bits(int8, -28), fp32, p), (Result{Bits{0}, status_ok}));
  EXPECT_EQ(dequantize(int8, Bits{0}, fp32, {&fp32, Bits{0xbf800000u}, 0}).bits, Bits{0x80000000u});
  // 127 * 4 = 508 into E4M3: beyond 448 -> NaN (OFP8 non-saturating) or 448 (saturate).
  const QuantParams four{&fp32, Bits{0x40800000u}, 0};
  EXPECT_EQ(dequantize(int8, Bits{127}, fp8_e4m3, four).bits, Bits{0x7f});
  RoundOptions sat;
  sat.overflow = Overflow::saturate;
  EXPECT_EQ(dequantize(int8, Bits{127}, fp8_e4m3, four, sat).bits, Bits{0x7e});
}

TEST(Quantize, PerTensorAndPerChannel) {
  // Shape [2 channels][3]: channel 0 scale 0.5 zp 0, channel 1 scale 2 zp 10 (uint8).
  const std::vector<Bits> x{Bits{0x3f800000u}, Bits{0x40400000u}, Bits{0xbf800000u},   // 1, 3, -1
                            Bits{0x40a00000u}, Bits{0x40e00000u}, Bits{0xc1a00000u}};  // 5, 7, -20
  const std::vector<QuantParams> ch{{&fp32, Bits{0x3f000000u}, 0}, {&fp32, Bits{0x40000000u}, 10}};
  std::vector<Bits> q(6);
  const Status st = quantize_per_channel(fp32, x, uint8, ch, 3, q);
  // 1/0.5=2, 3/0.5=6, -1/0.5=-2 -> 0 (clamped); 5/2=2.5 -> 2 +10, 7/2=3.5 -> 4 +10, -20/2=-10 +10 = 0.
  EXPECT_EQ(q, (std::vector<Bits>{Bits{2}, Bits{6}, Bits{0}, Bits{12}, Bits{14}, Bits{0}}));
  EXPECT_EQ(st, status_invalid | status_inexact);
  std::vector<Bits> back(6);
  EXPECT_EQ(dequantize_per_channel(uint8, q, fp32, ch, 3, back), status_ok);
  EXPECT_EQ(back, (std::vector<Bits>{Bits{0x3f800000u}, Bits{0x40400000u}, Bits{0}, Bits{0x40800000u},
                                     Bits{0x41000000u}, Bits{0xc1a00000u}}));  // 1, 3, 0, 4, 8, -20
  // Per-tensor: one parameter set for all.
  std::vector<Bits> qt(6);
  EXPECT_EQ(quantize_per_tensor(fp32, x, int8, ch[0], qt), status_ok);
  EXPECT_EQ(qt, (std::vector<Bits>{Bits{2}, Bits{6}, int_bits(int8, -2), Bits{10}, Bits{14}, int_bits(int8, -40)}));
  std::vector<Bits> wrong(5);
  EXPECT_THROW(quantize_per_tensor(fp32, x, int8, ch[0], wrong), std::invalid_argument);
  EXPECT_THROW(quantize_per_channel(fp32, x, int8, ch, 4, q), std::invalid_argument);  // 6 % 8 != 0
}

// ---------------------------------------------------------------------------------------
// Stochastic rounding: frequencies within 5 standard deviations of the exact probability.

void expect_frequency(int hits, int n, double p, const std::string& what) {
  const double sigma = std::sqrt(n * p * (1 - p));
  EXPECT_NEAR(hits, n * p, 5 * sigma) << what << ": " << hits << " of " << n << ", expected p = " << p;
}

TEST(QuantizeStochastic, Frequencies) {
  constexpr int n = 20000;
  struct Case {
    std::uint32_t x, scale;
    std::int64_t low;  // the value rounded toward -inf
    double p_high;     // probability of low + 1
  };
  // 9/4 = 2.25: P(3) = 1/4. 1/3: P(1) = 1/3. -1/3: P(-1) = 1/3, i.e. P(0) = 2/3.
  // 2/3: P(1) = 2/3.
  const Case cases[] = {{0x41100000u, 0x40800000u, 2, 0.25},
                        {0x3f800000u, 0x40400000u, 0, 1.0 / 3},
                        {0xbf800000u, 0x40400000u, -1, 2.0 / 3},
                        {0x40000000u, 0x40400000u, 0, 2.0 / 3}};
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("x {:#x} scale {:#x}", c.x, c.scale));
    int high = 0;
    for (int i = 0; i < n; ++i) {
      RoundOptions o;
      o.rounding = Rounding::stochastic;
      o.seed = 7;
      o.stream = static_cast<std::uint64_t>(i);
      const std::int64_t v = int_of(int32, quantize(fp32, Bits{c.x}, int32, {&fp32, Bits{c.scale}, 0}, o).bits);
      ASSERT_TRUE(v == c.low || v == c.low + 1) << v;
      high += v == c.low + 1;
    }
    expect_frequency(high, n, c.p_high, "quantize");
  }
  // An exact quotient never moves: 6 / 2 = 3 for every stream.
  for (int i = 0; i < 1000; ++i) {
    RoundOptions o;
    o.rounding = Rounding::stochastic;
    o.stream = static_cast<std::uint64_t>(i);
    ASSERT_EQ(quantize(fp32, Bits{0x40c00000u}, int8, {&fp32, Bits{0x40000000u}, 0}, o), (Result{Bits{3}, status_ok}));
  }
}

TEST(DequantizeStochastic, FrequencyAndReproducibility) {
  // 17 * 1 into E4M3 lies halfway between 16 (0x58) and 18 (0x59): P(18) = 1/2.
  // 19 * 1: P(20) = 1/2 as well; 33 * 1 between 32 and 36: P(36) = 1/4.
  constexpr int n = 20000;
  struct Case {
    std::int64_t q;
    std::uint32_t low, high;
    double p_high;
  };
  for (const Case& c : {Case{17, 0x58, 0x59, 0.5}, Case{33, 0x60, 0x61, 0.25}, Case{-33, 0xe0, 0xe1, 0.25}}) {
    SCOPED_TRACE(fmt::format("q {}", c.q));
    int high = 0;
    RoundOptions o;
    o.rounding = Rounding::stochastic;
    o.seed = 99;
    for (int i = 0; i < n; ++i) {
      o.stream = static_cast<std::uint64_t>(i);
      const Bits b = dequantize(int8, int_bits(int8, c.q), fp8_e4m3, {}, o).bits;
      ASSERT_TRUE(b.raw == c.low || b.raw == c.high) << to_hex(fp8_e4m3, b);
      high += b.raw == c.high;
      ASSERT_EQ(dequantize(int8, int_bits(int8, c.q), fp8_e4m3, {}, o).bits, b) << "not reproducible";
    }
    expect_frequency(high, n, c.p_high, "dequantize");
  }
  // Spans: element i uses stream o.stream + i, the same as the scalar call.
  const std::vector<Bits> x(64, Bits{0x41100000u});  // 9 / 4 = 2.25
  std::vector<Bits> q(64);
  RoundOptions o;
  o.rounding = Rounding::stochastic;
  o.seed = 3;
  o.stream = 1000;
  quantize_per_tensor(fp32, x, int8, {&fp32, Bits{0x40800000u}, 0}, q, o);
  for (std::size_t i = 0; i < q.size(); ++i) {
    RoundOptions oi = o;
    oi.stream = 1000 + i;
    EXPECT_EQ(q[i], quantize(fp32, x[i], int8, {&fp32, Bits{0x40800000u}, 0}, oi).bits) << "element " << i;
  }
}


}  // namespace
}  // namespace numfid
