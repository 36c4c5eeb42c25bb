// Scaled float GEMMs through the pipeline (tolerances/quant_check.h, numerics/scaled_gemm.h)
// against a naive implementation written here from the definitions: FP8 E4M3 decoded by its
// field layout (OCP OFP8), partial sums in hardware float (fp8·fp8 products are exact in
// float, so `p += a*b` is the one rounding of p + a·b), promotion as fmaf(fp32(sa·sb), p, o)
// (DeepGEMM's `final_accum += scale * accum`, contracted); exact values in long double where
// they are exact. Legal outputs consistent and predicted bit for bit; wrong-block scales and a
// missing promotion under a narrow accumulator judged defects.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <functional>
#include <cstring>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "formats/convert.h"
#include "formats/error.h"
#include "numerics/profile.h"
#include "numerics/scaled_gemm.h"
#include "tolerances/check.h"
#include "tolerances/quant_check.h"

#include "suites_kernels.h"

namespace numfid {
namespace {

using numfid_test_kernels::e4m3_value;  // the suites' naive decoder (tests/suites_kernels.h)

std::uint32_t bits_of(float f) {
  std::uint32_t b = 0;
  std::memcpy(&b, &f, 4);
  return b;
}

struct Problem {
  std::int64_t m, k, n;
  std::vector<std::uint8_t> a, b;
  std::vector<double> sa, sb;  // A: 1xKB blocks (M × K/KB), B: KBxKB blocks (K/KB × ⌈N/KB⌉)
  std::int64_t kb;
};

Problem make(std::int64_t m, std::int64_t k, std::int64_t n, std::int64_t kb, unsigned seed, bool positive = false) {
  std::mt19937 gen(seed);
  Problem p{m, k, n, {}, {}, {}, {}, kb};
  const auto pattern = [&] {
    std::uint8_t x = 0;
    do x = static_cast<std::uint8_t>(gen() & (positive ? 0x7f : 0xff));
    while ((x & 0x7f) == 0x7f || (x & 0x78) == 0x78);  // no NaN; magnitudes below 256
    return x;
  };
  for (std::int64_t i = 0; i < m * k; ++i) p.a.push_back(pattern());
  for (std::int64_t i = 0; i < k * n; ++i) p.b.push_back(pattern());
  // fp32 scales, not powers of two (as DeepSeek's amax / 448 scales).
  for (std::int64_t i = 0; i < m * (k / kb); ++i) p.sa.push_back(static_cast<float>(std::ldexp(1.0 + static_cast<double>(gen() % 1000) / 997.0, -8)));
  for (std::int64_t i = 0; i < (k / kb) * ((n + kb - 1) / kb); ++i)
    p.sb.push_back(static_cast<float>(std::ldexp(1.0 + static_cast<double>(gen() % 1000) / 991.0, -6)));
  return p;
}

double sa_of(const Problem& p, std::int64_t i, std::int64_t k) { return p.sa[static_cast<std::size_t>(i * (p.k / p.kb) + k / p.kb)]; }
double sb_of(const Problem& p, std::int64_t k, std::int64_t j) {
  return p.sb[static_cast<std::size_t>((k / p.kb) * ((p.n + p.kb - 1) / p.kb) + j / p.kb)];
}

/// The promotion model, naively: partials of `chunk` in float, promoted by fmaf. `promote`
/// false: the whole K in one partial of the inner accumulator `inner` (a missing promotion),
/// scaled at the end by the first block's scales (only meaningful with equal scales).
std::vector<float> naive(const Problem& p, std::int64_t chunk, float (*inner)(float) = nullptr) {
  std::vector<float> out(static_cast<std::size_t>(p.m * p.n));
  for (std::int64_t i = 0; i < p.m; ++i)
    for (std::int64_t j = 0; j < p.n; ++j) {
      float o = 0;
      for (std::int64_t c = 0; c < p.k; c += chunk) {
        float part = 0;
        for (std::int64_t k = c; k < std::min(p.k, c + chunk); ++k) {
          part += e4m3_value(p.a[static_cast<std::size_t>(i * p.k + k)]) * e4m3_value(p.b[static_cast<std::size_t>(k * p.n + j)]);
          if (inner) part = inner(part);
        }
        const auto s = static_cast<float>(sa_of(p, i, c) * sb_of(p, c, j));
        o = std::fmaf(s, part, o);
      }
      out[static_cast<std::size_t>(i * p.n + j)] = o;
    }
  return out;
}

TensorData A_of(const Problem& p) { return view(std::span<const std::uint8_t>(p.a), {p.m, p.k}, "fp8_e4m3", "A"); }
TensorData B_of(const Problem& p) { return view(std::span<const std::uint8_t>(p.b), {p.k, p.n}, "fp8_e4m3", "B"); }
TensorData C_of(const Problem& p, const std::vector<float>& c) { return view(std::span<const float>(c), {p.m, p.n}, "fp32", "C"); }

ClaimSpec deepseek_claim(const Problem& p, const std::string& extra = "") {
  ClaimSpec c = parse_claim(fmt::format("--in fp8_e4m3 --out fp32 --scale-a a.npy --scale-b b.npy --scale-block 1x{},{}x{} {}",
                                        p.kb, p.kb, p.kb, extra));
  c.quant.scale_a = p.sa;  // what the CLI reads from the files
  c.quant.scale_b = p.sb;
  return c;
}

TEST(ScaledGemm, ClaimText) {
  const ClaimSpec c = parse_claim("--in fp8_e4m3 --out bf16 --scale-a sa.npy --scale-b sb.npy --scale-block 1x128,128x128 "
                                  "--promote-every 128");
  EXPECT_TRUE(is_scaled_claim(c));
  EXPECT_EQ(c.text(), "--in fp8_e4m3 --out bf16 --scale-a sa.npy --scale-b sb.npy --scale-block 1x128,128x128 "
                      "--promote-every 128");
  EXPECT_TRUE(c.quant.operand_scales_pending());
  EXPECT_THROW(parse_claim("--in fp8_e4m3 --out fp32 --scale-block 1x128"), InputError);  // no scale tensors
  EXPECT_THROW(parse_claim("--in fp8_e4m3 --out fp32 --scale-a 1 --scale-b 1 --scale-block 1y3"), InputError);
  EXPECT_THROW(parse_claim("--in int8 --acc int32 --out int32 --promote-every 4"), InputError);
  EXPECT_THROW(parse_claim("--in fp8_e4m3 --out fp32 --promote-every 0"), InputError);
}

TEST(ScaledGemm, EmulationIsTheNaiveModelBitForBit) {
  const Problem p = make(5, 384, 7, 128, 1);
  const std::vector<float> want = naive(p, 128);
  const TensorData d = emulate_matmul(A_of(p), B_of(p), std::nullopt, deepseek_claim(p, "--promote-every 128"));
  ASSERT_EQ(d.values.size(), want.size());
  for (std::size_t e = 0; e < want.size(); ++e)
    ASSERT_EQ(d.values[e].raw, bits_of(want[e])) << fmt::format("element {}: {:a} vs naive {:a}", e,
                                                                to_double(fp32, d.values[e]), want[e]);
  // Promotion every 64 inside 128-blocks: the same naive loop with chunk 64.
  const std::vector<float> want64 = naive(p, 64);
  const TensorData d64 = emulate_matmul(A_of(p), B_of(p), std::nullopt, deepseek_claim(p, "--promote-every 64"));
  for (std::size_t e = 0; e < want64.size(); ++e) ASSERT_EQ(d64.values[e].raw, bits_of(want64[e])) << e;
}

TEST(ScaledGemm, HardwareFmaPathIsTheSoftFloatModelBitForBit) {
  // scaled_gemm_emulate / scaled_dot_emulate run fp32 partials (round to nearest even) on the
  // hardware's fmaf; the soft-float fma (tested against MPFR in formats/) is the reference.
  // Operands of five formats with every pattern class — zeros of both signs, subnormals,
  // cancelling pairs (exact zero partials), values whose products overflow fp32 (bf16), inf
  // and NaN in some rows and columns (inf - inf: the platform's NaN, recomputed in soft float)
  // — addends with ±0, ±inf, NaN and subnormals, outputs in four formats and three roundings.
  struct Restore {
    ~Restore() { detail::set_scaled_emulation_soft_float(false); }
  } restore;
  std::mt19937 gen(77);
  const FormatSpec* const ins[] = {&fp8_e4m3, &fp8_e5m2, &bf16, &fp16, &fp4_e2m1};
  const FormatSpec* const outs[] = {&fp32, &bf16, &fp8_e4m3, &fp16};
  const Rounding roundings[] = {Rounding::rne, Rounding::rtz, Rounding::stochastic};
  int compared = 0, nan_elements = 0;
  for (int c = 0; c < 40; ++c) {
    const FormatSpec& f = *ins[c % 5];
    const std::int64_t m = 9, k = 96, n = 7, chunk = c % 2 ? 32 : 16;
    const std::uint32_t mask = (1u << f.bits) - 1, sign = 1u << (f.bits - 1);
    // A line of K patterns: row/column 0 random patterns of every class; 1 finite values of
    // moderate size; 2 holding one inf; 3 one NaN; 4 zeros of both signs; others moderate.
    const auto moderate = [&]() {
      for (;;) {
        const Bits x{static_cast<std::uint32_t>(gen()) & mask};
        const FpClass cl = classify(f, x);
        if (cl == FpClass::nan || cl == FpClass::infinite) continue;
        if (f.bits == 16 && std::fabs(to_double(f, x)) > 1e4) continue;
        return x;
      }
    };
    const auto special = [&](bool nan) {
      for (std::uint32_t p = 0; p <= mask; ++p) {
        const FpClass cl = classify(f, Bits{p});
        if (cl == (nan ? FpClass::nan : FpClass::infinite)) return Bits{p};
      }
      return moderate();  // the format has none (fp4): a finite value
    };
    const auto line = [&](std::int64_t l) {
      std::vector<Bits> v(static_cast<std::size_t>(k));
      for (std::int64_t t = 0; t < k; ++t) {
        Bits x = l == 0 ? Bits{static_cast<std::uint32_t>(gen()) & mask} : moderate();
        if (l == 4) x = Bits{(c % 2 != 0 || t % 2 != 0) ? sign : 0u};  // -0 only (odd cases) or both zeros
        v[static_cast<std::size_t>(t)] = x;
      }
      if (l == 2) v[5] = special(false);
      if (l == 3) v[40] = special(true);
      if (l == 5)  // cancelling pairs over the first chunk
        for (std::int64_t t = 0; t < chunk; t += 2) v[static_cast<std::size_t>(t + 1)] = Bits{v[static_cast<std::size_t>(t)].raw ^ sign};
      return v;
    };
    std::vector<Bits> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n)), bd(static_cast<std::size_t>(m * k));
    for (std::int64_t i = 0; i < m; ++i) {
      const std::vector<Bits> r = line(i);
      std::vector<Bits> rd = line((i + 3) % m);
      if (i == 4)  // positive against row 4's zeros: products of one sign (-0 only, odd cases)
        for (Bits& x : rd) x = Bits{x.raw & ~sign};
      std::copy(r.begin(), r.end(), a.begin() + i * k);
      std::copy(rd.begin(), rd.end(), bd.begin() + i * k);
    }
    for (std::int64_t j = 0; j < n; ++j) {
      std::vector<Bits> col = line(j);
      if (j == 6)  // positive against row 4's zeros: products of one sign (-0 only, odd cases)
        for (Bits& x : col) x = Bits{x.raw & ~sign};
      if (j == 5)  // against row 5's cancelling pairs: equal entries, so products cancel
        for (std::int64_t t = 0; t < chunk; t += 2) col[static_cast<std::size_t>(t + 1)] = col[static_cast<std::size_t>(t)];
      for (std::int64_t t = 0; t < k; ++t) b[static_cast<std::size_t>(t * n + j)] = col[static_cast<std::size_t>(t)];
    }
    const bool pow2 = c % 3 == 0;
    const auto scale = [&] {
      const double s = static_cast<float>(std::ldexp(1.0 + static_cast<double>(gen() % 1000) / 997.0, static_cast<int>(gen() % 20) - 10));
      return pow2 ? std::ldexp(1.0, std::ilogb(s)) : s;
    };
    std::vector<double> sa(static_cast<std::size_t>(m * (k / chunk))), sb(static_cast<std::size_t>((k / chunk) * n)),
        sbd(static_cast<std::size_t>(m * (k / chunk)));
    for (double& x : sa) x = scale();
    for (double& x : sb) x = scale();
    for (double& x : sbd) x = scale();
    std::vector<Bits> addend;
    if (c % 4 != 0) {
      const std::uint32_t specials[] = {0x80000000u, 0x00000000u, 0x7f800000u, 0xff800000u, 0x7fc00001u, 0x00000003u, 0x80400000u};
      for (std::int64_t e = 0; e < m * n; ++e)
        addend.push_back(e / n == 4 || e == 4 ? Bits{0x80000000u}  // row 4 (and the dot's element 4) from -0
                         : e % 5 == 1 ? Bits{specials[static_cast<std::size_t>(e / 5) % 7]}
                                    : Bits{std::bit_cast<std::uint32_t>(static_cast<float>(static_cast<int>(gen() % 200) - 100) / 4)});
    }
    ScaledGemmModel model;
    model.chunk = chunk;
    model.out = outs[c % 4];
    model.out_rounding.rounding = roundings[c % 3];
    model.out_rounding.seed = 9;
    const OperandScales osa{sa, {1, chunk}}, osb{sb, {1, chunk}}, osbd{sbd, {1, chunk}};
    std::span<const Bits> add_gemm(addend), add_dot;
    if (!addend.empty()) add_dot = add_gemm.first(static_cast<std::size_t>(m));
    detail::set_scaled_emulation_soft_float(false);
    const std::vector<Bits> hw = scaled_gemm_emulate(f, a, osa, f, b, osb, m, k, n, model, add_gemm);
    const std::vector<Bits> hw_dot = scaled_dot_emulate(f, a, osa, f, bd, osbd, m, k, model, add_dot);
    detail::set_scaled_emulation_soft_float(true);
    const std::vector<Bits> soft = scaled_gemm_emulate(f, a, osa, f, b, osb, m, k, n, model, add_gemm);
    const std::vector<Bits> soft_dot = scaled_dot_emulate(f, a, osa, f, bd, osbd, m, k, model, add_dot);
    SCOPED_TRACE(fmt::format("case {}: in {}, out {} {}, partials of {}, scales {}", c, f.name, model.out->name,
                             rounding_name(model.out_rounding.rounding), chunk, pow2 ? "powers of two" : "fp32"));
    int failures = 0;
    const auto compare = [&](const std::vector<Bits>& x, const std::vector<Bits>& y, const char* what) {
      ASSERT_EQ(x.size(), y.size());
      for (std::size_t e = 0; e < x.size() && failures < 4; ++e) {
        ++compared;
        if (classify(*model.out, y[e]) == FpClass::nan) ++nan_elements;
        if (x[e] != y[e]) {
          ++failures;
          ADD_FAILURE() << fmt::format("{} element {}: hardware path 0x{:x} ({:a}), soft float 0x{:x} ({:a})", what, e,
                                       x[e].raw, to_double(*model.out, x[e]), y[e].raw, to_double(*model.out, y[e]));
        }
      }
    };
    compare(hw, soft, "gemm");
    compare(hw_dot, soft_dot, "dot");
  }
  EXPECT_EQ(compared, 40 * (9 * 7 + 9));
  EXPECT_GT(nan_elements, 100);  // the recomputed NaN elements were met

