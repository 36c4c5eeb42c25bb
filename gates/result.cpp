// A gate run's result: per-case status and its precedence, the exit code, the text, JUnit and
// JSON renderings, the JSON read back, and shards merged. Every rendering reads only the
// result (never a CheckResult), so a merged result renders exactly as the full run's.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "gates/gate_detail.h"
#include "io/error.h"

namespace numfid {

namespace {

using detail::json_number;
using detail::xml_escape;

std::string joined(const std::vector<std::string>& v, std::string_view sep) {
  std::string s;
  for (const std::string& x : v) {
    if (!s.empty()) s += sep;
    s += x;
  }
  return s;
}

std::string shard_text(const GateResult& r) {
  return r.shard_count > 0 ? fmt::format(" shard {}/{}", r.shard_index, r.shard_count) : "";
}

nlohmann::json model_json(const std::optional<ModelMatch>& m) {
  if (!m) return nullptr;
  return {{"equal", m->equal}, {"elements", m->elements}, {"model", m->model}, {"note", m->note}};
}

nlohmann::json platform_json(const GatePlatform& p) {
  return {{"claim", p.claim},     {"verdict", kind_name(p.verdict)}, {"reason", p.reason},   {"max_error_ulps", json_number(p.max_error_ulps)},
          {"model", model_json(p.model)}, {"fixed_order", p.fixed_order}, {"inputs", p.inputs}, {"casts", p.casts},
          {"output", p.output},   {"accumulation", p.accumulation}, {"tiling", p.tiling}};
}

TensorKind kind_named(const detail::JsonReader& r, const std::string& v) {
  if (v == "consistent") return TensorKind::consistent;
  if (v == "suspicious") return TensorKind::suspicious;
  if (v == "defect") return TensorKind::defect;
  r.fail(fmt::format("unknown verdict '{}'", v));
}

std::optional<ModelMatch> model_from(const detail::JsonReader& r, const nlohmann::json& m) {
  if (m.is_null()) return std::nullopt;
  return ModelMatch{r.integer(m, "equal"), r.integer(m, "elements"), r.text(m, "model"), r.text(m, "note")};
}

GatePlatform platform_from(const detail::JsonReader& r, const nlohmann::json& j) {
  GatePlatform p;
  p.claim = r.text(j, "claim");
  p.verdict = kind_named(r, r.text(j, "verdict"));
  p.reason = r.text(j, "reason");
  p.max_error_ulps = r.number(j, "max_error_ulps");
  p.model = model_from(r, r.at(j, "model"));
  p.fixed_order = r.boolean(j, "fixed_order");
  p.inputs = r.text(j, "inputs"), p.casts = r.text(j, "casts"), p.output = r.text(j, "output");
  p.accumulation = r.text(j, "accumulation"), p.tiling = r.text(j, "tiling");
  return p;
}

}  // namespace

std::string_view GateCaseResult::status() const {
  if (!figures) return "error";
  if (figures->verdict == TensorKind::defect) return "defect";
  if (!error.empty()) return "error";
  if (!comparison.regressions.empty()) return "regressed";
  return kind_name(figures->verdict);
}

std::string GateCaseResult::reason() const {
  const std::string_view s = status();
  if (s == "error") return error;  // printable where it is made (the name and the library's message escaped once)
  if (s == "regressed") return printable(fmt::format("regressed against its baseline: {}", joined(comparison.regressions, "; ")));
  return printable(figures->reason);
}

std::int64_t GateResult::count(std::string_view status) const {
  return std::count_if(cases.begin(), cases.end(), [&](const GateCaseResult& c) { return c.status() == status; });
}

int GateResult::exit_code() const {
  if (count("defect") > 0 || count("regressed") > 0) return 1;
  return count("error") > 0 ? 2 : 0;
}

std::string GateResult::text() const {
  std::string s;
  for (const GateCaseResult& c : cases) {
    s += fmt::format("{:<10}  {}: {}\n", c.status(), printable(c.name), c.reason());
    for (const std::string& i : c.comparison.improvements) s += fmt::format("{:<10}  {}: improved: {}\n", "", printable(c.name), i);
    for (const std::string& n : c.comparison.notes) s += fmt::format("{:<10}  {}: baseline: {}\n", "", printable(c.name), n);
    if (c.baseline_state == "written") s += fmt::format("{:<10}  {}: baseline written: {}\n", "", printable(c.name), c.baseline_file);
  }
  for (const std::string& o : orphan_baselines) s += fmt::format("{:<10}  {}: a baseline of no case in the gate\n", "orphan", o);
  s += fmt::format("gate {}{}: {} cases: {} consistent, {} suspicious, {} defect, {} regressed, {} error (exit {})\n", path,
                   shard_text(*this), cases.size(), count("consistent"), count("suspicious"), count("defect"),
                   count("regressed"), count("error"), exit_code());
  return s;
}

std::string GateResult::junit() const {
  const std::int64_t failures = count("defect") + count("regressed"), errors = count("error");
  const std::string suite = std::filesystem::path(path).stem().string();
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += fmt::format("<testsuites name=\"numfid gate\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{:.3f}\">\n", cases.size(),
                   failures, errors, seconds);
  s += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\" time=\"{:.3f}\">\n",
                   xml_escape(path), cases.size(), failures, errors, seconds);
  for (const GateCaseResult& c : cases) {
    s += fmt::format("    <testcase name=\"{}\" classname=\"{}\" time=\"{:.3f}\">\n", xml_escape(c.name), xml_escape(suite), c.seconds);
    s += "      <properties>\n";
    const auto property = [&](std::string_view name, std::string_view value) {
      s += fmt::format("        <property name=\"{}\" value=\"{}\"/>\n", name, xml_escape(value));
    };
    property("op", c.op);
    property("verdict", c.status());
    property("claim", c.claim);
    property("reproduce", c.repro);
    if (c.figures) {
      const ErrorField& f = c.figures->field;
      property("check_verdict", kind_name(c.figures->verdict));
      property("max_error_ulps", fmt::format("{}", c.figures->max_error_ulps));
      property("p99_error_ulps", fmt::format("{}", f.p99_ulps));
      property("fraction_of_bound", fmt::format("{}", f.max_ratio));
      property("bias_ulps", fmt::format("{}", f.bias_mean));
      property("elements", fmt::format("{}", c.figures->elements));
      if (c.figures->model)
        property("model_bit_exact", fmt::format("{} of {} ({})", c.figures->model->equal, c.figures->model->elements, c.figures->model->model));
    }
    if (c.tracked) property("baseline", c.baseline_state);
    for (const std::string& i : c.comparison.improvements) property("improved", i);
    s += "      </properties>\n";
    const std::string_view st = c.status();
    if (st == "error") {
      s += fmt::format("      <error message=\"{}\" type=\"error\"/>\n", xml_escape(c.error));
    } else if (st == "defect") {
      s += fmt::format("      <failure message=\"{}\" type=\"defect\">{}</failure>\n", xml_escape(c.figures->reason),
                       xml_escape(c.figures->report));
    } else if (st == "regressed") {
      s += fmt::format("      <failure message=\"{}\" type=\"regression\">{}\n\n{}</failure>\n", xml_escape(c.reason()),
                       xml_escape(joined(c.comparison.regressions, "\n")), xml_escape(c.figures->report));
    }
    s += "    </testcase>\n";
  }
  s += "  </testsuite>\n</testsuites>\n";
  return s;
}

