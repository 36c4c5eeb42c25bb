// Baselines (docs/gate.md, "Baselines and regressions"): the small JSON summary stored per
// tracked case, and the regression rule that compares a run's error field with it. Also the
// JSON helpers the gate's documents share (gates/gate_detail.h).
#include <algorithm>
#include <cfloat>
#include <cmath>

#include <fmt/format.h>

#include "gates/gate_detail.h"
#include "io/error.h"

namespace numfid {

namespace detail {

nlohmann::json json_number(double x) {
  if (std::isfinite(x)) return x;
  return std::isnan(x) ? "nan" : x > 0 ? "inf" : "-inf";
}

void JsonReader::fail(const std::string& msg) const { throw InputError(fmt::format("{}: not a {}: {}", file, what, msg)); }

const nlohmann::json& JsonReader::at(const nlohmann::json& j, std::string_view key) const {
  if (!j.is_object()) fail(fmt::format("expected an object holding '{}'", key));
  const auto it = j.find(key);
  if (it == j.end()) fail(fmt::format("missing '{}'", key));
  return *it;
}

double JsonReader::number(const nlohmann::json& j, std::string_view key) const {
  const nlohmann::json& v = at(j, key);
  if (v.is_number()) return v.get<double>();
  if (v == "inf") return INFINITY;
  if (v == "-inf") return -INFINITY;
  if (v == "nan") return NAN;
  fail(fmt::format("'{}' must be a number", key));
}

std::int64_t JsonReader::integer(const nlohmann::json& j, std::string_view key) const {
  const nlohmann::json& v = at(j, key);
  if (!v.is_number_integer()) fail(fmt::format("'{}' must be an integer", key));
  return v.get<std::int64_t>();
}

std::string JsonReader::text(const nlohmann::json& j, std::string_view key) const {
  const nlohmann::json& v = at(j, key);
  if (!v.is_string()) fail(fmt::format("'{}' must be a string", key));
  return v.get<std::string>();
}

bool JsonReader::boolean(const nlohmann::json& j, std::string_view key) const {
  const nlohmann::json& v = at(j, key);
  if (!v.is_boolean()) fail(fmt::format("'{}' must be true or false", key));
  return v.get<bool>();
}

std::vector<double> JsonReader::numbers(const nlohmann::json& j, std::string_view key) const {
  const nlohmann::json& v = at(j, key);
  if (!v.is_array()) fail(fmt::format("'{}' must be a list of numbers", key));
  std::vector<double> out;
  for (std::size_t i = 0; i < v.size(); ++i) out.push_back(number(nlohmann::json{{"x", v[i]}}, "x"));
  return out;
}

std::vector<std::string> JsonReader::texts(const nlohmann::json& j, std::string_view key) const {
  const nlohmann::json& v = at(j, key);
  if (!v.is_array()) fail(fmt::format("'{}' must be a list of strings", key));
  std::vector<std::string> out;
  for (const nlohmann::json& s : v) {
    if (!s.is_string()) fail(fmt::format("'{}' must be a list of strings", key));
    out.push_back(s.get<std::string>());
  }
  return out;
}

nlohmann::json field_json(const ErrorField& f, bool maps) {
  nlohmann::json j;
  const auto list = [](const std::vector<double>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const double x : v) a.push_back(json_number(x));
    return a;
  };
  j["elements"] = f.elements;
  j["nonfinite"] = f.nonfinite;
  j["max_error_ulps"] = json_number(f.max_ulps);
  j["p99_error_ulps"] = json_number(f.p99_ulps);
  j["p99_low"] = json_number(f.p99_low);
  j["p99_high"] = json_number(f.p99_high);
  j["fraction_of_bound"] = json_number(f.max_ratio);
  j["unbounded_elements"] = f.unbounded;
  j["alpha"] = f.alpha;
  j["bias_elements"] = f.bias_elements;
  j["bias_mean_ulps"] = json_number(f.bias_mean);
  j["bias_sd_ulps"] = json_number(f.bias_sd);
  j["top_error_ulps"] = list(f.top_ulps);
  j["top_fraction_of_bound"] = list(f.top_ratio);
  if (maps) {
    j["grid"] = {f.rows, f.cols};
    j["heatmap_shape"] = {f.heat_rows, f.heat_cols};
    nlohmann::json h = nlohmann::json::array();
    for (const float v : f.heatmap) h.push_back(json_number(v));
    j["heatmap"] = std::move(h);
    j["histogram_range_ulps"] = f.hist_range;
    j["histogram"] = f.histogram;
  }
  return j;
}

ErrorField field_from_json(const nlohmann::json& j, const JsonReader& r, bool maps) {
  ErrorField f;
  f.elements = r.integer(j, "elements");
  f.nonfinite = r.integer(j, "nonfinite");
  f.max_ulps = r.number(j, "max_error_ulps");
  f.p99_ulps = r.number(j, "p99_error_ulps");
  f.p99_low = r.number(j, "p99_low");
  f.p99_high = r.number(j, "p99_high");
  f.max_ratio = r.number(j, "fraction_of_bound");
  // (absent from baselines written before it was recorded: 0, as they were read then)
  if (j.contains("unbounded_elements")) f.unbounded = r.integer(j, "unbounded_elements");
  f.alpha = r.number(j, "alpha");
  f.bias_elements = r.integer(j, "bias_elements");
  f.bias_mean = r.number(j, "bias_mean_ulps");
  f.bias_sd = r.number(j, "bias_sd_ulps");
  f.top_ulps = r.numbers(j, "top_error_ulps");
  f.top_ratio = r.numbers(j, "top_fraction_of_bound");
  if (!(f.alpha > 0 && f.alpha < 1)) r.fail("'alpha' must lie in (0, 1)");
  if (f.elements < 0 || f.bias_elements < 0 || f.bias_elements > f.elements || f.unbounded < 0 || f.unbounded > f.elements)
    r.fail("element counts out of range");
  if (maps) {
    const nlohmann::json& g = r.at(j, "grid");
    const nlohmann::json& hs = r.at(j, "heatmap_shape");
    if (!g.is_array() || g.size() != 2 || !hs.is_array() || hs.size() != 2) r.fail("'grid' and 'heatmap_shape' must be [rows, cols]");
    f.rows = r.integer(nlohmann::json{{"r", g[0]}}, "r"), f.cols = r.integer(nlohmann::json{{"c", g[1]}}, "c");
    f.heat_rows = r.integer(nlohmann::json{{"r", hs[0]}}, "r"), f.heat_cols = r.integer(nlohmann::json{{"c", hs[1]}}, "c");
    if (f.heat_rows < 0 || f.heat_cols < 0 || f.heat_rows > ErrorField::kHeatmapSide || f.heat_cols > ErrorField::kHeatmapSide)
      r.fail("'heatmap_shape' out of range");
    for (const double v : r.numbers(j, "heatmap"))  // (a value beyond float's range: infinite, not UB)
      f.heatmap.push_back(std::fabs(v) <= FLT_MAX || std::isnan(v) ? static_cast<float>(v) : std::copysign(INFINITY, static_cast<float>(v > 0 ? 1 : -1)));
    if (static_cast<std::int64_t>(f.heatmap.size()) != f.heat_rows * f.heat_cols) r.fail("'heatmap' does not match its shape");
    f.hist_range = r.number(j, "histogram_range_ulps");
    const nlohmann::json& h = r.at(j, "histogram");
    if (!h.is_array()) r.fail("'histogram' must be a list of counts");
    for (const nlohmann::json& v : h) f.histogram.push_back(r.integer(nlohmann::json{{"n", v}}, "n"));
  }
  return f;
}

std::string md_text(std::string_view s) {
  std::string o;
  for (const char ch : s) {
    if ((static_cast<unsigned char>(ch) < 0x20 && ch != '\n') || ch == 0x7f) {  // callers pass printable() text
      o += "\xef\xbf\xbd";
      continue;
    }
    switch (ch) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '\n': o += ' '; break;
      case '\\': case '`': case '*': case '[': case ']': case '~': case '|':
        o += '\\';
        o += ch;
        break;
      default: o += ch;
    }
  }
  return o;
}

