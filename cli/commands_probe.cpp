// `numfid probe run|make|infer`: reveal a black-box kernel's order and arithmetic
// (numerics/probe.h) and write its profile. The black box is a command run on .npy files
// (run), or a person running the kernel on a folder of inputs (make, then infer, in rounds).
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "cli/commands_verdict.h"
#include "io/error.h"
#include "io/tensor_io.h"
#include "numerics/probe.h"

namespace numfid::cli {

namespace {

namespace fs = std::filesystem;

/// The settings (numerics/probe.h, also DIR/probe.txt) and what only the command line gives.
struct ProbeArgs : ProbeSettings {
  std::string cmd, dir;
  bool no_presets = false;
};

/// The inputs of call `c` as .npy files: {a} (and {b}).
void write_inputs(const ProbeCall& c, const fs::path& a, const fs::path& b) {
  write_tensor(a, make_tensor(*c.in, {c.rows, c.k}, c.a));
  if (c.op == ProbeOp::dot) write_tensor(b, make_tensor(*c.in, {c.rows, c.k}, c.b));
  if (c.op == ProbeOp::matmul) write_tensor(b, make_tensor(*c.in, {c.k, c.cols}, c.b));
}

/// The outputs of call `c` from `path` (any container holding `out` values exactly).
std::vector<Bits> read_outputs(const ProbeCall& c, const fs::path& path, const FormatSpec& out) {
  const Tensor t = read_tensor(path);
  const std::vector<Bits> v = tensor_values(t, out);
  const std::int64_t want = c.op == ProbeOp::matmul ? c.rows * c.cols : c.rows;
  if (static_cast<std::int64_t>(v.size()) != want)
    throw UsageError(fmt::format("{}: {} values of shape {}; the call needs {} ({})", path.string(), v.size(),
                                 shape_string(t.shape), want,
                                 c.op == ProbeOp::matmul ? fmt::format("{}×{}", c.rows, c.cols) : fmt::format("{} rows", c.rows)));
  return v;
}

std::string replace_all(std::string s, std::string_view what, std::string_view with) {
  for (std::size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + with.size())) s.replace(p, what.size(), with);
  return s;
}

/// Single-quoted for /bin/sh.
std::string shell_quote(const std::string& s) { return "'" + replace_all(s, "'", "'\\''") + "'"; }

/// The black box of `probe run`: CMD with {a} {b} {c} replaced by files in a fresh folder.
BlackBox command_box(const std::string& cmd, const FormatSpec& out) {
  return [cmd, &out](const ProbeCall& c) {
    char tmpl[] = "/tmp/numfid-probe-XXXXXX";
    if (!::mkdtemp(tmpl)) throw UsageError("probe: cannot create a temporary folder");
    const fs::path dir = tmpl;
    struct Cleanup {
      fs::path d;
      ~Cleanup() {
        std::error_code ec;
        fs::remove_all(d, ec);
      }
    } cleanup{dir};
    const fs::path a = dir / "a.npy", b = dir / "b.npy", d = dir / "c.npy";
    write_inputs(c, a, b);
    const std::string line =
        replace_all(replace_all(replace_all(cmd, "{a}", shell_quote(a.string())), "{b}", shell_quote(b.string())), "{c}",
                    shell_quote(d.string()));
    // The kernel's own stdout goes to numfid's stderr: numfid's stdout carries the report only.
    const int status = std::system(fmt::format("( {}\n) 1>&2", line).c_str());
    if (status != 0)
      throw UsageError(fmt::format("probe: the command failed ({}): {}",
                                   WIFEXITED(status) ? fmt::format("exit {}", WEXITSTATUS(status)) : "killed", line));
    if (!fs::exists(d)) throw UsageError(fmt::format("probe: the command wrote no {{c}} file: {}", line));
    return read_outputs(c, d, out);
  };
}

/// `probe make/infer`: the outputs of call N come from DIR/call-N-c.npy; a call without
/// them has its inputs written (DIR/call-N-a.npy, -b.npy) and ends this round.
struct NeedOutputs {
  std::int64_t call;
};

BlackBox folder_box(const fs::path& dir, const FormatSpec& out) {
  auto n = std::make_shared<std::int64_t>(0);
  return [dir, &out, n](const ProbeCall& c) {
    const std::int64_t i = (*n)++;
    const fs::path a = dir / fmt::format("call-{}-a.npy", i), b = dir / fmt::format("call-{}-b.npy", i),
                   d = dir / fmt::format("call-{}-c.npy", i);
    if (fs::exists(d)) return read_outputs(c, d, out);
    write_inputs(c, a, b);
    throw NeedOutputs{i};
  };
}

ProbeOptions options(const ProbeArgs& p) {
  ProbeOptions o;
  // Every value through the library's checks of probe.txt's settings (probe_setting_problem: the
  // op, k's range, signed float formats, a negative budget, the validation range), so that the
  // options and the folder's probe.txt are held to one rule; an unknown format is named first
  // with lookup_format's list.
  o.in = &lookup_format(p.in);
  o.out = &lookup_format(p.out);
  for (const auto& [key, given] : {std::pair{"op", p.op}, std::pair{"k", std::to_string(p.k)}, std::pair{"in", p.in},
                                   std::pair{"out", p.out}, std::pair{"budget", std::to_string(p.budget)},
                                   std::pair{"validation", std::to_string(p.validation)}})
    if (const std::string why = probe_setting_problem(p, key); !why.empty())
      throw UsageError(fmt::format("--{} {}: {}", key, printable(given), why));
  if (o.in->kind != FormatKind::binary_float || o.out->kind != FormatKind::binary_float)
    throw UsageError("--in and --out must be float formats");
  o.op = *parse_probe_op(p.op);
  o.k = p.k;
  o.validation_elements = p.validation;
  o.seed = p.seed;
  o.budget = p.budget;
  o.presets = p.presets;
  o.progress = [](std::string_view line) { fmt::print(stderr, "numfid probe: {}\n", line); };
  return o;
}

int report(const ProbeResult& r, const std::string& output) {
  fmt::print("calls: {} ({} for the order, {} probe vectors)\n", r.calls, r.order_calls, r.probe_rows);
  fmt::print("tree: {}\n", r.tree.empty() ? fmt::format("not revealed ({})", r.tree_note) : r.tree);
  if (r.candidate_count < 0) fmt::print("candidates: none tried (the probe stopped first)\n");
  else fmt::print("candidates: {} consistent with every probe\n", r.candidate_count);
  for (const std::string& c : r.candidates) fmt::print("  {}\n", c);
  if (r.validation_mismatches >= 0)
    fmt::print("validation: {} mismatches in {} fresh outputs ({})\n", r.validation_mismatches, r.validation_elements,
               fmt::join(r.validation_kinds, ", "));
  if (!r.pinned || r.yaml.empty()) {
    fmt::print("not pinned down: {}\nno profile written\n", r.message);
    return exit_defect;
  }
  write_text_output(output, r.yaml, "--output");
  fmt::print("model: {}\nwrote {}\n", r.model->text(), output);
  return exit_ok;
}

std::string profile_name(const ProbeArgs& p) {
  if (!p.output.ends_with(".yaml"))
    throw UsageError(fmt::format("--output {}: the file name must end in .yaml", printable(p.output)));
  // NAME becomes the profile's name: one `numfid profiles` lists and a claim's --profile NAME
  // can state (".yaml" alone is a hidden file with no stem; a space or ':' needs quoting).
  const std::string name = fs::path(p.output).filename().string();
  const std::string stem = name.substr(0, name.size() - 5);
  if (const std::string why = probe_name_problem(stem); !why.empty())
    throw UsageError(fmt::format("--output {}: NAME.yaml names the profile: {}", printable(p.output), why));
  return stem;
}

int run_probe(ProbeArgs p) {
  p.presets = !p.no_presets;
  ProbeOptions o = options(p);
  o.name = profile_name(p);
  check_output(p.output, "--output");
  if (p.cmd.empty()) throw UsageError("probe run: give --cmd 'CMD {a} {b} {c}'");
  return report(probe(command_box(p.cmd, *o.out), o), p.output);
}

/// make and infer: the options are kept in DIR/probe.txt by make.
int run_folder(const ProbeArgs& given, bool make) {
  const fs::path dir = given.dir;
  ProbeArgs p = given;
  const fs::path conf = dir / "probe.txt";
  if (make) {
    // Options first: a refused make leaves no folder behind.
    profile_name(p);
    options(p);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw UsageError(fmt::format("{}: cannot create the folder: {}", dir.string(), ec.message()));
    // make starts a new probe: an earlier probe's call-*-c.npy would be replayed as this
    // device's answers (and its profile written at once).
    std::vector<std::string> earlier;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string n = e.path().filename().string();
      if (n == "probe.txt" || n.starts_with("call-")) earlier.push_back(n);
    }
    if (!earlier.empty()) {
      std::sort(earlier.begin(), earlier.end());
      const std::size_t shown = std::min<std::size_t>(earlier.size(), 3);
      std::string names;
      for (std::size_t i = 0; i < shown; ++i) names += (i ? ", " : "") + printable(earlier[i]);
      throw UsageError(fmt::format("{}: holds an earlier probe's files ({}{}): `probe make` starts a new probe; use a "
                                   "fresh folder, or `numfid probe infer {}` to continue that one",
                                   printable(dir.string()), names,
                                   earlier.size() > shown ? fmt::format(" and {} more", earlier.size() - shown) : "",
                                   printable(dir.string())));
    }
    p.presets = !p.no_presets;
    write_text_output(conf.string(), probe_settings_text(p), "DIR/probe.txt");
  } else {
    std::ifstream f(conf, std::ios::binary);
    if (!f) throw UsageError(fmt::format("{}: missing (run `numfid probe make` first)", conf.string()));
    std::ostringstream text;
    text << f.rdbuf();
    static_cast<ProbeSettings&>(p) = parse_probe_settings(text.str(), conf.string());
    if (p.output.empty())
      throw UsageError(fmt::format("{}: no 'output' line (the profile to write: output NAME.yaml)", conf.string()));
  }
  ProbeOptions o = options(p);
  o.name = profile_name(p);
  try {
    return report(probe(folder_box(dir, *o.out), o), p.output);
  } catch (const NeedOutputs& n) {
    fmt::print("round needed: run the kernel on {0}/call-{1}-a.npy{2} and write its output to {0}/call-{1}-c.npy, then "
               "run `numfid probe infer {0}`\n",
               dir.string(), n.call, p.op == "sum" ? "" : fmt::format(" and {}/call-{}-b.npy", dir.string(), n.call));
    return exit_ok;
  }
}