std::string GateResult::json() const {
  nlohmann::json j;
  j["numfid_gate_result"] = 1;
  j["gate"] = path;
  j["gate_cases"] = gate_cases;
  j["shard"] = shard_count > 0 ? nlohmann::json{{"index", shard_index}, {"count", shard_count}} : nlohmann::json(nullptr);
  j["update_baseline"] = update_baseline;
  j["exit_code"] = exit_code();
  j["seconds"] = json_number(seconds);
  j["summary"] = {{"cases", cases.size()},     {"consistent", count("consistent")}, {"suspicious", count("suspicious")},
                  {"defect", count("defect")}, {"regressed", count("regressed")},   {"error", count("error")}};
  j["orphan_baselines"] = orphan_baselines;
  nlohmann::json list = nlohmann::json::array();
  for (const GateCaseResult& c : cases) {
    nlohmann::json k;
    k["name"] = c.name;
    k["op"] = c.op;
    k["index"] = c.index;
    k["file"] = c.file;
    k["line"] = c.line;
    k["claim"] = c.claim;
    k["reproduce"] = c.repro;
    k["status"] = c.status();
    k["reason"] = c.reason();
    k["seconds"] = json_number(c.seconds);
    if (!c.error.empty()) k["error"] = c.error;
    if (c.figures) {
      const GateFigures& f = *c.figures;
      k["elements"] = f.elements;
      k["max_error_ulps"] = json_number(f.max_error_ulps);
      k["figures"] = {{"verdict", kind_name(f.verdict)},
                      {"reason", f.reason},
                      {"elements", f.elements},
                      {"counts", f.counts},
                      {"max_error_ulps", json_number(f.max_error_ulps)},
                      {"model", model_json(f.model)},
                      {"field", detail::field_json(f.field, true)},
                      {"report", f.report}};
      k["check"] = nlohmann::json::parse(f.check_json);
    }
    if (c.migration)
      k["migration"] = {{"target", platform_json(c.migration->target)},
                        {"reference", platform_json(c.migration->reference)},
                        {"identical", c.migration->identical},
                        {"elements", c.migration->elements},
                        {"cross", {{"verdict", kind_name(c.migration->cross)}, {"reason", c.migration->cross_reason}}}};
    if (c.rerun_identical) k["rerun_identical"] = *c.rerun_identical;
    k["baseline"] = {{"tracked", c.tracked},
                     {"state", c.baseline_state},
                     {"file", c.baseline_file},
                     {"regressions", c.comparison.regressions},
                     {"improvements", c.comparison.improvements},
                     {"notes", c.comparison.notes},
                     {"stored", c.stored ? nlohmann::json::parse(c.stored->json()) : nlohmann::json(nullptr)}};
    list.push_back(std::move(k));
  }
  j["cases"] = std::move(list);
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

GateResult parse_gate_result(const std::string& text, const std::string& file) {
  const detail::JsonReader r{file, "numfid gate result (gate run --json)"};
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    r.fail(e.what());
  }
  if (r.integer(j, "numfid_gate_result") != 1) r.fail("'numfid_gate_result' must be 1");
  GateResult g;
  g.path = r.text(j, "gate");
  g.gate_cases = r.integer(j, "gate_cases");
  if (const nlohmann::json& sh = r.at(j, "shard"); !sh.is_null()) {
    g.shard_index = static_cast<int>(r.integer(sh, "index"));
    g.shard_count = static_cast<int>(r.integer(sh, "count"));
    if (g.shard_count < 1 || g.shard_index < 1 || g.shard_index > g.shard_count) r.fail("'shard' must be {index: I, count: N}, 1 <= I <= N");
  }
  g.update_baseline = r.boolean(j, "update_baseline");
  g.seconds = r.number(j, "seconds");
  g.orphan_baselines = r.texts(j, "orphan_baselines");
  const nlohmann::json& cases = r.at(j, "cases");
  if (!cases.is_array()) r.fail("'cases' must be a list");
  for (const nlohmann::json& k : cases) {
    GateCaseResult c;
    c.name = r.text(k, "name");
    c.op = r.text(k, "op");
    c.index = r.integer(k, "index");
    c.file = r.text(k, "file");
    c.line = static_cast<int>(r.integer(k, "line"));
    c.claim = r.text(k, "claim");
    c.repro = r.text(k, "reproduce");
    c.seconds = r.number(k, "seconds");
    if (k.contains("error")) c.error = r.text(k, "error");
    if (k.contains("figures")) {
      const nlohmann::json& f = r.at(k, "figures");
      GateFigures g2;
      g2.verdict = kind_named(r, r.text(f, "verdict"));
      g2.reason = r.text(f, "reason");
      g2.elements = r.integer(f, "elements");
      const nlohmann::json& counts = r.at(f, "counts");
      if (!counts.is_array() || counts.size() != 4) r.fail("'counts' must be 4 integers");
      for (std::size_t i = 0; i < 4; ++i) g2.counts[i] = r.integer(nlohmann::json{{"n", counts[i]}}, "n");
      g2.max_error_ulps = r.number(f, "max_error_ulps");
      g2.model = model_from(r, r.at(f, "model"));
      g2.field = detail::field_from_json(r.at(f, "field"), r, true);
      g2.report = r.text(f, "report");
      g2.check_json = r.at(k, "check").dump(2) + "\n";  // CheckResult::json()'s own layout
      c.figures = std::move(g2);
    }
    if (k.contains("migration")) {
      const nlohmann::json& m = r.at(k, "migration");
      GateMigration gm;
      gm.target = platform_from(r, r.at(m, "target"));
      gm.reference = platform_from(r, r.at(m, "reference"));
      gm.identical = r.integer(m, "identical");
      gm.elements = r.integer(m, "elements");
      c.migration = std::move(gm);
      const nlohmann::json& x = r.at(m, "cross");
      c.migration->cross = kind_named(r, r.text(x, "verdict"));
      c.migration->cross_reason = r.text(x, "reason");
    }
    if (k.contains("rerun_identical")) c.rerun_identical = r.integer(k, "rerun_identical");
    const nlohmann::json& b = r.at(k, "baseline");
    c.tracked = r.boolean(b, "tracked");
    c.baseline_state = r.text(b, "state");
    c.baseline_file = r.text(b, "file");
    c.comparison.regressions = r.texts(b, "regressions");
    c.comparison.improvements = r.texts(b, "improvements");
    c.comparison.notes = r.texts(b, "notes");
    if (const nlohmann::json& st = r.at(b, "stored"); !st.is_null()) c.stored = parse_gate_baseline(st.dump(), file);
    if (c.status() != r.text(k, "status")) r.fail(fmt::format("case '{}': its status does not follow from its figures", c.name));
    g.cases.push_back(std::move(c));
  }
  return g;
}

