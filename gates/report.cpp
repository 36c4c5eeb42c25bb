// The gate's human reports: a Markdown summary for CI job pages and the self-contained HTML
// report (inline CSS, JS and SVG: no network, works from a file:// URL), both rendered from
// the GateResult alone so that merged shards render exactly as the full run.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "gates/gate_detail.h"
#include "gates/migration.h"
#include "io/atomic_file.h"
#include "io/error.h"

namespace numfid {

namespace {

using detail::short_number;
using detail::md_text;
using detail::xml_escape;

/// The heatmap as a canvas drawn by the page's script from one byte per cell (hex): |error| /
/// bound in [0, 1] as 0..254, beyond the bound (or not finite) as 255. A canvas and 2 hex
/// digits per cell keep a 64×64 map at 8 KB where an SVG of rectangles would take 300 KB.
std::string heatmap_canvas(const ErrorField& f) {
  if (f.heat_rows <= 0 || f.heat_cols <= 0) return "";
  const std::int64_t cell = std::max<std::int64_t>(4, std::min<std::int64_t>(12, 512 / std::max(f.heat_rows, f.heat_cols)));
  std::string cells;
  for (const float v : f.heatmap) {
    const int q = v <= 1 ? static_cast<int>(std::lround(std::max(0.0f, v) * 254)) : 255;
    cells += fmt::format("{:02x}", q);
  }
  return fmt::format("<canvas class=\"heatmap\" width=\"{}\" height=\"{}\" data-rows=\"{}\" data-cols=\"{}\" data-cells=\"{}\">"
                     "</canvas>",
                     cell * f.heat_cols, cell * f.heat_rows, f.heat_rows, f.heat_cols, cells);
}

std::string histogram_svg(const ErrorField& f) {
  if (f.histogram.empty()) return "";
  const std::int64_t top = std::max<std::int64_t>(1, *std::max_element(f.histogram.begin(), f.histogram.end()));
  const double bw = 14, hh = 120;
  std::string s = fmt::format("<svg class=\"histogram\" width=\"{:.0f}\" height=\"{:.0f}\" role=\"img\" aria-label=\"error histogram\">",
                              bw * static_cast<double>(f.histogram.size()), hh + 16);
  const double width = 2 * f.hist_range / static_cast<double>(f.histogram.size());
  for (std::size_t i = 0; i < f.histogram.size(); ++i) {
    // Heights on a log scale so that a few outliers stay visible next to a peak of thousands.
    const double n = static_cast<double>(f.histogram[i]);
    const double bar = n > 0 ? hh * std::log1p(n) / std::log1p(static_cast<double>(top)) : 0;
    const double lo = -f.hist_range + width * static_cast<double>(i);
    s += fmt::format("<rect x=\"{:.0f}\" y=\"{:.1f}\" width=\"{:.0f}\" height=\"{:.1f}\" fill=\"#3b6ea5\"><title>[{}, {}) ulps: "
                     "{}</title></rect>",
                     bw * static_cast<double>(i), hh - bar, bw - 1, bar, short_number(lo), short_number(lo + width), f.histogram[i]);
  }
  s += fmt::format("<text x=\"0\" y=\"{:.0f}\" font-size=\"10\">-{} ulps</text>", hh + 13, short_number(f.hist_range));
  s += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" font-size=\"10\" text-anchor=\"end\">+{} ulps</text>",
                   bw * static_cast<double>(f.histogram.size()), hh + 13, short_number(f.hist_range));
  return s + "</svg>";
}

std::string list_html(const char* title, const std::vector<std::string>& items) {
  if (items.empty()) return "";
  std::string s = fmt::format("<p><b>{}</b></p><ul>", title);
  for (const std::string& i : items) s += fmt::format("<li>{}</li>", xml_escape(i));
  return s + "</ul>";
}

/// A JSON array of indices as the report writes a position: "[1, 2, 5, 7]" (escaped).
std::string position_text(const nlohmann::json& p) {
  std::vector<std::string> parts;
  if (p.is_array())
    for (const nlohmann::json& x : p) parts.push_back(xml_escape(x.dump()));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

/// Worst elements, signatures and derivation, from the check's own JSON document (read
/// defensively: a merged result's document comes from a file).
std::string check_details_html(const GateFigures& f) {
  const nlohmann::json j = nlohmann::json::parse(f.check_json, nullptr, false);
  if (!j.is_object()) return "";
  const auto field = [](const nlohmann::json& o, const char* k) {
    return o.is_object() && o.contains(k) ? xml_escape(o[k].is_string() ? o[k].get<std::string>() : o[k].dump()) : std::string();
  };
  const auto list = [&](const char* k) { return j.contains(k) && j[k].is_array() ? j[k] : nlohmann::json::array(); };
  std::string s;
  if (j.contains("model")) s += fmt::format("<p>{}</p>", field(j, "model"));
  if (!list("worst").empty()) {
    s += "<p><b>Worst elements</b> (|error| / deterministic bound)</p><table class=\"worst\"><tr><th>index</th><th>value</th>"
         "<th>exact</th><th>error ulps</th><th>of bound</th><th>class</th></tr>";
    // Each element at its position in the output (a stack's [b, h, i, j]), as `numfid check` lists it.
    const auto position = [&](const nlohmann::json& e) {
      if (!e.is_object() || !e.contains("position") || !e["position"].is_array())
        return fmt::format("[{}, {}]", field(e, "row"), field(e, "col"));
      return position_text(e["position"]);
    };
    for (const nlohmann::json& e : list("worst"))
      s += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", position(e),
                       field(e, "value"), field(e, "exact"), field(e, "error_ulps"), field(e, "fraction_of_bound"),
                       field(e, "class"));
    s += "</table>";
  }
  // A stack's matrices holding elements outside the deterministic bound.
  if (j.contains("matrices") && j["matrices"].is_object() && j["matrices"].contains("outside_deterministic") &&
      j["matrices"]["outside_deterministic"].is_array() && !j["matrices"]["outside_deterministic"].empty()) {
    std::vector<std::string> m;
    for (const nlohmann::json& x : j["matrices"]["outside_deterministic"])
      m.push_back(fmt::format("{} ({})", x.is_object() && x.contains("position") ? position_text(x["position"]) : "",
                              field(x, "elements")));
    s += fmt::format("<p><b>Matrices holding elements outside the deterministic bound</b> ({} of {}): {}</p>", m.size(),
                     field(j["matrices"], "count"), fmt::join(m, ", "));
  }
  if (!list("signatures").empty()) {
    s += "<p><b>Signatures</b></p><ul>";
    for (const nlohmann::json& g : list("signatures")) s += fmt::format("<li><b>{}</b>: {}</li>", field(g, "name"), field(g, "evidence"));
    s += "</ul>";
  }
  s += "<details><summary>Bound derivation</summary><pre>";
  for (const nlohmann::json& d : list("derivation")) s += (d.is_string() ? xml_escape(d.get<std::string>()) : xml_escape(d.dump())) + "\n";
  return s + "</pre></details>";
}

/// The baseline's figures beside today's.
std::string baseline_table(const GateBaseline& b, const GateFigures& f) {
  const ErrorField &o = b.field, &n = f.field;
  const auto model = [](const std::optional<bool>& x) { return x ? (*x ? "yes" : "no") : "no model ran"; };
  std::optional<bool> today;
  if (f.model) today = f.model->equal == f.model->elements;
  std::string s = fmt::format("<table class=\"baseline\"><tr><th>figure</th><th>baseline ({})</th><th>today</th></tr>",
                              xml_escape(b.numfid_version.empty() ? std::string() : fmt::format("numfid {}", b.numfid_version)));
  const auto row = [&](const char* what, const std::string& x, const std::string& y) {
    s += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>", what, xml_escape(x), xml_escape(y));
  };
  row("elements", fmt::format("{}", o.elements), fmt::format("{}", n.elements));
  row("max error (ulps)", short_number(o.max_ulps), short_number(n.max_ulps));
  row("p99 error (ulps) [limits]", fmt::format("{} [{}, {}]", short_number(o.p99_ulps), short_number(o.p99_low), short_number(o.p99_high)),
      fmt::format("{} [{}, {}]", short_number(n.p99_ulps), short_number(n.p99_low), short_number(n.p99_high)));
  row("fraction of bound", short_number(o.max_ratio), short_number(n.max_ratio));
  row("bias (ulps) ± sd", fmt::format("{} ± {}", short_number(o.bias_mean), short_number(o.bias_sd)),
      fmt::format("{} ± {}", short_number(n.bias_mean), short_number(n.bias_sd)));
  row("bit-exact vs model", model(b.bit_exact_vs_model), model(today));
  return s + "</table>";
}

constexpr const char* kStyle = R"(body{font-family:sans-serif;margin:1.5em;max-width:90em}
table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:.2em .5em;text-align:left}
th{background:#eee;cursor:pointer}th.sorted-asc::after{content:" \25B2"}th.sorted-desc::after{content:" \25BC"}
.consistent{color:#176117}.suspicious{color:#8a6d00}.defect,.regressed,.error{color:#b00020;font-weight:bold}
.case{border-top:2px solid #ccc;margin-top:1.5em}pre{background:#f6f6f6;padding:.5em;overflow-x:auto;white-space:pre-wrap}
.maps{display:flex;gap:2em;flex-wrap:wrap;align-items:flex-start}.heatmap{border:1px solid #999}
)";

// Sorts the summary table by the clicked column (numbers by data-sort, else text).
constexpr const char* kScript = R"(document.querySelectorAll('table.sortable th').forEach(function(th,col){
th.addEventListener('click',function(){var t=th.closest('table'),b=t.tBodies[0],rows=Array.from(b.rows);
var asc=!th.classList.contains('sorted-asc');t.querySelectorAll('th').forEach(function(h){h.classList.remove('sorted-asc','sorted-desc');});
th.classList.add(asc?'sorted-asc':'sorted-desc');
rows.sort(function(x,y){var a=x.cells[col].dataset.sort,c=y.cells[col].dataset.sort;
var p=a!==undefined?parseFloat(a):NaN,q=c!==undefined?parseFloat(c):NaN;
var r=(!isNaN(p)&&!isNaN(q))?p-q:x.cells[col].textContent.localeCompare(y.cells[col].textContent);return asc?r:-r;});
rows.forEach(function(r){b.appendChild(r);});});});
document.querySelectorAll('canvas.heatmap').forEach(function(c){var g=c.getContext('2d'),r=+c.dataset.rows,k=+c.dataset.cols,
d=c.dataset.cells,w=c.width/k,h=c.height/r;for(var i=0;i<r;i++)for(var j=0;j<k;j++){var q=parseInt(d.substr(2*(i*k+j),2),16),t=q/254;
g.fillStyle=q==255?'#6a0dad':'rgb('+Math.round(t<0.5?510*t:255)+','+Math.round(t<0.5?200:400*(1-t))+',64)';g.fillRect(j*w,i*h,w,h);}});
document.body.dataset.ready='yes';
)";

