// Strict loading of one YAML document with yaml-cpp 0.7: what the profile loader and the
// gate-file loader share (one document, keys once, bounded nesting and size, file:line).
// Internal (*_detail.h: not installed): included only by sources that link yaml-cpp themselves.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace numfid::detail {

/// How a document is loaded and how its errors are reported.
struct StrictYamlRules {
  int max_depth = 16;         ///< nesting levels (mappings and lists)
  long max_nodes = 100'000;   ///< nodes after alias expansion (aliases repeat a subtree)
  std::string document;       ///< for messages: "profile", "gate file"
  /// Throws the caller's error for `msg` at the 0-based `line` (-1: no line known). Must throw.
  std::function<void(int line, const std::string& msg)> fail;
};

/// Parses `yaml` as exactly one non-empty document and checks every mapping: keys are plain
/// scalars and appear once (yaml-cpp 0.7 keeps both of a duplicated key and operator[]
/// returns the first: a silent "first wins"); nesting and node count are bounded. Every
/// failure goes through rules.fail: a syntax error at its line, "empty {document}", "a second
/// YAML document (a {document} is one document)", "duplicate key 'K' (first at line L)", ...
YAML::Node load_strict_yaml(const std::string& yaml, const StrictYamlRules& rules);

/// Calls rules.fail with the node's line.
[[noreturn]] void strict_yaml_fail(const StrictYamlRules& rules, const YAML::Mark& mark, const std::string& msg);

/// "a, b, c": the valid names in a message.
std::string join_names(const std::vector<std::string>& names);

/// The text of a scalar node; anything else (a mapping, a list, null) is rules.fail "{what}
/// must be a single value" (instead of yaml-cpp's "bad conversion").
std::string strict_yaml_text(const StrictYamlRules& rules, const YAML::Node& n, const std::string& what);

/// The text of a plain (unquoted) scalar: a boolean or a number. A quoted one ('true', "1") is a
/// string in YAML, and rules.fail says "{what} must be {kind}, not the quoted text '...'".
std::string strict_yaml_plain(const StrictYamlRules& rules, const YAML::Node& n, const std::string& what,
                              std::string_view kind);

/// rules.fail unless `map` is a mapping whose every key is one of `allowed` ("unknown key 'K' in
/// {where} (valid: ...)").
void strict_yaml_check_keys(const StrictYamlRules& rules, const YAML::Node& map, const std::vector<std::string>& allowed,
                            const std::string& where);

}  // namespace numfid::detail
