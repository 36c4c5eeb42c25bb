// --addend-at (tolerances/claim.h, AddendAt): where a GEMM's addend enters. The emulation against
// a second construction (the chain's result without the addend, then the epilogue's roundings
// by the MPFR oracle of tests/support, not formats/arith); the bound's soundness on those legal
// outputs (every plan, adversarial addends that cancel the product, results in the subnormal
// range, products beyond the output's range); its sharpness on real defects; the claim's
// refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "formats/convert.h"
#include "formats/error.h"
#include "formats/value.h"
#include "tests/support/mpfr_oracle.h"
#include "tests/support/naive_codec.h"
#include "tolerances/check.h"

namespace numfid {
namespace {

/// An M×N (or K×N) tensor of `f` from values drawn by `draw`, each rounded into `f`.
template <class Draw>
TensorData tensor(const FormatSpec& f, std::int64_t rows, std::int64_t cols, Draw&& draw, std::string name) {
  TensorData t{&f, {rows, cols}, {}, std::move(name)};
  for (std::int64_t i = 0; i < rows * cols; ++i) t.values.push_back(convert_double(f, draw(i)).bits);
  return t;
}

/// The products' sums A·B in double (to build addends that cancel them; nothing is judged
/// against these: the checks' exact oracle is the library's).
std::vector<double> exact_products(const TensorData& a, const TensorData& b) {
  const std::int64_t M = a.shape[0], K = a.shape[1], N = b.shape[1];
  std::vector<double> p(static_cast<std::size_t>(M * N), 0.0);
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j)
      for (std::int64_t k = 0; k < K; ++k)
        p[static_cast<std::size_t>(i * N + j)] += to_double(*a.format, a.values[static_cast<std::size_t>(i * K + k)]) *
                                                   to_double(*b.format, b.values[static_cast<std::size_t>(k * N + j)]);
  return p;
}

/// The epilogue by the MPFR oracle: x (a pattern of fx) + y (of fy), rounded into `to` under `r`.
Bits oracle_add(const FormatSpec& to, const FormatSpec& fx, Bits x, const FormatSpec& fy, Bits y, Rounding r) {
  const RoundOptions o{r, Overflow::ieee, false, false, 0, 0};
  return test::oracle_finish(to, test::oracle_round_sum(to, test::naive_decode(fx, x), test::naive_decode(fy, y), r), o)
      .bits;
}

struct Setting {
  const char* claim;        ///< formats and accumulation; the placement is added
  const char* any_order;    ///< the any-order claim that covers the same arithmetic ("" for a tensor-core unit: RZ)
  const FormatSpec* in;
  const FormatSpec* out;
  const FormatSpec* acc;    ///< the epilogue accumulator of `end` (the plan's --acc; fp32 under the profile)
  const FormatSpec* addend; ///< the addend's format
};

const Setting kSettings[] = {
    {"--in bf16 --out bf16 --plan sequential", "--in bf16 --out bf16", &bf16, &bf16, &fp32, &bf16},
    {"--in bf16 --out bf16 --plan pairwise", "--in bf16 --out bf16", &bf16, &bf16, &fp32, &fp32},
    {"--in fp16 --out fp16 --plan 'blocked(16)'", "--in fp16 --out fp16", &fp16, &fp16, &fp32, &fp16},
    {"--in bf16 --out fp16 --acc fp16 --plan 'splitk(4)'", "--in bf16 --out fp16 --acc fp16", &bf16, &fp16, &fp16, &fp16},
    {"--in fp16 --out fp16 --acc fp32 --profile nvidia-h100-tc", "", &fp16, &fp16, &fp32, &fp16},
    {"--in bf16 --out bf16 --profile nvidia-h100-tc", "", &bf16, &bf16, &fp32, &bf16},
};

/// Operand data sets: ordinary values; an addend cancelling the product to a few ulps; results
/// in the output's subnormal range; products just beyond the output's range, the addend
/// bringing the sum back inside.
enum class Data { ordinary, cancelling, tiny, beyond_range };

struct Operands {
  TensorData a, b, c;
};

Operands make(const Setting& s, Data kind, std::uint32_t seed) {
  constexpr std::int64_t M = 12, K = 96, N = 10;
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal;
  double scale = 1;
  if (kind == Data::tiny) scale = std::ldexp(1.0, emin(*s.out) / 2 - 4);  // products near the output's subnormals
  // Beyond the range: the K products of a row of one sign, E|a|·E(b) = 0.8 · 1.05, |P| about
  // 1.1 times the output's largest value, some elements above it and some below.
  if (kind == Data::beyond_range) scale = 1.1 * max_finite(*s.out) / (static_cast<double>(K) * 0.84);
  Operands o{tensor(*s.in, M, K, [&](std::int64_t) { return scale * normal(gen); }, "A"),
             tensor(*s.in, K, N, [&](std::int64_t) { return (kind == Data::beyond_range ? 1.0 : scale) * std::fabs(normal(gen)) + 0.25; }, "B"),
             {}};
  if (kind == Data::beyond_range)  // every product of row i of one sign: |P| ~ 0.84·K·scale, about the range's end
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t k = 0; k < K; ++k) {
        Bits& x = o.a.values[static_cast<std::size_t>(i * K + k)];
        x = convert_double(*s.in, std::fabs(to_double(*s.in, x)) * (i % 2 == 0 ? 1 : -1)).bits;
      }
  const std::vector<double> p = exact_products(o.a, o.b);
  o.c = tensor(*s.addend, M, N, [&](std::int64_t e) {
    const double pe = p[static_cast<std::size_t>(e)];
    switch (kind) {
      case Data::ordinary: return 4 * normal(gen);
      case Data::tiny: return scale * scale * normal(gen);
      case Data::cancelling:
      case Data::beyond_range:
        // -P to within a few ulps of the output (beyond the range: -(P minus a little)).
        return -pe * (1 + std::ldexp(normal(gen), -s.out->precision)) * (kind == Data::beyond_range ? 0.995 : 1);
    }
    return 0.0;
  }, "C");
  if (kind == Data::beyond_range)  // the addend itself within the range
    for (Bits& x : o.c.values)
      if (!std::isfinite(to_double(*s.addend, x))) x = convert_double(*s.addend, -max_finite(*s.out)).bits;
  return o;
}

