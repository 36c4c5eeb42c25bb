// Integer GEMMs through the check pipeline (tolerances/quant_check.h): claims parsed from the
// text form, outputs built here by plain int64 loops and roundings whose exactness does not
// depend on numfid (power-of-two scales: acc × 2^-s is exact in double, so std::nearbyint and
// std::round are the single roundings), legal outputs judged consistent, each classic bug
// judged a defect with its signature, the int32 overflow reported with its K.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "formats/error.h"
#include "tolerances/check.h"
#include "tolerances/parallel_detail.h"
#include "tolerances/quant_check.h"

namespace numfid {
namespace {

struct Gemm {
  std::int64_t m, k, n;
  std::vector<std::uint8_t> a, b;  // int8 / uint8 patterns
};

Gemm random_gemm(std::int64_t m, std::int64_t k, std::int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  Gemm g{m, k, n, std::vector<std::uint8_t>(static_cast<std::size_t>(m * k)),
         std::vector<std::uint8_t>(static_cast<std::size_t>(k * n))};
  for (auto& x : g.a) x = static_cast<std::uint8_t>(gen());
  for (auto& x : g.b) x = static_cast<std::uint8_t>(gen());
  return g;
}

/// Σ (A - za)(B - zb) by plain loops (A int8, B uint8).
std::vector<std::int64_t> naive_acc(const Gemm& g, std::int64_t za, std::int64_t zb) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(g.m * g.n));
  for (std::int64_t i = 0; i < g.m; ++i)
    for (std::int64_t j = 0; j < g.n; ++j) {
      std::int64_t s = 0;
      for (std::int64_t k = 0; k < g.k; ++k)
        s += (static_cast<std::int8_t>(g.a[static_cast<std::size_t>(i * g.k + k)]) - za) *
             (static_cast<std::int64_t>(g.b[static_cast<std::size_t>(k * g.n + j)]) - zb);
      out[static_cast<std::size_t>(i * g.n + j)] = s;
    }
  return out;
}

/// int8 output: clamp(round(acc · 2^-shift[j]) + zp), `round` one of the C library's roundings.
TensorData int8_output(const Gemm& g, const std::vector<std::int64_t>& acc, const std::vector<int>& shift, std::int64_t zp,
                       double (*round)(double)) {
  std::vector<std::uint8_t> out(acc.size());
  for (std::size_t e = 0; e < acc.size(); ++e) {
    const int s = shift.size() == 1 ? shift[0] : shift[e % static_cast<std::size_t>(g.n)];
    const double y = round(std::ldexp(static_cast<double>(acc[e]), -s)) + static_cast<double>(zp);
    out[e] = static_cast<std::uint8_t>(static_cast<std::int8_t>(std::clamp(y, -128.0, 127.0)));
  }
  return view(std::span<const std::uint8_t>(out), {g.m, g.n}, "int8", "C");
}

/// int32 output: round(acc · 2^-shift) + zp (no saturation needed at these sizes).
TensorData int32_output(const Gemm& g, const std::vector<std::int64_t>& acc, int shift, std::int64_t zp,
                        double (*round)(double)) {
  std::vector<std::uint32_t> out(acc.size());
  for (std::size_t e = 0; e < acc.size(); ++e)
    out[e] = static_cast<std::uint32_t>(static_cast<std::int64_t>(round(std::ldexp(static_cast<double>(acc[e]), -shift))) + zp);
  return view(std::span<const std::uint32_t>(out), {g.m, g.n}, "int32", "C");
}

TensorData A_of(const Gemm& g) { return view(std::span<const std::uint8_t>(g.a), {g.m, g.k}, "int8", "A"); }
TensorData B_of(const Gemm& g) { return view(std::span<const std::uint8_t>(g.b), {g.k, g.n}, "uint8", "B"); }

double rint_even(double x) { return std::nearbyint(x); }  // the default mode: to nearest, ties to even

bool has_signature(const CheckResult& r, std::string_view name, std::string_view evidence_part = {}) {
  for (const Signature& s : r.verdict.signatures)
    if (s.name == name && s.evidence.find(evidence_part) != std::string::npos) return true;
  return false;
}

std::string signatures(const CheckResult& r) {
  std::string s;
  for (const Signature& g : r.verdict.signatures) s += g.name + ": " + g.evidence + "\n";
  return s;
}

