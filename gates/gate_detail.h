// Internals shared by the gate's source files: JSON of numbers that may be infinite, of the
// error field, strict reading of the documents the gate writes, XML/HTML escaping.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "gates/gate.h"

namespace numfid::detail {

/// A JSON number, or its text ("inf", "-inf", "nan") for a non-finite value (JSON has none).
nlohmann::json json_number(double x);

/// Strict reading of a JSON document the gate wrote (a baseline, a shard's result): every
/// access names the file and the key on failure (InputError "FILE: not a ...: ...").
struct JsonReader {
  std::string file, what;  ///< "gate.baselines/x.json", "numfid baseline"

  [[noreturn]] void fail(const std::string& msg) const;
  const nlohmann::json& at(const nlohmann::json& j, std::string_view key) const;
  double number(const nlohmann::json& j, std::string_view key) const;
  std::int64_t integer(const nlohmann::json& j, std::string_view key) const;
  std::string text(const nlohmann::json& j, std::string_view key) const;
  bool boolean(const nlohmann::json& j, std::string_view key) const;
  std::vector<double> numbers(const nlohmann::json& j, std::string_view key) const;
  std::vector<std::string> texts(const nlohmann::json& j, std::string_view key) const;
};

/// The error field as JSON; `maps`: with the heatmap and the histogram (reports), else only
/// the figures a baseline compares.
nlohmann::json field_json(const ErrorField& f, bool maps);
ErrorField field_from_json(const nlohmann::json& j, const JsonReader& r, bool maps);

/// `s` escaped for XML/HTML attribute values and text; control characters other than tab and
/// newline (not allowed in XML 1.0) become U+FFFD.
std::string xml_escape(std::string_view s);

/// `s` as text in a Markdown table cell or line (GitHub-flavoured: the summary CI posts): HTML's
/// `<`, `>`, `&` as entities (a name is shown, never rendered as a tag), the characters that
/// start Markdown markup (\ ` * [ ] ~ |) backslash-escaped (not `_`: GitHub does not emphasise
/// inside a word, and snake_case names stay readable in the source), a newline as a space. A name
/// from a file goes through printable() first (its control bytes as \xNN); any control byte
/// left becomes U+FFFD.
std::string md_text(std::string_view s);

/// `s` as one POSIX shell word (single-quoted when it holds anything but [A-Za-z0-9_./:=@%+-]).
std::string shell_word(std::string_view s);

/// "1.23" for reports: up to 3 significant digits, "inf" for infinity.
std::string short_number(double x);

}  // namespace numfid::detail
