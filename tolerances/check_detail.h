// Internals of the check pipeline shared by its source files (check.cpp, predict.cpp,
// report.cpp): the claim as the bounds see it, and the shapes of a matmul.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "numerics/profile.h"
#include "tolerances/check.h"

namespace numfid {
class LongAccumulator;
}

namespace numfid::detail {

/// The long accumulator's sum as judge() reads it: correctly rounded into `out`, its nearest
/// double, Σ|terms| and, where the sum is ±inf, what the overflow rule reads of the finite terms
/// (exact_element's fields: ReferenceElement::finite_opposite).
ReferenceElement reference_element(const LongAccumulator& acc, const FormatSpec& out, const RoundOptions& o = {});

/// C's shape for A of shape `a_shape` (M×K, or a stack [..., M, K]) and N columns: [..., M, N].
std::vector<std::int64_t> matmul_output_shape(std::span<const std::int64_t> a_shape, std::int64_t n);

/// Matrix `i` of a stack of `rows`×`cols` matrices held row-major in `t` (a batch of
/// MatmulDims::batches): its values copied, shape {rows, cols}, named after `t`. The batched
/// matmul's reference and emulation run matrix by matrix through the 2-D code with these.
TensorData matrix_of_batch(const TensorData& t, std::int64_t i, std::int64_t rows, std::int64_t cols);

/// InputError where A or B is a stack of matrices ([..., M, K], [..., K, N]): `what` (a quantised
/// or scaled GEMM, whose scale and zero-point tensors are laid out per row of an M×K A and per
/// column of a K×N B) takes A as M×K and B as K×N only.
void refuse_stacked_operand(ShapeRef a, ShapeRef b, std::string_view what);

/// The rounding under which an output element is bit-exact (docs/verdict.md §3): the claim's own
/// output rounding where it gives one value (rne, rna, rtz, rup, rdn), so that a truncating
/// kernel claimed `--out-rounding rtz` is bit-exact where it truncates the exact result; round to
/// nearest, ties to even, for a stochastic one (two legal values: its lean is judged, §4.2).
RoundOptions bit_exact_rounding(Rounding output_rounding);

/// Whether every legal computation under `c` gives -0 for an exact zero sum with a non-zero
/// term, which is then the correctly rounded result (ieee_zero): IEEE 754-2019 §6.3 makes an
/// exact zero sum of operands of opposite signs -0 under roundTowardNegative (+0 in every other
/// direction), and under adders that all round downward a zero partial sum of non-zero terms is
/// -0 in any order ((+0) + (-0) = -0 there too), so the sum's exact zero is -0 whatever the
/// order. Only for plain accumulation claims: --acc-rounding rdn with exact products, no
/// flushing, no operand cast, no block FMA, the addend (if any) at the start.
bool sums_exact_zero_to_negative(const Claim& c);

/// `rounded`, or the output's -0 where the claim's sums give -0 (sums_exact_zero_to_negative)
/// and the exact result is a zero sum with a non-zero term (sum_abs > 0).
Bits ieee_zero(const Claim& c, const FormatSpec& out, double exact, double sum_abs, Bits rounded);

/// The same from an exact element and its rounding into the output (check_against, the scaled
/// GEMM's certified path): the one place an ExactElement's fields become a ReferenceElement's.
ReferenceElement reference_element(const ExactElement& x, Bits rounded);

/// The claim as the bounds see it, with the summation order's own count and name.
struct ClaimSetup {
  Claim claim;
  std::string order = "any order";
  bool row_derived = false;  ///< a row/elementwise op under --compute: `order` states its arithmetic
};

/// The bound-side Claim of `a` for a reduction of k terms (products or plain terms).
ClaimSetup make_claim(const ClaimSpec& a, std::int64_t k, bool has_addend, bool products);

/// The same-sign rtol/atol equivalents of a bound |ŝ − s| <= coef·Σ|t| + absolute followed by an
/// output rounding of relative error out_rel (absolute η_out below the output's normal range):
/// with Σ|t| = |s|, |o − s| <= (coef + out_rel·(1 + coef))·|s| + absolute·(1 + out_rel) + η_out.
/// Sets t.rtol_deterministic, t.rtol_probabilistic and t.atol_same_sign.
void set_same_sign_equivalents(ToleranceResult& t, double coef_det, double coef_prob, double absolute, double out_rel,
                               double eta_out);

/// InputError where a reduction's claim (matmul, dot, sum) states a row op's arithmetic
/// (--compute, --fn-ulps, --fn-abs), or a row op's claim states a reduction's accumulation
/// (--plan, --profile, --acc, --acc-rounding, --products-rounded, --ftz, --daz, --zero-start,
/// --cast, --in-b, --probabilistic-defects): such an option would be ignored, so the claim
/// would not say what is judged. `command` names the caller ("check softmax", "tol matmul").
void refuse_options_of_other_ops(const ClaimSpec& claim, bool row_op, std::string_view command);
/// InputError for a float accumulator without a sign (E8M0: no 0, no negative partial sum),
/// named as --acc: the claim text's parser and claims built in code (make_claim) alike.
void refuse_unsigned_accumulator(const FormatSpec& acc);
/// InputError unless the claim is free of a GEMM's own options (--in-b, integer zero points and
/// requantisation, block scales): sums and row ops have one operand (`command` names the op).
void refuse_gemm_options(const ClaimSpec& claim, std::string_view command);
/// InputError where a sum's claim names what models matmul and dot only: a tensor-core or
/// Tensor Engine profile, or --cast (an operand conversion): check, tol and emulate sum alike.
void refuse_sum_model_options(const ClaimSpec& claim, std::string_view command);
/// Whether profile `p`'s input cast applies to operands in `in` (and B in `in_b` where given): it
/// converts each operand not already in its format, B's too where --in-b differs. The one rule
/// behind make_claim's bound, the emulation (predict.cpp) and the calibration (calibrate.cpp).
bool profile_casts(const Profile& p, const FormatSpec& in, const FormatSpec* in_b);
/// The tensor-core unit a block-FMA profile runs for A in `a` and B in `b` (the operands' formats
/// or the --cast format): block_fma_unit for the results the claim names — `--acc F` where given
/// (the unit whose results are F, then cast to --out: fp32 accumulation with an fp16 output),
/// else --out (the fp32 unit where --out has none). A stated --acc the profile has no unit for is
/// an InputError naming the units. The one resolution of make_claim, the emulation and the gates.
const BlockFmaVariant& claim_block_fma_unit(const ClaimSpec& c, const FormatSpec& a, const FormatSpec& b,
                                            std::string_view hint);
/// InputError where the claim text states --exp-ulps (softmax's older name of --fn-ulps) for an
/// op other than softmax: the CLI declares it for softmax alone, so claims elsewhere say --fn-ulps.
void refuse_exp_ulps_outside_softmax(const ClaimSpec& claim, RowOp op, std::string_view command);

/// One element of a cross-platform check: its exact result and each platform's own deterministic
/// bound about it.
struct CrossSides {
  double exact = 0, c_bound = 0, r_bound = 0;
};
/// A cross-platform defect's reason gains which side left its own bound of the exact result at
/// the elements where |C - R| exceeds both bounds (`ref`: the judged centres R and summed
/// bounds; `sides(e)`: element e's exact result and bounds, or nullopt where C was judged
/// against the exact result alone).
void attribute_cross_platform(Verdict& v, const TensorData& C, const TensorData& R, std::span<const ReferenceElement> ref,
                              const std::function<std::optional<CrossSides>(std::size_t)>& sides);

/// The judgement options the claim asks for.
JudgeOptions judge_options(const ClaimSpec& claim, int worst, bool reduction);

/// Assembles a CheckResult from the pieces (`shape`: the output's, CheckResult::shape).
CheckResult finish(std::string op, const ClaimSetup& s, const ClaimSpec& spec, ReductionBound b, Verdict v, bool matrix,
                   std::vector<std::int64_t> shape = {});

/// InputError unless `t` holds values of `f` (`what` names its role: "A", "--ref", ...) and
/// as many values as its shape has elements (expect_whole).
void expect_format(const TensorData& t, const FormatSpec& f, std::string_view what);

/// The number of elements of `shape`; InputError "{what}: shape [..] has a negative extent" or
/// "... has more than 2^63 - 1 elements" (numfid::view and expect_whole alike).
std::int64_t element_count_of(std::span<const std::int64_t> shape, std::string_view what);

/// InputError unless `t` has a format and exactly as many values as its shape has elements
/// (no negative extent): a TensorData built in code is a public aggregate, and a short one
/// would be read past its end.
void expect_whole(const TensorData& t, std::string_view what);

/// InputError unless the claim states its input and output formats (a ClaimSpec built in code
/// may leave them null; `command` names the caller, "check matmul").
void require_formats(const ClaimSpec& claim, std::string_view command);
/// --addend-at end|output needs an addend, and a float or block-scaled GEMM: InputError naming
/// `command` otherwise (an integer GEMM adds its addend to the exact int32 sum).
void refuse_addend_placement(const ClaimSpec& claim, bool has_addend, std::string_view command,
                             std::string_view addend_what = "--addend");
/// Where a GEMM with an addend is a defect under the claim's --addend-at, the placements under
/// which the same output is not one (the kernel adds the addend elsewhere: torch.addmm with a bf16
/// C adds it after the output cast, which a start claim calls a proven defect where C cancels
/// A·B; docs/tensor-cores.md, "Where cuBLAS adds an addend"): `judge_at` judges C again under the
/// claim with another placement (without trying placements itself); the signature
/// "addend-placement" naming each that is not a defect, with its verdict, bit-exact count and
/// model match; nullopt when every one is a defect too. `elements`: C's element count.
std::optional<Signature> addend_placement_signature(const ClaimSpec& claim, std::size_t elements,
                                                    const std::function<CheckResult(const ClaimSpec&)>& judge_at);
/// The addend added to a model's chain results `y` where `at` (end or output) puts it, in place:
/// `output` (y in `out`): fl_out(y + c) under `out_opts`; `end` (y in `acc`, unrounded):
/// fl_out(fl_acc(y + c)), the add under `acc_opts`, the cast under `out_opts`. c: patterns of
/// `addend_format`; each add is one correctly rounded add of the two formats (add_mixed).
/// Element i draws stochastic stream i. emulate (plans, profiles) and the scaled GEMM's model.
void apply_epilogue(AddendAt at, std::vector<Bits>& y, const FormatSpec& acc, const FormatSpec& out,
                    RoundOptions acc_opts, RoundOptions out_opts, const FormatSpec& addend_format,
                    std::span<const Bits> addend);

/// "[2, 3]".
std::string shape_text(std::span<const std::int64_t> shape);

/// A sum of x along one axis, x viewed row-major as [outer, len, inner]: the axis resolved
/// (negative counts from the end), and the output's shape without it (`reduced`) or with it
/// kept as 1 (`kept`). InputError for a 0-d x or an axis out of range.
struct SumAxes {
  int axis = 0;
  std::int64_t outer = 1, len = 0, inner = 1;
  std::vector<std::int64_t> reduced, kept;
};
SumAxes sum_axes(const TensorData& x, int axis);

/// The shapes of tensors in memory.
inline ShapeRef shape_of(const TensorData& t) { return {t.shape, t.name}; }

/// Whether check runs the claim's model for a prediction: a plan taking the vectorised path,
/// or M·N·K <= 2^26 (2^28 for block FMA, whose dot is cheap per product).
bool prediction_is_cheap(const ClaimSpec& claim, const ClaimSetup& s, std::int64_t m, std::int64_t k, std::int64_t n);

}  // namespace numfid::detail