constexpr const char* kClaim =
    "--in int8 --in-b uint8 --acc int32 --out int8 --zero-point-a -3 --zero-point-b 131 --out-scale 0x1p-9 "
    "--out-zero-point 5 --saturate";

TEST(QuantClaim, TextRoundTrip) {
  const ClaimSpec c = parse_claim(std::string(kClaim) + " --requant-rounding rna");
  EXPECT_TRUE(is_integer_claim(c));
  EXPECT_EQ(c.text(), "--in int8 --in-b uint8 --acc int32 --out int8 --zero-point-a -3 --zero-point-b 131 "
                      "--out-scale 0x1p-9 --out-zero-point 5 --requant-rounding rna --saturate");
  EXPECT_EQ(parse_claim(c.text()).text(), c.text());
  ASSERT_EQ(c.quant.out_scale.size(), 1u);
  EXPECT_EQ(c.quant.out_scale[0], 0x1p-9);
  const ClaimSpec per = parse_claim("--in uint8 --acc int32 --out uint8 --out-scale 0.5,0.25,0.125");
  EXPECT_EQ(per.quant.out_scale, (std::vector<double>{0.5, 0.25, 0.125}));
  const ClaimSpec file = parse_claim("--in uint8 --acc int32 --out uint8 --out-scale scales.npy");
  EXPECT_TRUE(file.quant.scale_file_pending());
}

