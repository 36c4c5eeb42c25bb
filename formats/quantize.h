// Affine integer quantisation: float -> int8/uint8/int32 with a scale and a zero point, and
// back, each computed exactly and rounded once (ONNX QuantizeLinear/DequantizeLinear semantics).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "formats/rounding.h"

namespace numfid {

/// Parameters of affine quantisation: real value = (q - zero_point) * scale.
struct QuantParams {
  const FormatSpec* scale_format = &fp32;  ///< float format in which `scale` is stored
  Bits scale{0x3f800000u};                 ///< finite and non-zero (default: fp32 1.0)
  std::int32_t zero_point = 0;             ///< must lie in the integer format's range
};

/// Quantises `x` (any float format `from`) to the integer format `to` (int8, uint8, int32):
///   q = clamp(round(x / scale) + zero_point, to's range)
/// as ONNX QuantizeLinear defines it (round first, then add the zero point: with rne and an
/// odd zero point this differs from round(x / scale + zero_point)). x / scale is never
/// rounded to a float: it is divided exactly and rounded once, to an integer, with
/// `o.rounding` (every mode, stochastic with (o.seed, o.stream)). `o.daz` reads a subnormal
/// x as zero; it does not apply to the scale.
/// Special cases: NaN -> zero_point (the code of 0.0), flagged invalid; ±inf and finite
/// values outside the range -> the nearest bound, flagged invalid (IEEE 754 convertToInteger
/// raises invalid; round_to() does the same for integer targets).
/// Throws std::invalid_argument if `to` is not an integer format, the scale is not a
/// finite non-zero float, or the zero point is outside `to`'s range.
Result quantize(const FormatSpec& from, Bits x, const FormatSpec& to, const QuantParams& p,
                const RoundOptions& o = {});

/// Dequantises `q` (integer format `from`) to the float format `to`:
///   (q - zero_point) * scale, correctly rounded in one step under `o`
/// (the product is exact in integers: no intermediate fp32 rounding). A zero difference
/// gives +0, or -0 for a negative scale (IEEE 754 §6.3 sign of a product).
/// Throws std::invalid_argument if `from` is not an integer format, `to` not a float format,
/// or the scale is not a finite non-zero float.
Result dequantize(const FormatSpec& from, Bits q, const FormatSpec& to, const QuantParams& p,
                  const RoundOptions& o = {});

/// Per-tensor quantisation of a span: out[i] = quantize(x[i]) with one QuantParams.
/// Element i rounds with stream o.stream + i (stochastic rounding reproducible per element).
/// Returns the union of the flags. Throws std::invalid_argument if the sizes differ.
Status quantize_per_tensor(const FormatSpec& from, std::span<const Bits> x, const FormatSpec& to,
                           const QuantParams& p, std::span<Bits> out, const RoundOptions& o = {});

/// Per-tensor dequantisation of a span (see quantize_per_tensor for streams and flags).
Status dequantize_per_tensor(const FormatSpec& from, std::span<const Bits> q, const FormatSpec& to,
                             const QuantParams& p, std::span<Bits> out, const RoundOptions& o = {});

/// Per-channel quantisation of a row-major tensor whose channel axis has
/// `channels.size()` entries and `inner` elements after it (the product of the later
/// dimensions): element i belongs to channel (i / inner) % channels.size().
/// Throws std::invalid_argument if the sizes differ, `inner` is 0, `channels` is empty or
/// x.size() is not a multiple of inner * channels.size().
Status quantize_per_channel(const FormatSpec& from, std::span<const Bits> x, const FormatSpec& to,
                            std::span<const QuantParams> channels, std::size_t inner, std::span<Bits> out,
                            const RoundOptions& o = {});

/// Per-channel dequantisation (layout as quantize_per_channel).
Status dequantize_per_channel(const FormatSpec& from, std::span<const Bits> q, const FormatSpec& to,
                              std::span<const QuantParams> channels, std::size_t inner, std::span<Bits> out,
                              const RoundOptions& o = {});

}  // namespace numfid
