// The work of `numfid check matmul` (exact oracle, bound, judgement; no file I/O) on a
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
#include "numerics/emulate.h"
#include "oracles/accumulator.h"
#include "tolerances/verdict.h"

namespace {

using numfid::Bits;

constexpr std::int64_t kM = 256, kK = 4096, kN = 256;

/// A (M×K) and B (K×N) as bf16 N(0,1) samples, and C: their product as a kernel with fp32
/// accumulation in blocked(128) order stores it in bf16 (a legal output: the verdict's work
/// is that of a passing check, every element judged in full).
struct Problem {
  std::vector<Bits> a, b, c;
  numfid::Claim claim;
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
    for (std::int64_t i = 0; i < kM * kK; ++i) r.a.push_back(draw());
    for (std::int64_t i = 0; i < kK * kN; ++i) r.b.push_back(draw());
    numfid::ReductionModel m;
    m.plan = *numfid::ReductionPlan::parse("blocked(128)");
    m.output = &numfid::bf16;
    r.c = numfid::emulate_matmul({&numfid::bf16, r.a, kM, kK}, {&numfid::bf16, r.b, kK, kN}, std::nullopt, m);
    r.claim.input = &numfid::bf16;
    r.claim.output = &numfid::bf16;
    return r;
  }();
  return p;
}

/// The oracle as cli/commands_check.cpp computes it: B transposed for contiguous columns, one
/// exact long-accumulator dot product per element, rounded into the output format.
std::vector<numfid::ReferenceElement> oracle(const Problem& p) {
  std::vector<Bits> bt(static_cast<std::size_t>(kK * kN));
  for (std::int64_t k = 0; k < kK; ++k)
    for (std::int64_t j = 0; j < kN; ++j) bt[j * kK + k] = p.b[k * kN + j];
  std::vector<numfid::ReferenceElement> ref(static_cast<std::size_t>(kM * kN));
  numfid::LongAccumulator acc;
  const std::span<const Bits> a(p.a), b(bt);
  for (std::int64_t i = 0; i < kM; ++i)
    for (std::int64_t j = 0; j < kN; ++j) {
      acc.clear();
      acc.add_dot(numfid::bf16, a.subspan(i * kK, kK), numfid::bf16, b.subspan(j * kK, kK));
      ref[i * kN + j] = {acc.round(*p.claim.output).bits, acc.to_double(), acc.abs_sum_upper()};
    }
  return ref;
}

numfid::Verdict verdict(const Problem& p, std::span<const numfid::ReferenceElement> ref) {
  const numfid::ReductionBound b = numfid::reduction_bound(p.claim, kK, false, 1 - 1e-6);
  return numfid::judge(p.claim, b, p.c, ref, {kM, kN});
}

void set_counters(benchmark::State& state) {
  state.counters["products/s"] =
      benchmark::Counter(static_cast<double>(kM * kN * kK), benchmark::Counter::kIsIterationInvariantRate);
}

/// oracle + bound + judge: what `numfid check matmul` spends after reading its files.
void BM_CheckMatmul(benchmark::State& state) {
  const Problem& p = problem();
  for (auto _ : state) {
    const std::vector<numfid::ReferenceElement> ref = oracle(p);
    numfid::Verdict v = verdict(p, ref);
    if (v.kind != numfid::TensorKind::consistent) state.SkipWithError("a legal output was not judged consistent");
    benchmark::DoNotOptimize(v);
  }
  set_counters(state);
}
BENCHMARK(BM_CheckMatmul)->Unit(benchmark::kMillisecond)->MinTime(2.0);

/// The oracle alone (transpose, 65536 exact dot products of length 4096, roundings).
void BM_CheckMatmulOracle(benchmark::State& state) {
  const Problem& p = problem();
  for (auto _ : state) {
    std::vector<numfid::ReferenceElement> ref = oracle(p);
    benchmark::DoNotOptimize(ref.data());
  }
  set_counters(state);
}
BENCHMARK(BM_CheckMatmulOracle)->Unit(benchmark::kMillisecond)->MinTime(2.0);

/// The bound and the judgement alone, on a precomputed oracle.
void BM_CheckMatmulJudge(benchmark::State& state) {
  const Problem& p = problem();
  const std::vector<numfid::ReferenceElement> ref = oracle(p);
  for (auto _ : state) {
    numfid::Verdict v = verdict(p, ref);
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_CheckMatmulJudge)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