std::string claim_of(const Setting& s, const char* at) { return fmt::format("{} --addend-at {}", s.claim, at); }

TEST(AddendAt, EmulationIsTheChainThenTheEpilogue) {
  // `output`: the chain's result cast to the output (the claim's model without the addend), then
  // C added in the output's format by MPFR; `end`: the chain's result in the accumulator, C added
  // there by MPFR, then cast by MPFR. Element for element.
  for (const Setting& s : kSettings) {
    for (const Data kind : {Data::ordinary, Data::cancelling, Data::tiny, Data::beyond_range}) {
      SCOPED_TRACE(fmt::format("{} data {}", s.claim, static_cast<int>(kind)));
      const Operands o = make(s, kind, 11);
      const ClaimSpec plain = parse_claim(s.claim);
      const TensorData p_out = emulate_matmul(o.a, o.b, std::nullopt, plain);
      ClaimSpec in_acc = parse_claim(fmt::format("{} --addend-at start", s.claim));
      in_acc.out = s.acc;  // the chain's result unrounded: the accumulator's own format
      const TensorData p_acc = emulate_matmul(o.a, o.b, std::nullopt, in_acc);
      const TensorData d_out = emulate_matmul(o.a, o.b, o.c, parse_claim(claim_of(s, "output")));
      const TensorData d_end = emulate_matmul(o.a, o.b, o.c, parse_claim(claim_of(s, "end")));
      int failures = 0;
      for (std::size_t i = 0; i < o.c.values.size() && failures < 4; ++i) {
        const Bits want_out = oracle_add(*s.out, *s.out, p_out.values[i], *s.addend, o.c.values[i], Rounding::rne);
        const Bits sum = oracle_add(*s.acc, *s.acc, p_acc.values[i], *s.addend, o.c.values[i], Rounding::rne);
        const Bits want_end =
            test::oracle_finish(*s.out, test::oracle_round_value(*s.out, test::naive_decode(*s.acc, sum), Rounding::rne),
                                RoundOptions{})
                .bits;
        const bool ok_out = test::same_bits(*s.out, want_out, d_out.values[i], test::NanPolicy::any_nan);
        const bool ok_end = test::same_bits(*s.out, want_end, d_end.values[i], test::NanPolicy::any_nan);
        if (!ok_out || !ok_end) {
          ++failures;
          ADD_FAILURE() << "element " << i << ": output " << test::show(*s.out, d_out.values[i]) << " want "
                        << test::show(*s.out, want_out) << "; end " << test::show(*s.out, d_end.values[i]) << " want "
                        << test::show(*s.out, want_end);
        }
      }
    }
  }
}

