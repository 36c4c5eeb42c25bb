// The gate run: cases (of one shard) in parallel through the check pipeline, each reduced to
// its compact figures as soon as it is judged (one case's tensors in memory per worker),
// compared with its baseline and, under --update-baseline, its baseline rewritten atomically.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <iterator>
#include <mutex>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "gates/gate_detail.h"
#include "gates/migration.h"
#include "io/atomic_file.h"
#include "io/error.h"
#include "io/tensor_io.h"
#include "numerics/profile.h"
#include "oracles/mpfr_oracles.h"
#include "tolerances/quant_check.h"
#include "tolerances/scale_files.h"

#ifndef NUMFID_VERSION
#define NUMFID_VERSION "unknown"
#endif

namespace numfid {

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

Tensor read(const std::string& spec) {
  const TensorSpec ts = parse_tensor_spec(spec);
  return read_tensor(ts.path, ts.name);
}

/// A tensor's values under `declared`; an unsigned file read as integer values under a float
/// format of another width (docs/io.md) adds io's container_note, named by the case's key, to
/// `notes` (the case's reason carries it, as the CLI prints it on stderr).
TensorData values(const Tensor& t, const FormatSpec& declared, const char* key, std::vector<std::string>& notes) {
  if (const std::string n = container_note(t, declared); !n.empty()) notes.push_back(fmt::format("{}: {}", key, n));
  return tensor_data(t, declared);
}

TensorData load(const std::string& spec, const FormatSpec& declared, const char* key, std::vector<std::string>& notes) {
  return values(read(spec), declared, key, notes);
}

/// A case's claim text with its scale_a, scale_b and out_scale keys appended as options.
std::string with_scale_keys(const GateCase& c, const std::string& text) {
  std::string full = text;
  if (c.scale_a) append_claim_option(full, "--scale-a", *c.scale_a);
  if (c.scale_b) append_claim_option(full, "--scale-b", *c.scale_b);
  if (c.out_scale) append_claim_option(full, "--out-scale", *c.out_scale);
  return full;
}

/// A case's claim text (`claim` or `ref_claim`) as a claim: the case's scale_a, scale_b and
/// out_scale keys (resolved already) become its --scale-a, --scale-b and --out-scale files (a
/// claim text that gives the same option too is refused: "given twice"), and scale files the
/// text itself names are taken relative to the case's gate file, as operands are. The files are
/// read afterwards by the one reader (tolerances/scale_files.h: read_claim_scale_files).
ClaimSpec case_claim(const GateCase& c, const std::string& text) {
  struct Key {
    const std::optional<std::string>& file;
    std::string QuantClaim::*spec;
    std::vector<double> QuantClaim::*values;
  };
  const Key keys[] = {{c.scale_a, &QuantClaim::scale_a_text, &QuantClaim::scale_a},
                      {c.scale_b, &QuantClaim::scale_b_text, &QuantClaim::scale_b},
                      {c.out_scale, &QuantClaim::out_scale_text, &QuantClaim::out_scale}};
  ClaimSpec claim = parse_claim(with_scale_keys(c, text));
  const std::filesystem::path dir = std::filesystem::path(c.file).parent_path();
  QuantClaim& q = claim.quant;
  for (const Key& k : keys)
    if (!k.file && !(q.*k.spec).empty() && (q.*k.values).empty())  // a file (numbers are read already)
      q.*k.spec = resolve_tensor_spec(q.*k.spec, dir);
  return claim;
}

/// The claim's text with its scale files named relative to the gate file's directory, as the
/// gate file names them: the case's claim in reports and baselines does not depend on where
/// the repository is checked out.
std::string gate_claim_text(ClaimSpec claim, const GateCase& c) {
  const std::filesystem::path dir = std::filesystem::path(c.file).parent_path();
  QuantClaim& q = claim.quant;
  for (auto [spec, values] : {std::pair{&q.scale_a_text, &q.scale_a}, std::pair{&q.scale_b_text, &q.scale_b},
                              std::pair{&q.out_scale_text, &q.out_scale}}) {
    if (spec->empty() || !values->empty() || dir.empty()) continue;  // absent, or a number
    TensorSpec ts = parse_tensor_spec(*spec);
    if (ts.path.is_absolute() != dir.is_absolute()) continue;
    ts.path = ts.path.lexically_relative(dir);
    if (!ts.path.empty()) *spec = ts.name.empty() ? ts.path.string() : fmt::format("{}:{}", ts.path.string(), ts.name);
  }
  return claim.text();
}

/// What a case's run produces besides its figures' source, the check.
struct CaseOutcome {
  CheckResult check;
  std::optional<GateMigration> migration;
  std::optional<std::int64_t> rerun_identical;
  std::vector<std::string> notes;  ///< container notes of its tensors ("c: F: ...")
};

std::int64_t identical(const TensorData& x, const TensorData& y, const char* what) {
  if (x.shape != y.shape) throw InputError(fmt::format("{}: shape differs from c ({})", what, y.name));
  std::int64_t n = 0;
  for (std::size_t i = 0; i < x.values.size(); ++i) n += x.values[i] == y.values[i] ? 1 : 0;
  return n;
}

/// Runs one case; InputError / ProfileError: the case's error.
CaseOutcome run_case(const GateCase& c, const ClaimSpec& claim, const GateRunOptions& options) {
  CaseOutcome out;
  const int worst = c.worst.value_or(options.worst);
  std::optional<TensorData> C;
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
    const TensorData A = values(ta, fa, "a", out.notes), B = values(tb, fb, "b", out.notes);
    C = values(tc, *claim.out, "c", out.notes);
    MatmulCheckOptions o;
    o.worst = worst;
    if (td) o.addend = values(*td, addend_format(claim, true, c.addend_format, "addend_format", "addend"), "addend", out.notes);
    if (!c.ref) {
      out.check = c.op == "dot" ? check_dot(A, B, *C, claim, o) : check_matmul(A, B, *C, claim, o);
    } else {
      // A port: the exact results once, judged three times (C against R, and each platform's
      // output against the exact result under its own claim, with its model's prediction).
      ClaimSpec ref_claim = case_claim(c, *c.ref_claim);
      read_claim_scale_files(ref_claim);
      const TensorData R = values(*tr, *claim.out, "ref", out.notes);
      // Integer and scaled claims have their own exact references (quant_check.h): judged from
      // the operands, not from the plain products' reference.
      const bool quantised = is_quantised_claim(claim);
      std::optional<MatmulReference> mr;
      if (!quantised) mr = c.op == "dot" ? dot_reference(A, B, o.addend) : matmul_reference(A, B, o.addend);
      const auto judge = [&](const TensorData& out_, const ClaimSpec& cl, const MatmulCheckOptions& oo) {
        if (mr) return check_matmul(*mr, out_, cl, oo);
        return c.op == "dot" ? check_dot(A, B, out_, cl, oo) : check_matmul(A, B, out_, cl, oo);
      };
      MatmulCheckOptions own;
      own.worst = worst;
      own.addend = o.addend;
      o.ref = R;
      o.ref_claim = ref_claim;
      o.judge_sides = false;  // judged below with the model's prediction, for the report too
      out.check = judge(*C, claim, o);
      GateMigration m;
      m.cross = out.check.verdict.kind;
      m.cross_reason = out.check.verdict.reason;
      const CheckResult target = judge(*C, claim, own), reference = judge(R, ref_claim, own);
      // Either side a defect under its own claim is the case's defect (docs/gate.md).
      judge_port_sides(out.check, target, claim, reference, ref_claim);
      m.target = describe_platform(claim, target);
      m.reference = describe_platform(ref_claim, reference);
      m.identical = identical(R, *C, "ref");
      m.elements = static_cast<std::int64_t>(C->values.size());
      out.migration = std::move(m);
    }
  } else {
    const TensorData X = load(*c.x, *claim.in, "x", out.notes);
    C = load(*c.c, *claim.out, "c", out.notes);
    if (c.op == "sum") {
      out.check = check_sum(X, *C, c.axis.value_or(RowCheckOptions{}.axis), claim, worst);
    } else {
      const RowOp op = *find_row_op(c.op);
      RowCheckOptions o;
      o.worst = worst;
      apply_row_options(o, op,
                        {.axis = c.axis,
                         .eps = c.eps,
                         .variance = c.variance,
                         .norm_form = c.norm_form,
                         .softmax = c.softmax,
                         .param_format = c.param_format,
                         .masked_row = c.masked_row},
                        claim, c.gamma.has_value() || c.beta.has_value());
      const FormatSpec& fparam = o.param_format != nullptr ? *o.param_format : *claim.in;
      if (c.gamma) o.gamma = load(*c.gamma, fparam, "gamma", out.notes);
      if (c.beta) o.beta = load(*c.beta, fparam, "beta", out.notes);
      out.check = check_rows(op, X, *C, claim, o);
    }
  }
  if (c.rerun) out.rerun_identical = identical(load(*c.rerun, *claim.out, "rerun", out.notes), *C, "rerun");
  return out;
}

