// Tests of formats/mx: scale selection on hand-picked blocks (expected E8M0 bits), NaN/inf
// rules, exact round trips, and a naive double-based implementation on 10^4 random blocks.
#include "formats/mx.h"

#include <gtest/gtest.h>

#include <algorithm>
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

std::uint32_t f32(float v) {
  std::uint32_t raw;
  std::memcpy(&raw, &v, 4);
  return raw;
}

double f32_value(std::uint32_t raw) {
  float v;
  std::memcpy(&v, &raw, 4);
  return v;
}

std::vector<Bits> fp32_block(std::initializer_list<std::uint32_t> raws, std::size_t size = 32) {
  std::vector<Bits> v(size, Bits{0});
  std::size_t i = 0;
  for (const std::uint32_t r : raws) v[i++] = Bits{r};
  return v;
}

std::string bits_list(const FormatSpec& f, std::span<const Bits> v) {
  std::string s;
  for (const Bits b : v) s += to_hex(f, b) + " ";
  return s;
}

// ---------------------------------------------------------------------------------------
// Scale selection: OCP MX v1.0 §6.3 Algorithm 1, shared_exp = floor(log2 max|V|) - emax_elem,
// E8M0 bits = shared_exp + 127. Expected values worked out by hand.

struct ScaleCase {
  std::string what;
  const MxFormat* format;
  std::vector<Bits> block;
  std::uint32_t scale;      // expected E8M0 bits
  std::uint32_t element0;   // expected element for block[0]
};

TEST(MxScale, HandPickedBlocks) {
  const std::vector<ScaleCase> cases{
      // 448 = 1.75 * 2^8: shared 8 - 8 = 0 -> 0x7f; element 448 is E4M3's max 0x7e.
      {"E4M3 max 448", &mxfp8_e4m3, fp32_block({0x43e00000u, 0x3f800000u}), 0x7f, 0x7e},
      // 448 * 2^3 = 3584: shared 3 -> 0x82, element 448 again.
      {"E4M3 max 448*2^3", &mxfp8_e4m3, fp32_block({0x45600000u}), 0x82, 0x7e},
      // -448 * 2^-20: the sign does not matter; shared -20 -> 0x6b, element -448 = 0xfe.
      {"E4M3 max -448*2^-20", &mxfp8_e4m3, fp32_block({0x00000000u, 0xb9e00000u}), 0x6b, 0x00},
      // 1.0 (a power of two): shared 0 - 8 = -8 -> 0x77; element 256 = 2^8 -> 0x78.
      {"E4M3 max 1.0", &mxfp8_e4m3, fp32_block({0x3f800000u}), 0x77, 0x78},
      // 511.99997 = 0x1.fffffep8, just below 2^9: shared 0; the element rounds to 512, beyond
      // 448: clamped to 448 (Algorithm 1 line 4), not moved to the next scale.
      {"E4M3 max just below 2^9", &mxfp8_e4m3, fp32_block({0x43ffffffu}), 0x7f, 0x7e},
      // E2M1: 3.9999998 = 0x1.fffffep1: shared 1 - 2 = -1 -> 0x7e; 7.9999995 -> clamped to 6 = 0x7.
      {"E2M1 max just below 4", &mxfp4_e2m1, fp32_block({0x407fffffu}), 0x7e, 0x7},
      // E2M1 max 6 = 1.5 * 2^2: shared 0 -> 0x7f; element 6 = 0x7.
      {"E2M1 max 6", &mxfp4_e2m1, fp32_block({0x40c00000u}), 0x7f, 0x7},
      // E5M2 1.5: shared 0 - 15 -> 0x70; element 1.5 * 2^15 = 49152 = 0x7a.
      {"E5M2 max 1.5", &mxfp8_e5m2, fp32_block({0x3fc00000u}), 0x70, 0x7a},
      // E3M2 28 = 1.75 * 2^4: shared 0 -> 0x7f, element max 0x1f.
      {"E3M2 max 28", &mxfp6_e3m2, fp32_block({0x41e00000u}), 0x7f, 0x1f},
      // E2M3 7.5 = 1.875 * 2^2: shared 0 -> 0x7f, element max 0x1f.
      {"E2M3 max 7.5", &mxfp6_e2m3, fp32_block({0x40f00000u}), 0x7f, 0x1f},
      // MXINT8 1.5: shared 0 - 0 -> 0x7f; element 1.5 * 2^6 = 96 = 0x60.
      {"INT8 max 1.5", &mxint8, fp32_block({0x3fc00000u}), 0x7f, 0x60},
      // MXINT8 -1.9999999 rounds to -128 * 2^-6: clamped to -127 = 0x81 (symmetric range).
      {"INT8 max -1.9999999", &mxint8, fp32_block({0xbfffffffu}), 0x7f, 0x81},
      // All zeros (and -0): log2 0 = -inf, clamped to E8M0's minimum 2^-127 = 0x00.
      {"E4M3 zeros", &mxfp8_e4m3, fp32_block({0x80000000u}), 0x00, 0x80},
      // fp32 subnormal max 2^-149: -149 - 8 clamps to -127 -> 0x00; 2^-22 underflows to 0.
      {"E4M3 max 2^-149", &mxfp8_e4m3, fp32_block({0x00000001u}), 0x00, 0x00},
      // max 2^-127 (subnormal): MXINT8 shared -127 exactly -> 0x00, element 64 = 0x40.
      {"INT8 max 2^-127", &mxint8, fp32_block({0x00400000u}), 0x00, 0x40},
      // E2M1 max 2^-127: -129 clamps to -127; element 1.0 = 0x2.
      {"E2M1 max 2^-127", &mxfp4_e2m1, fp32_block({0x00400000u}), 0x00, 0x2},
      // fp32 max 0x1.fffffep127 with MXINT8: shared 127 (E8M0's top, 0xfe); element clamps to 127.
      {"INT8 max fp32 max", &mxint8, fp32_block({0x7f7fffffu}), 0xfe, 0x7f},
      // ... with E4M3: shared 127 - 8 = 119 -> 0xf6; 0x1.fffffep8 clamps to 448.
      {"E4M3 max fp32 max", &mxfp8_e4m3, fp32_block({0x7f7fffffu}), 0xf6, 0x7e},
  };
  for (const ScaleCase& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(mx_shared_scale(*c.format, c.block, fp32), Bits{c.scale});
    const MxArray mx = quantize_mx(*c.format, c.block, fp32);
    ASSERT_EQ(mx.scales.size(), 1u);
    EXPECT_EQ(mx.scales[0], Bits{c.scale}) << to_hex(e8m0, mx.scales[0]);
    EXPECT_EQ(mx.elements[0], Bits{c.element0}) << to_hex(*c.format->element, mx.elements[0]);
  }
}

