// CI numerical regression gates (docs/gate.md): a YAML gate file lists checks (operands,
// op, claim); run_gate runs each through the check pipeline (tolerances/check.h), in
// parallel and optionally one shard of them, compares each tracked case's error field with
// its stored baseline, and reports every case as text, JUnit XML, JSON, Markdown and a
// self-contained HTML report. Shards' JSON results merge into the full run's result.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/tensor.h"
#include "tolerances/check.h"

namespace numfid {

/// One case of a gate file, as written there (operand paths already resolved against the
/// gate file's directory).
struct GateCase {
  std::string name;
  std::string op;    ///< "matmul", "dot", "sum" or a RowOp name ("softmax", ...)
  std::string file;  ///< the gate file the case is written in (the root or an included one)
  int line = 0;      ///< 1-based line of the case in that file
  int claim_line = 0;  ///< line of the claim text in force (the case's or defaults.claim)
  /// Operands: "FILE" or "FILE.safetensors:NAME", relative paths resolved.
  std::optional<std::string> a, b, c, x, ref, addend;
  std::optional<std::string> addend_format;  ///< matmul / dot: the addend's format (default: the accumulator's)
  std::optional<std::string> rerun;      ///< a second run's output of the same kernel (determinism)
  /// matmul / dot: the scale files of an integer or scaled claim (--out-scale FILE, --scale-a
  /// FILE, --scale-b FILE), resolved like operands; they serve `claim` and `ref_claim` alike.
  std::optional<std::string> scale_a, scale_b, out_scale;
  std::string claim;                    ///< the claim text in force
  std::optional<std::string> ref_claim;  ///< cross-platform: the claim of `ref`'s platform
  std::optional<int> axis;               ///< sum: axis summed (default -1)
  std::optional<double> eps;             ///< layernorm / rmsnorm: variance epsilon
  std::optional<std::string> gamma;      ///< layernorm / rmsnorm: scale operand (1-D, one per column)
  std::optional<std::string> beta;       ///< layernorm: shift operand (1-D, one per column)
  std::optional<std::string> param_format;  ///< layernorm / rmsnorm: gamma/beta's format (default: the claim's --in)
  std::optional<std::string> variance;   ///< layernorm: two-pass, welford, sumsq, chan, rowwise-moments(V) or any (as `check --variance`)
  std::optional<std::string> norm_form;  ///< layernorm: centred or shifted (as `check --norm-form`)
  std::optional<std::string> softmax;    ///< softmax / log_softmax: textbook or online (as `check --softmax`)
  std::optional<std::string> masked_row;  ///< softmax: nan or zero (as `check --masked-row`)
  bool baseline = false;                 ///< tracked against its stored baseline
  /// Elements listed in this case's reports (`numfid check --worst`); absent: the run's
  /// GateRunOptions::worst.
  std::optional<int> worst;
};

/// A parsed gate file.
struct Gate {
  std::string path;  ///< as given to load_gate (messages, reports)
  int version = 1;
  std::vector<GateCase> cases;
};

/// Loads a gate file strictly: one YAML document; `version: 1`; optional `defaults:
/// {claim, baseline}`; optional `include:` (gate files, globs allowed, relative to the
/// including file; their cases join this gate's, each under its own file's defaults); `cases`:
/// a non-empty list of mappings with the keys documented in docs/gate.md. Unknown keys, values
/// of the wrong type, duplicate keys, duplicate case names (across included files too), an
/// unknown op, a missing or inapplicable operand, a case without a claim, a second document, an
/// include matching no file and an include cycle are InputError "FILE:LINE: ...". Claims and
/// operands are not read here (run_gate does, per case).
Gate load_gate(const std::filesystem::path& path);
/// The same from text (`path`: for messages and to resolve relative paths). Without
/// `follow_includes` the include entries are checked but not loaded (the fuzz target).
Gate load_gate_text(const std::string& yaml, const std::filesystem::path& path, bool follow_includes = true);

/// What a baseline stores about a case (a small JSON file, no tensor copied): the figures the
/// regression rule of docs/gate.md compares.
struct GateBaseline {
  std::string name, op, claim, numfid_version;
  ErrorField field;  ///< heatmap and histogram left empty in a stored baseline
  /// Whether the claim's model predicted every element bit for bit (absent: no model ran).
  std::optional<bool> bit_exact_vs_model;
  std::optional<std::int64_t> model_equal;

