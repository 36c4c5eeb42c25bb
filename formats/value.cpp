// Decoding and special patterns of every format; the name/alias table.
#include "formats/value.h"

#include <bit>
#include <cmath>
#include <fmt/format.h>

namespace numfid {

namespace {
constexpr std::uint32_t low_mask(int n) {
  return n >= 32 ? 0xffffffffu : static_cast<std::uint32_t>((std::uint64_t{1} << n) - 1);
}
constexpr std::uint32_t sign_bit(const FormatSpec& f) {
  return f.has_sign ? std::uint32_t{1} << (f.bits - 1) : 0;
}
}  // namespace

bool equivalent_bits(const FormatSpec& f, Bits a, Bits b, NanPolicy policy) {
  if (a == b) return true;
  const Decoded x = decode(f, a), y = decode(f, b);
  if (x.cls != FpClass::nan || y.cls != FpClass::nan) return false;
  return policy == NanPolicy::any_nan || !f.has_sign || x.negative == y.negative;
}

Decoded decode(const FormatSpec& f, Bits b) {
  Decoded d;
  const std::uint32_t raw = b.raw & storage_mask(f);
  if (f.kind == FormatKind::integer) {
    std::int64_t v = raw;
    if (f.is_signed && (raw >> (f.bits - 1)) & 1) v -= std::int64_t{1} << f.bits;
    d.cls = v == 0 ? FpClass::zero : FpClass::normal;
    d.negative = v < 0;
    d.significand = static_cast<std::uint64_t>(v < 0 ? -v : v);
    d.exponent = 0;
    return d;
  }
  const int mb = mantissa_bits(f);
  const std::uint32_t exp_all = low_mask(f.exponent_bits);
  const std::uint32_t ef = (raw >> mb) & exp_all;
  const std::uint32_t m = raw & low_mask(mb);
  d.negative = f.has_sign && (raw & sign_bit(f)) != 0;
  switch (f.nan) {
    case NanEncoding::ieee:
      if (ef == exp_all) {
        d.cls = m == 0 ? FpClass::infinite : FpClass::nan;
        return d;
      }
      break;
    case NanEncoding::all_ones:
      if (ef == exp_all && m == low_mask(mb)) {
        d.cls = FpClass::nan;
        return d;
      }
      break;
    case NanEncoding::negative_zero:
      if (raw == sign_bit(f)) {
        d.cls = FpClass::nan;
        d.negative = false;
        return d;
      }
      break;
    case NanEncoding::none:
      break;
  }
  if (ef == 0 && f.has_subnormals) {
    d.cls = m == 0 ? FpClass::zero : FpClass::subnormal;
    d.significand = m;
    d.exponent = emin(f) - mb;
    return d;
  }
  d.cls = FpClass::normal;
  d.significand = m | (std::uint64_t{1} << mb);
  d.exponent = static_cast<int>(ef) - f.bias - mb;
  return d;
}

Bits max_finite_bits(const FormatSpec& f, bool negative) {
  if (f.kind == FormatKind::integer) {
    if (!f.is_signed) return Bits{negative ? 0u : storage_mask(f)};
    const std::uint32_t max = low_mask(f.bits - 1);
    return Bits{negative ? (max + 1) & storage_mask(f) : max};
  }
  const int mb = mantissa_bits(f);
  const std::uint32_t field = static_cast<std::uint32_t>(emax(f) + f.bias);
  const std::uint32_t mant = static_cast<std::uint32_t>(max_significand(f)) & low_mask(mb);
  return Bits{(negative ? sign_bit(f) : 0u) | (field << mb) | mant};
}

Bits canonical_nan(const FormatSpec& f, bool negative) {
  const int mb = mantissa_bits(f);
  switch (f.nan) {
    case NanEncoding::ieee:
      // Quiet NaN: exponent all ones, most significant trailing-significand bit set.
      return Bits{(negative ? sign_bit(f) : 0u) | (low_mask(f.exponent_bits) << mb) |
                  (std::uint32_t{1} << (mb - 1))};
    case NanEncoding::all_ones:
      return Bits{(negative ? sign_bit(f) : 0u) | low_mask(f.bits - (f.has_sign ? 1 : 0))};
    case NanEncoding::negative_zero:
      return Bits{sign_bit(f)};
    case NanEncoding::none:
      break;
  }
  // No NaN: +max finite (PTX ISA `cvt ... .satfinite` to e2m1/e2m3/e3m2 maps NaN to +MAX_NORM).
  return f.kind == FormatKind::integer ? Bits{0} : max_finite_bits(f, false);
}

Bits infinity(const FormatSpec& f, bool negative) {
  switch (f.non_finite) {
    case NonFinite::ieee:
      return Bits{(negative ? sign_bit(f) : 0u) | (low_mask(f.exponent_bits) << mantissa_bits(f))};
    case NonFinite::nan_only:
      return canonical_nan(f, negative);
    case NonFinite::finite_only:
      break;
  }
  return max_finite_bits(f, negative);
}

Bits zero(const FormatSpec& f, bool negative) {
  if (f.kind == FormatKind::integer || !f.signed_zero || !f.has_sign) return Bits{0};
  return Bits{negative ? sign_bit(f) : 0u};
}

namespace {

/// IEEE binary32's layout and rules with `bits` of storage (32: fp32; 16: bf16, fp32's upper half),
/// whatever the spec's name: its values convert to double through the hardware's float.
bool binary32_like(const FormatSpec& f, int bits) {
  return f.kind == FormatKind::binary_float && f.bits == bits && f.exponent_bits == 8 && f.precision == bits - 8 &&
         f.bias == 127 && f.has_sign && f.has_subnormals && f.signed_zero && f.non_finite == NonFinite::ieee &&
         f.nan == NanEncoding::ieee;
}

}  // namespace

double to_double(const FormatSpec& f, Bits b) {
  // fp32 and bf16 (the usual outputs of a check: one call per element) through the hardware's
  // float → double conversion, exact for every finite value and ±inf; NaN (whose double keeps
  // the float's payload) goes the generic way, which returns the canonical NaN with its sign.
  // Subnormals go the generic way too: under a caller's DAZ (-ffast-math) the hardware reads a
  // subnormal float as 0, and to_double is public (called outside any FpEnvGuard). The test is
  // on the exponent field, not on the value (a DAZ comparison takes a subnormal for 0).
  const bool f32 = binary32_like(f, 32);
  if (f32 || binary32_like(f, 16)) {
    const std::uint32_t u = f32 ? static_cast<std::uint32_t>(b.raw) : static_cast<std::uint32_t>(b.raw << 16);
    const std::uint32_t e = u & 0x7f800000u;
    const bool nan = e == 0x7f800000u && (u & 0x007fffffu) != 0;
    const bool subnormal = e == 0 && (u & 0x007fffffu) != 0;
    if (!nan && !subnormal) return static_cast<double>(std::bit_cast<float>(u));
  }
  const Decoded d = decode(f, b);
  switch (d.cls) {
    case FpClass::nan:
      return std::copysign(NAN, d.negative ? -1.0 : 1.0);
    case FpClass::infinite:
      return d.negative ? -INFINITY : INFINITY;
    case FpClass::zero:
      return d.negative ? -0.0 : 0.0;
    default:
      break;
  }
  const double v = std::ldexp(static_cast<double>(d.significand), d.exponent);
  return d.negative ? -v : v;
}

std::string to_hex(const FormatSpec& f, Bits b) {
  return fmt::format("0x{:0{}x}", b.raw & storage_mask(f), hex_digits(f));
}

// ---------------------------------------------------------------------------------------
// Names. Aliases are the spellings of ml_dtypes, PyTorch, NKI (`nl.` prefix), safetensors
// and numpy. `float8_e4m3` is deliberately absent: ml_dtypes uses it for an IEEE-like E4M3
// with infinities (max 240), which is not OCP E4M3FN.

namespace {
const std::array<std::pair<const FormatSpec*, std::array<std::string_view, 6>>, 15>& alias_table() {
  static const std::array<std::pair<const FormatSpec*, std::array<std::string_view, 6>>, 15> t{{
      {&fp32, {"float32", "f32", "float", "binary32", "single", ""}},
      {&fp16, {"float16", "f16", "half", "binary16", "", ""}},
      {&bf16, {"bfloat16", "bf16", "", "", "", ""}},
      {&tf32, {"tfloat32", "tf32", "", "", "", ""}},
      {&fp8_e4m3, {"float8_e4m3fn", "f8e4m3fn", "f8_e4m3", "e4m3fn", "e4m3", "fp8e4m3"}},
      {&fp8_e5m2, {"float8_e5m2", "f8e5m2", "f8_e5m2", "e5m2", "fp8e5m2", ""}},
      {&fp8_e4m3fnuz, {"float8_e4m3fnuz", "f8e4m3fnuz", "e4m3fnuz", "", "", ""}},
      {&fp8_e5m2fnuz, {"float8_e5m2fnuz", "f8e5m2fnuz", "e5m2fnuz", "", "", ""}},
      {&fp6_e3m2, {"float6_e3m2fn", "f6e3m2fn", "e3m2", "fp6e3m2", "", ""}},
      {&fp6_e2m3, {"float6_e2m3fn", "f6e2m3fn", "e2m3", "fp6e2m3", "", ""}},
      {&fp4_e2m1, {"float4_e2m1fn", "f4e2m1fn", "e2m1", "fp4", "fp4e2m1", ""}},
      {&e8m0, {"float8_e8m0fnu", "f8e8m0fnu", "e8m0fnu", "fp8_e8m0", "", ""}},
      {&int8, {"i8", "qint8", "", "", "", ""}},
      {&uint8, {"u8", "quint8", "", "", "", ""}},
      {&int32, {"i32", "", "", "", "", ""}},
  }};
  return t;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}
}  // namespace

std::span<const std::string_view> format_aliases(const FormatSpec& f) {
  for (const auto& [fmt, names] : alias_table()) {
    if (*fmt == f) {
      std::size_t n = 0;
      while (n < names.size() && !names[n].empty()) ++n;
      return {names.data(), n};
    }
  }
  return {};
}

const FormatSpec* find_format(std::string_view name) {
  std::string s = lower(name);
  for (std::string_view prefix : {"torch.", "nl.", "nki.language.", "np.", "numpy.", "ml_dtypes.", "jnp."}) {
    if (s.rfind(prefix, 0) == 0) {
      s.erase(0, prefix.size());
      break;
    }
  }
  for (const FormatSpec* f : all_formats)
    if (s == f->name) return f;
  for (const auto& [fmt, names] : alias_table())
    for (std::string_view n : names)
      if (!n.empty() && s == n) return fmt;
  return nullptr;
}

std::string format_names() {
  std::string out;
  for (const FormatSpec* f : all_formats) {
    if (!out.empty()) out += ", ";
    out += f->name;
  }
  return out;
}

}  // namespace numfid
