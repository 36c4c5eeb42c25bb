// Affine quantisation: exact division by the scale in integers, one rounding to an integer,
// then the zero point and the clamp; dequantisation as one exactly computed product rounded once.
#include "formats/quantize.h"

#include <bit>
#include <stdexcept>
#include <string>

#include "formats/convert.h"

namespace numfid {

using u128 = uint128;

namespace {

/// A wider unsigned integer target for the magnitude of round(x / scale): the rounded
/// quotient of an int32 quantisation may lie outside int32 and still land inside it once
/// the zero point is added (e.g. 3e9 + (-2e9)), so it is rounded into 32 unsigned bits
/// and the sign is applied afterwards.
constexpr FormatSpec uint32_magnitude{"uint32", FormatKind::integer, 32, 0, 0, 0, false, false, false,
                                      NonFinite::finite_only, NanEncoding::none, false,
                                      "numfid internal: magnitude of a rounded quotient"};


std::int64_t int_min(const FormatSpec& f) { return f.is_signed ? -(std::int64_t{1} << (f.bits - 1)) : 0; }
std::int64_t int_max(const FormatSpec& f) {
  return f.is_signed ? (std::int64_t{1} << (f.bits - 1)) - 1 : (std::int64_t{1} << f.bits) - 1;
}

Bits encode_int(const FormatSpec& f, std::int64_t v) {
  return Bits{static_cast<std::uint32_t>(static_cast<std::uint64_t>(v)) & storage_mask(f)};
}

std::int64_t decode_int(const FormatSpec& f, Bits b) {
  const Decoded d = decode(f, b);
  const auto mag = static_cast<std::int64_t>(d.significand);
  return d.negative ? -mag : mag;
}

/// The exact value of the scale; throws unless it is a finite non-zero float.
Unrounded scale_value(const QuantParams& p) {
  if (p.scale_format == nullptr || !is_float(*p.scale_format))
    throw std::invalid_argument("quantisation scale: not a float format");
  const FpClass c = classify(*p.scale_format, p.scale);
  if (c == FpClass::nan || c == FpClass::infinite || c == FpClass::zero)
    throw std::invalid_argument("quantisation scale " + to_hex(*p.scale_format, p.scale) + " (" +
                                std::string(p.scale_format->name) + ") is not finite and non-zero");
  return exact_value(*p.scale_format, p.scale);
}

void check_int_target(const FormatSpec& f, const QuantParams& p) {
  if (f.kind != FormatKind::integer) throw std::invalid_argument("quantise: target is not an integer format");
  if (p.zero_point < int_min(f) || p.zero_point > int_max(f))
    throw std::invalid_argument("quantise: zero point " + std::to_string(p.zero_point) + " outside " +
                                std::string(f.name));
}

/// round(x / s) as a signed integer; magnitudes of 2^32 or more come back as ±2^32 (every
/// such value saturates once a zero point in int32's range is added).
std::int64_t rounded_quotient(const Unrounded& x, const Unrounded& s, const RoundOptions& o, Status& st) {
  if (x.significand == 0) return 0;
  const bool negative = x.negative != s.negative;
  // Exact division with the dividend shifted to the top of 128 bits: the quotient keeps at
  // least 127 - 24 significant bits (significands have at most 32), so any quotient below
  // 2^34 keeps more than 64 fraction bits and the remainder only says whether the tail is
  // non-zero: Unrounded's precondition on sticky values holds with a wide margin, and a
  // stochastic rounding is off by at most 2^-64 in probability.
  const int shift = 127 - bit_length(x.significand);
  const u128 n = x.significand << shift;
  const Unrounded q{false, n / s.significand, x.exponent - s.exponent - shift, n % s.significand != 0};
  // The magnitude is rounded with the sign folded into the mode (a directed mode rounds a
  // negative value's magnitude the other way); rne, rna, rtz and stochastic are symmetric.
  RoundOptions om = o;
  if (negative && o.rounding == Rounding::rup) om.rounding = Rounding::rdn;
  else if (negative && o.rounding == Rounding::rdn) om.rounding = Rounding::rup;
  const Result r = round_to(uint32_magnitude, q, om);
  std::int64_t mag = r.bits.raw;
  st |= static_cast<Status>(r.status & status_inexact);
  if ((r.status & status_invalid) != 0) {
    // Saturated (at least 2^32): round_to reports invalid only, so whether the quotient had
    // a fraction is read from the bits below the binary point.
    mag = std::int64_t{1} << 32;
    const int frac_bits = -q.exponent;
    const bool fraction = q.sticky || (frac_bits > 0 && (frac_bits >= 128 || (q.significand & ((u128{1} << frac_bits) - 1)) != 0));
    if (fraction) st |= status_inexact;
  }
  return negative ? -mag : mag;
}

}  // namespace

Result quantize(const FormatSpec& from, Bits x, const FormatSpec& to, const QuantParams& p, const RoundOptions& o) {
  check_int_target(to, p);
  const Unrounded s = scale_value(p);
  const Decoded d = decode(from, x);
  if (d.cls == FpClass::nan) return {encode_int(to, p.zero_point), status_invalid};
  if (d.cls == FpClass::infinite) {
    const bool negative = d.negative != s.negative;
    return {encode_int(to, negative ? int_min(to) : int_max(to)), status_invalid};
  }
  Status st = status_ok;
  const std::int64_t r = rounded_quotient(exact_value(from, x, o.daz), s, o, st);
  std::int64_t v = r + p.zero_point;
  if (v < int_min(to) || v > int_max(to)) {
    v = v < int_min(to) ? int_min(to) : int_max(to);
    st |= status_invalid;
  }
  return {encode_int(to, v), st};
}

Result dequantize(const FormatSpec& from, Bits q, const FormatSpec& to, const QuantParams& p, const RoundOptions& o) {
  if (from.kind != FormatKind::integer) throw std::invalid_argument("dequantise: source is not an integer format");
  if (!is_float(to)) throw std::invalid_argument("dequantise: target is not a float format");
  const Unrounded s = scale_value(p);
  const std::int64_t diff = decode_int(from, q) - p.zero_point;  // |diff| < 2^33: exact
  const auto mag = static_cast<std::uint64_t>(diff < 0 ? -diff : diff);
  const bool negative = diff == 0 ? s.negative : (diff < 0) != s.negative;
  return round_to(to, {negative, u128{mag} * s.significand, s.exponent, false}, o);
}

namespace {

template <class Op>
Status apply_channels(std::span<const Bits> in, std::span<Bits> out, std::span<const QuantParams> channels,
                      std::size_t inner, const RoundOptions& o, Op op) {
  if (in.size() != out.size()) throw std::invalid_argument("quantisation: input and output sizes differ");
  if (inner == 0 || channels.empty()) throw std::invalid_argument("quantisation: no channels");
  if (in.size() % (inner * channels.size()) != 0)
    throw std::invalid_argument("quantisation: size is not a multiple of inner * channels");
  Status st = status_ok;
  RoundOptions oi = o;
  for (std::size_t i = 0; i < in.size(); ++i) {
    oi.stream = o.stream + i;
    const Result r = op(in[i], channels[(i / inner) % channels.size()], oi);
    out[i] = r.bits;
    st |= r.status;
  }
  return st;
}

}  // namespace

Status quantize_per_tensor(const FormatSpec& from, std::span<const Bits> x, const FormatSpec& to,
                           const QuantParams& p, std::span<Bits> out, const RoundOptions& o) {
  return quantize_per_channel(from, x, to, std::span<const QuantParams>(&p, 1), x.empty() ? 1 : x.size(), out, o);
}

Status dequantize_per_tensor(const FormatSpec& from, std::span<const Bits> q, const FormatSpec& to,
                             const QuantParams& p, std::span<Bits> out, const RoundOptions& o) {
  return dequantize_per_channel(from, q, to, std::span<const QuantParams>(&p, 1), q.empty() ? 1 : q.size(), out, o);
}

Status quantize_per_channel(const FormatSpec& from, std::span<const Bits> x, const FormatSpec& to,
                            std::span<const QuantParams> channels, std::size_t inner, std::span<Bits> out,
                            const RoundOptions& o) {
  return apply_channels(x, out, channels, inner, o, [&](Bits v, const QuantParams& p, const RoundOptions& oi) {
    return quantize(from, v, to, p, oi);
  });
}

Status dequantize_per_channel(const FormatSpec& from, std::span<const Bits> q, const FormatSpec& to,
                              std::span<const QuantParams> channels, std::size_t inner, std::span<Bits> out,
                              const RoundOptions& o) {
  return apply_channels(q, out, channels, inner, o, [&](Bits v, const QuantParams& p, const RoundOptions& oi) {
    return dequantize(from, v, to, p, oi);
  });
}

}  // namespace numfid
