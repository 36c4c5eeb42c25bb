// Small CPU kernels for the numfid::gtest tests: a bf16 GEMM and a bf16 softmax written the way
// a kernel project writes them (float arithmetic, bf16 bit patterns out), with the defects the
// suites must catch as options. Independent of numfid's own models.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string_view>
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

enum class Int8Defect {
  none,
  zero_point_sign,      ///< the zero points added instead of subtracted
  truncating_requant,   ///< acc × scale truncated
  int16_accumulator,    ///< the products summed in a wrapping int16
  fp32_accumulator,     ///< the products summed in fp32
  per_tensor_scale,     ///< column 0's scale for every column
  truncating_shift,     ///< fixed point: an arithmetic >> instead of RoundingDivideByPOT
};

/// gemmlowp/TFLite fixed-point requantisation, written out from the sources (independent of
/// numfid's): QuantizeMultiplier (tensorflow/lite/kernels/internal/quantization_util.cc),
/// SaturatingRoundingDoublingHighMul and RoundingDivideByPOT (google/gemmlowp
/// fixedpoint/fixedpoint.h), MultiplyByQuantizedMultiplier (tensorflow/lite/kernels/internal/common.h).
inline std::int32_t tflite_requantize(std::int32_t x, double real, bool truncating_shift = false) {
  int shift = 0;
  const double q = std::frexp(real, &shift);
  auto q_fixed = static_cast<std::int64_t>(std::round(q * (1ll << 31)));
  if (q_fixed == (1ll << 31)) q_fixed /= 2, ++shift;
  if (shift < -31) shift = 0, q_fixed = 0;
  const auto m = static_cast<std::int32_t>(q_fixed);
  const int left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
  const auto a = static_cast<std::int32_t>(static_cast<std::uint32_t>(x) << left);  // wraps as int32 arithmetic does
  std::int32_t high;
  if (a == m && a == INT32_MIN) {
    high = INT32_MAX;
  } else {
    const std::int64_t ab = static_cast<std::int64_t>(a) * m;
    const std::int64_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
    high = static_cast<std::int32_t>((ab + nudge) / (1ll << 31));
  }
  if (truncating_shift) return high >> right;
  const std::int32_t mask = static_cast<std::int32_t>((1ll << right) - 1), remainder = high & mask;
  const std::int32_t threshold = (mask >> 1) + (high < 0 ? 1 : 0);
  return (high >> right) + (remainder > threshold ? 1 : 0);
}

/// An int8 GEMM's parameters: zero points, one output scale (per tensor) or one per column,
/// the requantisation's form.
struct Int8GemmParams {
  std::int64_t za = 0, zb = 0, zo = 0;
  std::vector<double> scales{1.0};
  bool fixed_point = false;
  Int8Defect defect = Int8Defect::none;
};

/// C = saturate_int8(round((A - za)·(B - zb) · scale_j) + zo), int8 A (M×K), B (K×N) in int64
/// loops (or the defect's narrow accumulator); the product by the scale (24 bits: exact in
/// double for |acc| < 2^29) rounded to nearest even (std::nearbyint), or truncated, or the
/// TFLite fixed-point pipeline.
inline numfid::TensorData int8_gemm_tensor(const numfid::TensorData& a, const numfid::TensorData& b,
                                           const Int8GemmParams& p) {
  const std::int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  const auto v = [](const numfid::TensorData& t, std::int64_t i) {
    return static_cast<std::int64_t>(static_cast<std::int8_t>(t.values[static_cast<std::size_t>(i)].raw & 0xffu));
  };
  const Int8Defect d = p.defect;
  const std::int64_t za = d == Int8Defect::zero_point_sign ? -p.za : p.za, zb = d == Int8Defect::zero_point_sign ? -p.zb : p.zb;
  std::vector<std::uint8_t> c(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      std::int64_t acc = 0;
      float acc_f = 0;
      for (std::int64_t kk = 0; kk < k; ++kk) {
        const std::int64_t t = (v(a, i * k + kk) - za) * (v(b, kk * n + j) - zb);
        acc += t;
        if (d == Int8Defect::int16_accumulator) acc = static_cast<std::int16_t>(acc);
        acc_f += static_cast<float>(t);
      }
      if (d == Int8Defect::fp32_accumulator) acc = static_cast<std::int64_t>(acc_f);
      const double scale = p.scales.size() == 1 || d == Int8Defect::per_tensor_scale ? p.scales[0]
                                                                                      : p.scales[static_cast<std::size_t>(j)];
      std::int64_t r;
      if (p.fixed_point) {
        r = tflite_requantize(static_cast<std::int32_t>(acc), scale, d == Int8Defect::truncating_shift);
      } else {
        const double x = static_cast<double>(acc) * scale;
        r = static_cast<std::int64_t>(d == Int8Defect::truncating_requant ? std::trunc(x) : std::nearbyint(x));
      }
      const std::int64_t y = std::clamp(r + p.zo, std::int64_t{-128}, std::int64_t{127});
      c[static_cast<std::size_t>(i * n + j)] = static_cast<std::uint8_t>(static_cast<std::int8_t>(y));
    }
  return numfid::view(std::span<const std::uint8_t>(c), {m, n}, "int8", "C");
}

