// `numfid check matmul` at model scale: numfid::check_matmul (exact oracle, bound, judgement;
// no file I/O) on bf16 operands with an fp32 output, next to OpenBLAS cblas_dgemm on the same
// shape and the same thread count, both timed (wall clock) in the same iteration so that they
// see the same machine load. Shapes (M×K×N): 1024×4096×1024 and 4096×4096×4096; fp32 operands
// (`Fp32VsDgemm`) on 2048×1024×2048 and 1024×4096×1024.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <chrono>
#include <ctime>
#include <cstdint>
#include <map>
#include <random>
#include <thread>
#include <tuple>
#include <vector>

#include "formats/convert.h"
#include "numerics/int_gemm.h"
#include "tolerances/quant_check.h"
#include "tolerances/calibrate.h"
#include "tolerances/check.h"
#include "tolerances/parallel_detail.h"
#include "tolerances/reference_fast_detail.h"

namespace {

using numfid::Bits;

/// A (M×K) and B (K×N) as bf16 (or fp32) N(0,1) samples (also as doubles, for dgemm), and C:
/// their product by OpenBLAS sgemm on the same values, a legal output of the claim "fp32
/// accumulation in any order, fp32 out" (the verdict's work is that of a passing check).
struct Problem {
  std::int64_t m = 0, k = 0, n = 0;
  numfid::TensorData a, b, c;
  std::vector<double> ad, bd;
  numfid::ClaimSpec claim;
};

const Problem& problem(std::int64_t m, std::int64_t k, std::int64_t n, bool fp32_operands = false) {
  static std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, bool>, Problem> cache;
  auto [it, fresh] = cache.try_emplace({m, k, n, fp32_operands});
  Problem& p = it->second;
  if (!fresh) return p;
  cache.erase(cache.begin(), it);  // one problem in memory at a time (4096³ takes several GiB to check)
  cache.erase(std::next(it), cache.end());
  p.m = m, p.k = k, p.n = n;
  p.claim = numfid::parse_claim(fp32_operands ? "--in fp32 --acc fp32 --out fp32" : "--in bf16 --acc fp32 --out fp32");
  std::mt19937_64 g(7);
  std::normal_distribution<float> nd(0, 1);
  auto fill = [&](numfid::TensorData& t, std::vector<double>& d, std::vector<float>& f, std::int64_t rows,
                  std::int64_t cols, const char* name) {
    t = {fp32_operands ? &numfid::fp32 : &numfid::bf16, {rows, cols}, {}, name};
    const auto count = static_cast<std::size_t>(rows * cols);
    t.values.resize(count);
    d.resize(count);
    f.resize(count);
    for (std::size_t i = 0; i < count; ++i) {
      const float x = nd(g);
      if (fp32_operands) {
        t.values[i] = Bits{std::bit_cast<std::uint32_t>(x)};
        f[i] = x;
      } else {
        t.values[i] = numfid::convert(numfid::fp32, numfid::bf16, Bits{std::bit_cast<std::uint32_t>(x)}).bits;
        f[i] = std::bit_cast<float>(t.values[i].raw << 16);
      }
      d[i] = f[i];
    }
  };
  std::vector<float> af, bf, cf(static_cast<std::size_t>(m * n));
  fill(p.a, p.ad, af, m, k, "A");
  fill(p.b, p.bd, bf, k, n, "B");
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
              1.0f, af.data(), static_cast<int>(k), bf.data(), static_cast<int>(n), 0.0f, cf.data(), static_cast<int>(n));
  p.c = {&numfid::fp32, {m, n}, {}, "C"};
  p.c.values.reserve(cf.size());
  for (const float x : cf) p.c.values.push_back(Bits{std::bit_cast<std::uint32_t>(x)});
  return p;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Waits until OpenBLAS's worker threads sleep again: after each call they spin (sched_yield)
/// for about 2^28 cycles (OpenBLAS's THREAD_TIMEOUT) before they wait, and on a 2-core machine a
/// check timed right after the anchor dgemm ran its first ~0.1 s beside a spinning worker (the
/// whole check at 1024×4096×1024 measured 13 % slower than with OPENBLAS_THREAD_TIMEOUT=4,
/// 2026-12-05). Called before each timed part that follows a GEMM; not timed.
void let_blas_workers_sleep() { std::this_thread::sleep_for(std::chrono::milliseconds(300)); }

/// CPU time of the whole process (every thread, OpenBLAS's included), in seconds: on a shared
/// machine a steadier measure of the work than the wall clock.
double process_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

/// dgemm on the same shape, then the check, in every iteration; the iteration time is the
/// check's. Counters: both wall times (means over the iterations), their ratio, the ratio of
/// the process CPU times spent in each (every thread), the threads each
/// used, and the share of elements the certified fp64 GEMM gave (the rest: long accumulator).
/// Arg 3 = 1 forces the long accumulator for every element (the path without the GEMM).
/// `bf16_out`: C (the sgemm result) rounded to bf16, claim --out bf16 (every element an
/// observation of the bias rule, docs/verdict.md §4.2).
void vs_dgemm(benchmark::State& state, bool fp32_operands, bool bf16_out = false) {
  const Problem& p = problem(state.range(0), state.range(1), state.range(2), fp32_operands);
  numfid::ClaimSpec claim = p.claim;
  numfid::TensorData out = p.c;
  if (bf16_out) {
    claim = numfid::parse_claim(fp32_operands ? "--in fp32 --acc fp32 --out bf16" : "--in bf16 --acc fp32 --out bf16");
    out.format = &numfid::bf16;
    for (Bits& x : out.values) x = numfid::convert(numfid::fp32, numfid::bf16, x).bits;
  }
  const bool exact_only = state.range(3) != 0;
  const int threads = numfid::detail::check_threads();
  openblas_set_num_threads(threads);  // the same thread count for dgemm and for the check
  numfid::detail::set_reference_path(exact_only ? numfid::detail::ReferencePath::exact
                                                : numfid::detail::ReferencePath::automatic);
  numfid::MatmulCheckOptions opt;
  opt.predict = false;  // the claim names no model
  std::vector<double> c(static_cast<std::size_t>(p.m * p.n));
  double check_s = 0, dgemm_s = 0, check_cpu = 0, dgemm_cpu = 0;
  for (auto _ : state) {
    double c0 = process_cpu_s();
    auto t0 = std::chrono::steady_clock::now();
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(p.m), static_cast<int>(p.n),
                static_cast<int>(p.k), 1.0, p.ad.data(), static_cast<int>(p.k), p.bd.data(), static_cast<int>(p.n), 0.0,
                c.data(), static_cast<int>(p.n));
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
    dgemm_s += seconds_since(t0);
    dgemm_cpu += process_cpu_s() - c0;
    let_blas_workers_sleep();
    c0 = process_cpu_s();
    t0 = std::chrono::steady_clock::now();
    const numfid::CheckResult r = numfid::check_matmul(p.a, p.b, out, claim, opt);
    const double s = seconds_since(t0);
    check_cpu += process_cpu_s() - c0;
    check_s += s;
    state.SetIterationTime(s);
    if (r.verdict.kind == numfid::TensorKind::defect) state.SkipWithError("a legal output was judged a defect");
    benchmark::DoNotOptimize(r);
  }
  numfid::detail::set_reference_path(numfid::detail::ReferencePath::automatic);
  const numfid::detail::ReferenceStats st = numfid::detail::last_reference_stats();
  state.counters["check_s"] = check_s / static_cast<double>(state.iterations());
  state.counters["dgemm_s"] = dgemm_s / static_cast<double>(state.iterations());
  state.counters["ratio"] = check_s / dgemm_s;
  state.counters["cpu_ratio"] = check_cpu / dgemm_cpu;  // process CPU time, every thread
  state.counters["threads"] = threads;
  state.counters["blas_threads"] = openblas_get_num_threads();
  state.counters["certified_pct"] = 100.0 * static_cast<double>(st.certified) / static_cast<double>(p.m * p.n);
  state.SetLabel(exact_only ? "long accumulator only" : "certified fp64 GEMM + long accumulator");
}

