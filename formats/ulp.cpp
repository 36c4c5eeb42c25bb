// Neighbours, ulp and ulp distance on bit patterns. Every float format here is
// sign-magnitude with its non-NaN positive patterns contiguous from 0 (+0, or E8M0's 2^-127)
// to +max finite (then +inf in IEEE formats), so the magnitude bits are the order.
#include "formats/ulp.h"

#include <bit>
#include <cmath>

namespace numfid {

namespace {

constexpr std::uint32_t sign_mask(const FormatSpec& f) {
  return f.has_sign ? std::uint32_t{1} << (f.bits - 1) : 0u;
}

/// Integer formats: the value of a pattern and the pattern of a value (two's complement).
std::int64_t int_value(const FormatSpec& f, Bits x) {
  const Decoded d = decode(f, x);
  const auto mag = static_cast<std::int64_t>(d.significand);
  return d.negative ? -mag : mag;
}
Bits int_bits(const FormatSpec& f, std::int64_t v) {
  return Bits{static_cast<std::uint32_t>(static_cast<std::uint64_t>(v)) & storage_mask(f)};
}
std::int64_t int_min(const FormatSpec& f) { return f.is_signed ? -(std::int64_t{1} << (f.bits - 1)) : 0; }
std::int64_t int_max(const FormatSpec& f) {
  return f.is_signed ? (std::int64_t{1} << (f.bits - 1)) - 1 : (std::int64_t{1} << f.bits) - 1;
}

}  // namespace

std::optional<Bits> next_up(const FormatSpec& f, Bits x) {
  const Decoded d = decode(f, x);
  if (d.cls == FpClass::nan) return std::nullopt;
  if (f.kind == FormatKind::integer) {
    const std::int64_t v = int_value(f, x);
    if (v == int_max(f)) return std::nullopt;
    return int_bits(f, v + 1);
  }
  const std::uint32_t raw = x.raw & storage_mask(f);
  // Every format with a zero has subnormals, so pattern 1 is the least positive value.
  if (d.cls == FpClass::zero) return Bits{1};
  if (!d.negative) {
    if (d.cls == FpClass::infinite) return x;  // IEEE 754-2019 §5.3.1: nextUp(+inf) = +inf
    if (Bits{raw} == max_finite_bits(f, false)) {
      if (f.non_finite == NonFinite::ieee) return infinity(f, false);
      return std::nullopt;
    }
    return Bits{raw + 1};
  }
  if (d.cls == FpClass::infinite) return max_finite_bits(f, true);
  const std::uint32_t mag = raw & ~sign_mask(f);
  if (mag == 1) return zero(f, true);  // -0, or the only zero (+0) of FNUZ formats
  return Bits{sign_mask(f) | (mag - 1)};
}

std::optional<Bits> next_down(const FormatSpec& f, Bits x) {
  const Decoded d = decode(f, x);
  if (d.cls == FpClass::nan) return std::nullopt;
  if (f.kind == FormatKind::integer) {
    const std::int64_t v = int_value(f, x);
    if (v == int_min(f)) return std::nullopt;
    return int_bits(f, v - 1);
  }
  const std::uint32_t raw = x.raw & storage_mask(f);
  if (!f.has_sign) {  // E8M0: pattern 0 (2^-127) is the least value
    if (raw == 0) return std::nullopt;
    return Bits{raw - 1};
  }
  if (d.cls == FpClass::zero) return Bits{sign_mask(f) | 1u};
  if (d.negative) {
    if (d.cls == FpClass::infinite) return x;
    if (Bits{raw} == max_finite_bits(f, true)) {
      if (f.non_finite == NonFinite::ieee) return infinity(f, true);
      return std::nullopt;
    }
    return Bits{raw + 1};
  }
  if (d.cls == FpClass::infinite) return max_finite_bits(f, false);
  return Bits{raw - 1};  // the least positive value steps down to +0
}

std::optional<int> ulp_exponent(const FormatSpec& f, Bits x) {
  const Decoded d = decode(f, x);
  if (d.cls == FpClass::nan) return std::nullopt;
  if (f.kind == FormatKind::integer) return 0;
  const int shift = f.precision - 1;
  if (d.cls == FpClass::infinite) return emax(f) - shift;
  if (d.cls == FpClass::zero) return emin(f) - shift;
  const int e_top = d.exponent + (63 - std::countl_zero(d.significand));  // floor(log2 |x|)
  return (e_top > emin(f) ? e_top : emin(f)) - shift;
}

double ulp(const FormatSpec& f, Bits x) {
  const std::optional<int> e = ulp_exponent(f, x);
  if (!e) return NAN;
  return std::ldexp(1.0, *e);
}

std::optional<std::int64_t> ordinal(const FormatSpec& f, Bits x) {
  const Decoded d = decode(f, x);
  if (d.cls == FpClass::nan) return std::nullopt;
  if (f.kind == FormatKind::integer) return int_value(f, x);
  const std::uint32_t raw = x.raw & storage_mask(f);
  const auto mag = static_cast<std::int64_t>(raw & ~sign_mask(f));
  return d.negative ? -mag : mag;
}

std::optional<std::uint64_t> ulp_distance(const FormatSpec& f, Bits a, Bits b) {
  const std::optional<std::int64_t> oa = ordinal(f, a);
  const std::optional<std::int64_t> ob = ordinal(f, b);
  if (!oa || !ob) return std::nullopt;
  return *oa > *ob ? static_cast<std::uint64_t>(*oa - *ob) : static_cast<std::uint64_t>(*ob - *oa);
}

}  // namespace numfid
