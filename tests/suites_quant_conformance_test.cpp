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

#include "formats/convert.h"
#include "formats/error.h"
#include "numerics/int_gemm.h"
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

// Per-channel requantisation: the suite generates one fp32 scale per output column.
constexpr const char* kPerChannelClaim =
    "--in int8 --acc int32 --zero-point-a 3 --zero-point-b 1 --out int8 --out-zero-point 5 --saturate";
numfid::TensorData good_per_channel(const numfid::TensorData& a, const numfid::TensorData& b, const numfid::TensorData& s) {
  k::Int8GemmParams p{3, 1, 5, {}, false, k::Int8Defect::none};
  for (const numfid::Bits x : s.values) p.scales.push_back(numfid::to_double(numfid::fp32, x));
  return k::int8_gemm_tensor(a, b, p);
}
NUMFID_INT8_GEMM_PER_CHANNEL_CONFORMANCE(Int8PerChannelGemm, good_per_channel, kPerChannelClaim, .tile = kTile,
                                         .large_k = 1024);

// The gemmlowp/TFLite fixed-point requantisation (tflite_requantize in suites_kernels.h: the
// TFLite and gemmlowp sources written out, independent of numfid's).
constexpr double kFixedScale = 0x1.8p-12;
constexpr const char* kFixedPointClaim =
    "--in int8 --acc int32 --zero-point-a 3 --zero-point-b 1 --out int8 --out-scale 0.0003662109375 --out-zero-point 5 "
    "--saturate --requant-fixed-point";
numfid::TensorData good_fixed_point(const numfid::TensorData& a, const numfid::TensorData& b) {
  return k::int8_gemm_tensor(a, b, k::Int8GemmParams{3, 1, 5, {kFixedScale}, true, k::Int8Defect::none});
}
NUMFID_INT8_GEMM_CONFORMANCE(Int8FixedPointGemm, good_fixed_point, kFixedPointClaim, .tile = kTile, .large_k = 1024);

// OCP MX v1.0: MXFP8 (E4M3) and MXFP4 (E2M1) operands MX-quantised by numfid, E8M0 scales per
// 1×32 block along K.
constexpr std::int64_t kMxTile = 32;
constexpr const char* kMxFp8Claim = "--in fp8_e4m3 --acc fp32 --out bf16 --scale-block 1x32 --promote-every 32";
constexpr const char* kMxFp4Claim = "--in fp4_e2m1 --acc fp32 --out bf16 --scale-block 1x32 --promote-every 32";
numfid::TensorData good_mx(const numfid::TensorData& a, const numfid::TensorData& b, const numfid::TensorData& sa,
                           const numfid::TensorData& sb) {
  return k::block_scaled_gemm_tensor(a, b, sa, sb, {1, kMxTile, 1});
}
NUMFID_SCALED_GEMM_CONFORMANCE(MxFp8Gemm, good_mx, kMxFp8Claim, .tile = kMxTile, .large_k = 512, .scales = nt::ScaleKind::mx);
NUMFID_SCALED_GEMM_CONFORMANCE(MxFp4Gemm, good_mx, kMxFp4Claim, .tile = kMxTile, .large_k = 512, .scales = nt::ScaleKind::mx);

// NVFP4: E2M1 operands, E4M3 scales per 1×16 block (A's with a per-tensor fp32 scale folded in).
constexpr const char* kNvfp4Claim = "--in fp4_e2m1 --acc fp32 --out bf16 --scale-block 1x16 --promote-every 16";
numfid::TensorData good_nvfp4(const numfid::TensorData& a, const numfid::TensorData& b, const numfid::TensorData& sa,
                              const numfid::TensorData& sb) {
  return k::block_scaled_gemm_tensor(a, b, sa, sb, {1, 16, 1});
}
NUMFID_SCALED_GEMM_CONFORMANCE(Nvfp4Gemm, good_nvfp4, kNvfp4Claim, .tile = 16, .large_k = 512, .scales = nt::ScaleKind::nvfp4);

// DeepSeek-V3: fp32 scales amax/448 (not powers of two), 1×128 activation and 128×128 weight blocks.
constexpr const char* kDeepSeek128Claim =
    "--in fp8_e4m3 --acc fp32 --out bf16 --scale-block 1x128,128x128 --promote-every 128";
