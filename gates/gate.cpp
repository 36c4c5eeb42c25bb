// Gate files: strict loading (numerics/yaml_strict_detail.h, shared with profiles). The run is
// gates/run.cpp, baselines gates/baseline.cpp, the reports gates/report*.cpp.
#include "gates/gate.h"

#include <glob.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "io/error.h"
#include "io/tensor_io.h"
#include "numerics/profile.h"
#include "numerics/yaml_strict_detail.h"

namespace numfid {

namespace {

constexpr std::size_t max_gate_bytes = 16u << 20;  // a gate lists checks, not data

struct GateLoader {
  std::string path;
  std::filesystem::path dir;  // operands are relative to the gate file's directory
  detail::StrictYamlRules rules;

  GateLoader(const GateLoader&) = delete;  // rules.fail holds `this`
  GateLoader& operator=(const GateLoader&) = delete;
  explicit GateLoader(const std::filesystem::path& p)
      : path(p.string()), dir(p.parent_path()) {
    // A gate nests 3 deep (cases: list, mapping, value); a gate of thousands of cases has
    // tens of thousands of nodes.
    rules = {.max_depth = 8, .max_nodes = 1'000'000, .document = "gate file",
             .fail = [this](int line, const std::string& msg) {
               if (line < 0) throw InputError(fmt::format("{}: {}", path, msg));
               throw InputError(fmt::format("{}:{}: {}", path, line + 1, msg));
             }};
  }

  [[noreturn]] void fail(const YAML::Node& n, const std::string& msg) const {
    detail::strict_yaml_fail(rules, n.Mark(), msg);
  }

  std::string text(const YAML::Node& n, const std::string& what) const { return detail::strict_yaml_text(rules, n, what); }

  void check_keys(const YAML::Node& map, const std::vector<std::string>& allowed, const std::string& where) const {
    detail::strict_yaml_check_keys(rules, map, allowed, where);
  }

  /// An operand: a non-empty path, resolved against the gate file's directory.
  std::string operand(const YAML::Node& n, const std::string& what) const {
    const std::string s = text(n, what);
    if (s.empty()) fail(n, fmt::format("{} must name a file", what));
    return resolve_tensor_spec(s, dir);
  }

  /// A yes/no value (YAML's true/false).
  bool flag(const YAML::Node& n, const std::string& what) const {
    const std::string v = detail::strict_yaml_plain(rules, n, what, "true or false");
    if (v == "true") return true;
    if (v == "false") return false;
    fail(n, fmt::format("{} must be true or false, not '{}'", what, printable(v)));
  }