void BM_CheckMatmulVsDgemm(benchmark::State& state) { vs_dgemm(state, false); }
BENCHMARK(BM_CheckMatmulVsDgemm)
    ->Args({1024, 4096, 1024, 0})
    ->Args({1024, 4096, 1024, 1})
    ->Args({4096, 4096, 4096, 0})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

/// The same with C rounded to bf16 (claim --out bf16): the judgement's bias rule then reads
/// every element (BM_CheckMatmulJudgeOnly's fourth argument measures that part alone).
void BM_CheckMatmulBf16OutVsDgemm(benchmark::State& state) { vs_dgemm(state, false, true); }
BENCHMARK(BM_CheckMatmulBf16OutVsDgemm)
    ->Args({1024, 4096, 1024, 0})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

/// The same with fp32 operands (24-bit significands: the GEMMs run on 12-bit heads and tails,
/// four pairs of them).
void BM_CheckMatmulFp32VsDgemm(benchmark::State& state) { vs_dgemm(state, true); }
BENCHMARK(BM_CheckMatmulFp32VsDgemm)
    ->Args({2048, 1024, 2048, 0})
    ->Args({2048, 1024, 2048, 1})
    ->Args({1024, 4096, 1024, 0})
    ->Args({1024, 4096, 1024, 1})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

