// Checks a gate's HTML report as headless Chromium rendered it (tests/gate_report_chromium.sh):
//   gate_report_check RESULT.json DOM.html
// RESULT.json: the run's `--json`; DOM.html: `chromium --headless --dump-dom` of its report.
// Every case must be on the page with its verdict: a summary-table row (data-case, data-verdict
// and the verdict cell's text) and a section headed by its name and verdict; the page's script
// must have run from the file:// URL (body data-ready="yes"). Exit 0, or 1 naming what is missing.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace {

std::string slurp(const char* p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open", p));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// `s` as the HTML serialisation algorithm writes an attribute value (escape "&", U+00A0, '"')
/// or, with text = true, a text node (escape "&", U+00A0, "<", ">") (HTML Standard, §13.3).
std::string serialised(const std::string& s, bool text) {
  std::string o;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '&') o += "&amp;";
    else if (c == '\xc2' && i + 1 < s.size() && s[i + 1] == '\xa0') o += "&nbsp;", ++i;
    else if (!text && c == '"') o += "&quot;";
    else if (text && c == '<') o += "&lt;";
    else if (text && c == '>') o += "&gt;";
    else o += c;
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: gate_report_check RESULT.json DOM.html\n");
    return 2;
  }
  try {
    const nlohmann::json result = nlohmann::json::parse(slurp(argv[1]));
    const std::string dom = slurp(argv[2]);
    int missing = 0;
    const auto require = [&](bool ok, const std::string& what) {
      if (!ok) {
        std::fprintf(stderr, "gate_report_check: %s: %s\n", argv[2], what.c_str());
        ++missing;
      }
    };
    require(dom.find("data-ready=\"yes\"") != std::string::npos, "the page's script did not run (body has no data-ready=\"yes\")");
    require(!result["cases"].empty(), "the result has no cases");
    for (const nlohmann::json& c : result["cases"]) {
      const std::string name = c["name"], status = c["status"];
      const std::string row = fmt::format("<tr data-case=\"{}\" data-verdict=\"{}\">", serialised(name, false), status);
      const std::size_t at = dom.find(row);
      require(at != std::string::npos, fmt::format("no summary row {}", row));
      if (at != std::string::npos) {
        const std::string tr = dom.substr(at, dom.find("</tr>", at) - at);
        require(tr.find(fmt::format("<td class=\"{0}\">{0}</td>", status)) != std::string::npos,
                fmt::format("the summary row of '{}' does not show the verdict '{}'", name, status));
      }
      const std::string heading = fmt::format("<h2>{} — <span class=\"{}\">{}</span></h2>", serialised(name, true), status, status);
      require(dom.find(heading) != std::string::npos, fmt::format("no section {}", heading));
    }
    if (missing > 0) return 1;
    std::printf("gate_report_check: all %zu cases and their verdicts are on the page\n", result["cases"].size());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gate_report_check: %s\n", e.what());
    return 2;
  }
}