std::string xml_escape(std::string_view s) {
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

std::string shell_word(std::string_view s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("_./:=@%+-,").find(c) != std::string_view::npos;
  });
  if (plain) return std::string(s);
  std::string o = "'";
  for (const char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

std::string short_number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return fmt::format("{:.3g}", x);
}

}  // namespace detail

namespace {

/// P(the j largest of n0 + n1 exchangeable values all lie among the n1): C(n1, j) / C(n0 + n1, j).
double all_largest_in(std::int64_t n1, std::int64_t n0, std::int64_t j) {
  double p = 1;
  for (std::int64_t i = 0; i < j; ++i) p *= static_cast<double>(n1 - i) / static_cast<double>(n0 + n1 - i);
  return p;
}

/// How many of `top` (descending) exceed x.
std::int64_t count_above(const std::vector<double>& top, double x) {
  return std::count_if(top.begin(), top.end(), [&](double v) { return v > x; });
}

/// z with P(Z > z) = alpha for a standard normal Z (bisection on erfc).
double normal_quantile(double alpha) {
  double lo = 0, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (0.5 * std::erfc(mid / std::sqrt(2.0)) > alpha ? lo : hi) = mid;
  }
  return hi;
}

/// Fewest elements for the mean signed error's normal approximation (as the bias signature).
constexpr std::int64_t kBiasMinElements = 32;

}  // namespace

