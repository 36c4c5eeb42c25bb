// What the subcommands share: format and rounding lookup with helpful errors, the common
// rounding options, status flag names.
#include <fmt/format.h>

#include "cli/commands.h"
#include "formats/error.h"
#include "tolerances/check.h"

namespace numfid::cli {

const FormatSpec& lookup_format(std::string_view name) {
  if (const FormatSpec* f = find_format(name)) return *f;
  throw UsageError(fmt::format("unknown format '{}' (known: {}; aliases such as bfloat16 or float8_e4m3fn "
                               "are accepted, see `numfid formats`)",
                               name, format_names()));
}

void add_rounding_options(CLI::App& app, RoundingArgs& args) {
  app.add_option("--rounding", args.rounding, "rounding mode: rne, rtz, rup, rdn, rna, stochastic")
      ->capture_default_str();
  app.add_flag("--saturate", args.saturate, "overflow to ±max finite instead of ±inf/NaN (OCP saturating mode)");
  app.add_flag("--ftz", args.ftz, "flush subnormal results to zero");
  app.add_flag("--daz", args.daz, "read subnormal inputs as zero");
  args.seed_option = app.add_option("--seed", args.seed, "stochastic rounding seed, 0 .. 2^64 - 1 (stream = 0-based line index)")
                         ->default_str("0");
  args.sr_bits_option = app.add_option("--sr-bits", args.sr_bits,
                                       "random bits a stochastic rounding draws, 1 .. 64 (biased toward zero by < 2^-R "
                                       "ulp); default: exact stochastic rounding")
                            ->check(CLI::Range(1, 64));
}

RoundOptions round_options(const RoundingArgs& args) {
  const std::optional<Rounding> r = parse_rounding(args.rounding);
  if (!r) throw UsageError(fmt::format("unknown rounding mode '{}' (known: rne, rtz, rup, rdn, rna, stochastic)",
                                       args.rounding));
  // A seed without stochastic rounding would be ignored: refused, as Python's seed= is.
  if (args.seed_option != nullptr && args.seed_option->count() > 0 && *r != Rounding::stochastic)
    throw UsageError(fmt::format("--seed {}: a seed only matters for --rounding stochastic (the rounding is {})", args.seed,
                                 args.rounding));
  if (args.sr_bits_option != nullptr && args.sr_bits_option->count() > 0 && *r != Rounding::stochastic)
    throw UsageError(fmt::format("--sr-bits {}: random bits only matter for --rounding stochastic (the rounding is {})",
                                 args.sr_bits, args.rounding));
  RoundOptions o;
  o.rounding = *r;
  o.sr_bits = args.sr_bits;
  o.overflow = args.saturate ? Overflow::saturate : Overflow::ieee;
  o.ftz = args.ftz;
  o.daz = args.daz;
  if (args.seed_option != nullptr && args.seed_option->count() > 0) {
    try {
      o.seed = parse_seed(args.seed);
    } catch (const InputError& e) {
      throw UsageError(e.what());
    }
  }
  return o;
}

std::string status_names(Status s) {
  std::string out;
  auto add = [&](Status flag, const char* name) {
    if ((s & flag) == 0) return;
    if (!out.empty()) out += ", ";
    out += name;
  };
  add(status_invalid, "invalid");
  add(status_div_by_zero, "div_by_zero");
  add(status_overflow, "overflow");
  add(status_underflow, "underflow");
  add(status_inexact, "inexact");
  return out.empty() ? "none" : out;
}

}  // namespace numfid::cli
