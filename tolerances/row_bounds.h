// Derived bounds of row and elementwise ops (softmax, log-softmax, layernorm, rmsnorm and the
// elementwise functions): the op evaluated by its textbook formula in a compute format with
// round-to-nearest, each elementary function within a claimed number of ulps (and/or an
// absolute error), reductions over the row in any order, then one cast to the output.
//
// The bound of each element is an enclosure of every value such an evaluation can produce,
// propagated operation by operation as an interval (the exact intermediate is inside it too):
// each rounding widens an endpoint z by u·|z| + η (η = half the least subnormal spacing of the
// compute format, the absolute error of a rounding in the subnormal range), a sum of n terms
// in any order by ((1 + u)^(n-1) - 1)·Σ|terms| (Higham, ASNA 2nd ed. §4.2, without the
// γ_(n-1) simplification that fails once (n-1)·u >= 1), a sum of non-negative terms never
// falls below its largest term, an elementary function widens by fn_ulps ulps of the compute
// format and fn_abs, and a value beyond the compute format's range may have overflowed to
// ±inf. The element's bound is the distance from the exact result to the farther end of the
// enclosure of the computed value, plus the output cast (check_rows judges each output against
// the end on its side: row_element_bounds' `sides`). Because the enclosure follows the
// real arithmetic, the error lands at the scale it really has: the row's scale for norms and
// log-softmax (a rounding of the mean or of log Σ), the cancelling 1 + erf term for GELU, the
// whole result where sigmoid or SiLU can underflow or overflow to 0.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tolerances/check.h"

namespace numfid {

/// fp64 as a compute format (binary64): only its numerics are used (tensors stay <= 32 bits).
inline constexpr FormatSpec fp64_compute{"fp64", FormatKind::binary_float, 64, 11, 53, 1023, true, true, true,
                                         NonFinite::ieee, NanEncoding::ieee, false, "IEEE 754 binary64"};

/// What a row/elementwise kernel claims about its arithmetic.
struct RowClaim {
  const FormatSpec* in = &fp32;       ///< format of X as stored
  const FormatSpec* compute = &fp32;  ///< every operation rounds to nearest in this format
  double fn_ulps = 1;                 ///< each elementary function within this many ulps of `compute`
  double fn_abs = 0;                  ///< ... and/or within this absolute error
  const FormatSpec* param = nullptr;  ///< format of gamma/beta (nullptr: `in`)
  VarianceMethod variance = VarianceMethod::any;
  int variance_lanes = 0;             ///< rowwise-moments: V
  NormForm norm_form = NormForm::centred;
  SoftmaxMethod softmax = SoftmaxMethod::textbook;
  MaskedRow masked_row = MaskedRow::nan;  ///< softmax: a fully masked row's result
  double eps = 1e-5;                  ///< layernorm/rmsnorm: added to the variance, inside the square root
  const FormatSpec* out = &fp32;
  Rounding out_rounding = Rounding::rne;
  /// The output cast saturates (--saturate): the judge measures from the exact value clamped to
  /// the range, so the cast's rounding is bounded at the largest finite value at most.
  bool out_saturate = false;
};

/// Whether the output cast of a row op is exact: `out` holds every value of `compute` (row bounds
/// and the row-scale rule of docs/verdict.md §8.4 then add no output rounding).
bool cast_is_exact(const FormatSpec& compute, const FormatSpec& out);

/// Checks the row-op options a check or tol states (InputError, prefixed with `command`, e.g.
/// "check layernorm"): rowwise-moments' lane count (1..1024), --norm-form shifted only for
/// layernorm, eps finite and >= 0 for the norms.
void validate_row_options(RowOp op, const RowCheckOptions& opt, std::string_view command);

/// The arithmetic a derived claim (claim.compute set) states with the row-op options: the one
/// RowClaim check_rows and row_tolerance derive their bounds from. gamma/beta's format is
/// opt.param_format, else claim.in.
RowClaim row_claim(const ClaimSpec& claim, const RowCheckOptions& opt);

/// Per-element bounds |output - exact| of one row (X's row `x`, the exact results `y`, both as
/// doubles; gamma/beta empty or one per column). An element without a bound (absent) is one
/// whose exact result is not finite, or whose input is: the oracle's special value decides.
/// Elementwise ops treat each element on its own. `may_overflow` (if given) is set per element
/// where the enclosure of the computed value reaches ±inf (an intermediate may overflow, and
/// inf - inf, 0·inf or inf/inf may follow): ±inf and NaN are legal there
/// (ReferenceElement::may_overflow), and a finite bound, if any, bounds the finite results.
/// `before_output` (if given) is set per element to the bound's part before the output's cast
/// (the computed value's distance from the exact one: ReferenceElement::before_output, what a
/// directed output rounding's one-sided bound reads), NaN where there is none.
std::vector<std::optional<double>> row_element_bounds(RowOp op, const RowClaim& c, std::span<const double> x,
                                                      std::span<const double> y, std::span<const double> gamma = {},
                                                      std::span<const double> beta = {},
                                                      std::vector<char>* may_overflow = nullptr,
                                                      std::vector<double>* before_output = nullptr,
                                                      std::vector<std::pair<double, double>>* sides = nullptr);

/// The derivation of the bounds of `op` under `c` for rows of n elements, line by line (what
/// check and tol print).
std::vector<std::string> row_bound_derivation(RowOp op, const RowClaim& c, std::size_t n, bool gamma = false,
                                              bool beta = false);

/// `numfid tol OP --k N --compute F ...` (and Python's numfid.tol) for a row/elementwise op: the
/// bounds depend on each row's values, so the derivation for rows of n elements, line by line
/// (text() prints it; json(): op, k, claim, order, per_element = true, derivation). InputError
/// without claim.compute.
ToleranceResult row_tolerance(RowOp op, const ClaimSpec& claim, std::size_t n, const RowCheckOptions& opt = {});

/// An element of a row: its exact result (the MPFR oracle's, NaN/±inf where it is not finite)
/// and its bound |output - exact| under a claim (absent: none, the oracle's special value decides).
struct RowElementBound {
  double exact = 0;
  std::optional<double> bound;
  bool may_overflow = false;  ///< ±inf and NaN are legal too (row_element_bounds)
};

/// Row `r` of X (an elementwise op: its elements, each on its own) under `claim`: each element's
/// exact result and the bound check_rows judges it by — the derived bound (row_element_bounds)
/// under --compute, else element_bound of the --ulps claim — from the same oracle and bound code
/// (the conformance suites measure their mutants with it). gamma/beta from opt. InputError for a
/// 0-d X or a row past its end.
std::vector<RowElementBound> row_bounds_under_claim(RowOp op, const ClaimSpec& claim, const RowCheckOptions& opt,
                                                    const TensorData& x, std::size_t r);

/// The claim in words for reports: "layernorm in fp32 (variance: any of two-pass, welford,
/// sumsq), functions within 1 ulps".
std::string row_claim_order(RowOp op, const RowClaim& c);

}  // namespace numfid
