// Exact literal parsing (Boost.Multiprecision cpp_int) and exact value printing.
#include "cli/value_text.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdlib>

#include <boost/multiprecision/cpp_int.hpp>
#include <fmt/format.h>

#include "cli/errors.h"

namespace numfid::cli {

namespace {

using boost::multiprecision::cpp_int;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
int hex_value(char c) { return is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10; }

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return (x | 0x20) == (y | 0x20); });
}

int bit_length(const cpp_int& v) { return v == 0 ? 0 : static_cast<int>(boost::multiprecision::msb(v)) + 1; }

/// Decimal exponent digits, saturated far beyond any format's range (the literal then
/// overflows or underflows every format; magnitudes are clamped in exact_unrounded).
long long parse_exponent(std::string_view s, std::string_view literal) {
  bool neg = false;
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  if (i == s.size()) throw UsageError(fmt::format("'{}': the exponent has no digits", literal));
  long long e = 0;
  for (; i < s.size(); ++i) {
    if (!is_digit(s[i])) throw UsageError(fmt::format("'{}': malformed exponent", literal));
    e = std::min(e * 10 + (s[i] - '0'), 1000000000LL);
  }
  return neg ? -e : e;
}

/// Unrounded for (-1)^neg * num / den * 2^exp2 (num, den > 0): the quotient scaled to 101-102
/// bits, the remainder folded into the sticky bit (Unrounded's precondition: at least p + 2
/// significant bits when sticky, and p <= 32 for every format).
Unrounded exact_unrounded(bool neg, const cpp_int& num, const cpp_int& den, long long exp2) {
  const int shift = 101 - (bit_length(num) - bit_length(den));
  cpp_int q;
  cpp_int r;
  if (shift >= 0) {
    boost::multiprecision::divide_qr(cpp_int(num << shift), den, q, r);
  } else {
    boost::multiprecision::divide_qr(num, cpp_int(den << -shift), q, r);
  }
  // q < 2^102: two 64-bit words (cpp_int's conversion to __int128 is not portable).
  const auto lo = static_cast<std::uint64_t>(q & cpp_int(~std::uint64_t{0}));
  const auto hi = static_cast<std::uint64_t>(q >> 64);
  return {neg, (static_cast<uint128>(hi) << 64) | lo, static_cast<int>(exp2 - shift), r != 0};
}

/// Values beyond every format's range: the magnitude 2^(±4000) stands in for them (rounding
/// gives ±inf/max or ±0/least subnormal exactly as for the true value).
Unrounded huge(bool neg) { return {neg, uint128{1} << 100, 4000, false}; }
Unrounded tiny(bool neg) { return {neg, uint128{1} << 100, -4100, true}; }

ParsedValue finite(bool neg, const Unrounded& u) { return {ParsedValue::Kind::finite, neg, u}; }

ParsedValue parse_hex_float(bool neg, std::string_view body, std::string_view literal) {
  // body: H[.H]p[+-]D (after "0x")
  const std::size_t p = body.find_first_of("pP");
  if (p == std::string_view::npos)
    throw UsageError(fmt::format("'{}': a hex float needs a binary exponent (e.g. 0x1.8p-3); "
                                 "a bit pattern takes no sign, point or exponent",
                                 literal));
  const std::string_view mant = body.substr(0, p);
  cpp_int n = 0;
  long long frac_digits = 0;
  bool seen_point = false;
  int digits = 0;
  for (char c : mant) {
    if (c == '.' && !seen_point) {
      seen_point = true;
      continue;
    }
    if (!is_hex(c)) throw UsageError(fmt::format("'{}': malformed hex float", literal));
    n = n * 16 + hex_value(c);
    ++digits;
    if (seen_point) ++frac_digits;
  }
  if (digits == 0) throw UsageError(fmt::format("'{}': the hex float has no digits", literal));
  const long long e2 = parse_exponent(body.substr(p + 1), literal) - 4 * frac_digits;
  if (n == 0) return finite(neg, {neg, 0, 0, false});
  const long long top = e2 + bit_length(n) - 1;  // floor(log2 |v|)
  if (top > 4000) return finite(neg, huge(neg));
  if (top < -4000) return finite(neg, tiny(neg));
  return finite(neg, exact_unrounded(neg, n, 1, e2));
}

ParsedValue parse_decimal(bool neg, std::string_view body, std::string_view literal) {
  const std::size_t e = body.find_first_of("eE");
  const std::string_view mant = body.substr(0, e);
  std::string digits;  // significant digits of N, leading zeros dropped
  long long frac_digits = 0;
  bool seen_point = false;
  int count = 0;
  for (char c : mant) {
    if (c == '.' && !seen_point) {
      seen_point = true;
      continue;
    }
    if (!is_digit(c))
      throw UsageError(fmt::format("'{}' is not a number (decimal like 0.1, -1e-3, 448; hex float like 0x1p-9; "
                                   "inf; nan; or a bit pattern like 0x7e)",
                                   literal));
    ++count;
    if (seen_point) ++frac_digits;
    if (!digits.empty() || c != '0') digits += c;
  }
  if (count == 0) throw UsageError(fmt::format("'{}': the number has no digits", literal));
  const long long e10 = (e == std::string_view::npos ? 0 : parse_exponent(body.substr(e + 1), literal)) - frac_digits;
  if (digits.empty()) return finite(neg, {neg, 0, 0, false});
  // |v| = N * 10^e10 lies in [10^(D-1+e10), 10^(D+e10)); 10^400 and 10^-400 are far outside
  // every format (fp32: 3.4e38 .. 1.4e-45), so beyond them only the side matters.
  const auto d = static_cast<long long>(digits.size());
  if (d - 1 + e10 > 400) return finite(neg, huge(neg));
  if (d + e10 < -400) return finite(neg, tiny(neg));
  const cpp_int n(digits);
  const cpp_int ten = 10;
  if (e10 >= 0) return finite(neg, exact_unrounded(neg, n * boost::multiprecision::pow(ten, static_cast<unsigned>(e10)), 1, 0));
  return finite(neg, exact_unrounded(neg, n, boost::multiprecision::pow(ten, static_cast<unsigned>(-e10)), 0));
}

