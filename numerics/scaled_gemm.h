// Scaled float GEMM (FP8/FP6/FP4/BF16 operands with block scales: per tensor, per row, the
// DeepSeek-V3 1×128 / 128×128 blocks, MX 1×32 E8M0): the scale layout, and the model that
// emulates it bit for bit — partial sums of `chunk` products in the inner accumulator (a
// plain accumulator or a tensor-core block-FMA model), each promoted into an fp32 accumulator
// as o = fma(fp32(sa·sb), partial, o) (DeepGEMM's `final_accum += scale * accum`), then the
// output cast.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "formats/rounding.h"
#include "formats/mx.h"
#include "numerics/block_fma.h"

namespace numfid {

/// A scale block: its extent along the operand's non-K dimension (rows of A, columns of B) and
/// along K.
struct ScaleBlock {
  std::int64_t rows = 1, k = 1;
};

/// The scales of one operand, in its orientation: A's are ⌈M/rows⌉ × ⌈K/k⌉, B's are
/// ⌈K/k⌉ × ⌈N/rows⌉, row-major; values are positive finite (E8M0 scales as the powers of two
/// they stand for).
struct OperandScales {
  std::span<const double> values;
  ScaleBlock block;
};

/// The number of scales an operand with `outer` rows (A: M, B: N) and `k` columns needs.
std::int64_t scale_count(const ScaleBlock& b, std::int64_t outer, std::int64_t k);

/// The scale of A[i, k] (outer = i) or B[k, j] (outer = j) for an operand of K columns.
double scale_at(const OperandScales& s, bool is_b, std::int64_t outer, std::int64_t k, std::int64_t K,
                std::int64_t outer_size);

/// How the scaled GEMM is computed.
struct ScaledGemmModel {
  std::int64_t chunk = 1;                    ///< products per partial sum (promotion interval)
  const FormatSpec* acc = &fp32;             ///< inner accumulator (products exact, fused: p = rnd(p + a·b))
  Rounding acc_rounding = Rounding::rne;
  const BlockFmaModel* block_fma = nullptr;  ///< instead of acc: each partial is block_fma_dot (fp32 result)
  const FormatSpec* out = &fp32;
  RoundOptions out_rounding;                 ///< stream set per element (i·N + j)
};

/// D = A·B with scales, as the model computes it: element (i, j) runs over the K chunks in
/// order; chunk c's partial p (sequential, from zero, in the inner accumulator, or one
/// block-FMA dot) is promoted as o = fma_fp32(fp32(sa·sb), fp32(p), o); o starts at the
/// addend (fp32 values) or +0; then o is cast to `out`. A, B: patterns of fa/fb, C order.
/// Precondition: every chunk lies inside one scale block of A and of B.
std::vector<Bits> scaled_gemm_emulate(const FormatSpec& fa, std::span<const Bits> a, const OperandScales& sa,
                                      const FormatSpec& fb, std::span<const Bits> b, const OperandScales& sb,
                                      std::int64_t m, std::int64_t k, std::int64_t n, const ScaledGemmModel& model,
                                      std::span<const Bits> addend_fp32 = {});

/// The row-wise scaled dot D[r] = Σ_k sa·sb·A[r,k]·B[r,k] (A, B: R×K, C order), as the model
/// computes each element of scaled_gemm_emulate (the same chunks, promotion and output cast;
/// stream = r). Both scale tensors are laid out like A's: ⌈R/rows⌉ × ⌈K/k⌉, row-major (B's
/// block extent `rows` runs along B's rows, as A's does).
std::vector<Bits> scaled_dot_emulate(const FormatSpec& fa, std::span<const Bits> a, const OperandScales& sa,
                                     const FormatSpec& fb, std::span<const Bits> b, const OperandScales& sb,
                                     std::int64_t r, std::int64_t k, const ScaledGemmModel& model,
                                     std::span<const Bits> addend_fp32 = {});

/// True where scaled_gemm_emulate runs the model's partials on the vectorised fp32 kernel
/// (partials in fp32 with round to nearest even, no block-FMA model: about 0.2 ns per product
/// on one core); otherwise every product is a soft-float fma (about 50 ns).
bool scaled_emulation_vectorised(const ScaledGemmModel& model);

namespace detail {
/// Testing hook: true makes scaled_gemm_emulate and scaled_dot_emulate compute every element
/// with the soft-float fma (their fp32 partials otherwise use the hardware's fmaf, bit for bit
/// the same); false restores the default.
void set_scaled_emulation_soft_float(bool soft);
}  // namespace detail

/// An operand quantised into MX blocks along K, in the layout the scaled GEMM reads.
struct MxOperand {
  std::vector<Bits> elements;              ///< rows × cols patterns of the element format, C order
  std::vector<Bits> scales;                ///< E8M0 patterns, scale_rows × scale_cols, C order
  std::int64_t scale_rows = 0, scale_cols = 0;
  Status status = status_ok;               ///< union of the flags
};

/// MX-quantises a rows × cols tensor (OCP MX v1.0 §6.3, quantize_mx) in blocks of `block`
/// along K: `k_is_rows` false (A, M×K): blocks along each row, scales rows × ⌈cols/block⌉;
/// true (B, K×N): blocks down each column, scales ⌈rows/block⌉ × cols — the layouts of
/// `--scale-block 1x<block>`. Value t of line l (a row of A, a column of B) rounds with stream
/// o.stream + l·(its length) + t (stochastic rounding).
MxOperand quantize_mx_operand(const MxFormat& f, std::span<const Bits> x, const FormatSpec& from, std::int64_t rows,
                              std::int64_t cols, bool k_is_rows, std::size_t block, const RoundOptions& o = {});

}  // namespace numfid