  // A promotion whose exact result lies just above an fp32 midpoint, by less than a double's
  // half ulp: o = 1 + fp32(sa·sb)·p with sa = 1 + 2^-11 + 2^-23, p = 2^-24 - 2^-35 + 2^-47
  // (three bf16 products, exact in fp32), sa·p = 2^-24·(1 + 2^-46). One rounding gives
  // 1 + 2^-23; computed in double first it would land on the midpoint 1 + 2^-24 and round to
  // even, 1.
  const auto bf = [](float v) { return Bits{std::bit_cast<std::uint32_t>(v) >> 16}; };
  const std::vector<Bits> a1{bf(1), bf(-1), bf(1), bf(0)}, b1{bf(0x1p-24f), bf(0x1p-35f), bf(0x1p-47f), bf(0)};
  const std::vector<double> s1{1 + 0x1p-11 + 0x1p-23}, one{1};
  const std::vector<Bits> add1{Bits{0x3f800000u}};
  ScaledGemmModel m1;
  m1.chunk = 4;
  for (const bool soft : {false, true}) {
    detail::set_scaled_emulation_soft_float(soft);
    const std::vector<Bits> g = scaled_gemm_emulate(bf16, a1, {s1, {1, 4}}, bf16, b1, {one, {1, 4}}, 1, 4, 1, m1, add1);
    const std::vector<Bits> dt = scaled_dot_emulate(bf16, a1, {s1, {1, 4}}, bf16, b1, {one, {1, 4}}, 1, 4, m1, add1);
    EXPECT_EQ(g.at(0).raw, 0x3f800001u) << (soft ? "soft float" : "hardware path");
    EXPECT_EQ(dt.at(0).raw, 0x3f800001u) << (soft ? "soft float" : "hardware path");
  }
}

TEST(ScaledGemm, ThePredictionRunsWhereTheEmulationIsCheap) {
  // 128 × 1152 × 128 = 2^24 + 2^21 products: above the soft-float limit (2^24), below the
  // vectorised one (2^30). fp32 partials: the model's prediction is run and matches the
  // emulated output; bf16 partials (soft float): no prediction.
  const Problem p = make(128, 1152, 128, 128, 17);
  const ClaimSpec fp32_partials = deepseek_claim(p, "--promote-every 128");
  const TensorData c = emulate_matmul(A_of(p), B_of(p), std::nullopt, fp32_partials);
  const CheckResult fast = check_matmul(A_of(p), B_of(p), c, fp32_partials);
  ASSERT_TRUE(fast.model) << fast.text();
  EXPECT_EQ(fast.model->equal, 128 * 128);
  const CheckResult soft = check_matmul(A_of(p), B_of(p), c, deepseek_claim(p, "--promote-every 128 --acc bf16"));
  EXPECT_FALSE(soft.model) << soft.text();
}

// --expect bit-exact on a scaled claim with a profile: the profile's model is the verdict (was
// ignored: one element changed by an ulp stayed CONSISTENT, "15 of 16 elements equal the
// model"). The model runs whatever the size, and --ref is refused beside it, as for plain claims.
TEST(ScaledGemm, ExpectBitExactJudgesByTheModel) {
  const Problem p = make(4, 256, 4, 128, 21);
  const std::string profile = "--scale-format fp32 --promote-every 128 --profile nvidia-h100-tc";  // DeepGEMM's
  const TensorData c = emulate_matmul(A_of(p), B_of(p), std::nullopt, deepseek_claim(p, profile));
  const ClaimSpec exact = deepseek_claim(p, profile + " --expect bit-exact");
  const CheckResult ok = check_matmul(A_of(p), B_of(p), c, exact);
  EXPECT_EQ(ok.verdict.kind, TensorKind::consistent) << ok.text();
  EXPECT_NE(ok.verdict.reason.find("matches the model bit for bit: all 16 elements"), std::string::npos) << ok.verdict.reason;
  TensorData one = c;
  one.values[6] = Bits{one.values[6].raw + 1};  // C[1, 2] one ulp up
  const CheckResult bad = check_matmul(A_of(p), B_of(p), one, exact);
  EXPECT_EQ(bad.verdict.kind, TensorKind::defect) << bad.text();
  EXPECT_NE(bad.verdict.reason.find("1 of 16 elements differ"), std::string::npos) << bad.verdict.reason;
  EXPECT_NE(bad.verdict.reason.find("[1, 2]"), std::string::npos) << bad.verdict.reason;
  EXPECT_EQ(check_matmul(A_of(p), B_of(p), one, deepseek_claim(p, profile)).verdict.kind, TensorKind::consistent);  // legal
  // With the prediction switched off (a caller's option), --expect still runs the model.
  MatmulCheckOptions no_prediction;
  no_prediction.predict = false;
  EXPECT_EQ(check_matmul(A_of(p), B_of(p), one, exact, no_prediction).verdict.kind, TensorKind::defect);
  MatmulCheckOptions with_ref;
  with_ref.ref = c;
  with_ref.ref_claim = deepseek_claim(p, profile);
  EXPECT_THROW(check_matmul(A_of(p), B_of(p), c, exact, with_ref), InputError);
  // Cross-platform with a reference far off at one element: the defect says it is R's, and the
  // report's centre column is R (plain claims alike: CheckMatmul.CrossPlatformSumsBothBounds).
  TensorData far = c;
  far.values[9] = Bits{std::bit_cast<std::uint32_t>(std::bit_cast<float>(far.values[9].raw) * 64.0f + 1.0f)};
  with_ref.ref = far;
  const CheckResult cross = check_matmul(A_of(p), B_of(p), c, deepseek_claim(p, profile), with_ref);
  EXPECT_EQ(cross.verdict.kind, TensorKind::defect) << cross.text();
  EXPECT_NE(cross.verdict.reason.find("R (the reference) at 1: the reference is off, not C"), std::string::npos)
      << cross.verdict.reason;
  EXPECT_TRUE(cross.cross_platform);
  EXPECT_NE(cross.text().find("R (reference)"), std::string::npos);
  EXPECT_NE(cross.json().find("\"cross_platform\": true"), std::string::npos);
}

