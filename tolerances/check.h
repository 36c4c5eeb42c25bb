// THE check pipeline (DESIGN.md, tolerances/): operands in memory + a claim -> exact oracle
// per element -> bounds -> verdict, with the model's bit-exact prediction where the claim
// names a model numfid can run. The CLI (`numfid check`, `numfid tol`, `numfid emulate`), the
// gtest suites, the gate, the Python module, the benchmarks and the verdict corpus all call
// these functions; none re-implements them (STYLE.md rule 11).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/rounding.h"
#include "formats/value.h"
#include "numerics/plan.h"
#include "tolerances/large_memory.h"
#include "tolerances/quant_claim.h"
#include "tolerances/verdict.h"

namespace numfid {

struct Profile;
struct MatmulCalibration;

/// A tensor in memory: values of one declared format (bit patterns), C order, with a shape.
struct TensorData {
  const FormatSpec* format = &fp32;
  std::vector<std::int64_t> shape;  ///< empty: a scalar
  std::vector<Bits> values;         ///< product(shape) patterns of `format`
  std::string name;                 ///< for messages: a file, "A", "--a", ...

  /// Product of the dimensions (1 for a scalar).
  std::int64_t element_count() const;
};

/// A tensor of `format` from values held in a wider container: each value must be exactly
/// representable in `format` (a float holding a bf16 value), else InputError naming the index
/// and the value. `shape` must multiply to data.size().
TensorData view(std::span<const float> data, std::vector<std::int64_t> shape, std::string_view format,
                std::string name = "tensor");
TensorData view(std::span<const double> data, std::vector<std::int64_t> shape, std::string_view format,
                std::string name = "tensor");
/// A tensor of `format` from its bit patterns (uint16_t: fp16/bf16; uint8_t: the 8-, 6- and
/// 4-bit formats and int8/uint8 patterns). Each pattern must fit the format's width.
TensorData view(std::span<const std::uint16_t> bits, std::vector<std::int64_t> shape, std::string_view format,
                std::string name = "tensor");
TensorData view(std::span<const std::uint8_t> bits, std::vector<std::int64_t> shape, std::string_view format,
                std::string name = "tensor");
/// Patterns of any width up to 32 bits (fp32 bits, tf32's 19 bits, int32).
TensorData view(std::span<const std::uint32_t> bits, std::vector<std::int64_t> shape, std::string_view format,
                std::string name = "tensor");

/// A shape with the name of its tensor (a file, "A"): shapes are checked before values are read.
struct ShapeRef {
  std::span<const std::int64_t> shape;
  std::string_view name;
};

/// Dimensions of C (M×N) = A (M×K) · B (K×N), or of a row-wise dot (R×K rows: {R, K, 1}).
/// A batch (torch.bmm: B a stack of `batches` K×N matrices) multiplies each of the `batches`
/// consecutive blocks of m / batches rows of A by its own B; 1: one B for every row.
struct MatmulDims {
  std::int64_t m = 0, k = 0, n = 0;
  std::int64_t batches = 1;
  /// Rows of A (and of C) per matrix of B.
  std::int64_t rows_per_batch() const { return batches > 1 ? m / batches : m; }
  /// Offset in B's values of the K×N matrix that row `row` of A is multiplied by.
  std::int64_t b_offset(std::int64_t row) const { return batches > 1 ? row / rows_per_batch() * k * n : 0; }
};

/// Checks that A is M×K, B is K×N and C (if given) M×N; InputError naming the shapes and
/// tensors otherwise ("shape mismatch: A (a.npy) is [4, 8] (M x K) and ..."). A may be a stack
/// [..., M, K]: m is then every leading axis times M (A's rows, row-major) and C must be
/// [..., M, N]; B is one K×N matrix for every matrix of A, or a stack [..., K, N] with A's
/// leading axes (torch.bmm, torch.matmul of two stacks: no broadcasting), one per matrix of A
/// (`batches`).
MatmulDims matmul_dims(ShapeRef a, ShapeRef b, const ShapeRef* c = nullptr);

/// Checks a row-wise dot: A and B R×K, C (if given) R elements ([R] or [R, 1]).
MatmulDims rowwise_dot_dims(ShapeRef a, ShapeRef b, const ShapeRef* c = nullptr);

/// Every shape of a matmul check (with `rowwise_dot`: a row-wise dot check), before any value
/// is read: A, B and C as matmul_dims (rowwise_dot_dims) checks them; the addend (if given)
/// M×N like C (a row-wise dot's: R elements, [R] or [R, 1]); a cross-platform reference output
/// (if given) exactly C's shape. InputError naming the tensors and their shapes otherwise.
MatmulDims matmul_check_dims(ShapeRef a, ShapeRef b, ShapeRef c, const ShapeRef* addend = nullptr,
                             const ShapeRef* ref = nullptr, bool rowwise_dot = false);

/// The format named `name` (canonical or alias); InputError listing the known ones otherwise.
const FormatSpec& format_named(std::string_view name);

/// The rounding mode `s`; InputError naming `option` otherwise.
Rounding rounding_named(std::string_view s, std::string_view option);

/// A claim as stated in its one text form, the CLI's claim options:
///   --in F [--in-b F] [--acc F] [--acc-rounding R] [--products-rounded] [--ftz] [--cast F [--cast-rounding R]]
///   [--plan P | --profile NAME] --out F [--out-rounding R] [--saturate] [--addend-at start|end|output] [--seed S] [--sr-bits R] [--confidence P]
///   [--probabilistic-defects] [--ulps N] [--compute F [--fn-ulps N] [--fn-abs E]] [--expect bit-exact]
/// e.g. "--in bf16 --acc fp32 --out bf16" or "--in bf16 --out bf16 --profile trn2".
/// Absent values are absent (std::optional), never sentinels: an absent --out-rounding is
/// round-to-nearest-even, or the profile's own output rounding under a profile.
struct ClaimSpec {
  const FormatSpec* in = nullptr;    ///< --in (required)
  const FormatSpec* in_b = nullptr;  ///< --in-b: B's format when it differs from A's
  const FormatSpec* acc = &fp32;     ///< --acc
  Rounding acc_rounding = Rounding::rne;
  bool products_rounded = false;
  bool acc_ftz = false;              ///< --ftz: subnormal accumulator results flushed to zero (with --plan)
  bool acc_daz = false;              ///< --daz: subnormal inputs (operands, addend) read as zero (with --plan)
  bool acc_zero_start = false;       ///< --zero-start: partial sums start from +0, fl(+0 + t) (with --plan)
  const FormatSpec* cast = nullptr;  ///< --cast: the operands are cast to this before use
  Rounding cast_rounding = Rounding::rne;
  std::optional<ReductionPlan> plan;               ///< --plan: a known summation order
  std::shared_ptr<const Profile> profile;          ///< --profile, loaded when parsed
  std::string profile_name;                        ///< as given
  const FormatSpec* out = nullptr;                 ///< --out (required)
  std::optional<Rounding> out_rounding;            ///< --out-rounding
  /// --saturate: the output cast clamps results beyond the output's range to its largest finite
  /// value (±inf too; NaN stays NaN: the OCP OFP8 saturating mode, CUDA's .satfinite); an
  /// integer output (integer GEMM) clamps to its range.
  bool saturate = false;
  /// --addend-at start|end|output: where a GEMM's addend enters (claim.h, AddendAt); refused
  /// by checks without an addend and by ops without one (sum, row ops, integer/scaled GEMMs).
  AddendAt addend_at = AddendAt::start;
  std::uint64_t seed = 0;                          ///< --seed: stochastic roundings' seed
  /// --sr-bits R (1..64): the claim's stochastic roundings draw R random bits (RoundOptions::
  /// sr_bits: biased toward zero by less than 2^-R ulp, which the lean rule of docs/verdict.md
  /// §4.2 allows); 0: exact stochastic rounding (unbiased).
  int sr_bits = 0;
  double confidence = 0.999999;                    ///< --confidence (per element, probabilistic bound)
  bool probabilistic_defects = false;              ///< --probabilistic-defects
  std::optional<double> ulps;                      ///< --ulps: row/elementwise ops' claimed accuracy
  const FormatSpec* compute = nullptr;             ///< --compute: a row/elementwise op's arithmetic (derived bound; fp64 allowed)
  double fn_ulps = 1;                              ///< --fn-ulps (alias --exp-ulps): its elementary functions' accuracy in compute ulps
  double fn_abs = 0;                               ///< --fn-abs: ... and/or their absolute error
  /// --expect bit-exact: the output must equal the model of --plan/--profile bit for bit
  /// (a regression test against a known platform); any differing element is a defect.
  bool expect_bit_exact = false;
  QuantClaim quant;                                ///< integer GEMM: zero points, requantisation (quant_claim.h)
  /// The options the claim text stated (parse_claim), in order, whatever their values: an option
  /// of another kind of op is refused even at its default value (`--acc fp32` in a row op's
  /// claim). Empty for a ClaimSpec built in code, whose fields are compared with the defaults.
  std::vector<std::string> given;