numfid::TensorData good_deepseek(const numfid::TensorData& a, const numfid::TensorData& b, const numfid::TensorData& sa,
                                 const numfid::TensorData& sb) {
  return k::block_scaled_gemm_tensor(a, b, sa, sb, {1, 128, 128});
}
NUMFID_SCALED_GEMM_CONFORMANCE(DeepSeekFp32ScaledGemm, good_deepseek, kDeepSeek128Claim, .tile = 128, .large_k = 1024,
                               .scales = nt::ScaleKind::fp32);

nt::MatmulCase quant_case(const std::string& name, bool scaled, std::int64_t tile = kTile) {
  for (const nt::MatmulCase& c : nt::quant_gemm_cases({.tile = tile, .large_k = 1024}, scaled))
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
  // int16 wraps on random data at K = 35 already (|terms| up to 2^14); fp32 is exact below 2^24.
  EXPECT_EQ(required_of(nt::evaluate_int_gemm_case(good_int8, kInt8Claim, quant_case("random_m4_k35_n5", false))),
            (std::set<std::string>{"one-element-off", "zero-point-sign", "truncating-requant", "int16-accumulator"}));
  // The accumulator-range case: partial sums through 2^27, exact in int32 only.
  EXPECT_EQ(required_of(nt::evaluate_int_gemm_case(good_int8, kInt8Claim, quant_case("accumulator_range_m2_k32768_n3", false))),
            (std::set<std::string>{"one-element-off", "zero-point-sign", "int16-accumulator", "fp32-accumulator"}));
  EXPECT_EQ(required_of(nt::evaluate_int_gemm_per_channel_case(good_per_channel, kPerChannelClaim,
                                                               quant_case("random_m4_k35_n5", false))),
            (std::set<std::string>{"one-element-off", "zero-point-sign", "truncating-requant", "per-tensor-scale",
                                   "int16-accumulator"}));
  // Fixed point: the truncating shift is required; the exactly rounded requantisation differs
  // from the fixed-point one only on ties (acc a multiple of 4096 here), which random data misses.
  EXPECT_EQ(required_of(nt::evaluate_int_gemm_case(good_fixed_point, kFixedPointClaim, quant_case("random_m4_k35_n5", false))),
            (std::set<std::string>{"one-element-off", "zero-point-sign", "int16-accumulator", "fixed-point-truncating-shift"}));
  EXPECT_EQ(required_of(nt::evaluate_scaled_gemm_case(good_scaled, kScaledClaim, quant_case("random_m3_k64_n34", true))),
            (std::set<std::string>{"one-element-off", "wrong-block-scale", "transposed-scale-b", "bf16-unpromoted"}));
  // MX: the wide product and a square one (A's and B's scale tensors of one size: swappable).
  EXPECT_EQ(required_of(nt::evaluate_scaled_gemm_case(good_mx, kMxFp8Claim, quant_case("random_m3_k128_n66", true, kMxTile),
                                                      nt::ScaleKind::mx)),
            (std::set<std::string>{"one-element-off", "wrong-block-scale", "transposed-scale-b", "bf16-unpromoted",
                                   "e8m0-exponent-off-by-one"}));
  EXPECT_EQ(required_of(nt::evaluate_scaled_gemm_case(good_mx, kMxFp4Claim, quant_case("random_m4_k33_n4", true, kMxTile),
                                                      nt::ScaleKind::mx)),
            (std::set<std::string>{"one-element-off", "wrong-block-scale", "transposed-scale-b", "swapped-scales",
                                   "e8m0-exponent-off-by-one"}));
  // E8M0's extremes (wide_exponent): every mutant stays required.
  EXPECT_EQ(required_of(nt::evaluate_scaled_gemm_case(good_mx, kMxFp8Claim, quant_case("wide_exponent_m4_k67_n6", true, kMxTile),
                                                      nt::ScaleKind::mx)),
            (std::set<std::string>{"one-element-off", "wrong-block-scale", "transposed-scale-b", "bf16-unpromoted",
                                   "e8m0-exponent-off-by-one"}));
  EXPECT_EQ(required_of(nt::evaluate_scaled_gemm_case(good_nvfp4, kNvfp4Claim, quant_case("random_m3_k64_n34", true, 16),
                                                      nt::ScaleKind::nvfp4)),
            (std::set<std::string>{"one-element-off", "wrong-block-scale", "transposed-scale-b", "bf16-unpromoted"}));
  EXPECT_EQ(required_of(nt::evaluate_scaled_gemm_case(good_deepseek, kDeepSeek128Claim,
                                                      quant_case("random_m3_k512_n258", true, 128), nt::ScaleKind::fp32)),
            (std::set<std::string>{"one-element-off", "wrong-block-scale", "transposed-scale-b", "bf16-unpromoted",
                                   "swapped-scales"}));
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
    EXPECT_THAT(f[0], HasSubstr("scaled GEMM (pow2 scales) case random_m3_k64_n34"));
  }
}

