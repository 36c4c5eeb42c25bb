// `numfid gate run FILE ...` and `numfid gate merge PART.json ...`: parse the options, call the
// gate library (gates/gate.h), print what it returns, write the reports atomically. No
// numerics, no rules here.
#include <algorithm>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "cli/commands_verdict.h"
#include "cli/errors.h"
#include "gates/gate.h"
#include "io/error.h"

namespace numfid::cli {

namespace {

/// The outputs both subcommands write.
struct ReportArgs {
  std::string junit, json, markdown, report;

  /// `inputs`: the gate file or the results merged (`what`), which no output may replace; nor
  /// may two outputs be one file; nor may one lie in `owned` (a gate's baseline directory: its
  /// files are the gate's baselines, tracked or orphaned, and --update-baseline writes there).
  void check(const std::vector<std::string>& inputs, const char* what, const std::filesystem::path& owned = {}) const {
    // An existing directory receives index.html; an absent one is created (its parent must be writable).
    std::error_code ec;
    const std::string html =
        report.empty() ? std::string()
                       : std::filesystem::is_directory(report, ec) ? (std::filesystem::path(report) / "index.html").string()
                                                                  : report;
    const std::pair<const std::string*, const char*> outputs[] = {
        {&junit, "--junit"}, {&json, "--json"}, {&markdown, "--markdown"}, {&html, "--report"}};
    for (std::size_t i = 0; i < std::size(outputs); ++i) {
      const auto& [path, option] = outputs[i];
      if (path->empty()) continue;
      std::vector<NamedFile> others;
      for (const std::string& in : inputs) others.push_back({in, what});
      for (std::size_t j = 0; j < i; ++j) others.push_back({*outputs[j].first, outputs[j].second});
      if (!owned.empty()) {
        std::error_code e1, e2;
        const std::filesystem::path out = std::filesystem::weakly_canonical(*path, e1), dir = std::filesystem::weakly_canonical(owned, e2);
        // It, or anything under it (a file, --report's directory or one inside it).
        const bool inside = std::mismatch(dir.begin(), dir.end(), out.begin(), out.end()).first == dir.end();
        if (!e1 && !e2 && inside)
          throw UsageError(fmt::format("{} {}: is in the gate's baseline directory {}, whose files are its baselines; "
                                       "write reports elsewhere",
                                       option, *path, owned.string()));
      }
      check_output(*path, option, others);
    }
  }

  int write(const GateResult& r) const {
    if (!junit.empty()) write_text_output(junit, r.junit(), "--junit");
    if (!json.empty()) write_text_output(json, r.json(), "--json");
    if (!markdown.empty()) write_text_output(markdown, r.markdown(), "--markdown");
    if (!report.empty()) write_gate_report(r, report);
    fmt::print("{}", r.text());
    return r.exit_code();
  }

  void add(CLI::App* app) {
    app->add_option("--junit", junit, "also write a JUnit XML report")->check(output_file());
    app->add_option("--json", json, "also write the complete result as JSON (the input of `gate merge`)")->check(output_file());
    app->add_option("--markdown", markdown, "also write a Markdown summary")->check(output_file());
    app->add_option("--report", report, "write the HTML report (index.html) and summary.md into this directory")->check(output_file());
  }
};

struct GateRunArgs {
  std::string file, shard;
  ReportArgs out;
  int worst = 8;
  int jobs = 0;
  bool update_baseline = false;
};

/// "I/N" with 1 <= I <= N.
std::pair<int, int> parse_shard(const std::string& s) {
  int i = 0, n = 0;
  char slash = 0;
  int used = 0;
  if (std::sscanf(s.c_str(), "%d%c%d%n", &i, &slash, &n, &used) != 3 || slash != '/' || used != static_cast<int>(s.size()) || n < 1 ||
      i < 1 || i > n)
    throw UsageError(fmt::format("--shard: '{}' is not I/N with 1 <= I <= N", s));
  return {i, n};
}

int run_gate_run(const GateRunArgs& a) {
  const Gate gate = load_gate(a.file);  // a gate-file error: InputError, exit 2 before anything runs
  // No report may replace the gate file, an included one or an operand a case reads.
  std::vector<std::string> inputs{a.file};
  for (const GateCase& c : gate.cases) {
    inputs.push_back(c.file);
    for (const std::optional<std::string>* f : {&c.a, &c.b, &c.c, &c.x, &c.ref, &c.addend, &c.rerun, &c.scale_a,
                                                &c.scale_b, &c.out_scale, &c.gamma, &c.beta})
      if (*f) inputs.push_back(**f);
  }
  std::sort(inputs.begin(), inputs.end());
  inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
  a.out.check(inputs, "a file the gate reads", gate_baseline_dir(a.file));
  GateRunOptions o;
  o.worst = a.worst;
  o.jobs = a.jobs;
  o.update_baseline = a.update_baseline;
  if (!a.shard.empty()) std::tie(o.shard_index, o.shard_count) = parse_shard(a.shard);
  if (a.jobs < 0) throw UsageError("-j: the number of parallel cases must be >= 0 (0: every core)");
  if (::isatty(STDERR_FILENO)) {
    o.progress = [](const GateProgress& p) {
      fmt::print(stderr, "\r\033[Kcase {} of {}, {:.1f} s; slowest {} ({:.1f} s){}", p.done, p.total, p.elapsed, p.slowest,
                 p.slowest_seconds, p.done == p.total ? "\n" : "");
      std::fflush(stderr);
    };
  }
  return a.out.write(run_gate(gate, o));
}

struct GateMergeArgs {
  std::vector<std::string> parts;
  ReportArgs out;
};

int run_gate_merge(const GateMergeArgs& a) {
  std::vector<GateResult> parts;
  for (const std::string& p : a.parts) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw InputError(fmt::format("{}: cannot open", p));
    parts.push_back(parse_gate_result(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()), p));
  }
  a.out.check(a.parts, "a result merged");
  return a.out.write(merge_gate_results(parts));
}

}  // namespace

Command add_gate_command(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand(
      "gate", "CI numerical regression gates over a YAML gate file (docs/gate.md; exit 0 pass, 1 a defect or regression, 2 an error)");
  app->require_subcommand(1);
  auto run = std::make_shared<GateRunArgs>();
  CLI::App* r = app->add_subcommand("run", "run every case of a gate file through the check pipeline");
  r->add_option("file", run->file, "the gate file (YAML)")->required();
  run->out.add(r);
  r->add_option("--worst", run->worst, "elements listed per check (reports)")->check(CLI::Range(0, max_worst))->capture_default_str();
  r->add_option("-j,--jobs", run->jobs, "cases run in parallel (0: every core)")->capture_default_str();
  r->add_option("--shard", run->shard, "run shard I of N (1-based, by a stable hash of the case name)");
  r->add_flag("--update-baseline", run->update_baseline, "store the tracked cases' figures as their new baselines");
  auto merge = std::make_shared<GateMergeArgs>();
  CLI::App* m = app->add_subcommand("merge", "combine the --json results of the shards of one gate into the full run's reports");
  m->add_option("parts", merge->parts, "the shards' JSON results")->required();
  merge->out.add(m);
  return {app, [=]() { return r->parsed() ? run_gate_run(*run) : m->parsed() ? run_gate_merge(*merge) : exit_usage; }};
}

}  // namespace numfid::cli