std::string GateBaseline::json() const {
  nlohmann::json j;
  j["numfid_baseline"] = 1;
  j["case"] = name;
  j["op"] = op;
  j["claim"] = claim;
  j["numfid_version"] = numfid_version;
  j["field"] = detail::field_json(field, false);
  j["bit_exact_vs_model"] = bit_exact_vs_model ? nlohmann::json(*bit_exact_vs_model) : nlohmann::json(nullptr);
  j["model_equal"] = model_equal ? nlohmann::json(*model_equal) : nlohmann::json(nullptr);
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

GateBaseline parse_gate_baseline(const std::string& text, const std::string& file) {
  const detail::JsonReader r{file, "numfid baseline"};
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    r.fail(e.what());
  }
  if (r.integer(j, "numfid_baseline") != 1) r.fail("'numfid_baseline' must be 1");
  GateBaseline b;
  b.name = r.text(j, "case");
  b.op = r.text(j, "op");
  b.claim = r.text(j, "claim");
  b.numfid_version = r.text(j, "numfid_version");
  b.field = detail::field_from_json(r.at(j, "field"), r, false);
  const nlohmann::json& bx = r.at(j, "bit_exact_vs_model");
  if (!bx.is_null()) b.bit_exact_vs_model = r.boolean(j, "bit_exact_vs_model");
  const nlohmann::json& me = r.at(j, "model_equal");
  if (!me.is_null()) b.model_equal = r.integer(j, "model_equal");
  return b;
}

