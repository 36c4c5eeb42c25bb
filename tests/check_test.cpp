// The check pipeline as a library (tolerances/check.h): shapes, check_matmul / check_dot /
// check_sum / check_rows / tolerance against outputs constructed to be legal or defective,
// emulation with the element-index stochastic stream, and the caller's floating-point
// environment. (The claim text form and views: claim_text_test.cpp.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cfenv>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "formats/convert.h"
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif
#include "formats/error.h"
#include "numerics/profile.h"
#include "tolerances/check.h"
#include "tolerances/check_detail.h"

namespace numfid {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

/// The message of the InputError that `f` throws ("" if none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// ------------------------------------------------------------------- shapes

TEST(Shapes, MatmulAndRowwiseDot) {
  const std::vector<std::int64_t> a{2, 3}, b{3, 4}, c{2, 4}, v{3}, r{2};
  const ShapeRef A{a, "a.npy"}, B{b, "b.npy"}, C{c, "c.npy"}, V{v, "v.npy"}, R{r, "r.npy"}, A_as_c{a, "a.npy"};
  const MatmulDims s = matmul_dims(A, B, &C);
  EXPECT_EQ(s.m, 2);
  EXPECT_EQ(s.k, 3);
  EXPECT_EQ(s.n, 4);
  EXPECT_EQ(error_of([&] { matmul_dims(A, A); }),
            "shape mismatch: A (a.npy) is [2, 3] (M x K) and B (a.npy) is [2, 3] (K x N): K differs (3 vs 2)");
  EXPECT_EQ(error_of([&] { matmul_dims(A, B, &A_as_c); }),
            "shape mismatch: A (a.npy) is [2, 3] (M x K) and B (b.npy) is [3, 4] (K x N) give M x N = [2, 4], "
            "but C (a.npy) is [2, 3]");
  EXPECT_EQ(error_of([&] { matmul_dims(V, B); }),
            "shape mismatch: A (v.npy) is [3], but A must be a matrix (M x K) or a stack of them ([..., M, K])");
  EXPECT_EQ(error_of([&] { matmul_dims(A, V); }),
            "shape mismatch: B (v.npy) is [3], but B must be a matrix (K x N) or a stack of them ([..., K, N], one for "
            "each matrix of A)");
  EXPECT_EQ(rowwise_dot_dims(A, A, &R).m, 2);
  EXPECT_EQ(error_of([&] { rowwise_dot_dims(A, B); }),
            "shape mismatch: A (a.npy) is [2, 3] and B (b.npy) is [3, 4]; a row-wise dot needs equal shapes (R x K)");
  EXPECT_THAT(error_of([&] { rowwise_dot_dims(A, A, &V); }),
              HasSubstr("but C (v.npy) is [3]; it needs R = 2 elements ([2] or [2, 1])"));
}

// ------------------------------------------------------------------- check_matmul

/// Small bf16 operands: A (M×K), B (K×N) from N(0, 1).
struct Bf16Problem {
  TensorData a, b;
  Bf16Problem(std::int64_t m, std::int64_t k, std::int64_t n, std::uint64_t seed) {
    std::mt19937_64 g(seed);
    std::normal_distribution<float> nd(0, 1);
    auto fill = [&](TensorData& t, std::vector<std::int64_t> shape, const char* name) {
      t = {&bf16, std::move(shape), {}, name};
      for (std::int64_t i = 0; i < t.element_count(); ++i)
        t.values.push_back(convert(fp32, bf16, Bits{std::bit_cast<std::uint32_t>(nd(g))}).bits);
    };
    fill(a, {m, k}, "A");
    fill(b, {k, n}, "B");
  }
};

TEST(CheckMatmul, LegalOutputIsConsistentAndItsPlanPredictsIt) {
  const Bf16Problem p(8, 512, 8, 1);
  const ClaimSpec plan = parse_claim("--in bf16 --plan 'blocked(128)' --out bf16");
  const TensorData c = emulate_matmul(p.a, p.b, std::nullopt, plan);
  const CheckResult r = check_matmul(p.a, p.b, c, plan);
  EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();
  EXPECT_EQ(r.exit_code(), 0);
  ASSERT_TRUE(r.model.has_value());
  EXPECT_EQ(r.model->equal, 64);
  EXPECT_EQ(r.model->elements, 64);
  EXPECT_EQ(r.predicted, c.values);
  EXPECT_THAT(r.text(), HasSubstr("model: 64 of 64 elements equal the bit-exact output plan blocked(128) predicts"));
  EXPECT_THAT(r.json(), HasSubstr("\"verdict\": \"consistent\""));
}

TEST(CheckMatmul, ValuesThatDoNotFillTheShapeAndClaimsWithoutFormatsAreInputErrors) {
  // TensorData and ClaimSpec are public aggregates: a short value vector was read past its end
  // (a segfault, or a "proven defect" on whatever memory followed), a default ClaimSpec
  // dereferenced its null formats.
  const Bf16Problem p(4, 8, 4, 7);
  const ClaimSpec claim = parse_claim("--in bf16 --acc fp32 --out fp32");
  const TensorData c = emulate_matmul(p.a, p.b, std::nullopt, parse_claim("--in bf16 --acc fp32 --out fp32 --plan sequential"));
  TensorData short_a = p.a;
  short_a.values.resize(3);
  EXPECT_EQ(error_of([&] { check_matmul(short_a, p.b, c, claim); }), "A A: 3 values for shape [4, 8] (32 elements)");
  EXPECT_EQ(error_of([&] { matmul_reference(short_a, p.b); }), "A A: 3 values for shape [4, 8] (32 elements)");
  EXPECT_EQ(error_of([&] { emulate_matmul(short_a, p.b, std::nullopt, claim); }),
            "A A: 3 values for shape [4, 8] (32 elements)");
  TensorData short_c = c;
  short_c.values.pop_back();
  EXPECT_THAT(error_of([&] { check_matmul(p.a, p.b, short_c, claim); }), HasSubstr("15 values for shape [4, 4] (16 elements)"));
  TensorData negative = c;
  negative.shape = {-4, -4};
  EXPECT_THAT(error_of([&] { check_matmul(p.a, p.b, negative, claim); }), HasSubstr("has a negative extent"));
  TensorData no_format = c;
  no_format.format = nullptr;
  EXPECT_THAT(error_of([&] { check_matmul(p.a, p.b, no_format, claim); }), HasSubstr("no format"));
  EXPECT_EQ(error_of([&] { check_matmul(p.a, p.b, c, ClaimSpec{}); }), "check matmul: the claim states no input format (--in)");
  EXPECT_EQ(error_of([&] { check_dot(p.a, p.a, c, ClaimSpec{}); }), "check dot: the claim states no input format (--in)");
  EXPECT_EQ(error_of([&] { emulate_matmul(p.a, p.b, std::nullopt, ClaimSpec{}); }),
            "emulate matmul: the claim states no input format (--in)");
  ClaimSpec no_out = claim;
  no_out.out = nullptr;
  EXPECT_EQ(error_of([&] { check_sum(p.a, c, -1, no_out); }), "check sum: the claim states no output format (--out)");
  EXPECT_EQ(error_of([&] { check_rows(RowOp::exp, p.a, p.a, ClaimSpec{}); }), "check exp: the claim states no input format (--in)");
  TensorData short_x = p.a;
  short_x.values.resize(5);
  EXPECT_THAT(error_of([&] { check_rows(RowOp::exp, short_x, p.a, parse_claim("--in bf16 --out bf16 --ulps 1")); }),
              HasSubstr("5 values for shape [4, 8]"));
  // One count of a shape's elements for view() and every entry point: an extent product past
  // 2^63 - 1 is refused (it wrapped to a small count, possibly equal to the values given), a
  // zero extent anywhere holds no element.
  TensorData huge = c;
  huge.shape = {std::int64_t{1} << 40, std::int64_t{1} << 40, 16};
  EXPECT_EQ(error_of([&] { check_matmul(p.a, p.b, huge, claim); }),
            "C D: shape [1099511627776, 1099511627776, 16] has more than 2^63 - 1 elements");
  EXPECT_EQ(detail::element_count_of(std::vector<std::int64_t>{std::int64_t{1} << 40, std::int64_t{1} << 40, 0}, "X"), 0);
  const std::vector<float> none;
  EXPECT_EQ(error_of([&] { view(std::span<const float>(none), {2, -1}, "fp32", "X"); }), "X: shape [2, -1] has a negative extent");
  EXPECT_EQ(error_of([&] { view(std::span<const float>(none), {std::int64_t{1} << 62, 4}, "fp32", "X"); }),
            "X: shape [4611686018427387904, 4] has more than 2^63 - 1 elements");
}

TEST(CheckMatmul, Bf16AccumulatorIsADefect) {
  const Bf16Problem p(8, 1024, 8, 2);
  const TensorData c = emulate_matmul(p.a, p.b, std::nullopt, parse_claim("--in bf16 --acc bf16 --plan sequential --out bf16"));
  const CheckResult r = check_matmul(p.a, p.b, c, parse_claim("--in bf16 --acc fp32 --out bf16"));
  EXPECT_EQ(r.verdict.kind, TensorKind::defect) << r.text();
  EXPECT_EQ(r.exit_code(), 1);
  EXPECT_GT(r.verdict.counts[3], 0);
  EXPECT_FALSE(r.model.has_value());  // the claim names no model
}

// Under --cast the input cast's error (up to (2u + u²)·Σ|terms| of the uncast products) is part
// of every element's error: the growth signature allows its typical size beside the claimed
// accumulator's. A legal cast output read as "partial sums held in fewer bits than claimed" before.
TEST(CheckMatmul, TheInputCastsErrorIsNoNarrowAccumulator) {
  std::mt19937_64 g(11);
  std::normal_distribution<float> nd(0, 1);
  auto fill = [&](std::vector<std::int64_t> shape, const char* name) {
    TensorData t{&fp32, std::move(shape), {}, name};
    for (std::int64_t i = 0; i < t.element_count(); ++i) t.values.push_back(Bits{std::bit_cast<std::uint32_t>(nd(g))});
    return t;
  };
  for (const std::int64_t k : {256, 1024}) {
    SCOPED_TRACE(k);
    const TensorData a = fill({32, k}, "A"), b = fill({k, 16}, "B");
    const ClaimSpec claim = parse_claim("--in fp32 --cast bf16 --acc fp32 --out fp32");
    const auto narrow = [](const CheckResult& r) {
      return std::ranges::any_of(r.verdict.signatures,
                                 [](const Signature& s) { return s.name == "narrow-accumulator"; });
    };
    for (const char* plan : {"sequential", "pairwise"}) {
      SCOPED_TRACE(plan);
      const TensorData c = emulate_matmul(
          a, b, std::nullopt, parse_claim(fmt::format("--in fp32 --cast bf16 --acc fp32 --plan {} --out fp32", plan)));
      const CheckResult r = check_matmul(a, b, c, claim);
      EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();
      EXPECT_FALSE(narrow(r)) << r.text();
    }
    // A bf16 accumulator under the same claim: a defect; read as a narrow accumulator where its
    // growth clears the cast's (√n·u' of the partial sums against u'/√n: its median is 6.4× the
    // cast's allowance at K = 256, 13× at K = 1024).
    const TensorData c = emulate_matmul(a, b, std::nullopt,
                                        parse_claim("--in fp32 --cast bf16 --acc bf16 --plan sequential --out fp32"));
    const CheckResult r = check_matmul(a, b, c, claim);
    EXPECT_EQ(r.verdict.kind, TensorKind::defect) << r.text();
    if (k == 1024) {
      EXPECT_TRUE(narrow(r)) << r.text();
    }
  }
}

// A bf16 accumulator over 512 terms: n·u = 2, where γ_n = n·u/(1 - n·u) was +inf and every output
// (NaN, ±inf) passed as "within the bound". (1 - u)^-n - 1 = 6.4 holds for every n: a sum of these
// operands cannot come near overflow, so NaN and inf are proven defects; legal orders stay legal.
TEST(CheckMatmul, ANarrowAccumulatorsBoundIsFiniteAtAnyLength) {
  const Bf16Problem p(4, 512, 4, 9);
  const ClaimSpec claim = parse_claim("--in bf16 --acc bf16 --out bf16");
  for (const char* plan : {"sequential", "pairwise"}) {
    SCOPED_TRACE(plan);
    const TensorData c =
        emulate_matmul(p.a, p.b, std::nullopt, parse_claim(fmt::format("--in bf16 --acc bf16 --plan {} --out bf16", plan)));
    const CheckResult r = check_matmul(p.a, p.b, c, claim);
    EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();
    EXPECT_THAT(r.text(), HasSubstr("γ_n = (1 - u)^-n - 1 = 6.41"));
  }
  for (const Bits special : {Bits{0x7fc0}, Bits{0x7f80}, Bits{0xff80}}) {
    SCOPED_TRACE(fmt::format("C all {:#06x}", special.raw));
    TensorData c{&bf16, {4, 4}, std::vector<Bits>(16, special), "C"};
    const CheckResult r = check_matmul(p.a, p.b, c, claim);
    EXPECT_EQ(r.verdict.kind, TensorKind::defect) << r.text();
    EXPECT_EQ(r.verdict.counts[3], 16) << r.text();
  }
}

/// A tensor of `f` holding N(0, 1) values rounded to it (seeded by `g`).
TensorData normal_tensor(const FormatSpec& f, std::vector<std::int64_t> shape, const char* name, std::mt19937_64& g) {
  std::normal_distribution<double> nd(0, 1);
  TensorData t{&f, std::move(shape), {}, name};
  for (std::int64_t i = 0; i < t.element_count(); ++i) t.values.push_back(convert_double(f, nd(g)).bits);
  return t;
}

// B in its own format (--in-b): a product has p_A + p_B significand bits, and where the
// accumulator cannot hold them (fp8_e4m3·fp16 = 15 bits in fp16, bf16·fp32 = 32 bits in fp32)
// its first rounding is one more on its path than the any-order m - 1 or a plan's own count.
// numfid's own model of such a claim is legal under it (the bound once read A's format alone:
// at K = 1 it allowed no error and called every rounded product a provable defect).
TEST(CheckMatmul, ProductsOfAAndBFormatsThatDoNotFitTheAccumulatorAreRoundedLegally) {
  for (const char* formats :
       {"--in fp8_e4m3 --in-b fp16 --acc fp16 --out fp32", "--in bf16 --in-b fp32 --acc fp32 --out fp32"}) {
    for (const std::int64_t k : {1, 16}) {
      SCOPED_TRACE(fmt::format("{}, K = {}", formats, k));
      const ClaimSpec any = parse_claim(formats);
      std::mt19937_64 g(static_cast<std::uint64_t>(k) * 7919);
      const TensorData a = normal_tensor(*any.in, {8, k}, "A", g), b = normal_tensor(*any.in_b, {k, 8}, "B", g);
      // The data do exercise the rounding: some product is not a value of the accumulator.
      int rounded = 0;
      for (std::int64_t i = 0; i < 8 * k; ++i) {
        const double prod = to_double(*any.in, a.values[static_cast<std::size_t>(i)]) *
                            to_double(*any.in_b, b.values[static_cast<std::size_t>(i % k * 8)]);
        rounded += to_double(*any.acc, convert_double(*any.acc, prod).bits) != prod;
      }
      ASSERT_GT(rounded, 0);
      EXPECT_EQ(tolerance("matmul", k, any).bound.roundings, k);  // n = m: every product's entry rounds
      for (const char* plan : {"sequential", "pairwise"}) {
        const ClaimSpec planned = parse_claim(fmt::format("{} --plan {}", formats, plan));
        const TensorData c = emulate_matmul(a, b, std::nullopt, planned);
        for (const ClaimSpec* claim : {&planned, &any}) {
          const CheckResult r = check_matmul(a, b, c, *claim);
          EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << claim->text() << "\n" << r.text();
          EXPECT_THAT(r.text(), HasSubstr(fmt::format("in {}, in-b {},", any.in->name, any.in_b->name)));
        }
      }
    }
  }
}

/// A claim that flushes (ftz) or reads subnormal inputs as zero (daz) is judged with bounds that
/// allow what the flushing does: the model's own output passes, and the same output under the
/// claim without the flag is a provable defect (so the allowance is what makes it legal).
TEST(CheckMatmul, FlushToZeroAndDazClaimsCoverTheirOwnModel) {
  // bf16 2^-65 · 2^-65 = 2^-130: products in fp32's subnormal range, 64 of them sum to 2^-124
  // (normal); a flushing accumulator loses every one. Rows 1-3 hold N(0, 1) data beside them.
  Bf16Problem p(4, 64, 4, 11);
  for (std::int64_t k = 0; k < 64; ++k) {
    p.a.values[static_cast<std::size_t>(k)] = Bits{0x1F00};      // row 0 of A: 2^-65
    p.b.values[static_cast<std::size_t>(k * 4)] = Bits{0x1F00};  // column 0 of B: 2^-65
  }
  const ClaimSpec ftz = parse_claim("--in bf16 --acc fp32 --out fp32 --plan sequential --ftz");
  const TensorData c = emulate_matmul(p.a, p.b, std::nullopt, ftz);
  EXPECT_EQ(c.values[0], Bits{0});  // every partial sum of element (0, 0) flushed
  const CheckResult r = check_matmul(p.a, p.b, c, ftz);
  EXPECT_NE(r.verdict.kind, TensorKind::defect) << r.text();
  EXPECT_THAT(r.text(), HasSubstr("flush to zero (ftz): + (2m - 1)"));
  EXPECT_THAT(r.claim_text, HasSubstr("acc fp32 rne ftz"));
  const CheckResult strict = check_matmul(p.a, p.b, c, parse_claim("--in bf16 --acc fp32 --out fp32 --plan sequential"));
  EXPECT_EQ(strict.verdict.kind, TensorKind::defect) << strict.text();
  // Sharp where it matters: a bf16 accumulator on the normal rows is still caught under --ftz.
  Bf16Problem q(4, 1024, 4, 12);
  const TensorData narrow =
      emulate_matmul(q.a, q.b, std::nullopt, parse_claim("--in bf16 --acc bf16 --out fp32 --plan sequential"));
  EXPECT_EQ(check_matmul(q.a, q.b, narrow, ftz).verdict.kind, TensorKind::defect);

  // DAZ: a subnormal bf16 input (2^-127) times 2^120 is a term of 2^-7 that a DAZ unit drops.
  Bf16Problem d(2, 64, 2, 13);
  d.a.values[0] = Bits{0x0040};                         // A[0, 0] = 2^-127 (subnormal)
  d.b.values[0] = Bits{static_cast<std::uint16_t>((127 + 120) << 7)};  // B[0, 0] = 2^120
  const auto key = [](const char* k, const char* v) {
    return fmt::format("  {}:\n    value: {}\n    assumed: \"a test's profile\"\n", k, v);
  };
  const std::string yaml = "name: daz-test\nversion: 1\nsummary: \"test\"\nmodel: plan\nplan:\n" + key("order", "sequential") +
                           "accumulator:\n" + key("format", "fp32") + key("rounding", "rne") + key("daz", "DAZ") +
                           key("products", "exact") + "output:\n" + key("rounding", "rne");
  const auto with_daz = [&](bool on) {
    ClaimSpec cs = parse_claim("--in bf16 --out fp32");
    std::string text = yaml;
    text.replace(text.find("DAZ"), 3, on ? "true" : "false");
    cs.profile = std::make_shared<const Profile>(load_profile_text(text, "daz-test.yaml"));
    return cs;
  };
  const TensorData cd = emulate_matmul(d.a, d.b, std::nullopt, with_daz(true));
  const CheckResult rd = check_matmul(d.a, d.b, cd, with_daz(true));
  EXPECT_NE(rd.verdict.kind, TensorKind::defect) << rd.text();
  EXPECT_THAT(rd.text(), HasSubstr("inputs read as zero (daz)"));
  EXPECT_EQ(check_matmul(d.a, d.b, cd, with_daz(false)).verdict.kind, TensorKind::defect);
  // A sum under DAZ: 64 subnormal fp32 inputs 2^-130 read as zero give 0 against 2^-124.
  TensorData x{&fp32, {2, 64}, {}, "X"};
  for (int i = 0; i < 128; ++i) x.values.push_back(Bits{i < 64 ? 0x00080000u : 0x3f800000u});  // 2^-130, then 1.0
  const ClaimSpec sum_daz = parse_claim("--in fp32 --out fp32 --plan sequential --daz");
  const TensorData xs = emulate_sum(x, 1, sum_daz);
  EXPECT_EQ(xs.values[0], Bits{0});
  const CheckResult rs = check_sum(x, xs, 1, sum_daz);
  EXPECT_NE(rs.verdict.kind, TensorKind::defect) << rs.text();
  EXPECT_THAT(rs.text(), HasSubstr("inputs read as zero (daz): + 64 terms"));
  EXPECT_EQ(check_sum(x, xs, 1, parse_claim("--in fp32 --out fp32 --plan sequential")).verdict.kind, TensorKind::defect);
  // Without subnormal inputs the allowance is 0: the bound is the one without DAZ.
  const TensorData plain = emulate_matmul(q.a, q.b, std::nullopt, with_daz(true));
  EXPECT_EQ(check_matmul(q.a, q.b, plain, with_daz(true)).verdict.worst[0].det_bound,
            check_matmul(q.a, q.b, plain, with_daz(false)).verdict.worst[0].det_bound);
}

/// `tol`'s same-sign equivalents (|out − exact| <= atol + rtol·|exact| when every term has one
/// sign) hold for the model's own outputs: positive data under several plans and outputs, and a
/// flushing accumulator whose tiny products all flush (0 against 2^-124: atol = 0, as `tol` once
/// printed, fails it).
TEST(Tolerance, SameSignEquivalentsHoldForLegalOutputs) {
  int failures = 0;
  for (const char* text : {"--in bf16 --plan sequential --out fp32", "--in bf16 --plan pairwise --out bf16",
                           "--in bf16 --acc bf16 --plan 'blocked(16)' --out bf16", "--in fp8_e4m3 --plan reverse --out fp16",
                           "--in bf16 --plan sequential --ftz --out fp32"}) {
    SCOPED_TRACE(text);
    const ClaimSpec claim = parse_claim(text);
    Bf16Problem p(4, 256, 4, 21);
    TensorData a = p.a, b = p.b;
    a.format = b.format = claim.in;
    const bool tiny = claim.acc_ftz;
    for (Bits& x : a.values) x = tiny ? Bits{0x1F00} : convert_double(*claim.in, std::fabs(to_double(bf16, x))).bits;
    for (Bits& x : b.values) x = tiny ? Bits{0x1F00} : convert_double(*claim.in, std::fabs(to_double(bf16, x))).bits;
    const ToleranceResult t = tolerance("matmul", 256, claim);
    const TensorData c = emulate_matmul(a, b, std::nullopt, claim);
    const MatmulReference ref = matmul_reference(a, b);
    for (std::size_t e = 0; e < c.values.size(); ++e) {
      const double o = to_double(*claim.out, c.values[e]), s = ref.elements[e].exact;
      const double limit = t.atol_same_sign + t.rtol_deterministic * std::fabs(s);
      if (!(std::fabs(o - s) <= limit) && ++failures <= 5)
        ADD_FAILURE() << fmt::format("element {}: |{:a} - {:a}| = {:a} > atol {:a} + rtol {:.6g}·|exact|", e, o, s,
                                     std::fabs(o - s), t.atol_same_sign, t.rtol_deterministic);
    }
    if (tiny) {
      EXPECT_GE(t.atol_same_sign, 0x1p-124);
    }
  }
}

// A partial sum that overflows under round to nearest is +inf or -inf by its sign and stays so:
// where the positive terms alone can overflow, +inf is legal; -inf, NaN or a saturated finite
// value (a saturating accumulator) is not — the bound was vacuous there before (any value passed).
TEST(CheckMatmul, AnOverflowingSumIsTheInfinityOfItsSign) {
  // 8 products of 2^127 each (bf16 2^63 · 2^64): exact 2^130, beyond fp32's 2^128.
  const std::vector<float> av(8, 0x1p63f), bv(8, 0x1p64f);
  const TensorData a = view(std::span<const float>(av), {1, 8}, "bf16", "A");
  const TensorData b = view(std::span<const float>(bv), {8, 1}, "bf16", "B");
  const ClaimSpec claim = parse_claim("--in bf16 --acc fp32 --out fp32");
  const auto judge_one = [&](float c, const ClaimSpec& cl) {
    const std::vector<float> cv{c};
    return check_matmul(a, b, view(std::span<const float>(cv), {1, 1}, "fp32", "C"), cl);
  };
  const float max = 0x1.fffffep127f;
  EXPECT_EQ(judge_one(INFINITY, claim).verdict.kind, TensorKind::consistent);
  EXPECT_THAT(judge_one(INFINITY, claim).verdict.reason, HasSubstr("1 of 1 elements' partial sums may overflow the fp32"));
  for (const float c : {-INFINITY, NAN, max, 0x1p120f}) {
    SCOPED_TRACE(c);
    EXPECT_EQ(judge_one(c, claim).verdict.kind, TensorKind::defect) << judge_one(c, claim).text();
  }
  // Mixed signs (+2^127, -2^127, ...: exact 0): either infinity and NaN (inf - inf) are legal.
  std::vector<float> mixed = av;
  for (std::size_t k = 1; k < mixed.size(); k += 2) mixed[k] = -mixed[k];
  const TensorData am = view(std::span<const float>(mixed), {1, 8}, "bf16", "A");
  for (const float c : {INFINITY, -INFINITY, NAN, 0.0f}) {
    const std::vector<float> cv{c};
    EXPECT_NE(check_matmul(am, b, view(std::span<const float>(cv), {1, 1}, "fp32", "C"), claim).verdict.kind,
              TensorKind::defect)
        << c;
  }
  // Rounding toward zero overflows to the largest finite value and the sum goes on from it: no
  // finite bound there, and the saturated value is legal.
  EXPECT_NE(judge_one(max, parse_claim("--in bf16 --acc fp32 --acc-rounding rtz --out fp32")).verdict.kind,
            TensorKind::defect);
}

// An infinite term meeting a partial sum of the finite ones overflowed to the other infinity:
// [2, 2, -inf]·[3e38, 3e38, 1] is exactly -inf, but summed in order 6e38 overflows to +inf and
// +inf + (-inf) = NaN (numpy's, torch's and `emulate --plan sequential`'s fp32 result). NaN is
// legal there, under any order and under the plan; -inf too; +inf never. With small finite terms
// ([2, 2, -inf]·[3, 3, 1]) no partial sum can overflow: NaN is a defect, -inf legal.
TEST(CheckMatmul, AnInfiniteTermMeetingAnOverflowedPartialSumMayGiveNaN) {
  const std::vector<float> av{2.0f, 2.0f, -INFINITY}, big{3e38f, 3e38f, 1.0f}, small{3.0f, 3.0f, 1.0f};
  const TensorData a = view(std::span<const float>(av), {1, 3}, "fp32", "A");
  const auto judge_one = [&](const std::vector<float>& bv, float c, const char* claim) {
    const std::vector<float> cv{c};
    return check_matmul(a, view(std::span<const float>(bv), {3, 1}, "fp32", "B"),
                        view(std::span<const float>(cv), {1, 1}, "fp32", "C"), parse_claim(claim));
  };
  for (const char* claim : {"--in fp32 --out fp32", "--in fp32 --out fp32 --plan sequential",
                            "--in fp32 --out fp32 --plan pairwise", "--in fp32 --out fp32 --plan reverse"}) {
    SCOPED_TRACE(claim);
    for (const float c : {NAN, -NAN, -INFINITY})
      EXPECT_EQ(judge_one(big, c, claim).verdict.kind, TensorKind::consistent) << judge_one(big, c, claim).text();
    EXPECT_EQ(judge_one(big, INFINITY, claim).verdict.kind, TensorKind::defect);
    EXPECT_EQ(judge_one(small, NAN, claim).verdict.kind, TensorKind::defect) << judge_one(small, NAN, claim).text();
    EXPECT_EQ(judge_one(small, -INFINITY, claim).verdict.kind, TensorKind::consistent);
  }
  // The plan's own output is that NaN.
  const ClaimSpec seq = parse_claim("--in fp32 --out fp32 --plan sequential");
  const TensorData c = emulate_matmul(a, view(std::span<const float>(big), {3, 1}, "fp32", "B"), std::nullopt, seq);
  EXPECT_TRUE(std::isnan(to_double(fp32, c.values[0])));
  // Finite terms of the infinity's own sign cannot meet it as the other infinity: NaN is a
  // defect for [-2, -2, -inf]·[3e38, 3e38, 1], where every partial sum is negative.
  const std::vector<float> an{-2.0f, -2.0f, -INFINITY}, nan_c{NAN};
  EXPECT_EQ(check_matmul(view(std::span<const float>(an), {1, 3}, "fp32", "A"),
                         view(std::span<const float>(big), {3, 1}, "fp32", "B"),
                         view(std::span<const float>(nan_c), {1, 1}, "fp32", "C"), parse_claim("--in fp32 --out fp32"))
                .verdict.kind,
            TensorKind::defect);
  // The same rule in a sum along a row: [3e38, 3e38, -inf].
  const std::vector<float> xv{3e38f, 3e38f, -INFINITY}, xs{3.0f, 3.0f, -INFINITY};
  const ClaimSpec sum_claim = parse_claim("--in fp32 --out fp32");
  EXPECT_EQ(check_sum(view(std::span<const float>(xv), {1, 3}, "fp32", "X"),
                      view(std::span<const float>(nan_c), {1}, "fp32", "C"), 1, sum_claim)
                .verdict.kind,
            TensorKind::consistent);
  EXPECT_EQ(check_sum(view(std::span<const float>(xs), {1, 3}, "fp32", "X"),
                      view(std::span<const float>(nan_c), {1}, "fp32", "C"), 1, sum_claim)
                .verdict.kind,
            TensorKind::defect);
}

// --expect bit-exact compares NaN as NaN (NanPolicy::any_nan): IEEE 754 leaves the sign of an
// invalid operation's NaN to the platform (x86's default NaN is 0xffc00000, the model's
// 0x7fc00000), so a NaN of the other sign or payload matches the model's NaN; a number does not.
TEST(CheckMatmul, ExpectBitExactTakesAnyNaNForTheModelsNaN) {
  const std::vector<float> av{2.0f, 2.0f, -INFINITY}, bv{3e38f, 3e38f, 1.0f};
  const TensorData a = view(std::span<const float>(av), {1, 3}, "fp32", "A");
  const TensorData b = view(std::span<const float>(bv), {3, 1}, "fp32", "B");
  const ClaimSpec claim = parse_claim("--in fp32 --out fp32 --plan sequential --expect bit-exact");
  const TensorData model = emulate_matmul(a, b, std::nullopt, claim);
  ASSERT_TRUE(std::isnan(to_double(fp32, model.values[0])));
  for (const std::uint32_t bits : {model.values[0].raw, model.values[0].raw ^ 0x80000000u, 0xffc00000u, 0x7fc00001u}) {
    const TensorData c{&fp32, {1, 1}, {Bits{bits}}, "C"};
    const CheckResult r = check_matmul(a, b, c, claim);
    EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << fmt::format("{:#010x}\n", bits) << r.text();
    EXPECT_THAT(r.verdict.reason, HasSubstr("matches the model bit for bit"));
  }
  const TensorData minf{&fp32, {1, 1}, {Bits{0xff800000u}}, "C"};
  EXPECT_EQ(check_matmul(a, b, minf, claim).verdict.kind, TensorKind::defect);
  // A row-wise dot and a sum of the same terms, the same policy.
  const TensorData ad = view(std::span<const float>(av), {1, 3}, "fp32", "A");
  const TensorData bd = view(std::span<const float>(bv), {1, 3}, "fp32", "B");
  const TensorData neg_nan{&fp32, {1}, {Bits{0xffc00000u}}, "C"};
  EXPECT_EQ(check_dot(ad, bd, neg_nan, claim).verdict.kind, TensorKind::consistent);
  const std::vector<float> xv{3e38f, 3e38f, -INFINITY};
  EXPECT_EQ(check_sum(view(std::span<const float>(xv), {1, 3}, "fp32", "X"), neg_nan, 1, claim).verdict.kind,
            TensorKind::consistent);
}

// An accumulator without inf (OCP E4M3: an overflow under round to nearest is NaN) gives NaN
// where a partial sum overflows, never ±inf; every plan's own output is legal, an infinity is not.
TEST(CheckMatmul, AnAccumulatorWithoutInfinityOverflowsToNaN) {
  // K = 8 (γ_8 of E4M3 is finite: 8·2^-4 < 1). Rows: all +128 (exact 1024 > 448), +128 ×4 then
  // −128 ×4 (exact 0; a positive-first order overflows), −128 (exact −1024), 1..8 (36: no overflow).
  std::vector<float> av;
  for (int k = 0; k < 8; ++k) av.push_back(128.0f);
  for (int k = 0; k < 8; ++k) av.push_back(k < 4 ? 128.0f : -128.0f);
  for (int k = 0; k < 8; ++k) av.push_back(-128.0f);
  for (int k = 0; k < 8; ++k) av.push_back(static_cast<float>(k + 1));
  const std::vector<float> bv(8, 1.0f);
  const TensorData a = view(std::span<const float>(av), {4, 8}, "bf16", "A");
  const TensorData b = view(std::span<const float>(bv), {8, 1}, "bf16", "B");
  const ClaimSpec claim = parse_claim("--in bf16 --acc fp8_e4m3 --out fp32");
  for (const char* plan : {"sequential", "pairwise", "reverse", "blocked(2)"}) {
    SCOPED_TRACE(plan);
    const TensorData c =
        emulate_matmul(a, b, std::nullopt, parse_claim(fmt::format("--in bf16 --acc fp8_e4m3 --out fp32 --plan {}", plan)));
    const CheckResult r = check_matmul(a, b, c, claim);
    EXPECT_NE(r.verdict.kind, TensorKind::defect) << r.text();
    EXPECT_THAT(r.verdict.reason, HasSubstr("overflow the fp8_e4m3 accumulator: NaN is legal there"));
  }
  const auto judged = [&](std::vector<float> cv) {
    return check_matmul(a, b, view(std::span<const float>(cv), {4, 1}, "fp32", "C"), claim);
  };
  EXPECT_NE(judged({NAN, NAN, NAN, 36.0f}).verdict.kind, TensorKind::defect);
  EXPECT_NE(judged({NAN, 0.0f, NAN, 36.0f}).verdict.kind, TensorKind::defect);
  // ±inf cannot come out of this accumulator, and a finite value must meet the finite bound.
  for (const std::vector<float>& cv : {std::vector<float>{INFINITY, NAN, NAN, 36.0f}, {NAN, NAN, -INFINITY, 36.0f},
                                       {NAN, INFINITY, NAN, 36.0f}, {-448.0f, NAN, NAN, 36.0f}, {NAN, NAN, NAN, NAN}}) {
    SCOPED_TRACE(::testing::PrintToString(cv));
    EXPECT_EQ(judged(cv).verdict.kind, TensorKind::defect) << judged(cv).text();
  }
}

// The lean rule (docs/verdict.md §4.2) on data whose exact values sit just above bf16 midpoints:
// the fp32 sum drops the 2^-40 term and lands on the midpoint, which round-to-even breaks
// downward for half of them — a lean of -0.25 ulp that the claim's own arithmetic makes (found
// by SelfConsistency with seed 102 on a scaled fp4 GEMM). Not a probable defect.
TEST(CheckMatmul, ALeanTheClaimsArithmeticMakesOnStructuredDataIsNoDefect) {
  std::vector<float> av;
  for (int i = 0; i < 64; ++i) {
    av.push_back(1.0f + static_cast<float>(2 * i + 1) * 0x1p-8f);  // a bf16 midpoint, exact in fp32
    av.push_back(0x1p-40f);
  }
  const std::vector<float> bv{1.0f, 1.0f};
  const TensorData a = view(std::span<const float>(av), {64, 2}, "fp32", "A");
  const TensorData b = view(std::span<const float>(bv), {2, 1}, "fp32", "B");
  const ClaimSpec claim = parse_claim("--in fp32 --acc fp32 --out bf16");
  for (const char* plan : {"sequential", "reverse"}) {
    SCOPED_TRACE(plan);
    const TensorData c = emulate_matmul(a, b, std::nullopt, parse_claim(fmt::format("--in fp32 --plan {} --out bf16", plan)));
    const CheckResult r = check_matmul(a, b, c, claim);
    EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();
    EXPECT_EQ(r.verdict.counts[0], 32) << "half of the ties broken away from the correctly rounded result";
  }
}

// fp4 and fp6 have no inf or NaN: beyond ±max every real saturates to ±max. The saturated
// value is the correctly rounded result (no probable-defect rule may read it as an error), a
// smaller one is a proven defect.
TEST(CheckMatmul, ASaturatingOutputFormatTakesEveryValueBeyondItsMaximum) {
  const std::vector<float> av(8, 1.5f), bv(8, 2.0f);  // exact 24, fp4_e2m1's largest value 6
  const TensorData a = view(std::span<const float>(av), {1, 8}, "bf16", "A");
  const TensorData b = view(std::span<const float>(bv), {8, 1}, "bf16", "B");
  for (const char* claim : {"--in bf16 --acc fp32 --out fp4_e2m1", "--in bf16 --plan sequential --out fp4_e2m1"}) {
    SCOPED_TRACE(claim);
    const auto judged = [&](float c) {
      const std::vector<float> cv{c};
      return check_matmul(a, b, view(std::span<const float>(cv), {1, 1}, "fp4_e2m1", "C"), parse_claim(claim));
    };
    const CheckResult six = judged(6.0f);
    EXPECT_EQ(six.verdict.kind, TensorKind::consistent) << six.text();
    EXPECT_EQ(six.verdict.counts[0], 1);
    EXPECT_EQ(judged(4.0f).verdict.kind, TensorKind::defect);
    EXPECT_FALSE(judged(4.0f).verdict.probable) << "outside the deterministic bound: proven";
  }
}

// --saturate: the output cast clamps to ±max finite (OCP OFP8's saturating mode, CUDA's
// .satfinite). E4M3's largest value is 448 (0x7e): exact results of ±1024 saturate to 0x7e /
// 0xfe, 464 (= 448 + half its spacing, which IEEE's rule overflows: NaN in E4M3) to 0x7e, 36
// is 0x61. Expected patterns by hand (OCP OFP8 v1.0 table), not from the code under test.
TEST(CheckMatmul, SaturateClaimsAnOutputCastThatClampsToTheRange) {
  std::vector<float> av;
  for (int k = 0; k < 8; ++k) av.push_back(128.0f);                // 1024
  for (int k = 0; k < 8; ++k) av.push_back(-128.0f);               // -1024
  for (int k = 0; k < 8; ++k) av.push_back(k < 7 ? 64.0f : 16.0f);  // 464
  for (int k = 0; k < 8; ++k) av.push_back(static_cast<float>(k + 1));  // 36
  const std::vector<float> bv(8, 1.0f);
  const TensorData a = view(std::span<const float>(av), {4, 8}, "bf16", "A");
  const TensorData b = view(std::span<const float>(bv), {8, 1}, "bf16", "B");
  const ClaimSpec sat = parse_claim("--in bf16 --acc fp32 --out fp8_e4m3 --saturate");
  const ClaimSpec ieee = parse_claim("--in bf16 --acc fp32 --out fp8_e4m3");
  EXPECT_EQ(sat.text(), "--in bf16 --out fp8_e4m3 --saturate");
  const auto judged = [&](std::vector<std::uint8_t> cv, const ClaimSpec& claim) {
    return check_matmul(a, b, view(std::span<const std::uint8_t>(cv), {4, 1}, "fp8_e4m3", "C"), claim);
  };
  for (const char* plan : {"sequential", "pairwise", "reverse"}) {
    SCOPED_TRACE(plan);
    const TensorData c = emulate_matmul(a, b, std::nullopt,
                                        parse_claim(fmt::format("--in bf16 --plan {} --out fp8_e4m3 --saturate", plan)));
    EXPECT_EQ(c.values, (std::vector<Bits>{Bits{0x7e}, Bits{0xfe}, Bits{0x7e}, Bits{0x61}}));
    const CheckResult r = check_matmul(a, b, c, sat);
    EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();
    EXPECT_EQ(r.verdict.counts[0], 4) << "the saturated values are the correctly rounded results";
    EXPECT_THAT(r.claim_text, HasSubstr("out fp8_e4m3 rne saturating"));
    // Without --saturate the same output is a proven defect (448 where the exact result is 1024),
    // and the IEEE cast's NaN is one under --saturate.
    EXPECT_EQ(check_matmul(a, b, c, ieee).verdict.kind, TensorKind::defect);
    EXPECT_THAT(check_matmul(a, b, c, ieee).verdict.reason,
                HasSubstr("2 of them are ±448 where the exact result overflows fp8_e4m3: the output cast saturates"));
    EXPECT_EQ(check_matmul(a, b, emulate_matmul(a, b, std::nullopt,
                                                parse_claim(fmt::format("--in bf16 --plan {} --out fp8_e4m3", plan))),
                           sat)
                  .verdict.kind,
              TensorKind::defect);
  }
  for (const std::vector<std::uint8_t>& cv : {std::vector<std::uint8_t>{0x7d, 0xfe, 0x7e, 0x61},  // 416 for 1024
                                              {0x7e, 0xfe, 0x7d, 0x61},                           // 416 for 464
                                              {0x7f, 0xfe, 0x7e, 0x61},                           // NaN for 1024
                                              {0x7e, 0x7e, 0x7e, 0x61},                           // +448 for -1024
                                              {0x7e, 0xfe, 0x7e, 0x62}}) {                        // 40 for 36
    SCOPED_TRACE(::testing::PrintToString(cv));
    const CheckResult r = judged(cv, sat);
    EXPECT_EQ(r.verdict.kind, TensorKind::defect) << r.text();
    EXPECT_FALSE(r.verdict.probable);
  }
  // The error of a saturated element is measured from the exact value clamped to the range.
  const CheckResult off = judged({0x7d, 0xfe, 0x7e, 0x61}, sat);
  ASSERT_FALSE(off.verdict.worst.empty());
  EXPECT_EQ(off.verdict.worst[0].index, 0);
  EXPECT_EQ(off.verdict.worst[0].error, -32.0);

  // fp16: 65504 is the largest value (0x7bff); a saturating cast never gives +inf (0x7c00).
  const std::vector<float> big(8, 0x1p15f);  // 8 · 2^15 · 1 = 2^18 > 65504
  const TensorData abig = view(std::span<const float>(big), {1, 8}, "bf16", "A");
  const auto fp16_out = [&](std::uint16_t c) {
    const std::vector<std::uint16_t> cv{c};
    return check_matmul(abig, b, view(std::span<const std::uint16_t>(cv), {1, 1}, "fp16", "C"),
                        parse_claim("--in bf16 --acc fp32 --out fp16 --saturate"));
  };
  EXPECT_EQ(fp16_out(0x7bff).verdict.kind, TensorKind::consistent);
  EXPECT_EQ(fp16_out(0x7c00).verdict.kind, TensorKind::defect);
  EXPECT_EQ(fp16_out(0x7bfe).verdict.kind, TensorKind::defect);
}

// Saturation after an accumulator that overflows: 8 products of 2^127 (exact 2^130) overflow
// fp32 to +inf, which the saturating cast turns into fp32's largest value; with mixed signs
// (exact 0) a partial sum may overflow to either infinity (±max after the cast) or meet the
// other (NaN, which stays NaN). A saturating cast never gives ±inf.
TEST(CheckMatmul, SaturatedOverflowOfThePartialSumsIsTheLargestValueOfItsSign) {
  const std::vector<float> av(8, 0x1p63f), bv(8, 0x1p64f);
  std::vector<float> mixed = av;
  for (std::size_t k = 1; k < mixed.size(); k += 2) mixed[k] = -mixed[k];
  const TensorData b = view(std::span<const float>(bv), {8, 1}, "bf16", "B");
  const ClaimSpec claim = parse_claim("--in bf16 --acc fp32 --out fp32 --saturate");
  const auto judged = [&](const std::vector<float>& row, float c) {
    const std::vector<float> cv{c};
    return check_matmul(view(std::span<const float>(row), {1, 8}, "bf16", "A"), b,
                        view(std::span<const float>(cv), {1, 1}, "fp32", "C"), claim);
  };
  const float max = 0x1.fffffep127f;
  EXPECT_EQ(judged(av, max).verdict.kind, TensorKind::consistent) << judged(av, max).text();
  for (const float c : {INFINITY, -max, NAN, 0x1p120f}) {
    SCOPED_TRACE(c);
    EXPECT_EQ(judged(av, c).verdict.kind, TensorKind::defect) << judged(av, c).text();
  }
  for (const float c : {max, -max, NAN, 0.0f}) {
    SCOPED_TRACE(c);
    EXPECT_NE(judged(mixed, c).verdict.kind, TensorKind::defect) << judged(mixed, c).text();
  }
  for (const float c : {INFINITY, -INFINITY}) {
    SCOPED_TRACE(c);
    EXPECT_EQ(judged(mixed, c).verdict.kind, TensorKind::defect) << judged(mixed, c).text();
  }
}

// Every model's saturated output under --saturate is legal: bf16 N(0, 1) operands scaled so
// that about a third of the results lie beyond the output's range, each plan, tensor-core and
// Tensor Engine profile, output rounding and a row-wise dot and a sum, emulated with --saturate
// and checked under the same claim (the probable-defect rules included): no false alarm, every
// saturated element bit-exact.
TEST(CheckMatmul, SaturatedOutputsOfEveryModelAreLegal) {
  const Bf16Problem p(16, 64, 16, 7);
  for (const auto& [out, scale] : {std::pair{"fp8_e4m3", 0x1p5f}, std::pair{"fp8_e5m2", 0x1p13f}, std::pair{"fp16", 0x1p13f}}) {
    TensorData a = p.a;
    for (Bits& v : a.values)  // a power of two: exact in bf16
      v = convert(fp32, bf16, Bits{std::bit_cast<std::uint32_t>(static_cast<float>(to_double(bf16, v)) * scale)}).bits;
    for (const std::string model : {"--plan sequential", "--plan pairwise", "--plan 'blocked(8)' --acc-rounding rtz",
                                    "--plan reverse --out-rounding rtz", "--plan sequential --out-rounding rup",
                                    "--profile nvidia-h100-tc", "--profile trn2"}) {
      const std::string text = fmt::format("--in bf16 {} --out {} --saturate", model, out);
      SCOPED_TRACE(text);
      const ClaimSpec claim = parse_claim(text);
      const TensorData c = emulate_matmul(a, p.b, std::nullopt, claim);
      std::int64_t saturated = 0;
      for (const Bits v : c.values) saturated += std::fabs(to_double(*c.format, v)) == max_finite(*c.format);
      EXPECT_GT(saturated, 8);
      const CheckResult r = check_matmul(a, p.b, c, claim);
      EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();
      EXPECT_EQ(r.model->equal, r.model->elements);
      // The same output under the claim without --saturate: the saturated elements are defects
      // where IEEE's overflow goes to ±inf (round to nearest; toward zero it is ±max already).
      const ClaimSpec ieee = parse_claim(fmt::format("--in bf16 {} --out {}", model, out));
      if (claim.output_rounding() == Rounding::rne) {
        EXPECT_EQ(check_matmul(a, p.b, c, ieee).verdict.kind, TensorKind::defect);
      }
    }
    const ClaimSpec dot = parse_claim(fmt::format("--in bf16 --plan pairwise --out {} --saturate", out));
    const TensorData bt = [&] {  // B as 16 rows of 64 (a row-wise dot of A's rows with B's)
      TensorData t{&bf16, {16, 64}, {}, "B"};
      for (std::int64_t i = 0; i < 16; ++i)
        for (std::int64_t k = 0; k < 64; ++k) t.values.push_back(p.b.values[static_cast<std::size_t>(k * 16 + i)]);
      return t;
    }();
    const CheckResult rd = check_dot(a, bt, emulate_dot(a, bt, std::nullopt, dot), dot);
    EXPECT_EQ(rd.verdict.kind, TensorKind::consistent) << rd.text();
    const ClaimSpec sum = parse_claim(fmt::format("--in bf16 --plan sequential --out {} --saturate", out));
    const CheckResult rs = check_sum(a, emulate_sum(a, 1, sum), 1, sum);
    EXPECT_EQ(rs.verdict.kind, TensorKind::consistent) << rs.text();
  }
}

// A tensor-core profile's --acc picks the unit by its results: cuBLAS's fp16 GEMM with fp32
// accumulation (torch's default) on H100 is the fp16 -> fp32 unit, its result rounded to fp16;
// without --acc an fp16 output names the fp16 -> fp16 unit (the fp16-accumulating instruction).
// The emulation under --acc fp32 --out fp16 is the --out fp32 emulation cast to fp16 by the
// format layer (rne), element for element.
TEST(CheckMatmul, ATensorCoreProfilesAccPicksTheUnitWhoseResultsAreCastToTheOutput) {
  Bf16Problem p(8, 2048, 8, 21);
  for (TensorData* t : {&p.a, &p.b}) {
    t->format = &fp16;
    for (Bits& v : t->values) v = convert(bf16, fp16, v).bits;
  }
  const ClaimSpec acc32 = parse_claim("--in fp16 --profile nvidia-h100-tc --acc fp32 --out fp16");
  EXPECT_EQ(acc32.text(), "--in fp16 --profile nvidia-h100-tc --acc fp32 --out fp16");
  const TensorData c = emulate_matmul(p.a, p.b, std::nullopt, acc32);
  const TensorData wide = emulate_matmul(p.a, p.b, std::nullopt, parse_claim("--in fp16 --profile nvidia-h100-tc --out fp32"));
  ASSERT_EQ(c.values.size(), wide.values.size());
  for (std::size_t e = 0; e < c.values.size(); ++e) ASSERT_EQ(c.values[e], convert(fp32, fp16, wide.values[e]).bits) << e;
  ClaimSpec exact = acc32;
  exact.expect_bit_exact = true;
  const CheckResult r = check_matmul(p.a, p.b, c, exact);
  EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();
  EXPECT_THAT(r.claim_text, HasSubstr("fp16->fp32"));
  // The same output against the fp16-accumulating unit's model: it differs.
  ClaimSpec fp16_unit = parse_claim("--in fp16 --profile nvidia-h100-tc --out fp16 --expect bit-exact");
  EXPECT_EQ(check_matmul(p.a, p.b, c, fp16_unit).verdict.kind, TensorKind::defect);
  // And the fp16-accumulating unit's output under --acc fp32: outside the fp32 unit's bound.
  const TensorData narrow = emulate_matmul(p.a, p.b, std::nullopt, parse_claim("--in fp16 --profile nvidia-h100-tc --out fp16"));
  EXPECT_EQ(check_matmul(p.a, p.b, narrow, acc32).verdict.kind, TensorKind::defect);
  // A unit the profile does not have, and accumulator options beside --acc, are refused.
  EXPECT_THAT(error_of([&] { check_matmul(p.a, p.b, c, parse_claim("--in fp16 --profile nvidia-h100-tc --acc bf16 --out fp16")); }),
              HasSubstr("(it has "));
  EXPECT_THAT(error_of([&] { emulate_matmul(p.a, p.b, std::nullopt, parse_claim("--in fp16 --profile nvidia-h100-tc --acc bf16 --out fp16")); }),
              HasSubstr("--acc bf16: profile nvidia-h100-tc has no tensor-core unit for fp16 inputs with bf16 results"));
  EXPECT_THAT(error_of([] { parse_claim("--in fp16 --profile nvidia-h100-tc --acc fp32 --acc-rounding rtz --out fp16"); }),
              HasSubstr("--acc F picks the tensor-core unit with results in F"));
  EXPECT_THAT(error_of([] { parse_claim("--in bf16 --profile trn2 --acc fp32 --out bf16"); }),
              HasSubstr("--acc: profile trn2 states the accumulation itself"));
}

TEST(CheckMatmul, ReferenceComputedOnceJudgesManyOutputs) {
  const Bf16Problem p(4, 256, 4, 3);
  const MatmulReference ref = matmul_reference(p.a, p.b);
  const ClaimSpec claim = parse_claim("--in bf16 --out bf16");
  const TensorData good = emulate_matmul(p.a, p.b, std::nullopt, parse_claim("--in bf16 --plan pairwise --out bf16"));
  const TensorData trunc =
      emulate_matmul(p.a, p.b, std::nullopt, parse_claim("--in bf16 --plan pairwise --out bf16 --out-rounding rtz"));
  const CheckResult a = check_matmul(ref, good, claim), b = check_matmul(p.a, p.b, good, claim);
  EXPECT_EQ(a.text(), b.text());
  EXPECT_EQ(check_matmul(ref, trunc, claim).verdict.kind == TensorKind::consistent,
            check_matmul(p.a, p.b, trunc, claim).verdict.kind == TensorKind::consistent);
}

TEST(CheckMatmul, OperandsMustBeTheClaimsFormatsAndShapes) {
  const Bf16Problem p(4, 16, 4, 4);
  const TensorData c{&bf16, {4, 4}, std::vector<Bits>(16), "C"};
  EXPECT_THAT(error_of([&] { check_matmul(p.a, p.b, c, parse_claim("--in fp16 --out bf16")); }),
              HasSubstr("A A: holds bf16 values but the claim says fp16"));
  const TensorData c2{&bf16, {4, 5}, std::vector<Bits>(20), "C"};
  EXPECT_THAT(error_of([&] { check_matmul(p.a, p.b, c2, parse_claim("--in bf16 --out bf16")); }),
              HasSubstr("shape mismatch: A (A) is [4, 16] (M x K) and B (B) is [16, 4] (K x N) give M x N = [4, 4], but C (C) is [4, 5]"));
}

// A NaN where the exact result is finite: the maximum error stays over the finite errors, and
// the report's line says the non-finite ones are counted apart (it read "max error: 0" beside a
// table of inf ulps).
TEST(CheckMatmul, MaxErrorLineNamesNonFiniteMismatches) {
  const Bf16Problem p(3, 16, 3, 7);
  const ClaimSpec claim = parse_claim("--in bf16 --acc fp32 --out bf16");
  TensorData c = emulate_matmul(p.a, p.b, std::nullopt, parse_claim("--in bf16 --plan sequential --out bf16"));
  EXPECT_THAT(check_matmul(p.a, p.b, c, claim).text(), Not(HasSubstr("over the finite errors")));
  c.values[4] = Bits{0x7fc0};
  const CheckResult r = check_matmul(p.a, p.b, c, claim);
  EXPECT_EQ(r.verdict.kind, TensorKind::defect);
  EXPECT_THAT(r.text(), HasSubstr("output ulps over the finite errors; 1 element is NaN/inf where the exact result is finite"));
}

TEST(CheckMatmul, CrossPlatformSumsBothBounds) {
  const Bf16Problem p(4, 256, 4, 5);
  const ClaimSpec trn = parse_claim("--in bf16 --out bf16 --profile trn2");
  const ClaimSpec h100 = parse_claim("--in bf16 --out bf16 --profile nvidia-h100-tc");
  MatmulCheckOptions o;
  o.ref = emulate_matmul(p.a, p.b, std::nullopt, h100);
  o.ref_claim = h100;
  const CheckResult r = check_matmul(p.a, p.b, emulate_matmul(p.a, p.b, std::nullopt, trn), trn, o);
  EXPECT_NE(r.verdict.kind, TensorKind::defect) << r.text();
  ASSERT_FALSE(r.bound.derivation.empty());
  EXPECT_THAT(r.bound.derivation[0], HasSubstr("cross-platform: target (profile trn2 (v1)) against reference"));
  // One element of R or of C far off: the defect says which side left its own bound of the exact
  // result, and the table's centre is labelled R (it was "exact", and read as C's fault).
  const TensorData c = emulate_matmul(p.a, p.b, std::nullopt, trn);
  const auto far = [](TensorData t) {
    t.values[5] = Bits{static_cast<std::uint16_t>(t.values[5].raw ^ 0x0400u)};  // exponent bit: ×/÷ 2^8
    return t;
  };
  MatmulCheckOptions bad_ref = o;
  bad_ref.ref = far(*o.ref);
  const CheckResult rr = check_matmul(p.a, p.b, c, trn, bad_ref);
  ASSERT_EQ(rr.verdict.kind, TensorKind::defect) << rr.text();
  EXPECT_THAT(rr.verdict.reason, HasSubstr("C is outside its own bound of the exact result at 0 and R (the reference) at 1: "
                                           "the reference is off, not C"));
  EXPECT_THAT(rr.text(), HasSubstr("R (reference)"));
  const CheckResult rc = check_matmul(p.a, p.b, far(c), trn, o);
  ASSERT_EQ(rc.verdict.kind, TensorKind::defect) << rc.text();
  EXPECT_THAT(rc.verdict.reason, HasSubstr("at 1 and R (the reference) at 0: C is off, not the reference"));
  EXPECT_THAT(check_matmul(p.a, p.b, far(c), trn).text(), Not(HasSubstr("R (reference)")));
}

// A port whose outputs agree within both bounds, but one of which is wrong under its own claim:
// the wide any-order bound of the target covered a reference off its tight profile bound, and
// the port was CONSISTENT (exit 0). Each side is now judged under its own claim as well.
TEST(CheckMatmul, CrossPlatformJudgesEachSideUnderItsOwnClaim) {
  const Bf16Problem p(4, 256, 4, 5);
  const ClaimSpec any = parse_claim("--in bf16 --acc fp32 --out fp32");
  const ClaimSpec trn = parse_claim("--in bf16 --out fp32 --profile trn2");
  const TensorData c = emulate_matmul(p.a, p.b, std::nullopt, parse_claim("--in bf16 --plan pairwise --out fp32"));
  const TensorData r = emulate_matmul(p.a, p.b, std::nullopt, trn);
  MatmulCheckOptions o;
  o.ref_claim = trn;
  o.ref = r;
  ASSERT_EQ(check_matmul(p.a, p.b, c, any, o).verdict.kind, TensorKind::consistent);
  // R moved at one element until it leaves trn2's bound (a proven defect of R alone).
  std::optional<TensorData> bad;
  for (std::uint32_t d = 1; d <= (1u << 16) && !bad; d *= 2) {
    TensorData x = r;
    x.values[5] = Bits{x.values[5].raw + d};
    const Verdict own = check_matmul(p.a, p.b, x, trn).verdict;
    if (own.kind == TensorKind::defect && !own.probable) bad = x;
  }
  ASSERT_TRUE(bad.has_value());
  o.ref = *bad;
  MatmulCheckOptions alone = o;
  alone.judge_sides = false;
  const CheckResult cross = check_matmul(p.a, p.b, c, any, alone);
  ASSERT_NE(cross.verdict.kind, TensorKind::defect) << cross.text();  // C against R alone: within both bounds
  const CheckResult port = check_matmul(p.a, p.b, c, any, o);
  EXPECT_EQ(port.verdict.kind, TensorKind::defect) << port.text();
  EXPECT_FALSE(port.verdict.probable);
  EXPECT_THAT(port.verdict.reason, StartsWith("R (the reference) is itself a proven defect under its own claim (" + trn.text() +
                                              "): 1 of 16 elements lie outside the deterministic bound"));
  EXPECT_THAT(port.verdict.reason, HasSubstr("; C against R alone: " + std::string(kind_name(cross.verdict.kind)) + ": " +
                                             cross.verdict.reason));
  ASSERT_FALSE(port.verdict.signatures.empty());
  EXPECT_EQ(port.verdict.signatures[0].name, "reference-defect");
  EXPECT_TRUE(port.cross_platform);
  // The exact results computed before judge alike.
  EXPECT_EQ(check_matmul(matmul_reference(p.a, p.b), c, any, o).verdict.reason, port.verdict.reason);
  // The sides swapped: C off its own tight bound, R any-order.
  MatmulCheckOptions swapped;
  swapped.ref = c;
  swapped.ref_claim = any;
  const CheckResult t = check_matmul(p.a, p.b, *bad, trn, swapped);
  EXPECT_EQ(t.verdict.kind, TensorKind::defect) << t.text();
  EXPECT_THAT(t.verdict.reason, StartsWith("C (the target) is itself a proven defect under its own claim (" + trn.text() + "): "));
  EXPECT_EQ(t.verdict.signatures.at(0).name, "target-defect");
}

// ------------------------------------------------------------------- stochastic streams

TEST(Emulate, StochasticCheckPredictsEmulateForEveryModel) {
  const Bf16Problem p(6, 300, 5, 6);
  for (const char* claim_text : {"--in bf16 --profile nvidia-h100-tc --out bf16 --out-rounding stochastic --seed 9",
                                 "--in bf16 --profile trn2 --out bf16 --out-rounding stochastic --seed 9",
                                 "--in bf16 --plan 'blocked(64)' --out bf16 --out-rounding stochastic --seed 9",
                                 "--in bf16 --plan sequential --acc bf16 --acc-rounding stochastic --out bf16 --seed 9"}) {
    SCOPED_TRACE(claim_text);
    const ClaimSpec claim = parse_claim(claim_text);
    const TensorData c = emulate_matmul(p.a, p.b, std::nullopt, claim);
    const CheckResult r = check_matmul(p.a, p.b, c, claim);
    ASSERT_TRUE(r.model.has_value());
    EXPECT_EQ(r.model->equal, r.model->elements);
    // Another seed draws other roundings: the prediction can fail.
    ClaimSpec other = claim;
    other.seed = 10;
    EXPECT_LT(check_matmul(p.a, p.b, c, other).model->equal, r.model->elements);
  }
}

// A claim's --cast under a tensor-engine profile that states no cast of its own: the model casts
// the operands first, as the bound (detail::make_claim) and the calibration read the claim — it
// used to drop the cast and sum the fp32 products, an output the claim does not describe.
TEST(Emulate, ATensorEngineProfileHonoursTheClaimsCast) {
  std::mt19937_64 g(31);
  std::normal_distribution<float> nd(0, 1);
  TensorData a{&fp32, {4, 300}, {}, "A"}, b{&fp32, {300, 5}, {}, "B"};
  for (std::int64_t i = 0; i < 4 * 300; ++i) a.values.push_back(Bits{std::bit_cast<std::uint32_t>(nd(g))});
  for (std::int64_t i = 0; i < 300 * 5; ++i) b.values.push_back(Bits{std::bit_cast<std::uint32_t>(nd(g))});
  for (const char* rounding : {"rne", "rtz"}) {
    SCOPED_TRACE(rounding);
    RoundOptions o;
    o.rounding = *parse_rounding(rounding);
    TensorData ac{&bf16, a.shape, {}, "A"}, bc{&bf16, b.shape, {}, "B"};
    for (const Bits x : a.values) ac.values.push_back(convert(fp32, bf16, x, o).bits);
    for (const Bits x : b.values) bc.values.push_back(convert(fp32, bf16, x, o).bits);
    for (const char* profile : {"trn1", "trn2"}) {
      const TensorData cast = emulate_matmul(
          a, b, std::nullopt,
          parse_claim(fmt::format("--in fp32 --cast bf16 --cast-rounding {} --profile {} --out fp32", rounding, profile)));
      const TensorData given =
          emulate_matmul(ac, bc, std::nullopt, parse_claim(fmt::format("--in bf16 --profile {} --out fp32", profile)));
      EXPECT_EQ(cast.values, given.values) << profile;
    }
  }
}

TEST(Emulate, RowwiseDotGivesEachRowItsOwnStreamAndHonoursTheSeed) {
  // 64 identical rows whose exact dot is not a bf16 value: with one stream for every row
  // (the old Trainium dot path) all 64 results were equal.
  const std::int64_t R = 64, K = 3;
  TensorData a{&bf16, {R, K}, {}, "A"}, b{&bf16, {R, K}, {}, "B"};
  for (std::int64_t r = 0; r < R; ++r)
    for (const std::uint32_t x : {0x3f81u, 0x3f83u, 0x3c01u}) {  // 1 + 2^-7, 1 + 3·2^-7, about 2^-7
      a.values.push_back(Bits{x});
      b.values.push_back(Bits{0x3f81});
    }
  for (const char* profile : {"trn2", "nvidia-h100-tc"}) {
    SCOPED_TRACE(profile);
    const ClaimSpec c7 = parse_claim(fmt::format("--in bf16 --profile {} --out bf16 --out-rounding stochastic --seed 7", profile));
    const TensorData d7 = emulate_dot(a, b, std::nullopt, c7);
    ASSERT_EQ(d7.values.size(), static_cast<std::size_t>(R));
    std::set<std::uint32_t> distinct;
    for (const Bits x : d7.values) distinct.insert(x.raw);
    EXPECT_EQ(distinct.size(), 2u) << "identical rows must round up or down independently";
    EXPECT_EQ(emulate_dot(a, b, std::nullopt, c7).values, d7.values);  // reproducible
    ClaimSpec c8 = c7;
    c8.seed = 8;
    EXPECT_NE(emulate_dot(a, b, std::nullopt, c8).values, d7.values) << "--seed must be honoured";
  }
}

TEST(Emulate, DotOutputHasTheAddendsShapeAndAnIntegerAddendIsShapeChecked) {
  // D = C + A·B has C's shape, as a matmul's D has C's: [R, 1] in gives [R, 1] out (it was
  // always [R]); without C, [R].
  const std::int64_t R = 3, K = 4;
  const TensorData a{&fp32, {R, K}, std::vector<Bits>(R * K, Bits{0x3f800000u}), "A"};
  const ClaimSpec plan = parse_claim("--in fp32 --acc fp32 --out fp32 --plan sequential");
  EXPECT_EQ(emulate_dot(a, a, std::nullopt, plan).shape, (std::vector<std::int64_t>{R}));
  for (const std::vector<std::int64_t>& shape : {std::vector<std::int64_t>{R}, std::vector<std::int64_t>{R, 1}}) {
    SCOPED_TRACE(fmt::format("C [{}]", fmt::join(shape, ", ")));
    const TensorData c{&fp32, shape, std::vector<Bits>(R, Bits{0x3f800000u}), "C"};
    const TensorData d = emulate_dot(a, a, c, plan);
    EXPECT_EQ(d.shape, shape);
    EXPECT_EQ(d.values, std::vector<Bits>(R, Bits{0x40a00000u}));  // 1 + 4·1 = 5
  }
  // Integer GEMMs: the addend's shape is checked (it was only counted: C [1, 3] passed for [3]
  // and a transposed C for a matmul's M×N).
  const TensorData ai{&int8, {R, K}, std::vector<Bits>(R * K, Bits{1}), "A"};
  const ClaimSpec q = parse_claim("--in int8 --acc int32 --out int32");
  const TensorData c13{&int32, {1, R}, std::vector<Bits>(R, Bits{0}), "C"};
  EXPECT_THAT(error_of([&] { emulate_dot(ai, ai, c13, q); }), HasSubstr("shape mismatch"));
  const TensorData c31{&int32, {R, 1}, std::vector<Bits>(R, Bits{2}), "C"};
  const TensorData d = emulate_dot(ai, ai, c31, q);
  EXPECT_EQ(d.shape, (std::vector<std::int64_t>{R, 1}));
  EXPECT_EQ(d.values, std::vector<Bits>(R, Bits{6}));  // 2 + 4·1
  const TensorData bi{&int8, {K, 2}, std::vector<Bits>(K * 2, Bits{1}), "B"};
  const TensorData c23{&int32, {2, R}, std::vector<Bits>(2 * R, Bits{0}), "C"};
  EXPECT_THAT(error_of([&] { emulate_matmul(ai, bi, c23, q); }), HasSubstr("shape mismatch"));
  const TensorData c32{&int32, {R, 2}, std::vector<Bits>(2 * R, Bits{0}), "C"};
  EXPECT_EQ(emulate_matmul(ai, bi, c32, q).values, std::vector<Bits>(2 * R, Bits{4}));
}

TEST(CheckDot, JudgesTheRowwiseDotThatEmulateComputes) {
  const Bf16Problem p(16, 384, 16, 21);
  TensorData b = p.a;
  std::reverse(b.values.begin(), b.values.end());  // another 16×384 operand
  b.name = "B";
  for (const char* text : {"--in bf16 --profile trn2 --out bf16 --out-rounding stochastic --seed 4",
                           "--in bf16 --profile nvidia-h100-tc --out fp32", "--in bf16 --plan pairwise --out bf16"}) {
    SCOPED_TRACE(text);
    const ClaimSpec claim = parse_claim(text);
    const TensorData d = emulate_dot(p.a, b, std::nullopt, claim);
    const CheckResult r = check_dot(p.a, b, d, claim);
    EXPECT_NE(r.verdict.kind, TensorKind::defect) << r.text();
    EXPECT_EQ(r.op, "dot");
    ASSERT_TRUE(r.model.has_value());
    EXPECT_EQ(r.model->equal, 16);
  }
  // Partial sums in bf16 against an fp32 claim: a defect.
  const TensorData bad = emulate_dot(p.a, b, std::nullopt, parse_claim("--in bf16 --acc bf16 --plan sequential --out bf16"));
  EXPECT_EQ(check_dot(p.a, b, bad, parse_claim("--in bf16 --out bf16")).verdict.kind, TensorKind::defect);
  const TensorData wrong{&bf16, {15}, std::vector<Bits>(15), "D"};
  EXPECT_THAT(error_of([&] { check_dot(p.a, b, wrong, parse_claim("--in bf16 --out bf16")); }),
              HasSubstr("it needs R = 16 elements ([16] or [16, 1])"));
}

// ------------------------------------------------------------------- sum, rows, tolerance

TEST(CheckSum, SequentialFp32SumIsConsistentBf16SumIsNot) {
  const std::int64_t n = 2048;
  TensorData x{&fp32, {2, n}, {}, "X"};
  std::mt19937_64 g(11);
  std::uniform_real_distribution<float> u(0.5f, 1.0f);
  for (std::int64_t i = 0; i < 2 * n; ++i) x.values.push_back(Bits{std::bit_cast<std::uint32_t>(u(g))});
  auto sum_in = [&](const FormatSpec& acc) {
    TensorData c{&fp32, {2}, {}, "C"};
    for (std::int64_t r = 0; r < 2; ++r) {
      Bits s = zero(acc, false);
      for (std::int64_t k = 0; k < n; ++k) {
        const Bits t = convert(fp32, acc, x.values[static_cast<std::size_t>(r * n + k)]).bits;
        s = convert(fp32, acc, Bits{std::bit_cast<std::uint32_t>(std::bit_cast<float>(convert(acc, fp32, s).bits.raw) +
                                                                  std::bit_cast<float>(convert(acc, fp32, t).bits.raw))})
                .bits;
      }
      c.values.push_back(convert(acc, fp32, s).bits);
    }
    return c;
  };
  const ClaimSpec claim = parse_claim("--in fp32 --acc fp32 --out fp32");
  EXPECT_EQ(check_sum(x, sum_in(fp32), -1, claim).verdict.kind, TensorKind::consistent);
  EXPECT_EQ(check_sum(x, sum_in(bf16), -1, claim).verdict.kind, TensorKind::defect);
  EXPECT_THAT(error_of([&] { check_sum(x, sum_in(fp32), 2, claim); }), HasSubstr("--axis 2 out of range for shape [2, 2048]"));
  // Shapes, not counts: [2] and [2, 1] (keepdims) are the sum along axis 1; [1, 2] is not.
  TensorData kept = sum_in(fp32);
  kept.shape = {2, 1};
  EXPECT_EQ(check_sum(x, kept, -1, claim).verdict.kind, TensorKind::consistent);
  TensorData wrong = sum_in(fp32);
  wrong.shape = {1, 2};
  EXPECT_THAT(error_of([&] { check_sum(x, wrong, -1, claim); }),
              HasSubstr("shape mismatch: --c C is [1, 2] but summing --x X [2, 2048] along axis 1 gives [2] (or [2, 1] "
                        "with the axis kept)"));
}

// The listed elements are located in C's own shape ([row, column], the row over C's leading
// axes), whichever axis was summed: C[1, 1] is [1, 1] for a sum along the first, middle or last
// axis of a rank-3 X (it was [0, 6] along the first: the grid about the summed axis).
TEST(CheckSum, ListedElementsAreNamedInTheOutputsShape) {
  const std::vector<std::int64_t> shape{3, 4, 5};
  TensorData x{&fp32, shape, {}, "X"};
  for (int i = 0; i < 60; ++i) x.values.push_back(Bits{std::bit_cast<std::uint32_t>(static_cast<float>(i % 7) - 2.5f)});
  const ClaimSpec claim = parse_claim("--in fp32 --acc fp32 --out fp32");
  for (int axis = 0; axis < 3; ++axis) {
    SCOPED_TRACE(fmt::format("axis {}", axis));
    std::vector<std::int64_t> cs;
    for (int d = 0; d < 3; ++d)
      if (d != axis) cs.push_back(shape[static_cast<std::size_t>(d)]);
    TensorData c{&fp32, cs, std::vector<Bits>(static_cast<std::size_t>(cs[0] * cs[1])), "C"};
    for (std::int64_t r = 0; r < cs[0]; ++r)  // small integers: every order sums them exactly
      for (std::int64_t q = 0; q < cs[1]; ++q) {
        float t = 0;
        for (std::int64_t k = 0; k < shape[static_cast<std::size_t>(axis)]; ++k) {
          std::array<std::int64_t, 3> at{};
          std::size_t j = 0;
          for (int d = 0; d < 3; ++d) at[static_cast<std::size_t>(d)] = d == axis ? k : (j++ == 0 ? r : q);
          t += std::bit_cast<float>(x.values[static_cast<std::size_t>((at[0] * 4 + at[1]) * 5 + at[2])].raw);
        }
        c.values[static_cast<std::size_t>(r * cs[1] + q)] = Bits{std::bit_cast<std::uint32_t>(t)};
      }
    ASSERT_EQ(check_sum(x, c, axis, claim).verdict.kind, TensorKind::consistent);
    const std::size_t e = static_cast<std::size_t>(cs[1] + 1);  // C[1, 1]
    c.values[e] = Bits{std::bit_cast<std::uint32_t>(std::bit_cast<float>(c.values[e].raw) + 100.0f)};
    const CheckResult r = check_sum(x, c, axis, claim);
    ASSERT_EQ(r.verdict.kind, TensorKind::defect);
    ASSERT_FALSE(r.verdict.worst.empty());
    const ElementReport& w = r.verdict.worst[0];
    EXPECT_EQ(w.index, static_cast<std::int64_t>(e));
    EXPECT_EQ(w.row, 1);
    EXPECT_EQ(w.col, 1);
    EXPECT_THAT(r.text(), HasSubstr("[1, 1]"));
    // With the axis kept (C of rank 3, its last axis 1 long where the last axis was summed).
    if (axis == 2) {
      TensorData kept = c;
      kept.shape = {3, 4, 1};
      const CheckResult rk = check_sum(x, kept, axis, claim);
      const ElementReport& wk = rk.verdict.worst.at(0);
      EXPECT_EQ(wk.index, static_cast<std::int64_t>(e));
      EXPECT_EQ(wk.row, static_cast<std::int64_t>(e));  // row over the leading axes [3, 4]
      EXPECT_EQ(wk.col, 0);
    }
  }
}

// --expect bit-exact on a sum: the plan's sum (emulate_sum, the plan evaluator) against
// compiled float code summing the same axis of a rank-3 tensor in index order (an independent
// second implementation of `sequential` for fp32 round-to-nearest), then one element changed.
TEST(CheckSum, ExpectBitExactMatchesThePlanOrListsTheElementsThatDiffer) {
  const std::int64_t O = 3, L = 100, I = 5;
  TensorData x{&fp32, {O, L, I}, {}, "X"};
  std::mt19937_64 g(5);
  std::normal_distribution<float> nd;
  for (std::int64_t i = 0; i < O * L * I; ++i) x.values.push_back(Bits{std::bit_cast<std::uint32_t>(nd(g))});
  TensorData c{&fp32, {O, I}, {}, "C"};
  for (std::int64_t o = 0; o < O; ++o)
    for (std::int64_t i = 0; i < I; ++i) {
      float s = std::bit_cast<float>(x.values[static_cast<std::size_t>(o * L * I + i)].raw);
      for (std::int64_t k = 1; k < L; ++k) s += std::bit_cast<float>(x.values[static_cast<std::size_t>((o * L + k) * I + i)].raw);
      c.values.push_back(Bits{std::bit_cast<std::uint32_t>(s)});
    }
  const CheckResult ok = check_sum(x, c, 1, parse_claim("--in fp32 --acc fp32 --out fp32 --plan sequential --expect bit-exact"));
  EXPECT_EQ(ok.verdict.kind, TensorKind::consistent) << ok.text();
  EXPECT_THAT(ok.verdict.reason, HasSubstr("matches the model bit for bit: all 15 elements equal the output plan sequential"));
  const TensorData e = emulate_sum(x, -2, parse_claim("--in fp32 --acc fp32 --out fp32 --plan sequential"));
  EXPECT_EQ(e.shape, (std::vector<std::int64_t>{O, I}));
  EXPECT_EQ(e.values, c.values);
  // A reverse-order sum of the same data differs somewhere (100 normal terms): a defect under
  // --expect bit-exact, naming the elements; without --expect it is a legal order.
  const CheckResult rev = check_sum(x, c, 1, parse_claim("--in fp32 --acc fp32 --out fp32 --plan reverse --expect bit-exact"));
  EXPECT_EQ(rev.verdict.kind, TensorKind::defect);
  EXPECT_THAT(rev.verdict.reason, HasSubstr("elements differ from the bit-exact output plan reverse predicts"));
  EXPECT_EQ(check_sum(x, c, 1, parse_claim("--in fp32 --acc fp32 --out fp32 --plan reverse")).verdict.kind,
            TensorKind::consistent);
  // Without --expect, a claim naming a model still says how much of C it predicts (as matmul's
  // and dot's do): the sequential plan all 15 elements, the reverse one fewer; no model, no line.
  const CheckResult seq = check_sum(x, c, 1, parse_claim("--in fp32 --acc fp32 --out fp32 --plan sequential"));
  ASSERT_TRUE(seq.model.has_value()) << seq.text();
  EXPECT_EQ(seq.model->equal, 15);
  EXPECT_EQ(seq.predicted, c.values);
  EXPECT_THAT(seq.text(), HasSubstr("model: 15 of 15 elements equal the bit-exact output plan sequential predicts"));
  const CheckResult rv = check_sum(x, c, 1, parse_claim("--in fp32 --acc fp32 --out fp32 --plan reverse"));
  ASSERT_TRUE(rv.model.has_value());
  EXPECT_LT(rv.model->equal, 15);
  EXPECT_FALSE(check_sum(x, c, 1, parse_claim("--in fp32 --acc fp32 --out fp32")).model.has_value());
  TensorData one = c;
  one.values[7] = Bits{one.values[7].raw ^ 1u};
  const CheckResult bad = check_sum(x, one, 1, parse_claim("--in fp32 --acc fp32 --out fp32 --plan sequential --expect bit-exact"));
  EXPECT_EQ(bad.verdict.kind, TensorKind::defect);
  EXPECT_THAT(bad.verdict.reason, HasSubstr("1 of 15 elements differ"));
  EXPECT_THAT(bad.verdict.reason, HasSubstr("[1, 2]"));  // element 7 of the 3×5 output
  const TensorData xb{&bf16, {2, 8}, std::vector<Bits>(16, Bits{0x3f80}), "X"};
  const TensorData cb{&fp32, {2}, std::vector<Bits>(2, Bits{0x41000000}), "C"};
  EXPECT_THAT(error_of([&] { check_sum(xb, cb, 1, parse_claim("--in bf16 --out fp32 --profile nvidia-h100-tc --expect bit-exact")); }),
              HasSubstr("models matmul and dot, not a sum"));
  // The same refusals with and without --expect, for check, tol and emulate sum alike (check and
  // tol once took a Tensor Engine profile's matmul bound, and --cast, for a sum).
  for (const char* claim_text : {"--in bf16 --out fp32 --profile trn2", "--in bf16 --out fp32 --profile nvidia-h100-tc",
                                 "--in bf16 --out fp32 --profile neuron-autocast-bf16", "--in bf16 --out fp32 --cast fp8_e4m3 --plan sequential"}) {
    SCOPED_TRACE(claim_text);
    const ClaimSpec claim = parse_claim(claim_text);
    const std::string_view why = claim.cast ? "--cast applies to matmul and dot operands, not to a sum"
                                            : "models matmul and dot, not a sum";
    EXPECT_THAT(error_of([&] { check_sum(xb, cb, 1, claim); }), HasSubstr(why));
    EXPECT_THAT(error_of([&] { tolerance("sum", 8, claim); }), HasSubstr(why));
    EXPECT_THAT(error_of([&] { emulate_sum(xb, 1, claim); }), HasSubstr(why));
    EXPECT_EQ(error_of([&] { tolerance("dot", 8, claim); }), "");  // a dot takes them
  }
  EXPECT_EQ(error_of([&] { check_sum(xb, cb, 1, parse_claim("--in bf16 --out fp32 --profile cpu-sequential")); }), "");
}

TEST(CheckRows, NeedsAnAccuracyClaim) {
  const TensorData x{&fp32, {1, 2}, {Bits{0}, Bits{0}}, "X"};
  EXPECT_THAT(error_of([&] { check_rows(RowOp::exp, x, x, parse_claim("--in fp32 --out fp32")); }),
              HasSubstr("check exp: give the arithmetic with --compute F"));
  // exp(0) = 1 exactly: an output of 0 is a defect, 1 is bit-exact.
  const TensorData one{&fp32, {1, 2}, {Bits{0x3f800000}, Bits{0x3f800000}}, "C"};
  EXPECT_EQ(check_rows(RowOp::exp, x, one, parse_claim("--in fp32 --out fp32 --ulps 1")).verdict.counts[0], 2);
  EXPECT_EQ(check_rows(RowOp::exp, x, x, parse_claim("--in fp32 --out fp32 --ulps 1")).verdict.kind, TensorKind::defect);
  EXPECT_EQ(find_row_op("gelu_tanh"), RowOp::gelu_tanh);
  EXPECT_FALSE(find_row_op("gelu").has_value());
}

// A reduction's claim option in a row op's claim is refused at any value: `--acc fp32` is the
// default, and was accepted (and ignored) where `--acc bf16` was refused; a claim built in code
// (no text) is still judged by its fields.
// Rows of zeros: every exact rmsnorm result is 0 by construction. A zero output says it tested
// nothing; a NaN output is a defect, and the line does not say it tested nothing.
TEST(CheckRows, ZeroRowsTestNothingUnlessTheOutputIsADefect) {
  const TensorData x{&fp32, {4, 4}, std::vector<Bits>(16, Bits{0}), "X"};
  const ClaimSpec claim = parse_claim("--in fp32 --compute fp32 --out fp32");
  const CheckResult zero = check_rows(RowOp::rmsnorm, x, x, claim);
  EXPECT_EQ(zero.verdict.kind, TensorKind::consistent) << zero.text();
  EXPECT_THAT(zero.verdict.reason, HasSubstr("degenerate: all 16 outputs and exact results are 0"));
  TensorData c = x;
  c.values.assign(16, Bits{0x7fc00000});
  const CheckResult nan = check_rows(RowOp::rmsnorm, x, c, claim);
  EXPECT_EQ(nan.verdict.kind, TensorKind::defect) << nan.text();
  EXPECT_THAT(nan.verdict.reason, Not(HasSubstr("test nothing"))) << nan.verdict.reason;
  EXPECT_THAT(nan.verdict.reason, Not(HasSubstr("tests little"))) << nan.verdict.reason;
}

// A softmax in bf16 over rows of 128: the computed denominator lies between max(its largest
// term, (2 - (1 + u)^127)·S ≈ 0.36·S) and (1 + u)^127·S ≈ 1.64·S, so the enclosure of an output
// reaches about 2.8·y above and y/1.64 below. Judged against the farther end on both sides, zeros
// — and half of every value — passed as CONSISTENT; each output is judged on its own side now.
TEST(CheckRows, EachOutputIsJudgedAgainstTheEndOfTheEnclosureOnItsSide) {
  std::mt19937_64 g(21);
  std::normal_distribution<double> nd(0, 2);
  constexpr std::int64_t rows = 8, n = 128;
  TensorData x{&bf16, {rows, n}, {}, "X"};
  for (std::int64_t i = 0; i < rows * n; ++i) x.values.push_back(convert_double(bf16, nd(g)).bits);
  const auto rn = [](double v) { return to_double(bf16, convert_double(bf16, v).bits); };
  // The textbook softmax with every operation rounded to bf16 (a legal kernel of the claim).
  TensorData legal{&bf16, {rows, n}, {}, "C"}, zeros = legal, half = legal;
  for (std::int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    std::vector<double> e(n);
    for (std::int64_t j = 0; j < n; ++j) m = std::max(m, to_double(bf16, x.values[r * n + j]));
    for (std::int64_t j = 0; j < n; ++j) s = rn(s + (e[j] = rn(std::exp(rn(to_double(bf16, x.values[r * n + j]) - m)))));
    for (std::int64_t j = 0; j < n; ++j) {
      const double y = rn(e[j] / s);
      legal.values.push_back(convert_double(bf16, y).bits);
      zeros.values.push_back(Bits{0});
      half.values.push_back(convert_double(bf16, y / 2).bits);
    }
  }
  const ClaimSpec claim = parse_claim("--in bf16 --compute bf16 --out bf16");
  const CheckResult ok = check_rows(RowOp::softmax, x, legal, claim);
  EXPECT_EQ(ok.verdict.kind, TensorKind::consistent) << ok.text();
  EXPECT_THAT(ok.text(), HasSubstr("bound = distance from the exact result to the end of the interval on the output's side"));
  for (const TensorData* c : {&zeros, &half}) {
    const CheckResult r = check_rows(RowOp::softmax, x, *c, claim);
    EXPECT_EQ(r.verdict.kind, TensorKind::defect) << r.text();
    EXPECT_FALSE(r.verdict.probable) << r.text();
    EXPECT_EQ(r.verdict.counts[3], rows * n) << r.text();
  }
}

TEST(CheckRows, AReductionsOptionIsRefusedEvenAtItsDefault) {
  const TensorData x{&fp32, {2}, {Bits{0x3f800000}, Bits{0x40000000}}, "X"};
  for (const char* opt : {"--acc fp32", "--acc-rounding rne", "--cast bf16 --cast-rounding rne", "--probabilistic-defects"}) {
    SCOPED_TRACE(opt);
    const std::string name = std::string(opt).substr(0, std::string(opt).find(' '));
    for (const char* arith : {"--compute fp32", "--ulps 1"})
      EXPECT_EQ(error_of([&] { check_rows(RowOp::exp, x, x, parse_claim(fmt::format("--in fp32 {} {} --out fp32", opt, arith))); }),
                fmt::format("check exp: {} belongs to a reduction's claim (matmul, dot, sum); a row or elementwise op's "
                            "arithmetic is --compute F [--fn-ulps N] [--fn-abs E], or --ulps N",
                            name));
  }
  // A GEMM's own options on a one-operand op, --exp-ulps outside softmax, --ulps on a reduction:
  // refused, not ignored (a sum under --scale-a 2 was judged as a plain sum).
  const TensorData m{&fp32, {2, 2}, std::vector<Bits>(4, Bits{0x3f800000}), "X"};
  const TensorData s2{&fp32, {2}, std::vector<Bits>(2, Bits{0x40000000}), "C"};
  const TensorData mb{&bf16, {2, 2}, std::vector<Bits>(4, Bits{0x3f80}), "X"};
  EXPECT_THAT(error_of([&] { check_sum(mb, s2, -1, parse_claim("--in bf16 --out fp32 --scale-a 2 --scale-b 1")); }),
              HasSubstr("check sum: --scale-a belongs to a GEMM's claim"));
  EXPECT_THAT(error_of([&] { check_sum(m, s2, -1, parse_claim("--in fp32 --in-b bf16 --out fp32")); }),
              HasSubstr("check sum: --in-b belongs to a GEMM's claim"));
  EXPECT_THAT(error_of([&] { emulate_sum(m, -1, parse_claim("--in fp32 --in-b bf16 --out fp32 --plan sequential")); }),
              HasSubstr("emulate sum: --in-b belongs to a GEMM's claim"));
  // (A row op's claim with block scales is refused by the parser already: scaled GEMM claims take
  // no --compute or --ulps.)
  EXPECT_THAT(error_of([&] { check_rows(RowOp::exp, x, x, parse_claim("--in fp32 --compute fp32 --exp-ulps 2 --out fp32")); }),
              HasSubstr("check exp: --exp-ulps is softmax's older name of --fn-ulps"));
  EXPECT_EQ(error_of([&] { check_rows(RowOp::softmax, m, m, parse_claim("--in fp32 --compute fp32 --exp-ulps 2 --out fp32")); }), "");
  EXPECT_THAT(error_of([&] { check_sum(m, s2, -1, parse_claim("--in fp32 --out fp32 --ulps 1")); }),
              HasSubstr("check sum: --ulps states a row or elementwise op's arithmetic"));
  ClaimSpec coded = parse_claim("--in fp32 --compute fp32 --out fp32");
  coded.cast_rounding = Rounding::rtz;  // a field set in code: no text states it
  EXPECT_THAT(error_of([&] { check_rows(RowOp::exp, x, x, coded); }), HasSubstr("--cast-rounding belongs to a reduction's claim"));
  EXPECT_EQ(error_of([&] { check_rows(RowOp::exp, x, x, parse_claim("--in fp32 --compute fp32 --out fp32")); }), "");
}

// At a non-finite input a derived claim's textbook formula in IEEE arithmetic and the oracle's
// limit may differ: silu/gelu at −inf give −inf·0 = NaN (the limit −0), rmsnorm of a row holding
// +inf gives x·rsqrt(+inf) = ±0 for its finite elements (the oracle: NaN for the row). Both are
// legal; anything else there is still a defect.
TEST(CheckRows, TextbookValuesAtNonFiniteInputsAreLegal) {
  const auto f32 = [](std::vector<float> v, std::vector<std::int64_t> shape, const char* name) {
    TensorData t{&fp32, std::move(shape), {}, name};
    for (const float x : v) t.values.push_back(Bits{std::bit_cast<std::uint32_t>(x)});
    return t;
  };
  const float inf = INFINITY, nan = NAN;
  const ClaimSpec claim = parse_claim("--in fp32 --compute fp32 --out fp32");
  const TensorData x = f32({-inf, inf, 1.0f}, {3}, "X");
  for (const RowOp op : {RowOp::silu, RowOp::gelu_erf, RowOp::gelu_tanh}) {
    SCOPED_TRACE(row_op_name(op));
    // The oracle's own values: −0, +inf, and op(1) correctly rounded (read from the listed exact value).
    TensorData with_limit = f32({-0.0f, inf, 0.0f}, {3}, "C");
    RowCheckOptions all;
    all.worst = 3;
    const CheckResult probe = check_rows(op, x, with_limit, claim, all);
    for (const ElementReport& e : probe.verdict.worst)
      if (e.index == 2) with_limit.values[2] = Bits{std::bit_cast<std::uint32_t>(static_cast<float>(e.exact))};
    EXPECT_EQ(check_rows(op, x, with_limit, claim).verdict.kind, TensorKind::consistent);
    TensorData textbook = with_limit;
    textbook.values[0] = Bits{0x7fc00000};  // NaN at −inf
    const CheckResult r = check_rows(op, x, textbook, claim);
    EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();
    EXPECT_EQ(r.verdict.counts[0], 3);
    EXPECT_THAT(r.text(), HasSubstr("non-finite inputs: 1 element equal what the textbook formula gives"));
    TensorData wrong = with_limit;
    wrong.values[0] = Bits{std::bit_cast<std::uint32_t>(-1.0f)};
    EXPECT_EQ(check_rows(op, x, wrong, claim).verdict.kind, TensorKind::defect);
    // NaN where the limit is finite is legal at −inf only: at +inf it is a defect.
    TensorData nan_at_inf = with_limit;
    nan_at_inf.values[1] = Bits{0x7fc00000};
    EXPECT_EQ(check_rows(op, x, nan_at_inf, claim).verdict.kind, TensorKind::defect);
    // Under an --ulps claim (no formula stated) the limit alone is the exact result.
    EXPECT_EQ(check_rows(op, x, textbook, parse_claim("--in fp32 --out fp32 --ulps 1")).verdict.kind, TensorKind::defect);
  }
  const TensorData xr = f32({1, -2, inf, 3, 1, 2, 3, 4}, {2, 4}, "X");
  TensorData c = f32({0.0f, -0.0f, nan, 0.0f, 0, 0, 0, 0}, {2, 4}, "C");
  RowCheckOptions all;
  all.worst = 8;
  const CheckResult first = check_rows(RowOp::rmsnorm, xr, c, claim, all);  // row 1: the oracle's values
  for (const ElementReport& e : first.verdict.worst)
    if (e.index >= 4) c.values[static_cast<std::size_t>(e.index)] = Bits{std::bit_cast<std::uint32_t>(static_cast<float>(e.exact))};
  const CheckResult r = check_rows(RowOp::rmsnorm, xr, c, claim);
  EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();
  TensorData sign = c;
  sign.values[1] = Bits{std::bit_cast<std::uint32_t>(0.0f)};  // −2·0 is −0: +0 is within the bound, not bit-exact
  const Verdict signed_zero = check_rows(RowOp::rmsnorm, xr, sign, claim).verdict;  // (as a matmul's, an --ulps claim's)
  EXPECT_EQ(signed_zero.kind, TensorKind::consistent) << signed_zero.reason;
  EXPECT_EQ(signed_zero.counts[0], r.verdict.counts[0] - 1);
  TensorData all_nan = c;  // the oracle's own: NaN for the whole row
  for (int j = 0; j < 4; ++j) all_nan.values[static_cast<std::size_t>(j)] = Bits{0x7fc00000};
  EXPECT_EQ(check_rows(RowOp::rmsnorm, xr, all_nan, claim).verdict.kind, TensorKind::consistent);
  TensorData one = c;
  one.values[0] = Bits{std::bit_cast<std::uint32_t>(0.25f)};
  EXPECT_EQ(check_rows(RowOp::rmsnorm, xr, one, claim).verdict.kind, TensorKind::defect);
  // An output without −0 (FNUZ: −0 is its NaN) holds the textbook −2·0 as +0: compared as the
  // output holds it, not as a double.
  const TensorData fnuz{&fp8_e4m3fnuz, {1, 4}, {Bits{0x00}, Bits{0x00}, Bits{0x80}, Bits{0x00}}, "C"};
  const TensorData xr1 = f32({1, -2, inf, 3}, {1, 4}, "X");
  const CheckResult rf = check_rows(RowOp::rmsnorm, xr1, fnuz, parse_claim("--in fp32 --compute fp32 --out fp8_e4m3fnuz"));
  EXPECT_EQ(rf.verdict.kind, TensorKind::consistent) << rf.text();
  // "Infinite" as the formula holds x: −1e5 is −inf in fp16, so silu(−1e5) computed in fp16 is
  // −inf·0 = NaN too (in fp32 it is not: there only the limit −0 is legal).
  const TensorData big = f32({-1e5f}, {1}, "X");
  const TensorData nan1 = f32({nan}, {1}, "C");
  EXPECT_EQ(check_rows(RowOp::silu, big, nan1, parse_claim("--in fp32 --compute fp16 --out fp32")).verdict.kind,
            TensorKind::consistent);
  EXPECT_EQ(check_rows(RowOp::silu, big, nan1, claim).verdict.kind, TensorKind::defect);
  // A negative input the compute format rounds to −0 (−1e-30 in fp16): log(−0) = rSqrt(−0) = −inf
  // in IEEE arithmetic where the exact result is NaN; in fp32 −1e-30 stays negative: only NaN.
  const TensorData tiny = f32({-1e-30f}, {1}, "X");
  const TensorData minus_inf = f32({-inf}, {1}, "C");
  for (const RowOp op : {RowOp::log, RowOp::rsqrt}) {
    SCOPED_TRACE(row_op_name(op));
    const CheckResult in16 = check_rows(op, tiny, minus_inf, parse_claim("--in fp32 --compute fp16 --out fp32"));
    EXPECT_EQ(in16.verdict.kind, TensorKind::consistent) << in16.text();
    EXPECT_THAT(in16.text(), HasSubstr("negative inputs cast to −0: 1 element equal what the textbook formula gives"));
    EXPECT_EQ(check_rows(op, tiny, nan1, parse_claim("--in fp32 --compute fp16 --out fp32")).verdict.kind,
              TensorKind::consistent);
    EXPECT_EQ(check_rows(op, tiny, f32({0.0f}, {1}, "C"), parse_claim("--in fp32 --compute fp16 --out fp32")).verdict.kind,
              TensorKind::defect);
    EXPECT_EQ(check_rows(op, tiny, minus_inf, claim).verdict.kind, TensorKind::defect);
  }
}

// A saturating fp16 output of exp: exp(12) = 162754.79... > 65504 (0x7bff); exp(11) = 59874.14...
// rounds to 59872 (0x7b4f). Under --saturate 0x7bff is the correctly rounded result of exp(12)
// and +inf (0x7c00) a defect; without it, 0x7bff is a defect (round to nearest overflows to +inf).
TEST(CheckRows, SaturatedElementwiseOutputs) {
  const std::vector<float> xv{12.0f, 11.0f};
  const TensorData x = view(std::span<const float>(xv), {1, 2}, "fp32", "X");
  const auto judged = [&](std::uint16_t c0, const char* claim) {
    const std::vector<std::uint16_t> cv{c0, 0x7b4f};
    return check_rows(RowOp::exp, x, view(std::span<const std::uint16_t>(cv), {1, 2}, "fp16", "C"), parse_claim(claim));
  };
  for (const char* claim : {"--in fp32 --compute fp32 --out fp16 --saturate", "--in fp32 --out fp16 --ulps 1 --saturate"}) {
    SCOPED_TRACE(claim);
    const CheckResult r = judged(0x7bff, claim);
    EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();
    EXPECT_EQ(r.verdict.counts[0], 2);
    EXPECT_EQ(judged(0x7c00, claim).verdict.kind, TensorKind::defect);
  }
  // One ulp below: within "1 ulp" (at the clamped value), not within the derived bound (the fp32
  // exp is far beyond 65504, so the saturated cast gives 65504 exactly).
  EXPECT_EQ(judged(0x7bfe, "--in fp32 --out fp16 --ulps 1 --saturate").verdict.kind, TensorKind::consistent);
  EXPECT_EQ(judged(0x7bfe, "--in fp32 --out fp16 --ulps 0.5 --saturate").verdict.kind, TensorKind::defect);
  EXPECT_EQ(judged(0x7bfe, "--in fp32 --compute fp32 --out fp16 --saturate").verdict.kind, TensorKind::defect);
  EXPECT_EQ(judged(0x7bff, "--in fp32 --compute fp32 --out fp16").verdict.kind, TensorKind::defect);
  EXPECT_EQ(judged(0x7c00, "--in fp32 --compute fp32 --out fp16").verdict.kind, TensorKind::consistent);
}

TEST(CheckRows, GammaBetaAreOneDimensionalInTheirOwnFormat) {
  const std::vector<float> xv{1, 2, 3, 4, 5, 6};
  const TensorData x = view(std::span<const float>(xv), {2, 3}, "bf16", "X");
  const ClaimSpec claim = parse_claim("--in bf16 --out bf16 --compute fp32");
  const std::vector<float> g{1, 2, 0.5f};
  RowCheckOptions o;
  o.gamma = view(std::span<const float>(g), {1, 3}, "fp32", "g.npy");
  o.param_format = &fp32;
  EXPECT_THAT(error_of([&] { check_rows(RowOp::layernorm, x, x, claim, o); }),
              HasSubstr("--gamma g.npy: shape [1, 3], but rows have 3 columns: it needs shape [3]"));
  o.gamma = view(std::span<const float>(g), {3}, "fp32", "g.npy");
  o.param_format = nullptr;  // then gamma must be --in's format
  EXPECT_THAT(error_of([&] { check_rows(RowOp::layernorm, x, x, claim, o); }),
              HasSubstr("--gamma g.npy: holds fp32 values but the claim says bf16"));
  RowCheckOptions bad_eps;
  for (const double eps : {-1e-5, static_cast<double>(NAN), static_cast<double>(INFINITY)}) {
    bad_eps.eps = eps;
    EXPECT_THAT(error_of([&] { check_rows(RowOp::rmsnorm, x, x, claim, bad_eps); }),
                HasSubstr("check rmsnorm: --eps " + fmt::format("{}", eps) + ": must be a finite number >= 0"));
  }
  EXPECT_THAT(error_of([] { variance_method_named("3-pass"); }),
              HasSubstr("--variance '3-pass': unknown method (valid: two-pass, welford, sumsq, chan, rowwise-moments(V), any)"));
  EXPECT_EQ(variance_method_named("welford"), VarianceMethod::welford);
}

constexpr std::int64_t kAxisD0 = 3, kAxisD1 = 5, kAxisD2 = 4;

/// X: a 3×5×4 bf16 tensor of N(0, 2) values (seeded), and C: its softmax along axis 1, naively
/// in double, rounded once to bf16.
std::pair<TensorData, TensorData> softmax_along_axis1(std::uint64_t seed) {
  constexpr std::int64_t D0 = kAxisD0, D1 = kAxisD1, D2 = kAxisD2;
  std::mt19937_64 g(seed);
  std::normal_distribution<double> nd(0, 2);
  TensorData x{&bf16, {D0, D1, D2}, {}, "X"};
  for (std::int64_t i = 0; i < D0 * D1 * D2; ++i) x.values.push_back(convert_double(bf16, nd(g)).bits);
  const auto at = [](std::int64_t i, std::int64_t j, std::int64_t k) { return static_cast<std::size_t>((i * D1 + j) * D2 + k); };
  TensorData c{&bf16, x.shape, std::vector<Bits>(x.values.size()), "C"};
  for (std::int64_t i = 0; i < D0; ++i)
    for (std::int64_t k = 0; k < D2; ++k) {
      double m = -INFINITY, sum = 0;
      for (std::int64_t j = 0; j < D1; ++j) m = std::max(m, to_double(bf16, x.values[at(i, j, k)]));
      for (std::int64_t j = 0; j < D1; ++j) sum += std::exp(to_double(bf16, x.values[at(i, j, k)]) - m);
      for (std::int64_t j = 0; j < D1; ++j)
        c.values[at(i, j, k)] = convert_double(bf16, std::exp(to_double(bf16, x.values[at(i, j, k)]) - m) / sum).bits;
    }
  return {std::move(x), std::move(c)};
}

// A row op along another axis (PyTorch's dim): the check on X and C with that axis moved last by
// hand gives the same verdict; an output normalised along a different axis is a defect.
TEST(CheckRows, AnotherAxisIsMovedLast) {
  constexpr std::int64_t D0 = kAxisD0, D1 = kAxisD1, D2 = kAxisD2;
  const auto [x, c] = softmax_along_axis1(7);
  const auto at = [](std::int64_t i, std::int64_t j, std::int64_t k) { return static_cast<std::size_t>((i * D1 + j) * D2 + k); };
  // The same tensors transposed by hand to [D0, D2, D1].
  const auto moved = [&](const TensorData& t) {
    TensorData m{t.format, {D0, D2, D1}, {}, t.name};
    for (std::int64_t i = 0; i < D0; ++i)
      for (std::int64_t k = 0; k < D2; ++k)
        for (std::int64_t j = 0; j < D1; ++j) m.values.push_back(t.values[at(i, j, k)]);
    return m;
  };
  const ClaimSpec claim = parse_claim("--in bf16 --compute fp32 --out bf16");
  RowCheckOptions axis1, minus2;
  axis1.axis = 1;
  minus2.axis = -2;
  const CheckResult r = check_rows(RowOp::softmax, x, c, claim, axis1);
  const CheckResult by_hand = check_rows(RowOp::softmax, moved(x), moved(c), claim);
  EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();
  EXPECT_EQ(r.verdict.counts, by_hand.verdict.counts);
  EXPECT_EQ(r.verdict.worst.size(), by_hand.verdict.worst.size());
  for (std::size_t i = 0; i < std::min(r.verdict.worst.size(), by_hand.verdict.worst.size()); ++i) {
    EXPECT_EQ(r.verdict.worst[i].row, by_hand.verdict.worst[i].row);
    EXPECT_EQ(r.verdict.worst[i].col, by_hand.verdict.worst[i].col);
    // The flat index is C's as given: [i][j][k] with j the position along the axis.
    const ElementReport& e = r.verdict.worst[i];
    EXPECT_EQ(e.index, ((e.row / D2) * D1 + e.col) * D2 + e.row % D2);
    EXPECT_EQ(c.values[static_cast<std::size_t>(e.index)], e.bits);
  }
  EXPECT_THAT(r.text(), HasSubstr("rows: along axis 1 of shape [3, 5, 4]"));
  EXPECT_EQ(check_rows(RowOp::softmax, x, c, claim, minus2).verdict.counts, r.verdict.counts);
  // Judged along the last axis (the default) or axis 0, the same output is a defect.
  EXPECT_EQ(check_rows(RowOp::softmax, x, c, claim).verdict.kind, TensorKind::defect);
  RowCheckOptions axis0;
  axis0.axis = 0;
  EXPECT_EQ(check_rows(RowOp::softmax, x, c, claim, axis0).verdict.kind, TensorKind::defect);
  RowCheckOptions axis3;
  axis3.axis = 3;
  EXPECT_THAT(error_of([&] { check_rows(RowOp::softmax, x, c, claim, axis3); }),
              HasSubstr("--axis 3 out of range for shape [3, 5, 4]"));
  // An elementwise op does not depend on the axis (it is range-checked all the same).
  const CheckResult e = check_rows(RowOp::exp, x, x, parse_claim("--in bf16 --compute fp32 --out bf16"), axis1);
  EXPECT_EQ(e.verdict.counts, check_rows(RowOp::exp, x, x, parse_claim("--in bf16 --compute fp32 --out bf16")).verdict.counts);
}

// Along another axis, every element the text names is C's as given: the lone outlier's
// signature and the derivation's widest bound said the moved grid's flat index until
// 2026-12-04 ("only element 22 (row 5, column 2)" for C's element [1][2][1], index 29); the
// moved grid's row and column until 2026-12-05 ("(row 5, column 2)"): now C's own position.
TEST(CheckRows, AnotherAxisNamesElementsOfCAsGiven) {
  constexpr std::int64_t D0 = kAxisD0, D1 = kAxisD1, D2 = kAxisD2;
  auto [x, c] = softmax_along_axis1(11);
  const auto at = [](std::int64_t i, std::int64_t j, std::int64_t k) { return static_cast<std::size_t>((i * D1 + j) * D2 + k); };
  // C[1][2][1] doubled: row 1·D2 + 1 = 5 of the moved grid, column 2; flat index 29 as given.
  const std::size_t bad = at(1, 2, 1);
  c.values[bad] = convert_double(bf16, 2 * to_double(bf16, c.values[bad])).bits;
  const ClaimSpec claim = parse_claim("--in bf16 --compute fp32 --out bf16");
  RowCheckOptions axis1;
  axis1.axis = 1;
  const CheckResult r = check_rows(RowOp::softmax, x, c, claim, axis1);
  ASSERT_EQ(r.verdict.kind, TensorKind::defect) << r.text();
  ASSERT_FALSE(r.verdict.worst.empty());
  EXPECT_EQ(r.verdict.worst[0].index, 29);
  EXPECT_THAT(r.text(), HasSubstr("only element 29 (at [1, 2, 1])"));
  // The same with no element listed (--worst 0): the signature alone names it.
  axis1.worst = 0;
  EXPECT_THAT(check_rows(RowOp::softmax, x, c, claim, axis1).text(), HasSubstr("only element 29 (at [1, 2, 1])"));
  // The widest bound: the element named is C's, whose exact value the derivation prints.
  const std::string text = r.text();
  const std::size_t w = text.find("widest bound relative to its exact value: ");
  ASSERT_NE(w, std::string::npos) << text;
  const std::size_t e = text.find(" at element ", w);
  ASSERT_NE(e, std::string::npos) << text;
  const long long widest = std::stoll(text.substr(e + 12));
  ASSERT_GE(widest, 0);
  ASSERT_LT(widest, D0 * D1 * D2);
  // Its exact value, recomputed at C's element [i][j][k], is the one printed.
  const std::int64_t i = widest / (D1 * D2), j = widest / D2 % D1, k = widest % D2;
  double m = -INFINITY, sum = 0;
  for (std::int64_t jj = 0; jj < D1; ++jj) m = std::max(m, to_double(bf16, x.values[at(i, jj, k)]));
  for (std::int64_t jj = 0; jj < D1; ++jj) sum += std::exp(to_double(bf16, x.values[at(i, jj, k)]) - m);
  const double exact = std::exp(to_double(bf16, x.values[at(i, j, k)]) - m) / sum;
  EXPECT_THAT(text.substr(e), HasSubstr(fmt::format("(exact {:.6g})", exact))) << text;
}

TEST(CheckRows, DerivedClaimReportsItsArithmetic) {
  // sigmoid(-100) = 3.7e-44 (fp32 subnormal): 0 is what 1/(1 + exp(100)) gives once exp
  // overflows, so it is legal under the derived claim and not under --ulps 1.
  const std::vector<float> xv{-100.0f};
  const TensorData x = view(std::span<const float>(xv), {1}, "fp32", "X");
  const std::vector<float> zero{0.0f};
  const TensorData c = view(std::span<const float>(zero), {1}, "fp32", "C");
  const CheckResult r = check_rows(RowOp::sigmoid, x, c, parse_claim("--in fp32 --out fp32 --compute fp32"));
  EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();
  EXPECT_EQ(r.claim_text, "in fp32, sigmoid in fp32, functions within 1 ulps, out fp32 rne");
  EXPECT_THAT(r.text(), HasSubstr("exp(-x) may overflow to inf and give 0"));
  EXPECT_EQ(check_rows(RowOp::sigmoid, x, c, parse_claim("--in fp32 --out fp32 --ulps 1")).verdict.kind,
            TensorKind::defect);
}

// The `function-accuracy` signature names the least --fn-ulps of its ladder under which every
// element outside the bound is inside it: checked against fresh checks at that rung (no element
// outside) and at the rung below (some outside), so a wrong rung fails the test.
double signature_fn_ulps(const CheckResult& r) {
  for (const Signature& s : r.verdict.signatures)
    if (s.name == "function-accuracy") {
      const auto at = s.evidence.find("(--fn-ulps ");
      return at == std::string::npos ? -1 : std::stod(s.evidence.substr(at + 11));
    }
  return 0;
}

void expect_least_covering_rung(RowOp op, const TensorData& x, const TensorData& c, double claimed, double expected) {
  const auto claim = [&](double l) { return parse_claim(fmt::format("--in fp32 --out fp32 --compute fp32 --fn-ulps {}", l)); };
  const CheckResult r = check_rows(op, x, c, claim(claimed));
  ASSERT_EQ(r.verdict.kind, TensorKind::defect) << r.text();
  const double l = signature_fn_ulps(r);
  EXPECT_EQ(l, expected) << r.text();
  if (l <= 0) return;
  EXPECT_EQ(check_rows(op, x, c, claim(l)).verdict.counts[3], 0) << "the named rung " << l << " does not cover";
  const std::vector<double> ladder{1.5, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64};
  const auto it = std::find(ladder.begin(), ladder.end(), l);
  ASSERT_NE(it, ladder.end());
  const double below = it == ladder.begin() ? claimed : *(it - 1);
  if (below > claimed) {
    EXPECT_GT(check_rows(op, x, c, claim(below)).verdict.counts[3], 0) << "the rung below " << l << " covers already";
  }
  EXPECT_THAT(r.text(), Not(HasSubstr("lone-outlier")));
}

TEST(CheckRows, FunctionAccuracySignatureNamesTheLeastCoveringFnUlps) {
  std::mt19937_64 g(20261203);
  std::uniform_real_distribution<double> u(-10, 10);
  std::vector<float> xv(2048), cv(2048);
  for (std::size_t i = 0; i < xv.size(); ++i) {
    xv[i] = static_cast<float>(u(g));
    float y = static_cast<float>(std::exp(static_cast<double>(xv[i])));
    // A library exp 2 ulps off on every 7th element (a 2-3 ulp function, not a defect of the kernel).
    if (i % 7 == 0)
      for (int k = 0; k < 2; ++k) y = std::nextafter(y, INFINITY);
    cv[i] = y;
  }
  const TensorData x = view(std::span<const float>(xv), {16, 128}, "fp32", "X");
  const TensorData c = view(std::span<const float>(cv), {16, 128}, "fp32", "C");
  SCOPED_TRACE("exp, every 7th element 2 ulps up");
  expect_least_covering_rung(RowOp::exp, x, c, 1, 3);

  // Softmax: one row's exp 3 ulps off for every 5th element (rows judged again on their own).
  std::vector<float> sv(2048);
  for (std::size_t r = 0; r < 16; ++r) {
    double m = -INFINITY, sum = 0;
    for (std::size_t j = 0; j < 128; ++j) m = std::max(m, static_cast<double>(xv[r * 128 + j]));
    std::vector<double> e(128);
    for (std::size_t j = 0; j < 128; ++j) sum += e[j] = std::exp(static_cast<double>(xv[r * 128 + j]) - m);
    for (std::size_t j = 0; j < 128; ++j) {
      double ej = e[j];
      if (r == 5 && j % 5 == 0) ej *= 1 + 0x3p-18;  // 192 u: outside the sum's 127 u share of the bound
      sv[r * 128 + j] = static_cast<float>(ej / sum);
    }
  }
  const TensorData sc = view(std::span<const float>(sv), {16, 128}, "fp32", "C");
  SCOPED_TRACE("softmax, row 5's exp 3·2^-18 off on every 5th element");
  const CheckResult sr = check_rows(RowOp::softmax, x, sc, parse_claim("--in fp32 --out fp32 --compute fp32"));
  ASSERT_EQ(sr.verdict.kind, TensorKind::defect) << sr.text();
  const double l = signature_fn_ulps(sr);
  ASSERT_GT(l, 1) << sr.text();
  expect_least_covering_rung(RowOp::softmax, x, sc, 1, l);

  // A gross error is no function's: no signature, the lone outlier is named.
  std::vector<float> gross = cv;
  for (std::size_t i = 0; i < gross.size(); i += 7) gross[i] = static_cast<float>(std::exp(static_cast<double>(xv[i])));
  gross[100] *= 1.5f;
  const CheckResult gr = check_rows(RowOp::exp, x, view(std::span<const float>(gross), {16, 128}, "fp32", "C"),
                                    parse_claim("--in fp32 --out fp32 --compute fp32"));
  ASSERT_EQ(gr.verdict.kind, TensorKind::defect) << gr.text();
  EXPECT_EQ(signature_fn_ulps(gr), 0) << gr.text();
  EXPECT_THAT(gr.text(), HasSubstr("lone-outlier"));
}

// Zeros where the exact result is subnormal (a flush to zero) read as "a race or a single
// corrupted write" (lone-outlier): torch 1.13's bf16 GELU flushes a subnormal input. Now named.
TEST(CheckRows, ZerosWhereTheExactResultIsSubnormalAreAFlush) {
  std::vector<float> xv(64), cv(64);
  for (std::size_t i = 0; i < xv.size(); ++i) {
    xv[i] = -0.5f + static_cast<float>(i) / 64;
    cv[i] = static_cast<float>(std::exp(static_cast<double>(xv[i])));  // exp correctly rounded to fp32 (< 1 ulp)
  }
  xv[3] = -100.0f;  // exp(-100) = 3.7e-44: subnormal in fp32
  cv[3] = 0.0f;     // flushed
  const TensorData x = view(std::span<const float>(xv), {64}, "fp32", "X");
  const ClaimSpec claim = parse_claim("--in fp32 --out fp32 --compute fp32");
  const CheckResult r = check_rows(RowOp::exp, x, view(std::span<const float>(cv), {64}, "fp32", "C"), claim);
  ASSERT_EQ(r.verdict.kind, TensorKind::defect) << r.text();
  ASSERT_FALSE(r.verdict.signatures.empty()) << r.text();
  EXPECT_EQ(r.verdict.signatures[0].name, "subnormal-flush");
  EXPECT_THAT(r.verdict.signatures[0].evidence,
              HasSubstr("1 element outside the probabilistic bound is 0 where the exact result is subnormal in fp32 (below "
                        "1.17549e-38; element 3: exact 3.72008e-44): subnormal results or inputs flushed to zero"));
  EXPECT_THAT(r.text(), Not(HasSubstr("lone-outlier")));
  // A zero where the exact result is normal is no flush.
  cv[3] = 1.0f;
  cv[10] = 0.0f;
  const CheckResult z = check_rows(RowOp::exp, x, view(std::span<const float>(cv), {64}, "fp32", "C"), claim);
  EXPECT_THAT(z.text(), Not(HasSubstr("subnormal-flush")));
}

// Cross-platform, the judge's centre is R: a flush is "0 where R is subnormal" there.
TEST(CheckMatmul, ASubnormalFlushAgainstAReferenceNamesR) {
  const std::vector<float> av(16, 0x1p-70f), bv(1, 0x1p-70f), rv(16, 0x1p-140f);  // 2^-140: subnormal in fp32, exact
  std::vector<float> cv = rv;
  cv[0] = 0.0f;
  const ClaimSpec claim = parse_claim("--in fp32 --acc fp32 --out fp32");
  MatmulCheckOptions o;
  o.ref = view(std::span<const float>(rv), {16, 1}, "fp32", "R");
  o.ref_claim = claim;
  const CheckResult r = check_matmul(view(std::span<const float>(av), {16, 1}, "fp32", "A"),
                                     view(std::span<const float>(bv), {1, 1}, "fp32", "B"),
                                     view(std::span<const float>(cv), {16, 1}, "fp32", "C"), claim, o);
  ASSERT_EQ(r.verdict.kind, TensorKind::defect) << r.text();
  ASSERT_FALSE(r.verdict.signatures.empty()) << r.text();
  EXPECT_EQ(r.verdict.signatures[0].name, "subnormal-flush") << r.text();
  EXPECT_THAT(r.verdict.signatures[0].evidence,
              HasSubstr("1 element outside the probabilistic bound is 0 where R (the reference) is subnormal in fp32 (below "
                        "1.17549e-38; element 0: R 7.17465e-43)"));
}

TEST(Tolerance, GammaOfTheAnyOrderBound) {
  const ToleranceResult t = tolerance("matmul", 512, parse_claim("--in bf16 --acc fp32 --out bf16"));
  // γ_511 = 511·2^-24 / (1 - 511·2^-24) (products of bf16 values are exact in fp32).
  const double u = 0x1p-24, g = 511 * u / (1 - 511 * u);
  EXPECT_DOUBLE_EQ(t.bound.deterministic, g);
  EXPECT_EQ(t.bound.roundings, 511);
  EXPECT_THAT(t.text(), HasSubstr("numfid tol matmul: K = 512"));
  EXPECT_THAT(error_of([&] { tolerance("conv", 4, parse_claim("--in bf16 --out bf16")); }), HasSubstr("tol: unknown op 'conv'"));
}

// ------------------------------------------------------------------- floating-point environment

#if defined(__x86_64__) || defined(__i386__)
/// A consumer's test binary built with -ffast-math runs with MXCSR DAZ|FTZ set (crtfastmath);
/// another may have changed the rounding mode. Neither may change a verdict or an emulated bit.
TEST(CheckEnvironment, DazFtzAndRoundingModeOfTheCallerChangeNothing) {
  // Operands whose products and partial sums are subnormal in fp32 (2^-70 · 2^-70 = 2^-140).
  TensorData a{&bf16, {4, 64}, {}, "A"}, b{&bf16, {64, 4}, {}, "B"};
  std::mt19937_64 g(12);
  for (int i = 0; i < 256; ++i) {
    a.values.push_back(Bits{static_cast<std::uint32_t>(0x1c80 + (g() % 0x7f)) | (g() % 2 ? 0x8000u : 0u)});  // ~2^-70
    b.values.push_back(Bits{static_cast<std::uint32_t>(0x1c80 + (g() % 0x7f))});
  }
  const ClaimSpec claim = parse_claim("--in bf16 --plan sequential --out fp32 --out-rounding stochastic --seed 3");
  const auto run = [&] {
    const TensorData c = emulate_matmul(a, b, std::nullopt, claim);
    const CheckResult r = check_matmul(a, b, c, claim);
    return std::make_pair(c.values, r.text() + r.json());
  };
  const auto want = run();
  // The data really are in the subnormal range: some outputs are non-zero subnormals.
  int subnormal = 0;
  for (const Bits x : want.first) subnormal += classify(fp32, x) == FpClass::subnormal;
  ASSERT_GT(subnormal, 0);
  const unsigned saved = _mm_getcsr();
  const int saved_round = std::fegetround();
  _mm_setcsr(saved | 0x8040u);  // FTZ (bit 15) | DAZ (bit 6)
  std::fesetround(FE_TOWARDZERO);
  const auto got = run();
  const unsigned inside = _mm_getcsr();
  std::fesetround(saved_round);
  _mm_setcsr(saved);
  EXPECT_EQ((inside & 0x8040u), 0x8040u) << "the caller's environment must be restored after the calls";
  EXPECT_EQ(got.first, want.first);
  EXPECT_EQ(got.second, want.second);
}
#endif

// The worst elements list every element outside the deterministic bound before the others: an
// element whose bound is not a number (a caller's, or a derivation that gave none) is classed
// outside with |error| / bound = 0, and was left off the list although the verdict counted it.
TEST(Judge, WorstElementsListEveryElementOutsideTheBoundFirst) {
  const ClaimSpec spec = parse_claim("--in fp32 --out fp32");
  const detail::ClaimSetup setup = detail::make_claim(spec, 4, false, false);
  const ReductionBound bound = reduction_bound(setup.claim, 4, false, spec.confidence);
  std::vector<Bits> out;
  std::vector<ReferenceElement> ref;
  for (int i = 0; i < 10; ++i) {
    const double exact = 1 + i;
    const Bits rounded = convert_double(fp32, exact).bits;
    ref.push_back({rounded, exact, exact});
    // Off by one ulp each (within the bound of a sum of 4 terms): ratios between 0 and 1.
    out.push_back(convert_double(fp32, std::nextafter(static_cast<float>(exact), 100.0f)).bits);
  }
  // Element 7: a zero of the other sign against a bound that is not a number.
  ref[7] = {convert_double(fp32, -0.0).bits, -0.0, 0.0, NAN, NAN};
  out[7] = convert_double(fp32, 0.0).bits;
  JudgeOptions opt;
  opt.worst = 3;
  const Verdict v = judge(setup.claim, bound, out, ref, {2, 5}, opt);
  ASSERT_EQ(v.counts[3], 1) << v.reason;
  ASSERT_EQ(v.worst.size(), 3u);
  EXPECT_EQ(v.worst[0].index, 7) << "the element outside the bound is not listed first";
  EXPECT_EQ(v.worst[0].cls, ElementClass::outside_deterministic);
  for (std::size_t k = 1; k < v.worst.size(); ++k) EXPECT_NE(v.worst[k].cls, ElementClass::outside_deterministic);
}

}  // namespace
}  // namespace numfid