// A port of scaled GEMMs: R off its own tight (profile) bound but within the target's wide one
// of C is the port's defect, as for plain claims (CheckMatmul.CrossPlatformJudgesEachSideUnderItsOwnClaim).
TEST(ScaledGemm, CrossPlatformJudgesEachSideUnderItsOwnClaim) {
  const Problem p = make(4, 256, 4, 128, 21);
  // fp32 partials promoted every 128 (tight) against H100's tensor core, whose fp8 sums keep few
  // bits (its bound covers an R 2^10 fp32 ulps off here).
  const ClaimSpec tight = deepseek_claim(p, "--promote-every 128");
  const ClaimSpec wide = deepseek_claim(p, "--scale-format fp32 --promote-every 128 --profile nvidia-h100-tc");
  const TensorData r = emulate_matmul(A_of(p), B_of(p), std::nullopt, tight);
  const TensorData c = emulate_matmul(A_of(p), B_of(p), std::nullopt, wide);
  std::optional<TensorData> bad;
  for (std::uint32_t d = 1; d <= (1u << 16) && !bad; d *= 2) {
    TensorData x = r;
    x.values[9] = Bits{x.values[9].raw + d};
    const Verdict own = check_matmul(A_of(p), B_of(p), x, tight).verdict;
    if (own.kind == TensorKind::defect && !own.probable) bad = x;
  }
  ASSERT_TRUE(bad.has_value());
  MatmulCheckOptions o;
  o.ref = *bad;
  o.ref_claim = tight;
  MatmulCheckOptions alone = o;
  alone.judge_sides = false;
  const CheckResult cross = check_matmul(A_of(p), B_of(p), c, wide, alone);
  ASSERT_NE(cross.verdict.kind, TensorKind::defect) << cross.text();
  const CheckResult port = check_matmul(A_of(p), B_of(p), c, wide, o);
  EXPECT_EQ(port.verdict.kind, TensorKind::defect) << port.text();
  EXPECT_EQ(port.verdict.reason.find("R (the reference) is itself a proven defect under its own claim (" + tight.text() + "): "), 0u)
      << port.verdict.reason;
  EXPECT_NE(port.verdict.reason.find("; C against R alone: "), std::string::npos) << port.verdict.reason;
  EXPECT_EQ(port.verdict.signatures.at(0).name, "reference-defect");
}

TEST(ScaledGemm, LegalOutputsAreConsistent) {
  const Problem p = make(6, 512, 5, 128, 2);
  const ClaimSpec claim = deepseek_claim(p, "--promote-every 128");
  // The model's own output, and another legal order: the partials summed backwards.
  const CheckResult r = check_matmul(A_of(p), B_of(p), C_of(p, naive(p, 128)), claim);
  EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();
  ASSERT_TRUE(r.model);
  EXPECT_EQ(r.model->equal, 30);
  // Every element: the exact dequantised sum in long double (64 bits: fp8·fp8·fp32·fp32 terms
  // of 8 + 48 bits, 512 of them, may round) rounded to float is within the bound too.
  std::vector<float> near(static_cast<std::size_t>(p.m * p.n));
  for (std::int64_t i = 0; i < p.m; ++i)
    for (std::int64_t j = 0; j < p.n; ++j) {
      long double s = 0;
      for (std::int64_t k = 0; k < p.k; ++k)
        s += static_cast<long double>(e4m3_value(p.a[static_cast<std::size_t>(i * p.k + k)])) *
             e4m3_value(p.b[static_cast<std::size_t>(k * p.n + j)]) * sa_of(p, i, k) * sb_of(p, k, j);
      near[static_cast<std::size_t>(i * p.n + j)] = static_cast<float>(s);
    }
  const CheckResult x = check_matmul(A_of(p), B_of(p), C_of(p, near), claim);
  EXPECT_EQ(x.verdict.kind, TensorKind::consistent) << x.text();
  EXPECT_GT(x.verdict.counts[0], 20);  // mostly the correctly rounded result itself
}

// Scale products below fp32's normal range: fp32(sa·sb) errs by up to 2^-150 there (half the
// least subnormal), and a product at or below 2^-150 rounds to 0 and loses its partial. Until
// 2026-12-05 the bound counted the scale product's rounding as relative (u = 2^-24) and called
// the model's own output a proven defect. Rows 0 and 1 of A carry scales that put sa·sb in the
// subnormal range (about 2^-146) and below it (about 2^-152); row 2 keeps normal ones: the naive
// model's output is consistent, each of the three rows still judged at its own scale (a wrong
// row-2 element a proven defect however loose rows 0 and 1 must be, a lost row-1 output of three
// times the exact result too), and cross-platform checks between two promotion intervals hold.
TEST(ScaledGemm, AScaleProductBelowFp32sNormalRangeMayLoseItsPartial) {
  Problem p = make(3, 256, 4, 128, 11, true);
  for (std::size_t kb = 0; kb < 2; ++kb) {
    p.sa[0 * 2 + kb] = static_cast<float>(std::ldexp(1.3, -140));  // sa·sb ≈ 2^-146: subnormal
    p.sa[1 * 2 + kb] = static_cast<float>(std::ldexp(1.1, -146));  // ≈ 2^-152: rounds to 0
  }
  const ClaimSpec claim = deepseek_claim(p, "--promote-every 128");
  const std::vector<float> model = naive(p, 128);
  ASSERT_EQ(model[1 * 4 + 0], 0.0f);  // row 1's partials are lost: the model's output is 0
  ASSERT_NE(model[0 * 4 + 0], 0.0f);
  const CheckResult r = check_matmul(A_of(p), B_of(p), C_of(p, model), claim);
  EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();
  EXPECT_THAT(r.bound.derivation,
              ::testing::Contains(::testing::HasSubstr("scale product below fp32's normal range: 8 elements")));
  // Row 2 is judged at its own scale (a relative bound of 7.8e-6 on positive data): 1e-4 off is
  // a proven defect.
  std::vector<float> wrong = model;
  wrong[2 * 4 + 1] *= 1.0001f;
  const CheckResult w = check_matmul(A_of(p), B_of(p), C_of(p, wrong), claim);
  EXPECT_EQ(w.verdict.kind, TensorKind::defect) << w.text();
  EXPECT_FALSE(w.verdict.probable);
  // A lost row may be anywhere from 0 to the exact result, not three times it.
  std::vector<float> far = model;
  long double exact = 0;
  for (std::int64_t k = 0; k < p.k; ++k)
    exact += static_cast<long double>(e4m3_value(p.a[static_cast<std::size_t>(1 * p.k + k)])) *
             e4m3_value(p.b[static_cast<std::size_t>(k * p.n + 0)]) * sa_of(p, 1, k) * sb_of(p, k, 0);
  far[1 * 4 + 0] = static_cast<float>(3 * exact);
  ASSERT_GT(far[1 * 4 + 0], 0.0f);
  EXPECT_EQ(check_matmul(A_of(p), B_of(p), C_of(p, far), claim).verdict.kind, TensorKind::defect);
  // Cross-platform: promoted every 128 against promoted every 64, both the naive model's.
  MatmulCheckOptions opt;
  opt.ref = C_of(p, naive(p, 64));
  opt.ref_claim = deepseek_claim(p, "--promote-every 64");
  const CheckResult x = check_matmul(A_of(p), B_of(p), C_of(p, model), claim, opt);
  EXPECT_EQ(x.verdict.kind, TensorKind::consistent) << x.text();
}

// An fp8 E4M3 output of a block-scaled GEMM under --saturate (Transformer Engine's fp8 GEMM
// outputs): the model's fp32 result (the naive loop) cast with saturation by the format layer's
// conversion, element for element; legal under the claim, a defect under the claim without it.
TEST(ScaledGemm, ASaturatingFp8OutputIsTheNaiveModelCastWithSaturation) {
  Problem p = make(6, 512, 5, 128, 2);
  for (double& s : p.sa) s *= 0x1p10;  // results of a few hundred: some beyond 448, some not
  const auto claim_of = [&](const char* extra) {
    ClaimSpec c = parse_claim(fmt::format("--in fp8_e4m3 --out fp8_e4m3 --scale-a a.npy --scale-b b.npy --scale-block "
                                          "1x{},{}x{} --promote-every 128 {}",
                                          p.kb, p.kb, p.kb, extra));
    c.quant.scale_a = p.sa;
    c.quant.scale_b = p.sb;
    return c;
  };
  const ClaimSpec sat = claim_of("--saturate");
  const TensorData c = emulate_matmul(A_of(p), B_of(p), std::nullopt, sat);
  const std::vector<float> want = naive(p, 128);
  RoundOptions o;
  o.overflow = Overflow::saturate;
  std::int64_t saturated = 0, inside = 0;
  ASSERT_EQ(c.values.size(), want.size());
  for (std::size_t e = 0; e < want.size(); ++e) {
    ASSERT_EQ(c.values[e], convert(fp32, fp8_e4m3, Bits{bits_of(want[e])}, o).bits) << e;
    (std::fabs(want[e]) > 448 ? saturated : inside) += 1;
  }
  EXPECT_GT(saturated, 0) << inside;
  EXPECT_GT(inside, 0) << saturated;
  const CheckResult r = check_matmul(A_of(p), B_of(p), c, sat);
  EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();
  ASSERT_TRUE(r.model);
  EXPECT_EQ(r.model->equal, r.model->elements);
  EXPECT_EQ(check_matmul(A_of(p), B_of(p), c, claim_of("")).verdict.kind, TensorKind::defect);
}

TEST(ScaledGemm, WrongBlockScaleIsADefect) {
  const Problem p = make(4, 256, 4, 128, 3);
  Problem wrong = p;
  // A's second K block takes the first block's scale (a scale applied to the wrong block).
  for (std::int64_t i = 0; i < p.m; ++i) wrong.sa[static_cast<std::size_t>(i * 2 + 1)] = p.sa[static_cast<std::size_t>(i * 2)];
  const CheckResult r = check_matmul(A_of(p), B_of(p), C_of(p, naive(wrong, 128)), deepseek_claim(p, "--promote-every 128"));
  EXPECT_EQ(r.verdict.kind, TensorKind::defect) << r.text();
  EXPECT_GT(r.verdict.counts[3], 8);
}

TEST(ScaledGemm, MissingPromotionUnderANarrowAccumulatorIsADefect) {
  // Terms in [1, 2), equal scales, a bf16 inner accumulator: promoted every 32, the partials
  // stay below 64; without promotion the bf16 sum over K = 2048 stagnates near 512 (its ulp 4
  // swallows every term), far outside the bound.
  Problem p = make(3, 2048, 3, 2048, 4, true);
  for (auto& x : p.a) x = 0x38;                                        // 1.0
  for (auto& x : p.b) x = static_cast<std::uint8_t>(0x38 + (x & 7));  // 1.0 ... 1.875
  for (double& s : p.sa) s = 0.5;
  for (double& s : p.sb) s = 0.25;
  const auto to_bf16 = [](float x) {  // round to nearest even at 8 significant bits
    std::uint32_t u = bits_of(x);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    float y = 0;
    std::memcpy(&y, &u, 4);
    return y;
  };
  static float (*round_bf16)(float) = +to_bf16;
  const ClaimSpec claim = [&] {
    ClaimSpec c = parse_claim("--in fp8_e4m3 --out fp32 --acc bf16 --scale-a 0.5 --scale-b 0.25 --promote-every 32");
    return c;
  }();
  const CheckResult ok = check_matmul(A_of(p), B_of(p), C_of(p, naive(p, 32, round_bf16)), claim);
  EXPECT_EQ(ok.verdict.kind, TensorKind::consistent) << ok.text();
  ASSERT_TRUE(ok.model);
  EXPECT_EQ(ok.model->equal, 9);  // the model's bf16 partials are the naive ones
  const CheckResult bad = check_matmul(A_of(p), B_of(p), C_of(p, naive(p, 2048, round_bf16)), claim);
  EXPECT_EQ(bad.verdict.kind, TensorKind::defect) << bad.text();
}

