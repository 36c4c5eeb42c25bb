// Block-FMA evaluation with integer arithmetic only: decode, exact products, alignment to the
// largest exponent with truncation inside the window, exact sum, one normalisation and the
// final rounding (round_to where the result precision is the output format's).
#include "numerics/block_fma.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <stdexcept>
#include <utility>

#include "formats/arith.h"
#include "formats/platform.h"
#include "formats/value.h"

namespace numfid {

namespace {

__extension__ typedef __int128 int128;

constexpr int kMaxBlock = 256;
constexpr int kMaxInstructionK = 4096;
constexpr int kMaxWindow = 100;  // aligned terms < 2^(W+3), 257 of them: < 2^(W+12) fits int128


/// A finite operand as the datapath sees it: value = (-1)^neg * sig * 2^(exp - frac), with
/// exp = max(floor(log2|value|), emin of the datapath) and `frac` the datapath's fraction bits.
struct Operand {
  FpClass cls = FpClass::zero;  // zero, normal (any finite non-zero), infinite or nan
  bool neg = false;
  std::uint64_t sig = 0;
  int exp = 0;
};

/// Decoding constants of one format read into one datapath format, derived once per call.
struct Codec {
  std::uint32_t storage = 0, sign_bit = 0, exp_all = 0, man_mask = 0;
  int mb = 0, bias = 0, emin_in = 0;
  NanEncoding nan = NanEncoding::ieee;
  bool has_subnormals = true;
  bool daz = false;
  bool same = true;  // datapath == input: no renormalisation needed
  int emin_dp = 0, frac_dp = 0;

  Codec(const FormatSpec& in, const FormatSpec& dp, bool daz_in)
      : storage(storage_mask(in)),
        sign_bit(in.has_sign ? std::uint32_t{1} << (in.bits - 1) : 0u),
        exp_all((std::uint32_t{1} << in.exponent_bits) - 1),
        man_mask((std::uint32_t{1} << mantissa_bits(in)) - 1),
        mb(mantissa_bits(in)),
        bias(in.bias),
        emin_in(emin(in)),
        nan(in.nan),
        has_subnormals(in.has_subnormals),
        daz(daz_in),
        same(in == dp || (in.precision == dp.precision && emin(in) == emin(dp))),
        emin_dp(emin(dp)),
        frac_dp(dp.precision - 1) {}

  Operand decode(Bits b) const {
    Operand o;
    const std::uint32_t raw = b.raw & storage;
    o.neg = (raw & sign_bit) != 0;
    const std::uint32_t ef = (raw >> mb) & exp_all;
    const std::uint32_t m = raw & man_mask;
    switch (nan) {
      case NanEncoding::ieee:
        if (ef == exp_all) {
          o.cls = m == 0 ? FpClass::infinite : FpClass::nan;
          return o;
        }
        break;
      case NanEncoding::all_ones:
        if (ef == exp_all && m == man_mask) {
          o.cls = FpClass::nan;
          return o;
        }
        break;
      case NanEncoding::negative_zero:
        if (raw == sign_bit) {
          o.cls = FpClass::nan;
          return o;
        }
        break;
      case NanEncoding::none: break;
    }
    int e_in;
    std::uint64_t sig;
    if (ef == 0 && has_subnormals) {
      if (m == 0 || daz) return o;  // ±0 (a subnormal read as zero under DAZ keeps its sign)
      sig = m;
      e_in = emin_in;
    } else {
      sig = m | (std::uint64_t{1} << mb);
      e_in = static_cast<int>(ef) - bias;
    }
    o.cls = FpClass::normal;
    if (same) {
      o.sig = sig;
      o.exp = e_in;
      return o;
    }
    // Renormalise into the datapath format (validate() guarantees it holds the value exactly).
    const int lead = e_in - mb + bit_length(sig) - 1;
    o.exp = std::max(lead, emin_dp);
    o.sig = sig << ((e_in - mb) - (o.exp - frac_dp));
    return o;
  }
};

/// Everything one evaluation needs, derived from the model once.
struct Context {
  const BlockFmaModel& m;
  const FormatSpec& out;
  Codec a_codec;  // A's stored format read into A's datapath format
  Codec b_codec;  // B's (the same as A's unless the model is mixed)
  Codec out_codec;
  int prod_frac;  // fraction bits of an exact product: those of A's datapath + B's
  int frac_out;  // fraction bits of an output-format operand
  int window;
  int result_frac;
  bool direct_round;  // the final rounding is round_to's own (result precision = output's)
  Bits nan_bits;

