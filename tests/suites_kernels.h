// Small CPU kernels for the numfid::gtest tests: a bf16 GEMM and a bf16 softmax written the way
// a kernel project writes them (float arithmetic, bf16 bit patterns out), with the defects the
// suites must catch as options. Independent of numfid's own models.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "tolerances/check.h"

namespace numfid_test_kernels {

/// float -> bf16 bits, round to nearest even (NaN kept quiet).
inline std::uint16_t bf16_rne(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if (std::isnan(f)) return static_cast<std::uint16_t>((u >> 16) | 0x40);
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
/// float -> bf16 bits, truncated (the defective cast).
inline std::uint16_t bf16_rtz(float f) { return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(f) >> 16); }
inline float bf16_value(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

enum class GemmDefect { none, bf16_accumulator, truncating_output, skips_last_tile };

/// C = A·B: A M×K, B K×N bf16 values in floats; fp32 accumulation over K in tiles of `tile`
/// (each tile summed, then added to the running sum, as PSUM does), bf16 RNE output.
inline std::vector<std::uint16_t> gemm(const std::vector<float>& a, const std::vector<float>& b, std::int64_t m,
                                       std::int64_t k, std::int64_t n, std::int64_t tile, GemmDefect d = GemmDefect::none) {
  std::vector<std::uint16_t> c(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      float acc = 0;
      // The off-by-one tile loop (`t + tile < k` for `t < k`) never runs the last tile.
      for (std::int64_t t = 0; d == GemmDefect::skips_last_tile ? t + tile < k : t < k; t += tile) {
        float part = 0;
        for (std::int64_t kk = t; kk < std::min(t + tile, k); ++kk) {
          part += a[static_cast<std::size_t>(i * k + kk)] * b[static_cast<std::size_t>(kk * n + j)];
          if (d == GemmDefect::bf16_accumulator) part = bf16_value(bf16_rne(part));
        }
        acc += part;
        if (d == GemmDefect::bf16_accumulator) acc = bf16_value(bf16_rne(acc));
      }
      c[static_cast<std::size_t>(i * n + j)] = d == GemmDefect::truncating_output ? bf16_rtz(acc) : bf16_rne(acc);
    }
  return c;
}

/// The same through TensorData (the conformance suites' adapter signature).
inline numfid::TensorData gemm_tensor(const numfid::TensorData& a, const numfid::TensorData& b, std::int64_t tile,
                                      GemmDefect d = GemmDefect::none) {
  const std::int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  std::vector<float> af, bf;
  for (const numfid::Bits v : a.values) af.push_back(bf16_value(static_cast<std::uint16_t>(v.raw)));
  for (const numfid::Bits v : b.values) bf.push_back(bf16_value(static_cast<std::uint16_t>(v.raw)));
  const std::vector<std::uint16_t> c = gemm(af, bf, m, k, n, tile, d);
  return numfid::view(std::span<const std::uint16_t>(c), {m, n}, "bf16", "C");
}

/// Row softmax of bf16 values in fp32 arithmetic (max subtracted unless `naive`), bf16 RNE out.
inline numfid::TensorData softmax_tensor(const numfid::TensorData& x, bool naive = false) {
  const std::int64_t cols = x.shape.back(), rows = static_cast<std::int64_t>(x.values.size()) / cols;
  std::vector<std::uint16_t> y(x.values.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    std::vector<float> v(static_cast<std::size_t>(cols));
    float mx = -INFINITY;
    for (std::int64_t j = 0; j < cols; ++j) {
      v[static_cast<std::size_t>(j)] = bf16_value(static_cast<std::uint16_t>(x.values[static_cast<std::size_t>(r * cols + j)].raw));
      mx = std::fmax(mx, v[static_cast<std::size_t>(j)]);
    }
    if (naive) mx = 0;
    float sum = 0;
    for (float& e : v) sum += (e = std::exp(e - mx));
    for (std::int64_t j = 0; j < cols; ++j) y[static_cast<std::size_t>(r * cols + j)] = bf16_rne(v[static_cast<std::size_t>(j)] / sum);
  }
  return numfid::view(std::span<const std::uint16_t>(y), x.shape, "bf16", "Y");
}

/// Row sums of a rows×K bf16 tensor: the GEMM with B a column of ones (same tiles, same defects).
inline numfid::TensorData sum_tensor(const numfid::TensorData& x, std::int64_t tile, GemmDefect d = GemmDefect::none) {
  const std::int64_t rows = x.shape[0], k = x.shape[1];
  std::vector<float> xf, ones(static_cast<std::size_t>(k), 1.0f);
  for (const numfid::Bits v : x.values) xf.push_back(bf16_value(static_cast<std::uint16_t>(v.raw)));
  const std::vector<std::uint16_t> c = gemm(xf, ones, rows, k, 1, tile, d);
  return numfid::view(std::span<const std::uint16_t>(c), {rows}, "bf16", "S");
}

/// Row RMSNorm y = x / sqrt(mean(x²) + eps) of bf16 values, bf16 RNE out: in double (correct
/// for every bf16 input), or with the sum of squares in fp32 (overflows above 2^64).
inline numfid::TensorData rmsnorm_tensor(const numfid::TensorData& x, bool fp32_squares = false, double eps = 1e-5) {
  const std::int64_t cols = x.shape.back(), rows = static_cast<std::int64_t>(x.values.size()) / cols;
  std::vector<std::uint16_t> y(x.values.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    auto at = [&](std::int64_t j) { return static_cast<std::size_t>(r * cols + j); };
    double ss = 0;
    float ss32 = 0;
    for (std::int64_t j = 0; j < cols; ++j) {
      const float v = bf16_value(static_cast<std::uint16_t>(x.values[at(j)].raw));
      ss += static_cast<double>(v) * v;
      ss32 += v * v;
    }
    // A row holding inf or NaN is NaN throughout, as numfid's oracle defines it.
    const double scale = std::isfinite(ss) ? 1 / std::sqrt((fp32_squares ? static_cast<double>(ss32) : ss) /
                                                               static_cast<double>(cols) + eps)
                                           : NAN;
    for (std::int64_t j = 0; j < cols; ++j)
      y[at(j)] = bf16_rne(static_cast<float>(bf16_value(static_cast<std::uint16_t>(x.values[at(j)].raw)) * scale));
  }
  return numfid::view(std::span<const std::uint16_t>(y), x.shape, "bf16", "Y");
}

/// Row LayerNorm (x - mean) / sqrt(var + eps) of bf16 values in double, bf16 RNE out; a row
/// holding inf or NaN is NaN throughout.
inline numfid::TensorData layernorm_tensor(const numfid::TensorData& x, double eps = 1e-5) {
  const std::int64_t cols = x.shape.back(), rows = static_cast<std::int64_t>(x.values.size()) / cols;
  std::vector<std::uint16_t> y(x.values.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    auto v = [&](std::int64_t j) {
      return static_cast<double>(bf16_value(static_cast<std::uint16_t>(x.values[static_cast<std::size_t>(r * cols + j)].raw)));
    };
    double mean = 0, var = 0;
    for (std::int64_t j = 0; j < cols; ++j) mean += v(j);
    mean /= static_cast<double>(cols);
    for (std::int64_t j = 0; j < cols; ++j) var += (v(j) - mean) * (v(j) - mean);
    var /= static_cast<double>(cols);
    const double scale = std::isfinite(var) ? 1 / std::sqrt(var + eps) : NAN;
    for (std::int64_t j = 0; j < cols; ++j)
      y[static_cast<std::size_t>(r * cols + j)] = bf16_rne(static_cast<float>((v(j) - mean) * scale));
  }
  return numfid::view(std::span<const std::uint16_t>(y), x.shape, "bf16", "Y");
}

/// Row log-softmax of bf16 values in double (max subtracted), bf16 RNE out.
inline numfid::TensorData log_softmax_tensor(const numfid::TensorData& x) {
  const std::int64_t cols = x.shape.back(), rows = static_cast<std::int64_t>(x.values.size()) / cols;
  std::vector<std::uint16_t> y(x.values.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    auto v = [&](std::int64_t j) {
      return static_cast<double>(bf16_value(static_cast<std::uint16_t>(x.values[static_cast<std::size_t>(r * cols + j)].raw)));
    };
    double mx = -INFINITY;
    for (std::int64_t j = 0; j < cols; ++j) mx = std::fmax(mx, v(j));
    double sum = 0;
    for (std::int64_t j = 0; j < cols; ++j) sum += std::exp(v(j) - mx);
    for (std::int64_t j = 0; j < cols; ++j)
      y[static_cast<std::size_t>(r * cols + j)] = bf16_rne(static_cast<float>(v(j) - mx - std::log(sum)));
  }
  return numfid::view(std::span<const std::uint16_t>(y), x.shape, "bf16", "Y");
}

/// Elementwise exp of bf16 values through fp32 std::exp, bf16 RNE out.
inline numfid::TensorData exp_tensor(const numfid::TensorData& x) {
  std::vector<std::uint16_t> y;
  for (const numfid::Bits v : x.values) y.push_back(bf16_rne(std::exp(bf16_value(static_cast<std::uint16_t>(v.raw)))));
  return numfid::view(std::span<const std::uint16_t>(y), x.shape, "bf16", "Y");
}

}  // namespace numfid_test_kernels
