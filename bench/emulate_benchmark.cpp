// Emulated bf16 GEMM with fp32 accumulation (emulate_matmul's fast path, end to end and the
// fp32 kernel alone) next to OpenBLAS cblas_sgemm on the same shape, single thread.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "formats/bulk.h"
#include "numerics/emulate.h"
#include "numerics/scaled_gemm.h"
#include "formats/convert.h"


namespace {

using numfid::BulkPath;
using numfid::Bits;

constexpr std::int64_t kSize = 512;  // M = N = K

/// bf16 operands (N(0,1) samples rounded to bf16) and the same values as floats for sgemm.
struct Operands {
  std::vector<Bits> a, b;
  std::vector<float> af, bf;
};

const Operands& operands() {
  static const Operands ops = [] {
    std::mt19937_64 gen(2024);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    Operands o;
    const auto n = static_cast<std::size_t>(kSize * kSize);
    for (auto* pair : {&o.af, &o.bf}) {
      std::vector<float> x(n);
      for (auto& v : x) v = normal(gen);
      std::vector<std::uint16_t> h(n);
      numfid::convert_from_fp32(numfid::bf16, x, h);
      numfid::convert_to_fp32(numfid::bf16, h, x);  // exact: the bf16 values as floats
      *pair = x;
      auto& bits = pair == &o.af ? o.a : o.b;
      for (std::uint16_t v : h) bits.push_back(Bits{v});
    }
    return o;
  }();
  return ops;
}

/// The plans of the targets: index 0 sequential, 1 blocked(128).
numfid::ReductionModel model(std::int64_t plan) {
  numfid::ReductionModel m;
  m.plan = *numfid::ReductionPlan::parse(plan == 0 ? "sequential" : "blocked(128)");
  return m;
}

void set_flops(benchmark::State& state) {
  state.counters["GFLOPS"] = benchmark::Counter(2.0 * kSize * kSize * kSize * static_cast<double>(state.iterations()),
                                                benchmark::Counter::kIsRate);
  state.counters["GFLOPS"].value /= 1e9;
}

void sgemm(const Operands& o, std::vector<float>& c) {
  const int n = static_cast<int>(kSize);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, o.af.data(), n, o.bf.data(), n, 0.0f,
              c.data(), n);
}