TEST(QuantConformance, NarrowAccumulatorsFailTheAccumulatorRangeCase) {
  const nt::MatmulCase c = quant_case("accumulator_range_m2_k32768_n3", false);
  for (const k::Int8Defect d : {k::Int8Defect::int16_accumulator, k::Int8Defect::fp32_accumulator}) {
    SCOPED_TRACE(static_cast<int>(d));
    auto kernel = [&](const numfid::TensorData& a, const numfid::TensorData& b) {
      return k::int8_gemm_tensor(a, b, 3, 1, 0x1.8p-12, 5, d);
    };
    EXPECT_NONFATAL_FAILURE(nt::run_int_gemm_case(kernel, kInt8Claim, c), "DEFECT");
  }
  // The fp32 accumulator is exact on every other case (partial sums below 2^24): only this
  // case catches it.
  auto fp32_acc = [](const numfid::TensorData& a, const numfid::TensorData& b) {
    return k::int8_gemm_tensor(a, b, 3, 1, 0x1.8p-12, 5, k::Int8Defect::fp32_accumulator);
  };
  EXPECT_THAT(nt::evaluate_int_gemm_case(fp32_acc, kInt8Claim, quant_case("random_m2_k1024_n3", false)).kernel,
              nt::IsConsistent());
  // The operands: every product of the climb odd, the way back's divisible by 128, the exact sum
  // about 2^17 (int8 range after × 3/8192), and the peak in int32.
  const nt::MatmulOperands o = nt::int_gemm_operands(c, numfid::parse_claim(kInt8Claim));
  std::int64_t s = 0, peak = 0;
  for (std::int64_t kk = 0; kk < c.k; ++kk) {
    s += (numfid::integer_value(numfid::int8, o.a.values[static_cast<std::size_t>(kk)]) - 3) *
         (numfid::integer_value(numfid::int8, o.b.values[static_cast<std::size_t>(kk * c.n)]) - 1);
    peak = std::max(peak, s);
  }
  EXPECT_GE(peak, std::int64_t{1} << 27);
  EXPECT_LT(peak, std::int64_t{1} << 28);
  EXPECT_GE(s, std::int64_t{1} << 17);
  EXPECT_LT(s, (std::int64_t{1} << 17) + 16384);
}

TEST(QuantConformance, DefectiveRequantisationsFail) {
  auto per_tensor = [](const numfid::TensorData& a, const numfid::TensorData& b, const numfid::TensorData& sc) {
    k::Int8GemmParams p{3, 1, 5, {}, false, k::Int8Defect::per_tensor_scale};
    for (const numfid::Bits x : sc.values) p.scales.push_back(numfid::to_double(numfid::fp32, x));
    return k::int8_gemm_tensor(a, b, p);
  };
  EXPECT_NONFATAL_FAILURE(nt::run_int_gemm_per_channel_case(per_tensor, kPerChannelClaim, quant_case("random_m4_k35_n5", false)),
                          "DEFECT");
  auto truncating_shift = [](const numfid::TensorData& a, const numfid::TensorData& b) {
    return k::int8_gemm_tensor(a, b, k::Int8GemmParams{3, 1, 5, {kFixedScale}, true, k::Int8Defect::truncating_shift});
  };
  EXPECT_NONFATAL_FAILURE(nt::run_int_gemm_case(truncating_shift, kFixedPointClaim, quant_case("random_m4_k35_n5", false)),
                          "DEFECT");
  // The per-channel scales: one per column, fitted to the column (max |acc| × scale in [64, 192)).
  const nt::MatmulCase c = quant_case("random_m4_k35_n5", false);
  const numfid::ClaimSpec claim = nt::per_channel_suite_claim(kPerChannelClaim);
  const nt::MatmulOperands o = nt::int_gemm_operands(c, claim);
  EXPECT_EQ(nt::per_channel_out_scales(c, claim, o).shape, (std::vector<std::int64_t>{5}));
  EXPECT_THROW(nt::per_channel_suite_claim(kInt8Claim), numfid::InputError) << "the suite generates the scales";
}

