// Block-FMA models of NVIDIA tensor cores against a deliberately naive second
// implementation (exact rationals, each step of block_fma.h's definition written the obvious
// slow way) on random and adversarial inputs, for every preset and for variants that
// exercise the parameters no preset uses.
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
  const FormatSpec& out = *m.output;
  const FormatSpec& dp = m.datapath ? *m.datapath : in;
  struct TermQ {
    bool neg;
    Rat mag;
    int exp;
  };
  std::vector<TermQ> terms;
  bool nan = false, pinf = false, ninf = false;
  for (std::size_t j = 0; j < a.size(); ++j) {
    Num x = read(in, a[j]);
    Num y = read(in, b[j]);
    if (!m.input_subnormals) {
      if (x.kind == Num::finite && x.mag < min_normal_of(in)) x.mag = 0;
      if (y.kind == Num::finite && y.mag < min_normal_of(in)) y.mag = 0;
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
      terms.push_back({neg, x.mag * y.mag, align_exponent(x.mag, dp) + align_exponent(y.mag, dp)});
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
  return round_value(out, neg, neg ? Rat(-sum) : sum, fraction_bits, m.final_rounding, m.overflow_to_infinity,
                     m.output_subnormals, floor_q);
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
enum class Kind { narrow, wide, cancel, underflow, zeros, specials, overflow, bitsoup, count };

struct Case {
  std::vector<Bits> a, b;
  Bits c;
};

/// A case of `kind` for model m with K products.
Case make_case(const BlockFmaModel& m, Kind kind, std::size_t K, Rng& rng) {
  const FormatSpec& in = *m.input;
  const FormatSpec& out = *m.output;
  Case cs;
  cs.a.resize(K);
  cs.b.resize(K);
  const int in_emax = static_cast<int>(fields(in).max_field()) - in.bias;
  switch (kind) {
    case Kind::narrow:  // like the recorded data: |a|, |b| around 2^-4 .. 2^1
      for (std::size_t k = 0; k < K; ++k) {
        cs.a[k] = near(in, rng, -1, 3);
        cs.b[k] = near(in, rng, -1, 3);
      }
      cs.c = near(out, rng, 0, 4);
      break;
    case Kind::wide:  // every exponent, subnormals included
      for (std::size_t k = 0; k < K; ++k) {
        cs.a[k] = finite_in(in, rng, 0, 1 << 10);
        cs.b[k] = finite_in(in, rng, 0, 1 << 10);
      }
      cs.c = rng() % 4 == 0 ? test::naive_encode(out, 0.0) : finite_in(out, rng, 0, 1 << 10);
      break;
    case Kind::cancel: {  // pairs of opposite products, plus a small remainder and a c that cancels
      for (std::size_t k = 0; k < K; ++k) {
        cs.a[k] = near(in, rng, 0, 2);
        cs.b[k] = near(in, rng, 0, 2);
      }
      for (std::size_t k = 1; k < K; k += 2) {
        cs.a[k] = cs.a[k - 1];
        cs.b[k] = Bits{cs.b[k - 1].raw ^ (1u << (in.bits - 1))};
        if (rng() % 3 == 0) cs.b[k] = near(in, rng, -8, 4);  // a small survivor
      }
      // c close to minus the first product: catastrophic cancellation against the addend
      const double p0 = test::naive_decode(in, cs.a[0]) * test::naive_decode(in, cs.b[0]);
      const Result cr = convert(fp32, out, Bits{std::bit_cast<std::uint32_t>(static_cast<float>(-p0))});
      cs.c = rng() % 2 ? cr.bits : near(out, rng, 0, 1);
      break;
    }
    case Kind::underflow: {  // products around and below the output's smallest normal
      const int emin_in = 1 - in.bias, emin_out = 1 - out.bias;
      for (std::size_t k = 0; k < K; ++k) {
        const int target = emin_out + std::uniform_int_distribution<int>(-14, 2)(rng);
        const int e1 = std::clamp(target / 2 + std::uniform_int_distribution<int>(-3, 3)(rng),
                                  emin_in - in.precision + 1, in_emax);
        const int e2 = std::clamp(target - e1, emin_in - in.precision + 1, in_emax);
        cs.a[k] = e1 < emin_in ? finite_in(in, rng, 0, 0) : near(in, rng, e1, 0);
        cs.b[k] = e2 < emin_in ? finite_in(in, rng, 0, 0) : near(in, rng, e2, 0);
      }
      cs.c = rng() % 2 ? finite_in(out, rng, 0, 2) : test::naive_encode(out, rng() % 2 ? -0.0 : 0.0);
      break;
    }
    case Kind::zeros:  // signed zeros everywhere, a few finite values
      for (std::size_t k = 0; k < K; ++k) {
        cs.a[k] = rng() % 4 ? test::naive_encode(in, rng() % 2 ? -0.0 : 0.0) : near(in, rng, 0, 3);
        cs.b[k] = rng() % 2 ? test::naive_encode(in, rng() % 2 ? -0.0 : 0.0) : near(in, rng, 0, 3);
      }
      cs.c = rng() % 2 ? test::naive_encode(out, rng() % 2 ? -0.0 : 0.0) : near(out, rng, 0, 2);
      break;
    case Kind::specials: {  // inf / NaN / inf·0 at random places, in a, b or c
      for (std::size_t k = 0; k < K; ++k) {
        cs.a[k] = near(in, rng, 0, 3);
        cs.b[k] = near(in, rng, 0, 3);
      }
      const int hits = 1 + static_cast<int>(rng() % 2);
      for (int h = 0; h < hits; ++h) {
        const std::size_t k = rng() % K;
        const bool has_inf = in.non_finite == NonFinite::ieee;
        switch (rng() % 4) {
          case 0: cs.a[k] = has_inf ? make(in, rng() & 1, fields(in).max_field(), 0) : canonical_nan(in); break;
          case 1: cs.b[k] = canonical_nan(in, rng() & 1); break;
          case 2:
            cs.a[k] = has_inf ? make(in, rng() & 1, fields(in).max_field(), 0) : canonical_nan(in);
            cs.b[k] = test::naive_encode(in, 0.0);
            break;
          default: cs.b[k] = has_inf ? make(in, rng() & 1, fields(in).max_field(), 0) : near(in, rng, 0, 0); break;
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
        cs.b[k] = near(in, rng, std::min(in_emax - 1, out_emax / 2 + 1), 1);
        if (rng() % 2) cs.b[k] = Bits{cs.b[k].raw & ~(1u << (in.bits - 1))};
        if (rng() % 2) cs.a[k] = Bits{cs.a[k].raw & ~(1u << (in.bits - 1))};
      }
      cs.c = near(out, rng, out_emax, 1);
      break;
    }
    case Kind::bitsoup:  // uniformly random patterns (every class)
    case Kind::count:
      for (std::size_t k = 0; k < K; ++k) {
        cs.a[k] = any_pattern(in, rng);
        cs.b[k] = any_pattern(in, rng);
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
                      << seed << ")\n  a = " << hex_list(*m.input, cs.a) << "\n  b = " << hex_list(*m.input, cs.b)
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

TEST(NaiveOnVariants, AgreesOnRandomAndAdversarialInputs) {
  std::uint64_t seed = 0xabc0000u;
  for (const BlockFmaModel& m : variants()) {
    SCOPED_TRACE(describe(m));
    compare_with_naive(m, 40, seed++);
  }
}

}  // namespace
}  // namespace numfid