void BM_Sgemm(benchmark::State& state) {
  const Operands& o = operands();
  std::vector<float> c(static_cast<std::size_t>(kSize * kSize));
  for (auto _ : state) {
    sgemm(o, c);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_flops(state);
}
BENCHMARK(BM_Sgemm)->Unit(benchmark::kMillisecond);

/// emulate_matmul end to end: bf16 patterns in, fp32 (arg 1 = 0) or bf16 (1) patterns out,
/// conversions included; arg 2: the kernel path (automatic, or AVX2 as on a CPU without
/// AVX-512).
void BM_EmulateMatmul(benchmark::State& state) {
  const auto path = static_cast<BulkPath>(state.range(2));
  if (!numfid::detail::matmul_path_available(path)) {
    state.SkipWithError("path not available on this CPU");
    return;
  }
  const Operands& o = operands();
  numfid::ReductionModel m = model(state.range(0));
  m.output = state.range(1) == 0 ? &numfid::fp32 : &numfid::bf16;
  state.SetLabel(m.plan.text() + " -> " + std::string(m.output->name) + " " +
                 std::string(numfid::bulk_path_name(path)));
  for (auto _ : state) {
    auto d = numfid::detail::emulate_matmul_on(path, {&numfid::bf16, o.a, kSize, kSize},
                                               {&numfid::bf16, o.b, kSize, kSize}, std::nullopt, m);
    benchmark::DoNotOptimize(d.data());
  }
  set_flops(state);
}
BENCHMARK(BM_EmulateMatmul)
    ->ArgsProduct({{0, 1},
                   {0, 1},
                   {static_cast<std::int64_t>(BulkPath::automatic), static_cast<std::int64_t>(BulkPath::avx2)}})
    ->Unit(benchmark::kMillisecond);

/// The fp32 kernel alone (B packing included) on floats, per dispatch path.
void BM_EmulateKernel(benchmark::State& state) {
  const auto path = static_cast<BulkPath>(state.range(1));
  if (!numfid::detail::matmul_path_available(path)) {
    state.SkipWithError("path not available on this CPU");
    return;
  }
  const Operands& o = operands();
  const std::int64_t tile = state.range(0) == 0 ? 0 : 128;
  state.SetLabel(std::string(state.range(0) == 0 ? "sequential" : "blocked(128)") + " " +
                 std::string(numfid::bulk_path_name(path)));
  std::vector<float> d(static_cast<std::size_t>(kSize * kSize));
  for (auto _ : state) {
    numfid::detail::matmul_fp32(o.af.data(), o.bf.data(), d.data(), kSize, kSize, kSize, tile, false, path);
    benchmark::DoNotOptimize(d.data());
    benchmark::ClobberMemory();
  }
  set_flops(state);
}
BENCHMARK(BM_EmulateKernel)
    ->ArgsProduct({{0, 1},
                   {static_cast<std::int64_t>(BulkPath::avx512), static_cast<std::int64_t>(BulkPath::avx2)}})
    ->Unit(benchmark::kMillisecond);

/// sgemm and emulate_matmul (fp32 out) back to back in every iteration, so that both see the
/// same machine load: reports the min and median of each and the ratios of those.
void BM_RatioToSgemm(benchmark::State& state) {
  const Operands& o = operands();
  const numfid::ReductionModel m = model(state.range(0));
  state.SetLabel(m.plan.text());
  std::vector<float> c(static_cast<std::size_t>(kSize * kSize));
  std::vector<double> ts, te;
  using clock = std::chrono::steady_clock;
  for (auto _ : state) {
    const auto t0 = clock::now();
    sgemm(o, c);
    benchmark::DoNotOptimize(c.data());
    const auto t1 = clock::now();
    auto d = numfid::emulate_matmul({&numfid::bf16, o.a, kSize, kSize}, {&numfid::bf16, o.b, kSize, kSize},
                                    std::nullopt, m);
    benchmark::DoNotOptimize(d.data());
    const auto t2 = clock::now();
    ts.push_back(std::chrono::duration<double>(t1 - t0).count());
    te.push_back(std::chrono::duration<double>(t2 - t1).count());
    state.SetIterationTime(te.back());
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double s_min = *std::min_element(ts.begin(), ts.end()), e_min = *std::min_element(te.begin(), te.end());
  const double s_med = median(ts), e_med = median(te);
  state.counters["sgemm_min_ms"] = s_min * 1e3;
  state.counters["sgemm_med_ms"] = s_med * 1e3;
  state.counters["emu_min_ms"] = e_min * 1e3;
  state.counters["emu_med_ms"] = e_med * 1e3;
  state.counters["ratio_min"] = e_min / s_min;
  state.counters["ratio_med"] = e_med / s_med;
}
BENCHMARK(BM_RatioToSgemm)->Arg(0)->Arg(1)->UseManualTime()->MinTime(2.0)->Unit(benchmark::kMillisecond);

/// A block-scaled fp8 GEMM emulated (scaled_gemm_emulate: E4M3 operands, DeepSeek-V3's 1x128
/// scales on A and 128x128 on B, fp32 partials of 128 promoted by fma into fp32, fp32 out) on
/// the 512³ shape, arg 0: the hardware path (vectorised partials, fmaf promotions), 1: every
/// element in soft float (what it was before 2026-12-03). Counter sgemm_ms: cblas_sgemm on the
/// same shape in the same iteration (the bf16 operands' floats).
void BM_EmulateScaledFp8(benchmark::State& state) {
  const bool soft = state.range(0) == 1;
  const Operands& o = operands();
  std::vector<Bits> a, b;
  for (const float x : o.af) a.push_back(numfid::convert(numfid::fp32, numfid::fp8_e4m3, Bits{std::bit_cast<std::uint32_t>(x * 16)}).bits);
  for (const float x : o.bf) b.push_back(numfid::convert(numfid::fp32, numfid::fp8_e4m3, Bits{std::bit_cast<std::uint32_t>(x * 16)}).bits);
  std::mt19937_64 gen(5);
  std::uniform_real_distribution<double> u(0.001, 0.01);
  std::vector<double> sa(static_cast<std::size_t>(kSize * (kSize / 128))), sb(static_cast<std::size_t>((kSize / 128) * (kSize / 128)));
  for (double& x : sa) x = static_cast<float>(u(gen));
  for (double& x : sb) x = static_cast<float>(u(gen));
  numfid::ScaledGemmModel m;
  m.chunk = 128;
  state.SetLabel(soft ? "soft float" : "hardware fma");
  numfid::detail::set_scaled_emulation_soft_float(soft);
  std::vector<float> c(static_cast<std::size_t>(kSize * kSize));
  double sgemm_s = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    sgemm(o, c);
    benchmark::DoNotOptimize(c.data());
    sgemm_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto t1 = std::chrono::steady_clock::now();
    auto d = numfid::scaled_gemm_emulate(numfid::fp8_e4m3, a, {sa, {1, 128}}, numfid::fp8_e4m3, b, {sb, {128, 128}},
                                         kSize, kSize, kSize, m);
    benchmark::DoNotOptimize(d.data());
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
  }
  numfid::detail::set_scaled_emulation_soft_float(false);
  state.counters["sgemm_ms"] = 1e3 * sgemm_s / static_cast<double>(state.iterations());
  set_flops(state);
}
BENCHMARK(BM_EmulateScaledFp8)->Arg(0)->Arg(1)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  // Single thread for the anchor (also settable with OPENBLAS_NUM_THREADS=1).
  openblas_set_num_threads(1);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("openblas", openblas_get_config());
  benchmark::AddCustomContext("openblas_core", openblas_get_corename());
  benchmark::AddCustomContext("openblas_threads", std::to_string(openblas_get_num_threads()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
