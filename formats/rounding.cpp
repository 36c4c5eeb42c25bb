// The single rounding routine: an exact value (significand, exponent, sticky) into any
// format, every rounding mode, overflow mode, FTZ and the formats' non-finite rules.
#include "formats/rounding.h"

#include <bit>

namespace numfid {

using u128 = uint128;

namespace {


std::uint64_t splitmix_finalise(std::uint64_t z) {
  // SplitMix64 finaliser (Steele, Lea, Flood, "Fast splittable pseudorandom number
  // generators", OOPSLA 2014).
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// 64 bits of `v` whose most significant is bit `hi` of v (bits outside [0,128) read 0).
std::uint64_t window64(u128 v, int hi) {
  if (hi < 0) return 0;
  const int lo = hi - 63;
  if (lo >= 128) return 0;
  if (lo >= 0) return static_cast<std::uint64_t>(v >> lo);
  return static_cast<std::uint64_t>(v << (-lo));
}

/// Stochastic decision: with U uniform on [0,1) drawn bit by bit from the random stream,
/// round away iff U < frac, where frac = (the low d bits of sig) / 2^d (+ sticky tail).
/// Comparing word by word from the most significant end makes the probability exactly
/// frac for an exact value, whatever d is, and usually costs one random word.
bool stochastic_round_away(u128 sig, int d, bool sticky, const RoundOptions& o) {
  if (o.sr_bits > 0) {  // R random bits against the top R bits of the fraction (RoundOptions::sr_bits)
    const int r = std::min(o.sr_bits, 64);
    const std::uint64_t frac_top = window64(sig, d - 1) >> (64 - r);
    return (random_word(o.seed, o.stream, 0) >> (64 - r)) < frac_top;
  }
  std::uint64_t counter = 0;
  for (int pos = 0; pos < d; pos += 64, ++counter) {
    const std::uint64_t frac_word = window64(sig, d - 1 - pos);  // bits past d read as 0
    const std::uint64_t u = random_word(o.seed, o.stream, counter);
    if (u != frac_word) return u < frac_word;
  }
  // U's first d bits equal frac's: U < frac only if the tail of frac is non-zero and beats
  // U's tail; the tail of a sticky value is unknown, so one more random bit decides.
  return sticky && (random_word(o.seed, o.stream, counter) >> 63) != 0;
}

struct Rounded {
  u128 kept;
  bool inexact;
};

/// Rounds sig * 2^exponent (+ sticky) to a multiple of 2^q (q >= exponent).
Rounded round_to_quantum(bool negative, u128 sig, int exponent, bool sticky, int q, const RoundOptions& o) {
  const int d = q - exponent;
  u128 kept;
  u128 rem;
  u128 half;
  if (d == 0) {  // callers round to q > exponent; kept for completeness (exact value)
    kept = sig;
    rem = 0;
    half = 1;
  } else if (d >= 129) {
    kept = 0;
    rem = sig;
    half = ~u128{0};  // sig < 2^(d-1)
  } else {
    kept = d == 128 ? 0 : sig >> d;
    rem = d == 128 ? sig : sig & ((u128{1} << d) - 1);
    half = u128{1} << (d - 1);
  }
  const bool inexact = rem != 0 || sticky;
  bool up = false;
  switch (o.rounding) {
    case Rounding::rne:
      up = rem > half || (rem == half && (sticky || (kept & 1) != 0));
      break;
    case Rounding::rna:
      up = rem >= half && d > 0;
      break;
    case Rounding::rtz:
      break;
    case Rounding::rup:
      up = inexact && !negative;
      break;
    case Rounding::rdn:
      up = inexact && negative;
      break;
    case Rounding::stochastic:
      up = inexact && stochastic_round_away(sig, d, sticky, o);
      break;
  }
  return {kept + (up ? 1 : 0), inexact};
}

Result overflowed(const FormatSpec& f, bool negative, const RoundOptions& o) {
  const Status st = status_overflow | status_inexact;
  if (o.overflow == Overflow::saturate) return {max_finite_bits(f, negative), st};
  const bool toward_zero = o.rounding == Rounding::rtz || (o.rounding == Rounding::rdn && !negative) ||
                           (o.rounding == Rounding::rup && negative);
  if (toward_zero) return {max_finite_bits(f, negative), st};
  return {infinity(f, negative), st};
}

Result round_to_integer(const FormatSpec& f, const Unrounded& v, const RoundOptions& o) {
  const std::uint64_t max_pos = f.is_signed ? (std::uint64_t{1} << (f.bits - 1)) - 1 : (std::uint64_t{1} << f.bits) - 1;
  const std::uint64_t max_neg = f.is_signed ? std::uint64_t{1} << (f.bits - 1) : 0;
  const std::uint64_t limit = v.negative ? max_neg : max_pos;
  const int len = bit_length(v.significand);
  u128 kept;
  Status st = status_ok;
  if (len == 0) {
    kept = 0;
  } else if (v.exponent >= 0) {
    if (len + v.exponent > 64) return {max_finite_bits(f, v.negative), status_invalid};
    kept = v.significand << v.exponent;  // an integer already (a sticky tail here would violate
    if (v.sticky) st |= status_inexact;  // Unrounded's precondition; it is dropped)
  } else {
    const Rounded r = round_to_quantum(v.negative, v.significand, v.exponent, v.sticky, 0, o);
    kept = r.kept;
    if (r.inexact) st |= status_inexact;
  }
  if (kept > limit) return {max_finite_bits(f, v.negative), status_invalid};
  const std::uint64_t mag = static_cast<std::uint64_t>(kept);
  const std::uint64_t pattern = v.negative ? (~mag + 1) : mag;
  return {Bits{static_cast<std::uint32_t>(pattern) & storage_mask(f)}, st};
}

}  // namespace

std::uint64_t random_word(std::uint64_t seed, std::uint64_t stream, std::uint64_t counter) {
  const std::uint64_t key = splitmix_finalise(seed ^ 0x6a09e667f3bcc909ULL);
  const std::uint64_t s = splitmix_finalise(key + stream * 0x9e3779b97f4a7c15ULL);
  return splitmix_finalise(s ^ (counter * 0xd1b54a32d192ed03ULL + 0x243f6a8885a308d3ULL));
}

Result round_infinity(const FormatSpec& f, bool negative, const RoundOptions& o) {
  if (f.kind == FormatKind::integer) return {max_finite_bits(f, negative), status_invalid};
  if (!f.has_sign && negative) return {canonical_nan(f), status_invalid};
  if (f.non_finite == NonFinite::ieee && o.overflow == Overflow::ieee) return {infinity(f, negative), status_ok};
  if (o.overflow == Overflow::saturate || f.non_finite == NonFinite::finite_only)
    return {max_finite_bits(f, negative), status_overflow | status_inexact};
  return {canonical_nan(f, negative), status_invalid};  // OCP OFP8 non-saturating: inf -> NaN
}

Result round_nan(const FormatSpec& f, bool negative, bool signal_invalid) {
  Status st = signal_invalid ? status_invalid : status_ok;
  // A format without NaN cannot carry one: the result is documented at canonical_nan().
  if (f.nan == NanEncoding::none) st = status_invalid;
  return {canonical_nan(f, negative), st};
}

Unrounded unrounded_of(double x) {
  const auto raw = std::bit_cast<std::uint64_t>(x);
  const auto field = static_cast<int>((raw >> 52) & 0x7ff);
  const std::uint64_t m = raw & ((std::uint64_t{1} << 52) - 1);
  return {(raw >> 63) != 0, field == 0 ? m : m | (std::uint64_t{1} << 52), (field == 0 ? 1 : field) - 1075, false};
}

Result round_to(const FormatSpec& f, const Unrounded& v, const RoundOptions& o) {
  if (f.kind == FormatKind::integer) return round_to_integer(f, v, o);
  const int p = f.precision;
  const int len = bit_length(v.significand);
  if (len == 0) {
    if (!f.has_subnormals) return {zero(f, false), status_underflow | status_inexact};  // E8M0: no zero
    return {zero(f, v.negative), status_ok};
  }
  if (!f.has_sign && v.negative) return {canonical_nan(f), status_invalid};

  const int e_top = v.exponent + len - 1;  // floor(log2 |v|)
  if (e_top > emax(f)) return overflowed(f, v.negative, o);
  const int q = (e_top > emin(f) ? e_top : emin(f)) - (p - 1);  // quantum: 2^q is one unit in the last place
  u128 kept;
  bool inexact;
  if (q <= v.exponent) {
    // Exact: the value has at most p significant bits. (A sticky value has more than p + 2
    // by Unrounded's precondition, so it always takes the other branch.)
    kept = v.significand << (v.exponent - q);
    inexact = v.sticky;
  } else {
    const Rounded r = round_to_quantum(v.negative, v.significand, v.exponent, v.sticky, q, o);
    kept = r.kept;
    inexact = r.inexact;
  }
  int qq = q;
  if (kept >> p) {  // rounding carried into a new binade
    kept >>= 1;
    ++qq;
  }
  Status st = inexact ? status_inexact : status_ok;
  const bool tiny = e_top < emin(f);
  if (tiny && inexact) st |= status_underflow;
  if (kept == 0) {
    if (!f.has_subnormals) return {zero(f, false), status_underflow | status_inexact};
    return {zero(f, v.negative), st};
  }
  const u128 hidden = u128{1} << (p - 1);
  const int e_res = qq + (p - 1);  // exponent if normal
  if (e_res > emax(f) || (e_res == emax(f) && kept > max_significand(f))) return overflowed(f, v.negative, o);
  const std::uint32_t sign = v.negative ? std::uint32_t{1} << (f.bits - 1) : 0u;
  const int mb = p - 1;
  if (kept < hidden) {  // subnormal result
    if (o.ftz) return {zero(f, v.negative), st | status_underflow | status_inexact};
    return {Bits{sign | static_cast<std::uint32_t>(kept)}, st};
  }
  const auto field = static_cast<std::uint32_t>(e_res + f.bias);
  const auto mant = static_cast<std::uint32_t>(kept - hidden);
  return {Bits{sign | (field << mb) | mant}, st};
}

std::optional<Rounding> parse_rounding(std::string_view s) {
  if (s == "rne" || s == "nearest" || s == "nearest_even") return Rounding::rne;
  if (s == "rtz" || s == "toward_zero" || s == "trunc") return Rounding::rtz;
  if (s == "rup" || s == "up" || s == "toward_positive") return Rounding::rup;
  if (s == "rdn" || s == "down" || s == "toward_negative") return Rounding::rdn;
  if (s == "rna" || s == "nearest_away") return Rounding::rna;
  if (s == "stochastic" || s == "sr") return Rounding::stochastic;
  return std::nullopt;
}

std::string_view rounding_name(Rounding r) {
  switch (r) {
    case Rounding::rne: return "rne";
    case Rounding::rtz: return "rtz";
    case Rounding::rup: return "rup";
    case Rounding::rdn: return "rdn";
    case Rounding::rna: return "rna";
    case Rounding::stochastic: return "stochastic";
  }
  return "?";
}

}  // namespace numfid
