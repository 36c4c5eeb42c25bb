// The kernel project's own kernels (no numfid here): a tiled CPU bf16 GEMM with fp32
// accumulation, a bf16 softmax, an INT8 GEMM (int32 accumulation, requantisation to int8) and an
// MXFP8 block-scaled GEMM (OCP MX v1.0: E4M3 elements, one E8M0 scale per 32 K-elements), plus
// deliberately defective variants that kernels_test.cpp proves numfid catches.
#pragma once

#include <cstdint>
#include <vector>

namespace kp {

/// bf16 bit patterns.
using bf16_bits = std::uint16_t;

/// float -> bf16, round to nearest, ties to even (NaN stays a quiet NaN).
bf16_bits to_bf16(float f);
/// bf16 -> float (exact).
float from_bf16(bf16_bits b);

/// What can be wrong with the GEMM.
enum class GemmVariant {
  correct,           ///< fp32 partial sums, bf16 RNE output
  bf16_accumulator,  ///< partial sums rounded to bf16 after every add
  truncating_cast,   ///< the output cast truncates (drops the low 16 bits)
  off_by_one_tile,   ///< the K-tile loop stops one tile early (`t + tile < k`)
};

/// C (M×N, bf16 bits) = A (M×K) · B (K×N), operands bf16 values held in floats. K is walked in
/// tiles of `tile` terms: each tile summed in fp32, then added to the running fp32 sum (the
/// PSUM pattern of an accelerator, here on the CPU).
std::vector<bf16_bits> gemm_bf16(const std::vector<float>& a, const std::vector<float>& b, int m, int k, int n,
                                 int tile = 32, GemmVariant v = GemmVariant::correct);

/// Softmax over the last axis of a rows×cols bf16 tensor, fp32 arithmetic, bf16 RNE output.
/// `subtract_max = false` is the defective textbook form exp(x) / Σ exp(x), which overflows.
std::vector<bf16_bits> softmax_bf16(const std::vector<bf16_bits>& x, int rows, int cols, bool subtract_max = true);

/// What can be wrong with the INT8 GEMM.
enum class Int8Variant {
  correct,            ///< int32 accumulator, acc × scale rounded to nearest even once
  int16_accumulator,  ///< the accumulator is an int16 (wraps)
  truncating_requant, ///< acc × scale truncated toward zero
};

/// C (M×N, int8) = clamp(round((A - za)·(B - zb) × scale) + zo, -128, 127), A (M×K) and B (K×N)
/// int8, the sum in an int32 accumulator, the product by `scale` (an fp32 value: exact in
/// double) rounded to nearest even — the TFLite/ONNX requantisation order.
std::vector<std::int8_t> gemm_int8(const std::vector<std::int8_t>& a, const std::vector<std::int8_t>& b, int m, int k,
                                   int n, int za, int zb, float scale, int zo, Int8Variant v = Int8Variant::correct);

/// What can be wrong with the MXFP8 GEMM.
enum class MxVariant {
  correct,            ///< each 32-block's partial in fp32, promoted with (sa·sb)
  wrong_block_scale,  ///< A's scale of the next K block
  e8m0_bias,          ///< E8M0 decoded with bias 126 (every scale doubled)
};

/// C (M×N, bf16 bits) = Σ_k sa·sb·A[i,k]·B[k,j]: A (M×K) and B (K×N) fp8 e4m3 bit patterns, scale_a
/// (M × ⌈K/32⌉) and scale_b (⌈K/32⌉ × N) E8M0 patterns (2^(code - 127)); each 32-block's products
/// summed in fp32, then added as (sa·sb)·partial to an fp32 sum, bf16 RNE out.
std::vector<bf16_bits> gemm_mxfp8(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b,
                                  const std::vector<std::uint8_t>& scale_a, const std::vector<std::uint8_t>& scale_b,
                                  int m, int k, int n, MxVariant v = MxVariant::correct);

}  // namespace kp
