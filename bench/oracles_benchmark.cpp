// The exact long accumulator against the MPFR oracle on the same dot products (terms/s and
// their ratio), and the accumulator alone on the other input formats.
//
//   build-*/bin/oracles_benchmark --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Each benchmark reports CPU time per term; with repetitions it also reports their minimum
// (`_min`, the figure least disturbed by other load on a shared machine), and the reporter
// prints the ratio of MPFR's time per term to the accumulator's at the end.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "formats/convert.h"
#include "formats/format_spec.h"
#include "oracles/accumulator.h"
#include "oracles/mpfr_oracles.h"

namespace numfid {
namespace {

constexpr std::size_t kK = 4096;  // terms per dot product
constexpr std::size_t kRows = 16;

/// kRows x kK values ~ N(0, 1) rounded into `f` (activations and weights of similar scale).
std::vector<Bits> normal_data(const FormatSpec& f, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<Bits> v(kRows * kK);
  for (Bits& b : v) {
    const float x = dist(rng);
    b = convert(fp32, f, Bits{std::bit_cast<std::uint32_t>(x)}).bits;
  }
  return v;
}

struct Data {
  std::vector<Bits> a;
  std::vector<Bits> b;
};

const Data& data(const FormatSpec& f) {
  static std::map<const FormatSpec*, Data> cache;
  auto it = cache.find(&f);
  if (it == cache.end()) it = cache.emplace(&f, Data{normal_data(f, 1), normal_data(f, 2)}).first;
  return it->second;
}

void set_rate(benchmark::State& state) {
  const auto terms = static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(kRows * kK);
  state.SetItemsProcessed(terms);
  // Seconds per term (CPU time), printed with an SI prefix ("1.1ns").
  state.counters["per_term"] =
      benchmark::Counter(static_cast<double>(terms), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

/// Exact dot product of each row, rounded once into fp32, plus Σ|terms| and max|term|
/// (what the MPFR oracle returns too).
void accumulator_dot(benchmark::State& state, const FormatSpec* f) {
  const Data& d = data(*f);
  for (auto _ : state) {
    for (std::size_t r = 0; r < kRows; ++r) {
      LongAccumulator acc;
      acc.add_dot(*f, std::span(d.a).subspan(r * kK, kK), *f, std::span(d.b).subspan(r * kK, kK));
      benchmark::DoNotOptimize(acc.round(fp32));
      benchmark::DoNotOptimize(acc.abs_sum_upper());
      benchmark::DoNotOptimize(acc.max_abs());
    }
  }
  set_rate(state);
}

void accumulator_sum(benchmark::State& state, const FormatSpec* f) {
  const Data& d = data(*f);
  for (auto _ : state) {
    for (std::size_t r = 0; r < kRows; ++r) {
      LongAccumulator acc;
      acc.add_sum(*f, std::span(d.a).subspan(r * kK, kK));
      benchmark::DoNotOptimize(acc.round(fp32));
    }
  }
  set_rate(state);
}

void mpfr_dot(benchmark::State& state, const FormatSpec* f) {
  const Data& d = data(*f);
  for (auto _ : state) {
    for (std::size_t r = 0; r < kRows; ++r) {
      const OracleValue v =
          oracle_dot(*f, std::span(d.a).subspan(r * kK, kK), *f, std::span(d.b).subspan(r * kK, kK), fp32);
      benchmark::DoNotOptimize(v.result);
    }
  }
  set_rate(state);
}

/// Console output plus, at the end, MPFR's min ns/term over the accumulator's for each format.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name != "min") continue;
      const auto it = r.counters.find("per_term");
      if (it == r.counters.end()) continue;
      const std::string name = r.run_name.function_name;
      const double ns = it->second.value * 1e9;
      double& best = min_[name];
      best = best == 0 ? ns : std::min(best, ns);
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    for (const char* f : {"bf16", "fp16", "fp32", "fp8_e4m3"}) {
      const double acc = min_["accumulator_dot/" + std::string(f)];
      const double mp = min_["mpfr_dot/" + std::string(f)];
      if (acc > 0 && mp > 0)
        std::printf("%s dot, K=%zu: accumulator %.3f ns/term (%.0f Mterms/s), MPFR %.1f ns/term (%.1f Mterms/s), "
                    "ratio %.1fx (min over repetitions)\n",
                    f, kK, acc, 1e3 / acc, mp, 1e3 / mp, mp / acc);
    }
  }

 private:
  std::map<std::string, double> min_;
};

}  // namespace
}  // namespace numfid

int main(int argc, char** argv) {
  using numfid::FormatSpec;
  auto min = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
  for (const FormatSpec* f : {&numfid::bf16, &numfid::fp16, &numfid::fp32, &numfid::fp8_e4m3}) {
    const std::string n(f->name);
    benchmark::RegisterBenchmark(("accumulator_dot/" + n).c_str(), numfid::accumulator_dot, f)
        ->ComputeStatistics("min", min);
    benchmark::RegisterBenchmark(("mpfr_dot/" + n).c_str(), numfid::mpfr_dot, f)->ComputeStatistics("min", min);
  }
  benchmark::RegisterBenchmark("accumulator_sum/bf16", numfid::accumulator_sum, &numfid::bf16)
      ->ComputeStatistics("min", min);
  benchmark::RegisterBenchmark("accumulator_sum/fp32", numfid::accumulator_sum, &numfid::fp32)
      ->ComputeStatistics("min", min);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  numfid::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