TEST(MxScale, ElementTiesRoundToEven) {
  // Block max 448 (shared 0): 17 lies halfway between 16 (0x58) and 18 (0x59): rne gives the
  // even 16; 0.75 in E2M1 (block max 6) between 0.5 (0x1) and 1 (0x2): rne gives 1.
  EXPECT_EQ(quantize_mx(mxfp8_e4m3, fp32_block({0x43e00000u, 0x41880000u}), fp32).elements[1], Bits{0x58});
  EXPECT_EQ(quantize_mx(mxfp4_e2m1, fp32_block({0x40c00000u, 0xbf400000u}), fp32).elements[1], Bits{0xa});
  // MXINT8: 2.5 * 2^-6 (block max 1) ties to code 2.
  EXPECT_EQ(quantize_mx(mxint8, fp32_block({0x3f800000u, 0x3d200000u}), fp32).elements[1], Bits{2});
}

TEST(MxScale, ClampedElementsRaiseOverflow) {
  const MxArray mx = quantize_mx(mxfp8_e4m3, fp32_block({0x43ffffffu}), fp32);
  EXPECT_EQ(mx.status, status_overflow | status_inexact);
  const MxArray exact = quantize_mx(mxfp8_e4m3, fp32_block({0x43e00000u, 0x3f800000u}), fp32);
  EXPECT_EQ(exact.status, status_ok);
  const MxArray i8 = quantize_mx(mxint8, fp32_block({0xbfffffffu}), fp32);
  EXPECT_EQ(i8.status, status_overflow | status_inexact);
}

