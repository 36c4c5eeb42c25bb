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

std::vector<std::int8_t> gemm_int8(const std::vector<std::int8_t>& a, const std::vector<std::int8_t>& b, int m, int k,
                                   int n, int za, int zb, float scale, int zo, Int8Variant v) {
  std::vector<std::int8_t> c(static_cast<std::size_t>(m) * static_cast<std::size_t>(n));
  auto at = [](int row, int col, int cols) { return static_cast<std::size_t>(row) * static_cast<std::size_t>(cols) + static_cast<std::size_t>(col); };
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      std::int32_t acc = 0;
      for (int kk = 0; kk < k; ++kk) {
        acc += (a[at(i, kk, k)] - za) * (b[at(kk, j, n)] - zb);
        if (v == Int8Variant::int16_accumulator) acc = static_cast<std::int16_t>(acc);
      }
      const double x = static_cast<double>(acc) * static_cast<double>(scale);
      const double r = v == Int8Variant::truncating_requant ? std::trunc(x) : std::nearbyint(x);
      c[at(i, j, n)] = static_cast<std::int8_t>(std::clamp(static_cast<long long>(r) + zo, -128LL, 127LL));
    }
  return c;
}

namespace {

/// An fp8 e4m3 pattern's value (OCP 8-bit FP v1.0: bias 7, no infinities, S.1111.111 NaN).
float e4m3(std::uint8_t bits) {
  const int e = (bits >> 3) & 0xf, f = bits & 7;
  if (e == 15 && f == 7) return NAN;
  const float mag = e == 0 ? std::ldexp(static_cast<float>(f), -9) : std::ldexp(static_cast<float>(8 + f), e - 10);
  return (bits & 0x80) ? -mag : mag;
}

}  // namespace

std::vector<bf16_bits> gemm_mxfp8(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b,
                                  const std::vector<std::uint8_t>& scale_a, const std::vector<std::uint8_t>& scale_b,
                                  int m, int k, int n, MxVariant v) {
  constexpr int block = 32;
  const int kb = (k + block - 1) / block, bias = v == MxVariant::e8m0_bias ? 126 : 127;
  auto at = [](int row, int col, int cols) { return static_cast<std::size_t>(row) * static_cast<std::size_t>(cols) + static_cast<std::size_t>(col); };
  std::vector<bf16_bits> c(static_cast<std::size_t>(m) * static_cast<std::size_t>(n));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float acc = 0;
      for (int t = 0; t < kb; ++t) {
        const int ta = v == MxVariant::wrong_block_scale ? (t + 1) % kb : t;
        const float sa = std::ldexp(1.0f, scale_a[at(i, ta, kb)] - bias), sb = std::ldexp(1.0f, scale_b[at(t, j, n)] - bias);
        float part = 0;
        for (int kk = t * block; kk < std::min((t + 1) * block, k); ++kk) part += e4m3(a[at(i, kk, k)]) * e4m3(b[at(kk, j, n)]);
        acc += sa * sb * part;
      }
      c[at(i, j, n)] = to_bf16(acc);
    }
  return c;
}

}  // namespace kp
