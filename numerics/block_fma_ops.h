// Matmul and row-wise dot on a block-FMA unit (NVIDIA tensor cores): every output element one
// chained block-FMA dot (block_fma.h), its result cast to the output format with the element's
// own stochastic stream. The one implementation behind `emulate`, check's model prediction and
// the gtest suites.
#pragma once

#include <optional>
#include <vector>

#include "numerics/block_fma.h"
#include "numerics/emulate.h"

namespace numfid {

/// D = C + A·B on the unit: A is M×K of m.input and B is K×N of m.input_b_format() (the caller converts);
/// C (M×N, any format, converted into m.output by round-to-nearest) starts each element's sum.
/// Element (i, j) = convert(m.output -> out, block_fma_dot(row i of A, column j of B, C[i,j]))
/// with stream i·N + j of `out_rounding` (its seed as given).
std::vector<Bits> block_fma_matmul(const BlockFmaModel& m, const MatrixView& a, const MatrixView& b,
                                   const std::optional<MatrixView>& c, const FormatSpec& out, RoundOptions out_rounding);

/// D[r] = C[r] + Σ_k A[r,k]·B[r,k] on the unit (A, B: R×K of m.input, m.input_b_format(); C: R elements);
/// element r uses stream r.
std::vector<Bits> block_fma_dot_rows(const BlockFmaModel& m, const MatrixView& a, const MatrixView& b,
                                     const std::optional<MatrixView>& c, const FormatSpec& out, RoundOptions out_rounding);

}  // namespace numfid