TEST(MxScale, Bf16InputAndDaz) {
  // bf16 128 = 2^7 with E4M3: shared -1 -> 0x7e; element 256 -> 0x78.
  const std::vector<Bits> b{Bits{0x4300}, Bits{0xc2c0}};  // 128, -96
  const MxArray mx = quantize_mx(mxfp8_e4m3, b, bf16);
  EXPECT_EQ(mx.scales, std::vector<Bits>{Bits{0x7e}});
  EXPECT_EQ(mx.elements, (std::vector<Bits>{Bits{0x78}, Bits{0xf4}}));  // 256, -192 = -1.5 * 2^7
  // A block of fp32 subnormals: with DAZ they are zeros (scale 0x00, elements +-0).
  const std::vector<Bits> sub{Bits{0x00400000u}, Bits{0x80000001u}};
  EXPECT_EQ(mx_shared_scale(mxint8, sub, fp32, true), Bits{0x00});
  RoundOptions daz;
  daz.daz = true;
  const MxArray flushed = quantize_mx(mxint8, sub, fp32, 32, daz);
  EXPECT_EQ(flushed.elements, (std::vector<Bits>{Bits{0}, Bits{0}}));
  EXPECT_EQ(quantize_mx(mxint8, sub, fp32).elements, (std::vector<Bits>{Bits{0x40}, Bits{0}}));
}

// ---------------------------------------------------------------------------------------
// NaN and infinity. A NaN or inf makes max|V_i| non-finite: no E8M0 value but NaN (0xFF), and
// a NaN scale makes every element of the block NaN (OCP MX v1.0 §5.2).

TEST(MxSpecial, NanOrInfPoisonsTheBlock) {
  for (const std::uint32_t special : {0x7fc00000u, 0xffc00001u, 0x7f800000u, 0xff800000u}) {
    SCOPED_TRACE(fmt::format("special {:#010x}", special));
    for (const MxFormat* f : all_mx_formats) {
      SCOPED_TRACE(f->name);
      std::vector<Bits> v(40, Bits{0x3f800000u});  // two blocks: the second (8 values) is clean
      v[5] = Bits{special};
      const MxArray mx = quantize_mx(*f, v, fp32);
      ASSERT_EQ(mx.scales.size(), 2u);
      EXPECT_EQ(mx.scales[0], Bits{0xff});
      EXPECT_NE(mx.scales[1], Bits{0xff});
      EXPECT_TRUE((mx.status & status_invalid) != 0);
      const std::vector<Bits> back = dequantize_mx(mx, fp32);
      for (std::size_t i = 0; i < 32; ++i) EXPECT_TRUE(std::isnan(f32_value(back[i].raw))) << "element " << i;
      for (std::size_t i = 32; i < 40; ++i) EXPECT_EQ(back[i], Bits{0x3f800000u}) << "element " << i;
    }
  }
}

TEST(MxSpecial, ElementSpecialsAndNanScaleOnDecode) {
  // A NaN scale gives NaN whatever the element; element inf (E5M2) and NaN (E4M3, E5M2) decode
  // to inf / NaN under a finite scale.
  EXPECT_EQ(dequantize_mx_element(mxfp8_e4m3, Bits{0xff}, Bits{0x00}, fp32).bits, Bits{0x7fc00000u});
  EXPECT_EQ(dequantize_mx_element(mxint8, Bits{0xff}, Bits{0x01}, bf16).bits, Bits{0x7fc0});
  EXPECT_EQ(dequantize_mx_element(mxfp8_e5m2, Bits{0x7f}, Bits{0xfc}, fp32).bits, Bits{0xff800000u});
  EXPECT_TRUE(std::isnan(f32_value(dequantize_mx_element(mxfp8_e5m2, Bits{0x7f}, Bits{0x7e}, fp32).bits.raw)));
  EXPECT_TRUE(std::isnan(f32_value(dequantize_mx_element(mxfp8_e4m3, Bits{0x00}, Bits{0x7f}, fp32).bits.raw)));
  // MXINT8 -128 (never produced) decodes to -2 * X.
  EXPECT_EQ(dequantize_mx_element(mxint8, Bits{0x7f}, Bits{0x80}, fp32).bits, Bits{0xc0000000u});
  // The product X * P is rounded once into a narrow target: 448 * 2^-10 = 0.4375 in E2M1 is
  // between 0 and 0.5 -> 0.5 (rne), 0 (rtz).
  EXPECT_EQ(dequantize_mx_element(mxfp8_e4m3, Bits{0x75}, Bits{0x7e}, fp4_e2m1).bits, Bits{0x1});
  RoundOptions rtz;
  rtz.rounding = Rounding::rtz;
  EXPECT_EQ(dequantize_mx_element(mxfp8_e4m3, Bits{0x75}, Bits{0x7e}, fp4_e2m1, rtz).bits, Bits{0x0});
  // Beyond the target: 448 * 2^127 is inf in fp32.
  EXPECT_EQ(dequantize_mx_element(mxfp8_e4m3, Bits{0xfe}, Bits{0x7e}, fp32).bits, Bits{0x7f800000u});
}

