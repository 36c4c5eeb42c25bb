// The Trainium / Inferentia2 Tensor Engine + PSUM as a model: K split into matmul
// instructions of (at most) 128 partitions, products summed inside the PE array in fp32,
// instruction results accumulated in PSUM in fp32 in program order, then cast out.
//
// Documented (Neuron docs, "Trainium/Inferentia2 architecture" and NKI programming guide,
// https://awsdocs-neuron.readthedocs-hosted.com/): the Tensor Engine is a 128×128 systolic
// array contracting over the partition dimension (K <= 128 per instruction); PSUM holds fp32
// partial sums and "accumulation is always done in FP32"; fp8 "double-row" mode on NeuronCore-v3+
// contracts 256 rows per instruction. NOT documented: the order and rounding of the additions
// inside the PE column, and the pairing used by double-row mode: these are parameters here,
// with defaults stated (and marked `assumed`) in the profiles.
#pragma once

#include "numerics/emulate.h"

namespace numfid {

/// Parameters of the Tensor Engine + PSUM.
struct TensorEngineModel {
  std::int64_t tile_k = 128;             ///< partitions contracted per matmul instruction
  bool double_row = false;               ///< fp8 double-row: 2·tile_k per instruction, products k and k + tile_k paired
  PlanKind inner_order = PlanKind::sequential;  ///< order inside the PE column (sequential or pairwise)
  AccumulatorModel array_acc{};          ///< in-array accumulation (fp32)
  AccumulatorModel psum{};               ///< PSUM accumulation across instructions, in program order (fp32)
  const FormatSpec* autocast = nullptr;  ///< compiler --auto-cast of the operands (nullptr: none)
  Rounding autocast_rounding = Rounding::rne;
  const FormatSpec* output = &fp32;      ///< format PSUM is copied out to
  RoundOptions output_rounding{};        ///< RNE, or stochastic (NEURON_RT_STOCHASTIC_ROUNDING_EN=1)

  /// Roundings on a term's path for K terms (+ addend): the model's own bound count.
  std::int64_t roundings(std::int64_t k, bool has_addend) const;
};

/// One element's PSUM result (psum format, before the cast out): the exact `products` of its
/// K operand pairs, in k order, through the PE array (instructions of tile_k rows, double-row
/// pairs) and PSUM, starting from `start` (C already in the psum format) if given. `stream`
/// seeds the element's stochastic roundings (as tensor_engine_matmul's element `stream`);
/// `scratch` is reused storage. What tensor_engine_matmul computes per element, and what the
/// probable-defect calibration emulates for a tensor-engine profile (tolerances/calibrate.h).
Bits tensor_engine_sum(const TensorEngineModel& te, std::span<const Term> products, std::optional<Bits> start,
                       std::uint64_t stream, std::vector<Term>& scratch);

/// D = A·B (+ C) as the Tensor Engine computes it. C starts the PSUM accumulation (an
/// accumulating matmul into a PSUM tile that already holds C).
std::vector<Bits> tensor_engine_matmul(const TensorEngineModel& te, const MatrixView& a, const MatrixView& b,
                                       const std::optional<MatrixView>& c);

/// D[r] = C[r] + Σ_k A[r,k]·B[r,k] for every row r (A, B: R×K; C: R elements), each row a
/// 1×K · K×1 product on the Tensor Engine. Element r draws its stochastic roundings from
/// stream r, as element r of a matmul does.
std::vector<Bits> tensor_engine_dot_rows(const TensorEngineModel& te, const MatrixView& a, const MatrixView& b,
                                         const std::optional<MatrixView>& c);

}  // namespace numfid
