// numfid::gtest conformance suites: instantiated on a correct CPU bf16 GEMM and softmax (every
// case passes, every required mutant is caught), and run on defective kernels, whose cases must
// fail with the defect's signature; the generated cases are seeded and reproducible.
#include <numfid/gtest.h>

#include <gmock/gmock.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <set>

#include <fmt/format.h>

#include "formats/error.h"
#include "suites_kernels.h"

namespace {

namespace k = numfid_test_kernels;
namespace nt = numfid::testing;
using ::testing::HasSubstr;

constexpr std::int64_t kTile = 16;
constexpr const char* kClaim = "--in bf16 --acc fp32 --out bf16";
constexpr const char* kSoftmaxClaim = "--in bf16 --out bf16 --compute fp32";

numfid::TensorData good_gemm(const numfid::TensorData& a, const numfid::TensorData& b) {
  return k::gemm_tensor(a, b, kTile);
}
numfid::TensorData good_softmax(const numfid::TensorData& x) { return k::softmax_tensor(x); }

// The suites as a kernel project instantiates them (small tile and large K: seconds on 2 cores).
NUMFID_MATMUL_CONFORMANCE(TiledGemm, good_gemm, kClaim, .tile = kTile, .large_k = 1024);
NUMFID_SOFTMAX_CONFORMANCE(Softmax, good_softmax, kSoftmaxClaim, .tile = kTile, .large_row = 1024);
// The defaults (tile 128, K = 4096), with the kernel's own tile 128.
numfid::TensorData good_gemm_128(const numfid::TensorData& a, const numfid::TensorData& b) {
  return k::gemm_tensor(a, b, 128);
}
NUMFID_MATMUL_CONFORMANCE(TiledGemmDefaults, good_gemm_128, kClaim);
NUMFID_SOFTMAX_CONFORMANCE(SoftmaxDefaults, good_softmax, kSoftmaxClaim);

// Other formats: the kernel is numfid's own model of a blocked fp32 accumulation (a legal
// computation under the claim), so every case must pass and every required mutant be caught.
numfid::TensorData emulated_fp8_gemm(const numfid::TensorData& a, const numfid::TensorData& b) {
  return numfid::emulate_matmul(a, b, std::nullopt,
                                numfid::parse_claim("--in fp8_e4m3 --acc fp32 --out fp16 --plan 'blocked(16)'"));
}
NUMFID_MATMUL_CONFORMANCE(EmulatedFp8Gemm, emulated_fp8_gemm, "--in fp8_e4m3 --acc fp32 --out fp16", .tile = kTile,
                          .large_k = 512);
numfid::TensorData emulated_fp16_gemm(const numfid::TensorData& a, const numfid::TensorData& b) {
  return numfid::emulate_matmul(a, b, std::nullopt, numfid::parse_claim("--in fp16 --acc fp32 --out fp32 --plan pairwise"));
}
NUMFID_MATMUL_CONFORMANCE(EmulatedFp16Gemm, emulated_fp16_gemm, "--in fp16 --acc fp32 --out fp32", .tile = kTile,
                          .large_k = 512);

// Sums (the GEMM's loop with B = ones).
numfid::TensorData good_sum(const numfid::TensorData& x) { return k::sum_tensor(x, kTile); }
NUMFID_SUM_CONFORMANCE(TiledSum, good_sum, kClaim, .tile = kTile, .large_k = 1024);

// Row-wise dots (what `numfid emulate dot` computes): a tiled CPU dot, and numfid's own
// Trainium model of it (a legal computation under the claim).
numfid::TensorData good_dot(const numfid::TensorData& a, const numfid::TensorData& b) {
  return numfid::emulate_dot(a, b, std::nullopt, numfid::parse_claim("--in bf16 --acc fp32 --out bf16 --plan 'blocked(16)'"));
}
NUMFID_DOT_CONFORMANCE(TiledDot, good_dot, kClaim, .tile = kTile, .large_k = 1024);
numfid::TensorData trn2_dot(const numfid::TensorData& a, const numfid::TensorData& b) {
  return numfid::emulate_dot(a, b, std::nullopt, numfid::parse_claim("--in bf16 --out bf16 --profile trn2"));
}
NUMFID_DOT_CONFORMANCE(Trn2Dot, trn2_dot, kClaim, .tile = 128, .large_k = 1024);

// The other row ops through NUMFID_ROWS_CONFORMANCE.
numfid::TensorData good_rmsnorm(const numfid::TensorData& x) { return k::rmsnorm_tensor(x); }
numfid::TensorData good_exp(const numfid::TensorData& x) { return k::exp_tensor(x); }
NUMFID_ROWS_CONFORMANCE(RmsNorm, numfid::RowOp::rmsnorm, good_rmsnorm, "--in bf16 --out bf16 --ulps 1", .tile = kTile,
                        .large_row = 1024);
numfid::TensorData good_layernorm(const numfid::TensorData& x) { return k::layernorm_tensor(x); }
numfid::TensorData good_log_softmax(const numfid::TensorData& x) { return k::log_softmax_tensor(x); }
NUMFID_ROWS_CONFORMANCE(LayerNorm, numfid::RowOp::layernorm, good_layernorm, "--in bf16 --out bf16 --ulps 1",
                        .tile = kTile, .large_row = 1024);
NUMFID_ROWS_CONFORMANCE(LogSoftmax, numfid::RowOp::log_softmax, good_log_softmax, "--in bf16 --out bf16 --ulps 1",
                        .tile = kTile, .large_row = 1024);
NUMFID_ROWS_CONFORMANCE(Exp, numfid::RowOp::exp, good_exp, "--in bf16 --out bf16 --ulps 1", .tile = kTile,
                        .large_row = 256);

nt::MatmulCase matmul_case(std::string_view name) {
  for (const nt::MatmulCase& c : nt::matmul_cases({.tile = kTile, .large_k = 1024}))
    if (c.name == name) return c;
  throw std::runtime_error("no case " + std::string(name));
}

TEST(MatmulConformance, CasesCoverTheShapesAndData) {
  const std::vector<nt::MatmulCase> cases = nt::matmul_cases({.tile = kTile, .large_k = 1024});
  std::set<std::string> names;
  std::set<std::int64_t> ks;
  std::set<nt::DataKind> kinds;
  bool m1 = false, n1 = false;
  for (const nt::MatmulCase& c : cases) {
    names.insert(c.name);
    ks.insert(c.k);
    kinds.insert(c.data);
    m1 = m1 || c.m == 1;
    n1 = n1 || c.n == 1;
  }
  EXPECT_EQ(names.size(), cases.size()) << "case names are unique";
  for (const std::int64_t K : {std::int64_t{1}, kTile - 1, kTile, kTile + 1, 2 * kTile + 3, std::int64_t{1024}})
    EXPECT_TRUE(ks.contains(K)) << K;
  EXPECT_TRUE(m1 && n1);
  EXPECT_EQ(kinds.size(), 8u);
}

TEST(Conformance, CaseNamesAreUniqueForEveryTile) {
  // gtest refuses a parameter name given twice (and then runs no test of the binary): tile 8
  // made the row suites' t - 1 = 7 twice, tile 2 the sums' k = 1.
  const auto unique = [](const auto& cases) {
    std::set<std::string> names;
    for (const auto& c : cases) names.insert(c.name);
    return names.size() == cases.size();
  };
  for (const std::int64_t tile : {1, 2, 3, 6, 7, 8, 16, 128}) {
    SCOPED_TRACE(tile);
    EXPECT_TRUE(unique(nt::matmul_cases({.tile = tile, .large_k = tile})));
    EXPECT_TRUE(unique(nt::sum_cases({.tile = tile, .large_k = tile})));
    for (const numfid::RowOp op : {numfid::RowOp::softmax, numfid::RowOp::rmsnorm, numfid::RowOp::exp}) {
      EXPECT_TRUE(unique(nt::row_cases(op, {.tile = tile, .large_row = tile})));
      EXPECT_FALSE(nt::row_cases(op, {.tile = tile}).empty());
    }
  }
}

TEST(MatmulConformance, OperandsAreSeededAndReproducible) {
  const numfid::ClaimSpec claim = numfid::parse_claim(kClaim);
  const nt::MatmulCase c = matmul_case("random_m4_k17_n4");
  EXPECT_EQ(nt::matmul_operands(c, claim).a.values, nt::matmul_operands(c, claim).a.values);
  nt::MatmulCase other = c;
  other.seed += 1;
  EXPECT_NE(nt::matmul_operands(c, claim).a.values, nt::matmul_operands(other, claim).a.values);
  // A different suite seed gives different case seeds.
  EXPECT_NE(nt::matmul_cases({.tile = kTile, .seed = 1})[0].seed, nt::matmul_cases({.tile = kTile, .seed = 2})[0].seed);
}

TEST(MatmulConformance, EveryCaseHasARequiredMutantAndCatchesIt) {
  for (const nt::MatmulCase& c : nt::matmul_cases({.tile = kTile, .large_k = 1024})) {
    SCOPED_TRACE(c.name);
    const nt::ConformanceReport r = nt::evaluate_matmul_case(good_gemm, kClaim, c);
    int required = 0;
    for (const nt::MutantResult& m : r.mutants) required += m.required;
    EXPECT_GE(required, 1);
    EXPECT_EQ(r.blind(), "");
  }
}

TEST(MatmulConformance, RandomLargeKRequiresEveryMutant) {
  const nt::ConformanceReport r = nt::evaluate_matmul_case(good_gemm, kClaim, matmul_case("random_m4_k35_n5"));
  std::set<std::string> required;
  for (const nt::MutantResult& m : r.mutants)
    if (m.required) required.insert(m.name);
  EXPECT_EQ(required, (std::set<std::string>{"one-element-off", "bf16-partial-sums", "dropped-k-tile", "truncating-output"}) );
}

/// The correctly rounded product (numfid's exact result rounded into the claim's output).
nt::MatmulKernel ideal_gemm(const char* claim) {
  const numfid::FormatSpec* out = numfid::parse_claim(claim).out;
  return [out](const numfid::TensorData& a, const numfid::TensorData& b) {
    const numfid::MatmulReference ref = numfid::matmul_reference(a, b);
    numfid::TensorData c{out, {a.shape[0], b.shape[1]}, {}, "C"};
    for (const numfid::ExactElement& e : ref.elements) c.values.push_back(e.rounded(*out));
    return c;
  };
}

TEST(MatmulConformance, CorrectlyRoundedKernelPassesUnderNarrowClaims) {
  // A mutant is required only where it moves an element beyond its bound under the claim: sums
  // of fp4 products are exact in bf16 (the truncating and bf16-sum mutants equal the correct
  // output), and an fp16 accumulator's bound holds a dropped tile of three terms.
  for (const char* claim : {"--in fp4_e2m1 --acc fp32 --out bf16", "--in fp6_e2m3 --acc fp32 --out fp16",
                            "--in fp8_e5m2 --acc fp32 --out fp8_e4m3", "--in fp16 --acc fp16 --out fp16"}) {
    SCOPED_TRACE(claim);
    const nt::MatmulKernel kernel = ideal_gemm(claim);
    int required = 0;
    for (const nt::MatmulCase& c : nt::matmul_cases({.tile = kTile, .large_k = 256})) {
      SCOPED_TRACE(c.name);
      const nt::ConformanceReport r = nt::evaluate_matmul_case(kernel, claim, c);
      EXPECT_NE(r.kernel.result.verdict.kind, numfid::TensorKind::defect) << r.kernel.result.verdict.reason;
      EXPECT_EQ(r.blind(), "");
      for (const nt::MutantResult& m : r.mutants) required += m.required && m.name != "one-element-off";
    }
    EXPECT_GT(required, 0) << "the rule must still require mutants that leave the bound";
  }
  // The fp4 case's truncation is not required, and says why.
  const nt::ConformanceReport r =
      nt::evaluate_matmul_case(ideal_gemm("--in fp4_e2m1 --acc fp32 --out bf16"), "--in fp4_e2m1 --acc fp32 --out bf16",
                               matmul_case("random_m4_k35_n5"));
  for (const nt::MutantResult& m : r.mutants)
    if (m.name == "truncating-output" || m.name == "bf16-partial-sums") {
      EXPECT_FALSE(m.required) << m.name;
      EXPECT_THAT(m.rule, HasSubstr("beyond its deterministic bound under the claim")) << m.name;
    }
}

struct Defective {
  k::GemmDefect defect;
  const char* case_name;
  const char* signature;
};

TEST(MatmulConformance, DefectiveKernelsFailWithTheirSignature) {
  for (const Defective d : {Defective{k::GemmDefect::bf16_accumulator, "random_m2_k1024_n3", "narrow-accumulator"},
                            Defective{k::GemmDefect::truncating_output, "random_m8_k1_n8", "bias"},
                            Defective{k::GemmDefect::skips_last_tile, "random_m4_k17_n4", "DEFECT"}}) {
    SCOPED_TRACE(d.case_name);
    auto kernel = [&](const numfid::TensorData& a, const numfid::TensorData& b) {
      return k::gemm_tensor(a, b, kTile, d.defect);
    };
    const nt::MatmulCase c = matmul_case(d.case_name);
    const nt::ConformanceReport r = nt::evaluate_matmul_case(kernel, kClaim, c);
    EXPECT_THAT(r.kernel, nt::IsDefect());
    ::testing::TestPartResultArray results;
    {
      ::testing::ScopedFakeTestPartResultReporter reporter(
          ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
      nt::run_matmul_case(kernel, kClaim, c);
    }
    ASSERT_EQ(results.size(), 1) << "only the kernel's verdict fails, not the sensitivity check";
    const std::string m = results.GetTestPartResult(0).message();
    EXPECT_THAT(m, HasSubstr("DEFECT"));
    EXPECT_THAT(m, HasSubstr(d.signature));
  }
}

TEST(MatmulConformance, FailuresNameTheCaseAndSeed) {
  auto broken = [](const numfid::TensorData& a, const numfid::TensorData& b) {
    return k::gemm_tensor(a, b, kTile, k::GemmDefect::truncating_output);
  };
  const nt::MatmulCase c = matmul_case("random_m8_k1_n8");
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    nt::run_matmul_case(broken, kClaim, c);
  }
  ASSERT_EQ(results.size(), 1);
  EXPECT_THAT(results.GetTestPartResult(0).message(),
              HasSubstr(fmt::format("matmul case random_m8_k1_n8 (M=8, K=1, N=8, data random, tile 16, seed {:#x})", c.seed)));
}

TEST(MatmulConformance, BlindReportNamesTheMutant) {
  nt::ConformanceReport r;
  nt::MutantResult m;
  m.name = "dropped-k-tile";
  m.what = "terms k = 16..16 left out";
  m.required = true;
  m.rule = "K = 17 > tile 16";
  m.result.verdict.reason = "all elements are bit-exact";
  r.mutants.push_back(m);
  EXPECT_EQ(r.blind(), "  mutant dropped-k-tile (terms k = 16..16 left out) passed: all elements are bit-exact — "
                       "required because K = 17 > tile 16\n");
  r.mutants[0].result.verdict.kind = numfid::TensorKind::defect;
  EXPECT_EQ(r.blind(), "");
  r.mutants[0].result.verdict.kind = numfid::TensorKind::consistent;
  r.mutants[0].required = false;
  EXPECT_EQ(r.blind(), "");
}

TEST(SoftmaxConformance, NaiveSoftmaxFailsOnLargeLogits) {
  nt::SoftmaxCase c;
  for (const nt::SoftmaxCase& s : nt::softmax_cases({.tile = kTile}))
    if (s.data == nt::DataKind::near_overflow) c = s;
  ASSERT_FALSE(c.name.empty());
  auto naive = [](const numfid::TensorData& x) { return k::softmax_tensor(x, true); };
  const nt::ConformanceReport r = nt::evaluate_softmax_case(naive, kSoftmaxClaim, c);
  EXPECT_THAT(r.kernel, nt::IsDefect());
  EXPECT_THAT(r.kernel, nt::HasSignature("non-finite"));
  const nt::ConformanceReport ok = nt::evaluate_softmax_case(good_softmax, kSoftmaxClaim, c);
  EXPECT_THAT(ok.kernel, nt::IsConsistent());
  EXPECT_EQ(ok.blind(), "");
}

// A guarded softmax (PyTorch's _safe_softmax: 0 across a fully masked row, the good kernel's
// result elsewhere) passes its suite with .masked_row = "zero"; the plain kernel (NaN there) passes
// with the default.
numfid::TensorData guarded_softmax(const numfid::TensorData& x) {
  numfid::TensorData y = k::softmax_tensor(x);
  const std::int64_t cols = x.shape.back();
  for (std::size_t r = 0; r * cols < x.values.size(); ++r) {
    bool all = true;
    for (std::int64_t j = 0; j < cols; ++j) all = all && x.values[r * cols + j].raw == 0xff80;  // bf16 -inf
    if (all)
      for (std::int64_t j = 0; j < cols; ++j) y.values[r * cols + j] = numfid::Bits{0};
  }
  return y;
}
NUMFID_SOFTMAX_CONFORMANCE(GuardedSoftmax, guarded_softmax, kSoftmaxClaim, .tile = kTile, .large_row = 256,
                           .masked_row = "zero");

TEST(SoftmaxConformance, TheFullyMaskedCaseJudgesWhatAMaskedRowGives) {
  nt::SoftmaxCase c;
  for (const nt::SoftmaxCase& s : nt::softmax_cases({.tile = kTile}))
    if (s.data == nt::DataKind::fully_masked) c = s;
  ASSERT_FALSE(c.name.empty());
  EXPECT_EQ(c.name, "fully_masked_rows4_cols17");
  // Two rows are every entry -inf.
  const numfid::TensorData x = nt::row_input(c, numfid::parse_claim(kSoftmaxClaim));
  int masked_rows = 0;
  for (std::size_t r = 0; r < 4; ++r)
    masked_rows += std::all_of(x.values.begin() + static_cast<std::ptrdiff_t>(r * 17),
                               x.values.begin() + static_cast<std::ptrdiff_t>(r * 17 + 17),
                               [](numfid::Bits b) { return b.raw == 0xff80; });
  EXPECT_EQ(masked_rows, 2);
  // The guarded kernel under the default: a defect whose signature names the option.
  const nt::ConformanceReport guarded = nt::evaluate_softmax_case(guarded_softmax, kSoftmaxClaim, c);
  EXPECT_THAT(guarded.kernel, nt::IsDefect());
  EXPECT_THAT(guarded.kernel, nt::HasSignature("masked-row-zero"));
  // The plain kernel under .masked_row = "zero": a defect (NaN where 0 is stated).
  nt::SoftmaxCase zero = c;
  zero.masked_row = "zero";
  EXPECT_THAT(nt::evaluate_softmax_case(good_softmax, kSoftmaxClaim, zero).kernel, nt::IsDefect());
  const nt::ConformanceReport ok = nt::evaluate_softmax_case(guarded_softmax, kSoftmaxClaim, zero);
  EXPECT_THAT(ok.kernel, nt::IsConsistent());
  EXPECT_THAT(ok.case_text, HasSubstr("--masked-row zero"));
  EXPECT_THAT(ok.kernel.extra_args, ::testing::ElementsAre("--masked-row", "zero"));  // the dumped reproduction
  EXPECT_EQ(ok.blind(), "");
  // Only softmax has the case (log_softmax's fully masked row must be NaN: no option states a guard).
  for (const nt::RowCase& l : nt::row_cases(numfid::RowOp::log_softmax, {.tile = kTile}))
    EXPECT_NE(l.data, nt::DataKind::fully_masked);
}

// Casts: fp32 -> bf16 (the neighbourhood of every bf16 value) and bf16 -> fp32 (exhaustive).
numfid::TensorData cast_to_bf16(const numfid::TensorData& x) {
  std::vector<std::uint16_t> y;
  for (const numfid::Bits b : x.values) y.push_back(k::bf16_rne(std::bit_cast<float>(b.raw)));
  return numfid::view(std::span<const std::uint16_t>(y), x.shape, "bf16");
}
numfid::TensorData truncate_to_bf16(const numfid::TensorData& x) {
  std::vector<std::uint16_t> y;
  for (const numfid::Bits b : x.values) y.push_back(k::bf16_rtz(std::bit_cast<float>(b.raw)));
  return numfid::view(std::span<const std::uint16_t>(y), x.shape, "bf16");
}
numfid::TensorData widen_bf16(const numfid::TensorData& x) {
  std::vector<std::uint32_t> y;
  for (const numfid::Bits b : x.values) y.push_back(b.raw << 16);
  return numfid::view(std::span<const std::uint32_t>(y), x.shape, "fp32");
}
NUMFID_CAST_CONFORMANCE(Fp32ToBf16, cast_to_bf16, "fp32", "bf16", .chunks = 4);
NUMFID_CAST_CONFORMANCE(Bf16ToFp32, widen_bf16, "bf16", "fp32", .chunks = 2);

TEST(CastConformance, ChunksCoverEveryPatternOnce) {
  std::vector<int> seen(65536, 0);
  for (const nt::CastCase& c : nt::cast_cases("bf16", "fp32", {.chunks = 7}))
    for (const numfid::Bits b : nt::cast_input(c).values) ++seen[b.raw];
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 65536);
  // fp32 -> bf16: every bf16 pattern's value is an input (with its tie and neighbours).
  std::set<std::uint32_t> inputs;
  for (const nt::CastCase& c : nt::cast_cases("fp32", "bf16", {.chunks = 3}))
    for (const numfid::Bits b : nt::cast_input(c).values) inputs.insert(b.raw);
  for (std::uint32_t p = 0; p < 65536; ++p)
    if ((p & 0x7f80u) != 0x7f80u || (p & 0x7fu) == 0) {
      ASSERT_TRUE(inputs.contains(p << 16)) << p;
    }
  EXPECT_TRUE(inputs.contains(0x3f808000u));  // 1 + 2^-8: the tie between bf16 1 and 1 + 2^-7
  EXPECT_THROW(nt::cast_cases("fp32", "tf32", {}), numfid::InputError);
}

