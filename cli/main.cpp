// numfid command-line entry point: CLI11 parsing, dispatch to the subcommands, and the exit
// codes of the CLI contract (0 ok, 1 numerical defect, 2 usage or input error).
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <new>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "cli/commands_verdict.h"
#include "formats/error.h"
#include "io/error.h"
#include "tolerances/check.h"

namespace {

/// `numfid bits FORMAT -1e-3`: CLI11 would read a leading '-' as an option (`-inf` as the
/// flags -i -n -f). The value operand is recognised here and moved behind `--`, which ends
/// option parsing. Only `bits` has a value operand; its one short option is -h.
std::vector<std::string> protect_negative_values(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] != "bits") return args;
  std::vector<std::string> kept{args[0]};
  std::vector<std::string> values;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {  // already protected: keep the rest as is
      for (; i < args.size(); ++i) kept.push_back(args[i]);
      return kept;
    }
    const bool takes_value = a == "--rounding" || a == "--seed";
    if (takes_value && i + 1 < args.size()) {
      kept.push_back(a);
      kept.push_back(args[++i]);
      continue;
    }
    if (a.size() > 1 && a[0] == '-' && a[1] != '-' && a != "-h") values.push_back(a);
    else kept.push_back(a);
  }
  if (!values.empty()) {
    kept.emplace_back("--");
    kept.insert(kept.end(), values.begin(), values.end());
  }
  return kept;
}

/// Integer options are decimal integers: CLI11 2.1's conversion reads base prefixes (`--k 010`
/// is 8, `0x10` 16) and saturates an overflow silently (`--k 99999999999999999999` became
/// 2^63 - 1). A value that is not a decimal integer in range is a usage error naming it; leading
/// zeros are read as decimal.
void decimal_integers(CLI::App& app) {
  const CLI::Validator decimal(
      [](std::string& text) -> std::string {
        const char* first = text.data();
        const char* last = first + text.size();
        std::int64_t v = 0;
        const auto [end, ec] = std::from_chars(first + (text.starts_with('+') ? 1 : 0), last, v);
        if (ec == std::errc::result_out_of_range) return fmt::format("'{}' is out of range", text);
        if (ec != std::errc() || end != last || text.empty()) return fmt::format("'{}' is not a decimal integer", text);
        text = std::to_string(v);  // what CLI11 converts next: "010" is ten, not octal eight
        return {};
      },
      "", "decimal integer");
  for (CLI::Option* o : app.get_options()) {
    // The type name carries the option's validators after a ':' ("INT:INT in [0 - 1073741824]").
    const std::string type = o->get_type_name();
    if (type == "INT" || type == "UINT" || type.starts_with("INT:") || type.starts_with("UINT:")) o->transform(decimal);
  }
  for (CLI::App* sub : app.get_subcommands({})) decimal_integers(*sub);
}

/// Floating-point options (--eps) are numbers as strtod reads them, the whole text: CLI11 2.1
/// converts an empty value to 0 (`--eps ''` was eps 0) and words a bad one "Could not convert:
/// --eps = 1e-5x"; a value beyond double's range (1e5000, 1e-400) is refused rather than read as
/// inf or 0. The range the option takes is its consumer's to check (check_rows: --eps >= 0).
void decimal_numbers(CLI::App& app) {
  const CLI::Validator number(
      [](std::string& text) -> std::string {
        double v = 0;
        return numfid::read_decimal(text, v);
      },
      "", "number");
  for (CLI::Option* o : app.get_options()) {
    const std::string type = o->get_type_name();
    if (type == "FLOAT" || type.starts_with("FLOAT:")) o->transform(number);
  }
  for (CLI::App* sub : app.get_subcommands({})) decimal_numbers(*sub);
}