/// The `numfid check` command line that reruns the case (docs/cli.md). `claim_text`: the
/// claim as the command states it (the case's text; its canonical form once scale files named
/// in it are resolved against the gate file).
std::string repro_command(const GateCase& c, const std::string& claim_text) {
  using detail::shell_word;
  std::string s = fmt::format("numfid check {}", c.op);
  const auto opt = [&](const char* name, const std::optional<std::string>& v) {
    if (v) s += fmt::format(" {} {}", name, shell_word(*v));
  };
  opt("--a", c.a), opt("--b", c.b), opt("--x", c.x), opt("--c", c.c);
  if (c.addend) {
    s += fmt::format(" --addend {}", shell_word(*c.addend));
    try {
      s += fmt::format(" --addend-format {}", c.addend_format ? *c.addend_format : parse_claim(c.claim).acc->name);
    } catch (const std::exception&) {  // a bad claim: the case's error says so
    }
  }
  if (c.axis) s += fmt::format(" --axis {}", *c.axis);
  if (c.eps) s += fmt::format(" --eps {}", *c.eps);
  opt("--gamma", c.gamma), opt("--beta", c.beta), opt("--param-format", c.param_format), opt("--variance", c.variance);
  opt("--norm-form", c.norm_form), opt("--softmax", c.softmax), opt("--masked-row", c.masked_row);
  if (c.worst) s += fmt::format(" --worst {}", *c.worst);
  s += fmt::format(" {}", claim_text);
  if (claim_text == c.claim) opt("--scale-a", c.scale_a), opt("--scale-b", c.scale_b), opt("--out-scale", c.out_scale);
  if (c.ref) {
    // The CLI states the reference platform by its profile (--ref-profile); a ref_claim that
    // names no profile has no command-line form.
    // An integer claim needs none: both outputs are judged against the exact result.
    std::string profile;
    bool integer = false;
    try {
      profile = parse_claim(with_scale_keys(c, *c.ref_claim)).profile_name;
      integer = is_integer_claim(parse_claim(with_scale_keys(c, c.claim)));
    } catch (const std::exception&) {
    }
    s += fmt::format(" --ref {}", shell_word(*c.ref));
    if (!integer)
      s += fmt::format(" --ref-profile {}", profile.empty() ? "'(ref_claim has no profile)'" : shell_word(profile));
  }
  return s;
}

