// The subcommands of the numfid executable and what they share: the usage-error type
// (exit code 2), format and rounding lookup, and the rounding options common to all of them.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "cli/errors.h"
#include "formats/rounding.h"

namespace numfid::cli {

/// Exit codes of the CLI contract.
inline constexpr int exit_ok = 0;
inline constexpr int exit_defect = 1;
inline constexpr int exit_usage = 2;

/// A subcommand: its CLI11 app (owned by the parent app) and the action run when it is chosen.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

/// `numfid formats`
Command add_formats_command(CLI::App& parent);
/// `numfid bits FORMAT VALUE|0xBITS`
Command add_bits_command(CLI::App& parent);
/// `numfid convert --from F --to G ...`
Command add_convert_command(CLI::App& parent);
/// `numfid arith OP --format F ...`
Command add_arith_command(CLI::App& parent);

/// The format named `name` (canonical or alias, see find_format); throws UsageError listing
/// the known formats otherwise.
const FormatSpec& lookup_format(std::string_view name);

/// A text option's value, or nothing where it was left empty (not given): the library's
/// optional form of an option such as --addend-format.
inline std::optional<std::string> given_text(const std::string& value) {
  return value.empty() ? std::nullopt : std::optional<std::string>(value);
}

/// --rounding / --saturate / --ftz / --daz / --seed, as given on the command line.
struct RoundingArgs {
  std::string rounding = "rne";
  bool saturate = false;
  bool ftz = false;
  bool daz = false;
  std::string seed;  ///< --seed's text, read by the library's parse_seed (0 .. 2^64 - 1)
  const CLI::Option* seed_option = nullptr;  ///< --seed, to tell whether it was given
  int sr_bits = 0;   ///< --sr-bits: random bits of a stochastic rounding (RoundOptions::sr_bits)
  const CLI::Option* sr_bits_option = nullptr;
};

/// Declares the rounding options on `app`, storing into `args` (which must outlive parsing).
void add_rounding_options(CLI::App& app, RoundingArgs& args);

/// The RoundOptions the arguments ask for; throws UsageError for an unknown rounding mode.
RoundOptions round_options(const RoundingArgs& args);

/// The names of the set status flags ("inexact, underflow"), or "none".
std::string status_names(Status s);

}  // namespace numfid::cli
