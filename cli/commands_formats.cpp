// `numfid formats`: the FormatSpec table with its derived limits, one row per format.
#include <array>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"

namespace numfid::cli {

namespace {

std::string_view nan_name(NanEncoding n) {
  switch (n) {
    case NanEncoding::ieee: return "ieee";
    case NanEncoding::all_ones: return "all-ones";
    case NanEncoding::negative_zero: return "neg-zero";
    case NanEncoding::none: return "none";
  }
  return "?";
}

/// Limits print as the shortest decimal that reads back as the same double (fmt's default,
/// Dragonbox): every limit is a double exactly, so the text identifies it exactly.
std::string number(double v) { return fmt::format("{}", v); }

std::vector<std::string> row(const FormatSpec& f) {
  std::string aliases;
  for (std::string_view a : format_aliases(f)) {
    if (!aliases.empty()) aliases += ",";
    aliases += a;
  }
  if (aliases.empty()) aliases = "-";
  const bool fl = is_float(f);
  const std::string dash = "-";
  return {std::string(f.name),
          std::to_string(f.bits),
          fl ? std::to_string(f.has_sign ? 1 : 0) : std::to_string(f.is_signed ? 1 : 0),
          fl ? std::to_string(f.exponent_bits) : dash,
          fl ? std::to_string(mantissa_bits(f)) : dash,
          fl ? std::to_string(f.bias) : dash,
          fl ? std::to_string(emin(f)) : dash,
          fl ? std::to_string(emax(f)) : dash,
          number(max_finite(f)),
          fl ? number(min_normal(f)) : dash,
          fl && f.has_subnormals ? number(min_positive(f)) : dash,
          f.non_finite == NonFinite::ieee ? "yes" : "no",
          std::string(nan_name(f.nan)),
          aliases,
          std::string(f.provenance)};
}

int run_formats() {
  std::vector<std::vector<std::string>> rows{{"name", "bits", "sign", "exp", "mant", "bias", "emin", "emax", "max_finite",
                                              "min_normal", "min_subnormal", "inf", "nan", "aliases", "provenance"}};
  for (const FormatSpec* f : all_formats) rows.push_back(row(*f));
  std::vector<std::size_t> width(rows.front().size(), 0);
  for (const auto& r : rows)
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t c = 0; c < r.size(); ++c) {
      line += r[c];
      if (c + 1 < r.size()) line += std::string(width[c] - r[c].size() + 2, ' ');
    }
    out += line + "\n";
  }
  fmt::print("{}", out);
  return exit_ok;
}

}  // namespace

Command add_formats_command(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand("formats", "table of the number formats and their properties");
  return {app, [] { return run_formats(); }};
}

}  // namespace numfid::cli