/// A baseline file name for a case name: bytes other than [A-Za-z0-9_-] as %XX (a name may
/// hold '/', '.', spaces, anything), so that distinct names give distinct files.
std::string baseline_file_name(std::string_view name) {
  std::string o;
  for (const char ch : name) {
    const auto u = static_cast<unsigned char>(ch);
    if ((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || u == '_' || u == '-') o += ch;
    else o += fmt::format("%{:02X}", u);
  }
  return o + ".json";
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open", p.string()));
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw InputError(fmt::format("{}: cannot read", p.string()));
  return s;
}

GateFigures figures_of(const CheckResult& r) {
  GateFigures f;
  f.verdict = r.verdict.kind;
  f.reason = r.verdict.reason;
  f.elements = r.verdict.elements;
  f.counts = r.verdict.counts;
  f.max_error_ulps = r.verdict.max_error_ulps;
  f.model = r.model;
  f.field = r.verdict.field;
  f.report = r.text();
  f.check_json = r.json();
  return f;
}

GateBaseline baseline_of(const GateCaseResult& cr) {
  GateBaseline b;
  b.name = cr.name;
  b.op = cr.op;
  b.claim = cr.claim;
  b.numfid_version = NUMFID_VERSION;
  b.field = cr.figures->field;
  b.field.heatmap.clear(), b.field.histogram.clear();
  b.field.heat_rows = b.field.heat_cols = 0;
  if (cr.figures->model) {
    b.model_equal = cr.figures->model->equal;
    b.bit_exact_vs_model = cr.figures->model->equal == cr.figures->model->elements;
  }
  return b;
}

/// Compares a checked, tracked case with its baseline and (update) writes the new one.
void track(GateCaseResult& cr, const std::filesystem::path& dir, const GateCase& c, bool update) {
  const std::filesystem::path file = dir / baseline_file_name(c.name);
  cr.baseline_file = file.string();
  const GateBaseline now = baseline_of(cr);
  std::error_code ec;
  const bool exists = std::filesystem::exists(file, ec);
  try {
    if (exists) {
      GateBaseline old = parse_gate_baseline(read_text(file), file.string());
      cr.comparison = compare_to_baseline(old, now);
      cr.stored = std::move(old);
      cr.baseline_state = "compared";
    } else {
      cr.baseline_state = "missing";
      cr.comparison.notes.push_back(update ? "no baseline yet" : "no baseline yet (run with --update-baseline to store one)");
    }
  } catch (const InputError& e) {
    // A corrupt baseline is the case's error, unless this run replaces it.
    if (!update) cr.error = fmt::format("{}:{}: case '{}': baseline: {}", c.file, c.line, printable(c.name), e.what());
    else cr.comparison.notes.push_back(fmt::format("the old baseline was unreadable: {}", e.what()));
  }
  if (!update) return;
  if (cr.figures->verdict == TensorKind::defect) {
    cr.baseline_state = "kept";
    cr.comparison.notes.push_back("a defect: its baseline is not updated");
    return;
  }
  try {
    std::filesystem::create_directories(dir, ec);
    write_file_atomically(file, now.json());
    cr.baseline_state = "written";
    // The update accepts today's figures: what was a regression against the old baseline is
    // reported, not failed.
    for (const std::string& r : cr.comparison.regressions) cr.comparison.notes.push_back(fmt::format("accepted by --update-baseline: {}", r));
    cr.comparison.regressions.clear();
  } catch (const InputError& e) {
    cr.error = fmt::format("{}:{}: case '{}': baseline: {}", c.file, c.line, printable(c.name), e.what());
  }
}

GateCaseResult run_one(const Gate& gate, std::size_t index, const GateRunOptions& options) {
  const GateCase& c = gate.cases[index];
  GateCaseResult cr;
  cr.name = c.name;
  cr.op = c.op;
  cr.index = static_cast<std::int64_t>(index);
  cr.file = c.file;
  cr.line = c.line;
  cr.claim = c.claim;
  cr.tracked = c.baseline;
  cr.repro = repro_command(c, c.claim);
  const auto t0 = clock_type::now();
  std::string step = "claim";
  int line = c.claim_line;
  const auto error = [&](const char* what) {
    // parse_claim's messages begin with "claim: " already: say it once.
    const std::string prefix = step.empty() ? "" : step + ": ";
    const bool said = !prefix.empty() && std::string_view(what).starts_with(prefix);
    cr.error = fmt::format("{}:{}: case '{}': {}{}", c.file, line, printable(c.name), said ? "" : prefix, what);
  };
  try {
    ClaimSpec claim = case_claim(c, c.claim);
    cr.claim = gate_claim_text(claim, c);
    // Scale files named in the claim text are relative to the gate file: the command names
    // them resolved (the canonical claim carries the case's keys too).
    if (claim.text() != parse_claim(with_scale_keys(c, c.claim)).text()) cr.repro = repro_command(c, claim.text());
    step.clear();
    line = c.line;
    read_claim_scale_files(claim);  // a scale file that cannot be read: the case's error at its line
    CaseOutcome o = run_case(c, claim, options);  // the tensors are freed here
    cr.figures = figures_of(o.check);
    for (const std::string& n : o.notes) cr.figures->reason += fmt::format("; note: {}", n);
    cr.migration = std::move(o.migration);
    cr.rerun_identical = o.rerun_identical;
  } catch (const InputError& e) {
    error(e.what());
  } catch (const ProfileError& e) {
    error(e.what());
  } catch (const std::bad_alloc&) {
    error("out of memory");
  } catch (const std::exception& e) {  // a worker thread must not end the run
    error(fmt::format("unexpected error: {}", e.what()).c_str());
  }
  if (cr.figures && c.baseline) track(cr, gate_baseline_dir(gate.path), c, options.update_baseline);
  cr.seconds = seconds_since(t0);
  return cr;
}

}  // namespace

