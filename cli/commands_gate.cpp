// `numfid gate run FILE [--junit F] [--json F]`: load the gate file (gates/gate.h), check that
// the reports can be written, run every case, print one line per case and a summary, write
// the reports atomically. No numerics here.
#include <cstdio>

#include <fmt/format.h>

#include "cli/commands_verdict.h"
#include "cli/errors.h"
#include "gates/gate.h"

namespace numfid::cli {

namespace {

struct GateRunArgs {
  std::string file, junit, json;
  int worst = 8;
};

int run_gate_run(const GateRunArgs& a) {
  const Gate gate = load_gate(a.file);  // a gate-file error: InputError, exit 2 before anything runs
  if (!a.junit.empty()) check_output(a.junit, "--junit");
  if (!a.json.empty()) check_output(a.json, "--json");
  const GateResult r = run_gate(gate, {.worst = a.worst});
  if (!a.junit.empty()) write_text_output(a.junit, r.junit(), "--junit");
  if (!a.json.empty()) write_text_output(a.json, r.json(), "--json");
  fmt::print("{}", r.text());
  return r.exit_code();
}

}  // namespace

Command add_gate_command(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand(
      "gate", "CI numerical regression gates over a YAML gate file (docs/gate.md; exit 0 pass, 1 a defect, 2 a gate-file or input error)");
  app->require_subcommand(1);
  auto run = std::make_shared<GateRunArgs>();
  CLI::App* r = app->add_subcommand("run", "run every case of a gate file through the check pipeline");
  r->add_option("file", run->file, "the gate file (YAML)")->required();
  r->add_option("--junit", run->junit, "also write a JUnit XML report");
  r->add_option("--json", run->json, "also write a JSON report");
  r->add_option("--worst", run->worst, "elements listed per check (reports)")->capture_default_str();
  return {app, [=]() { return r->parsed() ? run_gate_run(*run) : exit_usage; }};
}

}  // namespace numfid::cli
