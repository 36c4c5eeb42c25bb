// Conformance suites of quantised GEMMs, instantiated like NUMFID_MATMUL_CONFORMANCE:
//
//   NUMFID_INT8_GEMM_CONFORMANCE(MyInt8, my_int8_gemm,
//       "--in int8 --acc int32 --zero-point-a 3 --zero-point-b 1 --out int8 --out-scale 0.005859375 "
//       "--out-zero-point 5 --saturate", .tile = 32);
//   NUMFID_SCALED_GEMM_CONFORMANCE(MyFp8, my_fp8_gemm,
//       "--in fp8_e4m3 --acc fp32 --out bf16 --scale-block 1x128,128x128 --promote-every 128");
//
// The integer suite generates int8/uint8 operands and judges the kernel's C with the one check
// pipeline (check_matmul; the claim is bit-exact). The scaled suite generates the claim's
// element operands and powers-of-two scale tensors in its --scale-block layout, hands both to
// the kernel and attaches them to the claim for the check (numfid::attach_operand_scales,
// tolerances/quant_check.h).
// Mutants of the output (docs/gtest.md): a wrong zero-point sign, a truncating requantisation,
// one element off (integer); one element off, the scale of the wrong K block, a transposed B
// scale tensor, an unpromoted bf16 accumulator (scaled). A mutant is required where it is
// caught by definition: it differs from the exact result (integer, a bit-exact claim) or some
// element lies beyond twice its deterministic bound (scaled).
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "suites/conformance.h"
#include "tolerances/quant_check.h"

namespace numfid::testing {

/// The integer suite's kernel: C (M×N, --out) = requant((A - za)·(B - zb)), A M×K and B K×N in
/// the claim's --in / --in-b integer formats.
using IntGemmKernel = MatmulKernel;
/// The scaled suite's kernel: C = Σ_k sa·sb·A[i,k]·B[k,j]; scale_a (fp32, ⌈M/R⌉×⌈K/k⌉) and
/// scale_b (fp32, ⌈K/k⌉×⌈N/R⌉) in the claim's --scale-block layout (docs/cli.md).
using ScaledGemmKernel = std::function<TensorData(const TensorData& a, const TensorData& b, const TensorData& scale_a,
                                                  const TensorData& scale_b)>;

/// The cases of both suites: every shape of matmul_cases on random data, a wide product
/// 3 × 4·tile × (2·tile + 2) (several scale blocks along K and N), and near_overflow (integer:
/// operands at their extremes, saturating; scaled: wide scales), all_equal and (scaled)
/// wide_exponent on 4 × (2·tile + 3) × 6.
std::vector<MatmulCase> quant_gemm_cases(const MatmulSuiteOptions& o, bool scaled);

/// The generated integer operands of a case (formats from the claim).
MatmulOperands int_gemm_operands(const MatmulCase& c, const ClaimSpec& claim);
/// The generated operands and scale tensors of a scaled case.
struct ScaledOperands {
  TensorData a, b, scale_a, scale_b;
};
ScaledOperands scaled_gemm_operands(const MatmulCase& c, const ClaimSpec& claim);
/// The claim of the scaled suite: `claim` (--scale-block, --promote-every, but no --scale-a/-b)
/// with the scale tensors as --scale-a scale-a.npy --scale-b scale-b.npy.
ClaimSpec scaled_suite_claim(std::string_view claim);

ConformanceReport evaluate_int_gemm_case(const IntGemmKernel& kernel, std::string_view claim, const MatmulCase& c);
void run_int_gemm_case(const IntGemmKernel& kernel, std::string_view claim, const MatmulCase& c);
ConformanceReport evaluate_scaled_gemm_case(const ScaledGemmKernel& kernel, std::string_view claim, const MatmulCase& c);
void run_scaled_gemm_case(const ScaledGemmKernel& kernel, std::string_view claim, const MatmulCase& c);

}  // namespace numfid::testing

/// An integer GEMM conformance suite: `adapter` numfid::TensorData(const numfid::TensorData& a,
/// const numfid::TensorData& b); the claim an integer one (--in int8|uint8 --acc int32 ...);
/// options: MatmulSuiteOptions' designated initialisers.
#define NUMFID_INT8_GEMM_CONFORMANCE(Suite, adapter, claim, ...)                                                   \
  class Suite : public ::testing::TestWithParam<::numfid::testing::MatmulCase> {};                               \
  TEST_P(Suite, Conforms) { ::numfid::testing::run_int_gemm_case(adapter, claim, GetParam()); }                     \
  INSTANTIATE_TEST_SUITE_P(Numfid, Suite,                                                                         \
                           ::testing::ValuesIn(::numfid::testing::quant_gemm_cases(                               \
                               ::numfid::testing::MatmulSuiteOptions{__VA_ARGS__}, false)),                      \
                           ::numfid::testing::matmul_case_name)

/// A scaled float GEMM conformance suite: `adapter` numfid::TensorData(const numfid::TensorData&
/// a, const numfid::TensorData& b, const numfid::TensorData& scale_a, const numfid::TensorData&
/// scale_b); the claim gives --scale-block (and --promote-every), the suite the scales.
#define NUMFID_SCALED_GEMM_CONFORMANCE(Suite, adapter, claim, ...)                                                 \
  class Suite : public ::testing::TestWithParam<::numfid::testing::MatmulCase> {};                               \
  TEST_P(Suite, Conforms) { ::numfid::testing::run_scaled_gemm_case(adapter, claim, GetParam()); }                  \
  INSTANTIATE_TEST_SUITE_P(Numfid, Suite,                                                                         \
                           ::testing::ValuesIn(::numfid::testing::quant_gemm_cases(                               \
                               ::numfid::testing::MatmulSuiteOptions{__VA_ARGS__}, true)),                       \
                           ::numfid::testing::matmul_case_name)