TEST(ScaledGemm, HopperTensorCorePartialsPromotedEvery128) {
  // DeepGEMM on H100: each 128-product partial from the fp8 tensor-core model (its truncating
  // block FMA, numerics/block_fma.h, validated on recorded H100 vectors), promoted by fmaf.
  const Problem p = make(4, 512, 3, 128, 6);
  const ClaimSpec claim = deepseek_claim(p, "--profile nvidia-h100-tc --promote-every 128");
  const BlockFmaModel* m = block_fma_for(*claim.profile, fp8_e4m3, fp32);
  ASSERT_NE(m, nullptr);
  std::vector<float> want(static_cast<std::size_t>(p.m * p.n));
  for (std::int64_t i = 0; i < p.m; ++i)
    for (std::int64_t j = 0; j < p.n; ++j) {
      float o = 0;
      for (std::int64_t c = 0; c < p.k; c += 128) {
        std::vector<Bits> a, b;
        for (std::int64_t k = c; k < c + 128; ++k) {
          a.push_back(Bits{p.a[static_cast<std::size_t>(i * p.k + k)]});
          b.push_back(Bits{p.b[static_cast<std::size_t>(k * p.n + j)]});
        }
        const float part = static_cast<float>(to_double(fp32, block_fma_dot(*m, a, b, Bits{0}).bits));
        o = std::fmaf(static_cast<float>(sa_of(p, i, c) * sb_of(p, c, j)), part, o);
      }
      want[static_cast<std::size_t>(i * p.n + j)] = o;
    }
  const TensorData d = emulate_matmul(A_of(p), B_of(p), std::nullopt, claim);
  for (std::size_t e = 0; e < want.size(); ++e) ASSERT_EQ(d.values[e].raw, bits_of(want[e])) << e;
  // Its output is consistent under the block-FMA bound (soundness), and the fp32-accumulator
  // model's output under the same claim too (both are legal partial sums).
  EXPECT_EQ(check_matmul(A_of(p), B_of(p), C_of(p, want), claim).verdict.kind, TensorKind::consistent);
  EXPECT_EQ(check_matmul(A_of(p), B_of(p), C_of(p, naive(p, 128)), claim).verdict.kind, TensorKind::consistent);
}

TEST(ScaledGemm, MxOperandLayouts) {
  // A (3×70): blocks along rows; B (70×2): blocks down columns; each line = quantize_mx of it.
  std::mt19937 gen(8);
  std::vector<Bits> x(210);
  for (Bits& v : x) v = Bits{bits_of(static_cast<float>(std::ldexp(static_cast<double>(gen() % 2001) - 1000, -7)))};
  const MxOperand a = quantize_mx_operand(mxfp8_e4m3, x, fp32, 3, 70, false, 32);
  EXPECT_EQ(a.scale_rows, 3);
  EXPECT_EQ(a.scale_cols, 3);
  for (std::size_t r = 0; r < 3; ++r) {
    const MxArray q = quantize_mx(mxfp8_e4m3, std::span<const Bits>(x).subspan(r * 70, 70), fp32, 32);
    for (std::size_t t = 0; t < 70; ++t) ASSERT_EQ(a.elements[r * 70 + t], q.elements[t]);
    for (std::size_t s = 0; s < 3; ++s) ASSERT_EQ(a.scales[r * 3 + s], q.scales[s]);
  }
  const MxOperand b = quantize_mx_operand(mxfp8_e4m3, x, fp32, 105, 2, true, 32);
  EXPECT_EQ(b.scale_rows, 4);
  EXPECT_EQ(b.scale_cols, 2);
  for (std::size_t c = 0; c < 2; ++c) {
    std::vector<Bits> col;
    for (std::size_t r = 0; r < 105; ++r) col.push_back(x[r * 2 + c]);
    const MxArray q = quantize_mx(mxfp8_e4m3, col, fp32, 32);
    for (std::size_t r = 0; r < 105; ++r) ASSERT_EQ(b.elements[r * 2 + c], q.elements[r]);
    for (std::size_t s = 0; s < 4; ++s) ASSERT_EQ(b.scales[s * 2 + c], q.scales[s]);
  }
}

/// DeepGEMM's calc_diff (deepseek-ai/DeepGEMM tests: 1 - 2·Σxy / Σ(x² + y²); its tests
/// assert diff < 0.001).
double calc_diff(const std::vector<float>& x, const std::vector<double>& y) {
  double xy = 0, xx = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    xy += static_cast<double>(x[i]) * y[i];
    xx += static_cast<double>(x[i]) * x[i] + y[i] * y[i];
  }
  return 1 - 2 * xy / xx;
}

/// TransformerEngine's acceptance rule for fp8 recipes (NVIDIA/TransformerEngine
/// tests/pytorch/utils.py: quantization_tols("fp8_blockwise" | "mxfp8" | ...) =
/// dtype_tols(kFloat8E4M3) = rtol 0.125, atol 0.0675, passed to torch.testing.assert_close
/// against a float64 reference on the dequantised operands): the number of elements with
/// |x - y| > atol + rtol·|y|. The test passes when it is 0.
std::size_t te_fp8_failures(const std::vector<float>& x, const std::vector<double>& y) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (!(std::abs(static_cast<double>(x[i]) - y[i]) <= 0.0675 + 0.125 * std::abs(y[i]))) ++n;
  return n;
}

/// The scaled-GEMM corpus of docs/verdict.md: legal variation and each classic bug, judged
/// under the DeepGEMM claim (fp8 E4M3, 1×128 / 128×128 fp32 scales, H100 tensor-core partials
/// promoted every 128), with DeepGEMM's own calc_diff beside the verdict.
TEST(ScaledGemm, Corpus) {
  const Problem p = make(16, 512, 256, 128, 11);
  const ClaimSpec claim = deepseek_claim(p, "--profile nvidia-h100-tc --promote-every 128");
  const BlockFmaModel* tc = block_fma_for(*claim.profile, fp8_e4m3, fp32);
  ASSERT_NE(tc, nullptr);
  const auto av = [&](std::int64_t i, std::int64_t k) { return Bits{p.a[static_cast<std::size_t>(i * p.k + k)]}; };
  const auto bv = [&](std::int64_t k, std::int64_t j) { return Bits{p.b[static_cast<std::size_t>(k * p.n + j)]}; };
  // Exact values (long double sums of exact terms; only for calc_diff).
  std::vector<double> exact(static_cast<std::size_t>(p.m * p.n));
  for (std::int64_t i = 0; i < p.m; ++i)
    for (std::int64_t j = 0; j < p.n; ++j) {
      long double s = 0;
      for (std::int64_t k = 0; k < p.k; ++k)
        s += static_cast<long double>(e4m3_value(p.a[static_cast<std::size_t>(i * p.k + k)])) *
             e4m3_value(p.b[static_cast<std::size_t>(k * p.n + j)]) * sa_of(p, i, k) * sb_of(p, k, j);
      exact[static_cast<std::size_t>(i * p.n + j)] = static_cast<double>(s);
    }
  // Tensor-core partials over [c0, c0 + len), promoted with the scale function `scale`.
  const auto tc_gemm = [&](std::int64_t chunk, const std::function<double(std::int64_t, std::int64_t, std::int64_t)>& scale) {
    std::vector<float> out(static_cast<std::size_t>(p.m * p.n));
    for (std::int64_t i = 0; i < p.m; ++i)
      for (std::int64_t j = 0; j < p.n; ++j) {
        float o = 0;
        for (std::int64_t c = 0; c < p.k; c += chunk) {
          std::vector<Bits> a, b;
          for (std::int64_t k = c; k < c + chunk; ++k) {
            a.push_back(av(i, k));
            b.push_back(bv(k, j));
          }
          const auto part = static_cast<float>(to_double(fp32, block_fma_dot(*tc, a, b, Bits{0}).bits));
          o = std::fmaf(static_cast<float>(scale(i, c, j)), part, o);
        }
        out[static_cast<std::size_t>(i * p.n + j)] = o;
      }
    return out;
  };
  const auto right = [&](std::int64_t i, std::int64_t c, std::int64_t j) { return sa_of(p, i, c) * sb_of(p, c, j); };
  struct Case {
    std::string name;
    std::vector<float> out;
    TensorKind want;
  };
  std::vector<Case> cases;
  cases.push_back({"legal: H100 partials of 128, promoted (the model)", tc_gemm(128, right), TensorKind::consistent});
  cases.push_back({"legal: fp32 partials of 128 (exact products), promoted", naive(p, 128), TensorKind::consistent});
  cases.push_back({"legal: correctly rounded result", {}, TensorKind::consistent});
  for (const double x : exact) cases.back().out.push_back(static_cast<float>(x));
  cases.push_back({"bug: A's scale of the previous K block", tc_gemm(128, [&](std::int64_t i, std::int64_t c, std::int64_t j) {
                     return sa_of(p, i, c == 0 ? 0 : c - 128) * sb_of(p, c, j);
                   }),
                   TensorKind::defect});
  cases.push_back({"bug: B's scale tensor transposed (read [j/128, k/128])",
                   tc_gemm(128, [&](std::int64_t i, std::int64_t c, std::int64_t j) {
                     return sa_of(p, i, c) * p.sb[static_cast<std::size_t>((j / 128) * (p.k / 128) + c / 128)];
                   }),
                   TensorKind::defect});
  cases.push_back({"bug: A's scales of row i+1 (off by one row)", tc_gemm(128, [&](std::int64_t i, std::int64_t c, std::int64_t j) {
                     return sa_of(p, (i + 1) % p.m, c) * sb_of(p, c, j);
                   }),
                   TensorKind::defect});
  cases.push_back({"bug: scale applied twice to A", tc_gemm(128, [&](std::int64_t i, std::int64_t c, std::int64_t j) {
                     return sa_of(p, i, c) * sa_of(p, i, c) * sb_of(p, c, j);
                   }),
                   TensorKind::defect});
  cases.push_back({"bug: one output tile (rows 0-3, columns 128-255) uses its neighbour's B scale in one K block",
                   tc_gemm(128, [&](std::int64_t i, std::int64_t c, std::int64_t j) {
                     const bool tile = i < 4 && j >= 128 && c == 256;
                     return sa_of(p, i, c) * sb_of(p, c, tile ? j - 128 : j);
                   }),
                   TensorKind::defect});
  std::string table =
      "| case | verdict | outside the bound | calc_diff | TE fp8 rtol/atol: elements failing |\n|---|---|---|---|---|\n";
  MatmulCheckOptions no_model;
  no_model.predict = false;
  for (const Case& c : cases) {
    const CheckResult r = check_matmul(A_of(p), B_of(p), C_of(p, c.out), claim, no_model);
    table += fmt::format("| {} | {} | {} of {} | {:.2e} | {} |\n", c.name, kind_name(r.verdict.kind), r.verdict.counts[3],
                         r.verdict.elements, calc_diff(c.out, exact), te_fp8_failures(c.out, exact));
    EXPECT_EQ(r.verdict.kind, c.want) << c.name << "\n" << r.text();
    // TransformerEngine's tolerance is loose enough for every legal output (it was chosen for
    // that): a legal case it rejects would mean the corpus or the rule is misread.
    if (c.want == TensorKind::consistent) {
      EXPECT_EQ(te_fp8_failures(c.out, exact), 0u) << c.name;
    }
    for (const Signature& g : r.verdict.signatures) std::printf("  %s: %s: %s\n", c.name.c_str(), g.name.c_str(), g.evidence.c_str());
  }
  double big = 0;
  for (const double x : exact) big = std::max(big, std::abs(x));
  std::printf("%s(largest |exact| %.3g)\n", table.c_str(), big);
}