// ---------------------------------------------------------------------------------------
// The naive side: element values enumerated from a decoder written from the definitions
// (OCP OFP8 v1.0, OCP MX v1.0 §5.3), rounding by nearest-neighbour search in that table.

struct NaiveElement {
  int ebits;
  int mbits;
  int bias;
  bool e4m3_nan;  // S.1111.111 is NaN
  bool ieee;      // exponent all ones is inf/NaN
};

double naive_element_value(const NaiveElement& f, std::uint32_t raw) {
  const std::uint32_t emask = (1u << f.ebits) - 1;
  const bool negative = (raw >> (f.ebits + f.mbits)) & 1;
  const std::uint32_t e = (raw >> f.mbits) & emask;
  const std::uint32_t m = raw & ((1u << f.mbits) - 1);
  if (f.ieee && e == emask) return std::numeric_limits<double>::quiet_NaN();
  if (f.e4m3_nan && e == emask && m == (1u << f.mbits) - 1) return std::numeric_limits<double>::quiet_NaN();
  const double mag = e == 0 ? std::ldexp(m, 1 - f.bias - f.mbits)
                            : std::ldexp(m + (1u << f.mbits), static_cast<int>(e) - f.bias - f.mbits);
  return negative ? -mag : mag;
}

/// All finite non-negative element values with their patterns, ascending; MXINT8 as c * 2^-6.
struct ElementTable {
  std::vector<std::pair<double, std::uint32_t>> values;  // ascending, +0 first
  std::uint32_t sign_bit = 0;
  bool is_int = false;
  int emax_elem = 0;
  double max = 0;
};

ElementTable make_table(const MxFormat& f) {
  ElementTable t;
  if (*f.element == int8) {
    t.is_int = true;
    for (std::uint32_t c = 0; c <= 127; ++c) t.values.emplace_back(std::ldexp(c, -6), c);
  } else {
    NaiveElement n{};
    if (*f.element == fp8_e4m3) n = {4, 3, 7, true, false};
    if (*f.element == fp8_e5m2) n = {5, 2, 15, false, true};
    if (*f.element == fp6_e3m2) n = {3, 2, 3, false, false};
    if (*f.element == fp6_e2m3) n = {2, 3, 1, false, false};
    if (*f.element == fp4_e2m1) n = {2, 1, 1, false, false};
    t.sign_bit = 1u << (n.ebits + n.mbits);
    for (std::uint32_t raw = 0; raw < t.sign_bit; ++raw) {
      const double v = naive_element_value(n, raw);
      if (!std::isnan(v)) t.values.emplace_back(v, raw);
    }
  }
  std::sort(t.values.begin(), t.values.end());
  t.max = t.values.back().first;
  int e;
  std::frexp(t.max, &e);  // max = f * 2^e, 1/2 <= f < 1: floor(log2 max) = e - 1
  t.emax_elem = e - 1;
  return t;
}

