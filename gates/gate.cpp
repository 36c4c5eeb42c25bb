// Gate files: strict loading (numerics/yaml_strict_detail.h, shared with profiles), the run
// through the check pipeline, and the text, JUnit and JSON reports.
#include "gates/gate.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
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

/// The ops a case may name: matmul, dot, sum and every RowOp.
std::vector<std::string> op_names() {
  std::vector<std::string> v{"matmul", "dot", "sum"};
  for (const RowOp op : row_ops()) v.emplace_back(row_op_name(op));
  return v;
}

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
    TensorSpec spec = parse_tensor_spec(s);
    if (spec.path.is_relative()) spec.path = (dir / spec.path).lexically_normal();
    return spec.name.empty() ? spec.path.string() : fmt::format("{}:{}", spec.path.string(), spec.name);
  }

  GateCase gate_case(const YAML::Node& n, const std::optional<std::pair<std::string, int>>& default_claim) const {
    static const std::vector<std::string> keys{"name", "op", "a", "b", "c", "x", "ref", "ref_claim", "claim", "addend", "axis", "eps"};
    check_keys(n, keys, "a case");
    GateCase c;
    c.line = n.Mark().line + 1;
    if (!n["name"]) fail(n, "a case without a 'name'");
    c.name = text(n["name"], "name");
    if (c.name.empty()) fail(n["name"], "a case's name must not be empty");
    const std::string where = fmt::format("case '{}'", printable(c.name));
    if (!n["op"]) fail(n, fmt::format("{}: missing 'op'", where));
    c.op = text(n["op"], fmt::format("{}: op", where));
    const std::vector<std::string> ops = op_names();
    if (std::find(ops.begin(), ops.end(), c.op) == ops.end())
      fail(n["op"], fmt::format("{}: unknown op '{}' (valid: {})", where, printable(c.op), detail::join_names(ops)));
    const bool reduction = c.op == "matmul" || c.op == "dot";
    const std::optional<RowOp> row = find_row_op(c.op);
    const bool norm = row == RowOp::layernorm || row == RowOp::rmsnorm;
    // Which keys the op takes (required, optional); anything else present is an error.
    std::vector<std::string> required, optional;
    if (reduction) required = {"a", "b", "c"}, optional = {"addend", "ref", "ref_claim"};
    else if (c.op == "sum") required = {"x", "c"}, optional = {"axis"};
    else required = {"x", "c"}, optional = norm ? std::vector<std::string>{"eps"} : std::vector<std::string>{};
    for (const std::string k : {"a", "b", "c", "x", "addend", "ref", "ref_claim", "axis", "eps"}) {
      const bool takes = std::find(required.begin(), required.end(), k) != required.end() ||
                         std::find(optional.begin(), optional.end(), k) != optional.end();
      if (n[k] && !takes) fail(n[k], fmt::format("{}: '{}' does not apply to op {}", where, k, c.op));
    }
    for (const std::string& k : required)
      if (!n[k]) fail(n, fmt::format("{} (op {}): missing '{}'", where, c.op, k));
    const auto opt_operand = [&](const char* k) -> std::optional<std::string> {
      if (!n[k]) return std::nullopt;
      return operand(n[k], fmt::format("{}: {}", where, k));
    };
    c.a = opt_operand("a"), c.b = opt_operand("b"), c.c = opt_operand("c"), c.x = opt_operand("x");
    c.ref = opt_operand("ref"), c.addend = opt_operand("addend");
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
    if (n["axis"]) {
      const std::string what = fmt::format("{}: axis", where);
      text(n["axis"], what);
      try {
        c.axis = n["axis"].as<int>();
      } catch (const YAML::Exception&) {
        fail(n["axis"], fmt::format("{} must be an integer", what));
      }
    }
    if (n["eps"]) {
      const std::string what = fmt::format("{}: eps", where);
      text(n["eps"], what);
      try {
        c.eps = n["eps"].as<double>();
      } catch (const YAML::Exception&) {
        fail(n["eps"], fmt::format("{} must be a number", what));
      }
      if (!std::isfinite(*c.eps) || *c.eps < 0) fail(n["eps"], fmt::format("{} must be a finite number >= 0", what));
    }
    return c;
  }

  Gate load(const std::string& yaml) const {
    if (yaml.size() > max_gate_bytes)
      throw InputError(fmt::format("{}: larger than a gate file can be ({} bytes)", path, max_gate_bytes));
    const YAML::Node root = detail::load_strict_yaml(yaml, rules);
    check_keys(root, {"version", "defaults", "cases"}, "the gate file");
    Gate g;
    g.path = path;
    if (!root["version"]) fail(root, "missing 'version' (write version: 1)");
    const std::string v = text(root["version"], "version");
    if (v != "1") fail(root["version"], fmt::format("version must be 1 (the only gate-file version), not '{}'", printable(v)));
    std::optional<std::pair<std::string, int>> default_claim;
    if (const YAML::Node d = root["defaults"]) {
      check_keys(d, {"claim"}, "defaults");
      if (d["claim"]) default_claim.emplace(text(d["claim"], "defaults.claim"), d["claim"].Mark().line + 1);
    }
    const YAML::Node cases = root["cases"];
    if (!cases) fail(root, "missing 'cases'");
    if (!cases.IsSequence() || cases.size() == 0) fail(cases, "cases must be a non-empty list");
    std::map<std::string, int> names;  // name -> line
    for (const YAML::Node& n : cases) {
      GateCase c = gate_case(n, default_claim);
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

Tensor read(const std::string& spec) {
  const TensorSpec ts = parse_tensor_spec(spec);
  return read_tensor(ts.path, ts.name);
}

TensorData load(const std::string& spec, const FormatSpec& declared) { return tensor_data(read(spec), declared); }

/// Runs one case; InputError / ProfileError: the case's error.
CheckResult run_case(const GateCase& c, const ClaimSpec& claim, const GateRunOptions& options) {
  if (c.op == "matmul" || c.op == "dot") {
    const FormatSpec& fa = *claim.in;
    const FormatSpec& fb = claim.in_b ? *claim.in_b : fa;
    // Shapes from the headers first: a wrong-shaped operand is refused before any value is read.
    const Tensor ta = read(*c.a), tb = read(*c.b), tc = read(*c.c);
    std::optional<Tensor> td, tr;
    if (c.addend) td = read(*c.addend);
    if (c.ref) tr = read(*c.ref);
    const ShapeRef sd = td ? ShapeRef{td->shape, td->source} : ShapeRef{}, sr = tr ? ShapeRef{tr->shape, tr->source} : ShapeRef{};
    matmul_check_dims({ta.shape, ta.source}, {tb.shape, tb.source}, {tc.shape, tc.source}, td ? &sd : nullptr,
                      tr ? &sr : nullptr, c.op == "dot");
    const TensorData A = tensor_data(ta, fa), B = tensor_data(tb, fb), C = tensor_data(tc, *claim.out);
    MatmulCheckOptions o;
    o.worst = options.worst;
    if (td) o.addend = tensor_data(*td, *claim.acc);
    if (tr) {
      o.ref = tensor_data(*tr, *claim.out);
      o.ref_claim = parse_claim(*c.ref_claim);
    }
    return c.op == "dot" ? check_dot(A, B, C, claim, o) : check_matmul(A, B, C, claim, o);
  }
  const TensorData X = load(*c.x, *claim.in), C = load(*c.c, *claim.out);
  if (c.op == "sum") return check_sum(X, C, c.axis.value_or(-1), claim, options.worst);
  RowCheckOptions o;
  o.worst = options.worst;
  if (c.eps) o.eps = *c.eps;
  return check_rows(*find_row_op(c.op), X, C, claim, o);
}

/// A JSON number, or its text for a non-finite value (JSON has none).
nlohmann::json number(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(fmt::format("{}", x)); }

/// `s` escaped for an XML attribute or text; control characters other than tab and newline
/// (not allowed in XML 1.0) become U+FFFD.
std::string xml(std::string_view s) {
  std::string o;
  for (const char ch : s) {
    switch (ch) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n') o += "\xef\xbf\xbd";
        else o += ch;
    }
  }
  return o;
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

Gate load_gate_text(const std::string& yaml, const std::filesystem::path& path) {
  const GateLoader l(path);
  try {
    return l.load(yaml);
  } catch (const YAML::Exception& e) {  // a value of an unexpected kind not caught above
    detail::strict_yaml_fail(l.rules, e.mark, fmt::format("unexpected YAML value: {}", e.msg));
  }
}

Gate load_gate(const std::filesystem::path& path) { return load_gate_text(read_gate_file(path), path); }

GateResult run_gate(const Gate& gate, const GateRunOptions& options) {
  using clock = std::chrono::steady_clock;
  const auto seconds = [](clock::time_point t0) { return std::chrono::duration<double>(clock::now() - t0).count(); };
  GateResult r;
  r.path = gate.path;
  const auto t_gate = clock::now();
  for (const GateCase& c : gate.cases) {
    GateCaseResult cr;
    cr.name = c.name;
    cr.op = c.op;
    cr.line = c.line;
    cr.claim = c.claim;
    const auto t0 = clock::now();
    std::string step = "claim";
    int line = c.claim_line;
    try {
      const ClaimSpec claim = parse_claim(c.claim);
      cr.claim = claim.text();
      step.clear();
      line = c.line;
      cr.check = run_case(c, claim, options);
    } catch (const InputError& e) {
      cr.error = fmt::format("{}:{}: case '{}': {}{}", gate.path, line, printable(c.name), step.empty() ? "" : step + ": ", e.what());
    } catch (const ProfileError& e) {
      cr.error = fmt::format("{}:{}: case '{}': {}{}", gate.path, line, printable(c.name), step.empty() ? "" : step + ": ", e.what());
    }
    cr.seconds = seconds(t0);
    r.cases.push_back(std::move(cr));
  }
  r.seconds = seconds(t_gate);
  return r;
}

std::string_view GateCaseResult::status() const { return check ? kind_name(check->verdict.kind) : "error"; }

std::string GateCaseResult::reason() const { return check ? check->verdict.reason : error; }

std::int64_t GateResult::count(std::string_view status) const {
  return std::count_if(cases.begin(), cases.end(), [&](const GateCaseResult& c) { return c.status() == status; });
}

int GateResult::exit_code() const {
  if (count("defect") > 0) return 1;
  return count("error") > 0 ? 2 : 0;
}

std::string GateResult::text() const {
  std::string s;
  for (const GateCaseResult& c : cases) s += fmt::format("{:<10}  {}: {}\n", c.status(), printable(c.name), printable(c.reason()));
  s += fmt::format("gate {}: {} cases: {} consistent, {} suspicious, {} defect, {} error (exit {})\n", path, cases.size(),
                   count("consistent"), count("suspicious"), count("defect"), count("error"), exit_code());
  return s;
}

std::string GateResult::junit() const {
  const std::int64_t failures = count("defect"), errors = count("error");
  const std::string suite = std::filesystem::path(path).stem().string();
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += fmt::format("<testsuites name=\"numfid gate\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{:.3f}\">\n", cases.size(),
                   failures, errors, seconds);
  s += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\" time=\"{:.3f}\">\n", xml(path),
                   cases.size(), failures, errors, seconds);
  for (const GateCaseResult& c : cases) {
    s += fmt::format("    <testcase name=\"{}\" classname=\"{}\" time=\"{:.3f}\">\n", xml(c.name), xml(suite), c.seconds);
    s += "      <properties>\n";
    const auto property = [&](std::string_view name, std::string_view value) {
      s += fmt::format("        <property name=\"{}\" value=\"{}\"/>\n", name, xml(value));
    };
    property("op", c.op);
    property("verdict", c.status());
    property("claim", c.claim);
    if (c.check) {
      property("max_error_ulps", fmt::format("{}", c.check->verdict.max_error_ulps));
      property("elements", fmt::format("{}", c.check->verdict.elements));
    }
    s += "      </properties>\n";
    if (!c.check) s += fmt::format("      <error message=\"{}\" type=\"error\"/>\n", xml(c.error));
    else if (c.check->verdict.kind == TensorKind::defect)
      s += fmt::format("      <failure message=\"{}\" type=\"defect\">{}</failure>\n", xml(c.check->verdict.reason),
                       xml(c.check->text()));
    s += "    </testcase>\n";
  }
  s += "  </testsuite>\n</testsuites>\n";
  return s;
}

std::string GateResult::json() const {
  nlohmann::json j;
  j["gate"] = path;
  j["exit_code"] = exit_code();
  j["seconds"] = number(seconds);
  j["summary"] = {{"cases", cases.size()},        {"consistent", count("consistent")}, {"suspicious", count("suspicious")},
                  {"defect", count("defect")},    {"error", count("error")}};
  nlohmann::json list = nlohmann::json::array();
  for (const GateCaseResult& c : cases) {
    nlohmann::json k;
    k["name"] = c.name;
    k["op"] = c.op;
    k["line"] = c.line;
    k["claim"] = c.claim;
    k["status"] = c.status();
    k["reason"] = c.reason();
    k["seconds"] = number(c.seconds);
    if (c.check) {
      k["elements"] = c.check->verdict.elements;
      k["max_error_ulps"] = number(c.check->verdict.max_error_ulps);
      k["check"] = nlohmann::json::parse(c.check->json());
    } else {
      k["error"] = c.error;
    }
    list.push_back(std::move(k));
  }
  j["cases"] = std::move(list);
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace numfid
