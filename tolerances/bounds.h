// Error bounds derived from a Claim: deterministic (sound for every summation order),
// probabilistic (Higham & Mary 2019), output rounding and input quantisation; each carries
// its derivation as text so that a tolerance is never an unexplained number.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tolerances/claim.h"

namespace numfid {

/// The bound of a reduction of k products (+ an optional addend) under a claim, as
/// coefficients of Σ|terms| (terms = the exact products and the addend).
struct ReductionBound {
  std::int64_t terms = 0;           ///< m = k (+1 with an addend)
  std::int64_t roundings = 0;       ///< n: roundings on the path of a term (any order: m - 1, +1 if products rounded)
  double u_acc = 0;                 ///< unit roundoff of the accumulator
  double input_cast = 0;            ///< coefficient of Σ|terms| from casting the inputs (2u + u²), 0 if no cast
  double deterministic = 0;         ///< coefficient: |ŝ - s| <= deterministic·Σ|terms| + absolute
  double absolute = 0;              ///< underflow allowance: n · (half) the least subnormal spacing of the accumulator
  bool probabilistic_applies = true;  ///< false where rounding errors are biased (rtz, rup, rdn)
  double probabilistic = 0;         ///< coefficient of the probabilistic bound (= deterministic when it does not apply)
  double confidence = 0;            ///< probability (per element) that the probabilistic bound holds, in its model
  double lambda = 0;                ///< Higham–Mary λ giving that confidence
  /// The accumulator's largest finite value: where a partial sum can reach it ((1 + coef)·Σ|terms|
  /// + absolute, the largest magnitude any partial sum or rounded product can have), it may
  /// overflow to ±inf or saturate, which no relative model covers: the element's bound is +inf.
  double overflow_at = INFINITY;
  /// The accumulator rounds to nearest with IEEE overflow: a partial sum (or product) that
  /// overflows becomes ±inf (NaN where the format has no inf), and every later operation keeps it
  /// non-finite (inf + x = inf, inf - inf = NaN). So where a partial sum may overflow, a finite
  /// result has overflowed nowhere and meets the finite bound; ±inf and NaN are legal besides.
  /// Under directed or stochastic rounding an overflow may give the largest finite value and the
  /// sum continue from it: there the element's bound is +inf.
  bool overflow_sticky = false;
  std::vector<std::string> derivation;  ///< one line per step, printed by `tol` and `check`
};

/// Derives the bound of a dot/sum/matmul element of `k` products (+ addend) under `claim`.
/// `confidence` is the per-element probability for the probabilistic bound (e.g. 1 - 1e-6).
/// With the addend at the end or after the output cast (claim.addend_at), the bound of the k
/// products alone, its derivation ending with the epilogue's line; element_bound adds the
/// epilogue's roundings at each element's values.
ReductionBound reduction_bound(const Claim& claim, std::int64_t k, bool has_addend, double confidence);

/// The format and rounding of an `--addend-at end` add (D = fl_out(fl_acc(P + C))): the claim's
/// accumulator and its rounding; for a tensor-core unit its result format, rounded to nearest
/// (the epilogue is an ordinary add on the CUDA cores: measured, an H200's bias epilogue,
/// tests/h200_gemm_test.cpp); claim.end_add_format to nearest where set (a scaled GEMM's fp32).
struct EpilogueAccumulator {
  const FormatSpec* format = nullptr;
  Rounding rounding = Rounding::rne;
};
EpilogueAccumulator epilogue_accumulator(const Claim& claim);

/// The derivation line of an addend at the end or after the output cast (claim.addend_at) after
/// a chain of k products: what reduction_bound and the scaled GEMM's bound append.
std::string epilogue_derivation(const Claim& claim, std::int64_t k);

/// What the epilogue adds to a same-sign relative tolerance (tol's rtol; terms of one sign, so
/// |A·B| <= |A·B + C|): u_1·(1 + u_out), u_1 the unit roundoff of its add (the output's under
/// `output`, epilogue_accumulator's under `end`); 0 with the addend at the start.
double epilogue_relative_rounding(const Claim& claim);

/// The bound of a chained block-FMA dot of `k` products (+ addend) under claim.block_fma:
/// per block, n + 1 terms aligned and cut at 2^(M - w) (w window bits, M the largest term's
/// exponent), then the sum rounded to the result's fraction bits; B blocks chained, each
/// block's result the next one's addend (Fasi, Higham, Mikaitis & Pranesh 2021, §3;
/// Blanchard et al., SISC 2020, block FMA analysis). Truncation is biased: deterministic only.
ReductionBound block_fma_bound(const Claim& claim, std::int64_t k, bool has_addend);

/// The bound of an op claimed accurate to `claim.ulps` output ulps (elementwise functions,
/// softmax, norms): no reduction term, deterministic = probabilistic = ulps · ulp(exact).
ReductionBound ulps_bound(const Claim& claim);

/// γ_n = n·u / (1 - n·u) (Higham, ASNA §3.1) while n·u < 1/2; from there (1 - u)^-n - 1, the
/// bound on |Π(1 + δ_i)^(±1) - 1| that holds for every n (never +inf).
double gamma_n(double n, double u);

/// The partial-sum bound of docs/verdict.md §4.1 over every summation tree of m terms: with `pos`
/// and `neg` the positive terms' and the |negative| terms' magnitudes in decreasing order and
/// `abs_sum` = Σ|t|, B(j) = max(sum of the j largest of pos, of neg) + γ_(j−1+extra)·abs_sum bounds
/// |the unrounded value| of any addition of j terms (extra = 1 where the leaves are rounded on
/// entry). Returns `init` + Σ_(j=2..m) B(j)² (added in that order) and B(m) (0 for m < 2).
/// calibrate_matmul's radius and the row-scale rule (tolerances/row_scale.cpp) both read it.
std::pair<double, double> partial_sum_bound(std::span<const double> pos, std::span<const double> neg, std::size_t m,
                                            double abs_sum, double u, int extra, double init = 0);

/// Error of rounding a real of magnitude `magnitude` into `f` under `r`: half an ulp at that
/// magnitude for round-to-nearest, one ulp otherwise (subnormal spacing below the normal range).
double output_rounding_error(const FormatSpec& f, Rounding r, double magnitude);

/// rtz, rup or rdn: a rounding that moves a value one way only (judge's one-sided bound of a
/// directed output rounding, docs/verdict.md §2).
inline bool is_directed(Rounding r) { return r == Rounding::rtz || r == Rounding::rup || r == Rounding::rdn; }

/// Whether a directed output rounding `r` bounds the error on one side where the GEMM's addend
/// enters at `at` (`has_addend` false: none): with none, or at the start of the chain, always;
/// after the output cast (AddendAt::output) only under rup/rdn without a flushing output — the
/// sum's cast and the addend's addition both round the output's way, RU(RU(ŝ) + d) >= ŝ + d —
/// not under rtz (the addition may change the sign the direction is taken from) nor with --ftz
/// (a flushed cast moves against the direction); at the end never (the accumulator's rounding
/// lies between).
bool directed_one_sided(Rounding r, AddendAt at, bool has_addend, bool ftz);

/// The derivation line of a directed output rounding's one-sided bound (`r` directed): `step`
/// names the rounding ("the output rounding", a row op's "the cast"), `before` the bound it
/// leaves against its direction; `ftz`: rup/rdn under a flushing output are symmetric where the
/// flush may apply.
std::string directed_output_derivation(Rounding r, const FormatSpec& out, std::string_view step,
                                       std::string_view before, bool ftz);

/// Spacing of `f` at magnitude `x` (2^(max(floor(log2 x), emin) - p + 1)).
double ulp_at(const FormatSpec& f, double x);

/// What an output is judged against under a saturating output cast (docs/verdict.md §2): the
/// exact value `x` clamped to ±(largest finite value of `f`); `x` itself without `saturate` or
/// where `x` is not finite. Clamping moves no two values apart, so a bound on the unclamped
/// error bounds the clamped one.
inline double saturated_target(const FormatSpec& f, bool saturate, double x) {
  if (!saturate || !std::isfinite(x)) return x;
  const double top = max_finite(f);
  return x > top ? top : (x < -top ? -top : x);
}

/// Admissible |output - exact| for one element.
struct ElementBound {
  double deterministic = 0;  ///< sound for every order: reduction + output rounding
  double probabilistic = 0;  ///< at the bound's confidence: reduction + output rounding
  double output_rounding = 0;
  /// The computed value before the output's rounding lies within these of the exact value
  /// (deterministic, probabilistic): the bounds less output_rounding, kept apart because the
  /// difference of the doubles loses a reduction error far below the output's ulp. 0 where the
  /// claim adds its addend after the chain or states --ulps, and where the bounds are infinite
  /// (judge's one-sided bound of a directed output rounding does not apply there).
  double before_output = 0, before_output_probabilistic = 0;
  /// A partial sum may reach the accumulator's largest finite value: ±inf, and inf - inf = NaN,
  /// are then legal results too (the bounds stay finite where the overflow is sticky, else +inf).
  bool may_overflow = false;
  /// Where the overflow is sticky: which infinities a partial sum can reach — +inf only if the
  /// positive terms, (Σ|terms| + exact)/2, can reach the largest finite value with the bound's
  /// error; -inf likewise for the negative ones; NaN (inf - inf) only if both can.
  /// Where the exact result is ±inf (an infinite term), in every rounding: that infinity (the
  /// term is one), and the other one where the finite terms of the other sign can reach the
  /// largest finite value with the bound's error (then inf - inf = NaN is legal).
  bool overflow_pos = false, overflow_neg = false;
};

/// The element's bound given its exact value and Σ|terms|. Includes the double-precision
/// representation error of `exact` (|exact|·2^-52) so that comparisons in double are sound.
/// Where `exact` is ±inf, `sum_abs` is Σ|t| of the finite terms and `finite_opposite` the
/// magnitude of the sum of the finite terms of the other sign (ExactElement::opposite): the
/// bounds are +inf (no finite result is legal), overflow_pos / overflow_neg as above.
/// `addend`: the element's addend where the claim adds it at the end or after the output cast
/// (claim.addend_at; 0 where there is none): the products' sum is exact - addend, Σ|a·b| is
/// sum_abs - |addend|, and the bound is E_P plus the epilogue's one or two roundings
/// (reduction_bound's last derivation line); `output_rounding` is the last rounding's.
ElementBound element_bound(const ReductionBound& b, const Claim& claim, double exact, double sum_abs,
                           double finite_opposite = 0, double addend = 0);

/// The overflow rule (docs/verdict.md §2, Overflow), for every check that derives its bounds
/// from a reduction claim: is the non-finite `value` a result some partial sum's overflow can
/// give, for an element whose exact result is `exact` and whose bound is `eb`? Under a sticky
/// overflow with a finite exact result: the infinity of a sign a partial sum can reach, NaN
/// (inf - inf) where both can. Where the exact result is ±inf: NaN where a partial sum of the
/// finite terms can overflow to the other infinity (in any rounding), or where the accumulator
/// has no inf (an infinite term is NaN there). Where the accumulator (`acc`) or the output `out`
/// has no inf, an overflow is NaN: NaN where either infinity is reachable, never ±inf.
bool overflow_allows(const ElementBound& eb, const FormatSpec& acc, const FormatSpec& out, double exact, double value);

/// How a softmax claims to compute y_i = exp(x_i - m) / Σ_j exp(x_j - m), m = the row's max:
/// every operation in `compute` with round-to-nearest, exp accurate to `exp_ulps` ulps of
/// `compute`, the sum of the row's exps in any order, one division, then the cast to the output.
struct SoftmaxClaim {
  const FormatSpec* compute = &fp32;
  double exp_ulps = 1;
};

/// Per-element bounds of one softmax row (inputs `x` as doubles, exact results `y`): the
/// softmax case of the derived row bounds (tolerances/row_bounds.h, row_element_bounds):
/// an interval enclosure of every value the claimed arithmetic can produce, valid for every
/// row length (no γ_(n-1) < 1 condition) and for masked (-inf) entries.
/// Sets the derivation when `derivation` is given and empty.
std::vector<ElementBound> softmax_element_bounds(const SoftmaxClaim& c, const FormatSpec& out, Rounding out_rounding,
                                                 std::span<const double> x, std::span<const double> y,
                                                 std::vector<std::string>* derivation = nullptr);

/// Smallest k such that P(Binomial(n, p) >= k) <= alpha: the number of elements outside the
/// probabilistic bound that chance can no longer explain at false-alarm probability alpha.
std::int64_t binomial_threshold(std::int64_t n, double p, double alpha);

/// P(Binomial(n, p) >= k). Where it is positive (0 < p, k <= n) but below the least normal
/// double, that least normal value (DBL_MIN): a false-alarm probability printed as 0 would
/// read as a proof.
double binomial_tail(std::int64_t n, double p, std::int64_t k);

}  // namespace numfid
