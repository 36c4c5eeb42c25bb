// Block-FMA model of a matrix-multiply unit (NVIDIA tensor cores), as data: n exact products
// and an addend aligned to the largest exponent inside a fixed window (bits below it are
// truncated, no sticky bit), summed exactly, normalised once and rounded into the output
// format; blocks chained over K as the hardware chains k-steps and instructions.
//
// Sources: Fasi, Higham, Mikaitis & Pranesh, "Numerical behavior of NVIDIA tensor cores",
// PeerJ CS 7:e330 (2021); Khattak & Mikaitis, "Accurate models of NVIDIA tensor cores",
// arXiv 2512.07004 (repository north-numerical-computing/MATLAB-tensor-core, models/*.m);
// Xie et al., "MMA-Sim", arXiv 2511.10909 (microsoft/MMA-Sim). The parameters of each GPU are
// in numerics/tensor_core_presets.h, their provenance in docs/tensor-cores.md.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "formats/rounding.h"

namespace numfid {

/// Where the addend c (the accumulator input of an instruction) enters.
enum class AddendEntry : std::uint8_t {
  /// c is one more term of the first block of each instruction, aligned with its products
  /// (every native NVIDIA tensor-core path: Fasi et al. 2021, Khattak & Mikaitis 2025).
  in_block,
  /// The products of an instruction are chained from a +0 accumulator; c is added to their
  /// sum afterwards by a separate, correctly rounded addition (`addend_rounding`): the fp8
  /// `mma.sync` of H100/B200, which runs as fp16 HMMA steps followed by an add (measured).
  after_blocks,
};

/// How an aligned term loses the bits below the window.
enum class AlignmentRounding : std::uint8_t {
  truncate,  ///< magnitude truncated (toward zero), no sticky bit: NVIDIA (Fasi et al. 2021)
  rne,       ///< rounded to nearest, ties to even, at the window's last bit
};

/// Where the result of a block is rounded.
enum class Normalisation : std::uint8_t {
  /// One normalisation after the sum: the rounding position follows the sum's leading bit
  /// (NVIDIA: Fasi et al. 2021, one normalisation per block).
  normalised,
  /// No left shift after cancellation: the rounding position is never finer than the
  /// block's alignment quantum 2^(M - accumulator_fraction_bits).
  at_alignment,
};

/// The bit pattern of a NaN result.
enum class NanResult : std::uint8_t {
  canonical,  ///< numfid's canonical_nan() of the output format
  all_ones,   ///< +NaN with every exponent and trailing-significand bit set: 0x7fffffff, 0x7fff (CUDA)
};

/// Where each group of parameters comes from: `published: ...`, `measured: ...`,
/// `assumed: why` (DESIGN.md, "Profile"). Free text, one line each.
struct BlockFmaProvenance {
  std::string_view structure;  ///< block size, instruction grouping, where the addend enters
  std::string_view window;     ///< accumulator fraction bits, extra alignment bits, truncation
  std::string_view rounding;   ///< final rounding mode and precision
  std::string_view specials;   ///< subnormals, NaN/inf, overflow, alignment-exponent floor
};

/// One block-FMA unit as data. A block computes
///   d = round( Σ_j trunc_W(p_j) + trunc_W(c) ),  p_j = a_j·b_j exact,
/// where every term is cut to `accumulator_fraction_bits + extra_alignment_bits` fraction bits
/// below M = max(exponents of the non-zero terms, min_alignment_exponent), the exponent of a
/// product being e(a) + e(b) with e(x) = max(floor(log2|x|), emin of x's datapath format).
/// A and B may be stored in different formats (`input_b`: an fp8 E4M3 x E5M2 instruction); each
/// product is exact all the same. The exact sum is normalised, cut to min(accumulator_fraction_bits, mantissa bits of the
/// output) fraction bits by `final_rounding`, and encoded in `output`.
struct BlockFmaModel {
  // A new field must also be compared in unit_difference (block_fma.cpp).
  std::string_view name;             ///< e.g. "H100 fp16->fp32"
  const FormatSpec* input = &fp16;   ///< format of a (and of b where input_b is nullptr)
  /// Format of b where it differs from a's (PTX `mma`/`wgmma` with .e4m3 A and .e5m2 B, or the
  /// reverse); nullptr: b is in `input` too.
  const FormatSpec* input_b = nullptr;
  const FormatSpec* output = &fp32;  ///< format of c and d (fp32 or fp16)
  /// Format the multipliers see (inputs are converted to it exactly); nullptr: each operand's
  /// own format (`input` for a, input_b_format() for b). Matters for the product exponents of
  /// values that are subnormal in the stored format only.
  const FormatSpec* datapath = nullptr;
  int block_size = 4;  ///< n: products summed in one block
  /// Products per instruction: the instruction's blocks are chained (each block's result is
  /// the next one's addend). A multiple of block_size.
  int instruction_k = 4;
  /// 0: block j of an instruction takes products [j·n, (j+1)·n); g > 0: runs of g
  /// consecutive products are dealt round-robin to the instruction's blocks.
  int interleave = 0;
  AddendEntry addend = AddendEntry::in_block;
  Rounding addend_rounding = Rounding::rne;  ///< the separate addition of AddendEntry::after_blocks
  int accumulator_fraction_bits = 23;        ///< 23: fp32 accumulator; 13: Ada/Hopper fp8 (MMA-Sim "e8m13")
  int extra_alignment_bits = 0;              ///< window bits beyond the accumulator (V100 0, A100 1, H100 2)
  AlignmentRounding alignment = AlignmentRounding::truncate;
  /// The alignment exponent M is at least this (Khattak & Mikaitis' `min_exp_limit`):
  /// products far below the output's range are cut relative to 2^min_alignment_exponent.
  int min_alignment_exponent = -1024;
  Normalisation normalisation = Normalisation::normalised;
  Rounding final_rounding = Rounding::rtz;  ///< rtz, rne, rup, rdn or rna
  bool input_subnormals = true;             ///< false: subnormal a, b read as zero (DAZ)
  bool output_subnormals = true;            ///< false: subnormal results and addends flushed to zero
  bool overflow_to_infinity = true;         ///< a finite result beyond the range gives ±inf in every rounding mode
  NanResult nan = NanResult::all_ones;
  /// A non-zero sum whose rounded (or flushed) result is zero gives +0; false: it keeps the
  /// sum's sign, as IEEE rounding does. (An exact zero sum is +0 either way.) Measured on
  /// Hopper's fp16-accumulating mma.sync: +0 (docs/tensor-cores.md, H200 records).
  bool zero_results_positive = false;
  BlockFmaProvenance provenance{};

