// Writes the example gate's data (examples/gate/README.md) into DIR: bf16 operands and the
// outputs of the kernels the gate judges, all computed by numfid's own models (the library's
// emulate_matmul, the same code as `numfid emulate`) or, for the softmax, by a plain fp32 loop.
// Deterministic: std::mt19937_64 is specified bit for bit by the C++ standard, and values are
// drawn as exact multiples of 2^-53 then rounded to bf16 here.
//
//   make_gate_data DIR            the data of the gate as committed (one case regressed)
//   make_gate_data --before DIR   matmul_regressed.npy as it was before the regression (the
//                                 data its committed baseline was made from)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "io/error.h"
#include "io/tensor.h"
#include "io/tensor_io.h"
#include "tolerances/check.h"

namespace {

using numfid::TensorData;

/// x rounded to bf16 (nearest, ties to even), as a float.
float bf16(float x) {
  std::uint32_t u = 0;
  std::memcpy(&u, &x, 4);
  u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u;
  std::memcpy(&x, &u, 4);
  return x;
}

/// rows × cols bf16 values uniform in [-scale, scale), stored in floats.
std::vector<float> uniform_bf16(std::mt19937_64& rng, std::int64_t n, double scale) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = bf16(static_cast<float>((static_cast<double>(rng() >> 11) * 0x1p-53 * 2 - 1) * scale));
  return v;
}

void write(const std::filesystem::path& p, const TensorData& t, bool as_float32 = false) {
  numfid::write_tensor(p, numfid::make_tensor(*t.format, t.shape, t.values,
                                              as_float32 ? numfid::Container::float32 : numfid::Container::natural));
}

TensorData emulate(const TensorData& a, const TensorData& b, const char* claim) {
  return numfid::emulate_matmul(a, b, std::nullopt, numfid::parse_claim(claim));
}

}  // namespace

int main(int argc, char** argv) {
  const bool before = argc == 3 && std::strcmp(argv[1], "--before") == 0;
  if (argc != 2 && !before) {
    std::fprintf(stderr, "usage: make_gate_data [--before] DIR\n");
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[argc - 1];
    std::filesystem::create_directories(dir);
    std::mt19937_64 rng(11);
    constexpr std::int64_t m = 64, k = 256, n = 48;
    const std::vector<float> a = uniform_bf16(rng, m * k, 2), b = uniform_bf16(rng, k * n, 2);
    const TensorData A = numfid::view(a, {m, k}, "bf16", "A"), B = numfid::view(b, {k, n}, "bf16", "B");
    write(dir / "a.npy", A, true);
    write(dir / "b.npy", B, true);
    // A legal bf16 matmul: sequential fp32 accumulation, bf16 output (a CPU reference loop).
    const TensorData good = emulate(A, B, "--in bf16 --profile cpu-sequential --out bf16");
    write(dir / "matmul_bf16.npy", good);
    // The same product with partial sums held in bf16: legal under a claim that allows a bf16
    // accumulator, but far less accurate than the fp32 accumulation its baseline recorded.
    const TensorData bf16acc = emulate(A, B, "--in bf16 --acc bf16 --plan sequential --out bf16");
    write(dir / "matmul_regressed.npy", before ? good : bf16acc);
    // A defect: one 16×16 tile (rows 16..31, columns 16..31) accumulated in bf16.
    TensorData tile = good;
    for (std::int64_t i = 16; i < 32; ++i)
      for (std::int64_t j = 16; j < 32; ++j) tile.values[static_cast<std::size_t>(i * n + j)] = bf16acc.values[static_cast<std::size_t>(i * n + j)];
    write(dir / "matmul_tile_defect.npy", tile);
    // A Trainium port of an H100 kernel with fp32 output: each platform's own output (Tensor
    // Engine with PSUM accumulation; tensor-core block FMA). They differ in most elements.
    const TensorData trn2 = emulate(A, B, "--in bf16 --out fp32 --profile trn2");
    write(dir / "qk_trn2.npy", trn2);
    write(dir / "qk_trn2_rerun.npy", trn2);  // a second run: the Tensor Engine's order is fixed
    write(dir / "qk_h100.npy", emulate(A, B, "--in bf16 --out fp32 --profile nvidia-h100-tc"));
    // Softmax of 16 rows of 200 bf16 values, computed in fp32: subtract the row max, exp,
    // sequential sum, divide; each step rounded to fp32 (what a plain fp32 kernel does).
    constexpr std::int64_t rows = 16, cols = 200;
    std::vector<float> x = uniform_bf16(rng, rows * cols, 6), y(x.size());
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* xr = &x[static_cast<std::size_t>(r * cols)];
      float* yr = &y[static_cast<std::size_t>(r * cols)];
      float mx = xr[0];
      for (std::int64_t j = 1; j < cols; ++j) mx = std::max(mx, xr[j]);
      float sum = 0;
      for (std::int64_t j = 0; j < cols; ++j) sum += (yr[j] = std::exp(xr[j] - mx));
      for (std::int64_t j = 0; j < cols; ++j) yr[j] /= sum;
    }
    write(dir / "softmax_x.npy", numfid::view(x, {rows, cols}, "bf16", "X"), true);
    write(dir / "softmax_y.npy", numfid::view(y, {rows, cols}, "fp32", "Y"));
  } catch (const numfid::InputError& e) {
    std::fprintf(stderr, "make_gate_data: %s\n", e.what());
    return 2;
  }
  return 0;
}