  GateCase gate_case(const YAML::Node& n, const std::optional<std::pair<std::string, int>>& default_claim,
                     bool default_baseline) const {
    static const std::vector<std::string> keys{"name", "op", "a", "b", "c", "x", "ref", "ref_claim", "claim", "addend", "addend_format", "axis", "eps", "baseline", "rerun",
                                               "gamma", "beta", "param_format", "variance", "norm_form", "softmax",
                                               "masked_row", "scale_a", "scale_b", "out_scale", "worst"};
    check_keys(n, keys, "a case");
    GateCase c;
    c.line = n.Mark().line + 1;
    if (!n["name"]) fail(n, "a case without a 'name'");
    c.name = text(n["name"], "name");
    if (c.name.empty()) fail(n["name"], "a case's name must not be empty");
    const std::string where = fmt::format("case '{}'", printable(c.name));
    if (!n["op"]) fail(n, fmt::format("{}: missing 'op'", where));
    c.op = text(n["op"], fmt::format("{}: op", where));
    const std::vector<std::string> ops = check_op_names();
    if (std::find(ops.begin(), ops.end(), c.op) == ops.end())
      fail(n["op"], fmt::format("{}: unknown op '{}' (valid: {})", where, printable(c.op), detail::join_names(ops)));
    const bool reduction = c.op == "matmul" || c.op == "dot";
    // Which keys the op takes: its operands, the options of the library's table (check_takes: the
    // CLI's flags and Python's keywords follow the same) and, for a GEMM, the gate's own keys for
    // what the CLI states with --ref-profile and claim options (a reference's claim, scale files).
    // Anything else present is an error.
    const std::vector<std::string> required =
        reduction ? std::vector<std::string>{"a", "b", "c"} : std::vector<std::string>{"x", "c"};
    const auto takes = [&](const std::string& k) {
      if (std::find(required.begin(), required.end(), k) != required.end()) return true;
      if (k == "ref_claim" || k == "scale_a" || k == "scale_b" || k == "out_scale") return reduction;
      return check_takes(c.op, k);
    };
    for (const std::string k : {"a", "b", "c", "x", "addend", "addend_format", "ref", "ref_claim", "axis", "eps", "gamma", "beta", "param_format", "variance",
                              "norm_form", "softmax", "masked_row", "scale_a", "scale_b", "out_scale"})
      if (n[k] && !takes(k)) fail(n[k], fmt::format("{}: '{}' does not apply to op {}", where, k, c.op));
    for (const std::string& k : required)
      if (!n[k]) fail(n, fmt::format("{} (op {}): missing '{}'", where, c.op, k));
    const auto opt_operand = [&](const char* k) -> std::optional<std::string> {
      if (!n[k]) return std::nullopt;
      return operand(n[k], fmt::format("{}: {}", where, k));
    };
    c.a = opt_operand("a"), c.b = opt_operand("b"), c.c = opt_operand("c"), c.x = opt_operand("x");
    c.ref = opt_operand("ref"), c.addend = opt_operand("addend"), c.rerun = opt_operand("rerun");
    c.gamma = opt_operand("gamma"), c.beta = opt_operand("beta");
    c.scale_a = opt_operand("scale_a"), c.scale_b = opt_operand("scale_b"), c.out_scale = opt_operand("out_scale");
    // A named option's text, checked by the parser the CLI uses for it (its error at the key's line).
    const auto named = [&](const char* k, const auto& parse) -> std::optional<std::string> {
      if (!n[k]) return std::nullopt;
      const std::string what = fmt::format("{}: {}", where, k);
      std::string v = text(n[k], what);
      try {
        parse(v);
      } catch (const InputError& e) {
        fail(n[k], fmt::format("{}: {}", what, e.what()));
      }
      return v;
    };
    c.param_format = named("param_format", [](const std::string& v) { format_named(v); });
    c.addend_format = named("addend_format", [](const std::string& v) { format_named(v); });
    if (n["param_format"] && !n["gamma"] && !n["beta"])
      fail(n["param_format"], fmt::format("{}: 'param_format' names the format of 'gamma'/'beta', and neither is given", where));
    if (n["addend_format"] && !n["addend"])
      fail(n["addend_format"], fmt::format("{}: 'addend_format' names the format of an addend: give the addend with 'addend'", where));
    c.variance = named("variance", [](const std::string& v) { variance_named(v); });
    c.norm_form = named("norm_form", [](const std::string& v) { norm_form_named(v); });
    c.softmax = named("softmax", [](const std::string& v) { softmax_method_named(v); });
    c.masked_row = named("masked_row", [](const std::string& v) { masked_row_named(v); });
    if (n["ref"] && !n["ref_claim"]) fail(n["ref"], fmt::format("{}: 'ref' needs 'ref_claim' (the claim of the platform that produced it)", where));
    if (n["ref_claim"] && !n["ref"]) fail(n["ref_claim"], fmt::format("{}: 'ref_claim' needs 'ref'", where));
    if (n["ref_claim"]) c.ref_claim = text(n["ref_claim"], fmt::format("{}: ref_claim", where));
    if (n["claim"]) {
      c.claim = text(n["claim"], fmt::format("{}: claim", where));
      c.claim_line = n["claim"].Mark().line + 1;
    } else if (default_claim) {
      c.claim = default_claim->first;
      c.claim_line = default_claim->second;
    } else {
      fail(n, fmt::format("{}: no 'claim' and no defaults.claim", where));
    }
    c.baseline = n["baseline"] ? flag(n["baseline"], fmt::format("{}: baseline", where)) : default_baseline;
    if (n["axis"]) {
      const std::string what = fmt::format("{}: axis", where);
      detail::strict_yaml_plain(rules, n["axis"], what, "an integer");
      try {
        c.axis = n["axis"].as<int>();
      } catch (const YAML::Exception&) {
        fail(n["axis"], fmt::format("{} must be an integer", what));
      }
    }
    if (n["eps"]) {
      const std::string what = fmt::format("{}: eps", where);
      detail::strict_yaml_plain(rules, n["eps"], what, "a number");
      try {
        c.eps = n["eps"].as<double>();
      } catch (const YAML::Exception&) {
        fail(n["eps"], fmt::format("{} must be a number", what));
      }
      if (!std::isfinite(*c.eps) || *c.eps < 0) fail(n["eps"], fmt::format("{} must be a finite number >= 0", what));
    }
    if (n["worst"]) {
      const std::string what = fmt::format("{}: worst", where);
      const std::string v = detail::strict_yaml_plain(rules, n["worst"], what, "an integer");
      long long w = -1;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), w);
      if (ec != std::errc{} || end != v.data() + v.size() || w < 0 || w > max_worst)
        fail(n["worst"], fmt::format("{} must be an integer from 0 to {}, not '{}'", what, max_worst, printable(v)));
      c.worst = static_cast<int>(w);
    }
    return c;
  }