  /// Window width: fraction bits kept below the alignment exponent.
  constexpr int window_bits() const { return accumulator_fraction_bits + extra_alignment_bits; }
  /// Fraction bits of a block result (the accumulator's, or fewer where the output is narrower).
  constexpr int result_fraction_bits() const {
    const int out = output->precision - 1;
    return accumulator_fraction_bits < out ? accumulator_fraction_bits : out;
  }
  /// B's stored format.
  constexpr const FormatSpec& input_b_format() const { return input_b ? *input_b : *input; }
  /// Whether A and B are stored in different formats.
  constexpr bool mixed() const { return input_b != nullptr && !(*input_b == *input); }
  /// The format the multipliers see for a.
  constexpr const FormatSpec& datapath_format() const { return datapath ? *datapath : *input; }
  /// The format the multipliers see for b.
  constexpr const FormatSpec& datapath_b_format() const { return datapath ? *datapath : input_b_format(); }
};

/// Checks that a model can be evaluated: float formats, a datapath that holds every input
/// (a's and b's) exactly, 1 <= block_size <= 256, instruction_k a multiple of block_size (<= 4096),
/// interleave 0 or a divisor of block_size, window_bits() in [1, 100], result_fraction_bits()
/// >= 1, final and addend rounding not stochastic. Returns an empty string when valid, else what is wrong.
std::string validate(const BlockFmaModel& m);

/// One block: d = c + Σ_j a_j·b_j with c aligned together with the products (at most
/// block_size of them). a: patterns of m.input, b: of m.input_b_format(); c and the result: patterns of m.output.
/// Status: invalid (NaN from non-NaN operands), overflow, inexact (bits lost in alignment or
/// in the final rounding), underflow (tiny and inexact). Precondition: validate(m) is empty.
Result block_fma(const BlockFmaModel& m, std::span<const Bits> a, std::span<const Bits> b, Bits c);

/// d = c + Σ_{k<K} a_k·b_k as the unit computes it: K split into instructions of
/// instruction_k products (the last one padded with zeros), each instruction's products
/// dealt into blocks (interleave), blocks chained, and the addend entering per m.addend;
/// each instruction's result is the next one's addend. a.size() == b.size() == K.
Result block_fma_dot(const BlockFmaModel& m, std::span<const Bits> a, std::span<const Bits> b, Bits c);

/// Name of an AddendEntry ("in_block", "after_blocks").
std::string_view addend_entry_name(AddendEntry e);

/// The first parameter in which two units differ, other than their names, their input formats
/// (input, input_b) and their provenance text, as "block_size 16 vs 32"; empty when they are the
/// same unit read with other inputs. Every other field of BlockFmaModel is compared (a new
/// field must be added here).
std::string unit_difference(const BlockFmaModel& x, const BlockFmaModel& y);

/// "fp8_e4m3->fp32", or "fp8_e4m3 x fp8_e5m2->fp32" where B's format differs.
std::string format_pair_name(const BlockFmaModel& m);

/// One-line summary of a model's parameters (for messages and reports).
std::string describe(const BlockFmaModel& m);

}  // namespace numfid