/// The fraction of the bound used, or why there is none: a vacuous (infinite) bound gives a
/// ratio of 0 that would read as "perfect".
std::string ratio_text(const ErrorField& e) {
  if (e.unbounded == 0) return short_number(e.max_ratio);
  if (e.unbounded >= e.elements) return "no finite bound";
  return fmt::format("{} ({} of {} elements without a finite bound)", short_number(e.max_ratio), e.unbounded, e.elements);
}

std::string sort_number(double x) { return std::isfinite(x) ? fmt::format("{}", x) : x > 0 ? "1e308" : "-1e308"; }

}  // namespace

std::string GateResult::markdown() const {
  std::string s = fmt::format("## numfid gate {}\n\n", md_text(printable(path)));
  s += fmt::format("**{}** cases: {} consistent, {} suspicious, {} defect, {} regressed, {} error — exit {}\n\n", cases.size(),
                   count("consistent"), count("suspicious"), count("defect"), count("regressed"), count("error"), exit_code());
  s += "| case | op | verdict | max error (ulps) | p99 (ulps) | fraction of bound | reason |\n|---|---|---|---|---|---|---|\n";
  for (const GateCaseResult& c : cases) {
    const bool f = c.figures.has_value();
    s += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", md_text(printable(c.name)), c.op, c.status(),
                     f ? short_number(c.figures->max_error_ulps) : "", f ? short_number(c.figures->field.p99_ulps) : "",
                     f ? ratio_text(c.figures->field) : "", md_text(c.reason()));
  }
  std::string extra;
  for (const GateCaseResult& c : cases)
    for (const std::string& i : c.comparison.improvements) extra += fmt::format("- {} improved: {}\n", md_text(printable(c.name)), md_text(i));
  for (const std::string& o : orphan_baselines) extra += fmt::format("- orphan baseline {}: no case of the gate\n", md_text(printable(o)));
  if (!extra.empty()) s += fmt::format("\n{}", extra);
  const std::string migration = migration_markdown(*this);
  if (!migration.empty()) s += fmt::format("\n{}", migration);
  return s;
}