  /// The output rounding in force (the given one, the profile's, or rne).
  Rounding output_rounding() const;
  /// Whether the output cast saturates: --saturate, or the profile's output overflow mode.
  bool output_saturates() const;
  /// The claim in its text form (canonical order, only what differs from the defaults:
  /// `--acc fp32` is left out).
  std::string text() const;
};

/// Appends " --option value" to a claim text, quoting the value where it is empty or holds
/// spaces or quotes: the one way claim texts are assembled.
void append_claim_option(std::string& text, std::string_view option, std::string_view value);
/// Appends " --flag".
void append_claim_flag(std::string& text, std::string_view flag);
/// A stochastic rounding seed from its text: digits only, 0 .. 2^64 - 1; InputError naming
/// --seed and the range otherwise (the claim's --seed and `numfid convert --seed` alike).
std::uint64_t parse_seed(const std::string& text);

/// Parses the claim text form (whitespace-separated tokens; '...' or "..." quote a token
/// holding spaces, e.g. --plan 'blocked(128, pairwise)'; --opt=value is accepted too).
/// Throws InputError naming the token for an unknown option, a missing or bad value, an
/// unknown format, rounding mode, plan or profile, or exclusive options given together.
/// Loads the profile (profile_directory()).
ClaimSpec parse_claim(std::string_view text);

/// A number as strtod reads the whole of `text` (decimal or hex float, inf, nan): "" and the value
/// in `value`, or why not ("'1e-5x' is not a number", "'1e999' is out of range": beyond double's
/// range or below its least subnormal, which strtod would give as inf or 0). The claim's numbers
/// and the CLI's number options read alike.
std::string read_decimal(const std::string& text, double& value);

/// A cross-platform reference's claim: `c` with its plan and profile replaced by `profile`, and
/// its accumulator options (--acc, --acc-rounding, --products-rounded, --ftz, --daz,
/// --zero-start) dropped, since the profile states the accumulation; inputs, casts, output and
/// scale settings kept. What `--ref-profile` (CLI, gate repro commands) and Python's
/// ref_profile= do to a claim. A `profile` that is empty or claim options ('--in bf16') is an
/// InputError naming it as `what` (the caller's spelling: "--ref-profile", "ref_profile=").
ClaimSpec claim_with_profile(const ClaimSpec& c, std::string_view profile, std::string_view what = "the reference's profile");

/// The target claim of a cross-platform tolerance: the claim text with `--profile profile`
/// (replacing a --profile it names), parsed — so an accumulator option or a --plan beside it is
/// refused as for `--profile` itself. What `tol --target-profile` (CLI) and Python's
/// `tol(..., target_profile=)` do to a claim; `profile` checked as by claim_with_profile.
ClaimSpec parse_claim_with_profile(std::string_view text, std::string_view profile,
                                   std::string_view what = "the target's profile");

/// The ops that `check_rows` judges row by row (rows = the last axis).
enum class RowOp : std::uint8_t {
  softmax, log_softmax, layernorm, rmsnorm,
  exp, log, tanh, sigmoid, silu, gelu_erf, gelu_tanh, reciprocal, rsqrt,
};
/// "softmax", "log_softmax", ...
std::string_view row_op_name(RowOp op);
/// The op named `name`, if any.
std::optional<RowOp> find_row_op(std::string_view name);
/// Every RowOp, in declaration order.
std::span<const RowOp> row_ops();

/// How much of the output the claim's own model predicts bit for bit.
struct ModelMatch {
  std::int64_t equal = 0, elements = 0;
  std::string model;  ///< "profile trn2 (v1)", "plan blocked(128)", ...
  std::string note;   ///< e.g. the stochastic seed used
};

/// The whole result of one check: what the CLI prints, the JSON, what the gtest assertions
/// and the Python module report. Self-contained (owns every string and number it reports).
struct CheckResult {
  std::string op;               ///< "matmul", "sum", "softmax", ...
  Verdict verdict;              ///< kind, reason, counts per class, worst elements, signatures
  ReductionBound bound;         ///< coefficients and the derivation, line by line
  std::string claim_text;       ///< the claim as the report states it
  std::string order;            ///< the order the bound assumes ("any order", "profile trn2 (v1)")
  const FormatSpec* output = &fp32;
  double output_rounding_ulps = 0.5;
  bool matrix = false;          ///< elements located as [row, col] (else [index])
  /// The output's shape as the caller gave it: elements are listed at their position in it
  /// ([b, h, i, j] in a stack, [i, j] in a matrix, whatever axis rows were taken along), and in
  /// a stack (more than two axes) the matrices holding elements outside the deterministic bound
  /// are named (Verdict::outside_by_matrix).
  std::vector<std::int64_t> shape;
  /// A cross-platform check (--ref): each element's centre is R, the reference platform's
  /// output, not the exact result (the report's column says so).
  bool cross_platform = false;
  bool probabilistic_is_defect = false;  ///< the tensor rule: too many outside the probabilistic bound is a defect
  std::optional<ModelMatch> model;
  std::vector<Bits> predicted;  ///< the model's bit-exact output, when it ran (else empty)