  /// The baseline file's JSON.
  std::string json() const;
};

/// Parses a baseline file's text; InputError "FILE: not a numfid baseline: ..." otherwise.
GateBaseline parse_gate_baseline(const std::string& text, const std::string& file);

/// A case's figures against its baseline, by the rule of docs/gate.md (each test at the
/// verdict's false-alarm probability): sentences with the numbers behind them.
struct BaselineComparison {
  std::vector<std::string> regressions;   ///< worse beyond chance, or bit-exactness lost
  std::vector<std::string> improvements;  ///< better beyond chance (reported, never failed)
  std::vector<std::string> notes;         ///< what could not be compared, and why
};
BaselineComparison compare_to_baseline(const GateBaseline& old, const GateBaseline& now);

/// The check's outcome in a compact, self-contained form: what the reports, baselines and
/// merges need, without the tensors (a run holds at most one case's tensors per worker).
struct GateFigures {
  TensorKind verdict = TensorKind::consistent;
  std::string reason;
  std::int64_t elements = 0;
  std::array<std::int64_t, 4> counts{};  ///< per ElementClass
  double max_error_ulps = 0;
  std::optional<ModelMatch> model;
  ErrorField field;
  std::string report;      ///< CheckResult::text()
  std::string check_json;  ///< CheckResult::json()
};

/// One platform's side of a cross-platform case: its claim, its output judged against the
/// exact result under that claim alone, and what the claim says it computes.
struct GatePlatform {
  std::string claim;  ///< canonical text form
  TensorKind verdict = TensorKind::consistent;
  std::string reason;
  double max_error_ulps = 0;
  std::optional<ModelMatch> model;  ///< how much of its output its model predicts bit for bit
  bool fixed_order = false;         ///< a plan or profile fixes the summation order (runs must agree)
  std::string inputs, casts, output, accumulation, tiling;  ///< descriptions (the migration report's evidence)
};

/// A cross-platform case's migration figures: both platforms and how far their outputs agree.
struct GateMigration {
  GatePlatform target, reference;  ///< target: `c` under `claim`; reference: `ref` under `ref_claim`
  std::int64_t identical = 0, elements = 0;  ///< elements bit-identical between `c` and `ref`
  /// C against R alone (|C - R| <= bound(claim) + bound(ref_claim)); the case's figures carry
  /// the case's verdict, which is a defect also when either side is one under its own claim.
  TensorKind cross = TensorKind::consistent;
  std::string cross_reason;
};

/// The outcome of one case: a verdict (consistent, suspicious, defect), a regression against
/// its baseline, or an error.
struct GateCaseResult {
  std::string name, op;
  std::int64_t index = 0;             ///< position in the gate (0-based; included files' cases follow the includer's)
  std::string file;                   ///< the gate file the case is written in
  int line = 0;
  std::string claim;                  ///< the claim text in force (canonical text form once parsed)
  std::string repro;                  ///< the `numfid check ...` command that reruns the case
  std::optional<GateFigures> figures; ///< absent: the case could not be checked (see error)
  /// "FILE:LINE: ..." why the case could not be checked, or why its baseline could not be
  /// used or written (then `figures` is present).
  std::string error;
  double seconds = 0;                 ///< wall time of the case
  bool tracked = false;               ///< `baseline: true`
  /// Baseline state: "" (not tracked), "missing" (no baseline yet), "compared", "written"
  /// (--update-baseline), "kept" (--update-baseline on a defect: the old one is kept).
  std::string baseline_state;
  std::string baseline_file;
  std::optional<GateBaseline> stored;  ///< the baseline compared with (as read before any update)
  BaselineComparison comparison;
  std::optional<GateMigration> migration;  ///< cases with `ref`: the migration report's figures
  std::optional<std::int64_t> rerun_identical;  ///< with `rerun`: elements bit-identical between the runs