/// Naive round of t (exact double) to an element pattern: nearest table value, ties to the
/// even pattern (rne) or the smaller magnitude (rtz); beyond the max: clamped.
std::uint32_t naive_round_element(const ElementTable& t, double x, Rounding m) {
  const bool negative = std::signbit(x);
  const double a = std::fabs(x);
  std::uint32_t mag_bits;
  if (t.is_int) {
    double c = m == Rounding::rtz ? std::trunc(a * 64) : std::nearbyint(a * 64);  // FE_TONEAREST: ties even
    c = std::min(c, 127.0);
    const auto ci = static_cast<std::int64_t>(c);
    return static_cast<std::uint32_t>(negative ? -ci : ci) & 0xffu;
  }
  if (a >= t.max) {
    mag_bits = t.values.back().second;
  } else {
    const auto hi = std::upper_bound(t.values.begin(), t.values.end(), std::make_pair(a, ~0u));
    const auto lo = hi - 1;  // lo->first <= a < hi->first
    if (lo->first == a || m == Rounding::rtz) {
      mag_bits = lo->second;
    } else {
      const double dl = a - lo->first;
      const double dh = hi->first - a;
      mag_bits = dl < dh ? lo->second : dh < dl ? hi->second : ((lo->second & 1) == 0 ? lo->second : hi->second);
    }
  }
  return negative ? (mag_bits | t.sign_bit) : mag_bits;
}

double naive_element_double(const ElementTable& t, std::uint32_t raw) {
  if (t.is_int) return std::ldexp(static_cast<std::int8_t>(raw), -6);
  const double mag = std::find_if(t.values.begin(), t.values.end(), [&](const auto& p) {
                       return p.second == (raw & ~t.sign_bit);
                     })->first;
  return (raw & t.sign_bit) != 0 ? -mag : mag;
}

/// The naive MX quantiser of one block: frexp for the scale, table search for the elements.
void naive_quantize(const ElementTable& t, std::span<const double> v, Rounding m, int& shared,
                    std::vector<std::uint32_t>& elements) {
  double amax = 0;
  for (const double x : v) amax = std::max(amax, std::fabs(x));
  if (amax == 0) {
    shared = -127;
  } else {
    int e;
    std::frexp(amax, &e);
    shared = std::max(e - 1 - t.emax_elem, -127);
  }
  elements.clear();
  for (const double x : v) elements.push_back(naive_round_element(t, std::ldexp(x, -shared), m));
}

/// Random fp32 values spread over the whole range: a block magnitude, values up to 40
/// binades below it, some zeros, some subnormal blocks.
std::uint32_t random_fp32(std::uint64_t& z, int top_field) {
  auto next = [&] {
    z = z * 6364136223846793005ULL + 1442695040888963407ULL;  // fixed LCG: reproducible
    return static_cast<std::uint32_t>(z >> 33);
  };
  const std::uint32_t r = next();
  if (r % 16 == 0) return (r & 0x20) != 0 ? 0x80000000u : 0;  // ±0
  const int field = std::max(0, top_field - static_cast<int>(next() % 40));
  std::uint32_t mant = next() & 0x7fffffu;
  // Half the values keep only 0..6 leading fraction bits: V / X then often lands exactly on
  // a midpoint of the element format, where rne, rna and rtz differ.
  if ((r & 0x40) != 0) mant &= ~((1u << (23 - (next() % 7))) - 1);
  return ((next() & 1) << 31) | (static_cast<std::uint32_t>(field) << 23) | mant;
}

