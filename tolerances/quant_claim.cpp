// The integer-GEMM options of the claim text form (tolerances/quant_claim.h): parsing, the
// checks of what fits together, and the canonical text.
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "formats/error.h"
#include "numerics/int_gemm.h"
#include "tolerances/quant_check.h"

namespace numfid {

bool is_integer_claim(const ClaimSpec& c) { return c.in != nullptr && c.in->kind == FormatKind::integer; }

namespace detail {

namespace {

constexpr std::string_view kValueOptions[] = {"--zero-point-a", "--zero-point-b", "--out-scale", "--out-zero-point",
                                              "--requant-rounding"};
constexpr std::string_view kFlags[] = {"--saturate", "--requant-fixed-point"};

std::int64_t parse_integer(std::string_view opt, const std::string& s) {
  const char* begin = s.c_str();
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(begin, &end, 10);
  if (s.empty() || end != begin + s.size() || errno == ERANGE || v < -(1LL << 31) || v >= (1LL << 31))
    throw InputError(fmt::format("{} '{}': not an integer (a zero point, within the format's range)", opt, s));
  return v;
}

/// A comma-separated list of numbers, or nullopt when `s` does not look like one (a file).
std::optional<std::vector<double>> parse_scales(const std::string& s) {
  const char c0 = s.empty() ? '\0' : s[0];
  const bool numeric = (c0 >= '0' && c0 <= '9') || c0 == '.' || c0 == '-' || c0 == '+';
  if (!numeric) return std::nullopt;
  std::vector<double> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const std::size_t comma = std::min(s.find(',', pos), s.size());
    const std::string item = s.substr(pos, comma - pos);
    const char* begin = item.c_str();
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(begin, &end);
    if (item.empty() || end != begin + item.size() || errno == ERANGE)
      throw InputError(fmt::format("--out-scale '{}': '{}' is not a number (give S, S0,S1,... or a file)", s, item));
    if (!(v > 0) || !std::isfinite(v))
      throw InputError(fmt::format("--out-scale '{}': {} is not a positive finite scale", s, item));
    out.push_back(v);
    pos = comma + 1;
  }
  return out;
}

void check_range(std::string_view opt, std::optional<std::int64_t> z, const FormatSpec& f) {
  if (z && (*z < integer_min(f) || *z > integer_max(f)))
    throw InputError(fmt::format("{} {}: outside {}'s range [{}, {}]", opt, *z, f.name, integer_min(f), integer_max(f)));
}

}  // namespace

bool is_quant_option(std::string_view opt) {
  for (std::string_view o : kValueOptions)
    if (o == opt) return true;
  return is_quant_flag(opt);
}

bool is_quant_flag(std::string_view opt) {
  for (std::string_view o : kFlags)
    if (o == opt) return true;
  return false;
}

std::string_view quant_option_names() {
  return "--zero-point-a, --zero-point-b, --out-scale, --out-zero-point, --requant-rounding, --saturate, "
         "--requant-fixed-point";
}

bool parse_quant_option(QuantClaim& q, std::string_view opt, const std::string& value) {
  if (opt == "--zero-point-a") q.zero_point_a = parse_integer(opt, value);
  else if (opt == "--zero-point-b") q.zero_point_b = parse_integer(opt, value);
  else if (opt == "--out-zero-point") q.out_zero_point = parse_integer(opt, value);
  else if (opt == "--out-scale") {
    if (value.empty()) throw InputError("--out-scale needs a value (S, S0,S1,... or a file)");
    q.out_scale_text = value;
    q.out_scale = parse_scales(value).value_or(std::vector<double>{});
  } else if (opt == "--requant-rounding") {
    const Rounding r = rounding_named(value, "--requant-rounding");
    if (r == Rounding::stochastic)
      throw InputError("--requant-rounding stochastic: a requantisation rounds deterministically (rne, rna, rtz, rup, rdn)");
    q.requant_rounding = r;
  } else if (opt == "--saturate") q.saturate = true;
  else if (opt == "--requant-fixed-point") q.fixed_point = true;
  else return false;
  return true;
}

void validate_quant_claim(const ClaimSpec& c) {
  const QuantClaim& q = c.quant;
  if (!is_integer_claim(c)) {
    if (c.in_b && c.in_b->kind == FormatKind::integer)
      throw InputError(fmt::format("--in-b {} is an integer format but --in {} is not: an integer GEMM takes integer "
                                   "A and B",
                                   c.in_b->name, c.in->name));
    if (q.any())
      throw InputError(fmt::format("the integer-GEMM options ({}) need integer inputs (--in int8|uint8), not --in {}",
                                   quant_option_names(), c.in->name));
    return;
  }
  const FormatSpec& fa = *c.in;
  const FormatSpec& fb = c.in_b ? *c.in_b : fa;
  for (const FormatSpec* f : {&fa, &fb})
    if (f->kind != FormatKind::integer || f->bits != 8)
      throw InputError(fmt::format("integer GEMM: {} operands are not supported (int8 or uint8 for A and B)", f->name));
  if (*c.acc != int32)
    throw InputError(fmt::format("--acc {}: integer inputs accumulate in int32 (give --acc int32: an int32 accumulator "
                                 "is exact until it overflows)",
                                 c.acc->name));
  if (c.acc_rounding != Rounding::rne || c.products_rounded || c.acc_ftz || c.cast || c.plan || c.profile)
    throw InputError("integer GEMM: --acc-rounding, --products-rounded, --ftz, --cast, --plan and --profile do not "
                     "apply (integer products and sums are exact, and their order does not matter)");
  if (c.out_rounding)
    throw InputError("integer GEMM: the output's rounding is the requantisation's: give --requant-rounding R");
  if (c.ulps || c.compute) throw InputError("integer GEMM: --ulps and --compute do not apply");
  check_range("--zero-point-a", q.zero_point_a, fa);
  check_range("--zero-point-b", q.zero_point_b, fb);
  const FormatSpec& out = *c.out;
  if (out.kind == FormatKind::integer) {
    check_range("--out-zero-point", q.out_zero_point, out);
  } else {
    if (q.out_zero_point)
      throw InputError(fmt::format("--out-zero-point: a float output ({}) has no zero point", out.name));
    if (q.fixed_point)
      throw InputError(fmt::format("--requant-fixed-point: the fixed-point pipeline gives integers, not {}", out.name));
  }
  if (q.fixed_point && q.requant_rounding)
    throw InputError("--requant-fixed-point rounds as gemmlowp does (twice, ties toward +inf then away from zero): it excludes "
                     "--requant-rounding");
}

void append_quant_claim(std::string& text, const QuantClaim& q) {
  if (q.zero_point_a) append_claim_option(text, "--zero-point-a", fmt::format("{}", *q.zero_point_a));
  if (q.zero_point_b) append_claim_option(text, "--zero-point-b", fmt::format("{}", *q.zero_point_b));
  if (!q.out_scale_text.empty()) append_claim_option(text, "--out-scale", q.out_scale_text);
  if (q.out_zero_point) append_claim_option(text, "--out-zero-point", fmt::format("{}", *q.out_zero_point));
  if (q.requant_rounding) append_claim_option(text, "--requant-rounding", rounding_name(*q.requant_rounding));
  if (q.saturate) append_claim_flag(text, "--saturate");
  if (q.fixed_point) append_claim_flag(text, "--requant-fixed-point");
}

}  // namespace detail
}  // namespace numfid