  explicit Context(const BlockFmaModel& model)
      : m(model),
        out(*model.output),
        a_codec(*model.input, model.datapath_format(), !model.input_subnormals),
        b_codec(model.input_b_format(), model.datapath_b_format(), !model.input_subnormals),
        out_codec(*model.output, *model.output, !model.output_subnormals),
        prod_frac(model.datapath_format().precision - 1 + model.datapath_b_format().precision - 1),
        frac_out(model.output->precision - 1),
        window(model.window_bits()),
        result_frac(model.result_fraction_bits()),
        direct_round(model.result_fraction_bits() == model.output->precision - 1 &&
                     model.normalisation == Normalisation::normalised),
        nan_bits(model_nan(model)) {}

  static Bits model_nan(const BlockFmaModel& model) {
    const FormatSpec& f = *model.output;
    if (model.nan == NanResult::all_ones && f.nan == NanEncoding::ieee)
      return Bits{storage_mask(f) >> 1};  // 0x7fffffff, 0x7fff: every bit but the sign
    return canonical_nan(f, false);
  }
};

/// Cuts `mag` (in units of 2^lsb) to a multiple of 2^q, q > lsb, under `r`; sets *lost.
uint128 cut_to(uint128 mag, int lsb, int q, bool neg, Rounding r, bool* lost) {
  const int sh = q - lsb;
  if (sh >= 128) {  // everything below the result's last place
    *lost = *lost || mag != 0;
    const bool away = mag != 0 && ((r == Rounding::rup && !neg) || (r == Rounding::rdn && neg));
    return away ? 1 : 0;
  }
  uint128 kept = mag >> sh;
  const uint128 rem = mag - (kept << sh);
  if (rem == 0) return kept;
  *lost = true;
  const uint128 half = uint128{1} << (sh - 1);
  switch (r) {
    case Rounding::rne:
      if (rem > half || (rem == half && (kept & 1))) ++kept;
      break;
    case Rounding::rna:
      if (rem >= half) ++kept;
      break;
    case Rounding::rup:
      if (!neg) ++kept;
      break;
    case Rounding::rdn:
      if (neg) ++kept;
      break;
    case Rounding::rtz:
    case Rounding::stochastic:  // rejected by validate()
      break;
  }
  return kept;
}

/// Aligns one term sig * 2^(exp - frac) to units of 2^(M - W): shift = exp - frac - (M - W).
uint128 align(std::uint64_t sig, int shift, AlignmentRounding mode, bool* lost) {
  if (shift >= 0) return uint128{sig} << shift;
  const int k = -shift;
  if (k >= 64) {
    *lost = *lost || sig != 0;
    return 0;  // sig < 2^48 (validate: significands of at most 24 bits): under half a unit
  }
  std::uint64_t kept = sig >> k;
  const std::uint64_t rem = sig - (kept << k);
  if (rem != 0) {
    *lost = true;
    if (mode == AlignmentRounding::rne) {
      const std::uint64_t half = std::uint64_t{1} << (k - 1);
      if (rem > half || (rem == half && (kept & 1))) ++kept;
    }
  }
  return kept;
}

/// One block over `n` products and the addend c.
Result block_impl(const Context& x, const Bits* a, const Bits* b, int n, Bits c) {
  const BlockFmaModel& m = x.m;
  std::array<std::uint64_t, kMaxBlock> sig;
  std::array<int, kMaxBlock> ex;
  std::array<bool, kMaxBlock> neg;
  int terms = 0;
  bool any_nan = false, pos_inf = false, neg_inf = false, invalid = false;
  int max_exp = m.min_alignment_exponent;
  for (int j = 0; j < n; ++j) {
    const Operand oa = x.a_codec.decode(a[j]);
    const Operand ob = x.b_codec.decode(b[j]);
    const bool s = oa.neg != ob.neg;
    if (oa.cls == FpClass::normal && ob.cls == FpClass::normal) {
      sig[terms] = oa.sig * ob.sig;
      ex[terms] = oa.exp + ob.exp;
      neg[terms] = s;
      max_exp = std::max(max_exp, ex[terms]);
      ++terms;
      continue;
    }
    if (oa.cls == FpClass::nan || ob.cls == FpClass::nan) {
      any_nan = true;
    } else if (oa.cls == FpClass::infinite || ob.cls == FpClass::infinite) {
      if (oa.cls == FpClass::zero || ob.cls == FpClass::zero) {
        any_nan = invalid = true;  // inf · 0
      } else {
        (s ? neg_inf : pos_inf) = true;
      }
    }
    // else a zero product: it takes no part in the alignment (Khattak & Mikaitis, models/tools).
  }
  const Operand oc = x.out_codec.decode(c);
  if (oc.cls == FpClass::nan) any_nan = true;
  if (oc.cls == FpClass::infinite) (oc.neg ? neg_inf : pos_inf) = true;
  if (pos_inf && neg_inf) any_nan = invalid = true;
  if (any_nan) return {x.nan_bits, invalid ? status_invalid : status_ok};
  if (pos_inf || neg_inf) return {infinity(x.out, neg_inf), status_ok};
  const bool c_term = oc.cls == FpClass::normal;
  if (c_term) max_exp = std::max(max_exp, oc.exp);

  // Alignment: units of 2^(M - W); every term truncated (or rounded) to the window.
  const int lsb = max_exp - x.window;
  bool lost = false;
  int128 sum = 0;
  const int prod_frac = x.prod_frac;
  for (int j = 0; j < terms; ++j) {
    const uint128 v = align(sig[j], ex[j] - prod_frac - lsb, m.alignment, &lost);
    sum += neg[j] ? -static_cast<int128>(v) : static_cast<int128>(v);
  }
  if (c_term) {
    const uint128 v = align(oc.sig, oc.exp - x.frac_out - lsb, m.alignment, &lost);
    sum += oc.neg ? -static_cast<int128>(v) : static_cast<int128>(v);
  }
  const Status align_status = lost ? status_inexact : status_ok;
  if (sum == 0) return {zero(x.out, false), align_status};  // exact zero: +0 (both published models)

  const bool sneg = sum < 0;
  const uint128 mag = sneg ? static_cast<uint128>(-sum) : static_cast<uint128>(sum);
  RoundOptions ro;
  ro.ftz = !m.output_subnormals;
  Result r;
  if (x.direct_round) {
    ro.rounding = m.final_rounding;
    r = round_to(x.out, Unrounded{sneg, mag, lsb, false}, ro);
  } else {
    // Result precision narrower than the output (e8m13) or no normalisation: cut here, then
    // round_to only encodes (exact, or overflow/FTZ).
    const int lead = lsb + bit_length(mag) - 1;
    int q = std::max(lead, emin(x.out)) - x.result_frac;
    if (m.normalisation == Normalisation::at_alignment) q = std::max(q, max_exp - m.accumulator_fraction_bits);
    bool cut_lost = false;
    uint128 kept = mag;
    int kept_exp = lsb;
    if (q > lsb) {
      kept = cut_to(mag, lsb, q, sneg, m.final_rounding, &cut_lost);
      kept_exp = q;
    }
    ro.rounding = Rounding::rtz;
    r = round_to(x.out, Unrounded{sneg, kept, kept_exp, false}, ro);
    if (cut_lost) r.status |= status_inexact;
  }
  if (m.overflow_to_infinity && (r.status & status_overflow)) r.bits = infinity(x.out, sneg);
  if (m.zero_results_positive && classify(x.out, r.bits) == FpClass::zero) r.bits = zero(x.out, false);
  r.status |= align_status;
  if ((r.status & status_inexact) && bit_length(mag) + lsb - 1 < emin(x.out)) r.status |= status_underflow;
  return r;
}

Result add_after(const Context& x, Bits acc, Bits c) {
  RoundOptions ro;
  ro.rounding = x.m.addend_rounding;
  ro.ftz = !x.m.output_subnormals;
  ro.daz = !x.m.output_subnormals;
  Result r = add(x.out, acc, c, ro);
  if (is_nan(x.out, r.bits)) r.bits = x.nan_bits;
  return r;
}

}  // namespace

std::string validate(const BlockFmaModel& m) {
  if (!m.input || !m.output) return "input and output formats are required";
  const FormatSpec& out = *m.output;
  for (const FormatSpec* f : {m.input, &m.input_b_format(), &out, &m.datapath_format(), &m.datapath_b_format()})
    if (!is_float(*f) || !f->has_sign || !f->has_subnormals || f->precision < 2)
      return fmt::format("format {} is not a signed binary float with subnormals", f->name);
  // Each operand's datapath holds its stored values exactly; products of two datapath
  // significands and output addends must fit 48 bits (align()).
  for (const auto& [in, dp] : {std::pair<const FormatSpec*, const FormatSpec*>{m.input, &m.datapath_format()},
                               std::pair<const FormatSpec*, const FormatSpec*>{&m.input_b_format(), &m.datapath_b_format()}}) {
    if (dp->precision > 24 || out.precision > 24)
      return fmt::format("significands wider than 24 bits ({}, {}) are not supported", dp->name, out.name);
    if (dp->precision < in->precision ||
        emin(*dp) - (dp->precision - 1) > emin(*in) - (in->precision - 1) || emax(*dp) < emax(*in))
      return fmt::format("datapath {} does not hold every {} value exactly", dp->name, in->name);
  }
  if (m.block_size < 1 || m.block_size > kMaxBlock)
    return fmt::format("block_size {} not in [1, {}]", m.block_size, kMaxBlock);
  if (m.instruction_k < m.block_size || m.instruction_k % m.block_size != 0 || m.instruction_k > kMaxInstructionK)
    return fmt::format("instruction_k {} is not a multiple of block_size {} (at most {})", m.instruction_k,
                       m.block_size, kMaxInstructionK);
  if (m.interleave < 0) return "interleave is negative";
  // Runs of g products dealt round-robin over instruction_k / n blocks give every block exactly
  // n products when g divides n (n / g runs each); any other g overfills some block and empties
  // another (n = 1, k = 512, g = 512: one block of 512 products).
  if (m.interleave > 0 && m.block_size % m.interleave != 0)
    return fmt::format("interleave {} does not divide block_size {} (runs of {} products dealt round-robin would put "
                       "more than {} products in a block)",
                       m.interleave, m.block_size, m.interleave, m.block_size);
  // Each part is checked before window_bits() adds them (near 2^31 the int sum overflowed and
  // the message showed a negative window).
  if (m.accumulator_fraction_bits > kMaxWindow || m.extra_alignment_bits < -kMaxWindow ||
      m.extra_alignment_bits > kMaxWindow)
    return fmt::format("accumulator_fraction_bits {} or extra_alignment_bits {} out of range: the window (their sum) "
                       "must be in [1, {}]",
                       m.accumulator_fraction_bits, m.extra_alignment_bits, kMaxWindow);
  if (m.window_bits() < 1 || m.window_bits() > kMaxWindow)
    return fmt::format("window {} (accumulator_fraction_bits + extra_alignment_bits) not in [1, {}]", m.window_bits(),
                       kMaxWindow);
  if (m.accumulator_fraction_bits < 1) return "accumulator_fraction_bits must be at least 1";
  if (m.final_rounding == Rounding::stochastic || m.addend_rounding == Rounding::stochastic)
    return "stochastic rounding is not a block-FMA rounding mode";
  if (m.min_alignment_exponent < -4096 || m.min_alignment_exponent > 4096) return "min_alignment_exponent out of range";
  return {};
}

Result block_fma(const BlockFmaModel& m, std::span<const Bits> a, std::span<const Bits> b, Bits c) {
  const FpEnvGuard guard;  // formats/platform.h: the caller's DAZ/FTZ/rounding mode cannot reach the model
  const Context x(m);
  const auto n = static_cast<int>(std::min<std::size_t>({a.size(), b.size(), std::size_t{kMaxBlock}}));
  return block_impl(x, a.data(), b.data(), n, c);
}

Result block_fma_dot(const BlockFmaModel& m, std::span<const Bits> a, std::span<const Bits> b, Bits c) {
  const FpEnvGuard guard;  // formats/platform.h: the caller's DAZ/FTZ/rounding mode cannot reach the model
  const Context x(m);
  const std::size_t k_total = std::min(a.size(), b.size());
  const auto ik = static_cast<std::size_t>(m.instruction_k);
  const auto n = static_cast<std::size_t>(m.block_size);
  const std::size_t blocks = ik / n;
  const std::size_t instructions = std::max<std::size_t>(1, (k_total + ik - 1) / ik);
  std::array<Bits, kMaxBlock> ga, gb;
  Bits d = c;
  Status st = status_ok;
  for (std::size_t i = 0; i < instructions; ++i) {
    const std::size_t base = i * ik;
    Bits acc = m.addend == AddendEntry::in_block ? d : zero(x.out, false);
    for (std::size_t j = 0; j < blocks; ++j) {
      Result r;
      if (m.interleave == 0) {
        const std::size_t first = std::min(base + j * n, k_total);
        const std::size_t last = std::min(first + n, k_total);
        r = block_impl(x, a.data() + first, b.data() + first, static_cast<int>(last - first), acc);
      } else {
        // Runs of g products dealt round-robin: run r of the instruction goes to block r mod blocks.
        const auto g = static_cast<std::size_t>(m.interleave);
        int cnt = 0;
        for (std::size_t run = j; run * g < ik; run += blocks)
          for (std::size_t t = 0; t < g && run * g + t < ik; ++t) {
            const std::size_t k = base + run * g + t;
            if (k >= k_total) continue;
            // validate() refuses an interleave that overfills a block: never drop a product.
            if (cnt == static_cast<int>(std::min<std::size_t>(n, kMaxBlock)))
              throw std::logic_error(fmt::format("block_fma_dot: interleave {} deals more than block_size {} products "
                                                 "into block {} (a model validate() refuses)",
                                                 m.interleave, m.block_size, j));
            ga[static_cast<std::size_t>(cnt)] = a[k];
            gb[static_cast<std::size_t>(cnt)] = b[k];
            ++cnt;
          }
        r = block_impl(x, ga.data(), gb.data(), cnt, acc);
      }
      acc = r.bits;
      st |= r.status;
    }
    if (m.addend == AddendEntry::after_blocks) {
      const Result r = add_after(x, acc, d);
      d = r.bits;
      st |= r.status;
    } else {
      d = acc;
    }
  }
  return {d, st};
}

std::string_view addend_entry_name(AddendEntry e) {
  switch (e) {
    case AddendEntry::in_block: return "in_block";
    case AddendEntry::after_blocks: return "after_blocks";
  }
  return "?";
}

std::string unit_difference(const BlockFmaModel& x, const BlockFmaModel& y) {
  const auto fmt_name = [](const FormatSpec* f) { return f ? std::string(f->name) : std::string("none"); };
  const auto same_format = [](const FormatSpec* f, const FormatSpec* g) { return f == g || (f && g && *f == *g); };
  if (!same_format(x.output, y.output)) return fmt::format("output {} vs {}", fmt_name(x.output), fmt_name(y.output));
  if (!same_format(x.datapath, y.datapath))
    return fmt::format("datapath {} vs {}", fmt_name(x.datapath), fmt_name(y.datapath));
  const auto align_name = [](AlignmentRounding r) -> std::string_view { return r == AlignmentRounding::truncate ? "truncate" : "rne"; };
  const auto norm_name = [](Normalisation n) -> std::string_view { return n == Normalisation::normalised ? "normalised" : "at_alignment"; };
  const auto nan_name = [](NanResult n) -> std::string_view { return n == NanResult::canonical ? "canonical" : "all_ones"; };
  const auto num = [](std::string_view what, auto u, auto v) {
    return u == v ? std::string() : fmt::format("{} {} vs {}", what, u, v);
  };
  for (const std::string& d :
       {num("block_size", x.block_size, y.block_size), num("instruction_k", x.instruction_k, y.instruction_k),
        num("interleave", x.interleave, y.interleave),
        num("addend", addend_entry_name(x.addend), addend_entry_name(y.addend)),
        num("addend_rounding", rounding_name(x.addend_rounding), rounding_name(y.addend_rounding)),
        num("accumulator_fraction_bits", x.accumulator_fraction_bits, y.accumulator_fraction_bits),
        num("extra_alignment_bits", x.extra_alignment_bits, y.extra_alignment_bits),
        num("alignment", align_name(x.alignment), align_name(y.alignment)),
        num("min_alignment_exponent", x.min_alignment_exponent, y.min_alignment_exponent),
        num("normalisation", norm_name(x.normalisation), norm_name(y.normalisation)),
        num("final_rounding", rounding_name(x.final_rounding), rounding_name(y.final_rounding)),
        num("input_subnormals", x.input_subnormals, y.input_subnormals),
        num("output_subnormals", x.output_subnormals, y.output_subnormals),
        num("overflow_to_infinity", x.overflow_to_infinity, y.overflow_to_infinity),
        num("nan", nan_name(x.nan), nan_name(y.nan)),
        num("zero_result", x.zero_results_positive ? "positive" : "signed", y.zero_results_positive ? "positive" : "signed")})
    if (!d.empty()) return d;
  return {};
}

std::string format_pair_name(const BlockFmaModel& m) {
  if (m.mixed()) return fmt::format("{} x {}->{}", m.input->name, m.input_b->name, m.output->name);
  return fmt::format("{}->{}", m.input->name, m.output->name);
}

std::string describe(const BlockFmaModel& m) {
  std::string s = fmt::format("{}: {}", m.name, format_pair_name(m));
  if (m.datapath) s += fmt::format(" (datapath {})", m.datapath->name);
  s += fmt::format(", n={}, instruction k={}", m.block_size, m.instruction_k);
  if (m.interleave) s += fmt::format(" interleave {}", m.interleave);
  s += fmt::format(", addend {}", addend_entry_name(m.addend));
  if (m.addend == AddendEntry::after_blocks) s += fmt::format(" ({})", rounding_name(m.addend_rounding));
  s += fmt::format(", window {}+{} bits {}", m.accumulator_fraction_bits, m.extra_alignment_bits,
                   m.alignment == AlignmentRounding::truncate ? "truncated" : "rne");
  s += fmt::format(", result {} fraction bits {}", m.result_fraction_bits(), rounding_name(m.final_rounding));
  if (m.normalisation == Normalisation::at_alignment) s += " at alignment";
  if (m.min_alignment_exponent > -1024) s += fmt::format(", M >= {}", m.min_alignment_exponent);
  if (!m.input_subnormals) s += ", DAZ";
  if (!m.output_subnormals) s += ", FTZ";
  if (m.zero_results_positive) s += ", results rounding to zero are +0";
  return s;
}

}  // namespace numfid
