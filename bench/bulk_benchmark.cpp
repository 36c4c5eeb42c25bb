// Throughput of bulk conversion (formats/bulk.h) per dispatch path, next to a floor loop that
// moves the same bytes (read 4, write 2 or 1 per element) timed in the same iterations.
#include <benchmark/benchmark.h>

#include <bit>
#include <ctime>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "formats/bulk.h"

namespace {

using numfid::BulkPath;

constexpr std::size_t kElements = std::size_t{1} << 24;  // 16M: 64 MiB of fp32, beyond the caches

/// Inputs: N(0,1) samples times 2^k, k uniform in [-12, 12]: values from deep in the fp8
/// subnormal range to past the E4M3 maximum (448), signs mixed, as in activations/gradients.
const std::vector<std::uint32_t>& inputs() {
  static const std::vector<std::uint32_t> v = [] {
    std::mt19937_64 gen(12345);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_int_distribution<int> scale(-12, 12);
    std::vector<std::uint32_t> out(kElements);
    for (auto& x : out) x = std::bit_cast<std::uint32_t>(std::ldexp(normal(gen), scale(gen)));
    return out;
  }();
  return v;
}

// The floor: no conversion, just the truncating move, compiled for the widest ISA here so
// that it is the fastest loop over these bytes the compiler produces.
template <typename Out>
void floor_loop_portable(const std::uint32_t* __restrict src, Out* __restrict dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<Out>(src[i] >> (32 - 8 * sizeof(Out)));
}
#if defined(__GNUC__) && defined(__x86_64__)
template <typename Out>
__attribute__((target("avx2,avx512f,avx512bw,avx512vl"))) void floor_loop_avx512(const std::uint32_t* __restrict src,
                                                                                Out* __restrict dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<Out>(src[i] >> (32 - 8 * sizeof(Out)));
}
#endif

template <typename Out>
void floor_loop(const std::uint32_t* src, Out* dst, std::size_t n) {
#if defined(__GNUC__) && defined(__x86_64__)
  if (numfid::bulk_path_available(BulkPath::avx512)) return floor_loop_avx512(src, dst, n);
#endif
  floor_loop_portable(src, dst, n);
}

/// CPU time of this thread, in seconds. The paired timings below use it rather than wall
/// time: on a shared machine wall time also counts the slices other processes run in.
double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

/// The floor alone (items_per_second of the move).
template <typename Out>
void BM_floor(benchmark::State& state) {
  const auto& src = inputs();
  std::vector<Out> dst(src.size());
  for (auto _ : state) {
    floor_loop(src.data(), dst.data(), src.size());
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * src.size()));
}

/// fp32 -> `to` on one path. Every iteration first runs the floor over the same bytes, then
/// the conversion; only the conversion's thread CPU time is the iteration time (manual
/// time, so items_per_second is the conversion's), and ratio_to_floor = (floor time) /
/// (conversion time) over the same iterations, so that both see the same load.
template <typename Out>
void BM_narrow(benchmark::State& state, const numfid::FormatSpec* to, numfid::RoundOptions o, BulkPath path) {
  const auto& src = inputs();
  std::vector<Out> dst(src.size());
  double floor_s = 0;
  double conv_s = 0;
  for (auto _ : state) {
    const double t0 = thread_seconds();
    floor_loop(src.data(), dst.data(), src.size());
    benchmark::ClobberMemory();
    const double t1 = thread_seconds();
    floor_s += t1 - t0;
    numfid::convert_from_fp32(*to, std::span<const std::uint32_t>(src), std::span<Out>(dst), o, path);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
    const double s = thread_seconds() - t1;
    conv_s += s;
    state.SetIterationTime(s);
  }
  const auto n = static_cast<double>(state.iterations()) * static_cast<double>(src.size());
  state.SetItemsProcessed(static_cast<std::int64_t>(n));
  state.counters["floor_items_per_second"] = benchmark::Counter(n / floor_s);
  state.counters["ratio_to_floor"] = benchmark::Counter(floor_s / conv_s);
}

/// `from` -> fp32 on one path, next to the widening floor (read 2 or 1, write 4 bytes).
template <typename In>
void BM_widen(benchmark::State& state, const numfid::FormatSpec* from, BulkPath path) {
  std::vector<In> src(kElements);
  const auto& seed = inputs();
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<In>(seed[i] >> (32 - 8 * sizeof(In)));
  std::vector<std::uint32_t> dst(src.size());
  double floor_s = 0;
  double conv_s = 0;
  for (auto _ : state) {
    const double t0 = thread_seconds();
    for (std::size_t i = 0; i < src.size(); ++i) dst[i] = std::uint32_t{src[i]} << (32 - 8 * sizeof(In));
    benchmark::ClobberMemory();
    const double t1 = thread_seconds();
    floor_s += t1 - t0;
    numfid::convert_to_fp32(*from, std::span<const In>(src), std::span<std::uint32_t>(dst), {}, path);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
    const double s = thread_seconds() - t1;
    conv_s += s;
    state.SetIterationTime(s);
  }
  const auto n = static_cast<double>(state.iterations()) * static_cast<double>(src.size());
  state.SetItemsProcessed(static_cast<std::int64_t>(n));
  state.counters["floor_items_per_second"] = benchmark::Counter(n / floor_s);
  state.counters["ratio_to_floor"] = benchmark::Counter(floor_s / conv_s);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RegisterBenchmark("floor/fp32_to_16bit", BM_floor<std::uint16_t>)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("floor/fp32_to_8bit", BM_floor<std::uint8_t>)->Unit(benchmark::kMillisecond);
  numfid::RoundOptions rne;
  numfid::RoundOptions rne_sat;
  rne_sat.overflow = numfid::Overflow::saturate;
  for (BulkPath p : {BulkPath::portable, BulkPath::avx2, BulkPath::avx512}) {
    if (!numfid::bulk_path_available(p)) continue;
    const std::string path(numfid::bulk_path_name(p));
    benchmark::RegisterBenchmark(("fp32_to_bf16_rne/" + path).c_str(), BM_narrow<std::uint16_t>, &numfid::bf16, rne, p)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("fp32_to_fp8_e4m3_rne_saturate/" + path).c_str(), BM_narrow<std::uint8_t>,
                                 &numfid::fp8_e4m3, rne_sat, p)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("fp32_to_fp16_rne/" + path).c_str(), BM_narrow<std::uint16_t>, &numfid::fp16, rne, p)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("bf16_to_fp32/" + path).c_str(), BM_widen<std::uint16_t>, &numfid::bf16, p)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("fp8_e4m3_to_fp32/" + path).c_str(), BM_widen<std::uint8_t>, &numfid::fp8_e4m3, p)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