BaselineComparison compare_to_baseline(const GateBaseline& old, const GateBaseline& now) {
  BaselineComparison c;
  const ErrorField &f0 = old.field, &f1 = now.field;
  const double alpha = f1.alpha;
  if (old.claim != now.claim) {
    c.notes.push_back(fmt::format("the baseline was stored under another claim ('{}'): its figures are not comparable; "
                                  "run with --update-baseline",
                                  old.claim));
    return c;
  }
  // Bit-exactness against the claim's model: exact, no chance involved.
  if (old.bit_exact_vs_model && now.bit_exact_vs_model) {
    if (*old.bit_exact_vs_model && !*now.bit_exact_vs_model)
      c.regressions.push_back(fmt::format("no longer bit-exact against its model: {} of {} elements equal the prediction "
                                          "(baseline: all {})",
                                          now.model_equal.value_or(0), f1.elements, f0.elements));
    if (!*old.bit_exact_vs_model && *now.bit_exact_vs_model)
      c.improvements.push_back(fmt::format("now bit-exact against its model (baseline: {} of {})", old.model_equal.value_or(0),
                                           f0.elements));
  } else if (old.bit_exact_vs_model && !now.bit_exact_vs_model) {
    c.notes.push_back("the baseline's model prediction did not run now: bit-exactness not compared");
  }
  if (f0.elements == 0 || f1.elements == 0) return c;
  // The maximum: under "same error distribution" (exchangeable errors), the j largest of all
  // n0 + n1 errors lie all in the new run with probability C(n1, j) / C(n0 + n1, j).
  const auto tail = [&](const char* what, const std::vector<double>& top0, const std::vector<double>& top1, double max0,
                        double max1, const char* unit) {
    if (const std::int64_t j = count_above(top1, max0); j > 0) {
      const double p = all_largest_in(f1.elements, f0.elements, j);
      if (p <= alpha)
        c.regressions.push_back(fmt::format("{}: {}{} elements exceed the baseline's maximum {}{} (now {}{}); P = {:.2g} "
                                            "that a rerun with the same error distribution does",
                                            what, j, j >= static_cast<std::int64_t>(ErrorField::kTop) ? "+" : "",
                                            detail::short_number(max0), unit, detail::short_number(max1), unit, p));
    }
    if (const std::int64_t j = count_above(top0, max1); j > 0) {
      const double p = all_largest_in(f0.elements, f1.elements, j);
      if (p <= alpha)
        c.improvements.push_back(fmt::format("{}: {}{} baseline elements exceeded today's maximum {}{} (baseline {}{}); "
                                             "P = {:.2g} by chance",
                                             what, j, j >= static_cast<std::int64_t>(ErrorField::kTop) ? "+" : "",
                                             detail::short_number(max1), unit, detail::short_number(max0), unit, p));
    }
  };
  tail("max error", f0.top_ulps, f1.top_ulps, f0.max_ulps, f1.max_ulps, " ulps");
  tail("fraction of bound", f0.top_ratio, f1.top_ratio, f0.max_ratio, f1.max_ratio, "");
  // The 99th percentile: disjoint distribution-free confidence limits (each at alpha).
  if (f1.p99_low > f0.p99_high)
    c.regressions.push_back(fmt::format("p99 error: {} ulps (at least {} at confidence 1 - {:g}), above the baseline's {} "
                                        "(at most {})",
                                        detail::short_number(f1.p99_ulps), detail::short_number(f1.p99_low), alpha,
                                        detail::short_number(f0.p99_ulps), detail::short_number(f0.p99_high)));
  else if (f1.p99_high < f0.p99_low)
    c.improvements.push_back(fmt::format("p99 error: {} ulps (at most {}), below the baseline's {} (at least {})",
                                         detail::short_number(f1.p99_ulps), detail::short_number(f1.p99_high),
                                         detail::short_number(f0.p99_ulps), detail::short_number(f0.p99_low)));
  // Bias: |mean| grew by more than z(alpha) standard errors of the difference of the means.
  if (f0.bias_elements >= kBiasMinElements && f1.bias_elements >= kBiasMinElements) {
    const double se = std::sqrt(f0.bias_sd * f0.bias_sd / static_cast<double>(f0.bias_elements) +
                                f1.bias_sd * f1.bias_sd / static_cast<double>(f1.bias_elements));
    const double z = normal_quantile(alpha);
    const double d = std::fabs(f1.bias_mean) - std::fabs(f0.bias_mean);
    if (d > z * se)
      c.regressions.push_back(fmt::format("bias: mean signed error {:+.3f} ulps, baseline {:+.3f}: |mean| grew by {:.1f} "
                                          "standard errors (chance: {:.1f} at most)",
                                          f1.bias_mean, f0.bias_mean, se > 0 ? d / se : INFINITY, z));
    else if (-d > z * se)
      c.improvements.push_back(fmt::format("bias: mean signed error {:+.3f} ulps, baseline {:+.3f}", f1.bias_mean,
                                           f0.bias_mean));
  }
  return c;
}

}  // namespace numfid