TEST(MxNaive, RandomBlocksAgainstNaiveImplementation) {
  constexpr int blocks_per_case = 2000;  // x 6 formats = 12000 blocks of 32, each in rne
  std::uint64_t z = 2024;
  int failures = 0;
  long checked = 0;
  for (const MxFormat* f : all_mx_formats) {
    SCOPED_TRACE(f->name);
    const ElementTable t = make_table(*f);
    ASSERT_EQ(t.emax_elem, f->emax_elem) << "emax_elem from the element table";
    for (const Rounding m : {Rounding::rne, Rounding::rtz}) {
      SCOPED_TRACE(rounding_name(m));
      const int nblocks = m == Rounding::rne ? blocks_per_case : blocks_per_case / 4;
      std::vector<Bits> values;
      for (int b = 0; b < nblocks; ++b) {
        const int top = b % 10 == 0 ? static_cast<int>(z % 8) : static_cast<int>((z >> 7) % 255);  // some subnormal
        for (int i = 0; i < 32; ++i) values.push_back(Bits{random_fp32(z, top)});
      }
      RoundOptions o;
      o.rounding = m;
      const MxArray mx = quantize_mx(*f, values, fp32, 32, o);
      const std::vector<Bits> back = dequantize_mx(mx, fp32);
      ASSERT_EQ(mx.scales.size(), static_cast<std::size_t>(nblocks));
      std::vector<double> v(32);
      std::vector<std::uint32_t> want;
      for (int b = 0; b < nblocks; ++b) {
        for (int i = 0; i < 32; ++i) v[i] = f32_value(values[b * 32 + i].raw);
        int shared;
        naive_quantize(t, v, m, shared, want);
        ++checked;
        bool ok = mx.scales[b] == Bits{static_cast<std::uint32_t>(shared + 127)};
        for (int i = 0; i < 32 && ok; ++i) {
          ok = mx.elements[b * 32 + i] == Bits{want[i]};
          // Naive dequantisation: the product is exact in double; the float cast rounds once.
          const double exact = std::ldexp(naive_element_double(t, want[i]), shared);
          ok = ok && back[b * 32 + i] == Bits{f32(static_cast<float>(exact))};
        }
        if (!ok && ++failures <= 10) {
          ADD_FAILURE() << "block " << b << ": got scale " << to_hex(e8m0, mx.scales[b]) << " elements "
                        << bits_list(*f->element, mx.block(b)) << "\n want scale " << fmt::format("{:#04x}", shared + 127)
                        << " elements " << fmt::format("{:#x}", fmt::join(want, " ")) << "\n values "
                        << bits_list(fp32, std::span<const Bits>(values).subspan(b * 32, 32));
        }
      }
    }
  }
  EXPECT_EQ(failures, 0) << "of " << checked << " blocks";
}

// ---------------------------------------------------------------------------------------
// Round trips: values that are exactly element * 2^shared, with a top-binade element in every
// block so that the scale is chosen back, quantise to the same bits and dequantise to themselves.

TEST(MxRoundTrip, ExactlyRepresentableBlocks) {
  std::uint64_t z = 77;
  for (const MxFormat* f : all_mx_formats) {
    SCOPED_TRACE(f->name);
    const ElementTable t = make_table(*f);
    std::vector<std::uint32_t> all;  // every finite element pattern, both signs (MXINT8: -127..127)
    std::vector<std::uint32_t> top;  // the ones in the top binade [2^emax_elem, 2^(emax_elem+1))
    for (const auto& [value, raw] : t.values) {
      for (const bool neg : {false, true}) {
        const std::uint32_t r = t.is_int ? (neg ? (0x100u - raw) & 0xffu : raw) : (neg ? raw | t.sign_bit : raw);
        all.push_back(r);
        if (value >= std::ldexp(1.0, t.emax_elem)) top.push_back(r);
      }
    }
    int failures = 0;
    for (int shared = -127; shared <= 127 - t.emax_elem; shared += 3) {
      std::vector<Bits> values;
      std::vector<Bits> elements;
      for (int b = 0; b < 4; ++b) {
        for (int i = 0; i < 32; ++i) {
          z = z * 6364136223846793005ULL + 1442695040888963407ULL;
          const std::uint32_t e = i == (b * 7) % 32 ? top[(z >> 33) % top.size()] : all[(z >> 33) % all.size()];
          elements.push_back(Bits{e});
          values.push_back(Bits{f32(static_cast<float>(std::ldexp(naive_element_double(t, e), shared)))});
        }
      }
      const MxArray mx = quantize_mx(*f, values, fp32);
      bool ok = mx.status == status_ok;
      for (const Bits s : mx.scales) ok = ok && s == Bits{static_cast<std::uint32_t>(shared + 127)};
      ok = ok && mx.elements == elements && dequantize_mx(mx, fp32) == values;
      if (!ok && ++failures <= 3)
        ADD_FAILURE() << "shared " << shared << ": scales " << bits_list(e8m0, mx.scales) << "\n elements "
                      << bits_list(*f->element, mx.elements) << "\n want " << bits_list(*f->element, elements);
    }
  }
}

