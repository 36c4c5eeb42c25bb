// Strict loading of one YAML document (numerics/yaml_strict_detail.h), factored out of the profile
// loader so that gate files get the same rules and messages.
#include "numerics/yaml_strict_detail.h"

#include "io/error.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <algorithm>

#include <fmt/format.h>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace numfid::detail {

std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& x : names) s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::string strict_yaml_text(const StrictYamlRules& rules, const YAML::Node& n, const std::string& what) {
  if (!n.IsScalar()) strict_yaml_fail(rules, n.Mark(), fmt::format("{} must be a single value", what));
  return n.Scalar();
}

std::string strict_yaml_plain(const StrictYamlRules& rules, const YAML::Node& n, const std::string& what,
                              std::string_view kind) {
  std::string v = strict_yaml_text(rules, n, what);
  // yaml-cpp tags a quoted scalar "!" (non-specific, a string) and a plain one "?".
  if (n.Tag() == "!")
    strict_yaml_fail(rules, n.Mark(), fmt::format("{} must be {}, not the quoted text '{}' (write it without quotes)",
                                                  what, kind, printable(v)));
  return v;
}

void strict_yaml_check_keys(const StrictYamlRules& rules, const YAML::Node& map, const std::vector<std::string>& allowed,
                            const std::string& where) {
  if (!map.IsMap()) strict_yaml_fail(rules, map.Mark(), fmt::format("{} must be a mapping", where));
  for (const auto& kv : map) {
    const std::string k = strict_yaml_text(rules, kv.first, "a key");
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
      strict_yaml_fail(rules, kv.first.Mark(), fmt::format("unknown key '{}' in {} (valid: {})", k, where, join_names(allowed)));
  }
}

void strict_yaml_fail(const StrictYamlRules& rules, const YAML::Mark& mark, const std::string& msg) {
  rules.fail(mark.line < 0 ? -1 : mark.line, msg);
  throw std::logic_error("StrictYamlRules::fail returned");  // the contract says it throws
}

