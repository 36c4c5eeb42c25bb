// numfid::gtest quantised-GEMM conformance suites: instantiated on a naive int8 GEMM and a naive
// fp8 block-scaled GEMM (tests/suites_kernels.h; every case passes, every required mutant is
// caught), and run on their defective variants (wrong zero-point sign, truncating
// requantisation; scale of the wrong block, transposed scale tensor, bf16 accumulator without
// promotion), whose cases must fail as DEFECT.
#include <numfid/gtest.h>

#include <gmock/gmock.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "formats/error.h"
#include "suites_kernels.h"

namespace {

namespace k = numfid_test_kernels;
namespace nt = numfid::testing;
using ::testing::HasSubstr;

constexpr std::int64_t kTile = 16;
// acc × 3/8192: a short binary fraction, so the kernel's double product is exact and rne ties occur.
constexpr const char* kInt8Claim =
    "--in int8 --acc int32 --zero-point-a 3 --zero-point-b 1 --out int8 --out-scale 0.0003662109375 "
    "--out-zero-point 5 --saturate";
constexpr const char* kScaledClaim = "--in fp8_e4m3 --acc fp32 --out bf16 --scale-block 1x16 --promote-every 16";
constexpr const char* kDeepSeekClaim = "--in fp8_e4m3 --acc fp32 --out bf16 --scale-block 1x16,16x16 --promote-every 16";

numfid::TensorData good_int8(const numfid::TensorData& a, const numfid::TensorData& b) {
  return k::int8_gemm_tensor(a, b, 3, 1, 0x1.8p-12, 5);
}
numfid::TensorData good_scaled(const numfid::TensorData& a, const numfid::TensorData& b, const numfid::TensorData& sa,
                               const numfid::TensorData& sb) {
  return k::scaled_gemm_tensor(a, b, sa, sb, kTile);
}
// DeepSeek's layout (1×k activation and k×k weight blocks): numfid's own model of the claim (a
// legal computation), the scales attached as a library caller does.
numfid::TensorData emulated_deepseek(const numfid::TensorData& a, const numfid::TensorData& b,
                                     const numfid::TensorData& sa, const numfid::TensorData& sb) {
  numfid::ClaimSpec claim = nt::scaled_suite_claim(kDeepSeekClaim);
  std::vector<double> va, vb;
  for (const numfid::Bits x : sa.values) va.push_back(numfid::to_double(numfid::fp32, x));
  for (const numfid::Bits x : sb.values) vb.push_back(numfid::to_double(numfid::fp32, x));
  numfid::attach_operand_scales(claim, va, vb);
  return numfid::emulate_matmul(a, b, std::nullopt, claim);
}

NUMFID_INT8_GEMM_CONFORMANCE(Int8Gemm, good_int8, kInt8Claim, .tile = kTile, .large_k = 1024);
// uint8 activations (zero point 128) × int8 weights, requantised to fp32: numfid's own model of
// the claim (a legal computation).
constexpr const char* kUint8Claim = "--in uint8 --in-b int8 --acc int32 --zero-point-a 128 --out fp32 --out-scale 0.001";
numfid::TensorData emulated_uint8(const numfid::TensorData& a, const numfid::TensorData& b) {
  return numfid::emulate_matmul(a, b, std::nullopt, numfid::parse_claim(kUint8Claim));
}
NUMFID_INT8_GEMM_CONFORMANCE(EmulatedUint8Gemm, emulated_uint8, kUint8Claim, .tile = kTile, .large_k = 1024);
NUMFID_SCALED_GEMM_CONFORMANCE(Fp8ScaledGemm, good_scaled, kScaledClaim, .tile = kTile, .large_k = 512);
NUMFID_SCALED_GEMM_CONFORMANCE(Fp8DeepSeekGemm, emulated_deepseek, kDeepSeekClaim, .tile = kTile, .large_k = 512);

nt::MatmulCase quant_case(const std::string& name, bool scaled) {
  for (const nt::MatmulCase& c : nt::quant_gemm_cases({.tile = kTile, .large_k = 1024}, scaled))
    if (c.name == name) return c;
  throw std::runtime_error("no case " + name);
}

std::set<std::string> required_of(const nt::ConformanceReport& r) {
  std::set<std::string> s;
  for (const nt::MutantResult& m : r.mutants)
    if (m.required) s.insert(m.name);
  return s;
}

/// Runs a case and returns its failures' messages (the kernel's verdict, the sensitivity check).
template <class Run>
std::vector<std::string> failures(Run run) {
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    run();
  }
  std::vector<std::string> m;
  for (int i = 0; i < results.size(); ++i) m.push_back(results.GetTestPartResult(i).message());
  return m;
}

