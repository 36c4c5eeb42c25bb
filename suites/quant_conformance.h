// Conformance suites of quantised GEMMs, instantiated like NUMFID_MATMUL_CONFORMANCE:
//
//   NUMFID_INT8_GEMM_CONFORMANCE(MyInt8, my_int8_gemm,
//       "--in int8 --acc int32 --zero-point-a 3 --zero-point-b 1 --out int8 --out-scale 0.005859375 "
//       "--out-zero-point 5 --saturate", .tile = 32);
//   NUMFID_SCALED_GEMM_CONFORMANCE(MyFp8, my_fp8_gemm,
//       "--in fp8_e4m3 --acc fp32 --out bf16 --scale-block 1x128,128x128 --promote-every 128");
//
//   NUMFID_SCALED_GEMM_CONFORMANCE(MyMx, my_mx_gemm,
//       "--in fp8_e4m3 --acc fp32 --out bf16 --scale-block 1x32 --promote-every 32", .tile = 32,
//       .scales = numfid::testing::ScaleKind::mx);
//   NUMFID_INT8_GEMM_PER_CHANNEL_CONFORMANCE(MyInt8Pc, my_int8_gemm_pc, "--in int8 --acc int32 --out int8 --saturate");
//
// The integer suites generate int8/uint8 operands (and, per channel, one output scale per
// column) and judge the kernel's C with the one check pipeline (check_matmul; the claim is
// bit-exact). The scaled suite generates the claim's element operands and scale tensors in its
// --scale-block layout (ScaleKind: powers of two, OCP MX E8M0 from numfid's MX quantisation,
// NVFP4 E4M3 with a global scale, DeepSeek fp32 amax/448), hands both to the kernel and
// attaches them to the claim for the check (numfid::attach_operand_scales, tolerances/quant_check.h).
// Mutants of the output (docs/gtest.md): one element off, a wrong zero-point sign, a truncating
// requantisation, int16 and fp32 accumulators, a per-tensor scale for per-channel, the exact
// rounding or a truncating shift for fixed point (integer); one element off, the scale of the
// wrong K block, a transposed B scale tensor, an unpromoted bf16 accumulator, A's and B's scales
// swapped, E8M0 off by one (scaled). A mutant is required where it is caught by definition: it
// differs from the exact result (integer, a bit-exact claim) or some element lies beyond twice
// its deterministic bound (scaled).
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "suites/conformance.h"
#include "tolerances/quant_check.h"

namespace numfid::testing {

/// Where the scaled suite's operands and scale tensors come from (QuantSuiteOptions::scales).
enum class ScaleKind : std::uint8_t {
  /// fp32 powers of two 2^±4 (wide_exponent 2^±24) next to elements uniform in their format.
  pow2,
  /// OCP MX v1.0 (MXFP8/MXFP6/MXFP4): fp32 data MX-quantised by numfid (quantize_mx_operand, §6.3)
  /// in the claim's 1×k blocks; the scale tensors are E8M0 patterns (format e8m0). wide_exponent
  /// moves the blocks' scales to E8M0's extremes 2^127 and 2^-127 (A's and B's in opposite
  /// directions, so the products stay in range).
  mx,
  /// NVFP4: fp4_e2m1 elements in 1×16 blocks, each block's scale an fp8 e4m3 value (amax / 6 /
  /// global, rounded to e4m3), given as fp32; A's with a per-tensor fp32 global scale
  /// (amax / (448·6), not a power of two) folded in, B's without.
  nvfp4,
  /// DeepSeek-V3 style: fp32 scales amax / max_finite(element) per block (not powers of two),
  /// elements round(x / scale); any --scale-block (1x128,128x128).
  fp32,
};
std::string_view scale_kind_name(ScaleKind k);

/// The options of the quantised suites: MatmulSuiteOptions' three, and the scaled suite's
/// scale kind (designated initialisers, in this order).
struct QuantSuiteOptions {
  std::int64_t tile = 128;
  std::uint64_t seed = kDefaultSeed;
  std::int64_t large_k = 4096;
  ScaleKind scales = ScaleKind::pow2;  ///< scaled suite: how operands and scales are generated
};

/// The integer suite's kernel: C (M×N, --out) = requant((A - za)·(B - zb)), A M×K and B K×N in
/// the claim's --in / --in-b integer formats.
using IntGemmKernel = MatmulKernel;
/// The per-channel integer suite's kernel: as IntGemmKernel, with the output scales (fp32, one
/// per output column, shape [N]) the suite generated.
using IntGemmPerChannelKernel =
    std::function<TensorData(const TensorData& a, const TensorData& b, const TensorData& out_scale)>;
/// The scaled suite's kernel: C = Σ_k sa·sb·A[i,k]·B[k,j]; scale_a (⌈M/R⌉×⌈K/k⌉) and scale_b
/// (⌈K/k⌉×⌈N/R⌉) in the claim's --scale-block layout (docs/cli.md): fp32 values, or E8M0
/// patterns (format e8m0) for ScaleKind::mx.
using ScaledGemmKernel = std::function<TensorData(const TensorData& a, const TensorData& b, const TensorData& scale_a,
                                                  const TensorData& scale_b)>;

/// The cases of both suites: every shape of matmul_cases on random data, a wide product
/// 3 × 4·tile × (2·tile + 2) (several scale blocks along K and N), and near_overflow (integer:
/// operands at their extremes, saturating; scaled: wide scales), all_equal and (scaled)
/// wide_exponent on 4 × (2·tile + 3) × 6; integer: accumulator_range on 2 × K × 3 (K about
/// 16000: partial sums through 2^27, see int_gemm_operands).
std::vector<MatmulCase> quant_gemm_cases(const QuantSuiteOptions& o, bool scaled);

/// The generated integer operands of a case (formats from the claim). accumulator_range: every
/// row of A and column of B alike, the first K1 products the largest odd product of the
/// operands' ranges (zero points subtracted), the rest the largest product of the other sign
/// divisible by 128: the partial sums climb to about 2^27 and come back to about 2^17. int32
/// holds every partial sum exactly; an fp32 accumulator loses at least one unit per product
/// above 2^25 (thousands in all), an int16 one wraps.
MatmulOperands int_gemm_operands(const MatmulCase& c, const ClaimSpec& claim);
/// The per-channel suite's output scales of a case: fp32, one per column of C, each fitted to
/// its column's exact accumulators (max |acc| × scale about 64..192, so some saturate).
TensorData per_channel_out_scales(const MatmulCase& c, const ClaimSpec& claim, const MatmulOperands& ops);
/// The claim of the per-channel suite: `claim` (no --out-scale) with --out-scale out-scale.npy.
ClaimSpec per_channel_suite_claim(std::string_view claim);

/// The generated operands and scale tensors of a scaled case.
struct ScaledOperands {
  TensorData a, b, scale_a, scale_b;
};
ScaledOperands scaled_gemm_operands(const MatmulCase& c, const ClaimSpec& claim, ScaleKind kind = ScaleKind::pow2);
/// The claim of the scaled suite: `claim` (--scale-block, --promote-every, but no --scale-a/-b)
/// with the scale tensors as --scale-a scale-a.npy --scale-b scale-b.npy.
ClaimSpec scaled_suite_claim(std::string_view claim);

ConformanceReport evaluate_int_gemm_case(const IntGemmKernel& kernel, std::string_view claim, const MatmulCase& c);
void run_int_gemm_case(const IntGemmKernel& kernel, std::string_view claim, const MatmulCase& c);
ConformanceReport evaluate_int_gemm_per_channel_case(const IntGemmPerChannelKernel& kernel, std::string_view claim,
                                                     const MatmulCase& c);
void run_int_gemm_per_channel_case(const IntGemmPerChannelKernel& kernel, std::string_view claim, const MatmulCase& c);
ConformanceReport evaluate_scaled_gemm_case(const ScaledGemmKernel& kernel, std::string_view claim, const MatmulCase& c,
                                            ScaleKind kind = ScaleKind::pow2);
void run_scaled_gemm_case(const ScaledGemmKernel& kernel, std::string_view claim, const MatmulCase& c,
                          ScaleKind kind = ScaleKind::pow2);

}  // namespace numfid::testing