namespace {

void check_structure(const StrictYamlRules& rules, const YAML::Node& n, int depth, long& nodes) {
  if (++nodes > rules.max_nodes)
    strict_yaml_fail(rules, n.Mark(), fmt::format("more than {} YAML nodes (aliases expanding a subtree?)", rules.max_nodes));
  if (depth > rules.max_depth) strict_yaml_fail(rules, n.Mark(), fmt::format("nested deeper than {} levels", rules.max_depth));
  if (n.IsMap()) {
    std::map<std::string, int> seen;  // key -> line (1-based)
    for (const auto& kv : n) {
      if (!kv.first.IsScalar()) strict_yaml_fail(rules, kv.first.Mark(), "a key must be a plain value, not a mapping or a list");
      const auto [at, fresh] = seen.emplace(kv.first.Scalar(), kv.first.Mark().line + 1);
      if (!fresh)
        strict_yaml_fail(rules, kv.first.Mark(),
                         fmt::format("duplicate key '{}' (first at line {})", kv.first.Scalar(), at->second));
      // `key:` with nothing after it: yaml-cpp marks the null at the next token (the next
      // line), so the value's own message would name the wrong line; say it at the key's.
      if (kv.second.IsNull())
        strict_yaml_fail(rules, kv.first.Mark(),
                         fmt::format("'{}' has no value (write one after the colon, or leave the key out)", printable(kv.first.Scalar())));
      check_structure(rules, kv.second, depth + 1, nodes);
    }
  } else if (n.IsSequence()) {
    for (const auto& x : n) check_structure(rules, x, depth + 1, nodes);
  }
}

/// The 0-based line at which [ and { (outside quotes and comments) nest deeper than
/// max_depth, or -1 (block nesting: no line is named).
int flow_too_deep_line(std::string_view yaml, int max_depth) {
  int depth = 0, line = 0;
  char quote = 0;
  bool comment = false;
  for (std::size_t i = 0; i < yaml.size(); ++i) {
    const char c = yaml[i];
    if (c == '\n') {
      ++line;
      comment = false;
      continue;
    }
    if (comment) continue;
    if (quote) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') quote = c;
    else if (c == '#' && (i == 0 || yaml[i - 1] == ' ' || yaml[i - 1] == '\t')) comment = true;
    else if (c == '[' || c == '{') {
      if (++depth > max_depth) return line;
    } else if ((c == ']' || c == '}') && depth > 0) --depth;
  }
  return -1;
}

/// Records where each document's root node starts: the documents are counted with the
/// event parser before any is built, because yaml-cpp 0.7's LoadAll never returns on some
/// malformed text (a document starting with ',': the parser reports an empty document
/// without consuming the token, forever; jbeder/yaml-cpp#1040, fixed by #1319 in 0.8).
struct DocumentRoots : YAML::EventHandler {
  std::vector<YAML::Mark> roots;  // one per document
  bool in_document = false, root_seen = false;
  void root(const YAML::Mark& m) {
    if (in_document && !root_seen) roots.push_back(m);
    root_seen = true;
  }
  void OnDocumentStart(const YAML::Mark&) override { in_document = true, root_seen = false; }
  void OnDocumentEnd() override { in_document = false; }
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { root(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { root(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override { root(m); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override { root(m); }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override { root(m); }
  void OnMapEnd() override {}
};

/// Checks that `yaml` holds at most one document: the second's root is an error at its line,
/// and so is a document that does not advance (the yaml-cpp 0.7 loop above).
void check_one_document(const std::string& yaml, const StrictYamlRules& rules) {
  std::istringstream in(yaml);
  YAML::Parser parser(in);
  DocumentRoots h;
  for (int documents = 1; parser.HandleNextDocument(h); ++documents) {
    if (documents < 2) continue;
    // A second document (each iteration is one: the loop ends here whatever yaml-cpp does).
    const YAML::Mark at = h.roots.size() >= 2 ? h.roots[1] : h.roots.empty() ? YAML::Mark::null_mark() : h.roots.back();
    if (h.roots.size() >= 2 && h.roots[1].pos == h.roots[0].pos)
      strict_yaml_fail(rules, at, "cannot be parsed (a token that starts no value: a stray ',' or similar?)");
    strict_yaml_fail(rules, at, fmt::format("a second YAML document (a {} is one document)", rules.document));
  }
}

}  // namespace

YAML::Node load_strict_yaml(const std::string& yaml, const StrictYamlRules& rules) {
  // A binary file (a .npy named by mistake) is refused at its first byte that is no text: NUL
  // or no well-formed UTF-8 (yaml-cpp would report a token of its bytes, e.g. "unknown escape
  // character").
  YAML::Mark at;
  at.line = 0;
  for (std::size_t i = 0, column = 0; i < yaml.size(); ++column) {
    const std::size_t n = yaml[i] == '\0' ? 0 : utf8_sequence_length(yaml, i);
    if (n == 0)
      strict_yaml_fail(rules, at,
                       fmt::format("not text: byte 0x{:02x} at column {} is {}; a {} is UTF-8 YAML text (a binary file?)",
                                   static_cast<unsigned char>(yaml[i]), column + 1,
                                   yaml[i] == '\0' ? "NUL" : "not part of a UTF-8 character", rules.document));
    if (yaml[i] == '\n') ++at.line, column = static_cast<std::size_t>(-1);
    i += n;
  }
  std::vector<YAML::Node> docs;
  try {
    check_one_document(yaml, rules);
    docs.push_back(YAML::Load(yaml));
  } catch (const YAML::DeepRecursion&) {
    // Its message says "bad file" and its mark is where the scanner stopped reading ahead
    // (the end of the text): name the line where the flow brackets open too deep instead.
    YAML::Mark m;
    m.line = flow_too_deep_line(yaml, rules.max_depth);
    strict_yaml_fail(rules, m, fmt::format("nested deeper than {} levels", rules.max_depth));
  } catch (const YAML::Exception& e) {
    strict_yaml_fail(rules, e.mark, e.msg);
  }
  if (docs.empty() || docs[0].IsNull()) strict_yaml_fail(rules, YAML::Mark::null_mark(), fmt::format("empty {}", rules.document));
  long nodes = 0;
  check_structure(rules, docs[0], 0, nodes);
  return docs[0];
}

}  // namespace numfid::detail