  /// `include:` entries of the file loaded last: (pattern resolved against its directory, line).
  mutable std::vector<std::pair<std::string, int>> includes;

  Gate load(const std::string& yaml) const {
    if (yaml.size() > max_gate_bytes)
      throw InputError(fmt::format("{}: larger than a gate file can be ({} bytes)", path, max_gate_bytes));
    const YAML::Node root = detail::load_strict_yaml(yaml, rules);
    check_keys(root, {"version", "defaults", "include", "cases"}, "the gate file");
    Gate g;
    g.path = path;
    if (!root["version"]) fail(root, "missing 'version' (write version: 1)");
    const std::string v = detail::strict_yaml_plain(rules, root["version"], "version", "1");
    if (v != "1") fail(root["version"], fmt::format("version must be 1 (the only gate-file version), not '{}'", printable(v)));
    std::optional<std::pair<std::string, int>> default_claim;
    bool default_baseline = false;
    if (const YAML::Node d = root["defaults"]) {
      check_keys(d, {"claim", "baseline"}, "defaults");
      if (d["claim"]) default_claim.emplace(text(d["claim"], "defaults.claim"), d["claim"].Mark().line + 1);
      if (d["baseline"]) default_baseline = flag(d["baseline"], "defaults.baseline");
    }
    includes.clear();
    if (const YAML::Node inc = root["include"]) {
      if (!inc.IsSequence() || inc.size() == 0) fail(inc, "include must be a non-empty list of gate files (globs allowed)");
      for (const YAML::Node& n : inc) {
        const std::string f = text(n, "include");
        if (f.empty()) fail(n, "include: an empty file name");
        const std::filesystem::path fp(f);
        includes.emplace_back((fp.is_relative() ? dir / fp : fp).lexically_normal().string(), n.Mark().line + 1);
      }
    }
    const YAML::Node cases = root["cases"];
    if (!cases && includes.empty()) fail(root, "missing 'cases' (or 'include')");
    if (cases && (!cases.IsSequence() || cases.size() == 0)) fail(cases, "cases must be a non-empty list");
    std::map<std::string, int> names;  // name -> line
    if (cases)
      for (const YAML::Node& n : cases) {
        GateCase c = gate_case(n, default_claim, default_baseline);
        c.file = path;
        const auto [at, fresh] = names.emplace(c.name, c.line);
        if (!fresh) fail(n["name"], fmt::format("duplicate case name '{}' (first at line {})", printable(c.name), at->second));
        g.cases.push_back(std::move(c));
      }
    return g;
  }
};

