// Verdicts: each output element classified against its bounds, the tensor judged, and
// signatures over the whole error field reported as evidence of the defect class.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tolerances/bounds.h"
#include "tolerances/error_field.h"
#include "tolerances/large_memory.h"

namespace numfid {

/// What the oracle says about one output element.
struct ReferenceElement {
  Bits rounded;        ///< the exact result correctly rounded into the output format
  double exact = 0;    ///< the exact result rounded to double (±inf / NaN where the exact result is)
  double sum_abs = 0;  ///< Σ|terms| (rounded up); where the exact result is ±inf, of the finite terms
  /// Bounds given by the caller instead of derived from the claim: a cross-platform check
  /// judges against another platform's output with the sum of both platforms' bounds; a
  /// softmax gives each element the bound of its own arithmetic. Absent: derived from the claim.
  std::optional<double> det_bound = std::nullopt, prob_bound = std::nullopt;
  /// A step of the claimed computation may overflow here (an operand beyond a cast's range, a
  /// partial sum beyond the accumulator's): ±inf and NaN are legal results too.
  bool may_overflow = false;
  /// Where the exact result is ±inf: |Σ| of the finite terms of the other sign, rounded up
  /// (ExactElement::opposite); 0 otherwise. What the overflow rule reads (element_bound).
  double finite_opposite = 0;
  /// Where the bounds are given: their part before the output's rounding (the computed value's
  /// distance from the exact one), which a directed output rounding's one-sided bound reads
  /// (docs/verdict.md §2, "Directed output roundings"; check_rows gives it). Absent: symmetric.
  std::optional<double> before_output = std::nullopt;
};

/// Element classes, from best to worst.
enum class ElementClass : std::uint8_t {
  bit_exact,              ///< equals the correctly rounded result
  within_probabilistic,   ///< inside the probabilistic bound
  within_deterministic,   ///< outside the probabilistic, inside the deterministic bound
  outside_deterministic,  ///< no legal computation under the claim gives it: provable defect
};
std::string_view class_name(ElementClass c);

/// Tensor verdicts; exit codes 0, 0 (with a warning) and 1.
enum class TensorKind : std::uint8_t { consistent, suspicious, defect };
std::string_view kind_name(TensorKind k);

/// The shape used to locate elements (row-major rows × cols; a vector is 1 × n).
struct Grid {
  std::int64_t rows = 1;
  std::int64_t cols = 1;
  /// Rows judged along another axis than the output's last (check_rows with --axis): the
  /// output's axes after the judged one hold `inner` positions, and grid element (row, col) is
  /// the output's flat index (row / inner · cols + col) · inner + row % inner. 1: the grid is
  /// the output's own row-major layout.
  std::int64_t inner = 1;