TEST(QuantConformance, DefectiveBlockScaledKernelsFail) {
  struct Bug {
    const char* claim;
    nt::ScaleKind kind;
    k::ScaleBlocks blocks;
    std::int64_t tile;
    const char* case_name;
    k::ScaledDefect defect;
  };
  const Bug bugs[] = {
      {kMxFp8Claim, nt::ScaleKind::mx, {1, 32, 1}, kMxTile, "random_m3_k128_n66", k::ScaledDefect::wrong_block_scale},
      {kMxFp8Claim, nt::ScaleKind::mx, {1, 32, 1}, kMxTile, "random_m3_k128_n66", k::ScaledDefect::transposed_scale_b},
      {kMxFp8Claim, nt::ScaleKind::mx, {1, 32, 1}, kMxTile, "random_m3_k128_n66", k::ScaledDefect::e8m0_bias},
      {kMxFp8Claim, nt::ScaleKind::mx, {1, 32, 1}, kMxTile, "random_m3_k128_n66", k::ScaledDefect::bf16_unpromoted},
      {kMxFp4Claim, nt::ScaleKind::mx, {1, 32, 1}, kMxTile, "random_m4_k33_n4", k::ScaledDefect::swapped_scales},
      {kMxFp4Claim, nt::ScaleKind::mx, {1, 32, 1}, kMxTile, "random_m3_k128_n66", k::ScaledDefect::e8m0_bias},
      // Scales applied one at a time, (partial·sa)·sb: fine on ordinary scales, fp32 overflows at
      // 2^127 (E8M0's largest): the wide_exponent case catches it.
      {kMxFp8Claim, nt::ScaleKind::mx, {1, 32, 1}, kMxTile, "wide_exponent_m4_k67_n6", k::ScaledDefect::sequential_scaling},
      {kNvfp4Claim, nt::ScaleKind::nvfp4, {1, 16, 1}, 16, "random_m3_k64_n34", k::ScaledDefect::wrong_block_scale},
      {kNvfp4Claim, nt::ScaleKind::nvfp4, {1, 16, 1}, 16, "random_m3_k64_n34", k::ScaledDefect::transposed_scale_b},
      {kDeepSeek128Claim, nt::ScaleKind::fp32, {1, 128, 128}, 128, "random_m3_k512_n258", k::ScaledDefect::wrong_block_scale},
      {kDeepSeek128Claim, nt::ScaleKind::fp32, {1, 128, 128}, 128, "random_m3_k512_n258", k::ScaledDefect::transposed_scale_b},
      {kDeepSeek128Claim, nt::ScaleKind::fp32, {1, 128, 128}, 128, "random_m3_k512_n258", k::ScaledDefect::swapped_scales},
  };
  for (const Bug& bug : bugs) {
    SCOPED_TRACE(fmt::format("{} {} defect {}", bug.claim, bug.case_name, static_cast<int>(bug.defect)));
    auto kernel = [&](const numfid::TensorData& a, const numfid::TensorData& b, const numfid::TensorData& sa,
                      const numfid::TensorData& sb) { return k::block_scaled_gemm_tensor(a, b, sa, sb, bug.blocks, bug.defect); };
    const nt::MatmulCase c = quant_case(bug.case_name, true, bug.tile);
    EXPECT_NONFATAL_FAILURE(nt::run_scaled_gemm_case(kernel, bug.claim, c, bug.kind), "DEFECT");
  }
  auto sequential = [](const numfid::TensorData& a, const numfid::TensorData& b, const numfid::TensorData& sa,
                       const numfid::TensorData& sb) {
    return k::block_scaled_gemm_tensor(a, b, sa, sb, {1, 32, 1}, k::ScaledDefect::sequential_scaling);
  };
  EXPECT_THAT(nt::evaluate_scaled_gemm_case(sequential, kMxFp8Claim, quant_case("random_m3_k128_n66", true, kMxTile),
                                            nt::ScaleKind::mx).kernel,
              nt::IsConsistent());
}