TEST(AddendAt, LegalOutputsAreWithinTheBound) {
  // Soundness: every output the placement's model gives, judged under the any-order claim and
  // under the model's own claim, lies within the deterministic bound (no proven defect), on
  // every data set; and the beyond-range set really reaches the overflow path.
  int overflowed = 0;
  for (const Setting& s : kSettings) {
    for (const Data kind : {Data::ordinary, Data::cancelling, Data::tiny, Data::beyond_range}) {
      for (std::uint32_t seed = 1; seed <= 3; ++seed) {
        const Operands o = make(s, kind, seed);
        for (const char* at : {"end", "output"}) {
          SCOPED_TRACE(fmt::format("{} data {} seed {} --addend-at {}", s.claim, static_cast<int>(kind), seed, at));
          const ClaimSpec model = parse_claim(claim_of(s, at));
          const TensorData d = emulate_matmul(o.a, o.b, o.c, model);
          for (const Bits x : d.values) overflowed += !std::isfinite(to_double(*s.out, x));
          MatmulCheckOptions opt;
          opt.addend = o.c;
          std::vector<std::string> claims = {claim_of(s, at)};
          if (*s.any_order) claims.push_back(fmt::format("{} --addend-at {}", s.any_order, at));
          for (const std::string& claim : claims) {
            const CheckResult r = check_matmul(o.a, o.b, d, parse_claim(claim), opt);
            EXPECT_EQ(r.verdict.counts[3], 0) << claim << "\n" << r.text();
            EXPECT_NE(r.verdict.kind, TensorKind::defect) << claim << "\n" << r.text();
          }
          // The bit-exact expectation of the model that produced it.
          const CheckResult x = check_matmul(o.a, o.b, d, parse_claim(claim_of(s, at) + " --expect bit-exact"), opt);
          ASSERT_TRUE(x.model.has_value());
          EXPECT_EQ(x.model->equal, x.model->elements);
        }
      }
    }
  }
  EXPECT_GT(overflowed, 0) << "no product overflowed the output: the beyond-range data miss the overflow path";
}

TEST(AddendAt, TheSecondRoundingIsWhatTheStartClaimMisses) {
  // Where C cancels the rounded product, fl(fl(P) + C) keeps P's output rounding error whole
  // while the exact result is tiny: far outside the start claim's bound (one rounding at the
  // tiny result), inside the output claim's.
  const Setting& s = kSettings[0];  // bf16 -> bf16, sequential
  const Operands o = make(s, Data::cancelling, 5);
  const TensorData d = emulate_matmul(o.a, o.b, o.c, parse_claim(claim_of(s, "output")));
  MatmulCheckOptions opt;
  opt.addend = o.c;
  const CheckResult start = check_matmul(o.a, o.b, d, parse_claim("--in bf16 --out bf16"), opt);
  EXPECT_EQ(start.verdict.kind, TensorKind::defect) << start.text();
  EXPECT_GT(start.verdict.counts[3], 10);
  // The defect names the placement under which the output is legal (and only that one: under
  // end the addend is added before the output cast, which does not keep P's rounding whole).
  ASSERT_FALSE(start.verdict.signatures.empty());
  EXPECT_EQ(start.verdict.signatures.front().name, "addend-placement");
  EXPECT_NE(start.verdict.signatures.front().evidence.find("under --addend-at output the output is CONSISTENT"),
            std::string::npos)
      << start.verdict.signatures.front().evidence;
  EXPECT_EQ(start.verdict.signatures.front().evidence.find("under --addend-at end"), std::string::npos);
  const CheckResult output = check_matmul(o.a, o.b, d, parse_claim("--in bf16 --out bf16 --addend-at output"), opt);
  EXPECT_EQ(output.verdict.counts[3], 0) << output.text();
  bool derivation = false;
  for (const std::string& line : output.bound.derivation)
    derivation = derivation || line.find("addend after the output cast (--addend-at output)") != std::string::npos;
  EXPECT_TRUE(derivation);
}

