// The row-scale lean rule (docs/verdict.md §8.4): probable defects of layernorm and rmsnorm that
// move every row's scale 1/sqrt(var + eps) a little the same way — eps outside the square root,
// no eps, the unbiased variance — and stay inside the any-order deterministic bound.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "tolerances/check.h"
#include "tolerances/row_bounds.h"

namespace numfid::detail {

/// One tensor of a norm, everything as doubles: X's values (each exact in the compute format),
/// the exact results (the oracle's, ReferenceElement::exact), the outputs, gamma and beta (empty:
/// none).
struct RowScaleData {
  std::size_t rows = 0, cols = 0;
  std::span<const double> x, exact, out, gamma, beta;
  /// A stochastically rounded output's random-bit count (ClaimSpec::sr_bits, --sr-bits; 0: exact).
  int sr_bits = 0;
};

/// What the rule found: `applies` false with `why_not` where the claim or the data leave it
/// silent; else the false-alarm probability `p` of the rows' lean and the evidence in words.
struct RowScaleFinding {
  bool applies = false;
  std::string why_not;
  double p = 1;
  std::string evidence;
};

/// The rule: for each row r, δ_r = Σ_j w_j·(o_j − y_j) / Σ_j w_j² (w_j = y_j − β_j, the exact
/// normalised value times gamma) is the row's relative scale error; under the claim's arithmetic
/// it is a martingale of the roundings (model M of §4.1) plus systematic parts bounded
/// deterministically (the function's fn-ulps, eps's rounding, the mean's error squared, underflow,
/// second-order terms) — or, where those do not decide, on an event G of probability at least
/// 1 − α·10^-3 (every running mean and variance within λ_G standard deviations), G's complement
/// then added to `p`. The inverse-variance weighted mean T of the rows' δ_r against Freedman's
/// tail gives `p`; legal kernels emulated on (a sample of) the rows, judged the same way, must not
/// reach α (else the data break the model: not applied). Applies to rmsnorm and to layernorm under
/// every `--variance` with round-to-nearest or stochastic output casts, inputs, gamma and beta
/// exact in the compute format, and no --fn-abs. `alpha`: the false-alarm probability (the
/// verdict's and the emulated kernels').
RowScaleFinding row_scale_rule(RowOp op, const RowClaim& c, const RowScaleData& d, double alpha);

}  // namespace numfid::detail
