// Probes: the settings file of the offline rounds (DIR/probe.txt), written by `probe make` and
// read by every `probe infer` round. Fuzzed by fuzz/probe_settings_fuzz.cpp.
#include <charconv>
#include <fmt/format.h>

#include "formats/error.h"
#include "io/error.h"
#include "numerics/probe.h"

namespace numfid {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/// The whitespace-separated words of one line.
std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> w;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    const std::size_t start = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    if (i > start) w.push_back(line.substr(start, i - start));
  }
  return w;
}

template <class Int>
bool integer(std::string_view v, Int& out) {
  Int x{};
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || end != v.data() + v.size()) return false;
  out = x;
  return true;
}

}  // namespace

std::string probe_setting_problem(const ProbeSettings& s, std::string_view key) {
  if (key == "op" && !parse_probe_op(s.op)) return "must be dot, matmul or sum";
  if (key == "k" && (s.k < 2 || s.k > 4096)) return "must be in 2..4096";
  if (key == "in" || key == "out") {
    const FormatSpec* f = find_format(key == "in" ? s.in : s.out);
    if (!f) return fmt::format("unknown format (valid: {})", format_names());
    // The FPRev probes send ±M and cancelling pairs: a signed float format (not E8M0, not an
    // integer format).
    if (!can_accumulate(*f)) return "not a signed float format (the probes send signed values and 0)";
  }
  if (key == "budget" && s.budget < 0) return "must be >= 0 (0: no limit)";
  if (key == "validation" && s.validation < min_validation_elements)
    return fmt::format("at least {} elements", min_validation_elements);
  if (key == "validation" && s.validation > max_validation_elements)
    return fmt::format("at most {} elements", max_validation_elements);
  return {};
}

std::string probe_settings_text(const ProbeSettings& s) {
  // A value is one word: an empty string is left out (it reads back as the default, and
  // "output " alone would be no setting at all; found by fuzz_probe_settings).
  std::string t;
  const auto word = [&](std::string_view key, const std::string& v) {
    if (!v.empty()) t += fmt::format("{} {}\n", key, v);
  };
  word("op", s.op);
  t += fmt::format("k {}\n", s.k);
  word("in", s.in);
  word("out", s.out);
  t += fmt::format("seed {}\nbudget {}\nvalidation {}\n", s.seed, s.budget, s.validation);
  word("output", s.output);
  if (!s.presets) t += "presets off\n";
  return t;
}

ProbeSettings parse_probe_settings(std::string_view text, std::string_view source, ProbeSettings p) {
  std::size_t line_no = 0;
  std::vector<std::pair<std::string, std::size_t>> seen;  // key, line: a key given twice is an error, not "the last wins"
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    const std::vector<std::string_view> w = words(line);
    if (w.empty()) continue;  // a blank line
    bool ok = w.size() == 2;
    if (ok) {
      const std::string_view key = w[0], value = w[1];
      for (const auto& [k, at] : seen)
        if (k == key)
          throw InputError(fmt::format("{}:{}: '{}' given twice (first at line {})", printable(source), line_no,
                                       printable(key), at));
      seen.emplace_back(std::string(key), line_no);
      if (key == "op") p.op = value;
      else if (key == "k") ok = integer(value, p.k);
      else if (key == "in") p.in = value;
      else if (key == "out") p.out = value;
      else if (key == "seed") ok = integer(value, p.seed);
      else if (key == "budget") ok = integer(value, p.budget);
      else if (key == "validation") ok = integer(value, p.validation);
      else if (key == "output") p.output = value;
      else if (key == "presets" && (value == "on" || value == "off")) p.presets = value == "on";
      else ok = false;
      // A value's own check, at its line (was: outside the file's context, "--k 1: ...").
      std::string why = probe_setting_problem(p, key);
      for (const char ch : value)
        if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) why = "a control byte in the value";
      if (ok && !why.empty())
        throw InputError(fmt::format("{}:{}: {} {}: {}", printable(source), line_no, printable(key), printable(value), why));
    }
    if (!ok)
      throw InputError(fmt::format("{}:{}: '{}' is not a probe setting (KEY VALUE with KEY one of op, k, in, out, seed, "
                                   "budget, validation, output, presets)",
                                   printable(source), line_no, printable(line)));
  }
  // k has no usable default (0): a file without its line would be read as settings that the
  // probe refuses, and would not print back as a file this parser reads (`k 0` is refused).
  bool k_given = false;
  for (const auto& [k, at] : seen) k_given = k_given || k == "k";
  if (!k_given) throw InputError(fmt::format("{}: no 'k' line (the terms per output: k N, 2..4096)", printable(source)));
  return p;
}

}  // namespace numfid