TEST(AddendAt, DefectsAreCaught) {
  // Sharpness: kernels that get the epilogue wrong, under the claim of the right one.
  const Setting& s = kSettings[1];  // bf16 -> bf16, fp32 addend
  for (const char* at : {"end", "output"}) {
    SCOPED_TRACE(at);
    const Operands o = make(s, Data::ordinary, 9);
    MatmulCheckOptions opt;
    opt.addend = o.c;
    const ClaimSpec claim = parse_claim(fmt::format("--in bf16 --out bf16 --addend-at {}", at));
    // Neither of the next two is legal wherever the addend enters: no addend-placement reading.
    const auto no_placement = [](const CheckResult& r) {
      for (const Signature& g : r.verdict.signatures)
        if (g.name == "addend-placement") return false;
      return true;
    };
    // The addend dropped: D = fl(A·B).
    const TensorData dropped = emulate_matmul(o.a, o.b, std::nullopt, parse_claim(s.claim));
    const CheckResult r_dropped = check_matmul(o.a, o.b, dropped, claim, opt);
    EXPECT_EQ(r_dropped.verdict.kind, TensorKind::defect);
    EXPECT_TRUE(no_placement(r_dropped)) << r_dropped.text();
    // The addend added twice.
    TensorData twice = emulate_matmul(o.a, o.b, o.c, parse_claim(claim_of(s, at)));
    for (std::size_t i = 0; i < twice.values.size(); ++i)
      twice.values[i] = oracle_add(bf16, bf16, twice.values[i], fp32, o.c.values[i], Rounding::rne);
    const CheckResult r_twice = check_matmul(o.a, o.b, twice, claim, opt);
    EXPECT_EQ(r_twice.verdict.kind, TensorKind::defect);
    EXPECT_TRUE(no_placement(r_twice)) << r_twice.text();
    // The addend read as bf16 pattern halves (C's fp32 bits truncated to bf16 and doubled: a
    // wrong cast before the add).
    TensorData wrong_cast = o.c;
    for (Bits& x : wrong_cast.values) x = convert_double(fp32, 2 * to_double(fp32, x)).bits;
    const TensorData d = emulate_matmul(o.a, o.b, wrong_cast, parse_claim(claim_of(s, at)));
    EXPECT_EQ(check_matmul(o.a, o.b, d, claim, opt).verdict.kind, TensorKind::defect);
  }
  // An fp16 accumulator under an fp32 claim, K = 96 products of ~1: caught after the epilogue too.
  const Setting& h = kSettings[2];
  Operands o = make(h, Data::ordinary, 4);
  MatmulCheckOptions opt;
  opt.addend = o.c;
  const TensorData narrow =
      emulate_matmul(o.a, o.b, o.c, parse_claim("--in fp16 --out fp16 --acc fp16 --plan sequential --addend-at output"));
  const CheckResult r = check_matmul(o.a, o.b, narrow, parse_claim("--in fp16 --out fp16 --addend-at output"), opt);
  EXPECT_NE(r.verdict.kind, TensorKind::consistent) << r.text();
}