/// In every iteration a dgemm of the shape (M×K · K×N, operands of ones), then `check()` (true:
/// its premise held, else the run fails with `failure`); the iteration time is the check's.
/// Counters: both wall times (means), their ratio, the thread count.
template <class Check>
void check_vs_dgemm(benchmark::State& state, std::int64_t m, std::int64_t k, std::int64_t n, Check check,
                    const char* failure) {
  const int threads = numfid::detail::check_threads();
  openblas_set_num_threads(threads);
  std::vector<double> ad(static_cast<std::size_t>(m * k), 1.0), bd(static_cast<std::size_t>(k * n), 1.0),
      cd(static_cast<std::size_t>(m * n));
  double check_s = 0, dgemm_s = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
                1.0, ad.data(), static_cast<int>(k), bd.data(), static_cast<int>(n), 0.0, cd.data(), static_cast<int>(n));
    benchmark::DoNotOptimize(cd.data());
    dgemm_s += seconds_since(t0);
    let_blas_workers_sleep();
    t0 = std::chrono::steady_clock::now();
    const bool ok = check();
    const double s = seconds_since(t0);
    check_s += s;
    state.SetIterationTime(s);
    if (!ok) state.SkipWithError(failure);
  }
  state.counters["check_s"] = check_s / static_cast<double>(state.iterations());
  state.counters["dgemm_s"] = dgemm_s / static_cast<double>(state.iterations());
  state.counters["ratio"] = check_s / dgemm_s;
  state.counters["threads"] = threads;
}

/// An int8 GEMM check (`--in int8 --acc int32 --out int32`, the exact int32 result as C) next
/// to a dgemm of the shape; counter `int64_loop_s`: numerics' int64 triple loop (int_gemm_exact,
/// what the check used before its exact sums came from an fp64 GEMM) on the same operands.
void BM_CheckInt8VsDgemm(benchmark::State& state) {
  const std::int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  static std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, std::tuple<numfid::TensorData, numfid::TensorData, numfid::TensorData>> cache;
  auto [it, fresh] = cache.try_emplace({m, k, n});
  auto& [a, b, c] = it->second;
  if (fresh) {
    std::mt19937_64 g(3);
    a = {&numfid::int8, {m, k}, {}, "A"};
    b = {&numfid::int8, {k, n}, {}, "B"};
    for (std::int64_t i = 0; i < m * k; ++i) a.values.push_back(Bits{static_cast<std::uint32_t>(g() & 0xff)});
    for (std::int64_t i = 0; i < k * n; ++i) b.values.push_back(Bits{static_cast<std::uint32_t>(g() & 0xff)});
    const auto sums = numfid::detail::int_gemm_sums({&numfid::int8, 0}, a.values, {&numfid::int8, 0}, b.values, {m, k, n, false});
    c = {&numfid::int32, {m, n}, {}, "C"};
    for (const std::int64_t v : sums) c.values.push_back(numfid::integer_bits(numfid::int32, v));
  }
  const numfid::ClaimSpec claim = numfid::parse_claim("--in int8 --acc int32 --out int32");
  check_vs_dgemm(state, m, k, n, [&] {
    return numfid::check_matmul(a, b, c, claim).verdict.kind == numfid::TensorKind::consistent;
  }, "the exact result was not judged consistent");
  auto t0 = std::chrono::steady_clock::now();
  const auto loop = numfid::int_gemm_exact({&numfid::int8, 0}, a.values, {&numfid::int8, 0}, b.values, {m, k, n, false});
  benchmark::DoNotOptimize(loop.data());
  state.counters["int64_loop_s"] = seconds_since(t0);
}
BENCHMARK(BM_CheckInt8VsDgemm)->Args({1024, 4096, 1024})->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);