/// The per-tensor form of int8_gemm_tensor.
inline numfid::TensorData int8_gemm_tensor(const numfid::TensorData& a, const numfid::TensorData& b, std::int64_t za,
                                           std::int64_t zb, double scale, std::int64_t zo, Int8Defect d = Int8Defect::none) {
  return int8_gemm_tensor(a, b, Int8GemmParams{za, zb, zo, {scale}, false, d});
}

/// An fp8 e4m3 pattern's value (OCP 8-bit FP v1.0: bias 7, no infinities, S.1111.111 NaN).
inline float e4m3_value(std::uint32_t bits) {
  const int e = static_cast<int>((bits >> 3) & 0xfu), f = static_cast<int>(bits & 7u);
  if (e == 15 && f == 7) return NAN;
  const float mag = e == 0 ? std::ldexp(static_cast<float>(f), -9) : std::ldexp(static_cast<float>(8 + f), e - 10);
  return (bits & 0x80u) ? -mag : mag;
}

/// An fp4 e2m1 pattern's value (OCP MX v1.0 §5.3.3: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives).
inline float e2m1_value(std::uint32_t bits) {
  static constexpr float mag[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  return (bits & 8u) ? -mag[bits & 7u] : mag[bits & 7u];
}

enum class ScaledDefect {
  none,
  wrong_block_scale,    ///< A's scale of the next K block
  transposed_scale_b,   ///< B's scale tensor indexed transposed
  bf16_unpromoted,      ///< every scaled product added into one bf16 sum
  swapped_scales,       ///< A's scale buffer read as B's and B's as A's
  e8m0_bias,            ///< E8M0 scales decoded with bias 126 (A's)
  sequential_scaling,   ///< (partial · sa) · sb in fp32 instead of (sa · sb) · partial
};

/// The scale blocks of block_scaled_gemm_tensor: A's a_rows × k, B's k × b_cols.
struct ScaleBlocks {
  std::int64_t a_rows = 1, k = 32, b_cols = 1;
};

/// C = Σ_k sa·sb·A[i,k]·B[k,j], A (M×K) and B (K×N) fp8 e4m3 or fp4 e2m1, scales fp32 or E8M0
/// (2^(code - 127)), A's ⌈M/a_rows⌉×⌈K/k⌉ and B's ⌈K/k⌉×⌈N/b_cols⌉: each K block's products
/// summed in fp32, then (sa·sb)·partial added to an fp32 sum (promotion every k), bf16 RNE out.
inline numfid::TensorData block_scaled_gemm_tensor(const numfid::TensorData& a, const numfid::TensorData& b,
                                                   const numfid::TensorData& sa_in, const numfid::TensorData& sb_in,
                                                   ScaleBlocks blk, ScaledDefect d = ScaledDefect::none) {
  const std::int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1], kb = (k + blk.k - 1) / blk.k;
  const std::int64_t bn = (n + blk.b_cols - 1) / blk.b_cols;
  const bool swap = d == ScaledDefect::swapped_scales;
  const numfid::TensorData &sa = swap ? sb_in : sa_in, &sb = swap ? sa_in : sb_in;
  const auto at = [](const numfid::TensorData& t, std::int64_t i) { return t.values[static_cast<std::size_t>(i)].raw; };
  const auto element = [&](const numfid::TensorData& t, std::int64_t i) {
    return t.format->name == std::string_view("fp4_e2m1") ? e2m1_value(at(t, i)) : e4m3_value(at(t, i));
  };
  const auto scale = [&](const numfid::TensorData& t, std::int64_t i, int bias) {
    return t.format->name == std::string_view("e8m0") ? std::ldexp(1.0f, static_cast<int>(at(t, i)) - bias)
                                                      : std::bit_cast<float>(static_cast<std::uint32_t>(at(t, i)));
  };
  std::vector<std::uint16_t> c(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      float acc = 0;
      for (std::int64_t t = 0; t < kb; ++t) {
        const std::int64_t ta = d == ScaledDefect::wrong_block_scale ? (t + 1) % kb : t;
        const float s_a = scale(sa, i / blk.a_rows * kb + ta, d == ScaledDefect::e8m0_bias ? 126 : 127);
        const float s_b = scale(sb, d == ScaledDefect::transposed_scale_b ? j / blk.b_cols * kb + t : t * bn + j / blk.b_cols, 127);
        float part = 0;
        for (std::int64_t kk = t * blk.k; kk < std::min((t + 1) * blk.k, k); ++kk) {
          const float p = element(a, i * k + kk) * element(b, kk * n + j);
          if (d == ScaledDefect::bf16_unpromoted)
            acc = bf16_value(bf16_rne(acc + s_a * s_b * p));
          else
            part += p;
        }
        if (d == ScaledDefect::sequential_scaling) acc += part * s_a * s_b;
        else if (d != ScaledDefect::bf16_unpromoted) acc += s_a * s_b * part;
      }
      c[static_cast<std::size_t>(i * n + j)] = bf16_rne(acc);
    }
  return numfid::view(std::span<const std::uint16_t>(c), {m, n}, "bf16", "C");
}

/// The 1×`block` layout of both operands (A's per row, B's per column).
inline numfid::TensorData scaled_gemm_tensor(const numfid::TensorData& a, const numfid::TensorData& b,
                                             const numfid::TensorData& sa, const numfid::TensorData& sb,
                                             std::int64_t block, ScaledDefect d = ScaledDefect::none) {
  return block_scaled_gemm_tensor(a, b, sa, sb, {1, block, 1}, d);
}

}  // namespace numfid_test_kernels