  /// Where element `index` (flat, in the output's order) lies, as the report writes it: its
  /// position in a stack ([b, h, i, j]) or a matrix ([i, j]), else [index].
  std::string locate(std::int64_t index) const;
  /// Exit code of the CLI contract: 1 for a defect, else 0.
  int exit_code() const;
  /// The verdict as the report's first line names it: "CONSISTENT", "SUSPICIOUS", "DEFECT
  /// (proven)" or "DEFECT (probable, false-alarm probability P)" (the gtest messages too).
  std::string verdict_label() const;
  /// The report `numfid check` prints (one verdict line, claim, counts, worst elements,
  /// signatures, bound derivation).
  std::string text() const;
  /// The verdict as JSON (the document `numfid check --json` writes).
  std::string json() const;
};

/// The most elements a check lists: the range of `numfid check --worst`, `gate run --worst`, a
/// gate case's `worst:` and Python's `worst=` (one limit for every entry point).
inline constexpr int max_worst = 1 << 30;

/// Options of check_matmul.
struct MatmulCheckOptions {
  std::optional<TensorData> addend;  ///< M×N addend the kernel added (D = addend + A·B)
  /// Cross-platform: judge C against `ref`, another platform's output under `ref_claim`, with
  /// |C - R| <= bound(claim) + bound(ref_claim) (both about the exact result).
  std::optional<TensorData> ref;
  std::optional<ClaimSpec> ref_claim;
  int worst = 8;                     ///< elements listed
  /// Run the claim's model (plan, Tensor Engine, block FMA) and count how much of C it
  /// predicts, when it is cheap enough (M·N·K <= 2^26, or 2^28 for block FMA, or a fast plan).
  bool predict = true;
  /// The probable-defect rule's legal orders on these operands (tolerances/calibrate.h):
  /// computed by the check when null (a caller judging many outputs of one reference passes
  /// it once); `calibrate = false` skips the rule.
  const MatmulCalibration* calibration = nullptr;
  bool calibrate = true;
  /// With `ref`: also judge C and R each against the exact result under its own claim, and
  /// call the port a defect when either is one (judge_port_sides). A caller that judges both
  /// sides itself (a gate's migration report) passes false and calls judge_port_sides.
  bool judge_sides = true;
};

/// A port's verdict (docs/cli.md, "Cross-platform"): `cross` is C against R (|C - R| <=
/// bound(claim) + bound(ref_claim)), `target` C and `reference` R each judged against the exact
/// result under its own claim. Within both bounds of each other, C and R can still both be wrong
/// on the same side, or one claim's wide bound can cover the other output's defect: a defect of
/// either side makes `cross` a defect (proven if either side's is; probable otherwise, with the
/// sum of their false-alarm probabilities), its reason naming the side, its claim and its reason
/// before C against R's own verdict (claims in their text form). Unchanged when `cross` is a defect already.
void judge_port_sides(CheckResult& cross, const CheckResult& target, const ClaimSpec& claim, const CheckResult& reference,
                      const ClaimSpec& ref_claim);

/// The format a GEMM's addend is read in: `named` (the CLI's --addend-format and emulate's
/// --c-format, Python's addend_format= and c_format=, a gate case's addend_format) or else the
/// claim's accumulator (fp32 under a profile, which states no --acc), or its output under
/// --addend-at output (the addend is added in the output's format there). A format named
/// without an addend is an InputError ("<format_what> names the format of an addend: give the
/// addend with <addend_what>"), not ignored.
const FormatSpec& addend_format(const ClaimSpec& claim, bool has_addend, const std::optional<std::string>& named,
                                std::string_view format_what, std::string_view addend_what);

/// The exact result of one reduction element, enough to round it correctly into any format.
/// 24 bytes: the nearest double and the side the exact value lies on hold everything a rounding
/// into a format of at most 53 bits needs (a check keeps M·N of these, see unrounded()).
struct ExactElement {
  double exact = 0;          ///< the exact value rounded to nearest double, ties to even (±inf / NaN as the sum is;
                             ///< ±inf also for a finite sum beyond double's range); zero sign as under rne
  double sum_abs = 0;        ///< Σ|terms|, rounded up (where the sum is ±inf: of the finite terms)
  std::int8_t infinite = 0;  ///< +1 / -1: the sum is ±inf
  std::int8_t residual = 0;  ///< sign of (exact value − `exact`): 0 when `exact` is the exact value
  bool nan = false;          ///< the sum is NaN
  bool invalid = false;      ///< ... from an invalid operation (0·inf, inf - inf)
  /// Where the sum is ±inf (an infinite term): |Σ| of the finite terms of the other sign, rounded
  /// up (+inf beyond float's range, past the largest value of every format numfid accumulates
  /// in); 0 otherwise. Whether a partial sum of them can overflow to the other infinity, and
  /// inf - inf give NaN, is the overflow rule's (element_bound). In the padding: 24 bytes still.
  float opposite = 0;

