// Calibration of the probable-defect rule against the data itself (docs/verdict.md §4.1):
// legal summation orders emulated on a sample of a matmul's output elements, on the actual
// operands, under the claimed accumulator. They tell whether these operands respect the
// Higham–Mary model of independent rounding errors (equal or sorted terms may not), and they
// give the centre the claim's deterministic part (an input cast) puts each element at.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tolerances/check.h"

namespace numfid {

/// Legal orders on a sample of elements, and what they say about the model on these operands.
struct MatmulCalibration {
  bool applies = false;   ///< false: the rule does not run; `why_not` says why
  std::string why_not;
  std::vector<std::int64_t> sample;  ///< element indices (row-major), evenly spaced, finite results only
  std::vector<double> center;        ///< exact sum of the products of the (claim-cast) operands
  /// Probabilistic reduction radius about it, over every summation tree (docs/verdict.md §4.1):
  /// λ·R + η_total, R = `spread`, λ = √(2 ln(2/(1 − C))) (Azuma–Hoeffding, one tail for the sum).
  std::vector<double> radius;
  /// R = u·√(Σ_j B_j²): the sub-Gaussian scale of the reduction error of any order, B_j bounding
  /// |the unrounded value of any addition of j terms| (the j largest terms of one sign, plus the
  /// deterministic error of the operands: §4.1).
  std::vector<double> spread;
  std::vector<double> radius_hm;     ///< the Higham–Mary radius γ̃_n(λ)·Σ|t'| + n·η, for comparison
  /// 2^f, f the lowest set bit of any term: every partial sum of the element is a multiple of it.
  std::vector<double> lattice;
  double absolute = 0;    ///< η_total: the underflow allowance of every rounding of the tree, (m - 1 + extra·m)·η
  double lambda = 0;      ///< λ of the radius
  std::vector<std::string> orders;   ///< the legal orders emulated
  std::vector<std::vector<double>> legal;  ///< [order][sample]: the accumulator result of that order
  double rho = 0;         ///< max over orders and sample of |legal - center| / radius (model holds: <= 1)
  std::string rho_order;           ///< the emulated order that reaches rho
  std::int64_t rho_element = -1;   ///< and the element it reaches it at (flat index in C; CheckResult::locate places it)
  std::int64_t term_additions = 0;  ///< the work done: (orders + 1) · sample · K
  bool cast = false;      ///< the centre is the exact result of cast operands (--cast, or the profile's cast)
};

/// Largest number of term additions calibrate_matmul spends (orders × sampled elements × K)
/// before it samples fewer elements (but never fewer than 32 or than the tensor holds).
inline constexpr std::int64_t kCalibrationBudget = std::int64_t{1} << 25;

/// Emulates the legal orders of `claim` (its plan, or for an any-order claim: sequential,
/// reverse, pairwise, blocked(16), blocked(128), blocked(128, pairwise), splitk(4), strided(32),
/// numpy, two random permutations, increasing and decreasing |term|) on at most
/// `max_elements` evenly spaced elements of `ref` (fewer if the budget above is exceeded),
/// with the claim's accumulator, rounding and input cast, through the plan evaluator
/// (numerics/plan.h `reduce`), and derives each sampled element's radius over every order from
/// its sorted terms (`spread`, `radius`). Applies only to round-to-nearest accumulation. A
/// profile is calibrated as the claim it stands for: a plan profile's plan, a tensor-engine
/// profile's Tensor Engine model (numerics/tensor_engine.h `tensor_engine_sum`), with the
/// profile's cast and accumulator; a block-FMA profile is not (its truncations are one-signed:
/// `why_not`, which apply_calibration appends to the verdict's reason).
MatmulCalibration calibrate_matmul(const MatmulReference& ref, const ClaimSpec& claim, std::int64_t max_elements = 256);
/// The same with the operands given apart from `ref` (a reference computed without keeping
/// copies of them: ref.a and ref.b are not read).
MatmulCalibration calibrate_matmul(const MatmulReference& ref, const TensorData& a, const TensorData& b,
                                   const ClaimSpec& claim, std::int64_t max_elements = 256);

/// The probable-defect rules on the sampled elements of output `c` (docs/verdict.md §4.1):
/// (a) outside: an element is outside when no value within its radius of the centre rounds
/// (the claim's output rounding) to it; k or more outside, with P(Binomial(S, 1 - C) >= k) <=
/// JudgeOptions::false_alarm, is a probable defect when the legal orders stay inside their
/// radius (rho <= 1), else suspicious; (b) lean: the inverse-variance weighted mean signed error
/// in output ulps against its sub-Gaussian tail; (c) narrow grid: outputs on a coarser grid
/// (bf16's or fp16's significand) than the output format, which legal results reach with
/// probability at most 1.5·2^-(p_out - p) each. Leaves a proven defect, and a result the rules
/// do not apply to, as it is.
void apply_calibration(CheckResult& r, const MatmulCalibration& cal, const TensorData& c, const ClaimSpec& claim);

/// `--expect bit-exact`: turns the check of `c` into "matches the model bit for bit" (the
/// verdict consistent, whatever the bounds said) or a defect listing the elements that differ
/// from the model's output (r.predicted, which must have been computed).
void apply_bit_exact_expectation(CheckResult& r, const TensorData& c);

}  // namespace numfid
