// Throughput of the tensor-core block-FMA models (numerics/block_fma.h): products per second
// per core for each preset shape (figures: docs/tensor-cores.md; target >= 50 M products/s).
#include <benchmark/benchmark.h>

#include <bit>
#include <cstdint>
#include <string>
#include <random>
#include <vector>

#include "formats/convert.h"
#include "numerics/block_fma.h"
#include "numerics/tensor_core_presets.h"

namespace numfid {
namespace {

/// K random operands of `f` in [-2, 2] (normal values, like the recorded vectors), as patterns.
std::vector<Bits> random_operands(const FormatSpec& f, std::size_t k, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<Bits> v(k);
  for (Bits& b : v) {
    b = convert(fp32, f, Bits{std::bit_cast<std::uint32_t>(u(rng))}).bits;
  }
  return v;
}

/// One dot product of K = range(0) products per iteration under the preset of (device, in, out).
void BM_BlockFmaDot(benchmark::State& state, const char* device, const FormatSpec* in, const FormatSpec* out) {
  const TensorCorePreset* p = find_tensor_core_preset(device, *in, *out);
  if (!p) {
    state.SkipWithError("no such preset");
    return;
  }
  const auto k = static_cast<std::size_t>(state.range(0));
  const std::vector<Bits> a = random_operands(*in, k, 1);
  const std::vector<Bits> b = random_operands(*in, k, 2);
  const Bits c = convert(fp32, *out, Bits{0x3f800000}).bits;
  for (auto _ : state) {
    const Result r = block_fma_dot(p->model, a, b, c);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(k));
  state.SetLabel(std::string(p->model.name));
}

BENCHMARK_CAPTURE(BM_BlockFmaDot, v100_fp16_fp32, "V100", &fp16, &fp32)->Arg(4096);
BENCHMARK_CAPTURE(BM_BlockFmaDot, a100_fp16_fp32, "A100", &fp16, &fp32)->Arg(4096);
BENCHMARK_CAPTURE(BM_BlockFmaDot, a100_tf32_fp32, "A100", &tf32, &fp32)->Arg(4096);
BENCHMARK_CAPTURE(BM_BlockFmaDot, h100_fp16_fp32, "H100", &fp16, &fp32)->Arg(4096);
BENCHMARK_CAPTURE(BM_BlockFmaDot, h100_fp16_fp16, "H100", &fp16, &fp16)->Arg(4096);
BENCHMARK_CAPTURE(BM_BlockFmaDot, h100_bf16_fp32, "H100", &bf16, &fp32)->Arg(4096);
BENCHMARK_CAPTURE(BM_BlockFmaDot, h100_e4m3_fp32_wgmma, "H100", &fp8_e4m3, &fp32)->Arg(4096);
BENCHMARK_CAPTURE(BM_BlockFmaDot, ada_e4m3_fp32, "Ada", &fp8_e4m3, &fp32)->Arg(4096);
BENCHMARK_CAPTURE(BM_BlockFmaDot, b200_e4m3_fp16_mmasync, "B200", &fp8_e4m3, &fp16)->Arg(4096);
BENCHMARK_CAPTURE(BM_BlockFmaDot, b200_e5m2_fp32_mmasync, "B200", &fp8_e5m2, &fp32)->Arg(4096);

}  // namespace
}  // namespace numfid

BENCHMARK_MAIN();
