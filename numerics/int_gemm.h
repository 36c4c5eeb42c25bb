// Integer GEMM (INT8/UINT8 operands, INT32 accumulation) and its requantisation: the exact
// accumulator of the (a - za)(b - zb) products, the K at which an int32 accumulator can first
// overflow, and the requantisation of an accumulator to the output (the exact acc × scale
// rounded once, + zero point, saturation: the TFLite/ONNX order; or the gemmlowp/TFLite
// fixed-point multiplier + shift). The one implementation behind check, emulate and tol.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "formats/rounding.h"

namespace numfid {

/// The integer a pattern of integer format `f` stands for (int8/int32: two's complement).
std::int64_t integer_value(const FormatSpec& f, Bits b);

/// The pattern of `v` in integer format `f`; `v` must lie in f's range.
Bits integer_bits(const FormatSpec& f, std::int64_t v);

/// Smallest and largest integer of integer format `f`.
std::int64_t integer_min(const FormatSpec& f);
std::int64_t integer_max(const FormatSpec& f);

/// One integer operand: its format and the zero point subtracted from each value.
struct IntOperand {
  const FormatSpec* format = &int8;
  std::int64_t zero_point = 0;
};

/// The shape of an integer GEMM: C (M×N) = A (M×K) · B (K×N); `rowwise`: D[r] = Σ_k A[r,k]·B[r,k]
/// with A and B R×K (n = 1).
struct IntGemmShape {
  std::int64_t m = 0, k = 0, n = 0;
  bool rowwise = false;
};

/// Σ_k (A[i,k] - za)·(B[k,j] - zb) (+ addend[i·N + j]) for every output element, exact in
/// int64: |term| <= 2^18 for 8-bit operands with in-range zero points, so K < 2^44 cannot
/// overflow int64. A, B: patterns of a.format and b.format in C order.
std::vector<std::int64_t> int_gemm_exact(const IntOperand& a, std::span<const Bits> A, const IntOperand& b,
                                         std::span<const Bits> B, const IntGemmShape& s,
                                         std::span<const std::int64_t> addend = {});

/// Where an int32 accumulator of these products can first overflow.
struct Int32OverflowK {
  std::int64_t min_term = 0, max_term = 0;  ///< range of (a - za)(b - zb) over the formats' ranges
  std::int64_t first_k = 0;                 ///< least K with K·max_term > 2^31 - 1 or K·min_term < -2^31
};
/// The overflow analysis of the operands' ranges (formats and zero points).
Int32OverflowK int32_overflow_k(const IntOperand& a, const IntOperand& b);

/// `v` modulo 2^32 as int32: what a wrapping (two's complement) int32 accumulator holds. Integer
/// addition modulo 2^32 is associative, so it holds this in every summation order.
std::int32_t wrap_int32(std::int64_t v);

/// gemmlowp/TFLite fixed-point form of a real multiplier: real ≈ multiplier · 2^(shift - 31).
struct FixedPointMultiplier {
  std::int32_t multiplier = 0;  ///< Q0.31, in [2^30, 2^31) (or 0)
  int shift = 0;                ///< > 0: a left shift of the input; < 0: a rounding right shift
};

/// TFLite's QuantizeMultiplier (tensorflow/lite/kernels/internal/quantization_util.cc):
/// q = frexp(real, &shift); q_fixed = round-half-away(q · 2^31); q_fixed == 2^31 -> halved,
/// ++shift; shift < -31 -> multiplier 0, shift 0. `real` must be finite and > 0.
FixedPointMultiplier quantize_multiplier(double real);

/// TFLite's MultiplyByQuantizedMultiplier (tensorflow/lite/kernels/internal/common.h):
/// RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x · 2^left, M), right) with gemmlowp's
/// two primitives (google/gemmlowp fixedpoint/fixedpoint.h): the high 32 bits of 2·x·M, i.e.
/// floor(x·M/2^31 + 1/2) — its nudge and truncating division send ties toward +inf, for
/// negative products too — saturating the one overflow (x = M = -2^31); then a division by
/// 2^right rounded half away from zero. x · 2^left wraps as int32 arithmetic does.
std::int32_t multiply_by_quantized_multiplier(std::int32_t x, FixedPointMultiplier m);

/// How an accumulator becomes an output element.
struct Requantization {
  const FormatSpec* out = &int8;       ///< integer (int8, uint8, int32) or float output
  std::int64_t zero_point = 0;         ///< integer outputs: added after the rounding
  Rounding rounding = Rounding::rne;   ///< the one rounding of acc × scale (not stochastic)
  bool saturate = false;               ///< out-of-range results clamp (else: an overflow)
  bool fixed_point = false;            ///< gemmlowp/TFLite fixed-point multiplier instead of exact rounding
};

/// One requantised element.
struct RequantResult {
  Bits bits;              ///< the output pattern (clamped into the range when it overflowed)
  bool overflow = false;  ///< an integer result left the output's range without saturate: no legal value
};

/// y = round(acc × scale) + zero_point, saturated — acc × scale exact (the scale's 53 bits times
/// the accumulator), rounded once with r.rounding (integer outputs) or into the float output
/// format (float outputs: no zero point). With r.fixed_point the TFLite integer pipeline
/// instead: multiply_by_quantized_multiplier(acc, quantize_multiplier(scale)) + zero_point,
/// clamped; acc outside int32 is an overflow there. `scale` finite and non-zero (> 0 for the
/// fixed-point form).
RequantResult requantize(std::int64_t acc, double scale, const Requantization& r);

/// acc × scale (+ zero point for integer outputs) rounded to double: the value the element
/// would have without the output's rounding, for reports.
double requant_exact(std::int64_t acc, double scale, const Requantization& r);

}  // namespace numfid