/// A block-scaled fp8 GEMM check (E4M3 operands; C the claim's emulation), next to a dgemm of
/// the shape. Arg 3 = 0: DeepSeek-V3's recipe, fp32 scales (not powers of two) in 1x128 blocks
/// on A and 128x128 on B, partials of 128 promoted to fp32 (`--scale-block 1x128,128x128
/// --promote-every 128`): the exact reference sums each segment in fixed point. 1: MX, E8M0
/// scales in 1x32 blocks along K of both (`--scale-block 1x32 --scale-format e8m0`), each
/// block's scale the power of two that puts its largest |x| at E4M3's top binade (OCP MX
/// v1.0 §6.3's shared exponent): the scales fold into the operands and the certified fp64
/// GEMM gives the reference. Rows on every core: NUMFID_THREADS=1 for one thread.
void BM_CheckScaledFp8VsDgemm(benchmark::State& state) {
  const std::int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const bool mx = state.range(3) == 1;
  std::mt19937_64 g(5);
  std::normal_distribution<float> nd(0, 1);
  numfid::TensorData a{&numfid::fp8_e4m3, {m, k}, {}, "A"}, b{&numfid::fp8_e4m3, {k, n}, {}, "B"};
  const std::int64_t kb = mx ? 32 : 128;
  // Data x ~ N(0, 1) (times 16 for the fp32-scale recipe, whose scales are drawn apart from it);
  // MX: per block of 32 along K, scale 2^(ilogb(amax) - 8) (E4M3's top binade is 2^8), x / scale
  // rounded to E4M3, saturating (the block's largest may exceed 448: OCP MX clamps it).
  numfid::RoundOptions sat;
  sat.overflow = numfid::Overflow::saturate;
  const auto fp8 = [&sat](float v) {
    return numfid::convert(numfid::fp32, numfid::fp8_e4m3, Bits{std::bit_cast<std::uint32_t>(v)}, sat).bits;
  };
  std::vector<double> sa, sb;
  if (mx) {
    std::vector<float> xa(static_cast<std::size_t>(m * k)), xb(static_cast<std::size_t>(k * n));
    for (float& x : xa) x = nd(g);
    for (float& x : xb) x = nd(g);
    a.values.resize(xa.size());
    b.values.resize(xb.size());
    sa.resize(static_cast<std::size_t>(m * (k / kb)));
    sb.resize(static_cast<std::size_t>((k / kb) * n));
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t c = 0; c < k / kb; ++c) {
        float amax = 0;
        for (std::int64_t t = 0; t < kb; ++t) amax = std::max(amax, std::fabs(xa[static_cast<std::size_t>(i * k + c * kb + t)]));
        const double sc = std::ldexp(1.0, std::ilogb(amax) - 8);
        sa[static_cast<std::size_t>(i * (k / kb) + c)] = sc;
        for (std::int64_t t = 0; t < kb; ++t) {
          const auto e = static_cast<std::size_t>(i * k + c * kb + t);
          a.values[e] = fp8(static_cast<float>(xa[e] / sc));
        }
      }
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t c = 0; c < k / kb; ++c) {
        float amax = 0;
        for (std::int64_t t = 0; t < kb; ++t) amax = std::max(amax, std::fabs(xb[static_cast<std::size_t>((c * kb + t) * n + j)]));
        const double sc = std::ldexp(1.0, std::ilogb(amax) - 8);
        sb[static_cast<std::size_t>(c * n + j)] = sc;
        for (std::int64_t t = 0; t < kb; ++t) {
          const auto e = static_cast<std::size_t>((c * kb + t) * n + j);
          b.values[e] = fp8(static_cast<float>(xb[e] / sc));
        }
      }
  } else {
    for (std::int64_t i = 0; i < m * k; ++i) a.values.push_back(fp8(nd(g) * 16));
    for (std::int64_t i = 0; i < k * n; ++i) b.values.push_back(fp8(nd(g) * 16));
    sa.resize(static_cast<std::size_t>(m * ((k + 127) / 128)));
    sb.resize(static_cast<std::size_t>(((k + 127) / 128) * ((n + 127) / 128)));
    std::uniform_real_distribution<double> u(0.001, 0.01);
    for (double& x : sa) x = static_cast<double>(static_cast<float>(u(g)));
    for (double& x : sb) x = static_cast<double>(static_cast<float>(u(g)));
  }
  numfid::ClaimSpec claim = numfid::parse_claim(
      mx ? "--in fp8_e4m3 --out fp32 --scale-a sa.npy --scale-b sb.npy --scale-block 1x32 --scale-format e8m0"
         : "--in fp8_e4m3 --out fp32 --scale-a sa.npy --scale-b sb.npy --scale-block 1x128,128x128 --promote-every 128");
  numfid::attach_operand_scales(claim, sa, sb);
  state.SetLabel(mx ? "MX: E8M0 1x32" : "DeepSeek: fp32 1x128,128x128");
  const numfid::TensorData c = numfid::emulate_matmul(a, b, std::nullopt, claim);
  check_vs_dgemm(state, m, k, n, [&] {
    return numfid::check_matmul(a, b, c, claim).verdict.kind != numfid::TensorKind::defect;
  }, "the emulated output was judged a defect");
}
BENCHMARK(BM_CheckScaledFp8VsDgemm)
    ->Args({256, 2048, 256, 0})
    ->Args({256, 2048, 256, 1})
    ->Args({1024, 4096, 1024, 0})
    ->Args({1024, 4096, 1024, 1})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