  /// The output's flat index of grid element (row, col).
  std::int64_t index(std::int64_t row, std::int64_t col) const {
    return (row / inner * cols + col) * inner + row % inner;
  }
};

/// One element as reported.
struct ElementReport {
  std::int64_t index = 0, row = 0, col = 0;
  Bits bits;
  double value = 0;       ///< the output
  double exact = 0;       ///< the exact result
  double error = 0;       ///< value - exact
  double error_ulps = 0;  ///< error in ulps of the output format at the exact value
  double det_bound = 0, prob_bound = 0;
  double ratio = 0;       ///< |error| / det_bound
  ElementClass cls = ElementClass::bit_exact;
};

/// Zero bytes are ElementReport{} (tests/large_memory_test.cpp checks it field by field).
template <>
struct ZeroIsDefault<ElementReport> : std::true_type {};

/// Evidence about the whole error field.
struct Signature {
  std::string name;      ///< one of signature_names (or "reference-" and one of them)
  std::string evidence;  ///< numbers that support it
};

/// Every signature a verdict can carry (verdict.cpp, check.cpp's function accuracy, the
/// integer and scaled GEMM checks); a cross-platform check also reports R's own as
/// "reference-NAME" and, where C is a defect under its own claim, C's as "target-NAME"
/// (judge_port_sides). A signature added anywhere is added here (matchers refuse other names).
inline constexpr std::string_view signature_names[] = {
    "bias",          "narrow-accumulator", "confined",         "lone-outlier",     "non-finite",
    "function-accuracy", "reference-defect", "requant-overflow", "requant-rounding", "zero-point-missing",
    "zero-point-sign",   "no-saturation",    "int32-overflow",   "scale-transposed", "scale-missing",
    "missing-promotion", "masked-row-zero", "addend-placement", "subnormal-flush", "target-defect"};

/// Whether `name` is a signature some verdict can carry (signature_names, or
/// "reference-" / "target-" + one of them).
bool is_signature_name(std::string_view name);

/// The judgement of one tensor.
struct Verdict {
  TensorKind kind = TensorKind::consistent;
  /// A defect on statistical evidence (a bias, or elements outside the probabilistic bound on
  /// data whose legal orders respect the model) rather than a proof; `false_alarm_probability`
  /// bounds the chance that a legal output is called one (docs/verdict.md §4).
  bool probable = false;
  double false_alarm_probability = 0;
  std::array<std::int64_t, 4> counts{};  ///< per ElementClass
  std::int64_t elements = 0;
  std::int64_t nonfinite_mismatches = 0;  ///< NaN/inf where the exact result is finite (or the reverse)
  std::int64_t outside_probabilistic = 0;
  std::int64_t chance_threshold = 0;  ///< this many outside the probabilistic bound is a defect
  double chance_probability = 1;      ///< P(at least that many by chance) under the bound's model
  std::string reason;                 ///< one line: why this verdict
  std::vector<ElementReport> worst;   ///< the worst elements by |error| / deterministic bound
  std::vector<Signature> signatures;
  double max_error_ulps = 0;
  ErrorField field;  ///< the whole error field, summarised (reports, gate baselines)
  /// A stacked output (JudgeOptions::shape): how many matrices it holds, and each
  /// matrix holding elements outside the deterministic bound with their count, the most first
  /// (ties: in matrix order). Empty otherwise.
  std::int64_t matrices = 0;
  struct MatrixCount {
    std::int64_t matrix = 0;   ///< row-major over the output's leading axes
    std::int64_t outside = 0;  ///< elements outside the deterministic bound
  };
  std::vector<MatrixCount> outside_by_matrix;
};

/// Whether `shape` is that of an array of n elements (non-empty, its dimensions multiplying to n).
bool is_shape_of(std::span<const std::int64_t> shape, std::int64_t n);

/// The position of flat index `index` in an array of `shape` (row-major): [b, h, i, j].
std::vector<std::int64_t> position_in(std::int64_t index, std::span<const std::int64_t> shape);

/// Options of the judgement.
struct JudgeOptions {
  double false_alarm = 1e-9;  ///< probability of calling a legal output defective by chance
  int worst = 8;              ///< elements listed
  /// Whether more elements outside the probabilistic bound than chance explains make the
  /// tensor a defect (else: suspicious). Default: only for stochastic rounding, whose errors
  /// are mean-independent by construction (Connolly, Higham & Mary 2021), so the bound is a
  /// theorem. Under round-to-nearest the Higham–Mary bound rests on a model of independent
  /// mean-zero errors that structured data breaks: summing equal products sequentially in
  /// fp32 repeats the same rounding error for a whole binade, so the error grows like n·u, not
  /// √n·u, and a legal output leaves the probabilistic bound (tests/verdict_corpus_test.cpp).
  std::optional<bool> probabilistic_defects;
  /// Each element's addend (patterns of addend_format) where the claim adds it at the end or
  /// after the output cast (claim.addend_at): the epilogue's bound reads it (element_bound).
  /// Required then (std::invalid_argument otherwise), ignored else.
  std::span<const Bits> addend = {};
  const FormatSpec* addend_format = nullptr;
  /// The output's shape, where the caller knows it: one of more than two axes is a stack of
  /// matrices (its last two axes), and the verdict says which matrices hold the defects
  /// (Verdict::outside_by_matrix, the confined and lone-outlier signatures).
  std::span<const std::int64_t> shape = {};
  /// Cross-platform: `ref`'s values are the reference platform's output R, not the exact result
  /// (the signatures say "R" where they read them).
  bool centre_is_reference = false;
};

/// Judges `out` (patterns of claim.output) against the oracle under bound `b`; `ref` holds one
/// element per output element (std::invalid_argument otherwise), `out` at least one (InputError).
Verdict judge(const Claim& claim, const ReductionBound& b, std::span<const Bits> out,
              std::span<const ReferenceElement> ref, Grid grid, const JudgeOptions& opt = {});

}  // namespace numfid