  /// The finite part as a value that rounds exactly as the exact value does into every format
  /// whose finite values and midpoints are doubles (every float format of at most 53 bits and
  /// every integer format up to 2^53) under every deterministic rounding mode: `exact` moved
  /// by less than half its ulp towards the exact value, with a sticky bit. Why that is enough:
  /// `exact` is the nearest double, so no value or midpoint of such a format lies strictly
  /// between it and the exact value; where `exact` itself is one, `residual` says on which side
  /// the exact value lies. Not for stochastic rounding (the tail's size is lost).
  Unrounded unrounded() const;

  /// The exact value correctly rounded into `out` under `o` (default: to nearest, ties to even).
  Bits rounded(const FormatSpec& out, const RoundOptions& o = {}) const;
};

/// Zero bytes are ExactElement{} (tests/large_memory_test.cpp checks it field by field).
template <>
struct ZeroIsDefault<ExactElement> : std::true_type {};

/// The exact results of A·B (+ addend), computed once by the exact long accumulator (the
/// expensive part of a check), then judged against any number of outputs: a kernel's output
/// and its mutants, or every output of a corpus.
struct MatmulReference {
  TensorData a, b;
  std::optional<TensorData> addend;
  MatmulDims dims;                     ///< {M, K, N}; a row-wise dot: {R, K, 1}
  bool rowwise_dot = false;            ///< D[r] = C[r] + Σ_k A[r,k]·B[r,k] (A, B: R×K)
  LargeArray<ExactElement> elements;   ///< M×N, row-major
};

/// The exact results of A (M×K) · B (K×N) (+ addend, M×N). Shapes: InputError naming them.
MatmulReference matmul_reference(const TensorData& a, const TensorData& b, const std::optional<TensorData>& addend = {});

/// The exact results of the row-wise dot D[r] = addend[r] + Σ_k A[r,k]·B[r,k] (A, B: R×K).
MatmulReference dot_reference(const TensorData& a, const TensorData& b, const std::optional<TensorData>& addend = {});

/// Is D (R elements) consistent with the row-wise dot of A and B (R×K each, + addend) under
/// `claim`? What `numfid emulate dot` computes, judged as `check_matmul` judges a matmul.
CheckResult check_dot(const TensorData& a, const TensorData& b, const TensorData& d, const ClaimSpec& claim,
                      const MatmulCheckOptions& opt = {});

/// Is C (M×N) consistent with A (M×K) · B (K×N) (+ addend) under `claim`? Shapes must agree
/// (InputError naming them); a.format, b.format, c.format must be the claim's formats.
/// `opt.addend` is the addend.
CheckResult check_matmul(const TensorData& a, const TensorData& b, const TensorData& c, const ClaimSpec& claim,
                         const MatmulCheckOptions& opt = {});
/// The same against exact results computed before (opt.addend is ignored: the reference's);
/// a reference of a row-wise dot judges a row-wise dot.
CheckResult check_matmul(const MatmulReference& ref, const TensorData& c, const ClaimSpec& claim,
                         const MatmulCheckOptions& opt = {});

/// Is C the sum of X along `axis` (negative counts from the end) under `claim`?
CheckResult check_sum(const TensorData& x, const TensorData& c, int axis, const ClaimSpec& claim, int worst = 8);

/// How layernorm computes its variance (a claim with --compute; --variance).
enum class VarianceMethod : std::uint8_t {
  any,       ///< any of the three below (the bound covers each)
  two_pass,  ///< μ = Σx/n, then Σ(x - μ)²/n
  welford,   ///< Welford's running update, elements in any order
  sumsq,     ///< Σx²/n - μ², clamped at 0 (single-pass GPU kernels)
  /// Welford runs merged by Chan, Golub & LeVeque's pairwise update (δ = μ_b - μ_a,
  /// μ = μ_a + δ·n_b/n, M2 = M2_a + M2_b + δ²·n_a·n_b/n) in any merge tree: per-thread Welford
  /// combined by warp shuffles and block reductions (GPU layernorm kernels). Not in `any`: its
  /// worst case over every tree is wider (docs/verdict.md §8).
  chan,
  /// PyTorch's CPU `RowwiseMoments` (aten/src/ATen/native/cpu/moments_utils.h): V lanes, each a
  /// Welford run over its strided elements in chunks of 16 vectors, the chunks merged by Chan's
  /// update in a binary-counter tree, the tail elements by a scalar Welford run, then the V lanes
  /// merged one by one; every operation in the compute format. One tree of `chan`, so its bound
  /// uses that tree's own depth and weights (docs/verdict.md §8.3). V = the lanes of
  /// Vectorized<T>: 16 for bf16, 8 for fp32 on AVX2 (measured: torch 1.13 CPU bit for bit).
  rowwise_moments,
};
/// "any", "two-pass", "welford", "sumsq", "chan", "rowwise-moments".
std::string_view variance_method_name(VarianceMethod m);

/// A variance method with its parameter: `rowwise-moments(V)` carries its lane count V.
struct VarianceChoice {
  VarianceMethod method = VarianceMethod::any;
  int lanes = 0;  ///< rowwise-moments: V (1..1024)
};
/// "two-pass", ..., "rowwise-moments(16)"; InputError listing the valid ones otherwise.
VarianceChoice variance_named(std::string_view s);
/// The name of a choice, as variance_named reads it ("rowwise-moments(16)").
std::string variance_choice_name(VarianceChoice v);

/// How layernorm applies the row's statistics.
enum class NormForm : std::uint8_t {
  centred,  ///< y = (x - μ)·rsqrt(var + eps) (or / sqrt)
  /// r = 1/sqrt(var + eps) and b = -r·μ, each rounded in the compute format, then y = x·r + b
  /// (PyTorch CPU's layer_norm: `scale`, `bias`); r's error largely cancels, but b's rounding is
  /// on the scale of |μ|·r, not of y.
  shifted,
};
/// "centred", "shifted".
std::string_view norm_form_name(NormForm f);
/// The form named `s`; InputError listing the valid ones otherwise.
NormForm norm_form_named(std::string_view s);

/// How softmax / log-softmax form their denominator (a claim with --compute; --softmax).
enum class SoftmaxMethod : std::uint8_t {
  textbook,  ///< m = max x, then Σ exp(x_j - m) in any order (two passes)
  /// Online (Milakov & Gimelshein 2018): running (max, sum) pairs, a partial sum rescaled by
  /// exp(m_old - m_new) whenever its max grows, pairs merged in any tree (one pass; fused
  /// softmax and attention kernels). The final numerators use the final max.
  online,
};
/// What softmax must give on a fully masked row (every entry -inf; --masked-row). The
/// formula's 0/0 is NaN; attention kernels that guard it write zeros instead.
enum class MaskedRow : std::uint8_t {
  /// NaN in every element (invalid): the max-subtracted formula in IEEE arithmetic, torch.softmax.
  nan,
  /// 0 in every element (either sign): the row attends to nothing. PyTorch's `_safe_softmax`
  /// (aten/src/ATen/native/transformers/attention.cpp, pytorch/pytorch#131060 and #133882: SDPA's
  /// math backend since 2.5, its fused kernels alike), FlashAttention-style kernels whose
  /// running sum stays 0, the ONNX Attention operator.
  zero,
};
/// "nan", "zero".
std::string_view masked_row_name(MaskedRow m);
/// The choice named `s`; InputError listing the valid ones otherwise.
MaskedRow masked_row_named(std::string_view s);

/// "textbook", "online".
std::string_view softmax_method_name(SoftmaxMethod m);
/// The method named `s`; InputError listing the valid ones otherwise.
SoftmaxMethod softmax_method_named(std::string_view s);
/// The method named `s`; InputError listing the valid ones otherwise.
VarianceMethod variance_method_named(std::string_view s);

/// Options of check_rows.
struct RowCheckOptions {
  double eps = 1e-5;                 ///< layernorm / rmsnorm: added to the variance, inside the square root
  std::optional<TensorData> gamma;   ///< layernorm / rmsnorm scale (one per column, 1-D)
  std::optional<TensorData> beta;    ///< layernorm shift (one per column, 1-D)
  const FormatSpec* param_format = nullptr;  ///< gamma/beta's format (nullptr: the claim's --in)
  VarianceMethod variance = VarianceMethod::any;  ///< layernorm under --compute
  int variance_lanes = 0;                          ///< rowwise-moments: its lane count V
  NormForm norm_form = NormForm::centred;          ///< layernorm under --compute
  SoftmaxMethod softmax = SoftmaxMethod::textbook;  ///< softmax / log-softmax under --compute
  MaskedRow masked_row = MaskedRow::nan;            ///< softmax: a fully masked row's result
  /// The axis a row op (softmax, log_softmax, layernorm, rmsnorm) runs along (negative counts
  /// from the end; default the last, PyTorch's dim=-1). Another axis is moved last: rows are then
  /// the other axes flattened in order, and reported indices are [row, position along the axis].
  /// Elementwise ops take any axis of the tensor (their results do not depend on it).
  int axis = -1;
  int worst = 8;
};

/// The ops `check` and `tol` know: matmul, dot, sum, then every row and elementwise op (row_ops()).
std::vector<std::string> check_op_names();
/// Whether `check OP` takes the named option or optional operand: "addend", "addend_format",
/// "ref", "ref_profile" (matmul, dot), "axis" (sum, softmax, log_softmax, layernorm, rmsnorm),
/// "softmax" (softmax, log_softmax), "masked_row" (softmax), "eps", "gamma", "param_format"
/// (layernorm, rmsnorm), "beta", "variance", "norm_form" (layernorm). Names as gate-file keys
/// and Python keywords; the CLI's flag is "--" + the name with '-' for '_'. The one table the
/// CLI's declarations, gate files and Python's keywords are checked against.
bool check_takes(std::string_view op, std::string_view name);
/// The options (not the operands) `check OP` takes, in the table's order, ", "-separated ("" if none).
std::string check_options_list(std::string_view op);

/// A row op's options as the CLI, gate files and Python give them (absent: RowCheckOptions'
/// default; present: given, even where equal to the default).
struct RowOptionsGiven {
  std::optional<int> axis;
  std::optional<double> eps;
  std::optional<std::string> variance, norm_form, softmax, param_format, masked_row;
};
/// Sets o's axis, eps, variance, norm form, softmax method, masked row and param_format from
/// `g`: InputError for a bad name, ("check OP: option NAME does not apply to OP ...") for an
/// option `op` does not take (check_takes), for a param_format when `params_given` is false (no
/// gamma, no beta: it would name the format of nothing), and for variance, norm_form or softmax
/// under an --ulps `claim` (they state the arithmetic of --compute; an accuracy at the exact value
/// is the same whatever the method; masked_row states the op's value, so either claim takes it).
/// Options that describe something absent are refused, not ignored.
void apply_row_options(RowCheckOptions& o, RowOp op, const RowOptionsGiven& g, const ClaimSpec& claim,
                       bool params_given);

/// Sets o.variance / o.variance_lanes and o.norm_form from their option texts (`--variance`,
/// `--norm-form`: the CLI, gate files and Python read them alike); InputError on a bad name.
void set_row_method_options(RowCheckOptions& o, std::string_view variance, std::string_view norm_form);

/// Is C = op(X) row by row under `claim`: claim.ulps ("within N ulps of the output format at
/// the exact value"), or claim.compute (the bound derived from the op's textbook arithmetic in
/// that format, tolerances/row_bounds.h)?
CheckResult check_rows(RowOp op, const TensorData& x, const TensorData& c, const ClaimSpec& claim,
                       const RowCheckOptions& opt = {});

/// The tolerance a claim implies for a reduction of length k: bounds, derivation and the
/// equivalent rtol/atol of torch.testing.assert_close.
struct ToleranceResult {
  std::string op;
  std::int64_t k = 0;
  ReductionBound bound;
  std::string claim_text, order;
  double rtol_deterministic = 0, rtol_probabilistic = 0, atol_deterministic = 0, atol_probabilistic = 0;
  /// The atol that goes with the same-sign rtol: the bound's absolute allowance and the output's
  /// rounding in its subnormal range (0 only where both are).
  double atol_same_sign = 0;
  double mean_abs_term = 0;
  bool products = true;
  bool output_rounding_half = true;  ///< the output rounding errs by 1/2 ulp (nearest), else 1 ulp
  /// Where the addend enters (tol --addend with --addend-at): the bound's coefficients are the
  /// products' and the epilogue's roundings follow (printed so).
  AddendAt addend_at = AddendAt::start;
  /// The claim is exact (an integer GEMM): no rounding freedom, so no rtol/atol applies and
  /// text() says to compare bit for bit instead of printing equivalent tolerances.
  bool exact = false;
  const FormatSpec* output = &fp32;
  /// A row or elementwise op (row_tolerance): each element's bound depends on its row's values,
  /// so the report is the derivation for rows of k elements, not coefficients; text() prints it.
  std::string row_text;
  std::string json_text;  ///< the JSON document
  std::string text() const;   ///< what `numfid tol` prints
  std::string json() const { return json_text; }
};

/// Options of tolerance().
struct ToleranceOptions {
  bool addend = false;                  ///< the sum starts from an addend
  std::optional<ClaimSpec> ref_claim;   ///< cross-platform: bound |out_A - out_B| (A = ref_claim, B = claim)
};

/// `numfid tol`'s options, as the CLI's flags and Python's keywords give them: an absent one is
/// not given (its default applies), a present one is given even where it equals the default.
struct TolRequest {
  bool addend = false;                                ///< matmul, dot, sum
  std::optional<std::string> ref_profile, target_profile;  ///< matmul, dot, sum
  std::optional<double> eps;                          ///< layernorm, rmsnorm
  std::optional<std::string> variance, norm_form;     ///< layernorm
  std::optional<std::string> softmax;                 ///< softmax, log_softmax
};
/// `numfid tol OP --k K CLAIM` (and Python's numfid.tol): an option OP does not take is refused
/// (InputError "tol OP: --NAME does not apply to OP"), not ignored; then tolerance() for a
/// reduction (matmul, dot, sum; --target-profile replaces the claim's accumulator, --ref-profile
/// makes it cross-platform) or row_tolerance() for a row or elementwise op (rows of K elements).
ToleranceResult tol(std::string_view op, std::string_view claim_text, std::int64_t k, const TolRequest& r);

/// The bounds `claim` implies for `op` ("matmul", "dot" or "sum") over k terms.
ToleranceResult tolerance(std::string_view op, std::int64_t k, const ClaimSpec& claim, const ToleranceOptions& opt = {});

/// The bit-exact output the claim's model predicts (plan, profile: Tensor Engine, block FMA,
/// or a plain plan model): D = C + A·B (matmul) or D[r] = C[r] + Σ_k A[r,k]·B[r,k] (dot,
/// A and B: R×K). Stochastic roundings draw from stream = the output element's index, seed
/// claim.seed, in every model: check's prediction and emulate's output agree bit for bit.
/// `c` is the addend (format: its own). Shape errors: InputError.
TensorData emulate_matmul(const TensorData& a, const TensorData& b, const std::optional<TensorData>& c,
                          const ClaimSpec& claim);
TensorData emulate_dot(const TensorData& a, const TensorData& b, const std::optional<TensorData>& c,
                       const ClaimSpec& claim);
/// The sum of `x` along `axis` (negative counts from the end) by the claim's plan or plan
/// profile (a tensor-core or Tensor Engine profile has no sum: InputError); the result has
/// x's shape without that axis. Element e (row-major) draws stochastic stream e.
TensorData emulate_sum(const TensorData& x, int axis, const ClaimSpec& claim);
/// "" or a note that the claim's numpy plan (numpy's pairwise_sum, `numpy`, `blocked(T,
/// numpy)`, the numpy-pairwise profile) does not model np.sum along this axis: numpy sums
/// pairwise only along an array's contiguous axis and adds the slices in order along a strided
/// one (axis 0 of a C-order matrix: the `sequential` plan, bit for bit). check sum prints it in
/// its derivation (and verdict line where it is not consistent); emulate sum on stderr / as a
/// Python warning.
std::string numpy_strided_axis_note(const TensorData& x, int axis, const ClaimSpec& claim);

/// What `emulate` ran, for messages: "profile trn2 v1", "plan blocked(128)",
/// "profile nvidia-h100-tc v1: bf16->fp32 block FMA".
std::string emulation_description(const ClaimSpec& claim, const FormatSpec& in);

}  // namespace numfid