TEST(QuantConformance, CasesCoverTheShapesAndAreSeeded) {
  const auto cases = nt::quant_gemm_cases({.tile = kTile, .large_k = 1024}, true);
  std::set<std::string> names;
  std::set<std::int64_t> ks;
  for (const nt::MatmulCase& c : cases) names.insert(c.name), ks.insert(c.k);
  EXPECT_EQ(names.size(), cases.size());
  for (const std::int64_t K : {std::int64_t{1}, kTile - 1, kTile, kTile + 1, 2 * kTile + 3, std::int64_t{1024}, 4 * kTile})
    EXPECT_TRUE(ks.contains(K)) << K;
  const numfid::ClaimSpec claim = nt::scaled_suite_claim(kScaledClaim);
  const nt::MatmulCase c = quant_case("random_m3_k64_n34", true);
  const nt::ScaledOperands o1 = nt::scaled_gemm_operands(c, claim), o2 = nt::scaled_gemm_operands(c, claim);
  EXPECT_EQ(o1.a.values, o2.a.values);
  EXPECT_EQ(o1.scale_a.values, o2.scale_a.values);
  // The scale tensors in the claim's layout: A's 3 × ⌈64/16⌉, B's ⌈64/16⌉ × 34.
  EXPECT_EQ(o1.scale_a.shape, (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(o1.scale_b.shape, (std::vector<std::int64_t>{4, 34}));
  EXPECT_THROW(nt::scaled_suite_claim("--in fp8_e4m3 --acc fp32 --out bf16 --scale-a 1 --scale-b 1"), numfid::InputError);
  // near_overflow reaches the top of bf16's range (max 2^128) and stays finite.
  const nt::ScaledOperands big = nt::scaled_gemm_operands(quant_case("near_overflow_m4_k35_n6", true), claim);
  double top = 0;
  for (const numfid::Bits x : good_scaled(big.a, big.b, big.scale_a, big.scale_b).values)
    top = std::max(top, std::fabs(numfid::to_double(numfid::bf16, x)));
  EXPECT_GT(top, 0x1p110);
  EXPECT_LT(top, 0x1p128);
}

TEST(QuantConformance, AttachedScalesReachThePipeline) {
  // The same operands judged with the right scales and with B's doubled: the pipeline sees them.
  const nt::MatmulCase c = quant_case("random_m4_k35_n5", true);
  numfid::ClaimSpec claim = nt::scaled_suite_claim(kScaledClaim);
  const nt::ScaledOperands o = nt::scaled_gemm_operands(c, claim);
  const numfid::TensorData out = good_scaled(o.a, o.b, o.scale_a, o.scale_b);
  std::vector<double> va, vb;
  for (const numfid::Bits x : o.scale_a.values) va.push_back(numfid::to_double(numfid::fp32, x));
  for (const numfid::Bits x : o.scale_b.values) vb.push_back(2 * numfid::to_double(numfid::fp32, x));
  numfid::attach_operand_scales(claim, va, vb);
  EXPECT_EQ(numfid::check_matmul(o.a, o.b, out, claim).verdict.kind, numfid::TensorKind::defect);
  vb.pop_back();
  numfid::attach_operand_scales(claim, va, vb);
  EXPECT_THROW(numfid::check_matmul(o.a, o.b, out, claim), numfid::InputError) << "a scale missing is bad input";
}

TEST(QuantConformance, EveryCaseRequiresAndCatchesMutants) {
  for (const nt::MatmulCase& c : nt::quant_gemm_cases({.tile = kTile, .large_k = 1024}, false)) {
    SCOPED_TRACE(c.name);
    const nt::ConformanceReport r = nt::evaluate_int_gemm_case(good_int8, kInt8Claim, c);
    EXPECT_TRUE(required_of(r).contains("one-element-off"));
    EXPECT_EQ(r.blind(), "");
  }
  for (const nt::MatmulCase& c : nt::quant_gemm_cases({.tile = kTile, .large_k = 512}, true)) {
    SCOPED_TRACE(c.name);
    const nt::ConformanceReport r = nt::evaluate_scaled_gemm_case(good_scaled, kScaledClaim, c);
    EXPECT_TRUE(required_of(r).contains("one-element-off"));
    EXPECT_EQ(r.blind(), "");
  }
}

TEST(QuantConformance, RandomCasesRequireEveryMutant) {
  EXPECT_EQ(required_of(nt::evaluate_int_gemm_case(good_int8, kInt8Claim, quant_case("random_m4_k35_n5", false))),
            (std::set<std::string>{"one-element-off", "zero-point-sign", "truncating-requant"}));
  EXPECT_EQ(required_of(nt::evaluate_scaled_gemm_case(good_scaled, kScaledClaim, quant_case("random_m3_k64_n34", true))),
            (std::set<std::string>{"one-element-off", "wrong-block-scale", "transposed-scale-b", "bf16-unpromoted"}));
}

TEST(QuantConformance, DefectiveInt8KernelsFail) {
  for (const k::Int8Defect d : {k::Int8Defect::zero_point_sign, k::Int8Defect::truncating_requant}) {
    SCOPED_TRACE(static_cast<int>(d));
    auto kernel = [&](const numfid::TensorData& a, const numfid::TensorData& b) {
      return k::int8_gemm_tensor(a, b, 3, 1, 0x1.8p-12, 5, d);
    };
    const nt::MatmulCase c = quant_case("random_m4_k35_n5", false);
    EXPECT_THAT(nt::evaluate_int_gemm_case(kernel, kInt8Claim, c).kernel, nt::IsDefect());
    const std::vector<std::string> f = failures([&] { nt::run_int_gemm_case(kernel, kInt8Claim, c); });
    ASSERT_EQ(f.size(), 1u) << "only the kernel's verdict fails, not the sensitivity check";
    EXPECT_THAT(f[0], HasSubstr("DEFECT"));
    EXPECT_THAT(f[0], HasSubstr(fmt::format("int GEMM case random_m4_k35_n5 (M=4, K=35, N=5, data random, tile 16, "
                                            "seed {:#x})",
                                            c.seed)));
  }
}

TEST(QuantConformance, DefectiveScaledKernelsFail) {
  for (const k::ScaledDefect d :
       {k::ScaledDefect::wrong_block_scale, k::ScaledDefect::transposed_scale_b, k::ScaledDefect::bf16_unpromoted}) {
    SCOPED_TRACE(static_cast<int>(d));
    auto kernel = [&](const numfid::TensorData& a, const numfid::TensorData& b, const numfid::TensorData& sa,
                      const numfid::TensorData& sb) { return k::scaled_gemm_tensor(a, b, sa, sb, kTile, d); };
    // The wide product: several scale blocks along K and N, and K = 64 for the bf16 sum to drift.
    const nt::MatmulCase c = quant_case("random_m3_k64_n34", true);
    EXPECT_THAT(nt::evaluate_scaled_gemm_case(kernel, kScaledClaim, c).kernel, nt::IsDefect());
    const std::vector<std::string> f = failures([&] { nt::run_scaled_gemm_case(kernel, kScaledClaim, c); });
    ASSERT_EQ(f.size(), 1u);
    EXPECT_THAT(f[0], HasSubstr("DEFECT"));
    EXPECT_THAT(f[0], HasSubstr("scaled GEMM case random_m3_k64_n34"));
  }
}

TEST(QuantConformance, ReproductionPassesTheScaleTensors) {
  auto kernel = [](const numfid::TensorData& a, const numfid::TensorData& b, const numfid::TensorData& sa,
                   const numfid::TensorData& sb) {
    return k::scaled_gemm_tensor(a, b, sa, sb, kTile, k::ScaledDefect::wrong_block_scale);
  };
  const nt::ConformanceReport r = nt::evaluate_scaled_gemm_case(kernel, kScaledClaim, quant_case("random_m3_k64_n34", true));
  std::set<std::string> options;
  for (const auto& [opt, t] : r.kernel.operands) options.insert(opt);
  EXPECT_EQ(options, (std::set<std::string>{"--a", "--b", "--c", "--scale-a", "--scale-b"}));
  EXPECT_EQ(r.kernel.claim_text, kScaledClaim);
}

}  // namespace
