// The kernel project's kernels (see kernels.h).
#include "kernels.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>

namespace kp {

bf16_bits to_bf16(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if (std::isnan(f)) return static_cast<bf16_bits>((u >> 16) | 0x40);
  return static_cast<bf16_bits>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float from_bf16(bf16_bits b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

std::vector<bf16_bits> gemm_bf16(const std::vector<float>& a, const std::vector<float>& b, int m, int k, int n,
                                 int tile, GemmVariant v) {
  std::vector<bf16_bits> c(static_cast<std::size_t>(m) * static_cast<std::size_t>(n));
  auto at = [](int row, int col, int cols) { return static_cast<std::size_t>(row) * static_cast<std::size_t>(cols) + static_cast<std::size_t>(col); };
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float acc = 0;
      for (int t = 0; v == GemmVariant::off_by_one_tile ? t + tile < k : t < k; t += tile) {
        float part = 0;
        for (int kk = t; kk < std::min(t + tile, k); ++kk) {
          part += a[at(i, kk, k)] * b[at(kk, j, n)];
          if (v == GemmVariant::bf16_accumulator) part = from_bf16(to_bf16(part));
        }
        acc += part;
        if (v == GemmVariant::bf16_accumulator) acc = from_bf16(to_bf16(acc));
      }
      c[at(i, j, n)] = v == GemmVariant::truncating_cast ? static_cast<bf16_bits>(std::bit_cast<std::uint32_t>(acc) >> 16)
                                                         : to_bf16(acc);
    }
  return c;
}

std::vector<bf16_bits> softmax_bf16(const std::vector<bf16_bits>& x, int rows, int cols, bool subtract_max) {
  std::vector<bf16_bits> y(x.size());
  std::vector<float> e(static_cast<std::size_t>(cols));
  for (int r = 0; r < rows; ++r) {
    const std::size_t row = static_cast<std::size_t>(r) * static_cast<std::size_t>(cols);
    float mx = -INFINITY;
    for (int j = 0; j < cols; ++j) mx = std::fmax(mx, from_bf16(x[row + static_cast<std::size_t>(j)]));
    if (!subtract_max) mx = 0;
    float sum = 0;
    for (int j = 0; j < cols; ++j) {
      e[static_cast<std::size_t>(j)] = std::exp(from_bf16(x[row + static_cast<std::size_t>(j)]) - mx);
      sum += e[static_cast<std::size_t>(j)];
    }
    for (int j = 0; j < cols; ++j) y[row + static_cast<std::size_t>(j)] = to_bf16(e[static_cast<std::size_t>(j)] / sum);
  }
  return y;
}

}  // namespace kp