int gate_shard_of(std::string_view name, int count) {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, 64-bit (Fowler, Noll, Vo)
  for (const char ch : name) {
    h ^= static_cast<unsigned char>(ch);
    h *= 0x100000001b3ull;
  }
  return static_cast<int>(h % static_cast<std::uint64_t>(std::max(count, 1))) + 1;
}

std::filesystem::path gate_baseline_dir(const std::filesystem::path& gate_path) {
  return gate_path.parent_path() / (gate_path.stem().string() + ".baselines");
}

GateResult run_gate(const Gate& gate, const GateRunOptions& options) {
  if (options.shard_count < 0 || (options.shard_count > 0 && (options.shard_index < 1 || options.shard_index > options.shard_count)))
    throw InputError(fmt::format("--shard {}/{}: I must lie in 1..N", options.shard_index, options.shard_count));
  GateResult r;
  r.path = gate.path;
  r.gate_cases = static_cast<std::int64_t>(gate.cases.size());
  r.shard_index = options.shard_count > 0 ? options.shard_index : 0;
  r.shard_count = options.shard_count;
  r.update_baseline = options.update_baseline;
  const auto t_gate = clock_type::now();
  std::vector<std::size_t> mine;
  for (std::size_t i = 0; i < gate.cases.size(); ++i)
    if (options.shard_count == 0 || gate_shard_of(gate.cases[i].name, options.shard_count) == options.shard_index) mine.push_back(i);
  std::vector<GateCaseResult> results(mine.size());
  std::atomic<std::size_t> next{0};
  std::mutex progress_mutex;
  GateProgress progress;
  progress.total = static_cast<std::int64_t>(mine.size());
  const auto worker = [&] {
    for (std::size_t k = next++; k < mine.size(); k = next++) {
      results[k] = run_one(gate, mine[k], options);
      if (options.progress) {
        const std::lock_guard lock(progress_mutex);
        ++progress.done;
        progress.elapsed = seconds_since(t_gate);
        if (results[k].seconds >= progress.slowest_seconds)
          progress.slowest = results[k].name, progress.slowest_seconds = results[k].seconds;
        options.progress(progress);
      }
    }
  };
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t jobs = std::min<std::size_t>(options.jobs > 0 ? static_cast<std::size_t>(options.jobs) : hw, std::max<std::size_t>(mine.size(), 1));
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < jobs; ++t)
    pool.emplace_back([&] {
      worker();
      release_oracle_thread_caches();  // the MPFR caches of a row-op case would outlive the thread
    });
  worker();
  for (std::thread& t : pool) t.join();
  r.cases = std::move(results);
  // Baseline files of no case of the gate (whatever the shard: every shard reports the same).
  std::error_code ec;
  const std::filesystem::path dir = gate_baseline_dir(gate.path);
  if (std::filesystem::is_directory(dir, ec)) {
    std::vector<std::string> names;
    for (const GateCase& c : gate.cases) names.push_back(baseline_file_name(c.name));
    std::sort(names.begin(), names.end());
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      const std::string f = entry.path().filename().string();
      if (f.starts_with(".") || !f.ends_with(".json")) continue;  // the atomic writer's temporaries
      if (!std::binary_search(names.begin(), names.end(), f)) r.orphan_baselines.push_back(entry.path().string());
    }
    std::sort(r.orphan_baselines.begin(), r.orphan_baselines.end());
  }
  r.seconds = seconds_since(t_gate);
  return r;
}

}  // namespace numfid