TEST(AddendAt, ScaledGemmsPlaceTheAddendToo) {
  // A block-scaled fp8 GEMM (per-tensor scales that are no powers of two, partials promoted
  // every 32 products) with a bias-like addend in bf16: the model with the addend at the end is
  // the chain without it in fp32 (the promotion accumulator), C added there by MPFR, then cast by
  // MPFR; after the output cast, the chain cast to bf16 plus C by MPFR. Both outputs pass under
  // their claims; the chain-start claim's model differs from either.
  std::mt19937_64 gen(21);
  std::normal_distribution<double> normal;
  const std::int64_t M = 8, K = 128, N = 6;
  const TensorData a = tensor(fp8_e4m3, M, K, [&](std::int64_t) { return 4 * normal(gen); }, "A");
  const TensorData b = tensor(fp8_e4m3, K, N, [&](std::int64_t) { return 4 * normal(gen); }, "B");
  const std::string base = "--in fp8_e4m3 --out bf16 --scale-a 0.3 --scale-b 0.7 --promote-every 32";
  const TensorData p32 = emulate_matmul(a, b, std::nullopt, parse_claim("--in fp8_e4m3 --out fp32 --scale-a 0.3 "
                                                                        "--scale-b 0.7 --promote-every 32"));
  const TensorData p16 = emulate_matmul(a, b, std::nullopt, parse_claim(base));
  // C: -(the product) to within a few bf16 ulps, so the placements differ.
  const TensorData c = tensor(bf16, M, N, [&](std::int64_t e) {
    return -to_double(fp32, p32.values[static_cast<std::size_t>(e)]) * (1 + std::ldexp(normal(gen), -9));
  }, "C");
  MatmulCheckOptions opt;
  opt.addend = c;
  const TensorData d_end = emulate_matmul(a, b, c, parse_claim(base + " --addend-at end"));
  const TensorData d_out = emulate_matmul(a, b, c, parse_claim(base + " --addend-at output"));
  const TensorData d_start = emulate_matmul(a, b, c, parse_claim(base));
  int differ_end = 0, differ_out = 0;
  for (std::size_t i = 0; i < c.values.size(); ++i) {
    const Bits sum = oracle_add(fp32, fp32, p32.values[i], bf16, c.values[i], Rounding::rne);
    const Bits want_end =
        test::oracle_finish(bf16, test::oracle_round_value(bf16, test::naive_decode(fp32, sum), Rounding::rne), RoundOptions{})
            .bits;
    EXPECT_TRUE(test::same_bits(bf16, want_end, d_end.values[i], test::NanPolicy::any_nan)) << i;
    EXPECT_TRUE(test::same_bits(bf16, oracle_add(bf16, bf16, p16.values[i], bf16, c.values[i], Rounding::rne),
                                d_out.values[i], test::NanPolicy::any_nan))
        << i;
    differ_end += !(d_start.values[i] == d_end.values[i]);
    differ_out += !(d_start.values[i] == d_out.values[i]);
  }
  EXPECT_GT(differ_out, 0);
  for (const char* at : {"end", "output"}) {
    SCOPED_TRACE(at);
    const TensorData& d = std::string(at) == "end" ? d_end : d_out;
    // (A scaled claim's model line: the promotion model, predicted where cheap.)
    const CheckResult bound = check_matmul(a, b, d, parse_claim(fmt::format("{} --addend-at {}", base, at)), opt);
    EXPECT_EQ(bound.verdict.kind, TensorKind::consistent) << bound.text();
    EXPECT_EQ(bound.verdict.counts[3], 0) << bound.text();
    ASSERT_TRUE(bound.model.has_value());
    EXPECT_EQ(bound.model->equal, bound.model->elements);
    bool line = false;
    for (const std::string& l : bound.bound.derivation) line = line || l.find("--addend-at " + std::string(at)) != std::string::npos;
    EXPECT_TRUE(line);
  }
  // The output placement's output under the start claim: outside its bound where C cancels.
  MatmulCheckOptions o32 = opt;
  const CheckResult start = check_matmul(a, b, d_out, parse_claim(base), o32);
  EXPECT_EQ(start.verdict.kind, TensorKind::defect) << start.text();
}