/// Decimal digits of the exact value sig * 2^exp (sig > 0), and the power of ten of the
/// last digit: value = digits * 10^pow10.
std::pair<std::string, long long> decimal_digits(std::uint64_t sig, int exp) {
  cpp_int n = sig;
  long long pow10 = 0;
  if (exp >= 0) {
    n <<= exp;
  } else {
    // sig / 2^k = sig * 5^k / 10^k
    n *= boost::multiprecision::pow(cpp_int(5), static_cast<unsigned>(-exp));
    pow10 = exp;
  }
  std::string s = n.str();
  while (s.size() > 1 && s.back() == '0') {
    s.pop_back();
    ++pow10;
  }
  return {s, pow10};
}

}  // namespace

bool looks_like_pattern(std::string_view t) {
  if (t.size() < 3 || t[0] != '0' || (t[1] != 'x' && t[1] != 'X')) return false;
  return std::all_of(t.begin() + 2, t.end(), is_hex);
}

ParsedValue parse_value(std::string_view text) {
  // `shown` is the literal as messages print it: control and non-ASCII bytes as \xNN, so that
  // a literal holding an ANSI escape or a newline cannot break the one-line message.
  std::string shown;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) shown += fmt::format("\\x{:02x}", u);
    else shown += c;
  }
  std::string_view body = text;
  bool neg = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    neg = body[0] == '-';
    body.remove_prefix(1);
  }
  if (iequals(body, "inf") || iequals(body, "infinity")) return {ParsedValue::Kind::infinite, neg, {}};
  if (iequals(body, "nan")) return {ParsedValue::Kind::nan, neg, {}};
  if (body.size() >= 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X'))
    return parse_hex_float(neg, body.substr(2), shown);
  return parse_decimal(neg, body, shown);
}

std::string hex_float(bool negative, std::uint64_t significand, int exponent) {
  const char* sign = negative ? "-" : "";
  if (significand == 0) return fmt::format("{}0x0p+0", sign);
  // Normalise to 1.xxx: the leading bit of the significand is the units digit.
  const int lead = 63 - std::countl_zero(significand);
  const int e = exponent + lead;
  std::uint64_t frac = significand & ((std::uint64_t{1} << lead) - 1);
  int frac_bits = lead;
  while (frac_bits % 4 != 0) {  // pad to whole hex digits
    frac <<= 1;
    ++frac_bits;
  }
  std::string digits = frac_bits == 0 ? "" : fmt::format("{:0{}x}", frac, frac_bits / 4);
  while (!digits.empty() && digits.back() == '0') digits.pop_back();
  return fmt::format("{}0x1{}{}p{:+d}", sign, digits.empty() ? "" : ".", digits, e);
}

std::string exact_decimal(bool negative, std::uint64_t significand, int exponent) {
  const std::string sign = negative ? "-" : "";
  if (significand == 0) return sign + "0";
  auto [s, pow10] = decimal_digits(significand, exponent);
  const long long n = static_cast<long long>(s.size());
  const long long sci = n - 1 + pow10;  // decimal exponent of the leading digit
  if (sci < -6 || sci > 20) {
    std::string mant = s.substr(0, 1);
    if (n > 1) mant += "." + s.substr(1);
    return fmt::format("{}{}e{}{:02d}", sign, mant, sci < 0 ? '-' : '+', sci < 0 ? -sci : sci);
  }
  if (pow10 >= 0) return sign + s + std::string(static_cast<std::size_t>(pow10), '0');
  if (-pow10 >= n) return sign + "0." + std::string(static_cast<std::size_t>(-pow10 - n), '0') + s;
  return sign + s.substr(0, static_cast<std::size_t>(n + pow10)) + "." + s.substr(static_cast<std::size_t>(n + pow10));
}

std::string hex_float(const FormatSpec& f, Bits b) {
  const Decoded d = decode(f, b);
  return hex_float(d.negative, d.significand, d.exponent);
}

std::string exact_decimal(const FormatSpec& f, Bits b) {
  const Decoded d = decode(f, b);
  return exact_decimal(d.negative, d.significand, d.exponent);
}

std::string value_text(const FormatSpec& f, Bits b) {
  const Decoded d = decode(f, b);
  if (d.cls == FpClass::nan) return "nan";
  if (d.cls == FpClass::infinite) return d.negative ? "-inf" : "inf";
  if (f.kind == FormatKind::integer) return exact_decimal(f, b);
  return hex_float(f, b) + " = " + exact_decimal(f, b);
}

}  // namespace numfid::cli
