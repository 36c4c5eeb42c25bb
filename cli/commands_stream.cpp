// `numfid convert` and `numfid arith`: hex patterns in on stdin, hex patterns out on stdout.
// Every line is validated before anything is computed or written, so a bad line leaves
// stdout empty (DESIGN.md: nothing written half-way).
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/stream_io.h"
#include "formats/arith.h"
#include "formats/convert.h"

namespace numfid::cli {

namespace {

struct ConvertArgs {
  std::string from;
  std::string to;
  RoundingArgs rounding;
};

int run_convert(const ConvertArgs& args) {
  const FormatSpec& from = lookup_format(args.from);
  const FormatSpec& to = lookup_format(args.to);
  RoundOptions o = round_options(args.rounding);
  const std::string input = read_all(stdin);

  std::vector<std::uint32_t> patterns;
  patterns.reserve(input.size() / (static_cast<std::size_t>(hex_digits(from)) + 1) + 1);
  for_each_line(input, [&](std::string_view line, std::size_t number) {
    std::string_view tok[1];
    const int n = split_tokens(line, tok, 1);
    if (n == 0)
      throw UsageError(fmt::format("stdin line {}: empty line (convert expects one {} bit pattern per line)", number,
                                   from.name));
    if (n > 1)
      throw UsageError(fmt::format("stdin line {}: expected one bit pattern, found {} tokens: {}", number, n,
                                   quote(line)));
    patterns.push_back(parse_pattern(from, tok[0], number).raw);
  });

  const int digits = hex_digits(to);
  std::string out(patterns.size() * static_cast<std::size_t>(digits + 3), '\0');
  char* p = out.data();
  if (o.rounding != Rounding::stochastic && from.bits <= 16 && patterns.size() > 4096) {
    // Deterministic and a small source: convert every pattern once, then look up.
    std::vector<std::uint32_t> table(std::size_t{1} << from.bits);
    for (std::uint32_t x = 0; x < table.size(); ++x) table[x] = convert(from, to, Bits{x}, o).bits.raw;
    for (std::uint32_t x : patterns) {
      p = write_hex(p, table[x], digits);
      *p++ = '\n';
    }
  } else {
    for (std::size_t i = 0; i < patterns.size(); ++i) {
      o.stream = i;  // stochastic rounding: the line index is the random stream
      p = write_hex(p, convert(from, to, Bits{patterns[i]}, o).bits.raw, digits);
      *p++ = '\n';
    }
  }
  write_all(stdout, std::string_view(out.data(), static_cast<std::size_t>(p - out.data())));
  return exit_ok;
}

struct ArithArgs {
  std::string op;
  std::string format;
  RoundingArgs rounding;
};

int run_arith(const ArithArgs& args) {
  const std::optional<ArithOp> op = parse_arith_op(args.op);
  if (!op) throw UsageError(fmt::format("unknown operation '{}' (known: add, sub, mul, div, fma, sqrt)", args.op));
  const FormatSpec& f = lookup_format(args.format);
  if (!is_float(f))
    throw UsageError(fmt::format("arith works on floating-point formats; {} is an integer format", f.name));
  RoundOptions o = round_options(args.rounding);
  const int k = arity(*op);
  const std::string input = read_all(stdin);

  std::vector<Bits> operands;
  operands.reserve(input.size() / static_cast<std::size_t>(hex_digits(f) + 1) + 1);
  for_each_line(input, [&](std::string_view line, std::size_t number) {
    std::string_view tok[3];
    const int n = split_tokens(line, tok, 3);
    if (n == 0)
      throw UsageError(fmt::format("stdin line {}: empty line ({} expects {} hex operand{} per line)", number,
                                   arith_op_name(*op), k, k == 1 ? "" : "s"));
    if (n != k)
      throw UsageError(fmt::format("stdin line {}: {} takes {} operand{}, found {}: {}", number, arith_op_name(*op), k,
                                   k == 1 ? "" : "s", n, quote(line)));
    for (int i = 0; i < k; ++i) operands.push_back(parse_pattern(f, tok[i], number));
  });

  const std::size_t lines = operands.size() / static_cast<std::size_t>(k);
  const int digits = hex_digits(f);
  std::string out(lines * static_cast<std::size_t>(digits + 3), '\0');
  char* p = out.data();
  for (std::size_t i = 0; i < lines; ++i) {
    o.stream = i;  // stochastic rounding: the line index is the random stream
    const std::span<const Bits> x(operands.data() + i * static_cast<std::size_t>(k), static_cast<std::size_t>(k));
    p = write_hex(p, apply(*op, f, x, o).bits.raw, digits);
    *p++ = '\n';
  }
  write_all(stdout, std::string_view(out.data(), static_cast<std::size_t>(p - out.data())));
  return exit_ok;
}

}  // namespace

Command add_convert_command(CLI::App& parent) {
  auto args = std::make_shared<ConvertArgs>();
  CLI::App* app = parent.add_subcommand(
      "convert", "convert hex bit patterns (stdin, one per line) from one format to another (stdout)");
  app->add_option("--from", args->from, "source format (name or alias)")->required();
  app->add_option("--to", args->to, "target format (name or alias)")->required();
  add_rounding_options(*app, args->rounding);
  return {app, [args] { return run_convert(*args); }};
}

Command add_arith_command(CLI::App& parent) {
  auto args = std::make_shared<ArithArgs>();
  CLI::App* app = parent.add_subcommand(
      "arith", "correctly rounded add|sub|mul|div|fma|sqrt on hex operands (stdin, one operation per line)");
  app->add_option("OP", args->op, "add, sub, mul, div, fma or sqrt")->required();
  app->add_option("--format", args->format, "floating-point format (name or alias)")->required();
  add_rounding_options(*app, args->rounding);
  return {app, [args] { return run_arith(*args); }};
}

}  // namespace numfid::cli
