// CI numerical regression gates (docs/gate.md): a YAML gate file lists checks (operands,
// op, claim); run_gate runs each through the check pipeline (tolerances/check.h) and
// reports every case as text, JUnit XML and JSON. First slice: no baselines, shards or
// parallel runs yet.
#pragma once

#include <cstdint>
#include <filesystem>
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
  int line = 0;      ///< 1-based line of the case in the gate file
  int claim_line = 0;  ///< line of the claim text in force (the case's or defaults.claim)
  /// Operands: "FILE" or "FILE.safetensors:NAME", relative paths resolved.
  std::optional<std::string> a, b, c, x, ref, addend;
  std::string claim;                    ///< the claim text in force
  std::optional<std::string> ref_claim;  ///< cross-platform: the claim of `ref`'s platform
  std::optional<int> axis;               ///< sum: axis summed (default -1)
  std::optional<double> eps;             ///< layernorm / rmsnorm: variance epsilon
};

/// A parsed gate file.
struct Gate {
  std::string path;  ///< as given to load_gate (messages, reports)
  int version = 1;
  std::vector<GateCase> cases;
};

/// Loads a gate file strictly: one YAML document; `version: 1`; optional `defaults:
/// {claim}`; `cases`: a non-empty list of mappings with the keys documented in docs/gate.md.
/// Unknown keys, values of the wrong type, duplicate keys, duplicate case names, an unknown
/// op, a missing or inapplicable operand, a case without a claim and a second document are
/// InputError "FILE:LINE: ...". Claims and operands are not read here (run_gate does, per case).
Gate load_gate(const std::filesystem::path& path);
/// The same from text (`path`: for messages and to resolve relative operand paths).
Gate load_gate_text(const std::string& yaml, const std::filesystem::path& path);

/// The outcome of one case: a verdict (consistent, suspicious, defect) or an error.
struct GateCaseResult {
  std::string name, op;
  int line = 0;
  std::string claim;                  ///< the claim text in force (canonical text form once parsed)
  std::optional<CheckResult> check;   ///< absent: the case could not be checked (see error)
  std::string error;                  ///< "FILE:LINE: ..." why it could not be checked
  double seconds = 0;                 ///< wall time of the case

  /// "consistent", "suspicious", "defect" or "error".
  std::string_view status() const;
  /// The check's reason, or the error.
  std::string reason() const;
};

/// The outcome of a gate run.
struct GateResult {
  std::string path;
  std::vector<GateCaseResult> cases;  ///< in gate-file order
  double seconds = 0;

  std::int64_t count(std::string_view status) const;
  /// 1 if any case is a defect; else 2 if any case could not be checked; else 0 (suspicious
  /// cases pass, as `numfid check` exits 0 for them).
  int exit_code() const;
  /// One line per case ("defect      NAME: reason") and a summary line.
  std::string text() const;
  /// JUnit XML: one <testcase> per case; a defect is a <failure> (message: the reason, body:
  /// the check's report), an error an <error>; properties: op, verdict, claim, max error.
  std::string junit() const;
  /// JSON: the gate, the summary, and per case its figures and the check's own JSON.
  std::string json() const;
};

/// Options of run_gate.
struct GateRunOptions {
  int worst = 8;  ///< elements listed per check
};

/// Runs every case (in order): parses its claim(s), reads its operands, calls check_matmul,
/// check_dot, check_sum or check_rows. A case whose claim or operands cannot be used is
/// reported as that case's error ("FILE:LINE: case 'NAME': ..."); the other cases still run.
GateResult run_gate(const Gate& gate, const GateRunOptions& options = {});

/// The values of `t` as `declared` (InputError if they are not representable in it).
TensorData tensor_data(const Tensor& t, const FormatSpec& declared);

}  // namespace numfid