std::string read_gate_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open the gate file", path.string()));
  std::string bytes;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    bytes.append(buf, static_cast<std::size_t>(in.gcount()));
    if (bytes.size() > max_gate_bytes)
      throw InputError(fmt::format("{}: larger than a gate file can be ({} bytes)", path.string(), max_gate_bytes));
  }
  if (in.bad()) throw InputError(fmt::format("{}: cannot read the gate file", path.string()));
  return bytes;
}

}  // namespace

TensorData tensor_data(const Tensor& t, const FormatSpec& declared) {
  TensorData o;
  o.format = &declared;
  o.shape = t.shape;
  o.values = tensor_values(t, declared);
  o.name = t.source;
  return o;
}

namespace {

/// The files a glob pattern names, sorted bytewise (glob(3)'s order follows the locale).
std::vector<std::string> glob_files(const std::string& pattern) {
  glob_t g{};
  const int rc = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &g);
  std::vector<std::string> out;
  if (rc == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  std::sort(out.begin(), out.end());
  return out;
}

constexpr int max_include_depth = 16;

/// Loads `yaml` (the file `path`) into `g`, then the files it includes, depth first.
void load_tree(Gate& g, const std::string& yaml, const std::filesystem::path& path, bool follow_includes,
               std::vector<std::string>& stack, std::map<std::string, std::string>& names) {
  const GateLoader l(path);
  Gate part;
  try {
    part = l.load(yaml);
  } catch (const YAML::Exception& e) {  // a value of an unexpected kind not caught above
    detail::strict_yaml_fail(l.rules, e.mark, fmt::format("unexpected YAML value: {}", e.msg));
  }
  for (GateCase& c : part.cases) {
    const auto [at, fresh] = names.emplace(c.name, fmt::format("{}:{}", c.file, c.line));
    if (!fresh)
      throw InputError(fmt::format("{}:{}: duplicate case name '{}' (first at {})", c.file, c.line, printable(c.name), at->second));
    g.cases.push_back(std::move(c));
  }
  if (!follow_includes) return;
  for (const auto& [pattern, line] : l.includes) {
    const std::vector<std::string> files = glob_files(pattern);
    if (files.empty()) throw InputError(fmt::format("{}:{}: include '{}' matches no file", path.string(), line, pattern));
    for (const std::string& f : files) {
      std::error_code ec;
      const std::string key = std::filesystem::weakly_canonical(f, ec).string();
      if (std::find(stack.begin(), stack.end(), key) != stack.end())
        throw InputError(fmt::format("{}:{}: include cycle: '{}' includes itself", path.string(), line, f));
      if (stack.size() >= max_include_depth)
        throw InputError(fmt::format("{}:{}: includes nested deeper than {}", path.string(), line, max_include_depth));
      stack.push_back(key);
      load_tree(g, read_gate_file(f), f, true, stack, names);
      stack.pop_back();
    }
  }
}

Gate load_root(const std::string& yaml, const std::filesystem::path& path, bool follow_includes) {
  Gate g;
  g.path = path.string();
  std::error_code ec;
  std::vector<std::string> stack{std::filesystem::weakly_canonical(path, ec).string()};
  std::map<std::string, std::string> names;
  load_tree(g, yaml, path, follow_includes, stack, names);
  if (g.cases.empty()) throw InputError(fmt::format("{}: no cases (its includes hold none)", g.path));
  return g;
}

}  // namespace

Gate load_gate_text(const std::string& yaml, const std::filesystem::path& path, bool follow_includes) {
  return load_root(yaml, path, follow_includes);
}

Gate load_gate(const std::filesystem::path& path) { return load_root(read_gate_file(path), path, true); }

}  // namespace numfid