GateResult merge_gate_results(const std::vector<GateResult>& parts) {
  if (parts.empty()) throw InputError("gate merge: no results to merge");
  const GateResult& first = parts.front();
  GateResult m;
  m.path = first.path;
  m.gate_cases = first.gate_cases;
  std::set<int> shards;
  std::set<std::string> orphans;
  for (const GateResult& p : parts) {
    if (p.path != first.path) throw InputError(fmt::format("gate merge: results of different gates ('{}' and '{}')", first.path, p.path));
    if (p.gate_cases != first.gate_cases || p.shard_count != first.shard_count)
      throw InputError(fmt::format("gate merge: results of {} disagree on the gate's cases or the shard count", first.path));
    if (!shards.insert(p.shard_index).second)
      throw InputError(fmt::format("gate merge: shard {}/{} given twice", p.shard_index, p.shard_count));
    m.update_baseline = m.update_baseline || p.update_baseline;
    m.seconds = std::max(m.seconds, p.seconds);  // the shards ran side by side
    orphans.insert(p.orphan_baselines.begin(), p.orphan_baselines.end());
    m.cases.insert(m.cases.end(), p.cases.begin(), p.cases.end());
  }
  const int n = std::max(first.shard_count, 1);
  for (int i = first.shard_count > 0 ? 1 : 0; i <= (first.shard_count > 0 ? n : 0); ++i)
    if (!shards.count(i)) throw InputError(fmt::format("gate merge: shard {}/{} of {} is missing", i, n, first.path));
  std::sort(m.cases.begin(), m.cases.end(), [](const GateCaseResult& a, const GateCaseResult& b) { return a.index < b.index; });
  for (std::size_t i = 0; i < m.cases.size(); ++i)
    if (m.cases[i].index != static_cast<std::int64_t>(i))
      throw InputError(fmt::format("gate merge: case #{} of {} is {} (a shard run of another version of the gate file?)", i,
                                   first.path, i < m.cases.size() && m.cases[i].index < static_cast<std::int64_t>(i) ? "given twice" : "missing"));
  if (static_cast<std::int64_t>(m.cases.size()) != m.gate_cases)
    throw InputError(fmt::format("gate merge: {} cases merged, the gate has {}", m.cases.size(), m.gate_cases));
  m.orphan_baselines.assign(orphans.begin(), orphans.end());
  return m;
}

}  // namespace numfid
