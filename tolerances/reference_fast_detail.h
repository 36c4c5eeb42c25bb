// The exact results of a matmul or row-wise dot (matmul_reference, dot_reference), computed
// fast where that is provably exact (internal; not installed). See reference_fast.cpp and
// docs/performance.md, "Exact oracle at model scale".
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "numerics/int_gemm.h"
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

/// Testing hook: true makes the scaled GEMM check's int64 fixed-point walk run its baseline
/// build even where the CPU has AVX2 (tolerances/scaled_check.cpp); false restores the default.
void set_scaled_walk_portable(bool portable);

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

/// int_gemm_exact (numerics/int_gemm.h), equal element for element, on every core: an fp64
/// GEMM of the values minus their zero points where every partial sum is provably an integer
/// below 2^53 (int_gemm_fits_fp64; the addend is added in int64 after), the int64 loop
/// otherwise (and for row-wise dots).
std::vector<std::int64_t> int_gemm_sums(const IntOperand& a, std::span<const Bits> A, const IntOperand& b,
                                        std::span<const Bits> B, const IntGemmShape& s,
                                        std::span<const std::int64_t> addend = {});

/// Whether every partial sum of K terms (a - za)(b - zb) is an integer of magnitude below 2^53
/// (K · max|term| < 2^53): a double then holds each exactly, so a GEMM computing them in any
/// order, with or without FMA, under any rounding mode, computes the exact sum.
bool int_gemm_fits_fp64(const IntOperand& a, const IntOperand& b, std::int64_t k);

/// The M×N exact results of A (M×K) · B (K×N) (+ addend, M×N) into `out` (resized). Shapes
/// must have been checked (matmul_dims). Identical, field for field, whatever the path, the
/// thread count or the GEMM's summation order.
ReferenceStats matmul_elements(const TensorData& a, const TensorData& b, const TensorData* addend, MatmulDims dims,
                               LargeArray<ExactElement>& out);

/// The R exact results of the row-wise dot Σ_k A[r,k]·B[r,k] (+ addend[r]) into `out`.
ReferenceStats dot_elements(const TensorData& a, const TensorData& b, const TensorData* addend, MatmulDims dims,
                            LargeArray<ExactElement>& out);

}  // namespace numfid::detail
