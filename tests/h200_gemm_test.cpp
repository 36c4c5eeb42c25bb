// Whole cuBLAS GEMMs recorded on an NVIDIA H200 through PyTorch 2.11 (cuBLAS 13; scripts/h200/
// record.py, tests/data/h200/README.md), judged by the library's check pipeline with the
// claims a user would state. The operands come from a counter-based generator (splitmix64),
// regenerated here, so only the outputs travel.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "formats/convert.h"
#include "formats/format_spec.h"
#include "io/npy.h"
#include "io/tensor.h"
#include "formats/arith.h"
#include "tolerances/check.h"

namespace numfid {
namespace {

namespace fs = std::filesystem;

/// scripts/h200/record.py's splitmix(): the mix of seed * 2^32 + i.
std::uint64_t mix(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = (seed * (std::uint64_t{1} << 32) + i) * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// record.py's gemm_operand_range(): ±(1 + m)·2^e with e = lo + (z >> 32) mod (hi - lo + 1), at
/// most emax; below emin the significand 1.m is shifted into a subnormal (possibly 0).
std::vector<Bits> operand_range(const FormatSpec& f, std::uint64_t seed, std::int64_t rows, std::int64_t cols, int lo,
                                int hi) {
  const int m = f.precision - 1;
  const int fmin = 1 - f.bias;
  const int fmax = (f == fp8_e4m3) ? 8 : (1 << f.exponent_bits) - 2 - f.bias;
  std::vector<Bits> v;
  v.reserve(static_cast<std::size_t>(rows * cols));
  for (std::int64_t i = 0; i < rows * cols; ++i) {
    const std::uint64_t z = mix(seed, static_cast<std::uint64_t>(i));
    const std::uint32_t sign = static_cast<std::uint32_t>(z >> 63);
    const int e = std::min(lo + static_cast<int>((z >> 32) % static_cast<std::uint64_t>(hi - lo + 1)), fmax);
    std::uint32_t mant = static_cast<std::uint32_t>(z & ((std::uint64_t{1} << m) - 1));
    std::uint32_t biased = static_cast<std::uint32_t>(e + f.bias);
    if (e < fmin) {
      mant = ((std::uint32_t{1} << m) | mant) >> std::min(fmin - e, m + 1);
      biased = 0;
    }
    if (f == fp8_e4m3 && biased == 15 && mant == 7) mant = 6;  // 0x7f is NaN
    v.push_back(Bits{(sign << (f.bits - 1)) | (biased << m) | mant});
  }
  return v;
}

/// record.py's gemm_operand(): the range [-6, 1], every value normal in every format used.
std::vector<Bits> operand(const FormatSpec& f, std::uint64_t seed, std::int64_t rows, std::int64_t cols) {
  return operand_range(f, seed, rows, cols, -6, 1);
}

struct Gemm {
  TensorData a, b;  ///< A: M x K, B: K x N (record.py stores B^T and passes its transpose)
};

/// A from seed `seed`, B^T from seed + 1, exponents in [lo, hi] (the defaults: record.py's gemm_operand).
Gemm operands(const FormatSpec& f, std::int64_t M, std::int64_t K, std::int64_t N, std::uint64_t seed = 1, int lo = -6,
              int hi = 1) {
  Gemm g;
  g.a = {&f, {M, K}, operand_range(f, seed, M, K, lo, hi), "A"};
  const std::vector<Bits> bt = operand_range(f, seed + 1, N, K, lo, hi);
  std::vector<Bits> b(static_cast<std::size_t>(K * N));
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k) b[static_cast<std::size_t>(k * N + n)] = bt[static_cast<std::size_t>(n * K + k)];
  g.b = {&f, {K, N}, std::move(b), "B"};
  return g;
}

/// The recorded output: raw patterns of `f` (uint16 or uint32).
TensorData output(const std::string& name, const FormatSpec& f) {
  const fs::path p = fs::path(NUMFID_H200_DATA) / "gemm" / (name + ".npy");
  const Tensor t = read_npy(p);
  // An unsigned container of the format's storage width holds its bit patterns (io/tensor.h).
  return {&f, t.shape, tensor_values(t, f), p.filename().string()};
}

CheckResult check(const Gemm& g, const TensorData& c, const std::string& claim) {
  return check_matmul(g.a, g.b, c, parse_claim(claim));
}

struct Case {
  const char* data;       ///< tests/data/h200/gemm/DATA.npy
  const FormatSpec* in;
  const FormatSpec* out;
  int M, K, N;
  const char* claim;      ///< the claim as a user states it (formats and shapes added here)
  bool bit_exact;         ///< the claim carries --expect bit-exact and the model matches every element
  int lo = -6, hi = 1;    ///< operands' exponent range (record.py's GEMM_RANGES: seeds 3, 4)
  std::uint64_t seed = 1;  ///< A's seed; B^T's is seed + 1
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.data << " under " << c.claim; }

// Every claim below holds on the hardware's output: CONSISTENT, and where the claim is
// --expect bit-exact, every element equals the model's.
const Case kConsistent[] = {
    // cuBLAS bf16/fp16 GEMMs with fp32 accumulation (PyTorch's default), one wgmma chain over K.
    {"bf16_default_128x1024x128", &bf16, &bf16, 128, 1024, 128, "--profile nvidia-h100-tc --expect bit-exact", true},
    {"bf16_fp32_128x1024x128", &bf16, &fp32, 128, 1024, 128, "--profile nvidia-h100-tc --expect bit-exact", true},
    {"fp16_default_128x1024x128", &fp16, &fp16, 128, 1024, 128, "--acc fp32 --profile nvidia-h100-tc --expect bit-exact", true},
    {"fp16_fp32_128x1024x128", &fp16, &fp32, 128, 1024, 128, "--profile nvidia-h100-tc --expect bit-exact", true},
    // fp8 with fast accumulation (torch._scaled_mm use_fast_accum=True): wgmma's 13-bit unit over all of K.
    {"e4m3_fp32_fast1_128x1024x128", &fp8_e4m3, &fp32, 128, 1024, 128, "--profile nvidia-h100-tc --expect bit-exact", true},
    {"e4m3_bf16_fast1_128x1024x128", &fp8_e4m3, &bf16, 128, 1024, 128, "--profile nvidia-h100-tc --expect bit-exact", true},
    // fp8 without it: wgmma partials of 128 products promoted into fp32 (the DeepGEMM recipe), per-tensor scales 1.
    {"e4m3_fp32_fast0_128x1024x128", &fp8_e4m3, &fp32, 128, 1024, 128,
     "--scale-a 1 --scale-b 1 --scale-block 128x1024 --scale-format fp32 --promote-every 128 --profile nvidia-h100-tc "
     "--expect bit-exact", true},
    {"e4m3_bf16_fast0_128x1024x128", &fp8_e4m3, &bf16, 128, 1024, 128,
     "--scale-a 1 --scale-b 1 --scale-block 128x1024 --scale-format fp32 --promote-every 128 --profile nvidia-h100-tc "
     "--expect bit-exact", true},
    // Shapes where cuBLAS splits K (bf16 at 64x8192x64, tf32 at 128x1024x128): not one chain, so not
    // bit for bit, but within the profile's bound and within fp32 accumulation in any order.
    {"bf16_default_64x8192x64", &bf16, &bf16, 64, 8192, 64, "--profile nvidia-h100-tc", false},
    {"bf16_fp32_64x8192x64", &bf16, &fp32, 64, 8192, 64, "--profile nvidia-h100-tc", false},
    {"tf32_default_128x1024x128", &tf32, &fp32, 128, 1024, 128, "--profile nvidia-h100-tc", false},
    {"bf16_fp32_64x8192x64", &bf16, &fp32, 64, 8192, 64, "--acc fp32", false},
    {"fp16_fp32_128x1024x128", &fp16, &fp32, 128, 1024, 128, "--acc fp32", false},
    // Operands of wide or tiny exponent ranges (third run): subnormal operands, results near and
    // below fp32's and fp16's normal range, bf16 sums that overflow to inf, every E4M3 value.
    {"bf16_tiny_default_128x1024x128", &bf16, &bf16, 128, 1024, 128, "--profile nvidia-h100-tc --expect bit-exact", true,
     -75, -57, 3},
    {"bf16_tiny_fp32_128x1024x128", &bf16, &fp32, 128, 1024, 128, "--profile nvidia-h100-tc --expect bit-exact", true,
     -75, -57, 3},
    {"bf16_wide_fp32_128x1024x128", &bf16, &fp32, 128, 1024, 128, "--profile nvidia-h100-tc --expect bit-exact", true,
     -133, 127, 3},
    {"fp16_tiny_default_128x1024x128", &fp16, &fp16, 128, 1024, 128,
     "--acc fp32 --profile nvidia-h100-tc --expect bit-exact", true, -24, -9, 3},
    {"fp16_tiny_fp32_128x1024x128", &fp16, &fp32, 128, 1024, 128, "--profile nvidia-h100-tc --expect bit-exact", true,
     -24, -9, 3},
    {"e4m3_wide_fp32_fast1_128x1024x128", &fp8_e4m3, &fp32, 128, 1024, 128,
     "--profile nvidia-h100-tc --expect bit-exact", true, -9, 8, 3},
};

class H200Gemm : public ::testing::TestWithParam<Case> {};

TEST_P(H200Gemm, TheClaimHolds) {
  const Case& t = GetParam();
  const Gemm g = operands(*t.in, t.M, t.K, t.N, t.seed, t.lo, t.hi);
  const TensorData c = output(t.data, *t.out);
  ASSERT_EQ(c.values.size(), static_cast<std::size_t>(t.M) * static_cast<std::size_t>(t.N));
  const std::string claim = fmt::format("--in {} --out {} {}", t.in->name, t.out->name, t.claim);
  const CheckResult r = check(g, c, claim);
  EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << claim << "\n" << r.text();
  if (t.bit_exact) {
    ASSERT_TRUE(r.model.has_value()) << claim;
    EXPECT_EQ(r.model->equal, r.model->elements) << claim << "\n" << r.text();
  }
}

INSTANTIATE_TEST_SUITE_P(Recorded, H200Gemm, ::testing::ValuesIn(kConsistent), [](const auto& p) {
  return fmt::format("{}_{}", p.index, p.param.data);
});

// Where cuBLAS splits K the output is not the model's single chain: --expect bit-exact says so
// (a regression test pinned to one kernel choice would catch a library update that changes it).
TEST(H200Gemm, SplitKOutputsAreNotTheSingleChainBitForBit) {
  const Gemm g = operands(bf16, 64, 8192, 64);
  const CheckResult r = check(g, output("bf16_fp32_64x8192x64", fp32),
                              "--in bf16 --out fp32 --profile nvidia-h100-tc --expect bit-exact");
  EXPECT_EQ(r.verdict.kind, TensorKind::defect);
  ASSERT_TRUE(r.model.has_value());
  EXPECT_LT(r.model->equal, r.model->elements / 2);
}

// The records pin the claims: the promotion interval of cuBLAS's fp8 GEMM without fast
// accumulation is 128 (64 and 256 are refuted), the fp16 output is the fp32 unit's result
// cast (the fp16-accumulating unit is refuted), and fp8 with fast accumulation is not fp32
// accumulation (wgmma's 13-bit partial sums exceed that claim's bound: a proven defect of the
// narrower claim).
TEST(H200Gemm, NeighbouringClaimsAreRefuted) {
  const Gemm fp8 = operands(fp8_e4m3, 128, 1024, 128);
  const TensorData fast0 = output("e4m3_fp32_fast0_128x1024x128", fp32);
  for (const int every : {64, 256}) {
    const CheckResult r = check(fp8, fast0,
                                fmt::format("--in fp8_e4m3 --out fp32 --scale-a 1 --scale-b 1 --scale-block 128x1024 "
                                            "--scale-format fp32 --promote-every {} --profile nvidia-h100-tc "
                                            "--expect bit-exact", every));
    EXPECT_EQ(r.verdict.kind, TensorKind::defect) << "promote every " << every;
  }
  const Gemm half = operands(fp16, 128, 1024, 128);
  const CheckResult h = check(half, output("fp16_default_128x1024x128", fp16),
                              "--in fp16 --out fp16 --profile nvidia-h100-tc --expect bit-exact");
  EXPECT_EQ(h.verdict.kind, TensorKind::defect) << "the fp16-accumulating unit";
  const CheckResult f = check(fp8, output("e4m3_fp32_fast1_128x1024x128", fp32), "--in fp8_e4m3 --out fp32 --acc fp32");
  EXPECT_EQ(f.verdict.kind, TensorKind::defect) << f.text();
}

// torch.addmm(C, A, B) (cuBLAS's epilogue, beta = 1): the product is rounded to the output format
// first and C added to it with a second rounding, out = fl(fl(A·B) + C); with an fp32 output,
// fl32(fl32(A·B) + C). Measured: every element of every record. numfid's --addend claim puts C into
// the accumulator's chain instead (one rounding to the output), so with a bf16 or fp16 output
// cuBLAS's double rounding exceeds that claim's bound on some elements: a false alarm no claim can
// avoid yet (docs/tensor-cores.md; the note of 2026-12-04).
/// The addend of a recorded run as an M×N tensor of `f`: seed 5's M×N values (addmm's C), or
/// seed 6's N values repeated in every row (a bias vector).
TensorData addend_of(const FormatSpec& f, bool bias) {
  const std::vector<Bits> v = operand(f, bias ? 6 : 5, bias ? 1 : 128, 128);
  std::vector<Bits> full(128 * 128);
  for (std::size_t i = 0; i < full.size(); ++i) full[i] = bias ? v[i % 128] : v[i];
  return {&f, {128, 128}, std::move(full), bias ? "bias" : "C"};
}

TEST(H200Gemm, AddmmRoundsTheProductToTheOutputThenAddsTheAddend) {
  for (const FormatSpec* f : {&bf16, &fp16}) {
    for (const FormatSpec* out : {f, &fp32}) {
      SCOPED_TRACE(fmt::format("{} -> {}", f->name, out->name));
      const Gemm g = operands(*f, 128, 1024, 128);
      const std::string claim = fmt::format("--in {} --out {} {} --profile nvidia-h100-tc", f->name, out->name,
                                            *out == fp16 ? "--acc fp32" : "");
      const TensorData product = emulate_matmul(g.a, g.b, std::nullopt, parse_claim(claim));
      const TensorData c = addend_of(*out, false);
      const TensorData d = output(fmt::format("{}_addmm{}_128x1024x128", f->name, *out == fp32 ? "_fp32" : ""), *out);
      ASSERT_EQ(product.values.size(), d.values.size());
      int differ = 0;
      for (std::size_t i = 0; i < d.values.size(); ++i)
        differ += !(add(*out, product.values[i], c.values[i]).bits == d.values[i]);
      EXPECT_EQ(differ, 0);
    }
  }
}

TEST(H200Gemm, BiasEpilogueAddsTheBiasInFp32ThenRounds) {
  // torch.nn.functional.linear and addmm with a bias vector (cuBLASLt's bias epilogue): the
  // products' fp32 sum (one wgmma chain), the bias added in fp32 to nearest, one cast to the
  // output, out = fl_out(fl_fp32(P + bias)), every element; computed here from the model's fp32
  // sum with formats/arith, not through --addend-at.
  for (const FormatSpec* f : {&bf16, &fp16}) {
    const Gemm g = operands(*f, 128, 1024, 128);
    const TensorData p32 =
        emulate_matmul(g.a, g.b, std::nullopt, parse_claim(fmt::format("--in {} --out fp32 --profile nvidia-h100-tc", f->name)));
    for (const char* kind : {"linear", "addmm_bias", "addmm_bias_fp32"}) {
      const FormatSpec& out = std::string(kind).ends_with("fp32") ? fp32 : *f;
      SCOPED_TRACE(fmt::format("{} {} -> {}", kind, f->name, out.name));
      const TensorData c = addend_of(out, true);
      const TensorData d = output(fmt::format("{}_{}_128x1024x128", f->name, kind), out);
      int differ = 0;
      for (std::size_t i = 0; i < d.values.size(); ++i) {
        const Bits sum = add(fp32, p32.values[i], convert(out, fp32, c.values[i]).bits).bits;
        differ += !(convert(fp32, out, sum).bits == d.values[i]);
      }
      EXPECT_EQ(differ, 0);
    }
  }
  // fp8 torch._scaled_mm with a bias, with and without fast accumulation: the same epilogue
  // after the fp32 sum of one wgmma chain, or of partials promoted every 128 products.
  const Gemm g = operands(fp8_e4m3, 128, 1024, 128);
  for (const int fast : {1, 0}) {
    const TensorData p32 = emulate_matmul(
        g.a, g.b, std::nullopt,
        parse_claim(fast ? "--in fp8_e4m3 --out fp32 --profile nvidia-h100-tc"
                         : "--in fp8_e4m3 --out fp32 --scale-a 1 --scale-b 1 --scale-block 128x1024 --scale-format fp32 "
                           "--promote-every 128 --profile nvidia-h100-tc"));
    for (const FormatSpec* out : {&bf16, &fp16}) {
      SCOPED_TRACE(fmt::format("e4m3 -> {}, fast accumulation {}", out->name, fast));
      const TensorData c = addend_of(*out, true);
      const TensorData d = output(fmt::format("e4m3_{}_bias_fast{}_128x1024x128", out->name, fast), *out);
      int differ = 0;
      for (std::size_t i = 0; i < d.values.size(); ++i)
        differ += !(convert(fp32, *out, add(fp32, p32.values[i], convert(*out, fp32, c.values[i]).bits).bits).bits ==
                    d.values[i]);
      EXPECT_EQ(differ, 0);
    }
  }
}

struct AddendCase {
  const char* data;
  const FormatSpec* in;
  bool fp32_out, bias;
  std::vector<std::string> exact;    ///< --addend-at values whose model reproduces every element
  std::vector<std::string> refuted;  ///< ... and those it refutes (some element differs)
  bool start_is_false_alarm = false;  ///< the start claim (numfid's only one before --addend-at) calls it a DEFECT
  const char* claim = nullptr;        ///< the claim without --addend-at (default: the profile's, formats added)
};

TEST(H200Gemm, TheAddendEntersWhereTheClaimSays) {
  const std::vector<AddendCase> cases = {
      // addmm with an M×N C and a bf16/fp16 output: fl_out(fl_out(A·B) + C).
      {"bf16_addmm", &bf16, false, false, {"output"}, {"start", "end"}, true},
      {"fp16_addmm", &fp16, false, false, {"output"}, {"start", "end"}, true},
      // ... with an fp32 output: C added after the chain (end and output coincide in fp32).
      {"bf16_addmm_fp32", &bf16, true, false, {"end", "output"}, {"start"}},
      {"fp16_addmm_fp32", &fp16, true, false, {"end", "output"}, {"start"}},
      // A bias vector (cuBLASLt's bias epilogue): added to the fp32 sum, then one cast. (For
      // bf16 the chain started from the bias rounds the same on these data.)
      {"bf16_linear", &bf16, false, true, {"end", "start"}, {"output"}},
      {"bf16_addmm_bias", &bf16, false, true, {"end", "start"}, {"output"}},
      {"fp16_linear", &fp16, false, true, {"end"}, {"start", "output"}},
      {"fp16_addmm_bias", &fp16, false, true, {"end"}, {"start", "output"}},
      {"bf16_addmm_bias_fp32", &bf16, true, true, {"end", "output"}, {"start"}},
      {"fp16_addmm_bias_fp32", &fp16, true, true, {"end", "output"}, {"start"}},
      // fp8 torch._scaled_mm with a bias (sixth run): the bias added to the fp32 sum, one cast —
      // with fast accumulation (one wgmma chain: the bias in the chain's 13-bit unit, start, is
      // refuted) and without (partials promoted every 128 into fp32: there the promotion
      // accumulator starting from the bias, start, rounds the same on these data).
      {"e4m3_bf16_bias_fast1", &fp8_e4m3, false, true, {"end"}, {"start", "output"}, false,
       "--in fp8_e4m3 --out bf16 --profile nvidia-h100-tc"},
      {"e4m3_fp16_bias_fast1", &fp8_e4m3, false, true, {"end"}, {"start", "output"}, false,
       "--in fp8_e4m3 --out fp16 --acc fp32 --profile nvidia-h100-tc"},
      {"e4m3_bf16_bias_fast0", &fp8_e4m3, false, true, {"end", "start"}, {"output"}, false,
       "--in fp8_e4m3 --out bf16 --scale-a 1 --scale-b 1 --scale-block 128x1024 --scale-format fp32 --promote-every 128 "
       "--profile nvidia-h100-tc"},
      {"e4m3_fp16_bias_fast0", &fp8_e4m3, false, true, {"end", "start"}, {"output"}, false,
       "--in fp8_e4m3 --out fp16 --scale-a 1 --scale-b 1 --scale-block 128x1024 --scale-format fp32 --promote-every 128 "
       "--profile nvidia-h100-tc"},
  };
  for (const AddendCase& k : cases) {
    SCOPED_TRACE(k.data);
    const FormatSpec& out = k.fp32_out ? fp32 : k.claim ? *parse_claim(k.claim).out : *k.in;
    const Gemm g = operands(*k.in, 128, 1024, 128);
    const TensorData d = output(fmt::format("{}_128x1024x128", k.data), out);
    MatmulCheckOptions o;
    o.addend = addend_of(out, k.bias);
    const std::string base = k.claim ? std::string(k.claim)
                                     : fmt::format("--in {} --out {} --profile nvidia-h100-tc{}", k.in->name, out.name,
                                                   !k.fp32_out && *k.in == fp16 ? " --acc fp32" : "");
    for (const std::string& at : k.exact) {
      SCOPED_TRACE("--addend-at " + at);
      const CheckResult r = check_matmul(g.a, g.b, d, parse_claim(base + " --addend-at " + at + " --expect bit-exact"), o);
      ASSERT_TRUE(r.model.has_value());
      EXPECT_EQ(r.model->equal, 16384) << r.text();
      EXPECT_EQ(r.verdict.kind, TensorKind::consistent) << r.text();
      // The bound alone (no model): consistent, nothing outside the deterministic bound.
      const CheckResult b = check_matmul(g.a, g.b, d, parse_claim(base + " --addend-at " + at), o);
      EXPECT_EQ(b.verdict.kind, TensorKind::consistent) << b.text();
      EXPECT_EQ(b.verdict.counts[3], 0);
    }
    for (const std::string& at : k.refuted) {
      SCOPED_TRACE("--addend-at " + at);
      const CheckResult r = check_matmul(g.a, g.b, d, parse_claim(base + " --addend-at " + at + " --expect bit-exact"), o);
      ASSERT_TRUE(r.model.has_value());
      EXPECT_LT(r.model->equal, 16384);
      EXPECT_EQ(r.verdict.kind, TensorKind::defect);
      // The defect's signature names the placements the hardware used, each reproduced bit for
      // bit (block-scaled claims too).
      const auto sig = std::find_if(r.verdict.signatures.begin(), r.verdict.signatures.end(),
                                    [](const Signature& x) { return x.name == "addend-placement"; });
      ASSERT_NE(sig, r.verdict.signatures.end()) << r.text();
      for (const std::string& fit : k.exact)
        EXPECT_THAT(sig->evidence,
                    ::testing::ContainsRegex(fmt::format(
                        "under --addend-at {} the output is CONSISTENT \\([0-9]+ of 16384 elements bit-exact; the "
                        "model predicts 16384 of 16384 bit for bit\\)",
                        fit)))
            << fit;
      for (const std::string& other : k.refuted)
        EXPECT_THAT(sig->evidence, ::testing::Not(::testing::HasSubstr("under --addend-at " + other))) << other;
    }
    // Before --addend-at, the addend was always the chain's start: a false alarm on addmm — whose
    // signature now names the placement that fits.
    const CheckResult start = check_matmul(g.a, g.b, d, parse_claim(base), o);
    EXPECT_EQ(start.verdict.kind == TensorKind::defect, k.start_is_false_alarm) << start.text();
    if (k.start_is_false_alarm) {
      ASSERT_FALSE(start.verdict.signatures.empty());
      EXPECT_EQ(start.verdict.signatures.front().name, "addend-placement");
      const std::string& evidence = start.verdict.signatures.front().evidence;
      EXPECT_THAT(evidence, ::testing::HasSubstr("under --addend-at output the output is CONSISTENT"));
      EXPECT_THAT(evidence, ::testing::Not(::testing::HasSubstr("under --addend-at end")));
    }
  }
}

}  // namespace
}  // namespace numfid
