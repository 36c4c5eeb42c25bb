// Block-FMA models of NVIDIA tensor cores against a deliberately naive second
// implementation (exact rationals, each step of block_fma.h's definition written the obvious
// slow way) on random and adversarial inputs, for every preset, for variants that exercise
// the parameters no preset uses, and for the mixed-operand (E4M3 x E5M2, E5M2 x E4M3) units.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <boost/multiprecision/cpp_int.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "formats/convert.h"
#include "formats/value.h"
#include "numerics/block_fma.h"
#include "numerics/tensor_core_presets.h"
#include "tests/support/naive_codec.h"

namespace numfid {
namespace {

/// "H100_fp8_e4m3_fp32": a preset as a test-name fragment.
std::string preset_test_name(const TensorCorePreset& p) {
  std::string s = fmt::format("{}_{}_{}", p.device, p.model.input->name, p.model.output->name);
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

// =========================================================================================
// A deliberately naive second implementation: exact rationals, each step of the model's
// definition (block_fma.h) written the obvious slow way, no shared code with block_fma.cpp.
// =========================================================================================

namespace naive {
namespace mp = boost::multiprecision;
using Int = mp::cpp_int;
using Rat = mp::cpp_rational;

Rat pow2(int e) { return e >= 0 ? Rat(Int(1) << e) : Rat(Int(1), Int(1) << -e); }

/// floor(log2 x) for x > 0.
int floor_log2(const Rat& x) {
  int e = static_cast<int>(mp::msb(mp::numerator(x))) - static_cast<int>(mp::msb(mp::denominator(x)));
  while (x >= pow2(e + 1)) ++e;
  while (x < pow2(e)) --e;
  return e;
}

Rat from_double(double v) { return Rat(v); }  // exact: every finite double is a dyadic rational

struct Num {
  enum Kind { finite, inf, nan } kind = finite;
  bool neg = false;
  Rat mag;  // |value|, finite only
};

Num read(const FormatSpec& f, Bits b) {
  const double v = test::naive_decode(f, b);
  Num n;
  n.neg = std::signbit(v);
  if (std::isnan(v))
    n.kind = Num::nan;
  else if (std::isinf(v))
    n.kind = Num::inf;
  else
    n.mag = from_double(std::fabs(v));
  return n;
}

Rat min_normal_of(const FormatSpec& f) { return pow2(1 - f.bias); }
Rat max_finite_of(const FormatSpec& f) { return from_double(test::naive_limits(f).max_finite); }

Bits nan_of(const BlockFmaModel& m) {
  if (m.nan == NanResult::all_ones) return Bits{*m.output == fp32 ? 0x7fffffffu : 0x7fffu};
  return canonical_nan(*m.output, false);
}

Bits inf_of(const FormatSpec& f, bool neg) { return test::naive_inf(f, neg); }

/// The pattern of ±r·2^q (r an integer small enough to be exact).
Bits encode(const FormatSpec& f, bool neg, const Int& r, int q) {
  const double v = std::ldexp(r.convert_to<double>(), q);
  return test::naive_encode(f, neg ? -v : v);
}

/// Rounds mag ≥ 0 to a multiple of 2^q; returns the multiple's integer.
Int round_to_multiple(const Rat& mag, int q, Rounding r, bool neg) {
  const Rat t = mag / pow2(q);
  Int fl = mp::numerator(t) / mp::denominator(t);  // floor, t >= 0
  const Rat frac = t - Rat(fl);
  const Rat half(1, 2);
  bool up = false;
  switch (r) {
    case Rounding::rtz: break;
    case Rounding::rne: up = frac > half || (frac == half && (fl & 1) != 0); break;
    case Rounding::rna: up = frac >= half; break;
    case Rounding::rup: up = frac > 0 && !neg; break;
    case Rounding::rdn: up = frac > 0 && neg; break;
    case Rounding::stochastic: break;
  }
  return up ? fl + 1 : fl;
}

/// An exact value ±mag rounded into format f with `fraction_bits` at the value's exponent:
/// overflow by `to_inf` (or IEEE 754 §7.4), FTZ when !subnormals.
Bits round_value(const FormatSpec& f, bool neg, const Rat& mag, int fraction_bits, Rounding r, bool to_inf,
                 bool subnormals, std::optional<int> floor_quantum = std::nullopt) {
  if (mag == 0) return test::naive_encode(f, neg ? -0.0 : 0.0);
  const int emin_f = 1 - f.bias;
  int q = std::max(floor_log2(mag), emin_f) - fraction_bits;
  if (floor_quantum) q = std::max(q, *floor_quantum);
  const Int k = round_to_multiple(mag, q, r, neg);
  const Rat val = Rat(k) * pow2(q);
  if (val > max_finite_of(f)) {
    const bool inf = to_inf || r == Rounding::rne || r == Rounding::rna || (r == Rounding::rup && !neg) ||
                     (r == Rounding::rdn && neg);
    return inf ? inf_of(f, neg)
               : test::naive_encode(f, neg ? -test::naive_limits(f).max_finite : test::naive_limits(f).max_finite);
  }
  if (!subnormals && val != 0 && val < min_normal_of(f)) return test::naive_encode(f, neg ? -0.0 : 0.0);
  return encode(f, neg, k, q);
}

/// e(x) = max(floor(log2|x|), emin of the datapath format).
int align_exponent(const Rat& mag, const FormatSpec& dp) { return std::max(floor_log2(mag), 1 - dp.bias); }

/// One block: the definition in block_fma.h, step by step.
Bits block(const BlockFmaModel& m, const std::vector<Bits>& a, const std::vector<Bits>& b, Bits c) {
  const FormatSpec& in = *m.input;
  const FormatSpec& in_b = m.input_b ? *m.input_b : in;  // B read in its own format
  const FormatSpec& out = *m.output;
  const FormatSpec& dp = m.datapath ? *m.datapath : in;
  const FormatSpec& dp_b = m.datapath ? *m.datapath : in_b;
  struct TermQ {
    bool neg;
    Rat mag;
    int exp;
  };
  std::vector<TermQ> terms;
  bool nan = false, pinf = false, ninf = false;
  for (std::size_t j = 0; j < a.size(); ++j) {
    Num x = read(in, a[j]);
    Num y = read(in_b, b[j]);
    if (!m.input_subnormals) {
      if (x.kind == Num::finite && x.mag < min_normal_of(in)) x.mag = 0;
      if (y.kind == Num::finite && y.mag < min_normal_of(in_b)) y.mag = 0;
    }
    const bool neg = x.neg != y.neg;
    if (x.kind == Num::nan || y.kind == Num::nan) {
      nan = true;
    } else if (x.kind == Num::inf || y.kind == Num::inf) {
      const bool zero_factor = (x.kind == Num::finite && x.mag == 0) || (y.kind == Num::finite && y.mag == 0);
      if (zero_factor)
        nan = true;
      else
        (neg ? ninf : pinf) = true;
    } else if (x.mag != 0 && y.mag != 0) {
      terms.push_back({neg, x.mag * y.mag, align_exponent(x.mag, dp) + align_exponent(y.mag, dp_b)});
    }
  }
  Num cn = read(out, c);
  if (cn.kind == Num::nan) nan = true;
  if (cn.kind == Num::inf) (cn.neg ? ninf : pinf) = true;
  if (nan || (pinf && ninf)) return nan_of(m);
  if (pinf || ninf) return inf_of(out, ninf);
  if (!m.output_subnormals && cn.mag < min_normal_of(out)) cn.mag = 0;
  if (cn.mag != 0) terms.push_back({cn.neg, cn.mag, align_exponent(cn.mag, out)});

  int big = m.min_alignment_exponent;
  for (const TermQ& t : terms) big = std::max(big, t.exp);
  const Rat unit = pow2(big - (m.accumulator_fraction_bits + m.extra_alignment_bits));
  Rat sum = 0;
  for (const TermQ& t : terms) {
    const Rat units = t.mag / unit;
    Int k = mp::numerator(units) / mp::denominator(units);  // truncation toward zero
    if (m.alignment == AlignmentRounding::rne) {
      const Rat frac = units - Rat(k);
      if (frac > Rat(1, 2) || (frac == Rat(1, 2) && (k & 1) != 0)) k += 1;
    }
    sum += (t.neg ? -Rat(k) : Rat(k)) * unit;
  }
  if (sum == 0) return test::naive_encode(out, 0.0);  // +0
  const bool neg = sum < 0;
  const int fraction_bits = std::min(m.accumulator_fraction_bits, out.precision - 1);
  std::optional<int> floor_q;
  if (m.normalisation == Normalisation::at_alignment) floor_q = big - m.accumulator_fraction_bits;
  const Bits r = round_value(out, neg, neg ? Rat(-sum) : sum, fraction_bits, m.final_rounding, m.overflow_to_infinity,
                             m.output_subnormals, floor_q);
  // zero_result: positive: a non-zero sum that rounds or flushes to zero is +0 (Hopper fp16 -> fp16).
  if (m.zero_results_positive && r == test::naive_encode(out, -0.0)) return test::naive_encode(out, 0.0);
  return r;
}

/// IEEE 754 addition of two output-format values, rounded once (the separate addend step).
Bits add(const BlockFmaModel& m, Bits x, Bits y) {
  const FormatSpec& out = *m.output;
  Num a = read(out, x);
  Num b = read(out, y);
  if (a.kind == Num::nan || b.kind == Num::nan) return nan_of(m);
  if (a.kind == Num::inf && b.kind == Num::inf && a.neg != b.neg) return nan_of(m);
  if (a.kind == Num::inf) return inf_of(out, a.neg);
  if (b.kind == Num::inf) return inf_of(out, b.neg);
  if (!m.output_subnormals) {
    if (a.mag < min_normal_of(out)) a.mag = 0;
    if (b.mag < min_normal_of(out)) b.mag = 0;
  }
  const Rat s = (a.neg ? -a.mag : a.mag) + (b.neg ? -b.mag : b.mag);
  if (s == 0) {  // IEEE 754 §6.3
    const bool neg = (a.mag == 0 && b.mag == 0 && a.neg && b.neg) ||
                     (m.addend_rounding == Rounding::rdn && !(a.mag == 0 && b.mag == 0 && !a.neg && !b.neg));
    return test::naive_encode(out, neg ? -0.0 : 0.0);
  }
  const bool neg = s < 0;
  return round_value(out, neg, neg ? Rat(-s) : s, out.precision - 1, m.addend_rounding, false, m.output_subnormals);
}

/// d = c + Σ a_k b_k: instructions of instruction_k products, each dealt into blocks.
Bits dot(const BlockFmaModel& m, const std::vector<Bits>& a, const std::vector<Bits>& b, Bits c) {
  const std::size_t K = a.size();
  const std::size_t ik = static_cast<std::size_t>(m.instruction_k);
  const std::size_t n = static_cast<std::size_t>(m.block_size);
  const std::size_t nb = ik / n;
  const std::size_t instructions = K == 0 ? 1 : (K + ik - 1) / ik;
  Bits d = c;
  for (std::size_t i = 0; i < instructions; ++i) {
    std::vector<std::vector<Bits>> ba(nb), bb(nb);
    for (std::size_t pos = 0; pos < ik; ++pos) {
      const std::size_t k = i * ik + pos;
      if (k >= K) continue;
      const std::size_t blk = m.interleave == 0 ? pos / n : (pos / static_cast<std::size_t>(m.interleave)) % nb;
      ba[blk].push_back(a[k]);
      bb[blk].push_back(b[k]);
    }
    if (m.addend == AddendEntry::in_block) {
      for (std::size_t j = 0; j < nb; ++j) d = block(m, ba[j], bb[j], d);
    } else {
      Bits acc = test::naive_encode(*m.output, 0.0);
      for (std::size_t j = 0; j < nb; ++j) acc = block(m, ba[j], bb[j], acc);
      d = add(m, acc, d);
    }
  }
  return d;
}

}  // namespace naive

// ---- input generators --------------------------------------------------------------------

using Rng = std::mt19937_64;

/// Bit layout of a float format (for generating patterns field by field).
struct Fields {
  int mb, eb;
  std::uint32_t max_field() const { return (1u << eb) - 1; }
};
Fields fields(const FormatSpec& f) { return {f.precision - 1, f.exponent_bits}; }

Bits make(const FormatSpec& f, bool neg, std::uint32_t ef, std::uint32_t man) {
  const Fields fl = fields(f);
  return Bits{(neg ? 1u << (f.bits - 1) : 0u) | (ef << fl.mb) | (man & ((1u << fl.mb) - 1))};
}

bool finite(const FormatSpec& f, Bits b) { return std::isfinite(test::naive_decode(f, b)); }

/// A finite pattern with a biased exponent field drawn from [lo, hi] (clamped to the finite range).
Bits finite_in(const FormatSpec& f, Rng& rng, int lo, int hi) {
  const Fields fl = fields(f);
  lo = std::max(lo, 0);
  hi = std::min(hi, static_cast<int>(fl.max_field()));
  for (;;) {
    const auto ef = static_cast<std::uint32_t>(std::uniform_int_distribution<int>(lo, hi)(rng));
    const Bits b = make(f, rng() & 1, ef, static_cast<std::uint32_t>(rng()));
    if (finite(f, b)) return b;
  }
}

/// A finite value near 2^e (biased field bias + e ± spread).
Bits near(const FormatSpec& f, Rng& rng, int e, int spread) {
  return finite_in(f, rng, f.bias + e - spread, f.bias + e + spread);
}

Bits any_pattern(const FormatSpec& f, Rng& rng) { return Bits{static_cast<std::uint32_t>(rng()) & storage_mask(f)}; }

Bits pos_inf(const FormatSpec& f) { return test::naive_inf(f, false); }

/// The kinds of adversarial inputs.
enum class Kind { narrow, wide, cancel, underflow, zeros, specials, overflow, bitsoup, extremes, count };

/// ±0, ±the least subnormal, ±the least normal, ±the largest finite value or a random finite
/// value of f, each as likely (the fields written out, not taken from numfid's limits).
Bits extreme(const FormatSpec& f, Rng& rng) {
  const Fields fl = fields(f);
  const bool neg = rng() & 1;
  switch (rng() % 5) {
    case 0: return make(f, neg, 0, 0);
    case 1: return make(f, neg, 0, 1);
    case 2: return make(f, neg, 1, 0);
    case 3:  // the largest finite: the top field with the largest mantissa that is finite
      for (std::uint32_t ef = fl.max_field(); ef > 0; --ef)
        for (std::uint32_t man = (1u << fl.mb); man-- > 0;)
          if (const Bits b = make(f, neg, ef, man); finite(f, b)) return b;
      return make(f, neg, 0, 0);
    default: return finite_in(f, rng, 0, 1 << 10);
  }
}

struct Case {
  std::vector<Bits> a, b;
  Bits c;
};

/// A case of `kind` for model m with K products.
Case make_case(const BlockFmaModel& m, Kind kind, std::size_t K, Rng& rng) {
  const FormatSpec& in = *m.input;
  const FormatSpec& inb = m.input_b ? *m.input_b : in;  // B's own format (a mixed unit)
  const FormatSpec& out = *m.output;
  Case cs;
  cs.a.resize(K);
  cs.b.resize(K);
  const int in_emax = static_cast<int>(fields(in).max_field()) - in.bias;
  const int inb_emax = static_cast<int>(fields(inb).max_field()) - inb.bias;
  switch (kind) {
    case Kind::narrow:  // like the recorded data: |a|, |b| around 2^-4 .. 2^1
      for (std::size_t k = 0; k < K; ++k) {
        cs.a[k] = near(in, rng, -1, 3);
        cs.b[k] = near(inb, rng, -1, 3);
      }
      cs.c = near(out, rng, 0, 4);
      break;
    case Kind::wide:  // every exponent, subnormals included
      for (std::size_t k = 0; k < K; ++k) {
        cs.a[k] = finite_in(in, rng, 0, 1 << 10);
        cs.b[k] = finite_in(inb, rng, 0, 1 << 10);
      }
      cs.c = rng() % 4 == 0 ? test::naive_encode(out, 0.0) : finite_in(out, rng, 0, 1 << 10);
      break;
    case Kind::cancel: {  // pairs of opposite products, plus a small remainder and a c that cancels
      for (std::size_t k = 0; k < K; ++k) {
        cs.a[k] = near(in, rng, 0, 2);
        cs.b[k] = near(inb, rng, 0, 2);
      }
      for (std::size_t k = 1; k < K; k += 2) {
        cs.a[k] = cs.a[k - 1];
        cs.b[k] = Bits{cs.b[k - 1].raw ^ (1u << (inb.bits - 1))};
        if (rng() % 3 == 0) cs.b[k] = near(inb, rng, -8, 4);  // a small survivor
      }
      // c close to minus the first product: catastrophic cancellation against the addend
      const double p0 = test::naive_decode(in, cs.a[0]) * test::naive_decode(inb, cs.b[0]);
      const Result cr = convert(fp32, out, Bits{std::bit_cast<std::uint32_t>(static_cast<float>(-p0))});
      cs.c = rng() % 2 ? cr.bits : near(out, rng, 0, 1);
      break;
    }
    case Kind::underflow: {  // products around and below the output's smallest normal
      const int emin_in = 1 - in.bias, emin_inb = 1 - inb.bias, emin_out = 1 - out.bias;
      for (std::size_t k = 0; k < K; ++k) {
        const int target = emin_out + std::uniform_int_distribution<int>(-14, 2)(rng);
        const int e1 = std::clamp(target / 2 + std::uniform_int_distribution<int>(-3, 3)(rng),
                                  emin_in - in.precision + 1, in_emax);
        const int e2 = std::clamp(target - e1, emin_inb - inb.precision + 1, inb_emax);
        cs.a[k] = e1 < emin_in ? finite_in(in, rng, 0, 0) : near(in, rng, e1, 0);
        cs.b[k] = e2 < emin_inb ? finite_in(inb, rng, 0, 0) : near(inb, rng, e2, 0);
      }
      cs.c = rng() % 2 ? finite_in(out, rng, 0, 2) : test::naive_encode(out, rng() % 2 ? -0.0 : 0.0);
      break;
    }
    case Kind::zeros:  // signed zeros everywhere, a few finite values
      for (std::size_t k = 0; k < K; ++k) {
        cs.a[k] = rng() % 4 ? test::naive_encode(in, rng() % 2 ? -0.0 : 0.0) : near(in, rng, 0, 3);
        cs.b[k] = rng() % 2 ? test::naive_encode(inb, rng() % 2 ? -0.0 : 0.0) : near(inb, rng, 0, 3);
      }
      cs.c = rng() % 2 ? test::naive_encode(out, rng() % 2 ? -0.0 : 0.0) : near(out, rng, 0, 2);
      break;
    case Kind::specials: {  // inf / NaN / inf·0 at random places, in a, b or c
      for (std::size_t k = 0; k < K; ++k) {
        cs.a[k] = near(in, rng, 0, 3);
        cs.b[k] = near(inb, rng, 0, 3);
      }
      const int hits = 1 + static_cast<int>(rng() % 2);
      for (int h = 0; h < hits; ++h) {
        const std::size_t k = rng() % K;
        const bool has_inf = in.non_finite == NonFinite::ieee, b_has_inf = inb.non_finite == NonFinite::ieee;
        switch (rng() % 4) {
          case 0: cs.a[k] = has_inf ? make(in, rng() & 1, fields(in).max_field(), 0) : canonical_nan(in); break;
          case 1: cs.b[k] = canonical_nan(inb, rng() & 1); break;
          case 2:
            cs.a[k] = has_inf ? make(in, rng() & 1, fields(in).max_field(), 0) : canonical_nan(in);
            cs.b[k] = test::naive_encode(inb, 0.0);
            break;
          default: cs.b[k] = b_has_inf ? make(inb, rng() & 1, fields(inb).max_field(), 0) : near(inb, rng, 0, 0); break;
        }
      }
      switch (rng() % 4) {
        case 0: cs.c = pos_inf(out); break;
        case 1: cs.c = Bits{pos_inf(out).raw | (1u << (out.bits - 1))}; break;
        case 2: cs.c = canonical_nan(out); break;
        default: cs.c = near(out, rng, 0, 2); break;
      }
      break;
    }
    case Kind::overflow: {  // products and c near the top of the ranges
      const int out_emax = static_cast<int>(fields(out).max_field()) - 1 - out.bias;
      for (std::size_t k = 0; k < K; ++k) {
        cs.a[k] = near(in, rng, std::min(in_emax - 1, out_emax / 2 + 1), 1);
        cs.b[k] = near(inb, rng, std::min(inb_emax - 1, out_emax / 2 + 1), 1);
        if (rng() % 2) cs.b[k] = Bits{cs.b[k].raw & ~(1u << (inb.bits - 1))};
        if (rng() % 2) cs.a[k] = Bits{cs.a[k].raw & ~(1u << (in.bits - 1))};
      }
      cs.c = near(out, rng, out_emax, 1);
      break;
    }
    case Kind::extremes:  // zeros, least subnormals, least normals and largest values of both formats
      for (std::size_t k = 0; k < K; ++k) {
        cs.a[k] = extreme(in, rng);
        cs.b[k] = extreme(inb, rng);
      }
      cs.c = rng() % 2 ? extreme(out, rng) : near(out, rng, 0, 4);
      if (rng() % 3 == 0) {  // one non-finite operand (inf where the format has one, else NaN), maybe times 0
        const std::size_t k = rng() % K;
        const bool in_b = rng() & 1;
        const FormatSpec& f = in_b ? inb : in;
        const Bits special = f.non_finite == NonFinite::ieee && rng() % 4 != 0 ? make(f, rng() & 1, fields(f).max_field(), 0)
                                                                               : canonical_nan(f, rng() & 1);
        (in_b ? cs.b : cs.a)[k] = special;
        if (rng() & 1) (in_b ? cs.a : cs.b)[k] = test::naive_encode(in_b ? in : inb, rng() % 2 ? -0.0 : 0.0);
      }
      break;
    case Kind::bitsoup:  // uniformly random patterns (every class)
    case Kind::count:
      for (std::size_t k = 0; k < K; ++k) {
        cs.a[k] = any_pattern(in, rng);
        cs.b[k] = any_pattern(inb, rng);
      }
      cs.c = any_pattern(out, rng);
      break;
  }
  return cs;
}

std::string_view kind_name(Kind k) {
  switch (k) {
    case Kind::narrow: return "narrow";
    case Kind::wide: return "wide";
    case Kind::cancel: return "cancel";
    case Kind::underflow: return "underflow";
    case Kind::zeros: return "zeros";
    case Kind::specials: return "specials";
    case Kind::overflow: return "overflow";
    case Kind::bitsoup: return "bitsoup";
    case Kind::extremes: return "extremes";
    case Kind::count: break;
  }
  return "?";
}

std::string hex_list(const FormatSpec& f, const std::vector<Bits>& v) {
  std::string s;
  for (Bits b : v) s += to_hex(f, b) + " ";
  return s;
}

/// Compares block_fma_dot with the naive implementation on `per_kind` cases of every kind.
void compare_with_naive(const BlockFmaModel& m, int per_kind, std::uint64_t seed) {
  ASSERT_EQ(validate(m), "") << m.name;
  Rng rng(seed);
  int failures = 0, cases = 0;
  for (int kind = 0; kind < static_cast<int>(Kind::count); ++kind) {
    SCOPED_TRACE(kind_name(static_cast<Kind>(kind)));
    for (int i = 0; i < per_kind; ++i) {
      // K: one or two instructions, sometimes a ragged tail.
      std::size_t K = static_cast<std::size_t>(m.instruction_k) * (1 + rng() % 2);
      if (rng() % 4 == 0) K -= rng() % static_cast<std::size_t>(m.block_size);
      const Case cs = make_case(m, static_cast<Kind>(kind), std::max<std::size_t>(K, 1), rng);
      const Bits expected = naive::dot(m, cs.a, cs.b, cs.c);
      const Result got = block_fma_dot(m, cs.a, cs.b, cs.c);
      ++cases;
      if (got.bits == expected) continue;
      if (++failures <= 5)
        ADD_FAILURE() << describe(m) << "\n  kind " << kind_name(static_cast<Kind>(kind)) << " case " << i << " (seed "
                      << seed << ")\n  a = " << hex_list(*m.input, cs.a) << "\n  b = " << hex_list(m.input_b ? *m.input_b : *m.input, cs.b)
                      << "\n  c = " << to_hex(*m.output, cs.c) << "\n  naive " << to_hex(*m.output, expected) << " = "
                      << test::naive_decode(*m.output, expected) << ", block_fma_dot " << to_hex(*m.output, got.bits)
                      << " = " << test::naive_decode(*m.output, got.bits);
    }
  }
  EXPECT_EQ(failures, 0) << m.name << ": " << failures << " of " << cases << " cases differ from the naive model";
}

class NaiveOnPresets : public ::testing::TestWithParam<std::size_t> {};

TEST_P(NaiveOnPresets, AgreesOnRandomAndAdversarialInputs) {
  const TensorCorePreset& p = tensor_core_presets[GetParam()];
  compare_with_naive(p.model, 40, 0x5eed0000u + GetParam());
}

INSTANTIATE_TEST_SUITE_P(AllPresets, NaiveOnPresets, ::testing::Range<std::size_t>(0, tensor_core_presets.size()),
                         [](const ::testing::TestParamInfo<std::size_t>& param) {
                           return preset_test_name(tensor_core_presets[param.param]);
                         });

/// Variants that exercise the parameters no preset uses.
std::vector<BlockFmaModel> variants() {
  std::vector<BlockFmaModel> v;
  BlockFmaModel base = tensor_core_presets[2].model;  // A2 fp16->fp32: n=8, W=24, rtz
  base.name = "variant";
  auto add = [&](std::string_view name, auto change) {
    BlockFmaModel m = base;
    m.name = name;
    change(m);
    v.push_back(m);
  };
  add("alignment rne", [](BlockFmaModel& m) { m.alignment = AlignmentRounding::rne; });
  add("at_alignment rne", [](BlockFmaModel& m) {
    m.normalisation = Normalisation::at_alignment;
    m.final_rounding = Rounding::rne;
  });
  add("daz+ftz", [](BlockFmaModel& m) { m.input_subnormals = m.output_subnormals = false; });
  add("bf16 daz+ftz rne", [](BlockFmaModel& m) {
    m.input = &bf16;
    m.input_subnormals = m.output_subnormals = false;
    m.final_rounding = Rounding::rne;
  });
  add("fp16 out ftz", [](BlockFmaModel& m) {
    m.output = &fp16;
    m.output_subnormals = false;
    m.final_rounding = Rounding::rne;
  });
  add("rup", [](BlockFmaModel& m) { m.final_rounding = Rounding::rup; });
  add("rdn ieee overflow", [](BlockFmaModel& m) {
    m.final_rounding = Rounding::rdn;
    m.overflow_to_infinity = false;
  });
  add("rna canonical nan", [](BlockFmaModel& m) {
    m.final_rounding = Rounding::rna;
    m.nan = NanResult::canonical;
  });
  add("min exponent 0", [](BlockFmaModel& m) { m.min_alignment_exponent = 0; });
  add("zero results +0, fp16 out ftz", [](BlockFmaModel& m) {
    m.output = &fp16;
    m.output_subnormals = false;
    m.final_rounding = Rounding::rne;
    m.zero_results_positive = true;
  });
  add("zero results +0, rtz", [](BlockFmaModel& m) { m.zero_results_positive = true; });
  add("window 5", [](BlockFmaModel& m) { m.accumulator_fraction_bits = 5; });
  add("window 90 rne", [](BlockFmaModel& m) {
    m.extra_alignment_bits = 67;
    m.final_rounding = Rounding::rne;
  });
  // A result narrower than the output (the e8m13 path) in every rounding mode.
  for (Rounding r : {Rounding::rtz, Rounding::rne, Rounding::rna, Rounding::rup, Rounding::rdn}) {
    add("e4m3 13-bit result", [r](BlockFmaModel& m) {
      m.input = &fp8_e4m3;
      m.block_size = 16;
      m.instruction_k = 32;
      m.accumulator_fraction_bits = 13;
      m.extra_alignment_bits = 0;
      m.final_rounding = r;
    });
  }
  add("bf16 8-bit result, fp16 out, ftz", [](BlockFmaModel& m) {
    m.input = &bf16;
    m.output = &fp16;
    m.accumulator_fraction_bits = 8;
    m.output_subnormals = false;
  });
  add("interleave 4 after_blocks rtz", [](BlockFmaModel& m) {
    m.block_size = 4;
    m.instruction_k = 16;
    m.interleave = 4;
    m.addend = AddendEntry::after_blocks;
    m.addend_rounding = Rounding::rtz;
  });
  add("e5m2 via fp16 datapath, ftz, in_block", [](BlockFmaModel& m) {
    m.input = &fp8_e5m2;
    m.datapath = &fp16;
    m.output = &fp16;
    m.output_subnormals = false;
    m.block_size = 16;
    m.instruction_k = 32;
  });
  add("after_blocks ftz fp16 out", [](BlockFmaModel& m) {
    m.output = &fp16;
    m.output_subnormals = false;
    m.block_size = 4;
    m.instruction_k = 8;
    m.addend = AddendEntry::after_blocks;
    m.final_rounding = Rounding::rne;
  });
  add("e4m3 n=1 rdn after_blocks", [](BlockFmaModel& m) {
    m.input = &fp8_e4m3;
    m.block_size = 1;
    m.instruction_k = 3;
    m.addend = AddendEntry::after_blocks;
    m.addend_rounding = Rounding::rdn;
  });
  return v;
}

/// The mixed-operand units: every fp8 preset with B read in the other fp8 format (E4M3 x E5M2
/// and E5M2 x E4M3), as block_fma_unit derives them from a profile whose two units are the same.
std::vector<BlockFmaModel> mixed_models() {
  std::vector<BlockFmaModel> v;
  for (const TensorCorePreset& p : tensor_core_presets) {
    BlockFmaModel m = p.model;
    if (*m.input == fp8_e4m3) m.input_b = &fp8_e5m2;
    else if (*m.input == fp8_e5m2) m.input_b = &fp8_e4m3;
    else continue;
    v.push_back(m);
  }
  return v;
}

TEST(NaiveOnMixed, AgreesOnRandomAndAdversarialInputs) {
  const std::vector<BlockFmaModel> models = mixed_models();
  ASSERT_EQ(models.size(), 14u);  // every fp8 preset: Ada 4, L40S 2, H100 4, B200 4
  std::uint64_t seed = 0x313ed000u;
  for (const BlockFmaModel& m : models) {
    SCOPED_TRACE(describe(m));
    ASSERT_TRUE(m.mixed());
    compare_with_naive(m, 40, seed++);
  }
}

/// Where B's values are values of both fp8 formats, normal in both, a mixed unit computes what
/// the single-format unit computes on the same values (the datapath after the products is the
/// same). Values subnormal in E4M3 but normal in E5M2 (2^-9 .. 2^-7) are excluded on purpose:
/// there the product's alignment exponent e(b) = max(floor(log2|b|), emin) follows B's own
/// format (E5M2: floor(log2|b|); E4M3: -6), so the two units may legitimately align differently
/// (pinned in MixedUnitAlignsBInItsOwnFormat).
TEST(NaiveOnMixed, EqualsTheSingleFormatUnitWhereBHoldsValuesOfBoth) {
  Rng rng(0x51a6e1u);
  int compared = 0, non_zero = 0;
  for (const TensorCorePreset& p : tensor_core_presets) {
    const FormatSpec& fa = *p.model.input;
    if (fa != fp8_e4m3 && fa != fp8_e5m2) continue;
    const FormatSpec& fo = fa == fp8_e4m3 ? fp8_e5m2 : fp8_e4m3;  // B's format in the mixed unit
    BlockFmaModel mixed = p.model;
    mixed.input_b = &fo;
    SCOPED_TRACE(describe(mixed));
    for (int i = 0; i < 200; ++i) {
      const std::size_t K = static_cast<std::size_t>(p.model.instruction_k) * (1 + rng() % 2);
      std::vector<Bits> a(K), b_own(K), b_other(K);
      for (std::size_t k = 0; k < K; ++k) {
        a[k] = i % 2 ? finite_in(fa, rng, 0, 1 << 10) : near(fa, rng, 0, 3);
        // B: a value normal in both formats (|b| in [2^-6, 448], at most 2 fraction bits), or ±0.
        for (;;) {
          const Bits x = rng() % 8 == 0 ? test::naive_encode(fa, rng() % 2 ? -0.0 : 0.0) : finite_in(fa, rng, 0, 1 << 10);
          const double v = test::naive_decode(fa, x);
          const double mag = std::fabs(v);
          if (v != 0 && (mag < std::ldexp(1.0, -6) || mag > 448)) continue;
          int e = 0;
          const double m = std::frexp(mag, &e);  // mag = m·2^e, m in [0.5, 1): normal in fo iff m·2^p is whole
          if (std::ldexp(m, fo.precision) != std::floor(std::ldexp(m, fo.precision))) continue;
          const Bits y = test::naive_encode(fo, v);
          if (test::naive_decode(fo, y) != v || std::signbit(test::naive_decode(fo, y)) != std::signbit(v)) continue;
          b_own[k] = x;
          b_other[k] = y;
          break;
        }
      }
      const Bits c = near(*p.model.output, rng, 0, 4);
      const Result single = block_fma_dot(p.model, a, b_own, c);
      const Result mix = block_fma_dot(mixed, a, b_other, c);
      ++compared;
      if (test::naive_decode(*p.model.output, single.bits) != test::naive_decode(*p.model.output, c)) ++non_zero;
      ASSERT_EQ(mix.bits, single.bits) << "case " << i << "\n  a = " << hex_list(fa, a) << "\n  b (" << fa.name
                                       << ") = " << hex_list(fa, b_own) << "\n  b (" << fo.name
                                       << ") = " << hex_list(fo, b_other) << "\n  c = " << to_hex(*p.model.output, c);
    }
  }
  EXPECT_EQ(compared, 14 * 200);
  EXPECT_GT(non_zero, compared / 2);  // the products mattered in most cases
}

/// The one place where a mixed unit and the single-format unit differ on equal values: B's
/// alignment exponent e(b) = max(floor(log2|b|), emin) is taken in B's own format. H100 wgmma
/// (n = 32, window 13 bits, c = 0): p0 = 8 · 2^-8, p1 = (3·2^-9) · 2^-9 = 2^-17 + 2^-18.
/// b0 = 2^-8 read as E5M2 (normal): M = 3 - 8 = -5, the window reaches 2^-18 and keeps p1;
/// read as E4M3 (subnormal, e = -6): M = -3, the window ends at 2^-16 and p1 is cut away.
TEST(NaiveOnMixed, MixedUnitAlignsBInItsOwnFormat) {
  const TensorCorePreset* p = find_tensor_core_preset("H100", fp8_e4m3, fp32);
  ASSERT_NE(p, nullptr);
  BlockFmaModel mixed = p->model;
  mixed.input_b = &fp8_e5m2;
  const std::vector<Bits> a{test::naive_encode(fp8_e4m3, 8.0), test::naive_encode(fp8_e4m3, std::ldexp(3.0, -9))};
  const std::vector<Bits> b_e5m2{test::naive_encode(fp8_e5m2, std::ldexp(1.0, -8)), test::naive_encode(fp8_e5m2, std::ldexp(1.0, -9))};
  const std::vector<Bits> b_e4m3{test::naive_encode(fp8_e4m3, std::ldexp(1.0, -8)), test::naive_encode(fp8_e4m3, std::ldexp(1.0, -9))};
  for (std::size_t k = 0; k < 2; ++k)
    ASSERT_EQ(test::naive_decode(fp8_e5m2, b_e5m2[k]), test::naive_decode(fp8_e4m3, b_e4m3[k]));
  const Bits zero32{0};
  const double with_p1 = std::ldexp(1.0, -5) + std::ldexp(1.0, -17) + std::ldexp(1.0, -18);
  EXPECT_EQ(test::naive_decode(fp32, block_fma_dot(mixed, a, b_e5m2, zero32).bits), with_p1);
  EXPECT_EQ(test::naive_decode(fp32, naive::dot(mixed, a, b_e5m2, zero32)), with_p1);
  EXPECT_EQ(test::naive_decode(fp32, block_fma_dot(p->model, a, b_e4m3, zero32).bits), std::ldexp(1.0, -5));
  EXPECT_EQ(test::naive_decode(fp32, naive::dot(p->model, a, b_e4m3, zero32)), std::ldexp(1.0, -5));
}

TEST(NaiveOnVariants, AgreesOnRandomAndAdversarialInputs) {
  std::uint64_t seed = 0xabc0000u;
  for (const BlockFmaModel& m : variants()) {
    SCOPED_TRACE(describe(m));
    compare_with_naive(m, 40, seed++);
  }
}

}  // namespace
}  // namespace numfid
