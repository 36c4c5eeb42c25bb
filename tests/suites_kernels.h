// Small CPU kernels for the numfid::gtest tests: a bf16 GEMM and a bf16 softmax written the way
// a kernel project writes them (float arithmetic, bf16 bit patterns out), with the defects the
// suites must catch as options. Independent of numfid's own models.
#pragma once

#include <algorithm>
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

// ------------------------------------------------------------------- quantised GEMMs

enum class Int8Defect { none, zero_point_sign, truncating_requant };

/// C = saturate_int8(round((A - za)·(B - zb) · scale) + zo), int8 A (M×K), B (K×N) in int64
/// loops, the product by `scale` (a short binary fraction: exact in double) rounded to nearest
/// even (std::nearbyint), or truncated; the zero points subtracted, or added (the defects).
inline numfid::TensorData int8_gemm_tensor(const numfid::TensorData& a, const numfid::TensorData& b, std::int64_t za,
                                           std::int64_t zb, double scale, std::int64_t zo, Int8Defect d = Int8Defect::none) {
  const std::int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  const auto v = [](const numfid::TensorData& t, std::int64_t i) {
    return static_cast<std::int64_t>(static_cast<std::int8_t>(t.values[static_cast<std::size_t>(i)].raw & 0xffu));
  };
  if (d == Int8Defect::zero_point_sign) za = -za, zb = -zb;
  std::vector<std::uint8_t> c(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      std::int64_t acc = 0;
      for (std::int64_t kk = 0; kk < k; ++kk) acc += (v(a, i * k + kk) - za) * (v(b, kk * n + j) - zb);
      const double x = static_cast<double>(acc) * scale;
      const double r = d == Int8Defect::truncating_requant ? std::trunc(x) : std::nearbyint(x);
      const std::int64_t y = std::clamp(static_cast<std::int64_t>(r) + zo, std::int64_t{-128}, std::int64_t{127});
      c[static_cast<std::size_t>(i * n + j)] = static_cast<std::uint8_t>(static_cast<std::int8_t>(y));
    }
  return numfid::view(std::span<const std::uint8_t>(c), {m, n}, "int8", "C");
}

/// An fp8 e4m3 pattern's value (OCP 8-bit FP v1.0: bias 7, no infinities, S.1111.111 NaN).
inline float e4m3_value(std::uint32_t bits) {
  const int e = static_cast<int>((bits >> 3) & 0xfu), f = static_cast<int>(bits & 7u);
  if (e == 15 && f == 7) return NAN;
  const float mag = e == 0 ? std::ldexp(static_cast<float>(f), -9) : std::ldexp(static_cast<float>(8 + f), e - 10);
  return (bits & 0x80u) ? -mag : mag;
}

enum class ScaledDefect { none, wrong_block_scale, transposed_scale_b, bf16_unpromoted };

/// C = Σ_k sa·sb·A[i,k]·B[k,j], fp8 e4m3 A (M×K), B (K×N); scales per 1×`block` of A's rows and
/// of B's columns (A's ⌈M⌉×⌈K/block⌉, B's ⌈K/block⌉×N, fp32): each block's products summed in
/// fp32, then scaled and added to an fp32 sum (promotion every `block`), bf16 RNE out. Defects:
/// A's scale of the next K block, B's scale tensor indexed transposed, or every scaled product
/// added into one bf16 sum.
inline numfid::TensorData scaled_gemm_tensor(const numfid::TensorData& a, const numfid::TensorData& b,
                                             const numfid::TensorData& sa, const numfid::TensorData& sb,
                                             std::int64_t block, ScaledDefect d = ScaledDefect::none) {
  const std::int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1], kb = (k + block - 1) / block;
  const auto at = [](const numfid::TensorData& t, std::int64_t i) { return t.values[static_cast<std::size_t>(i)].raw; };
  const auto scale = [&](const numfid::TensorData& t, std::int64_t i) { return std::bit_cast<float>(at(t, i)); };
  std::vector<std::uint16_t> c(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      float acc = 0;
      for (std::int64_t t = 0; t < kb; ++t) {
        const float s_a = scale(sa, i * kb + (d == ScaledDefect::wrong_block_scale ? (t + 1) % kb : t));
        const float s_b = scale(sb, d == ScaledDefect::transposed_scale_b ? j * kb + t : t * n + j);
        float part = 0;
        for (std::int64_t kk = t * block; kk < std::min((t + 1) * block, k); ++kk) {
          const float p = e4m3_value(at(a, i * k + kk)) * e4m3_value(at(b, kk * n + j));
          if (d == ScaledDefect::bf16_unpromoted)
            acc = bf16_value(bf16_rne(acc + s_a * s_b * p));
          else
            part += p;
        }
        if (d != ScaledDefect::bf16_unpromoted) acc += s_a * s_b * part;
      }
      c[static_cast<std::size_t>(i * n + j)] = bf16_rne(acc);
    }
  return numfid::view(std::span<const std::uint16_t>(c), {m, n}, "bf16", "C");
}

}  // namespace numfid_test_kernels