/// An integer GEMM conformance suite: `adapter` numfid::TensorData(const numfid::TensorData& a,
/// const numfid::TensorData& b); the claim an integer one (--in int8|uint8 --acc int32 ...);
/// options: QuantSuiteOptions' designated initialisers.
#define NUMFID_INT8_GEMM_CONFORMANCE(Suite, adapter, claim, ...)                                                   \
  class Suite : public ::testing::TestWithParam<::numfid::testing::MatmulCase> {};                               \
  TEST_P(Suite, Conforms) { ::numfid::testing::run_int_gemm_case(adapter, claim, GetParam()); }                     \
  INSTANTIATE_TEST_SUITE_P(Numfid, Suite,                                                                         \
                           ::testing::ValuesIn(::numfid::testing::quant_gemm_cases(                               \
                               ::numfid::testing::QuantSuiteOptions{__VA_ARGS__}, false)),                       \
                           ::numfid::testing::matmul_case_name)

/// An integer GEMM conformance suite with per-channel requantisation: `adapter`
/// numfid::TensorData(const numfid::TensorData& a, const numfid::TensorData& b, const
/// numfid::TensorData& out_scale); the claim gives no --out-scale: the suite generates one fp32
/// scale per output column for each case and attaches them to the claim.
#define NUMFID_INT8_GEMM_PER_CHANNEL_CONFORMANCE(Suite, adapter, claim, ...)                                       \
  class Suite : public ::testing::TestWithParam<::numfid::testing::MatmulCase> {};                               \
  TEST_P(Suite, Conforms) { ::numfid::testing::run_int_gemm_per_channel_case(adapter, claim, GetParam()); }         \
  INSTANTIATE_TEST_SUITE_P(Numfid, Suite,                                                                         \
                           ::testing::ValuesIn(::numfid::testing::quant_gemm_cases(                               \
                               ::numfid::testing::QuantSuiteOptions{__VA_ARGS__}, false)),                       \
                           ::numfid::testing::matmul_case_name)

/// A scaled float GEMM conformance suite: `adapter` numfid::TensorData(const numfid::TensorData&
/// a, const numfid::TensorData& b, const numfid::TensorData& scale_a, const numfid::TensorData&
/// scale_b); the claim gives --scale-block (and --promote-every), the suite the scales, of the
/// kind `.scales` (ScaleKind: pow2, mx, nvfp4, fp32).
#define NUMFID_SCALED_GEMM_CONFORMANCE(Suite, adapter, claim, ...)                                                 \
  class Suite : public ::testing::TestWithParam<::numfid::testing::MatmulCase> {};                               \
  TEST_P(Suite, Conforms) {                                                                                       \
    ::numfid::testing::run_scaled_gemm_case(adapter, claim, GetParam(),                                           \
                                            ::numfid::testing::QuantSuiteOptions{__VA_ARGS__}.scales);            \
  }                                                                                                               \
  INSTANTIATE_TEST_SUITE_P(Numfid, Suite,                                                                         \
                           ::testing::ValuesIn(::numfid::testing::quant_gemm_cases(                               \
                               ::numfid::testing::QuantSuiteOptions{__VA_ARGS__}, true)),                        \
                           ::numfid::testing::matmul_case_name)