/// `check OP --masked-row zero` where OP does not take --masked-row: CLI11 knows only that the
/// argument was not expected; the library's table (numfid::check_takes, which the subcommands
/// declare from) knows which ops take it. The first such argument, named with those ops; ""
/// when no argument is an option of another op. `tol OP` given a check option that tol has not
/// (--masked-row: what a fully masked row holds, which no tolerance depends on) says so too.
std::string misplaced_check_option(const CLI::App& app, const std::vector<std::string>& extra) {
  std::string command_name, op;
  const CLI::App* check = nullptr;
  for (const CLI::App* command : app.get_subcommands({})) {
    if (command->get_name() == "check") check = command;
    if (!command->parsed()) continue;
    if (command->get_name() == "check")
      for (const CLI::App* sub : command->get_subcommands({}))
        if (sub->parsed()) command_name = "check", op = sub->get_name();
    if (command->get_name() == "tol") {  // the op is tol's positional argument
      const std::vector<std::string>& given = command->get_option("op")->results();
      command_name = "tol";
      op = given.empty() ? "OP" : given.front();
    }
  }
  if (op.empty()) return {};
  for (const std::string& a : extra) {
    if (a.size() < 3 || a.compare(0, 2, "--") != 0) continue;
    const std::string flag = a.substr(0, a.find('='));  // --name or --name=value
    std::string key = flag.substr(2);
    std::replace(key.begin(), key.end(), '-', '_');
    std::vector<std::string> takes;
    for (const std::string& o : numfid::check_op_names())
      if (numfid::check_takes(o, key)) takes.push_back(o);
    // The claim's options (--compute, --ulps, --fn-ulps, ...) are not in the table: the ops whose
    // subcommand declares the flag (shown in its --help; hidden aliases do not count).
    if (takes.empty() && check != nullptr)
      for (const CLI::App* sub : check->get_subcommands({}))
        if (const CLI::Option* o = sub->get_option_no_throw(flag); o != nullptr && !o->get_group().empty())
          takes.push_back(sub->get_name());
    if (takes.empty()) continue;
    if (command_name == "tol")
      return fmt::format("tol {}: option {} is one of check's (taken by: {}), not tol's: no tolerance depends on it; "
                         "`numfid tol --help` lists tol's options",
                         op, flag, fmt::join(takes, ", "));
    if (numfid::check_takes(op, key)) continue;
    return fmt::format(
        "check {}: option {} does not apply to {} (taken by: {}); `numfid check {} --help` lists {}'s options", op, flag,
        op, fmt::join(takes, ", "), op, op);
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  using namespace numfid::cli;
  CLI::App app{"numfid: numerical-correctness test framework for ML kernels (exit 0 ok, 1 defect, 2 usage/input error)",
               "numfid"};
  app.require_subcommand(1);
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("numfid: {}\nRun `numfid --help` (or `numfid COMMAND --help`) for usage.\n", e.what());
  });
  const std::vector<Command> commands{add_formats_command(app), add_bits_command(app),   add_convert_command(app),
                                      add_arith_command(app),   add_check_command(app),  add_tol_command(app),
                                      add_emulate_command(app), add_profiles_command(app), add_gate_command(app),
                                      add_quantize_command(app), add_probe_command(app)};
  decimal_integers(app);
  decimal_numbers(app);
  // A first word that names no command: say so (CLI11 would answer "A subcommand is required").
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
    if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      fmt::print(stderr, "numfid: unknown command '{}' (commands: {}); run `numfid --help` for usage\n",
                 numfid::printable(argv[1]), fmt::join(names, ", "));
      return exit_usage;
    }
  }
  std::vector<std::string> args = protect_negative_values(argc, argv);
  std::reverse(args.begin(), args.end());  // CLI11 consumes the vector from the back
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    // --help is CLI11's "success" exit; every other parse error is a usage error (2),
    // whatever code CLI11 would give it.
    if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
      // CLI11 2.1 lists the unexpected arguments last to first (rjoin of its reversed
      // vector); remaining() has them in the order they were given.
      const std::vector<std::string> extra = app.remaining(true);
      if (const std::string why = misplaced_check_option(app, extra); !why.empty()) {
        fmt::print(stderr, "numfid: {}\n", why);
        return exit_usage;
      }
      std::vector<std::string> shown;
      for (const std::string& a : extra) shown.push_back(numfid::printable(a));
      fmt::print(stderr, "numfid: {} not expected: {}\nRun `numfid --help` (or `numfid COMMAND --help`) for usage.\n",
                 extra.size() == 1 ? "this argument was" : "these arguments were", fmt::join(shown, " "));
      return exit_usage;
    }
    const int rc = app.exit(e);
    return rc == 0 ? exit_ok : exit_usage;
  }
  try {
    for (const Command& c : commands)
      if (c.app->parsed()) {
        const int rc = c.run();
        // What was printed must have reached standard output (stdout on a full disk or a
        // closed pipe): else the result is lost and the run failed (exit 2), whatever it found.
        if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
          fmt::print(stderr, "numfid: writing to standard output failed ({})\n", std::strerror(errno));
          return exit_usage;
        }
        return rc;
      }
  } catch (const UsageError& e) {
    std::fflush(stdout);
    fmt::print(stderr, "numfid: {}\n", e.what());
    return exit_usage;
  } catch (const numfid::InputError& e) {  // from the libraries: bad input, named
    std::fflush(stdout);
    fmt::print(stderr, "numfid: {}\n", e.what());
    return exit_usage;
  } catch (const std::bad_alloc&) {
    // Bad input more often than a bug: a shape with a zero dimension holds no data but may ask
    // for its other dimensions' worth of outputs (a sum over an empty axis of 2^60 rows).
    std::fflush(stdout);
    fmt::print(stderr, "numfid: out of memory: this command needs more memory than the machine has (or an input's "
                       "shape asks for it: a zero dimension beside huge ones holds no data but names many outputs)\n");
    return exit_usage;
  } catch (const std::exception& e) {
    fmt::print(stderr, "numfid: internal error: {}\n", e.what());
    return exit_usage;
  }
  return exit_usage;
}