  /// "consistent", "suspicious", "defect", "regressed" or "error" (docs/gate.md: precedence).
  std::string_view status() const;
  /// The check's reason, the regressions, or the error, control bytes escaped once
  /// (`printable`, io/error.h): the text every report prints.
  std::string reason() const;
};

/// The outcome of a gate run, of one shard of it, or of shards merged.
struct GateResult {
  std::string path;
  std::int64_t gate_cases = 0;        ///< cases in the gate file (all shards)
  int shard_index = 0, shard_count = 0;  ///< 1-based I of I/N; 0/0: the whole gate
  bool update_baseline = false;
  std::vector<GateCaseResult> cases;  ///< in gate-file order
  std::vector<std::string> orphan_baselines;  ///< baseline files of no case of the gate
  double seconds = 0;

  std::int64_t count(std::string_view status) const;
  /// 1 if any case is a defect or regressed; else 2 if any case is an error; else 0
  /// (suspicious cases pass, as `numfid check` exits 0 for them).
  int exit_code() const;
  /// One line per case ("defect      NAME: reason"), improvements, orphan baselines, a summary.
  std::string text() const;
  /// JUnit XML: one <testcase> per case; a defect or regression is a <failure>, an error an
  /// <error>; properties: op, verdict, claim, figures, the reproduction command.
  std::string junit() const;
  /// JSON: the gate, the summary, per case its figures and the check's own JSON. Complete:
  /// parse_gate_result() reads it back (shards' parts for merge_gate_results).
  std::string json() const;
  /// A Markdown summary for CI job pages.
  std::string markdown() const;
  /// The self-contained HTML report (no network, works from file://).
  std::string html() const;
};

/// Progress of a run, after each case (for a terminal: case k of N, elapsed, the slowest).
struct GateProgress {
  std::int64_t done = 0, total = 0;
  double elapsed = 0;
  std::string slowest;  ///< the slowest case so far
  double slowest_seconds = 0;
};

/// Options of run_gate.
struct GateRunOptions {
  int worst = 8;  ///< elements listed per check
  int jobs = 0;   ///< cases run at once (0: every hardware thread)
  int shard_index = 0, shard_count = 0;  ///< run shard I of N (1-based); 0/0: every case
  bool update_baseline = false;          ///< write the baselines of tracked, checked cases
  std::function<void(const GateProgress&)> progress;  ///< called after each case (serialised)
};

/// The shard (1..count) a case belongs to: FNV-1a (64-bit) of its name's bytes, mod count,
/// plus 1. Stable across runs, machines and added cases.
int gate_shard_of(std::string_view name, int count);

/// The baseline directory of a gate file: DIR/STEM.baselines next to it.
std::filesystem::path gate_baseline_dir(const std::filesystem::path& gate_path);

/// Runs every case (of the shard) in parallel: parses its claim(s), reads its operands, calls
/// check_matmul, check_dot, check_sum or check_rows, and for a tracked case compares with
/// (and under update_baseline writes) its baseline. A case whose claim, operands or baseline
/// cannot be used is that case's error ("FILE:LINE: case 'NAME': ..."); the others still run.
GateResult run_gate(const Gate& gate, const GateRunOptions& options = {});

/// Reads back GateResult::json() (`file` for messages); InputError if it is not one.
GateResult parse_gate_result(const std::string& text, const std::string& file);

/// Combines the shards' results of one gate into the full run's result (cases in gate-file
/// order). InputError unless they are shards 1..N of the same gate, each exactly once, and
/// together hold every case.
GateResult merge_gate_results(const std::vector<GateResult>& parts);

/// Writes the report directory (the HTML report index.html and summary.md), all or nothing
/// per file; creates DIR if absent.
void write_gate_report(const GateResult& r, const std::filesystem::path& dir);

/// The values of `t` as `declared` (InputError if they are not representable in it).
TensorData tensor_data(const Tensor& t, const FormatSpec& declared);

}  // namespace numfid