TEST(QuantConformance, ScaleKindsFollowTheirSchemes) {
  // MX (OCP MX v1.0 §6.3): each block's largest element lies in [2^emax_elem, max] of the element
  // format (E4M3: [256, 448]); scales E8M0 patterns; wide_exponent reaches both ends 0 and 254.
  const nt::MatmulCase c = quant_case("random_m3_k128_n66", true, kMxTile);
  const nt::ScaledOperands mx = nt::scaled_gemm_operands(c, nt::scaled_suite_claim(kMxFp8Claim), nt::ScaleKind::mx);
  EXPECT_EQ(mx.scale_a.format->name, "e8m0");
  EXPECT_EQ(mx.scale_a.shape, (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(mx.scale_b.shape, (std::vector<std::int64_t>{4, 66}));
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t t = 0; t < 4; ++t) {
      double top = 0;
      for (std::int64_t kk = 32 * t; kk < 32 * (t + 1); ++kk)
        top = std::max(top, std::fabs(numfid::to_double(numfid::fp8_e4m3, mx.a.values[static_cast<std::size_t>(i * 128 + kk)])));
      EXPECT_GE(top, 256) << i << "," << t;
      EXPECT_LE(top, 448) << i << "," << t;
    }
  const nt::ScaledOperands wide = nt::scaled_gemm_operands(quant_case("wide_exponent_m4_k67_n6", true, kMxTile),
                                                           nt::scaled_suite_claim(kMxFp8Claim), nt::ScaleKind::mx);
  std::set<std::uint64_t> codes;
  for (const numfid::Bits x : wide.scale_a.values) codes.insert(x.raw);
  for (const numfid::Bits x : wide.scale_b.values) codes.insert(x.raw);
  EXPECT_TRUE(codes.contains(0) && codes.contains(254)) << "E8M0's 2^-127 and 2^127";
  // NVFP4: B's scales are e4m3 values; A's carry a global scale that is not a power of two.
  const nt::ScaledOperands nv = nt::scaled_gemm_operands(quant_case("random_m3_k64_n34", true, 16),
                                                         nt::scaled_suite_claim(kNvfp4Claim), nt::ScaleKind::nvfp4);
  for (const numfid::Bits x : nv.scale_b.values) {
    const double v = numfid::to_double(numfid::fp32, x);
    EXPECT_EQ(numfid::to_double(numfid::fp8_e4m3, numfid::convert(numfid::fp32, numfid::fp8_e4m3, x).bits), v);
  }
  bool a_pow2 = true;
  for (const numfid::Bits x : nv.scale_a.values) {
    int e = 0;
    a_pow2 = a_pow2 && std::frexp(numfid::to_double(numfid::fp32, x), &e) == 0.5;
  }
  EXPECT_FALSE(a_pow2);
  // DeepSeek fp32: A's 1×128 and B's 128×128 blocks, scales amax/448.
  const nt::ScaledOperands ds = nt::scaled_gemm_operands(quant_case("random_m3_k512_n258", true, 128),
                                                         nt::scaled_suite_claim(kDeepSeek128Claim), nt::ScaleKind::fp32);
  EXPECT_EQ(ds.scale_a.shape, (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(ds.scale_b.shape, (std::vector<std::int64_t>{4, 3}));
  EXPECT_THROW(nt::scaled_gemm_operands(c, nt::scaled_suite_claim(kDeepSeek128Claim), nt::ScaleKind::mx), numfid::InputError)
      << "MX blocks are 1xk";
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