TEST(CastConformance, TruncatingCastFailsNamingTheInputs) {
  const nt::CastCase c = nt::cast_cases("fp32", "bf16", {.chunks = 4})[1];
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    nt::run_cast_case(truncate_to_bf16, c);
  }
  ASSERT_EQ(results.size(), 1);
  const std::string m = results.GetTestPartResult(0).message();
  EXPECT_THAT(m, HasSubstr("the cast differs from numfid's correctly rounded fp32 -> bf16 (rne) in "));
  EXPECT_THAT(m, HasSubstr("; the first 8:"));
  // The first mismatch of chunk 2 (bf16 patterns 0x4000..): the tie above 2 rounds to even (2),
  // so the first difference is one fp32 ulp above that tie: 0x40008001 -> 0x4001, truncated 0x4000.
  EXPECT_THAT(m, HasSubstr("input 0x40008001 (+2.00781274: sign 0, exponent 0x80, significand 0x8001)\n"
                           "      expected 0x4001 (+2.015625: sign 0, exponent 0x80, significand 0x1)\n"
                           "      got      0x4000 (+2: sign 0, exponent 0x80, significand 0x0)"));
}

TEST(SumConformance, DefectiveSumsFailWithTheirSignature) {
  const std::vector<nt::MatmulCase> cases = nt::sum_cases({.tile = kTile, .large_k = 1024});
  EXPECT_EQ(cases.size(), 14u);
  auto bf16_acc = [](const numfid::TensorData& x) { return k::sum_tensor(x, kTile, k::GemmDefect::bf16_accumulator); };
  const nt::ConformanceReport r = nt::evaluate_sum_case(bf16_acc, kClaim, cases[5]);  // random_rows2_k1024
  EXPECT_EQ(cases[5].name, "random_rows2_k1024");
  EXPECT_THAT(r.kernel, nt::IsDefect());
  auto truncating = [](const numfid::TensorData& x) { return k::sum_tensor(x, kTile, k::GemmDefect::truncating_output); };
  const nt::ConformanceReport t = nt::evaluate_sum_case(truncating, kClaim, cases[4]);  // random_rows16_k35
  EXPECT_THAT(t.kernel, nt::IsDefect());
  EXPECT_EQ(t.kernel.command, "check sum");
  EXPECT_EQ(t.kernel.extra_args, (std::vector<std::string>{"--axis", "-1"}));
}

