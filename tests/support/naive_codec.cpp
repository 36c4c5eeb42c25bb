// Naive decode/encode of every format from the spec's field layout (see naive_codec.h).
#include "tests/support/naive_codec.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <array>

#include <fmt/format.h>

namespace numfid::test {

namespace {

struct Fields {
  std::uint32_t sign, exponent, trailing;
};

std::uint32_t ones(int n) { return n >= 32 ? 0xffffffffu : (1u << n) - 1u; }

Fields fields(const FormatSpec& f, std::uint32_t raw) {
  const int t = f.precision - 1;
  return {f.has_sign ? (raw >> (f.bits - 1)) & 1u : 0u, (raw >> t) & ones(f.exponent_bits), raw & ones(t)};
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "naive_codec: %s\n", what.c_str());
  std::abort();
}

}  // namespace

double naive_decode(const FormatSpec& f, Bits b) {
  const std::uint32_t raw = b.raw & ones(f.bits);
  if (f.kind == FormatKind::integer) {
    if (f.is_signed && (raw >> (f.bits - 1)) != 0) return static_cast<double>(raw) - std::ldexp(1.0, f.bits);
    return static_cast<double>(raw);
  }
  const Fields x = fields(f, raw);
  const int t = f.precision - 1;
  const double sign = x.sign != 0 ? -1.0 : 1.0;
  const std::uint32_t top = ones(f.exponent_bits);
  // Non-finite encodings, one rule per NanEncoding (IEEE 754 §3.4; OCP OFP8 §5.1 Table 1;
  // OCP MX §5.4.1; FNUZ: the -0 pattern is the NaN).
  // A NaN keeps the sign bit where the format has one (FNUZ: its only NaN reads as +NaN).
  const double nan = std::copysign(NAN, sign);
  if (f.nan == NanEncoding::ieee && x.exponent == top) return x.trailing == 0 ? sign * INFINITY : nan;
  if (f.nan == NanEncoding::all_ones && x.exponent == top && x.trailing == ones(t)) return nan;
  if (f.nan == NanEncoding::negative_zero && x.sign == 1 && x.exponent == 0 && x.trailing == 0) return NAN;
  if (x.exponent == 0 && f.has_subnormals)  // 0.trailing * 2^(1 - bias)
    return sign * std::ldexp(static_cast<double>(x.trailing), 1 - f.bias - t);
  // 1.trailing * 2^(exponent - bias)
  return sign *
         std::ldexp(1.0 + std::ldexp(static_cast<double>(x.trailing), -t), static_cast<int>(x.exponent) - f.bias);
}

bool naive_is_subnormal(const FormatSpec& f, Bits b) {
  if (f.kind != FormatKind::binary_float || !f.has_subnormals) return false;
  const Fields x = fields(f, b.raw);
  return x.exponent == 0 && x.trailing != 0;
}

namespace {

/// The encoding of `v`, or an explanation of why there is none.
std::optional<Bits> encode(const FormatSpec& f, double v, std::string* why) {
  const auto fail = [&](const char* reason) -> std::optional<Bits> {
    if (why != nullptr) *why = fmt::format("naive_encode({}, {:a}): {}", f.name, v, reason);
    return std::nullopt;
  };
  if (std::isnan(v) || std::isinf(v)) return fail("not finite");
  if (f.kind == FormatKind::integer) {
    const double lo = f.is_signed ? -std::ldexp(1.0, f.bits - 1) : 0.0;
    const double hi = f.is_signed ? std::ldexp(1.0, f.bits - 1) - 1 : std::ldexp(1.0, f.bits) - 1;
    if (v != std::trunc(v) || v < lo || v > hi) return fail("not representable");
    const auto i = static_cast<std::int64_t>(v);
    return Bits{static_cast<std::uint32_t>(static_cast<std::uint64_t>(i) & ones(f.bits))};
  }
  const int t = f.precision - 1;
  const bool neg = std::signbit(v);
  if (neg && !f.has_sign && v != 0) return fail("negative");
  const std::uint32_t sign = neg && f.has_sign ? 1u << (f.bits - 1) : 0u;
  const double a = std::fabs(v);
  if (a == 0) {
    if (!f.has_subnormals) return fail("no zero");
    return Bits{f.signed_zero ? sign : 0u};
  }
  int e2 = 0;
  (void)std::frexp(a, &e2);  // a = m * 2^e2, m in [0.5, 1): the unbiased exponent is e2 - 1
  const int e = e2 - 1;
  const int emin_normal = f.has_subnormals ? 1 - f.bias : -f.bias;
  double field;
  double trailing;
  if (e < emin_normal) {
    if (!f.has_subnormals) return fail("below the range");
    field = 0;
    trailing = std::ldexp(a, t - emin_normal);
  } else {
    field = e + f.bias;
    trailing = std::ldexp(a, t - e) - std::ldexp(1.0, t);
  }
  if (trailing != std::trunc(trailing) || trailing < 0 || trailing > ones(t) || field > ones(f.exponent_bits))
    return fail("not representable");
  const Bits out{sign | (static_cast<std::uint32_t>(field) << t) | static_cast<std::uint32_t>(trailing)};
  if (!(naive_decode(f, out) == v)) return fail("lands on a non-finite pattern");
  return out;
}

}  // namespace