/// The parts of one check, each timed (wall clock) in the same iteration as a dgemm on the
/// shape: the exact results (matmul_reference), the calibration of the probable-defect rule
/// (calibrate_matmul), and the judgement given both (check_matmul on the reference). Counters
/// are each part's time over the dgemm's, wall clock (`*_x`) and process CPU time (`*_cpu_x`,
/// every thread: with NUMFID_THREADS=1 the work each part does, whatever the machine's load).
void BM_CheckMatmulParts(benchmark::State& state) {
  const Problem& p = problem(state.range(0), state.range(1), state.range(2));
  const int threads = numfid::detail::check_threads();
  openblas_set_num_threads(threads);
  numfid::MatmulCheckOptions opt;
  opt.predict = false;
  std::vector<double> c(static_cast<std::size_t>(p.m * p.n));
  double dgemm_s = 0, ref_s = 0, cal_s = 0, judge_s = 0;
  double dgemm_cpu = 0, ref_cpu = 0, cal_cpu = 0, judge_cpu = 0;
  for (auto _ : state) {
    double c0 = process_cpu_s();
    auto t0 = std::chrono::steady_clock::now();
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(p.m), static_cast<int>(p.n),
                static_cast<int>(p.k), 1.0, p.ad.data(), static_cast<int>(p.k), p.bd.data(), static_cast<int>(p.n), 0.0,
                c.data(), static_cast<int>(p.n));
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
    dgemm_s += seconds_since(t0);
    dgemm_cpu += process_cpu_s() - c0;
    let_blas_workers_sleep();
    c0 = process_cpu_s();
    t0 = std::chrono::steady_clock::now();
    const numfid::MatmulReference mr = numfid::matmul_reference(p.a, p.b);
    ref_s += seconds_since(t0);
    ref_cpu += process_cpu_s() - c0;
    c0 = process_cpu_s();
    t0 = std::chrono::steady_clock::now();
    const numfid::MatmulCalibration cal = numfid::calibrate_matmul(mr, p.claim);
    cal_s += seconds_since(t0);
    cal_cpu += process_cpu_s() - c0;
    opt.calibration = &cal;
    c0 = process_cpu_s();
    t0 = std::chrono::steady_clock::now();
    const numfid::CheckResult r = numfid::check_matmul(mr, p.c, p.claim, opt);
    const double s = seconds_since(t0);
    judge_s += s;
    judge_cpu += process_cpu_s() - c0;
    state.SetIterationTime(s);
    benchmark::DoNotOptimize(r);
  }
  state.counters["dgemm_s"] = dgemm_s / static_cast<double>(state.iterations());
  state.counters["reference_x"] = ref_s / dgemm_s;
  state.counters["calibrate_x"] = cal_s / dgemm_s;
  state.counters["judge_x"] = judge_s / dgemm_s;
  state.counters["total_x"] = (ref_s + cal_s + judge_s) / dgemm_s;
  state.counters["reference_cpu_x"] = ref_cpu / dgemm_cpu;  // process CPU time, every thread
  state.counters["calibrate_cpu_x"] = cal_cpu / dgemm_cpu;
  state.counters["judge_cpu_x"] = judge_cpu / dgemm_cpu;
  state.counters["total_cpu_x"] = (ref_cpu + cal_cpu + judge_cpu) / dgemm_cpu;
  state.counters["threads"] = threads;
}
BENCHMARK(BM_CheckMatmulParts)
    ->Args({2048, 512, 2048})  // a short K: the per-element judgement dominates
    ->Args({1024, 4096, 1024})
    ->Args({4096, 4096, 4096})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