TEST(ScaledGemm, ScaleBugSignatures) {
  // Outputs of the claim's own model with one scale bug: the signature names the bug.
  const Problem p = make(4, 256, 256, 128, 12);
  const ClaimSpec claim = deepseek_claim(p, "--promote-every 128");
  const auto sig = [&](const std::vector<float>& out, std::string_view name, std::string_view part) {
    const CheckResult r = check_matmul(A_of(p), B_of(p), C_of(p, out), claim);
    EXPECT_EQ(r.verdict.kind, TensorKind::defect);
    EXPECT_TRUE(r.model && r.model->equal < r.model->elements);
    EXPECT_TRUE(std::any_of(r.verdict.signatures.begin(), r.verdict.signatures.end(), [&](const Signature& g) {
      return g.name == name && g.evidence.find(part) != std::string::npos;
    })) << r.text();
  };
  Problem t = p;  // B's 2×2 scale tensor read transposed
  t.sb = {p.sb[0], p.sb[2], p.sb[1], p.sb[3]};
  sig(naive(t, 128), "scale-transposed", "B's scale tensor");
  Problem no_b = p;
  for (double& x : no_b.sb) x = 1;
  sig(naive(no_b, 128), "scale-missing", "B's scales left out");
  // Per-tensor scales, promotion every 64 claimed, one bf16 partial over all K computed: not
  // outside the (wide) bf16 bound here, but the model misses and the hypothesis explains it.
  Problem q = make(4, 256, 8, 256, 13);
  ClaimSpec pc = parse_claim(fmt::format("--in fp8_e4m3 --out fp32 --acc bf16 --scale-a {:a} --scale-b {:a} "
                                         "--promote-every 64",
                                         q.sa[0], q.sb[0]));
  // The unpromoted output: the model itself with one partial over all K (the model is checked
  // against the naive loop above).
  ClaimSpec whole = pc;
  whole.quant.promote_every = 256;
  const TensorData unpromoted = emulate_matmul(A_of(q), B_of(q), std::nullopt, whole);
  const CheckResult r = check_matmul(A_of(q), B_of(q), unpromoted, pc);
  EXPECT_TRUE(std::any_of(r.verdict.signatures.begin(), r.verdict.signatures.end(),
                          [](const Signature& g) { return g.name == "missing-promotion"; }))
      << r.text();
}

// A layout bug that reproduces the output names the cause alone: the generic readings that name
// another (narrow-accumulator: "partial sums held in fewer bits"; lone-outlier) are dropped.
// MXFP8 on B200 with B's 8x8 E8M0 scale tensor read transposed printed narrow-accumulator too.
TEST(ScaledGemm, AScaleLayoutSignatureIsNotJoinedByANarrowAccumulator) {
  const Problem p = make(16, 256, 8, 32, 21);
  ClaimSpec claim = parse_claim("--in fp8_e4m3 --out bf16 --profile nvidia-b200-mxfp8 --scale-a a.npy --scale-b b.npy");
  std::mt19937 gen(22);
  std::vector<double> sa(16 * 8), sb(8 * 8), sbt(8 * 8);
  for (double& x : sa) x = std::ldexp(1.0, static_cast<int>(gen() % 14) - 7);
  for (double& x : sb) x = std::ldexp(1.0, static_cast<int>(gen() % 14) - 7);
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) sbt[static_cast<std::size_t>(r * 8 + c)] = sb[static_cast<std::size_t>(c * 8 + r)];
  claim.quant.scale_a = sa;
  claim.quant.scale_b = sbt;
  const TensorData out = emulate_matmul(A_of(p), B_of(p), std::nullopt, claim);
  claim.quant.scale_b = sb;
  const CheckResult r = check_matmul(A_of(p), B_of(p), out, claim);
  ASSERT_FALSE(r.verdict.signatures.empty()) << r.text();
  EXPECT_EQ(r.verdict.signatures.front().name, "scale-transposed") << r.text();
  for (const Signature& g : r.verdict.signatures) {
    EXPECT_NE(g.name, "narrow-accumulator") << r.text();
    EXPECT_NE(g.name, "lone-outlier") << r.text();
  }
}

// E4M3 x E5M2 on a block-FMA profile runs the profile's mixed unit (block_fma_unit; before
// 2026-12-03 refused, and before that B was converted to A's format: emulate's own output was
// then a proven defect of check): check predicts emulate's output bit for bit and tol bounds it.
// The options that qualify scales need both operands' scales.
TEST(ScaledGemm, MixedFp8RunsTheMixedUnitAndScaleOptionsNeedBothScales) {
  const Problem p = make(4, 256, 4, 128, 5);
  const char* text = "--in fp8_e4m3 --in-b fp8_e5m2 --out fp32 --scale-a 1 --scale-b 1 --profile nvidia-h100-tc";
  const ClaimSpec mixed = parse_claim(text);
  std::vector<std::uint8_t> b5 = p.b;  // E4M3 patterns read as E5M2, the non-finite ones made finite
  for (std::uint8_t& x : b5)
    if ((x & 0x7c) == 0x7c) x = static_cast<std::uint8_t>(x ^ 0x40);
  const TensorData b = view(std::span<const std::uint8_t>(b5), {p.k, p.n}, "fp8_e5m2", "B");
  const TensorData d = emulate_matmul(A_of(p), b, std::nullopt, mixed);
  const CheckResult r = check_matmul(A_of(p), b, d, mixed);
  EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();
  ASSERT_TRUE(r.model.has_value()) << r.text();
  EXPECT_EQ(r.model->equal, r.model->elements) << r.text();
  EXPECT_THAT(r.text(), ::testing::HasSubstr("fp8_e4m3 x fp8_e5m2->fp32 block FMA"));
  const ToleranceResult t = tolerance("matmul", 256, parse_claim(text));
  EXPECT_GT(t.bound.deterministic, 0);
  for (const char* claim : {"--in fp8_e4m3 --out fp32 --promote-every 4", "--in fp8_e4m3 --out fp32 --scale-format e8m0",
                            "--in fp8_e4m3 --out fp32 --scale-a 2", "--in fp8_e4m3 --out fp32 --scale-b 2"}) {
    SCOPED_TRACE(claim);
    try {
      (void)check_matmul(A_of(p), B_of(p), C_of(p, naive(p, 128)), parse_claim(claim));
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("a scaled GEMM takes both operands' scales"));
    }
  }
}

TEST(ScaledGemm, ShapesOfScalesAreChecked) {
  const Problem p = make(4, 256, 4, 128, 5);
  ClaimSpec c = deepseek_claim(p);
  c.quant.scale_a.pop_back();
  EXPECT_THROW(check_matmul(A_of(p), B_of(p), C_of(p, naive(p, 128)), c), InputError);
  // A promotion interval that straddles the 128-blocks.
  EXPECT_THROW(check_matmul(A_of(p), B_of(p), C_of(p, naive(p, 128)), deepseek_claim(p, "--promote-every 96")),
               InputError);
}

TEST(ScaledGemm, ToleranceDerivation) {
  const ToleranceResult t =
      tolerance("matmul", 4096, parse_claim("--in fp8_e4m3 --out bf16 --scale-a a.npy --scale-b b.npy "
                                            "--scale-block 1x128,128x128 --promote-every 128"));
  EXPECT_GT(t.bound.deterministic, 0);
  EXPECT_LT(t.bound.deterministic, 1e-4);  // γ_128(2^-24) and 32 fp32 promotions: ~ 1e-5
  EXPECT_NE(t.text().find("32 promotions"), std::string::npos) << t.text();
}

// An infinite term meeting a partial sum overflowed to the other infinity (the plain matmul's
// rule: CheckMatmul.AnInfiniteTermMeetingAnOverflowedPartialSumMayGiveNaN). A = [57344, -inf],
// B = [57344, 1] in fp8 E5M2 is exactly -inf; with scales 2^100 · 2^10 promoted every product,
// the first promotion o = fma(2^110, 57344², 0) ≈ 4.3e42 overflows fp32 to +inf and the second
// gives +inf + (-inf) = NaN (numpy float32: 2^110 · 57344² = inf, inf - inf = nan; the model's
// own output). NaN and -inf are legal; +inf never; with scales of 1 (no partial sum near
// 3.4e38) NaN is a defect. The same rule where the inner fp32 partial overflows (bf16 2^100 ·
// 2^100), where the scales are not powers of two (the term-by-term reference), and in a dot.
TEST(ScaledGemm, AnInfiniteTermMeetingAnOverflowedPartialSumMayGiveNaN) {
  struct Case {
    const char* claim;
    const char* format;
    std::vector<float> a, b;
    bool overflows;
  };
  const float e5max = 57344.0f, big = 0x1p100f;
  const std::vector<Case> cases{
      {"--in fp8_e5m2 --out fp32 --scale-a 0x1p100 --scale-b 1024 --promote-every 1", "fp8_e5m2", {e5max, -INFINITY}, {e5max, 1}, true},
      {"--in fp8_e5m2 --out fp32 --scale-a 0x1.8p100 --scale-b 1024 --promote-every 1", "fp8_e5m2", {e5max, -INFINITY}, {e5max, 1}, true},
      {"--in fp8_e5m2 --out fp32 --scale-a 1 --scale-b 1 --promote-every 1", "fp8_e5m2", {e5max, -INFINITY}, {e5max, 1}, false},
      {"--in bf16 --out fp32 --scale-a 1 --scale-b 1", "bf16", {big, -INFINITY}, {big, 1}, true},
      {"--in bf16 --out fp32 --scale-a 1.5 --scale-b 1", "bf16", {big, -INFINITY}, {big, 1}, true},
      {"--in bf16 --out fp32 --scale-a 1 --scale-b 1", "bf16", {0x1p50f, -INFINITY}, {0x1p50f, 1}, false},
      // fp16 partials: 57344 + 57344 = 114688 overflows fp16 (max 65504) long before fp32.
      {"--in fp8_e5m2 --out fp32 --acc fp16 --scale-a 1 --scale-b 1", "fp8_e5m2", {e5max, e5max, -INFINITY}, {1, 1, 1}, true},
      {"--in fp8_e5m2 --out fp32 --acc fp16 --scale-a 0.25 --scale-b 0.75", "fp8_e5m2", {e5max, e5max, -INFINITY}, {1, 1, 1}, true},
      {"--in fp8_e5m2 --out fp32 --acc fp16 --scale-a 1 --scale-b 1", "fp8_e5m2", {1024, 1024, -INFINITY}, {1, 1, 1}, false},
  };
  for (const Case& t : cases) {
    SCOPED_TRACE(t.claim);
    const ClaimSpec claim = parse_claim(t.claim);
    const auto K = static_cast<std::int64_t>(t.a.size());
    const TensorData a = view(std::span<const float>(t.a), {1, K}, t.format, "A");
    const TensorData b = view(std::span<const float>(t.b), {K, 1}, t.format, "B");
    const TensorData model = emulate_matmul(a, b, std::nullopt, claim);
    EXPECT_EQ(std::isnan(to_double(fp32, model.values[0])), t.overflows) << to_double(fp32, model.values[0]);
    const auto judge_one = [&](std::uint32_t c) {
      return check_matmul(a, b, TensorData{&fp32, {1, 1}, {Bits{c}}, "C"}, claim);
    };
    for (const std::uint32_t c : {0x7fc00000u, 0xffc00000u}) {
      const CheckResult r = judge_one(c);
      EXPECT_EQ(r.verdict.kind, t.overflows ? TensorKind::consistent : TensorKind::defect) << r.text();
    }
    EXPECT_EQ(judge_one(0xff800000u).verdict.kind, TensorKind::consistent) << judge_one(0xff800000u).text();
    EXPECT_EQ(judge_one(0x7f800000u).verdict.kind, TensorKind::defect) << judge_one(0x7f800000u).text();
    // A row-wise dot of the same terms.
    const TensorData bd = view(std::span<const float>(t.b), {1, K}, t.format, "B");
    const CheckResult d = check_dot(a, bd, TensorData{&fp32, {1}, {Bits{0xffc00000u}}, "C"}, claim);
    EXPECT_EQ(d.verdict.kind, t.overflows ? TensorKind::consistent : TensorKind::defect) << d.text();
  }
}

