// `numfid bits FORMAT VALUE|0xBITS`: decode a pattern (fields, class, exact value, neighbours,
// ulp), or encode a value, correctly rounded in one step, and decode the result.
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/stream_io.h"
#include "cli/value_text.h"
#include "formats/ulp.h"

namespace numfid::cli {

namespace {

struct BitsArgs {
  std::string format;
  std::string value;
  RoundingArgs rounding;
};

std::string binary(std::uint32_t v, int width) {
  std::string s;
  for (int i = width - 1; i >= 0; --i) s += ((v >> i) & 1) != 0 ? '1' : '0';
  return s;
}

std::string field(std::uint32_t v, int width) {
  if (width == 0) return "(none)";
  return fmt::format("{} (0x{:x})", binary(v, width), v);
}

std::string class_name(const FormatSpec& f, Bits b) {
  if (!is_float(f)) return "integer";
  switch (classify(f, b)) {
    case FpClass::zero: return "zero";
    case FpClass::subnormal: return "subnormal";
    case FpClass::normal: return "normal";
    case FpClass::infinite: return "infinite";
    case FpClass::nan:
      if (f.nan == NanEncoding::ieee)  // IEEE 754-2019 §6.2.1: the first trailing-significand bit is the quiet bit
        return (b.raw >> (mantissa_bits(f) - 1)) & 1 ? "nan (quiet)" : "nan (signaling)";
      return "nan";
  }
  return "?";
}

std::string neighbour(const FormatSpec& f, Bits x, std::optional<Bits> n, bool up) {
  if (n) return fmt::format("{}  {}", to_hex(f, *n), value_text(f, *n));
  if (is_nan(f, x)) return "none (NaN is unordered)";
  if (!is_float(f)) return up ? "none (largest value)" : "none (smallest value)";
  if (!f.has_sign && !up) return "none (least value; the format has no zero and no sign)";
  return fmt::format("none ({} finite value; {} has no infinity)", up ? "largest" : "most negative", f.name);
}

void print_decoded(std::string& out, const FormatSpec& f, Bits b) {
  out += fmt::format("pattern    {} = 0b{}\n", to_hex(f, b), binary(b.raw, f.bits));
  if (is_float(f)) {
    const int mb = mantissa_bits(f);
    const std::uint32_t ef = (b.raw >> mb) & static_cast<std::uint32_t>((std::uint64_t{1} << f.exponent_bits) - 1);
    out += fmt::format("sign       {}\n", f.has_sign ? field(b.raw >> (f.bits - 1), 1) : "(none: unsigned)");
    std::string e = field(ef, f.exponent_bits);
    const FpClass cls = classify(f, b);
    if (cls == FpClass::normal) e += fmt::format("  2^{} (bias {})", static_cast<int>(ef) - f.bias, f.bias);
    if (cls == FpClass::subnormal) e += fmt::format("  subnormal: 2^{} (emin)", emin(f));
    out += fmt::format("exponent   {}\n", e);
    out += fmt::format("mantissa   {}\n", field(b.raw & static_cast<std::uint32_t>((std::uint64_t{1} << mb) - 1), mb));
  }
  out += fmt::format("class      {}\n", class_name(f, b));
  out += fmt::format("value      {}\n", value_text(f, b));
  out += fmt::format("next_up    {}\n", neighbour(f, b, next_up(f, b), true));
  out += fmt::format("next_down  {}\n", neighbour(f, b, next_down(f, b), false));
  const std::optional<int> u = ulp_exponent(f, b);
  if (!u) out += "ulp        none (NaN)\n";
  else if (!is_float(f)) out += "ulp        1\n";
  else out += fmt::format("ulp        {} = {}\n", hex_float(false, 1, *u), exact_decimal(false, 1, *u));
}

int run_bits(const BitsArgs& args) {
  const FormatSpec& f = lookup_format(args.format);
  const RoundOptions o = round_options(args.rounding);
  std::string out = fmt::format("format     {}\n", f.name);
  Bits b;
  if (looks_like_pattern(args.value)) {
    const PatternError e = parse_hex(f, args.value, b);
    if (e != PatternError::none) throw UsageError(pattern_error_message(e, f, args.value));
  } else {
    const ParsedValue v = parse_value(args.value);
    Result r;
    switch (v.kind) {
      case ParsedValue::Kind::nan: r = round_nan(f, v.negative, false); break;
      case ParsedValue::Kind::infinite: r = round_infinity(f, v.negative, o); break;
      case ParsedValue::Kind::finite: r = round_to(f, v.exact, o); break;
    }
    b = r.bits;
    out += fmt::format("input      {}\n", args.value);
    std::string mode(rounding_name(o.rounding));
    if (o.rounding == Rounding::stochastic) mode += fmt::format(" (seed {}, stream 0)", o.seed);
    if (args.rounding.saturate) mode += ", saturate";
    if (args.rounding.ftz) mode += ", ftz";
    out += fmt::format("rounding   {}\n", mode);
    out += fmt::format("exact      {}\n", (r.status & (status_inexact | status_invalid)) == 0 ? "yes" : "no");
    out += fmt::format("status     {}\n", status_names(r.status));
  }
  print_decoded(out, f, b);
  fmt::print("{}", out);
  return exit_ok;
}

}  // namespace

Command add_bits_command(CLI::App& parent) {
  auto args = std::make_shared<BitsArgs>();
  CLI::App* app = parent.add_subcommand(
      "bits", "decode a bit pattern (0x...) or encode a value (0.1, -1e-3, 0x1p-9, inf, nan) of a format");
  app->add_option("FORMAT", args->format, "format (name or alias)")->required();
  app->add_option("VALUE", args->value, "bit pattern 0xHEX, or a decimal / hex-float / inf / nan value")->required();
  add_rounding_options(*app, args->rounding);
  return {app, [args] { return run_bits(*args); }};
}

}  // namespace numfid::cli