TEST(DotConformance, DefectiveDotsFailAndEveryCaseRequiresAMutant) {
  const std::vector<nt::MatmulCase> cases = nt::sum_cases({.tile = kTile, .large_k = 1024});
  auto bf16_acc = [](const numfid::TensorData& a, const numfid::TensorData& b) {
    return numfid::emulate_dot(a, b, std::nullopt, numfid::parse_claim("--in bf16 --acc bf16 --plan sequential --out bf16"));
  };
  const nt::ConformanceReport r = nt::evaluate_dot_case(bf16_acc, kClaim, cases[5]);  // random_rows2_k1024
  EXPECT_THAT(r.kernel, nt::IsDefect());
  EXPECT_EQ(r.kernel.command, "check dot");
  auto truncating = [](const numfid::TensorData& a, const numfid::TensorData& b) {
    return numfid::emulate_dot(a, b, std::nullopt,
                               numfid::parse_claim("--in bf16 --plan sequential --out bf16 --out-rounding rtz"));
  };
  EXPECT_THAT(nt::evaluate_dot_case(truncating, kClaim, cases[4]).kernel, nt::IsDefect());  // random_rows16_k35
  // The operands are R×K both, and row r is the diagonal of the square case's product.
  const numfid::ClaimSpec claim = numfid::parse_claim(kClaim);
  const nt::MatmulOperands ops = nt::dot_operands(cases[4], claim);
  EXPECT_EQ(ops.a.shape, (std::vector<std::int64_t>{16, 35}));
  EXPECT_EQ(ops.b.shape, (std::vector<std::int64_t>{16, 35}));
  for (const nt::MatmulCase& c : cases) {
    const nt::ConformanceReport g = nt::evaluate_dot_case(good_dot, kClaim, c);
    bool required = false;
    for (const nt::MutantResult& m : g.mutants) required = required || m.required;
    EXPECT_TRUE(required) << c.name << ": a case that requires no mutant cannot fail";
  }
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const numfid::InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(RowConformance, MethodOptionsReachTheCheck) {
  // check's --variance, --norm-form and --softmax are no claim text (parse_claim refuses them):
  // the suites take them as options, judge with them and restate them in the reproduction.
  const auto with = [](numfid::RowOp op, const nt::RowSuiteOptions& o) {
    for (const nt::RowCase& c : nt::row_cases(op, o))
      if (c.data == nt::DataKind::random) return c;
    throw std::runtime_error("no random case");
  };
  const nt::RowCase sm = with(numfid::RowOp::softmax, {.tile = kTile, .softmax = "online"});
  const nt::ConformanceReport r = nt::evaluate_row_case(good_softmax, kSoftmaxClaim, sm);
  EXPECT_THAT(r.kernel, nt::IsConsistent());
  EXPECT_THAT(nt::explain(r.kernel.result), HasSubstr("softmax in fp32 (online)"));
  EXPECT_THAT(r.kernel.extra_args, ::testing::ElementsAre("--softmax", "online"));
  EXPECT_THAT(r.case_text, HasSubstr("--softmax online"));
  const nt::RowCase ln =
      with(numfid::RowOp::layernorm, {.tile = kTile, .variance = "two-pass", .norm_form = "shifted"});
  const nt::ConformanceReport l = nt::evaluate_row_case(good_layernorm, "--in bf16 --out bf16 --compute fp32", ln);
  EXPECT_THAT(nt::explain(l.kernel.result), HasSubstr("variance: two-pass"));
  EXPECT_THAT(l.kernel.extra_args, ::testing::IsSupersetOf({"--variance", "two-pass", "--norm-form", "shifted"}));
  // An option the op does not take, or one under an --ulps claim, fails the case as check does.
  EXPECT_THAT(error_of([&] {
                nt::evaluate_row_case(good_softmax, kSoftmaxClaim, with(numfid::RowOp::softmax, {.variance = "welford"}));
              }),
              HasSubstr("option variance does not apply to softmax"));
  EXPECT_THAT(error_of([&] { nt::evaluate_row_case(good_layernorm, "--in bf16 --out bf16 --ulps 1", ln); }),
              HasSubstr("--variance describes the arithmetic of --compute F"));
}

TEST(RowConformance, Fp32SquaresRmsNormFailsNearOverflow) {
  nt::RowCase c;
  for (const nt::RowCase& r : nt::row_cases(numfid::RowOp::rmsnorm, {.tile = kTile}))
    if (r.data == nt::DataKind::near_overflow) c = r;
  ASSERT_FALSE(c.name.empty());
  auto fp32 = [](const numfid::TensorData& x) { return k::rmsnorm_tensor(x, true); };
  const nt::ConformanceReport r = nt::evaluate_row_case(fp32, "--in bf16 --out bf16 --ulps 1", c);
  EXPECT_THAT(r.kernel, nt::IsDefect());
  EXPECT_THAT(nt::evaluate_row_case(good_rmsnorm, "--in bf16 --out bf16 --ulps 1", c).kernel, nt::IsConsistent());
  // No masked case outside softmax / log_softmax.
  for (const nt::RowCase& x : nt::row_cases(numfid::RowOp::rmsnorm, {.tile = kTile})) EXPECT_NE(x.data, nt::DataKind::masked);
}

TEST(RowConformance, DerivedClaimNearOverflowRequiresOnlyWhatItsBoundsExclude) {
  // Under --compute fp32, x² of a near-overflow row may overflow and rsqrt(+inf)·x = 0 is legal:
  // the derived bound there is wider than the mutants' changes, which are not required; the
  // random rows' bounds are tight and still require them.
  for (const char* claim : {"--in bf16 --out bf16 --compute fp32", "--in bf16 --out bf16 --compute fp32 --fn-ulps 4"}) {
    SCOPED_TRACE(claim);
    for (const nt::RowCase& c : nt::row_cases(numfid::RowOp::rmsnorm, {.tile = kTile})) {
      SCOPED_TRACE(c.name);
      const nt::ConformanceReport r = nt::evaluate_row_case(good_rmsnorm, claim, c);
      EXPECT_THAT(r.kernel, nt::IsConsistent());
      EXPECT_EQ(r.blind(), "");
      if (c.data == nt::DataKind::random && c.cols > 1) {
        for (const nt::MutantResult& m : r.mutants) EXPECT_TRUE(m.required) << m.name << ": " << m.rule;
      }
    }
  }
}

TEST(RowConformance, LooseClaimRequiresNoMutant) {
  // 100 ulps of bf16 (about 0.8 relative) cannot see a 1/8 change: the rule says so rather than
  // failing; the kernel's verdict is still judged.
  const nt::ConformanceReport r =
      nt::evaluate_row_case(good_exp, "--in bf16 --out bf16 --ulps 100", nt::row_cases(numfid::RowOp::exp, {.tile = kTile})[1]);
  for (const nt::MutantResult& m : r.mutants) EXPECT_FALSE(m.required) << m.name;
  EXPECT_EQ(r.blind(), "");
}

}  // namespace
