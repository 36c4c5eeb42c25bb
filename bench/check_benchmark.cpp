// numfid::check_matmul, the work of `numfid check matmul` (exact oracle, bound, judgement; no file I/O), on a
// 256×4096×256 bf16 matmul with fp32 accumulation and bf16 output, single thread, whole and
// split into its parts.
#include <benchmark/benchmark.h>

#include <bit>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "formats/convert.h"
#include "tolerances/check.h"

namespace {

using numfid::Bits;

constexpr std::int64_t kM = 256, kK = 4096, kN = 256;

/// A (M×K) and B (K×N) as bf16 N(0,1) samples, and C: their product as a kernel with fp32
/// accumulation in blocked(128) order stores it in bf16 (a legal output: the verdict's work
/// is that of a passing check, every element judged in full).
struct Problem {
  numfid::TensorData a, b, c;
  numfid::ClaimSpec claim = numfid::parse_claim("--in bf16 --acc fp32 --out bf16");
};

const Problem& problem() {
  static const Problem p = [] {
    Problem r;
    std::mt19937_64 g(7);
    std::normal_distribution<double> nd(0, 1);
    auto draw = [&] {
      const float x = static_cast<float>(nd(g));
      return numfid::convert(numfid::fp32, numfid::bf16, Bits{std::bit_cast<std::uint32_t>(x)}).bits;
    };
    r.a = {&numfid::bf16, {kM, kK}, {}, "A"};
    r.b = {&numfid::bf16, {kK, kN}, {}, "B"};
    for (std::int64_t i = 0; i < kM * kK; ++i) r.a.values.push_back(draw());
    for (std::int64_t i = 0; i < kK * kN; ++i) r.b.values.push_back(draw());
    r.c = numfid::emulate_matmul(r.a, r.b, std::nullopt, numfid::parse_claim("--in bf16 --plan blocked(128) --out bf16"));
    return r;
  }();
  return p;
}

numfid::MatmulCheckOptions no_prediction() {
  numfid::MatmulCheckOptions o;
  o.predict = false;  // the model line: measured by BM_CheckMatmulPredicted
  return o;
}

void set_counters(benchmark::State& state) {
  state.counters["products/s"] =
      benchmark::Counter(static_cast<double>(kM * kN * kK), benchmark::Counter::kIsIterationInvariantRate);
}

/// numfid::check_matmul, the call `numfid check matmul` makes after reading its files
/// (exact results, bound, judgement), without the model line (the claim names no model).
void BM_CheckMatmul(benchmark::State& state) {
  const Problem& p = problem();
  for (auto _ : state) {
    numfid::CheckResult r = numfid::check_matmul(p.a, p.b, p.c, p.claim, no_prediction());
    if (r.verdict.kind != numfid::TensorKind::consistent) state.SkipWithError("a legal output was not judged consistent");
    benchmark::DoNotOptimize(r);
  }
  set_counters(state);
}
BENCHMARK(BM_CheckMatmul)->Unit(benchmark::kMillisecond)->MinTime(2.0);

/// The exact results alone (matmul_reference: transpose, 65536 exact dot products of length
/// 4096).
void BM_CheckMatmulOracle(benchmark::State& state) {
  const Problem& p = problem();
  for (auto _ : state) {
    numfid::MatmulReference ref = numfid::matmul_reference(p.a, p.b);
    benchmark::DoNotOptimize(ref.elements.data());
  }
  set_counters(state);
}
BENCHMARK(BM_CheckMatmulOracle)->Unit(benchmark::kMillisecond)->MinTime(2.0);

/// The bound and the judgement alone, against exact results computed once.
void BM_CheckMatmulJudge(benchmark::State& state) {
  const Problem& p = problem();
  const numfid::MatmulReference ref = numfid::matmul_reference(p.a, p.b);
  for (auto _ : state) {
    numfid::CheckResult r = numfid::check_matmul(ref, p.c, p.claim, no_prediction());
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_CheckMatmulJudge)->Unit(benchmark::kMillisecond);

/// A check whose claim names a plan: the model's prediction of C is computed and compared too.
void BM_CheckMatmulPredicted(benchmark::State& state) {
  const Problem& p = problem();
  const numfid::ClaimSpec claim = numfid::parse_claim("--in bf16 --plan blocked(128) --out bf16");
  for (auto _ : state) {
    numfid::CheckResult r = numfid::check_matmul(p.a, p.b, p.c, claim);
    if (!r.model || r.model->equal != r.model->elements) state.SkipWithError("the plan did not predict its own output");
    benchmark::DoNotOptimize(r);
  }
  set_counters(state);
}
BENCHMARK(BM_CheckMatmulPredicted)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
