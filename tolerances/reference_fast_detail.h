// The exact results of a matmul or row-wise dot (matmul_reference, dot_reference), computed
// fast where that is provably exact (internal; not installed). See reference_fast.cpp and
// docs/performance.md, "Exact oracle at model scale".
#pragma once

#include <cstdint>
#include <vector>

#include "oracles/accumulator.h"
#include "tolerances/check.h"

namespace numfid::detail {

/// How matmul_reference computes its elements.
enum class ReferencePath : std::uint8_t {
  automatic,  ///< the certified fp64 GEMM where it applies, the long accumulator elsewhere
  exact,      ///< the long accumulator for every element (the fallback, forced)
};

/// Testing hook: the path every later matmul_reference takes (process-wide).
void set_reference_path(ReferencePath p);
ReferencePath reference_path();

/// Whether numfid was built with the fp64 GEMM (OpenBLAS cblas_dgemm).
bool fast_reference_built();

/// What one computation of the exact results did.
struct ReferenceStats {
  bool gemm = false;            ///< the fp64 GEMM ran
  std::int64_t certified = 0;   ///< elements taken from the GEMM (proved exact)
  std::int64_t accumulated = 0; ///< elements computed by the long accumulator
};

/// What the latest matmul_elements call in this process did (for benchmarks and tests).
ReferenceStats last_reference_stats();

/// The exact element the long accumulator holds (nan, infinity, value, exact, Σ|terms|).
ExactElement exact_element(const LongAccumulator& acc);

/// hi + lo + x, exactly, as a new (hi, lo): hi the nearest double to the sum (ties to even),
/// lo the exact rest. False, nothing changed, where the sum is not the sum of two doubles so
/// formed. For finite values whose sums do not overflow, under the default floating-point
/// environment (round to nearest; the caller's FpEnvGuard).
bool add_exact(double& hi, double& lo, double x);

/// The M×N exact results of A (M×K) · B (K×N) (+ addend, M×N) into `out` (resized). Shapes
/// must have been checked (matmul_dims). Identical, field for field, whatever the path, the
/// thread count or the GEMM's summation order.
ReferenceStats matmul_elements(const TensorData& a, const TensorData& b, const TensorData* addend, MatmulDims dims,
                               LargeArray<ExactElement>& out);

/// The R exact results of the row-wise dot Σ_k A[r,k]·B[r,k] (+ addend[r]) into `out`.
ReferenceStats dot_elements(const TensorData& a, const TensorData& b, const TensorData* addend, MatmulDims dims,
                            LargeArray<ExactElement>& out);

}  // namespace numfid::detail