// A partial sum that overflows where the exact result is finite: the sticky overflow rule
// (tolerances/bounds.h, ReductionBound::overflow_sticky) of the plain matmul. [57344, -57344] ·
// [57344, 57344] with scales 2^110 promoted every product is exactly 0, but the first promotion
// overflows fp32 to +inf and fma(2^110, -57344², +inf) stays +inf (the model's output; numpy's
// separate multiply gives inf - inf = nan). In fp16 partials, 57344 + 57344 overflows before
// the -57344s arrive. ±inf and NaN are legal there, and 0; with small terms they are not.
TEST(ScaledGemm, APartialSumOverflowingOnTheWayIsLegalWhereTheExactResultIsFinite) {
  struct Case {
    const char* claim;
    std::vector<float> a, b;
    bool overflows;
  };
  const float e5max = 57344.0f;
  const std::vector<Case> cases{
      {"--in fp8_e5m2 --out fp32 --scale-a 0x1p100 --scale-b 1024 --promote-every 1", {e5max, -e5max}, {e5max, e5max}, true},
      {"--in fp8_e5m2 --out fp32 --scale-a 1 --scale-b 1 --promote-every 1", {e5max, -e5max}, {e5max, e5max}, false},
      {"--in fp8_e5m2 --out fp32 --acc fp16 --scale-a 1 --scale-b 1", {e5max, e5max, -e5max, -e5max}, {1, 1, 1, 1}, true},
      {"--in fp8_e5m2 --out fp32 --acc fp16 --scale-a 1.5 --scale-b 1", {e5max, e5max, -e5max, -e5max}, {1, 1, 1, 1}, true},
      {"--in fp8_e5m2 --out fp32 --acc fp16 --scale-a 1 --scale-b 1", {1024, 1024, -1024, -1024}, {1, 1, 1, 1}, false},
  };
  for (const Case& t : cases) {
    SCOPED_TRACE(t.claim);
    const ClaimSpec claim = parse_claim(t.claim);
    const auto K = static_cast<std::int64_t>(t.a.size());
    const TensorData a = view(std::span<const float>(t.a), {1, K}, "fp8_e5m2", "A");
    const TensorData b = view(std::span<const float>(t.b), {K, 1}, "fp8_e5m2", "B");
    const TensorData model = emulate_matmul(a, b, std::nullopt, claim);
    EXPECT_EQ(to_double(fp32, model.values[0]) == INFINITY, t.overflows) << to_double(fp32, model.values[0]);
    for (const std::uint32_t c : {0x7f800000u, 0xff800000u, 0x7fc00000u}) {
      const CheckResult r = check_matmul(a, b, TensorData{&fp32, {1, 1}, {Bits{c}}, "C"}, claim);
      EXPECT_EQ(r.verdict.kind, t.overflows ? TensorKind::consistent : TensorKind::defect) << fmt::format("{:#x}\n", c) << r.text();
    }
    EXPECT_EQ(check_matmul(a, b, TensorData{&fp32, {1, 1}, {Bits{0}}, "C"}, claim).verdict.kind, TensorKind::consistent);
  }
}

// --expect bit-exact on a scaled claim whose model gives NaN: fp8 E5M2 [57344, -inf] · [57344, 1],
// scales 2^110, promoted every product from the H100 tensor-core partials: +inf, then
// +inf + (-inf) (a claim without a profile leaves the partials' order open: no --expect). Any
// NaN equals the model's NaN whatever its sign and payload (NanPolicy::any_nan, docs/verdict.md
// §4.4), in fp32, bf16 and OCP E4M3 (NaN S.1111.111: 0x7f and 0xff) outputs; a number or an
// infinity where the model says NaN is a proven defect that names the element, and a NaN where
// the model gives a number.
TEST(ScaledGemm, ExpectBitExactTakesAnyNaNForTheModelsNaN) {
  const std::vector<float> av{57344.0f, -INFINITY, 0.0f, 0.0f}, bv{57344.0f, 1.0f};
  // A (2×2): row 0 gives the NaN, row 1 gives +0.
  const TensorData a = view(std::span<const float>(av), {2, 2}, "fp8_e5m2", "A");
  const TensorData b = view(std::span<const float>(bv), {2, 1}, "fp8_e5m2", "B");
  struct Out {
    const char* name;
    std::vector<std::uint32_t> nans, not_nan;
  };
  for (const Out& o : {Out{"fp32", {0x7fc00000u, 0xffc00000u, 0x7fc00001u, 0xff800001u}, {0xff800000u, 0x7f800000u, 0u}},
                       Out{"bf16", {0x7fc0u, 0xffc0u, 0x7f81u}, {0xff80u, 0x7f7fu}},
                       Out{"fp8_e4m3", {0x7fu, 0xffu}, {0x7eu, 0xfeu, 0u}}}) {
    SCOPED_TRACE(o.name);
    const ClaimSpec claim = parse_claim(fmt::format(
        "--in fp8_e5m2 --out {} --scale-a 0x1p100 --scale-b 1024 --promote-every 1 --profile nvidia-h100-tc "
        "--expect bit-exact",
        o.name));
    const FormatSpec& f = *find_format(o.name);
    const TensorData model = emulate_matmul(a, b, std::nullopt, claim);
    ASSERT_TRUE(std::isnan(to_double(f, model.values[0])));
    ASSERT_TRUE(std::isfinite(to_double(f, model.values[1])));
    for (const std::uint32_t x : o.nans) {
      const CheckResult r = check_matmul(a, b, TensorData{&f, {2, 1}, {Bits{x}, model.values[1]}, "C"}, claim);
      EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << fmt::format("{:#x}\n", x) << r.text();
      EXPECT_THAT(r.verdict.reason, ::testing::HasSubstr("matches the model bit for bit"));
    }
    for (const std::uint32_t x : o.not_nan) {
      const CheckResult r = check_matmul(a, b, TensorData{&f, {2, 1}, {Bits{x}, model.values[1]}, "C"}, claim);
      EXPECT_EQ(r.verdict.kind, TensorKind::defect) << fmt::format("{:#x}\n", x) << r.text();
      EXPECT_THAT(r.verdict.reason, ::testing::HasSubstr("1 of 2 elements differ"));
      EXPECT_THAT(r.verdict.reason, ::testing::HasSubstr("[0, 0]"));
    }
    // A NaN where the model gives a number is a defect too.
    const Bits nan = model.values[0];
    EXPECT_EQ(check_matmul(a, b, TensorData{&f, {2, 1}, {nan, nan}, "C"}, claim).verdict.kind, TensorKind::defect);
    // A row-wise dot of the same rows (B's row r is column 0 of B for both rows).
    const std::vector<float> bd{57344.0f, 1.0f, 57344.0f, 1.0f};
    const TensorData bdot = view(std::span<const float>(bd), {2, 2}, "fp8_e5m2", "B");
    const CheckResult d = check_dot(a, bdot, TensorData{&f, {2}, {Bits{o.nans.back()}, model.values[1]}, "C"}, claim);
    EXPECT_EQ(d.verdict.kind, TensorKind::consistent) << d.text();
  }
}

// Cross-platform (--ref) against the H100 tensor-core model with ±inf in the operands: fp8 E5M2
// A = [[1, -inf, 2, 3], [1, 2, 3, 4]], B columns (1, 1, 1, 1) and (1, 0, 1, 1), scales 0.5 · 3:
// exactly -inf, NaN (-inf·0), 15 and 12 (numpy float64 on the dequantised operands). The
// target's model (fp32 partials) and the reference's (H100 block FMA) agree: consistent. Where
// the exact result is non-finite, C is judged against it under its own claim, not against R
// (docs/verdict.md §2, Overflow; as the plain matmul): a C of +inf, a number or NaN where the
// result is -inf is a defect, and a number where it is NaN.
TEST(ScaledGemm, CrossPlatformAgainstATensorCoreReferenceWithInfinities) {
  const std::vector<float> av{1, -INFINITY, 2, 3, 1, 2, 3, 4}, bv{1, 1, 1, 0, 1, 1, 1, 1};
  const TensorData a = view(std::span<const float>(av), {2, 4}, "fp8_e5m2", "A");
  const TensorData b = view(std::span<const float>(bv), {4, 2}, "fp8_e5m2", "B");
  const std::string scales = "--in fp8_e5m2 --out fp32 --scale-a 0.5 --scale-b 3 --promote-every 4";
  const ClaimSpec target = parse_claim(scales), reference = parse_claim(scales + " --profile nvidia-h100-tc");
  const TensorData c = emulate_matmul(a, b, std::nullopt, target);
  const TensorData r = emulate_matmul(a, b, std::nullopt, reference);
  const std::vector<double> want{-INFINITY, NAN, 15.0, 12.0};
  for (std::size_t e = 0; e < want.size(); ++e) {
    SCOPED_TRACE(e);
    for (const TensorData* t : {&c, &r}) {
      const double v = to_double(fp32, t->values[e]);
      if (std::isnan(want[e])) EXPECT_TRUE(std::isnan(v)) << v;
      else EXPECT_EQ(v, want[e]);
    }
  }
  MatmulCheckOptions opt;
  opt.ref_claim = reference;
  const auto judged = [&](const TensorData& cc, const TensorData& rr) {
    opt.ref = rr;
    return check_matmul(a, b, cc, target, opt);
  };
  const CheckResult ok = judged(c, r);
  EXPECT_EQ(ok.verdict.kind, TensorKind::consistent) << ok.text();
  const auto with = [](const TensorData& t, std::size_t e, std::uint32_t bits) {
    TensorData x = t;
    x.values[e] = Bits{bits};
    return x;
  };
  for (const std::uint32_t bad : {0x7f800000u, 0x3f800000u, 0x7fc00000u, 0xffc00000u}) {
    const CheckResult off = judged(with(c, 0, bad), r);
    EXPECT_EQ(off.verdict.kind, TensorKind::defect) << fmt::format("{:#x}\n", bad) << off.text();
  }
  EXPECT_EQ(judged(with(c, 1, 0xff800000u), r).verdict.kind, TensorKind::defect);
  EXPECT_EQ(judged(with(c, 1, 0x3f800000u), r).verdict.kind, TensorKind::defect);
}

