// Emulated ops: the exact output a platform model predicts for a matmul, a batched
// row-wise dot or a sum along an axis, under a reduction plan and accumulator model.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "formats/bulk.h"
#include "numerics/plan.h"

namespace numfid {

/// A row-major matrix of values of one format.
struct MatrixView {
  const FormatSpec* format = &fp32;
  std::span<const Bits> data;
  std::int64_t rows = 0, cols = 0;
};

/// How one reduction is computed and stored: plan, accumulator, output cast.
struct ReductionModel {
  ReductionPlan plan{};
  AccumulatorModel acc{};
  const FormatSpec* output = &fp32;  ///< the accumulator result is converted to this format
  RoundOptions output_rounding{};    ///< rounding of that conversion (stream = element index)
};

/// D = A·B (+ C): A is M×K, B is K×N, C (optional, M×N in any format, converted exactly or
/// rounded into the accumulator format first) starts each element's sum. Element (i, j) uses
/// stochastic stream i·N + j. Uses a vectorised path where it is bit-identical (fp32
/// accumulation, round-to-nearest, no FTZ/DAZ, sequential / blocked / splitk plans).
std::vector<Bits> emulate_matmul(const MatrixView& a, const MatrixView& b, const std::optional<MatrixView>& c,
                                 const ReductionModel& m);

/// D[r] = C[r] + Σ_k A[r,k]·B[r,k] for every row r (A, B: R×K; C: R×1 or absent).
std::vector<Bits> emulate_dot_rows(const MatrixView& a, const MatrixView& b, const std::optional<MatrixView>& c,
                                   const ReductionModel& m);

/// Sum along `axis` (0: down the columns, giving 1×cols; 1: along the rows, giving rows×1).
std::vector<Bits> emulate_sum(const MatrixView& x, int axis, const ReductionModel& m);

/// Sum along the middle axis of `x` (format `f`) viewed row-major as [outer, len, inner]:
/// D[o·inner + i] = Σ_k x[(o·len + k)·inner + i], any rank reduced to those three. Element e of D
/// uses stochastic stream e (so emulate_sum above is this with outer or inner = 1).
std::vector<Bits> emulate_sum_axis(const FormatSpec& f, std::span<const Bits> x, std::int64_t outer, std::int64_t len,
                                   std::int64_t inner, const ReductionModel& m);

/// True if emulate_matmul takes its vectorised path for this model and these formats.
bool matmul_fast_path(const ReductionModel& m, const FormatSpec& a, const FormatSpec& b);

namespace detail {
// Hooks for tests and benchmarks: the matmul kernel paths one by one.

/// True if this CPU can run the fp32 matmul kernel of `path`.
bool matmul_path_available(BulkPath path);

/// emulate_matmul with its vectorised path forced to `path` (the model must take the fast path).
std::vector<Bits> emulate_matmul_on(BulkPath path, const MatrixView& a, const MatrixView& b,
                                    const std::optional<MatrixView>& c, const ReductionModel& m);

/// The kernel alone on fp32 values: D (M×N) = [D +] A·B, sums sequential in k within tiles of
/// `tile` (tile sums folded in order), D's old contents the addend when `addend_in_d`.
void matmul_fp32(const float* a, const float* b, float* d, std::int64_t M, std::int64_t K, std::int64_t N,
                 std::int64_t tile, bool addend_in_d, BulkPath path);
}  // namespace detail

}  // namespace numfid
