// The integer-GEMM options of the claim text form (tolerances/quant_claim.h): parsing, the
// checks of what fits together, and the canonical text.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>

#include "formats/error.h"
#include "numerics/int_gemm.h"
#include "numerics/profile.h"
#include "tolerances/quant_check.h"

namespace numfid {

bool is_integer_claim(const ClaimSpec& c) { return c.in != nullptr && c.in->kind == FormatKind::integer; }

bool is_scaled_profile(const ClaimSpec& c) { return c.profile && c.profile->model == ProfileModel::scaled_gemm; }

bool is_scaled_claim(const ClaimSpec& c) { return c.quant.scaled() || is_scaled_profile(c); }

std::string scaled_profile_claim(const Profile& p) {
  if (p.model != ProfileModel::scaled_gemm || !p.block_scaling) return {};
  const BlockScaling& bs = *p.block_scaling;
  std::string t;
  std::string blocks = fmt::format("{}x{}", bs.block_a.rows, bs.block_a.k);
  if (bs.block_b.rows != bs.block_a.rows || bs.block_b.k != bs.block_a.k)
    blocks += fmt::format(",{}x{}", bs.block_b.rows, bs.block_b.k);
  append_claim_option(t, "--scale-block", blocks);
  append_claim_option(t, "--scale-format", bs.scale_format->name);
  if (bs.promote_every) append_claim_option(t, "--promote-every", fmt::format("{}", *bs.promote_every));
  if (bs.partials) {
    append_claim_option(t, "--profile", bs.partials->name);
  } else {
    append_claim_option(t, "--acc", p.reduction.acc.format->name);
    if (p.reduction.acc.rounding.rounding != Rounding::rne)
      append_claim_option(t, "--acc-rounding", rounding_name(p.reduction.acc.rounding.rounding));
  }
  if (p.reduction.output_rounding.rounding != Rounding::rne)
    append_claim_option(t, "--out-rounding", rounding_name(p.reduction.output_rounding.rounding));
  return t;
}

ClaimSpec resolve_scaled_profile(const ClaimSpec& c) {
  if (!is_scaled_profile(c)) return c;
  const Profile& p = *c.profile;
  const BlockScaling& bs = *p.block_scaling;
  const QuantClaim& q = c.quant;
  const std::string stands_for = scaled_profile_claim(p);
  // A recipe fixes its layout and arithmetic: an explicit value next to it is refused, not
  // silently preferred (the explicit claim the profile stands for is the way to vary one).
  const auto conflict = [&](std::string_view opt) {
    throw InputError(fmt::format("{}: profile {} fixes it (the profile stands for {}); give the profile or the explicit "
                                 "claim with your changes, not both",
                                 opt, p.name, stands_for));
  };
  if (q.scale_block_a) conflict("--scale-block");
  if (q.scale_format) conflict("--scale-format");
  if (q.promote_every) conflict("--promote-every");
  if (*c.acc != fp32 || c.acc_rounding != Rounding::rne || c.products_rounded || c.acc_ftz || c.acc_daz || c.acc_zero_start)
    conflict("--acc/--acc-rounding/--products-rounded/--ftz/--daz/--zero-start");
  std::string allowed;
  for (const FormatSpec* f : bs.operands) allowed += fmt::format("{}{}", allowed.empty() ? "" : ", ", f->name);
  for (const auto& [opt, f] : {std::pair{"--in", c.in}, std::pair{"--in-b", c.in_b}})
    if (f && std::find(bs.operands.begin(), bs.operands.end(), f) == bs.operands.end())
      throw InputError(fmt::format("{} {}: profile {} is for {} operands", opt, f->name, p.name, allowed));
  if (q.scale_a_text.empty() || q.scale_b_text.empty())
    throw InputError(fmt::format("profile {} is a block-scaled GEMM recipe: give the scale tensors --scale-a FILE and "
                                 "--scale-b FILE (layout {})",
                                 p.name, stands_for));
  ClaimSpec r = c;
  QuantClaim& rq = r.quant;
  rq.scale_block_a = bs.block_a;
  if (bs.block_b.rows != bs.block_a.rows || bs.block_b.k != bs.block_a.k) rq.scale_block_b = bs.block_b;
  rq.scale_format = bs.scale_format;
  rq.promote_every = bs.promote_every;
  if (!r.out_rounding) r.out_rounding = p.reduction.output_rounding.rounding;
  if (bs.partials) {
    r.profile = bs.partials;
    r.profile_name = bs.partials->name;
  } else {
    r.profile = nullptr;
    r.profile_name.clear();
    r.acc = p.reduction.acc.format;
    r.acc_rounding = p.reduction.acc.rounding.rounding;
  }
  rq.recipe = fmt::format("profile {} (v{})", p.name, p.version);
  rq.recipe_claim = stands_for;
  return r;
}

void attach_operand_scales(ClaimSpec& claim, std::vector<double> a, std::vector<double> b, const std::string& name_a,
                           const std::string& name_b) {
  QuantClaim& q = claim.quant;
  if (q.scale_a_text.empty()) q.scale_a_text = name_a;
  if (q.scale_b_text.empty()) q.scale_b_text = name_b;
  q.scale_a = std::move(a);
  q.scale_b = std::move(b);
}

namespace detail {

namespace {

constexpr std::string_view kValueOptions[] = {"--zero-point-a", "--zero-point-b", "--out-scale", "--out-zero-point",
                                              "--requant-rounding", "--scale-a", "--scale-b", "--scale-block",
                                              "--promote-every", "--scale-format"};
constexpr std::string_view kFlags[] = {"--requant-fixed-point"};

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
std::optional<std::vector<double>> parse_scales(const std::string& s, std::string_view opt = "--out-scale") {
  const char c0 = s.empty() ? '\0' : s[0];
  std::string lower;
  for (const char ch : s.substr(0, s.find(','))) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  // "nan", "inf" and "infinity" are numbers strtod reads (refused below), not file names.
  const bool numeric = (c0 >= '0' && c0 <= '9') || c0 == '.' || c0 == '-' || c0 == '+' || lower == "nan" ||
                       lower == "inf" || lower == "infinity";
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
    if (item.empty() || end != begin + item.size())
      throw InputError(fmt::format("{} '{}': '{}' is not a number (give S, S0,S1,... or a file)", opt, s, item));
    // ERANGE: beyond a double's range (v = ±inf or 0, refused below) or subnormal (kept: exact).
    if (!(v > 0) || !std::isfinite(v))
      throw InputError(fmt::format("{} '{}': {} is not a positive finite scale", opt, s, item));
    out.push_back(v);
    pos = comma + 1;
  }
  return out;
}

/// "RxK" -> the block; InputError naming --scale-block otherwise.
ScaleBlock parse_block(const std::string& all, const std::string& s) {
  const std::size_t x = s.find('x');
  const auto number = [&](const std::string& t) {
    bool ok = !t.empty() && t.size() <= 12;
    for (const char ch : t) ok = ok && ch >= '0' && ch <= '9';
    const long long v = ok ? std::stoll(t) : 0;
    if (v <= 0)
      throw InputError(fmt::format("--scale-block '{}': '{}' is not RxK with positive integers R and K (e.g. 1x128, "
                                   "128x128, 1x32)",
                                   all, s));
    return static_cast<std::int64_t>(v);
  };
  if (x == std::string::npos) number("");
  return {number(s.substr(0, x)), number(s.substr(x + 1))};
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
  return "--zero-point-a, --zero-point-b, --out-scale, --out-zero-point, --requant-rounding, "
         "--requant-fixed-point; scaled float GEMM: --scale-a, --scale-b, --scale-block, --scale-format, --promote-every";
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
  } else if (opt == "--scale-a" || opt == "--scale-b") {
    if (value.empty()) throw InputError(fmt::format("{} needs a value (a scale or a file)", opt));
    auto scales = parse_scales(value, opt).value_or(std::vector<double>{});
    if (scales.size() > 1) throw InputError(fmt::format("{} '{}': one scale, or a file of scales", opt, value));
    (opt == "--scale-a" ? q.scale_a_text : q.scale_b_text) = value;
    (opt == "--scale-a" ? q.scale_a : q.scale_b) = std::move(scales);
  } else if (opt == "--scale-block") {
    const std::size_t comma = value.find(',');
    q.scale_block_a = parse_block(value, value.substr(0, comma));
    if (comma != std::string::npos) q.scale_block_b = parse_block(value, value.substr(comma + 1));
  } else if (opt == "--scale-format") {
    const FormatSpec* f = find_format(value);
    if (f == nullptr || (*f != fp32 && *f != e8m0 && *f != fp8_e4m3))
      throw InputError(fmt::format("--scale-format '{}': the scales' format is fp32, e8m0 or fp8_e4m3", value));
    q.scale_format = f;
  } else if (opt == "--promote-every") {
    const std::int64_t v = parse_integer(opt, value);
    if (v <= 0) throw InputError(fmt::format("--promote-every '{}': a positive number of products", value));
    q.promote_every = v;
  } else if (opt == "--requant-fixed-point") q.fixed_point = true;
  else return false;
  return true;
}

void validate_quant_claim(const ClaimSpec& c) {
  if (is_scaled_profile(c)) {  // a scaled-gemm profile: the explicit claim it stands for
    validate_quant_claim(resolve_scaled_profile(c));
    return;
  }
  const QuantClaim& q = c.quant;
  if (q.scaled()) {
    if (is_integer_claim(c) || q.any())
      throw InputError("the scaled-GEMM options (--scale-a, --scale-b, --scale-block, --scale-format, --promote-every) "
                       "are for float "
                       "operands; an integer GEMM takes --zero-point-a/b and --out-scale");
    for (const auto& [f, option] : {std::pair{c.in, "--in"}, std::pair{c.in_b, "--in-b"}})
      if (f && (f->kind != FormatKind::binary_float || f->bits > 16))
        throw InputError(fmt::format("scaled GEMM: {} {} is not a narrow float operand format (fp8, fp6, fp4, bf16, "
                                     "fp16)",
                                     option, f->name));
    if (c.cast || c.plan || c.products_rounded || c.acc_ftz || c.acc_daz || c.acc_zero_start)
      throw InputError("scaled GEMM: --cast, --plan, --products-rounded, --ftz, --daz and --zero-start do not apply (each partial sum is "
                       "summed in the accumulator, or by the profile's tensor-core model)");
    if (c.acc->kind != FormatKind::binary_float || c.acc->bits > 32 || c.acc_rounding == Rounding::stochastic)
      throw InputError(fmt::format("scaled GEMM: --acc {} {}: the partial sums' accumulator is a float format of at "
                                   "most 32 bits with a deterministic rounding",
                                   c.acc->name, rounding_name(c.acc_rounding)));
    if (q.scale_block_a && (q.scale_a_text.empty() || q.scale_b_text.empty()))
      throw InputError("--scale-block needs --scale-a and --scale-b (the scale tensors it lays out)");
    // --promote-every / --scale-format qualify the scales; one operand's scale alone would leave
    // the other's silently 1 (per tensor scales of 1 are --scale-a 1 --scale-b 1).
    const bool has_a = !q.scale_a_text.empty() || !q.scale_a.empty(), has_b = !q.scale_b_text.empty() || !q.scale_b.empty();
    if (!has_a || !has_b)
      throw InputError(fmt::format("scaled GEMM: {} without {}: a scaled GEMM takes both operands' scales (per-tensor "
                                   "scales of 1 are --scale-a 1 --scale-b 1)",
                                   has_a   ? "--scale-a"
                                   : has_b ? "--scale-b"
                                   : q.promote_every ? "--promote-every"
                                                     : "--scale-format",
                                   has_a ? "--scale-b" : has_b ? "--scale-a" : "--scale-a and --scale-b"));
    if (c.ulps || c.compute) throw InputError("scaled GEMM: --ulps and --compute do not apply");
    return;
  }
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
  if (*c.acc != int32) {
    // Named as given: without --acc the fp32 in the message would be an option nobody wrote.
    if (std::find(c.given.begin(), c.given.end(), "--acc") == c.given.end())
      throw InputError(fmt::format("integer inputs accumulate in int32: give --acc int32 (without --acc the accumulator "
                                   "is {}, the float default; an int32 accumulator is exact until it overflows)",
                                   c.acc->name));
    throw InputError(fmt::format("--acc {}: integer inputs accumulate in int32 (give --acc int32: an int32 accumulator "
                                 "is exact until it overflows)",
                                 c.acc->name));
  }
  if (c.acc_rounding != Rounding::rne || c.products_rounded || c.acc_ftz || c.acc_daz || c.acc_zero_start || c.cast || c.plan || c.profile)
    throw InputError("integer GEMM: --acc-rounding, --products-rounded, --ftz, --daz, --zero-start, --cast, --plan and --profile do not "
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

void append_quant_claim(std::string& text, const QuantClaim& q, bool saturate) {
  if (q.zero_point_a) append_claim_option(text, "--zero-point-a", fmt::format("{}", *q.zero_point_a));
  if (q.zero_point_b) append_claim_option(text, "--zero-point-b", fmt::format("{}", *q.zero_point_b));
  if (!q.out_scale_text.empty()) append_claim_option(text, "--out-scale", q.out_scale_text);
  if (q.out_zero_point) append_claim_option(text, "--out-zero-point", fmt::format("{}", *q.out_zero_point));
  if (q.requant_rounding) append_claim_option(text, "--requant-rounding", rounding_name(*q.requant_rounding));
  if (saturate) append_claim_flag(text, "--saturate");  // where integer claims have always had it
  if (q.fixed_point) append_claim_flag(text, "--requant-fixed-point");
  if (!q.scale_a_text.empty()) append_claim_option(text, "--scale-a", q.scale_a_text);
  if (!q.scale_b_text.empty()) append_claim_option(text, "--scale-b", q.scale_b_text);
  if (q.scale_block_a) {
    std::string b = fmt::format("{}x{}", q.scale_block_a->rows, q.scale_block_a->k);
    if (q.scale_block_b) b += fmt::format(",{}x{}", q.scale_block_b->rows, q.scale_block_b->k);
    append_claim_option(text, "--scale-block", b);
  }
  if (q.scale_format) append_claim_option(text, "--scale-format", q.scale_format->name);
  if (q.promote_every) append_claim_option(text, "--promote-every", fmt::format("{}", *q.promote_every));
}

}  // namespace detail
}  // namespace numfid
