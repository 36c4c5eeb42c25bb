// Claim: what a computation promises about its arithmetic (input casts, accumulator, output
// rounding), from which bounds are derived (bounds.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "formats/rounding.h"
#include "numerics/block_fma.h"

namespace numfid {

/// Where a GEMM's addend C enters (D = A·B + C). Measured on an H200 through PyTorch 2.11 /
/// cuBLAS 13 (tests/data/h200, tests/h200_gemm_test.cpp): the tensor-core instruction's own C
/// operand is `start`; cuBLASLt's bias epilogue (torch.nn.functional.linear, addmm with a bias
/// vector) and addmm with an fp32 output are `end`; addmm with a bf16/fp16 M×N C is `output`.
enum class AddendAt : std::uint8_t {
  start,   ///< C is the sum's first term: the accumulation (chain of blocks, plan) starts from it
  end,     ///< C added to the finished sum in the accumulator's format, then one output cast: fl_out(fl_acc(P + C))
  output,  ///< C added after the output cast, in the output's format: fl_out(fl_out(P) + C)
};
/// "start", "end", "output".
std::string_view addend_at_name(AddendAt a);

/// The accumulator a reduction claims to use.
struct AccumulatorClaim {
  const FormatSpec* format = &fp32;      ///< format of every partial sum
  Rounding rounding = Rounding::rne;     ///< rounding of every addition
  bool products_rounded = false;         ///< products rounded to `format` before adding (else exact/fused)
  /// Subnormal results of the accumulator (partial sums, rounded products, fl(+0 + t) starts)
  /// flushed to zero: each flush errs by less than the least normal value (an absolute allowance).
  bool ftz = false;
  /// Subnormal inputs read as zero (the operands of each product, the addend): the flushed terms'
  /// magnitudes, bounded from the operands themselves (check.cpp, daz_allowance).
  bool daz = false;
};

/// What a reduction-based computation (dot, sum, matmul) claims.
struct Claim {
  const FormatSpec* input = &fp32;        ///< format of the operands as stored (A's, for a GEMM)
  /// B's format as stored where it differs from A's (--in-b); nullptr: B is in `input` too.
  /// A product's significand has p_A + p_B bits: whether it fits the accumulator depends on both.
  const FormatSpec* input_b = nullptr;
  const FormatSpec* compute_input = nullptr;  ///< format the operands are cast to before use (nullptr: none)
  Rounding input_rounding = Rounding::rne;    ///< rounding of that cast
  AccumulatorClaim acc;
  const FormatSpec* output = &fp32;       ///< format of the stored result
  Rounding output_rounding = Rounding::rne;
  /// A stochastic output rounding's random bits (RoundOptions::sr_bits; 0: exact): its bias,
  /// below 2^-R of the spacing, is what the lean rule of docs/verdict.md §4.2 allows.
  int output_sr_bits = 0;
  bool output_ftz = false;                ///< results below the output's least normal value flushed to zero
  /// The output cast saturates (--saturate, or a profile's output overflow mode): a result
  /// beyond the range, ±inf included, becomes the largest finite value of its sign; NaN stays
  /// NaN. The judge measures such an element's error from the exact value clamped to the range.
  bool output_saturate = false;
  /// Summation order: absent = any order (the bound holds for every order), or a known
  /// number of roundings on each term's path (a plan's own bound).
  std::optional<std::int64_t> roundings_per_term;
  /// A tensor-core block-FMA model computes the reduction (chained blocks over K): its own
  /// bound replaces the any-order one (acc is then unused). nullptr: a plain accumulator.
  const BlockFmaModel* block_fma = nullptr;
  /// Where block_fma comes from when it is not a unit of the profile file but derived from two of
  /// them (a mixed E4M3 x E5M2 unit: "assumed: ..."); printed once in the bound's derivation.
  /// Points into the profile, which outlives the claim as block_fma does. Empty otherwise.
  std::string_view block_fma_provenance;
  /// Where the addend enters (a GEMM with an addend; `start` otherwise). With `end` or `output`
  /// the reduction's own bound is that of the k products alone (reduction_bound), and the
  /// element's bound adds the epilogue's roundings at the element's own values (element_bound).
  AddendAt addend_at = AddendAt::start;
  /// The format of `end`'s add where it is not the accumulator's (a scaled GEMM adds to its fp32
  /// promotion accumulator, to nearest); nullptr: epilogue_accumulator's rule (bounds.h).
  const FormatSpec* end_add_format = nullptr;
  /// The terms are products a·b (dot, matmul) rather than the input values themselves (sum).
  bool terms_are_products = true;
  /// Elementwise / normalisation ops: the claimed accuracy, |output - exact| <= ulps · ulp of
  /// the output format at the exact value (0.5 = correctly rounded). Absent for reductions.
  std::optional<double> ulps;
};

/// Unit roundoff of a format under a rounding mode: 2^-p for round-to-nearest, 2^(1-p) for
/// directed, truncating and stochastic rounding (Higham, ASNA 2nd ed. §2.1; Connolly, Higham
/// & Mary 2021 for stochastic rounding).
double unit_roundoff(const FormatSpec& f, Rounding r);

/// Human-readable summary of a claim ("in bf16, acc fp32 rne (products exact), out bf16 rne";
/// "in bf16, in-b fp32, ..." where B's format differs).
std::string describe(const Claim& c);

}  // namespace numfid