TEST(QuantClaim, Refusals) {
  const auto refused = [](const std::string& text, const std::string& part) {
    try {
      parse_claim(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  refused("--in int8 --out int32", "give --acc int32 (without --acc the accumulator is fp32");
  refused("--in int8 --acc fp32 --out int32", "--acc fp32: integer inputs accumulate in int32");
  refused("--in int8 --acc int32 --out int8 --zero-point-a 128", "outside int8's range");
  refused("--in uint8 --acc int32 --out uint8 --zero-point-a -1", "outside uint8's range");
  refused("--in int8 --acc int32 --out fp32 --out-zero-point 3", "no zero point");
  refused("--in bf16 --out bf16 --zero-point-a 3", "need integer inputs");
  refused("--in int8 --acc int32 --out int8 --requant-fixed-point --requant-rounding rna", "excludes");
  refused("--in int8 --acc int32 --out int8 --requant-rounding stochastic", "deterministically");
  refused("--in int8 --acc int32 --out int8 --out-scale -0.5", "positive");
  refused("--in int8 --acc int32 --out int8 --out-scale 0.5,x", "not a number");
  // nan and inf are numbers (not file names), refused as scales; beyond a double's range too.
  refused("--in int8 --acc int32 --out int8 --out-scale nan", "--out-scale 'nan': nan is not a positive finite scale");
  refused("--in int8 --acc int32 --out int8 --out-scale INF", "--out-scale 'INF': INF is not a positive finite scale");
  refused("--in int8 --acc int32 --out int8 --out-scale 1e-400", "1e-400 is not a positive finite scale");
  refused("--in int8 --acc int32 --out int8 --out-scale 1e999", "1e999 is not a positive finite scale");
  EXPECT_EQ(parse_claim("--in int8 --acc int32 --out int8 --out-scale 1e-320").quant.out_scale,
            std::vector<double>{1e-320});  // a subnormal double is a positive finite scale
  refused("--in int8 --acc int32 --out int8 --plan sequential", "do not apply");
  refused("--in int8 --acc int32 --out int8 --zero-point-a 1.5", "not an integer");
}

TEST(QuantCheck, LegalOutputIsConsistentAndPredicted) {
  const Gemm g = random_gemm(9, 200, 7, 1);
  const std::vector<std::int64_t> acc = naive_acc(g, -3, 131);
  const TensorData C = int8_output(g, acc, {9}, 5, rint_even);
  const CheckResult r = check_matmul(A_of(g), B_of(g), C, parse_claim(kClaim));
  EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();
  EXPECT_EQ(r.verdict.counts[0], 63);
  ASSERT_TRUE(r.model);
  EXPECT_EQ(r.model->equal, 63);
  EXPECT_EQ(r.exit_code(), 0);
  // The emulation is the same output.
  EXPECT_EQ(emulate_matmul(A_of(g), B_of(g), std::nullopt, parse_claim(kClaim)).values, C.values);
}

TEST(QuantCheck, PerChannelScales) {
  const Gemm g = random_gemm(5, 64, 3, 2);
  const std::vector<std::int64_t> acc = naive_acc(g, 0, 128);
  const TensorData C = int8_output(g, acc, {8, 9, 10}, 0, rint_even);
  const std::string claim = "--in int8 --in-b uint8 --acc int32 --out int8 --zero-point-b 128 --saturate "
                            "--out-scale 0x1p-8,0x1p-9,0x1p-10";
  EXPECT_EQ(check_matmul(A_of(g), B_of(g), C, parse_claim(claim)).verdict.kind, TensorKind::consistent);
  // The scales of the wrong columns (reversed): a defect.
  const TensorData W = int8_output(g, acc, {10, 9, 8}, 0, rint_even);
  EXPECT_EQ(check_matmul(A_of(g), B_of(g), W, parse_claim(claim)).verdict.kind, TensorKind::defect);
  // Too few scales for the columns: an input error naming the option.
  EXPECT_THROW(check_matmul(A_of(g), B_of(g), C, parse_claim("--in int8 --in-b uint8 --acc int32 --out int8 "
                                                             "--out-scale 0.5,0.25")),
               InputError);
}

TEST(QuantCheck, WrongRequantRoundingIsADefectWithItsSignature) {
  const Gemm g = random_gemm(16, 100, 16, 3);
  const std::vector<std::int64_t> acc = naive_acc(g, -3, 131);
  // Scale 1/2 into int32: every odd accumulator is a tie. std::round: ties away from zero,
  // where the claim rounds ties to even.
  const std::string claim = "--in int8 --in-b uint8 --acc int32 --out int32 --zero-point-a -3 --zero-point-b 131 "
                            "--out-scale 0.5 --out-zero-point 5";
  const TensorData C = int32_output(g, acc, 1, 5, static_cast<double (*)(double)>(std::round));
  EXPECT_EQ(check_matmul(A_of(g), B_of(g), int32_output(g, acc, 1, 5, rint_even), parse_claim(claim)).verdict.kind,
            TensorKind::consistent);
  const CheckResult r = check_matmul(A_of(g), B_of(g), C, parse_claim(claim));
  ASSERT_EQ(r.verdict.kind, TensorKind::defect) << r.text();
  EXPECT_GT(r.verdict.counts[3], 20);
  EXPECT_TRUE(has_signature(r, "requant-rounding", "rounded rna")) << signatures(r);
  EXPECT_FALSE(has_signature(r, "zero-point-sign")) << signatures(r);
  // Stated as rna, the same output is consistent.
  EXPECT_EQ(check_matmul(A_of(g), B_of(g), C, parse_claim(claim + " --requant-rounding rna")).verdict.kind,
            TensorKind::consistent);
}

TEST(QuantCheck, ZeroPointSignIsADefectWithItsSignature) {
  const Gemm g = random_gemm(8, 50, 8, 4);
  const std::vector<std::int64_t> acc = naive_acc(g, 3, 131);  // a + 3 where the claim says a - (-3)... flipped
  const TensorData C = int8_output(g, acc, {9}, 5, rint_even);
  const CheckResult r = check_matmul(A_of(g), B_of(g), C, parse_claim(kClaim));
  ASSERT_EQ(r.verdict.kind, TensorKind::defect);
  EXPECT_TRUE(has_signature(r, "zero-point-sign", "A's zero point")) << signatures(r);
  // The output zero point subtracted instead of added.
  const TensorData D = int8_output(g, naive_acc(g, -3, 131), {9}, -5, rint_even);
  const CheckResult s = check_matmul(A_of(g), B_of(g), D, parse_claim(kClaim));
  ASSERT_EQ(s.verdict.kind, TensorKind::defect);
  EXPECT_TRUE(has_signature(s, "zero-point-sign", "output zero point")) << signatures(s);
}

TEST(QuantCheck, Int32OverflowIsReportedWithItsK) {
  // K = 2^17 + 1 products (-128)·(-128) = 2^14: the exact sum 2^31 + 2^14 leaves int32.
  const std::int64_t K = (1 << 17) + 1;
  const std::vector<std::uint8_t> a(static_cast<std::size_t>(K), 0x80), b(static_cast<std::size_t>(K), 0x80);
  const TensorData A = view(std::span<const std::uint8_t>(a), {1, K}, "int8", "A");
  const TensorData B = view(std::span<const std::uint8_t>(b), {K, 1}, "int8", "B");
  const std::uint32_t wrapped = static_cast<std::uint32_t>((1LL << 31) + (1LL << 14));  // two's complement wrap
  const TensorData C = view(std::span<const std::uint32_t>(&wrapped, 1), {1, 1}, "int32", "C");
  const ClaimSpec claim = parse_claim("--in int8 --acc int32 --out int32");
  const CheckResult r = check_matmul(A, B, C, claim);
  ASSERT_EQ(r.verdict.kind, TensorKind::defect);
  EXPECT_TRUE(has_signature(r, "int32-overflow", "first happen at K = 131072")) << signatures(r);
  EXPECT_TRUE(has_signature(r, "int32-overflow", "1 of them equal the wrapped")) << signatures(r);
  // The emulation wraps, as the hardware's int32 adders do.
  EXPECT_EQ(emulate_matmul(A, B, std::nullopt, claim).values, C.values);
}

// A clamped int8 output under a claim without --saturate (no scale: out = acc): every element
// that leaves the range is a defect, the signature says to add --saturate, and nothing else is
// claimed: no model "matching" it (the claim gives those elements no value; emulate refuses) and
// no "rounded rna / rtz / ... instead of rne", which every rounding of an integer gives alike.
TEST(QuantCheck, AClampWithoutSaturateIsNoRoundingAndNoModelMatch) {
  const Gemm g = random_gemm(4, 64, 4, 12);
  const std::vector<std::int64_t> acc = naive_acc(g, 0, 0);
  const TensorData C = int8_output(g, acc, {0}, 0, rint_even);
  const ClaimSpec claim = parse_claim("--in int8 --in-b uint8 --acc int32 --out int8");
  const CheckResult r = check_matmul(A_of(g), B_of(g), C, claim);
  ASSERT_EQ(r.verdict.kind, TensorKind::defect) << r.text();
  EXPECT_TRUE(has_signature(r, "requant-overflow")) << signatures(r);
  EXPECT_FALSE(has_signature(r, "requant-rounding")) << signatures(r);
  EXPECT_FALSE(r.model.has_value()) << r.text();
  EXPECT_TRUE(r.predicted.empty());
  // Under --saturate the same output is the claim's, bit for bit, and its model predicts it.
  const CheckResult sat = check_matmul(A_of(g), B_of(g), C, parse_claim("--in int8 --in-b uint8 --acc int32 --out int8 --saturate"));
  EXPECT_EQ(sat.verdict.kind, TensorKind::consistent) << sat.text();
  ASSERT_TRUE(sat.model.has_value());
  EXPECT_EQ(sat.model->equal, sat.model->elements);
}

TEST(QuantCheck, ChecksAreIdenticalForAnyThreadCount) {
  // The elements are judged on every core in chunks of 16384: 140 × 130 outputs are two chunks.
  // Requantised without --saturate at a scale that leaves int8's range (out-of-range elements
  // in both chunks: mismatched and overflowing), two more elements changed: the whole report,
  // text and JSON, for 1, 2 and 7 threads.
  struct Restore {
    ~Restore() { detail::set_check_threads(0); }
  } restore;
  const Gemm g = random_gemm(140, 40, 130, 8);
  const std::vector<std::int64_t> acc = naive_acc(g, -3, 131);
  TensorData C = int8_output(g, acc, {8}, 5, rint_even);
  C.values[7] = Bits{C.values[7].raw ^ 0x01u};
  C.values[17000] = Bits{C.values[17000].raw ^ 0x10u};
  const ClaimSpec claim = parse_claim("--in int8 --in-b uint8 --acc int32 --out int8 --zero-point-a -3 --zero-point-b 131 "
                                      "--out-scale 0x1p-8 --out-zero-point 5");
  std::string first;
  for (const int threads : {1, 2, 7}) {
    detail::set_check_threads(threads);
    const CheckResult r = check_matmul(A_of(g), B_of(g), C, claim);
    ASSERT_EQ(r.verdict.kind, TensorKind::defect) << r.text();
    EXPECT_TRUE(has_signature(r, "requant-overflow")) << signatures(r);
    const std::string now = r.text() + r.json();
    if (first.empty()) first = now;
    EXPECT_EQ(now, first) << threads << " threads";
  }
}

TEST(QuantCheck, FloatOutputAndRowwiseDot) {
  const Gemm g = random_gemm(6, 40, 6, 5);
  const std::vector<std::int64_t> acc = naive_acc(g, 0, 0);
  const float s = 0x1.3p-7f;  // an fp32 scale: |acc| < 2^22, so acc × s is exact in double
  std::vector<float> out(acc.size());
  for (std::size_t e = 0; e < acc.size(); ++e) out[e] = static_cast<float>(static_cast<double>(acc[e]) * s);
  const TensorData C = view(std::span<const float>(out), {g.m, g.n}, "fp32", "C");
  const ClaimSpec claim = parse_claim(fmt::format("--in int8 --in-b uint8 --acc int32 --out fp32 --out-scale {:a}", s));
  const CheckResult r = check_matmul(A_of(g), B_of(g), C, claim);
  EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();
  // Row-wise dot: row r of A against row r of B (R×K each).
  std::vector<std::uint8_t> b2(g.a.size());
  for (std::size_t i = 0; i < b2.size(); ++i) b2[i] = g.b[i % g.b.size()];
  std::vector<std::uint32_t> d(static_cast<std::size_t>(g.m));
  for (std::int64_t i = 0; i < g.m; ++i) {
    std::int64_t sum = 0;
    for (std::int64_t k = 0; k < g.k; ++k)
      sum += static_cast<std::int8_t>(g.a[static_cast<std::size_t>(i * g.k + k)]) *
             static_cast<std::int64_t>(b2[static_cast<std::size_t>(i * g.k + k)]);
    d[static_cast<std::size_t>(i)] = static_cast<std::uint32_t>(sum);
  }
  const TensorData B2 = view(std::span<const std::uint8_t>(b2), {g.m, g.k}, "uint8", "B");
  const TensorData D = view(std::span<const std::uint32_t>(d), {g.m}, "int32", "D");
  const ClaimSpec dc = parse_claim("--in int8 --in-b uint8 --acc int32 --out int32");
  EXPECT_EQ(check_dot(A_of(g), B2, D, dc).verdict.kind, TensorKind::consistent);
  std::vector<std::uint32_t> bad = d;
  bad[2] += 1;
  EXPECT_EQ(check_dot(A_of(g), B2, view(std::span<const std::uint32_t>(bad), {g.m}, "int32", "D"), dc).verdict.counts[3],
            1);
}

// A float output's overflow is IEEE 754's (§7.4: ±inf under rne/rna, the largest finite value
// where the rounding direction points back to zero) or the OCP FP8 spec's (E4M3 has no inf: NaN
// unless saturating), and --saturate gives ±max: a value of the claim, as the output cast of a
// float matmul. Once the integer path called it "no value": emulate refused even under
// --saturate and check called the saturated or the infinite output a defect.
TEST(QuantCheck, FloatOutputOverflowIsIeee754s) {
  // acc = ±129032 (8 × 127 × 127), × 10 = ±1290320: beyond fp16 (65504), E4M3 (448), E5M2 (57344).
  const std::vector<std::uint8_t> a(8, 127);
  std::vector<std::uint8_t> b;
  for (int k = 0; k < 8; ++k) b.insert(b.end(), {127, static_cast<std::uint8_t>(-127)});
  const TensorData A = view(std::span<const std::uint8_t>(a), {1, 8}, "int8", "A");
  const TensorData B = view(std::span<const std::uint8_t>(b), {8, 2}, "int8", "B");
  struct Case {
    const char* claim;
    std::uint32_t pos, neg;  // the expected patterns of +1290320 and -1290320
  };
  const Case cases[] = {
      {"--out fp16", 0x7c00, 0xfc00},                                // rne: ±inf
      {"--out fp16 --requant-rounding rna", 0x7c00, 0xfc00},
      {"--out fp16 --requant-rounding rtz", 0x7bff, 0xfbff},         // toward zero: ±65504
      {"--out fp16 --requant-rounding rup", 0x7c00, 0xfbff},
      {"--out fp16 --requant-rounding rdn", 0x7bff, 0xfc00},
      {"--out fp16 --saturate", 0x7bff, 0xfbff},
      {"--out fp8_e4m3", 0x7f, 0xff},                                // no inf: NaN
      {"--out fp8_e4m3 --saturate", 0x7e, 0xfe},                     // ±448
      {"--out fp8_e5m2", 0x7c, 0xfc},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.claim);
    const ClaimSpec claim = parse_claim(fmt::format("--in int8 --acc int32 --out-scale 10 {}", c.claim));
    const TensorData e = emulate_matmul(A, B, std::nullopt, claim);
    ASSERT_EQ(e.values.size(), 2u);
    EXPECT_EQ(e.values[0].raw, c.pos) << fmt::format("{:#x}", e.values[0].raw);
    EXPECT_EQ(e.values[1].raw, c.neg) << fmt::format("{:#x}", e.values[1].raw);
    const CheckResult own = check_matmul(A, B, e, claim);
    EXPECT_EQ(own.verdict.kind, TensorKind::consistent) << own.text();
    TensorData other = e;  // the value of the other overflow rule is a defect
    const bool sat = claim.saturate;
    other.values[0] = Bits{c.pos ^ (sat ? (claim.out->bits == 8 ? 0x01u : 0x07ffu) : 0x01u)};
    EXPECT_EQ(check_matmul(A, B, other, claim).verdict.counts[3], 1);
  }
}

TEST(QuantCheck, FixedPointPipelineWithBias) {
  // TFLite's integer pipeline, restated here from its definition for a scale of 3·2^-12
  // (QuantizeMultiplier: 0.75·2^-10 -> M = 0.75·2^31, shift -10): y = floor(acc·M/2^31 + 1/2)
  // (the doubling high mul), then / 2^10 rounded half away from zero, + zero point, clamped.
  const Gemm g = random_gemm(7, 90, 6, 6);
  std::vector<std::int64_t> acc = naive_acc(g, 0, 128);
  std::vector<std::uint32_t> bias(acc.size());
  std::mt19937 gen(7);
  for (std::size_t e = 0; e < acc.size(); ++e) {
    const auto b = static_cast<std::int32_t>(gen() % 20001) - 10000;
    bias[e] = static_cast<std::uint32_t>(b);
    acc[e] += b;
  }
  std::vector<std::uint8_t> out(acc.size());
  for (std::size_t e = 0; e < acc.size(); ++e) {
    const long double hi = std::floor(static_cast<long double>(acc[e]) * 0.75L + 0.5L);  // acc·M/2^31 = acc·0.75
    const long double q = hi / 1024;
    const long double r = q < 0 ? -std::floor(-q + 0.5L) : std::floor(q + 0.5L);         // half away from zero
    out[e] = static_cast<std::uint8_t>(static_cast<std::int8_t>(std::clamp(r - 7, -128.0L, 127.0L)));
  }
  const TensorData C = view(std::span<const std::uint8_t>(out), {g.m, g.n}, "int8", "C");
  const ClaimSpec claim = parse_claim("--in int8 --in-b uint8 --acc int32 --zero-point-b 128 --out int8 --out-scale 0x1.8p-11 "
                                      "--out-zero-point -7 --saturate --requant-fixed-point");
  MatmulCheckOptions o;
  o.addend = view(std::span<const std::uint32_t>(bias), {g.m, g.n}, "int32", "bias");
  const CheckResult r = check_matmul(A_of(g), B_of(g), C, claim, o);
  EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();
  // The same output under the exact-rounding claim: the double rounding shows on some elements.
  const ClaimSpec exact = parse_claim("--in int8 --in-b uint8 --acc int32 --zero-point-b 128 --out int8 "
                                      "--out-scale 0x1.8p-11 --out-zero-point -7 --saturate --requant-rounding rna");
  const CheckResult x = check_matmul(A_of(g), B_of(g), C, exact, o);
  if (x.verdict.kind == TensorKind::defect) {
    EXPECT_TRUE(has_signature(x, "requant-rounding", "fixed-point")) << signatures(x);
  }
}

TEST(QuantCheck, ToleranceStatesExactnessAndOverflowK) {
  const ToleranceResult t = tolerance("matmul", 4096, parse_claim("--in int8 --acc int32 --out int32"));
  EXPECT_EQ(t.bound.deterministic, 0);
  EXPECT_NE(t.text().find("first leave int32 at K = 131072"), std::string::npos) << t.text();
  EXPECT_NE(t.json().find("\"first_k\": 131072"), std::string::npos) << t.json();
  // uint8 × int8 (the VNNI operand pair): 255·(-128) per term.
  const ToleranceResult u = tolerance("matmul", 70000, parse_claim("--in uint8 --in-b int8 --acc int32 --out int32"));
  EXPECT_NE(u.text().find("K = 65794"), std::string::npos) << u.text();
  EXPECT_NE(u.text().find("an overflow is possible"), std::string::npos) << u.text();
}

}  // namespace
}  // namespace numfid