Bits naive_encode(const FormatSpec& f, double v) {
  std::string why;
  const std::optional<Bits> b = encode(f, v, &why);
  if (!b) die(why);
  return *b;
}

std::optional<Bits> naive_try_encode(const FormatSpec& f, double v) { return encode(f, v, nullptr); }

namespace {

NaiveLimits compute_limits(const FormatSpec& f) {
  if (f.kind != FormatKind::binary_float) die(fmt::format("naive_limits({}): not a float format", f.name));
  // Positive patterns grow with their value: the largest finite one is the first finite
  // pattern going down from the top (skipping NaN/inf), the smallest positive the first
  // non-zero one going up.
  const std::uint32_t top = f.has_sign ? ones(f.bits - 1) : ones(f.bits);
  NaiveLimits l{};
  for (std::uint32_t r = top;; --r) {
    const double v = naive_decode(f, Bits{r});
    if (std::isfinite(v)) {
      l.max_finite = v;
      l.max_bits = Bits{r};
      break;
    }
  }
  for (std::uint32_t r = 0;; ++r) {
    const double v = naive_decode(f, Bits{r});
    if (v > 0) {
      l.min_positive = v;
      break;
    }
  }
  l.min_normal = f.has_subnormals ? naive_decode(f, Bits{1u << (f.precision - 1)}) : l.min_positive;
  return l;
}

}  // namespace

const NaiveLimits& naive_limits(const FormatSpec& f) {
  // Computed once for the float formats of the table (thread-safe static initialisation);
  // the lookup is on every oracle call, so it is a short linear search, not a locked map.
  struct Table {
    std::array<const FormatSpec*, all_formats.size()> spec{};
    std::array<NaiveLimits, all_formats.size()> limits{};
  };
  static const Table table = [] {
    Table t;
    for (std::size_t i = 0; i < all_formats.size(); ++i) {
      t.spec[i] = all_formats[i];
      if (is_float(*all_formats[i])) t.limits[i] = compute_limits(*all_formats[i]);
    }
    return t;
  }();
  for (std::size_t i = 0; i < table.spec.size(); ++i)
    if (table.spec[i] == &f && is_float(f)) return table.limits[i];
  die(fmt::format("naive_limits({}): not a float format of the table", f.name));
}

Bits naive_nan(const FormatSpec& f, bool negative) {
  if (f.kind == FormatKind::integer) return Bits{0};
  const int t = f.precision - 1;
  const std::uint32_t sign = negative && f.has_sign ? 1u << (f.bits - 1) : 0u;
  switch (f.nan) {
    case NanEncoding::ieee: return Bits{sign | (ones(f.exponent_bits) << t) | (1u << (t - 1))};
    case NanEncoding::all_ones: return Bits{sign | (ones(f.exponent_bits) << t) | ones(t)};
    case NanEncoding::negative_zero: return Bits{1u << (f.bits - 1)};
    case NanEncoding::none: break;
  }
  return naive_limits(f).max_bits;
}

Bits naive_inf(const FormatSpec& f, bool negative) {
  if (f.non_finite != NonFinite::ieee) die(fmt::format("naive_inf: {} has no infinity", f.name));
  return Bits{(negative ? 1u << (f.bits - 1) : 0u) | (ones(f.exponent_bits) << (f.precision - 1))};
}

std::string show(const FormatSpec& f, Bits b) {
  const double v = naive_decode(f, b);
  return fmt::format("0x{:0{}x} ({:a} = {:g})", b.raw & ones(f.bits), (f.bits + 3) / 4, v, v);
}

}  // namespace numfid::test