void add_common(CLI::App& app, ProbeArgs& p) {
  app.add_option("--op", p.op, "dot (A, B: R×K, row-wise), matmul (A: M×K, B: K×N) or sum (A: R×K)");
  app.add_option("--k", p.k, "terms per output (2..4096)")->required();
  app.add_option("--in", p.in, "input format (default fp32)");
  app.add_option("--out", p.out, "output format (default fp32)");
  app.add_option("--budget", p.budget, "most calls of the black box (0: no limit)");
  app.add_option("--seed", p.seed, "seed of the random probe and validation inputs");
  app.add_option("--validation", p.validation, "output elements of the validation set (10000..1000000)");
  app.add_option("--output", p.output, "the profile to write (NAME.yaml; NAME becomes the profile's name)")->check(output_file())->required();
  app.add_flag("--no-presets", p.no_presets,
               "leave the built-in tensor-core presets out of the candidates: block-FMA parameters come from the search alone");
}

}  // namespace

Command add_probe_command(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand("probe", "reveal a black-box kernel's summation order and arithmetic as a profile");
  app->require_subcommand(1);
  auto rp = std::make_shared<ProbeArgs>(), mp = std::make_shared<ProbeArgs>(), ip = std::make_shared<ProbeArgs>();
  CLI::App* run = app->add_subcommand("run", "probe a command: CMD reads {a} ({b}) and writes {c} (.npy)");
  add_common(*run, *rp);
  run->add_option("--cmd", rp->cmd, "the black box, e.g. 'python3 k.py {a} {b} {c}'")->required();
  CLI::App* make = app->add_subcommand("make", "write the first round of probe inputs into DIR (offline devices)");
  make->add_option("dir", mp->dir, "folder for the probe inputs and outputs")->required();
  add_common(*make, *mp);
  CLI::App* infer = app->add_subcommand("infer", "read the outputs in DIR: the next round's inputs, or the profile");
  infer->add_option("dir", ip->dir, "the folder of `probe make`")->required();
  return {app, [=]() {
            if (run->parsed()) return run_probe(*rp);
            if (make->parsed()) return run_folder(*mp, true);
            return run_folder(*ip, false);
          }};
}

}  // namespace numfid::cli