// --ref where the reference legally overflows and the exact result is finite: [57344, -57344] ·
// [57344, 57344] in E5M2 with scales 2^110 promoted every product is exactly 0; the H100
// model's promotion overflows to +inf (its output, legal), and 0 is a legal target output (the
// bound of the fp32-partials claim, ≈ 1.5e36, contains it). R says nothing about the exact
// result there: C is judged against it under its own bound alone (the plain matmul's rule).
TEST(ScaledGemm, CrossPlatformWhereTheReferenceOverflowsJudgesCAgainstTheExactResult) {
  const std::vector<float> av{57344, -57344}, bv{57344, 57344};
  const TensorData a = view(std::span<const float>(av), {1, 2}, "fp8_e5m2", "A");
  const TensorData b = view(std::span<const float>(bv), {2, 1}, "fp8_e5m2", "B");
  const std::string scales = "--in fp8_e5m2 --out fp32 --scale-a 0x1p100 --scale-b 1024 --promote-every 1";
  const ClaimSpec target = parse_claim(scales), reference = parse_claim(scales + " --profile nvidia-h100-tc");
  const TensorData r = emulate_matmul(a, b, std::nullopt, reference);
  ASSERT_EQ(to_double(fp32, r.values[0]), INFINITY);
  MatmulCheckOptions opt;
  opt.ref_claim = reference;
  opt.ref = r;
  for (const std::uint32_t c : {0u, 0x7f800000u, 0xff800000u, 0x7fc00000u}) {
    const CheckResult x = check_matmul(a, b, TensorData{&fp32, {1, 1}, {Bits{c}}, "C"}, target, opt);
    EXPECT_EQ(x.verdict.kind, TensorKind::consistent) << fmt::format("{:#x}\n", c) << x.text();
  }
  // A finite C outside its own bound is still a defect: 2^127 (the bound is ≈ 1.5e36).
  const CheckResult far = check_matmul(a, b, TensorData{&fp32, {1, 1}, {Bits{0x7f000000u}}, "C"}, target, opt);
  EXPECT_EQ(far.verdict.kind, TensorKind::defect) << far.text();
}

// Formats without infinities (OCP OFP8 E4M3: no inf; a non-saturating conversion makes ±inf and
// every value beyond ±448 NaN, S.1111.111; a scaled claim's output cast does not saturate).
// An output in E4M3 of an element that is exactly -inf (E5M2 [1, -inf] · [1, 1]): NaN, of either
// sign, is the result; ±448 (a saturating cast) and 0 are defects — under the bounds and under
// --expect bit-exact (the H100 model). An exact 1024 (beyond 448): NaN legal, 448 a defect.
// An inner accumulator in E4M3: an infinite term is NaN there (docs/verdict.md §2: "an
// accumulator without inf makes an infinite term NaN"), the model's own output; +inf never.
TEST(ScaledGemm, FormatsWithoutInfinityTurnAnInfiniteTermIntoNaN) {
  const std::vector<float> av{1.0f, -INFINITY, 512.0f, 512.0f}, bv{1.0f, 1.0f};
  const TensorData a = view(std::span<const float>(av), {2, 2}, "fp8_e5m2", "A");
  const TensorData b = view(std::span<const float>(bv), {2, 1}, "fp8_e5m2", "B");
  for (const char* claim_text : {"--in fp8_e5m2 --out fp8_e4m3 --scale-a 1 --scale-b 1",
                                 "--in fp8_e5m2 --out fp8_e4m3 --scale-a 1 --scale-b 1 --profile nvidia-h100-tc",
                                 "--in fp8_e5m2 --out fp8_e4m3 --scale-a 1 --scale-b 1 --profile nvidia-h100-tc --expect bit-exact"}) {
    SCOPED_TRACE(claim_text);
    const ClaimSpec claim = parse_claim(claim_text);
    const TensorData model = emulate_matmul(a, b, std::nullopt, claim);
    EXPECT_TRUE(std::isnan(to_double(fp8_e4m3, model.values[0])));
    EXPECT_TRUE(std::isnan(to_double(fp8_e4m3, model.values[1])));
    const auto judged = [&](std::uint32_t c0, std::uint32_t c1) {
      return check_matmul(a, b, TensorData{&fp8_e4m3, {2, 1}, {Bits{c0}, Bits{c1}}, "C"}, claim);
    };
    for (const std::uint32_t nan : {0x7fu, 0xffu})
      EXPECT_EQ(judged(nan, 0x7fu).verdict.kind, TensorKind::consistent) << judged(nan, 0x7fu).text();
    for (const std::uint32_t bad : {0x7eu, 0xfeu, 0x00u}) {
      EXPECT_EQ(judged(bad, 0x7fu).verdict.kind, TensorKind::defect) << fmt::format("{:#x}", bad);
      EXPECT_EQ(judged(0xffu, bad).verdict.kind, TensorKind::defect) << fmt::format("{:#x}", bad);
    }
  }
  // An E4M3 inner accumulator: bf16 [1, -inf] · [1, 1] is -inf exactly; the -inf is NaN in the
  // accumulator, and the partial and its promotion are NaN.
  const std::vector<float> ab{1.0f, -INFINITY}, bb{1.0f, 1.0f};
  const TensorData a16 = view(std::span<const float>(ab), {1, 2}, "bf16", "A");
  const TensorData b16 = view(std::span<const float>(bb), {2, 1}, "bf16", "B");
  const ClaimSpec e4m3_acc = parse_claim("--in bf16 --out fp32 --acc fp8_e4m3 --scale-a 1 --scale-b 1");
  const TensorData nan_model = emulate_matmul(a16, b16, std::nullopt, e4m3_acc);
  EXPECT_TRUE(std::isnan(to_double(fp32, nan_model.values[0])));
  for (const std::uint32_t c : {0x7fc00000u, 0xffc00000u}) {
    const CheckResult r = check_matmul(a16, b16, TensorData{&fp32, {1, 1}, {Bits{c}}, "C"}, e4m3_acc);
    EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();
  }
  EXPECT_EQ(check_matmul(a16, b16, TensorData{&fp32, {1, 1}, {Bits{0x7f800000u}}, "C"}, e4m3_acc).verdict.kind,
            TensorKind::defect);
}

// An inner accumulator without inf does not take the infinities from the fp32 promotion: E4M3
// partials of [448, -448] · [1, 1], one per promotion, scales 2^100 · 2^20, are exact (448) but
// the first promotion 448 · 2^120 overflows fp32 to +inf, and fma(2^120, -448, +inf) stays +inf:
// the model's output (numpy float32: 2^120 · 448 = inf, inf + (-inf) = nan). The exact result is
// 0: ±inf and NaN are legal (the promotion may overflow either way), and 0.
TEST(ScaledGemm, ThePromotionOverflowsToInfinityBesideAnAccumulatorWithoutInfinity) {
  const std::vector<float> av{448.0f, -448.0f}, bv{1.0f, 1.0f};
  const TensorData a = view(std::span<const float>(av), {1, 2}, "fp8_e4m3", "A");
  const TensorData b = view(std::span<const float>(bv), {2, 1}, "fp8_e4m3", "B");
  const ClaimSpec claim = parse_claim("--in fp8_e4m3 --out fp32 --acc fp8_e4m3 --scale-a 0x1p100 --scale-b 0x1p20 --promote-every 1");
  const TensorData model = emulate_matmul(a, b, std::nullopt, claim);
  EXPECT_EQ(to_double(fp32, model.values[0]), INFINITY);
  for (const std::uint32_t c : {0x7f800000u, 0xff800000u, 0x7fc00000u, 0u}) {
    const CheckResult r = check_matmul(a, b, TensorData{&fp32, {1, 1}, {Bits{c}}, "C"}, claim);
    EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << fmt::format("{:#x}\n", c) << r.text();
  }
  const CheckResult inf = check_matmul(a, b, model, claim);
  EXPECT_THAT(inf.verdict.reason, ::testing::HasSubstr("fp32 promotion may overflow: ±inf is legal there too"));
  // Scales of 1: nothing can overflow, and an infinity is a defect.
  const ClaimSpec small = parse_claim("--in fp8_e4m3 --out fp32 --acc fp8_e4m3 --scale-a 1 --scale-b 1 --promote-every 1");
  EXPECT_EQ(check_matmul(a, b, TensorData{&fp32, {1, 1}, {Bits{0x7f800000u}}, "C"}, small).verdict.kind, TensorKind::defect);
}

// The model's partial sums take each product exactly (fused), whatever the operands' formats:
// bf16 operands in fp16 partials (bf16 reaches 2^127 and 2^-133, fp16 only 65504 and 2^-24).
// [2^40, 1] · [0, 3] is 3 and [2^-30, 0] · [2^30, 0] is 1 (products 0·2^40 and 2^-30·2^30 exact).
// The model converted the operands into fp16 first: 2^40 became inf and inf·0 NaN; 2^-30 became
// 0 and the product 0 — its own outputs then proven defects.
TEST(ScaledGemm, TheModelsProductsAreExactWhereTheOperandsAreWiderThanTheAccumulator) {
  const std::vector<float> av{0x1p40f, 1.0f, 0x1p-30f, 0.0f}, bv{0.0f, 0x1p30f, 3.0f, 0.0f};
  const TensorData a = view(std::span<const float>(av), {2, 2}, "bf16", "A");
  const TensorData b = view(std::span<const float>(bv), {2, 2}, "bf16", "B");
  for (const char* text : {"--in bf16 --out fp32 --acc fp16 --scale-a 1 --scale-b 1",
                           "--in bf16 --out fp32 --acc fp16 --scale-a 1 --scale-b 1 --promote-every 1",
                           "--in bf16 --out fp32 --acc fp8_e4m3 --scale-a 1 --scale-b 1"}) {
    SCOPED_TRACE(text);
    const ClaimSpec claim = parse_claim(text);
    const TensorData c = emulate_matmul(a, b, std::nullopt, claim);
    // C = A·B: [[0·2^40 + 1·3, 2^40·2^30 + 0], [2^-30·0 + 0, 2^-30·2^30 + 0]].
    EXPECT_EQ(to_double(fp32, c.values[0]), 3.0);
    EXPECT_EQ(to_double(fp32, c.values[3]), 1.0);
    const CheckResult r = check_matmul(a, b, c, claim);
    EXPECT_NE(r.verdict.kind, TensorKind::defect) << r.text();
  }
}