/// The judgement alone (check_matmul on a MatmulReference and calibration computed once,
/// outside the timed loop): rounding, bounds, classes, probable-defect rules, signatures,
/// error field and worst elements; per element of C. The fourth argument 1: C rounded to bf16
/// (claim --out bf16), where every element is an observation of the bias rule of §4.2 (with an
/// fp32 output at this K the reduction's own error exceeds half an output ulp and few are).
void BM_CheckMatmulJudgeOnly(benchmark::State& state) {
  const Problem& p = problem(state.range(0), state.range(1), state.range(2));
  const bool bf16_out = state.range(3) == 1;
  openblas_set_num_threads(numfid::detail::check_threads());
  const numfid::ClaimSpec claim = bf16_out ? numfid::parse_claim("--in bf16 --acc fp32 --out bf16") : p.claim;
  numfid::TensorData c = p.c;
  if (bf16_out) {
    c.format = &numfid::bf16;
    for (Bits& x : c.values) x = numfid::convert(numfid::fp32, numfid::bf16, x).bits;
  }
  const numfid::MatmulReference mr = numfid::matmul_reference(p.a, p.b);
  const numfid::MatmulCalibration cal = numfid::calibrate_matmul(mr, claim);
  numfid::MatmulCheckOptions opt;
  opt.predict = false;
  opt.calibration = &cal;
  let_blas_workers_sleep();
  for (auto _ : state) {
    const numfid::CheckResult r = numfid::check_matmul(mr, c, claim, opt);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * p.m * p.n);
}
BENCHMARK(BM_CheckMatmulJudgeOnly)->Args({2048, 512, 2048, 0})->Args({2048, 512, 2048, 1})->Unit(benchmark::kMillisecond);

/// The exact oracle alone (matmul_reference: the certified fp64 GEMMs, their decoding and
/// certification, the long accumulator where the certificate fails), repeated, for profiling.
void BM_MatmulReferenceOnly(benchmark::State& state) {
  const Problem& p = problem(state.range(0), state.range(1), state.range(2));
  openblas_set_num_threads(numfid::detail::check_threads());
  for (auto _ : state) {
    const numfid::MatmulReference mr = numfid::matmul_reference(p.a, p.b);
    benchmark::DoNotOptimize(mr);
  }
}
BENCHMARK(BM_MatmulReferenceOnly)->Args({1024, 4096, 1024})->Unit(benchmark::kMillisecond);

/// The calibration alone (calibrate_matmul on a reference computed once): the legal orders
/// emulated on the sampled elements and their radii, repeated, for profiling.
void BM_CalibrateOnly(benchmark::State& state) {
  const Problem& p = problem(state.range(0), state.range(1), state.range(2));
  openblas_set_num_threads(numfid::detail::check_threads());
  const numfid::MatmulReference mr = numfid::matmul_reference(p.a, p.b);
  let_blas_workers_sleep();
  for (auto _ : state) {
    const numfid::MatmulCalibration cal = numfid::calibrate_matmul(mr, p.claim);
    benchmark::DoNotOptimize(cal);
  }
}
BENCHMARK(BM_CalibrateOnly)->Args({1024, 4096, 1024})->Unit(benchmark::kMillisecond);
