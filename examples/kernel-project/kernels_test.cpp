// The kernel project's tests with numfid::gtest: the GEMM and the softmax through numfid's
// conformance suites, one hand-written check, and the defective variants, whose tests pass only
// when numfid reports them as defects with the expected signature.
#include <numfid/gtest.h>

#include <gmock/gmock.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels.h"

namespace {

constexpr int kTile = 32;  // the GEMM's K tile, told to the suite so that it tests K = 31, 32, 33, 67
constexpr const char* kGemmClaim = "--in bf16 --acc fp32 --out bf16";
constexpr const char* kSoftmaxClaim = "--in bf16 --out bf16 --compute fp32";

// ------------------------------------------------------------------- adapters

/// The suites' adapter: numfid tensors in, the kernel's own containers inside, a tensor out.
numfid::TensorData gemm_with(const numfid::TensorData& a, const numfid::TensorData& b, kp::GemmVariant v) {
  const int m = static_cast<int>(a.shape[0]), k = static_cast<int>(a.shape[1]), n = static_cast<int>(b.shape[1]);
  const std::vector<kp::bf16_bits> c =
      kp::gemm_bf16(numfid::testing::as_floats(a), numfid::testing::as_floats(b), m, k, n, kTile, v);
  return numfid::testing::from_uint16(c, {m, n}, "bf16");
}
numfid::TensorData gemm(const numfid::TensorData& a, const numfid::TensorData& b) {
  return gemm_with(a, b, kp::GemmVariant::correct);
}
numfid::TensorData gemm_bf16_accumulator(const numfid::TensorData& a, const numfid::TensorData& b) {
  return gemm_with(a, b, kp::GemmVariant::bf16_accumulator);
}
numfid::TensorData gemm_truncating_cast(const numfid::TensorData& a, const numfid::TensorData& b) {
  return gemm_with(a, b, kp::GemmVariant::truncating_cast);
}
numfid::TensorData gemm_off_by_one_tile(const numfid::TensorData& a, const numfid::TensorData& b) {
  return gemm_with(a, b, kp::GemmVariant::off_by_one_tile);
}

numfid::TensorData softmax_with(const numfid::TensorData& x, bool subtract_max) {
  const int cols = static_cast<int>(x.shape.back()), rows = static_cast<int>(x.values.size()) / cols;
  return numfid::testing::from_uint16(kp::softmax_bf16(numfid::testing::as_uint16(x), rows, cols, subtract_max),
                                      x.shape, "bf16");
}
numfid::TensorData softmax(const numfid::TensorData& x) { return softmax_with(x, true); }
numfid::TensorData softmax_without_max(const numfid::TensorData& x) { return softmax_with(x, false); }

// The quantised kernels' adapters: bit patterns in (int8, fp8 e4m3, E8M0 scales), patterns out.
constexpr const char* kInt8Claim =
    "--in int8 --acc int32 --zero-point-a 3 --zero-point-b -1 --out int8 --out-scale 0.0003662109375 "
    "--out-zero-point 5 --saturate";
constexpr float kInt8Scale = 0x1.8p-12f;  // 0.0003662109375, the claim's --out-scale
constexpr const char* kMxClaim = "--in fp8_e4m3 --acc fp32 --out bf16 --scale-block 1x32 --promote-every 32";

std::vector<std::uint8_t> bytes(const numfid::TensorData& t) {
  std::vector<std::uint8_t> v;
  for (const numfid::Bits x : t.values) v.push_back(static_cast<std::uint8_t>(x.raw));
  return v;
}
std::vector<std::int8_t> int8s(const numfid::TensorData& t) {
  std::vector<std::int8_t> v;
  for (const numfid::Bits x : t.values) v.push_back(static_cast<std::int8_t>(static_cast<std::uint8_t>(x.raw)));
  return v;
}
numfid::TensorData int8_gemm_with(const numfid::TensorData& a, const numfid::TensorData& b, kp::Int8Variant v) {
  const int m = static_cast<int>(a.shape[0]), k = static_cast<int>(a.shape[1]), n = static_cast<int>(b.shape[1]);
  const std::vector<std::int8_t> c = kp::gemm_int8(int8s(a), int8s(b), m, k, n, 3, -1, kInt8Scale, 5, v);
  std::vector<std::uint8_t> bits(c.begin(), c.end());
  return numfid::view(std::span<const std::uint8_t>(bits), {m, n}, "int8", "C");
}
numfid::TensorData int8_gemm(const numfid::TensorData& a, const numfid::TensorData& b) {
  return int8_gemm_with(a, b, kp::Int8Variant::correct);
}
numfid::TensorData mx_gemm_with(const numfid::TensorData& a, const numfid::TensorData& b, const numfid::TensorData& sa,
                                const numfid::TensorData& sb, kp::MxVariant v) {
  const int m = static_cast<int>(a.shape[0]), k = static_cast<int>(a.shape[1]), n = static_cast<int>(b.shape[1]);
  return numfid::testing::from_uint16(kp::gemm_mxfp8(bytes(a), bytes(b), bytes(sa), bytes(sb), m, k, n, v), {m, n}, "bf16");
}
numfid::TensorData mx_gemm(const numfid::TensorData& a, const numfid::TensorData& b, const numfid::TensorData& sa,
                           const numfid::TensorData& sb) {
  return mx_gemm_with(a, b, sa, sb, kp::MxVariant::correct);
}

// ------------------------------------------------------------------- the conformance suites

// Numfid/Gemm.Conforms/<case> and Numfid/Softmax.Conforms/<case>: every generated case.
NUMFID_MATMUL_CONFORMANCE(Gemm, gemm, kGemmClaim, .tile = kTile);
NUMFID_SOFTMAX_CONFORMANCE(Softmax, softmax, kSoftmaxClaim, .tile = kTile);
// Numfid/Int8Gemm.Conforms/<case>: int8 operands (extremes, and an accumulator_range case whose
// partial sums pass 2^27: an int16 or fp32 accumulator fails it), bit-exact claim.
NUMFID_INT8_GEMM_CONFORMANCE(Int8Gemm, int8_gemm, kInt8Claim, .tile = kTile, .large_k = 1024);
// Numfid/MxFp8Gemm.Conforms/<case>: E4M3 operands and E8M0 scales from numfid's MX quantisation
// (OCP MX v1.0), up to E8M0's extremes 2^±127.
NUMFID_SCALED_GEMM_CONFORMANCE(MxFp8Gemm, mx_gemm, kMxClaim, .tile = 32, .large_k = 1024,
                               .scales = numfid::testing::ScaleKind::mx);

// ------------------------------------------------------------------- one hand-written check

TEST(Gemm, HandWrittenCheck) {
  const int M = 3, K = 40, N = 2;
  std::vector<float> a(M * K), b(K * N);
  for (int i = 0; i < M * K; ++i) a[static_cast<std::size_t>(i)] = static_cast<float>((i * 37) % 19 - 9) / 8.0f;
  for (int i = 0; i < K * N; ++i) b[static_cast<std::size_t>(i)] = static_cast<float>((i * 11) % 13 - 6) / 4.0f;
  const std::vector<std::uint16_t> c = kp::gemm_bf16(a, b, M, K, N, kTile);
  EXPECT_NUMFID_CONSISTENT(numfid::check_matmul(
      numfid::view(std::span<const float>(a), {M, K}, "bf16"),
      numfid::view(std::span<const float>(b), {K, N}, "bf16"),
      numfid::view(std::span<const std::uint16_t>(c), {M, N}, "bf16"),
      numfid::parse_claim("--in bf16 --acc fp32 --out bf16")));
  EXPECT_NUMFID_DETERMINISTIC([&] { return kp::gemm_bf16(a, b, M, K, N, kTile); });
}

// ------------------------------------------------------------------- the defective kernels

numfid::testing::MatmulCase matmul_case(const std::string& name) {
  for (const numfid::testing::MatmulCase& c : numfid::testing::matmul_cases({.tile = kTile}))
    if (c.name == name) return c;
  throw std::runtime_error("no matmul case " + name);
}
numfid::testing::SoftmaxCase softmax_case(const std::string& name) {
  for (const numfid::testing::SoftmaxCase& c : numfid::testing::softmax_cases({.tile = kTile}))
    if (c.name == name) return c;
  throw std::runtime_error("no softmax case " + name);
}

// Each defective kernel's conformance case fails (exactly one non-fatal failure, the kernel's
// verdict) with DEFECT and the defect's signature in its message.
TEST(DefectiveGemm, Bf16AccumulatorIsANarrowAccumulatorDefect) {
  EXPECT_NONFATAL_FAILURE(
      numfid::testing::run_matmul_case(gemm_bf16_accumulator, kGemmClaim, matmul_case("random_m2_k4096_n3")),
      "narrow-accumulator: ");
  const auto r = numfid::testing::evaluate_matmul_case(gemm_bf16_accumulator, kGemmClaim, matmul_case("random_m4_k67_n5"));
  EXPECT_THAT(r.kernel, numfid::testing::IsDefect());
  EXPECT_THAT(r.kernel, numfid::testing::HasSignature("narrow-accumulator"));
}

TEST(DefectiveGemm, TruncatingCastIsABiasDefect) {
  EXPECT_NONFATAL_FAILURE(
      numfid::testing::run_matmul_case(gemm_truncating_cast, kGemmClaim, matmul_case("random_m8_k1_n8")), "bias: ");
  const auto r = numfid::testing::evaluate_matmul_case(gemm_truncating_cast, kGemmClaim, matmul_case("random_m8_k1_n8"));
  EXPECT_THAT(r.kernel, numfid::testing::IsDefect());
  EXPECT_THAT(r.kernel, numfid::testing::HasSignature("bias"));
}

TEST(DefectiveGemm, OffByOneTileIsADefect) {
  EXPECT_NONFATAL_FAILURE(
      numfid::testing::run_matmul_case(gemm_off_by_one_tile, kGemmClaim, matmul_case("random_m4_k33_n4")), "DEFECT");
  const auto r = numfid::testing::evaluate_matmul_case(gemm_off_by_one_tile, kGemmClaim, matmul_case("random_m4_k33_n4"));
  EXPECT_THAT(r.kernel, numfid::testing::IsDefect());
  // Every element misses the last tile's terms: an error far beyond the fp32 bound on every
  // element alike, which numfid's signatures read as a narrow accumulator (numfid has no
  // signature of its own for dropped terms).
  EXPECT_THAT(r.kernel, numfid::testing::HasSignature("narrow-accumulator"));
  EXPECT_EQ(r.kernel.result.verdict.counts[3], r.kernel.result.verdict.elements - r.kernel.result.verdict.counts[0]);
}

numfid::testing::MatmulCase quant_case(const std::string& name, bool scaled) {
  for (const numfid::testing::MatmulCase& c : numfid::testing::quant_gemm_cases({.tile = 32, .large_k = 1024}, scaled))
    if (c.name == name) return c;
  throw std::runtime_error("no quantised case " + name);
}

TEST(DefectiveInt8Gemm, Int16AccumulatorIsCaught) {
  auto int16_acc = [](const numfid::TensorData& a, const numfid::TensorData& b) {
    return int8_gemm_with(a, b, kp::Int8Variant::int16_accumulator);
  };
  EXPECT_NONFATAL_FAILURE(numfid::testing::run_int_gemm_case(int16_acc, kInt8Claim,
                                                             quant_case("accumulator_range_m2_k32768_n3", false)),
                          "DEFECT");
}

TEST(DefectiveInt8Gemm, TruncatingRequantisationIsARoundingDefect) {
  auto truncating = [](const numfid::TensorData& a, const numfid::TensorData& b) {
    return int8_gemm_with(a, b, kp::Int8Variant::truncating_requant);
  };
  const auto r = numfid::testing::evaluate_int_gemm_case(truncating, kInt8Claim, quant_case("random_m4_k67_n5", false));
  EXPECT_THAT(r.kernel, numfid::testing::IsDefect());
  EXPECT_THAT(r.kernel, numfid::testing::HasSignature("requant-rounding"));
}

TEST(DefectiveMxGemm, ScaleOfTheWrongBlockAndE8m0BiasAreCaught) {
  for (const kp::MxVariant v : {kp::MxVariant::wrong_block_scale, kp::MxVariant::e8m0_bias}) {
    SCOPED_TRACE(static_cast<int>(v));
    auto kernel = [&](const numfid::TensorData& a, const numfid::TensorData& b, const numfid::TensorData& sa,
                      const numfid::TensorData& sb) { return mx_gemm_with(a, b, sa, sb, v); };
    EXPECT_NONFATAL_FAILURE(numfid::testing::run_scaled_gemm_case(kernel, kMxClaim, quant_case("random_m3_k128_n66", true),
                                                                  numfid::testing::ScaleKind::mx),
                            "DEFECT");
  }
}

TEST(DefectiveSoftmax, WithoutMaxSubtractionOverflows) {
  EXPECT_NONFATAL_FAILURE(numfid::testing::run_softmax_case(softmax_without_max, kSoftmaxClaim,
                                                            softmax_case("near_overflow_rows4_cols33")),
                          "non-finite: ");
  const auto r = numfid::testing::evaluate_softmax_case(softmax_without_max, kSoftmaxClaim,
                                                        softmax_case("near_overflow_rows4_cols33"));
  EXPECT_THAT(r.kernel, numfid::testing::IsDefect());
  EXPECT_THAT(r.kernel, numfid::testing::HasSignature("non-finite"));
  // On small logits the textbook form is fine: the suite's large-logit case is what catches it.
  EXPECT_THAT(numfid::testing::evaluate_softmax_case(softmax_without_max, kSoftmaxClaim,
                                                     softmax_case("random_rows4_cols7")).kernel,
              numfid::testing::IsConsistent());
}

}  // namespace