// The model's scale product fp32(sa·sb) overflows where sa·sb > 3.4e38 (scales 2^120 · 2^10):
// fma(inf, p, o) is inf (p = 2^-18 from E4M3 2^-9 · 2^-9) or NaN (p = 0) though the exact
// results, 2^112 and 0, are finite — the model's own outputs, legal; with scales 2^100 · 2^10
// (2^110: no overflow) inf is a defect.
TEST(ScaledGemm, AScaleProductBeyondFp32MakesInfinityAndNaNLegal) {
  const std::vector<float> av{0x1p-9f, 0.0f}, bv{0x1p-9f};
  const TensorData a = view(std::span<const float>(av), {2, 1}, "fp8_e4m3", "A");
  const TensorData b = view(std::span<const float>(bv), {1, 1}, "fp8_e4m3", "B");
  const ClaimSpec claim = parse_claim("--in fp8_e4m3 --out fp32 --scale-a 0x1p120 --scale-b 1024");
  const TensorData c = emulate_matmul(a, b, std::nullopt, claim);
  EXPECT_EQ(to_double(fp32, c.values[0]), INFINITY);
  EXPECT_TRUE(std::isnan(to_double(fp32, c.values[1])));
  const CheckResult r = check_matmul(a, b, c, claim);
  EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();
  EXPECT_THAT(r.verdict.reason, ::testing::HasSubstr("2 of 2 elements' scale product fp32(sa·sb) overflows"));
  const ClaimSpec fits = parse_claim("--in fp8_e4m3 --out fp32 --scale-a 0x1p100 --scale-b 1024");
  EXPECT_EQ(check_matmul(a, b, c, fits).verdict.kind, TensorKind::defect);
}

// Each promoted partial has its own underflow allowance: E4M3 partials of one fp16 product
// 0.75·2^-10 each (below half E4M3's least subnormal 2^-9: every one rounds to 0), four of them,
// exactly 0.0029297, give 0 — the model's output (OCP OFP8: E4M3 subnormals are m·2^-9). The
// bound counted one partial's allowance (2^-10) for all four partials: a proven defect.
TEST(ScaledGemm, EveryPromotedPartialHasItsOwnUnderflowAllowance) {
  const std::vector<float> av(4, 0.75f * 0x1p-10f), bv(4, 1.0f);
  const TensorData a = view(std::span<const float>(av), {1, 4}, "fp16", "A");
  const TensorData b = view(std::span<const float>(bv), {4, 1}, "fp16", "B");
  const ClaimSpec claim = parse_claim("--in fp16 --out fp32 --acc fp8_e4m3 --scale-a 1 --scale-b 1 --promote-every 1");
  const TensorData c = emulate_matmul(a, b, std::nullopt, claim);
  EXPECT_EQ(c.values[0].raw, 0u);
  const CheckResult r = check_matmul(a, b, c, claim);
  EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();
}

// The model's own output is never a defect, with ±inf among the operands and fp32 addends,
// scales that make the fp32 promotion (and the scale product) overflow and inner accumulators
// that overflow (fp16, bf16, E4M3 without inf; the H100 tensor-core model), in matmuls, row-wise
// dots and cross-platform checks between two claims of the same scales (the plain matmul's
// SelfConsistency.InfiniteOperandsBesideOverflowingPartialSumsAreNeverADefect, for scaled GEMMs).
// Operands are random patterns of their format (every exponent). It found the model's operand
// conversion into a narrower accumulator, the scale product's overflow and the underflow
// allowance counted once for all partials; with scales down to 2^-135 (every fourth trial), the
// scale product's rounding below fp32's normal range. Seeded; a failure prints the claim and
// the trial.
TEST(ScaledGemm, TheModelsOwnOutputWithInfinitiesAndOverflowsIsNeverADefect) {
  // NUMFID_SELF_CONSISTENCY_SEED=S searches further (the convention of self_consistency_test).
  const char* shift = std::getenv("NUMFID_SELF_CONSISTENCY_SEED");
  std::mt19937_64 g(20261203 + (shift ? std::strtoull(shift, nullptr, 10) * 1000003 : 0));
  const auto pick = [&](const auto& v) { return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(g)]; };
  const std::vector<const char*> ins{"fp8_e5m2", "fp8_e4m3", "bf16", "fp16"};
  const std::vector<std::string> inners{"--acc fp32", "--acc fp16", "--acc bf16", "--acc fp8_e4m3", "--acc fp32 --acc-rounding rtz",
                                        "--profile nvidia-h100-tc"};
  const std::vector<const char*> outs{"fp32", "bf16", "fp16", "fp8_e4m3"};
  int failures = 0, judged = 0, nan_of_inf = 0, overflowed = 0;
  for (int trial = 0; trial < 300 && failures < 5; ++trial) {
    const FormatSpec& in = *find_format(pick(ins));
    const std::int64_t m = 3, n = 4, k = pick(std::vector<std::int64_t>{4, 8, 12});
    const bool blocks = trial % 2 == 1;
    const std::string promote = pick(std::vector<std::string>{"", "--promote-every 1", "--promote-every 2"});
    // Scales 2^e (e up to 120: the promotion overflows; down to -135: the scale product falls
    // below fp32's normal range, or below its least subnormal and to 0) or not powers of two
    // (1.171875·2^-135 is still an fp32 value).
    const auto scale = [&] {
      const int e = trial % 4 == 2 ? std::uniform_int_distribution<int>(-135, -40)(g)
                                   : std::uniform_int_distribution<int>(-20, 120)(g);
      return std::ldexp(pick(std::vector<double>{1.0, 1.0, 1.5, 1.171875}), e);
    };
    std::string text = fmt::format("--in {} --out {} {} {}", in.name, pick(outs), pick(inners), promote);
    std::vector<double> sa, sb;
    if (blocks) {
      for (std::int64_t i = 0; i < m * (k / 4); ++i) sa.push_back(scale());
      for (std::int64_t i = 0; i < (k / 4) * n; ++i) sb.push_back(scale());
      text += " --scale-a a.npy --scale-b b.npy --scale-block 1x4,1x4";
    } else {
      text += fmt::format(" --scale-a {:a} --scale-b {:a}", scale(), scale());
    }
    ClaimSpec claim;
    try {
      claim = parse_claim(text);
      if (blocks) {
        claim.quant.scale_a = sa;
        claim.quant.scale_b = sb;
      }
    } catch (const InputError&) {
      continue;  // a combination the claim refuses (e.g. a profile without a model for these inputs)
    }
    const auto fill = [&](std::int64_t rows, std::int64_t cols, const char* name) {
      TensorData t{&in, {rows, cols}, {}, name};
      while (static_cast<std::int64_t>(t.values.size()) < rows * cols) {
        Bits x{static_cast<std::uint32_t>(g() & ((1u << in.bits) - 1))};
        if (std::bernoulli_distribution(0.08)(g) && in.non_finite == NonFinite::ieee) x = infinity(in, g() & 1);
        if (is_nan(in, x)) continue;
        t.values.push_back(x);
      }
      return t;
    };
    const TensorData a = fill(m, k, "A"), b = fill(k, n, "B");
    const std::string what = fmt::format("trial {}: {}", trial, text);
    SCOPED_TRACE(what);
    try {
      // Every third trial an fp32 addend (o starts there), some of it ±inf or near fp32's largest value.
      std::optional<TensorData> addend;
      if (trial % 3 == 0) {
        addend = TensorData{&fp32, {m, n}, {}, "addend"};
        for (std::int64_t e = 0; e < m * n; ++e) {
          const double x = std::ldexp(std::uniform_real_distribution<double>(-1, 1)(g), std::uniform_int_distribution<int>(-10, 127)(g));
          addend->values.push_back(std::bernoulli_distribution(0.1)(g) ? infinity(fp32, g() & 1)
                                                                        : Bits{bits_of(static_cast<float>(x))});
        }
      }
      const TensorData c = emulate_matmul(a, b, addend, claim);
      MatmulCheckOptions with_addend;
      with_addend.addend = addend;
      const CheckResult r = check_matmul(a, b, c, claim, with_addend);
      ++judged;
      const MatmulReference ref = matmul_reference(a, b, std::nullopt);
      for (std::size_t e = 0; e < c.values.size(); ++e) {
        const double v = to_double(*c.format, c.values[e]);
        nan_of_inf += std::isnan(v) && std::isinf(ref.elements[e].exact) ? 1 : 0;
        overflowed += !std::isfinite(v) && std::isfinite(ref.elements[e].exact) ? 1 : 0;
      }
      if (r.verdict.kind == TensorKind::defect && ++failures <= 5) ADD_FAILURE() << "matmul: the model's own output\n" << r.text();
      // A row-wise dot of A's rows with B's columns (B transposed: R × K).
      TensorData bt{&in, {m, k}, {}, "B"};
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t kk = 0; kk < k; ++kk) bt.values.push_back(b.values[static_cast<std::size_t>(kk * n + i)]);
      if (!blocks) {
        const TensorData d = emulate_dot(a, bt, std::nullopt, claim);
        const CheckResult rd = check_dot(a, bt, d, claim);
        if (rd.verdict.kind == TensorKind::defect && ++failures <= 5) ADD_FAILURE() << "dot: the model's own output\n" << rd.text();
      }
      // Cross-platform: the same scales under another inner arithmetic as the reference.
      ClaimSpec other = parse_claim(fmt::format("--in {} --out {} {} {}", in.name, claim.out->name, pick(inners), promote) +
                                    text.substr(text.find(" --scale-a")));
      other.quant.scale_a = claim.quant.scale_a;
      other.quant.scale_b = claim.quant.scale_b;
      const TensorData rr = emulate_matmul(a, b, addend, other);
      MatmulCheckOptions o;
      o.addend = addend;
      o.ref = rr;
      o.ref_claim = other;
      const CheckResult x = check_matmul(a, b, c, claim, o);
      if (x.verdict.kind == TensorKind::defect && ++failures <= 5)
        ADD_FAILURE() << "--ref " << other.text() << ": both models' own outputs\n" << x.text();
    } catch (const InputError&) {
      continue;  // refused for these inputs (e.g. the profile has no model for them)
    }
  }
  EXPECT_EQ(failures, 0);
  EXPECT_GT(judged, 150);
  EXPECT_GT(nan_of_inf, 0);  // the case of the overflow rule with an infinite term, exercised
  EXPECT_GT(overflowed, 0);  // non-finite outputs of finite exact results, exercised
}

}  // namespace
}  // namespace numfid