TEST(MxRoundTrip, Bf16ValuesThroughMxfp8ToBf16) {
  // bf16 has 8 significant bits, E4M3 4: bf16 values with at most 4 significant bits and a
  // top-binade element are exact; dequantising into bf16 gives the input bits back.
  const std::vector<Bits> v{Bits{0x4360}, Bits{0x3f80}, Bits{0xbe00}, Bits{0x0000}, Bits{0x8000}, Bits{0x3c70}};
  // 224, 1, -0.125, 0, -0, 0.0146484375 (= 1.875 * 2^-7)
  const MxArray mx = quantize_mx(mxfp8_e4m3, v, bf16, 32);
  EXPECT_EQ(mx.scales, std::vector<Bits>{Bits{0x7f - 1}});  // floor(log2 224) = 7: shared -1
  EXPECT_EQ(dequantize_mx(mx, bf16), v);
}

// ---------------------------------------------------------------------------------------
// Layout, block sizes, lookup, argument errors, stochastic elements.

TEST(MxArrayLayout, PartialLastBlockAndBlockSize) {
  std::vector<Bits> v;
  for (int i = 0; i < 20; ++i) v.push_back(Bits{f32(static_cast<float>(i + 1))});  // 1..20
  const MxArray mx = quantize_mx(mxint8, v, fp32, 8);  // blocks 1..8, 9..16, 17..20
  ASSERT_EQ(mx.block_count(), 3u);
  ASSERT_EQ(mx.scales.size(), 3u);
  // max 8 -> shared 3 (0x82); max 16 -> 4 (0x83); max 20 -> 4 (0x83).
  EXPECT_EQ(mx.scales, (std::vector<Bits>{Bits{0x82}, Bits{0x83}, Bits{0x83}}));
  EXPECT_EQ(mx.block(2).size(), 4u);
  // 1 / 2^3 * 64 = 8; 17 / 2^4 * 64 = 68.
  EXPECT_EQ(mx.elements[0], Bits{8});
  EXPECT_EQ(mx.block(2)[0], Bits{68});
  EXPECT_EQ(dequantize_mx(mx, fp32), v);  // every integer 1..20 is exact at these scales
  EXPECT_THROW(quantize_mx(mxint8, v, fp32, 0), std::invalid_argument);
  MxArray broken = mx;
  broken.scales.pop_back();
  EXPECT_THROW(dequantize_mx(broken, fp32), std::invalid_argument);
  std::vector<Bits> short_out(3);
  EXPECT_THROW(dequantize_mx(mx, fp32, short_out), std::invalid_argument);
}

TEST(MxFormatTable, Lookup) {
  EXPECT_EQ(find_mx_format("MXFP8_E4M3"), &mxfp8_e4m3);
  EXPECT_EQ(find_mx_format("mxfp4"), &mxfp4_e2m1);
  EXPECT_EQ(find_mx_format("mxint8"), &mxint8);
  EXPECT_EQ(find_mx_format("mxfp8"), nullptr);  // ambiguous: E4M3 or E5M2
}

TEST(MxStochastic, ElementFrequency) {
  // Block max 448 (scale 0x7f): the element 17 lies halfway between 16 and 18 in E4M3.
  constexpr int n = 20000;
  int high = 0;
  RoundOptions o;
  o.rounding = Rounding::stochastic;
  o.seed = 5;
  const std::vector<Bits> v{Bits{0x43e00000u}, Bits{0x41880000u}};  // 448, 17
  for (int i = 0; i < n; ++i) {
    o.stream = static_cast<std::uint64_t>(i) * 2;
    const MxArray mx = quantize_mx(mxfp8_e4m3, v, fp32, 32, o);
    ASSERT_EQ(mx.scales[0], Bits{0x7f});
    ASSERT_TRUE(mx.elements[1] == Bits{0x58} || mx.elements[1] == Bits{0x59}) << to_hex(fp8_e4m3, mx.elements[1]);
    high += mx.elements[1] == Bits{0x59};
  }
  const double sigma = std::sqrt(n * 0.25);
  EXPECT_NEAR(high, n / 2.0, 5 * sigma);
}

}  // namespace
}  // namespace numfid
