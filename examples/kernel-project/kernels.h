// The kernel project's own kernels (no numfid here): a tiled CPU bf16 GEMM with fp32
// accumulation and a bf16 softmax, plus deliberately defective variants that kernels_test.cpp
// proves numfid catches.
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

}  // namespace kp
