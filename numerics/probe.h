// Probes: reveal a black-box kernel's summation order and arithmetic from its outputs, and
// write the result as a validated platform profile (docs/probes.md).
//
// Order: FPRev (Xie et al., "FPRev: Revealing the Order of Floating-Point Summation by Numerical
// Testing", USENIX ATC 2025): a probe vector holds +M at term i, -M at term j and a unit u
// everywhere else, with M so large that M + (any partial sum of units) rounds to M. The output
// is then u times the number of units outside the smallest subtree that holds both i and j,
// which gives that subtree's size; the sizes seen from the first term of every subtree
// rebuild the whole summation tree (n - 1 probe vectors for a sequential order, about
// (n/2)·log2 n for a balanced tree). All probe vectors of one level of the recursion are rows of
// one call, so the number of calls is the depth of the recursion, not the number of vectors.
//
// Arithmetic: crafted rows in the manner of Fasi, Higham, Mikaitis & Pranesh, "Numerical
// behavior of NVIDIA tensor cores", PeerJ CS 7:e330 (2021) (rounding ties and directions,
// subnormal results, exact or rounded products, the accumulator's precision) and random rows;
// every model of the space numfid can run (the plans whose order matches × accumulator
// format, rounding, FTZ, product rounding, output rounding; the tensor-core block-FMA presets
// of the same formats, and the block-FMA parameters a constrained search over three crafted
// calls finds: probe_blockfma.cpp) is kept only if it reproduces every output the black box
// gave, bit for bit. An identical call sent twice must give identical outputs (else:
// non-deterministic, nothing written). The survivor is validated on fresh random inputs of several kinds; a profile is
// produced only if it reproduces all of them.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "numerics/block_fma.h"
#include "numerics/emulate.h"
#include "numerics/profile.h"