std::string GateResult::html() const {
  std::string s = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  s += fmt::format("<title>numfid gate {}</title><style>{}</style></head><body>\n", xml_escape(path), kStyle);
  s += fmt::format("<h1>numfid gate <code>{}</code></h1>\n", xml_escape(path));
  s += fmt::format("<p id=\"totals\">{} cases: {} consistent, {} suspicious, {} defect, {} regressed, {} error — exit code "
                   "<b>{}</b>; {:.2f} s</p>\n",
                   cases.size(), count("consistent"), count("suspicious"), count("defect"), count("regressed"), count("error"),
                   exit_code(), seconds);
  s += "<table id=\"summary\" class=\"sortable\"><thead><tr><th>case</th><th>op</th><th>claim</th><th>verdict</th>"
       "<th>max error (ulps)</th><th>p99 (ulps)</th><th>fraction of bound</th><th>time (s)</th></tr></thead><tbody>\n";
  for (const GateCaseResult& c : cases) {
    const bool f = c.figures.has_value();
    const auto num = [&](double x, const std::string& text = {}) {
      return f ? fmt::format("<td data-sort=\"{}\">{}</td>", sort_number(x), text.empty() ? short_number(x) : xml_escape(text))
               : std::string("<td data-sort=\"-1\"></td>");
    };
    s += fmt::format("<tr data-case=\"{}\" data-verdict=\"{}\"><td><a href=\"#case-{}\">{}</a></td><td>{}</td><td><code>{}</code></td>"
                     "<td class=\"{}\">{}</td>{}{}{}<td data-sort=\"{}\">{:.3f}</td></tr>\n",
                     xml_escape(c.name), c.status(), c.index, xml_escape(c.name), c.op, xml_escape(c.claim), c.status(), c.status(),
                     num(f ? c.figures->max_error_ulps : 0), num(f ? c.figures->field.p99_ulps : 0),
                     num(f ? c.figures->field.max_ratio : 0, f ? ratio_text(c.figures->field) : std::string()),
                     sort_number(c.seconds), c.seconds);
  }
  s += "</tbody></table>\n";
  if (!orphan_baselines.empty()) s += list_html("Baselines of no case in the gate", orphan_baselines);
  for (const GateCaseResult& c : cases) {
    s += fmt::format("<section class=\"case\" id=\"case-{}\"><h2>{} — <span class=\"{}\">{}</span></h2>\n", c.index,
                     xml_escape(c.name), c.status(), c.status());
    s += fmt::format("<p>op <b>{}</b>, claim <code>{}</code> ({}:{})</p><p class=\"reason\">{}</p>\n", c.op, xml_escape(c.claim),
                     xml_escape(c.file), c.line, xml_escape(c.reason()));
    s += fmt::format("<p>Reproduce:</p><pre>{}</pre>\n", xml_escape(c.repro));
    s += list_html("Regressions against the baseline", c.comparison.regressions);
    s += list_html("Improvements against the baseline", c.comparison.improvements);
    s += list_html("Baseline", c.comparison.notes);
    if (c.stored && c.figures) s += baseline_table(*c.stored, *c.figures);
    if (c.figures) {
      const GateFigures& f = *c.figures;
      const ErrorField& e = f.field;
      s += fmt::format("<p>{} elements: {} bit-exact, {} within the probabilistic bound, {} within the deterministic bound only, "
                       "{} outside it. Max error {} ulps, p99 {} ulps, fraction of bound used {}, mean signed error {} ulps.</p>\n",
                       f.elements, f.counts[0], f.counts[1], f.counts[2], f.counts[3], short_number(f.max_error_ulps),
                       short_number(e.p99_ulps), ratio_text(e), short_number(e.bias_mean));
      s += fmt::format("<div class=\"maps\"><figure>{}<figcaption>|error| / bound over the output ({}×{}, shown as {}×{} cells, max "
                       "per cell; green 0, red 1, purple beyond)</figcaption></figure><figure>{}<figcaption>errors in output ulps "
                       "(log-scaled counts)</figcaption></figure></div>\n",
                       heatmap_canvas(e), e.rows, e.cols, e.heat_rows, e.heat_cols, histogram_svg(e));
      s += check_details_html(f);
    }
    s += migration_html(c);
    s += "</section>\n";
  }
  s += fmt::format("<script>{}</script>\n</body></html>\n", kScript);
  return s;
}

void write_gate_report(const GateResult& r, const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError(fmt::format("{}: cannot create the report directory: {}", dir.string(), ec.message()));
  write_file_atomically(dir / "index.html", r.html());
  write_file_atomically(dir / "summary.md", r.markdown());
}

}  // namespace numfid