TEST(AddendAt, ClaimTextAndRefusals) {
  const ClaimSpec c = parse_claim("--in bf16 --out bf16 --profile nvidia-h100-tc --addend-at output");
  EXPECT_EQ(c.addend_at, AddendAt::output);
  EXPECT_NE(c.text().find("--addend-at output"), std::string::npos);
  EXPECT_EQ(parse_claim(c.text()).addend_at, AddendAt::output);
  EXPECT_EQ(parse_claim("--in bf16 --out bf16").text().find("--addend-at"), std::string::npos);
  const auto message = [](auto&& f) {
    try {
      f();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(message([] { parse_claim("--in bf16 --out bf16 --addend-at middle"); }).find("--addend-at 'middle'"),
            std::string::npos);
  const Operands o = make(kSettings[0], Data::ordinary, 1);
  const TensorData d = emulate_matmul(o.a, o.b, std::nullopt, parse_claim(kSettings[0].claim));
  // No addend: nothing to place.
  EXPECT_NE(message([&] { check_matmul(o.a, o.b, d, parse_claim("--in bf16 --out bf16 --addend-at end")); })
                .find("check matmul: --addend-at end says where an addend enters the sum: give the addend"),
            std::string::npos);
  EXPECT_NE(message([&] { emulate_matmul(o.a, o.b, std::nullopt, parse_claim("--in bf16 --out bf16 --plan sequential "
                                                                             "--addend-at output")); })
                .find("emulate matmul: --addend-at output"),
            std::string::npos);
  EXPECT_NE(message([] { tolerance("matmul", 64, parse_claim("--in bf16 --out bf16 --addend-at output")); })
                .find("tol matmul: --addend-at output"),
            std::string::npos);
  // Ops without an addend, and integer GEMMs.
  const TensorData x = tensor(fp32, 4, 8, [](std::int64_t i) { return 1.0 + static_cast<double>(i); }, "X");
  const TensorData sx = tensor(fp32, 1, 4, [](std::int64_t i) { return 8.0 * static_cast<double>(i) + 28.0; }, "S");
  EXPECT_NE(message([&] { check_sum(x, sx, -1, parse_claim("--in fp32 --out fp32 --addend-at end"), 8); })
                .find("--addend-at belongs to a GEMM's claim"),
            std::string::npos);
  TensorData ai{&int8, {2, 4}, std::vector<Bits>(8, Bits{1}), "A"}, bi{&int8, {4, 2}, std::vector<Bits>(8, Bits{1}), "B"},
      ci{&int32, {2, 2}, std::vector<Bits>(4, Bits{5}), "C"};
  MatmulCheckOptions opt;
  opt.addend = TensorData{&int32, {2, 2}, std::vector<Bits>(4, Bits{1}), "D"};
  EXPECT_NE(message([&] { check_matmul(ai, bi, ci, parse_claim("--in int8 --acc int32 --out int32 --addend-at output"), opt); })
                .find("--addend-at is for float and block-scaled GEMMs"),
            std::string::npos);
}

TEST(AddendAt, TolPrintsTheEpilogue) {
  ToleranceOptions o;
  o.addend = true;
  const ToleranceResult start = tolerance("matmul", 1024, parse_claim("--in bf16 --out bf16"), o);
  const ToleranceResult end = tolerance("matmul", 1024, parse_claim("--in bf16 --out bf16 --addend-at end"), o);
  const ToleranceResult out = tolerance("matmul", 1024, parse_claim("--in bf16 --out bf16 --addend-at output"), o);
  // The chain's coefficient: K + 1 terms at the start, K products otherwise.
  EXPECT_EQ(start.bound.terms, 1025);
  EXPECT_EQ(end.bound.terms, 1024);
  EXPECT_LT(end.bound.deterministic, start.bound.deterministic);
  EXPECT_NE(end.text().find("addend added at the end in the accumulator"), std::string::npos) << end.text();
  EXPECT_NE(out.text().find("--addend-at output"), std::string::npos) << out.text();
  EXPECT_NE(out.json().find("\"addend_at\": \"output\""), std::string::npos);
  // One more output rounding in the same-sign rtol: rtol = C + u_rel·(1 + C), u_rel = u + u·(1 + u),
  // u = 2^-8 (bf16's), where the start claim has u alone.
  const double c = out.bound.deterministic, u = 0x1p-8;
  EXPECT_DOUBLE_EQ(out.rtol_deterministic, c + (u + u * (1 + u)) * (1 + c));
  EXPECT_DOUBLE_EQ(start.rtol_deterministic, start.bound.deterministic + u * (1 + start.bound.deterministic));
  // A block-scaled claim: the same line and the same extra rounding (the promotion
  // accumulator's fp32 for end; until 2026-12-04 tol ignored a scaled claim's addend).
  const std::string scaled = "--in fp8_e4m3 --out bf16 --scale-a 0.5 --scale-b 0.25 --promote-every 32";
  const ToleranceResult s0 = tolerance("matmul", 1024, parse_claim(scaled), o);
  const ToleranceResult s1 = tolerance("matmul", 1024, parse_claim(scaled + " --addend-at end"), o);
  EXPECT_NE(s1.text().find("addend at the end (--addend-at end)"), std::string::npos) << s1.text();
  EXPECT_NE(s1.json().find("\"addend_at\": \"end\""), std::string::npos);
  EXPECT_DOUBLE_EQ(s1.bound.deterministic, s0.bound.deterministic);
  EXPECT_GT(s1.rtol_deterministic, s0.rtol_deterministic);
}

}  // namespace
}  // namespace numfid