namespace numfid {

/// What the black box computes.
enum class ProbeOp : std::uint8_t {
  dot,     ///< D[r] = Σ_k A[r,k]·B[r,k], A and B: rows×k
  sum,     ///< D[r] = Σ_k A[r,k], A: rows×k
  matmul,  ///< D = A·B, A: rows×k, B: k×cols
};

/// "dot", "sum", "matmul"; and back (nullopt for anything else).
std::string_view probe_op_name(ProbeOp op);
std::optional<ProbeOp> parse_probe_op(std::string_view s);

/// One call's inputs (patterns of `in`, row-major): dot: a and b rows×k; sum: a rows×k (b
/// empty, cols 1); matmul: a rows×k, b k×cols.
struct ProbeCall {
  ProbeOp op = ProbeOp::dot;
  const FormatSpec* in = &fp32;
  std::int64_t rows = 0, k = 0, cols = 1;
  std::vector<Bits> a, b;
};

/// A black box: the outputs of one call as patterns of the output format (dot, sum: rows
/// values; matmul: rows×cols, row-major). It may throw; the probe reports the message.
using BlackBox = std::function<std::vector<Bits>(const ProbeCall&)>;

/// A model numfid can run: a reduction plan with its accumulator, or a tensor-core block FMA.
struct ProbeModel {
  bool block_fma = false;
  ReductionModel reduction{};  ///< when !block_fma
  BlockFmaModel unit{};        ///< when block_fma
  std::string source;          ///< where a block-FMA model came from ("H100 fp16->fp32 preset")
  /// One-line description: "plan pairwise, fp32 acc rne, products exact, output rne".
  std::string text() const;
};

/// The outputs `m` predicts for `call` (through numfid's one evaluator per model kind:
/// emulate_dot_rows / emulate_sum / emulate_matmul, block_fma_dot_rows / block_fma_matmul).
std::vector<Bits> run_probe_model(const ProbeModel& m, const ProbeCall& call);

/// The model a loaded profile describes for inputs `in`, outputs `out` (plan profiles; a
/// block-fma profile's variant for in->out); nullopt for what the probe's model space cannot
/// hold (tensor-engine profiles, input casts) or a block-fma profile without that variant.
std::optional<ProbeModel> probe_model_of(const Profile& p, const FormatSpec& in, const FormatSpec& out);

/// The fewest output elements a probed profile is validated on (docs/probes.md: a profile is
/// written only after >= 10^4 fresh outputs reproduce bit for bit): the CLI's --validation and
/// Python's validation= alike.
inline constexpr std::int64_t min_validation_elements = 10'000;

/// The most output elements a validation set may have (the CLI's --validation, probe.txt's
/// `validation`, Python's validation=): 100× the minimum, where a mismatch rate of 10^-5 shows
/// about ten times. The set is held in memory, elements × K inputs per operand (4 bytes each):
/// 10^6 rows at the largest K, 4096, are 16 GB per operand of a dot, what a workstation holds;
/// 10^7 would be 160 GB, and 99999999999999 ran until the kernel killed the process.
inline constexpr std::int64_t max_validation_elements = 1'000'000;

/// What to probe and how.
struct ProbeOptions {
  ProbeOp op = ProbeOp::dot;
  std::int64_t k = 16;                ///< terms per output (2 .. 4096)
  const FormatSpec* in = &fp32;       ///< input format (fp32, bf16, fp16, tf32, fp8)
  const FormatSpec* out = &fp32;      ///< output format
  std::uint64_t seed = 1;             ///< random rows and validation data
  std::int64_t budget = 0;            ///< most black-box calls; 0: no limit
  std::int64_t validation_elements = min_validation_elements;  ///< output elements of the validation set (min_validation_elements .. max_validation_elements)
  std::string name = "probed";        ///< the profile's name (its file stem)
  /// Include the built-in tensor-core presets (numerics/tensor_core_presets.h) in the
  /// candidate set. false: block-FMA models come from the parameter search alone (blind).
  bool presets = true;
  /// Run the block-FMA parameter search (inputs of at most 11 significand bits).
  bool search_block_fma = true;
  std::function<void(std::string_view)> progress;  ///< one line per step (stderr in the CLI)
};

/// What a probe found.
struct ProbeResult {
  bool pinned = false;             ///< one model (or models identical on all data) reproduces everything
  std::string tree;                ///< the revealed summation tree, e.g. "((0 1) (2 3))"; empty if not revealed
  std::string tree_note;           ///< why the tree could not be revealed, if so
  std::vector<std::string> candidates;  ///< models consistent with every probe call (at most 20 listed)
  std::int64_t candidate_count = -1;  ///< -1: the probe stopped (budget, non-determinism) before any model was tried
  std::optional<ProbeModel> model;  ///< the chosen model when pinned
  std::int64_t calls = 0, probe_rows = 0, order_calls = 0, order_rows = 0;
  std::int64_t validation_elements = 0, validation_mismatches = -1;  ///< -1: not validated
  std::vector<std::string> validation_kinds;
  bool deterministic = true;          ///< false: an identical call gave other outputs (nothing written)
  std::int64_t repeat_mismatches = 0;  ///< outputs that differed between the two identical calls
  std::int64_t block_fma_searched = 0;  ///< block-FMA parameter sets the search kept (consistent with all calls; at most 32)
  std::string yaml;  ///< the profile text; empty unless pinned and validated with 0 mismatches
  std::string message;  ///< one-paragraph summary for people
};

/// Probes `box`. Throws std::invalid_argument for options out of range; a black box that
/// throws ends the probe (the exception propagates).
ProbeResult probe(const BlackBox& box, const ProbeOptions& o);

/// The profile YAML of `m` (schema of profiles/, every field `measured: "probed: ..."`).
std::string probe_profile_yaml(const ProbeModel& m, const ProbeOptions& o, std::string_view evidence);

/// A black box answering from model `m` (tests; `numfid probe` against an emulated device).
BlackBox model_black_box(ProbeModel m);

/// The settings of an offline probe, kept by `numfid probe make` in DIR/probe.txt and read
/// back by every `numfid probe infer` round: one "KEY VALUE" line each.
struct ProbeSettings {
  std::string op = "dot", in = "fp32", out = "fp32", output;
  std::int64_t k = 0, budget = 0, validation = 10'000;
  std::uint64_t seed = 1;
  bool presets = true;  ///< false: "presets off" (blind block-FMA search)
  bool operator==(const ProbeSettings&) const = default;
};

/// Why the value of setting `key` (op, k, in, out, budget, validation) in `s` cannot be
/// probed, or empty: the one check of probe.txt's lines and the CLI's options.
std::string probe_setting_problem(const ProbeSettings& s, std::string_view key);

/// Why `name` cannot name a probed profile (its file NAME.yaml, the `--profile NAME` of a
/// claim), or empty: letters, digits, '-', '_' and '.', not starting with '.' ("" and ".yaml"'s
/// stem would be a hidden file `numfid profiles` never lists; a space or ':' needs quoting).
std::string probe_name_problem(std::string_view name);

/// The text of DIR/probe.txt (what parse_probe_settings reads back to the same settings).
std::string probe_settings_text(const ProbeSettings& s);

/// Parses DIR/probe.txt: blank lines are skipped; every other line is KEY VALUE with KEY one
/// of op, k, in, out, seed, budget, validation, output, presets (on|off), integers whole.
/// Keys not given keep `defaults`. Throws InputError "SOURCE:LINE: 'TEXT' is not a probe
/// setting (...)" naming the first bad line, or "SOURCE:LINE: KEY VALUE: why" for a value
/// probe_setting_problem refuses (control bytes escaped).
ProbeSettings parse_probe_settings(std::string_view text, std::string_view source, ProbeSettings defaults = {});

namespace detail {
/// FPRev tree reconstruction from a subtree-size oracle lca(i, js) -> sizes (one batch per
/// call), n leaves. Returns the canonical tree text, or an error in *note.
std::string reveal_tree(std::int64_t n,
                        const std::function<std::vector<std::int64_t>(const std::vector<std::pair<std::int64_t, std::int64_t>>&)>& lca,
                        std::string* note);
}  // namespace detail

}  // namespace numfid
