// Helpers for conformance-suite adapters: a kernel takes and returns its own containers (floats
// holding bf16 values, uint16_t bf16 patterns); these move them in and out of TensorData.
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "formats/convert.h"
#include "tolerances/check.h"

namespace numfid::testing {

/// The tensor's values as floats (exact: every numfid format but int32 fits in fp32). Float
/// formats are converted pattern to pattern (numfid::convert, in software), so a caller's FTZ
/// (-ffast-math) cannot flush a subnormal on its way into the float.
inline std::vector<float> as_floats(const TensorData& t) {
  std::vector<float> v;
  v.reserve(t.values.size());
  const bool float_format = t.format->kind == FormatKind::binary_float;
  for (const Bits b : t.values)
    v.push_back(float_format ? std::bit_cast<float>(static_cast<std::uint32_t>(convert(*t.format, fp32, b).bits.raw))
                             : static_cast<float>(to_double(*t.format, b)));
  return v;
}

/// The tensor's 16-bit patterns (fp16, bf16 tensors).
inline std::vector<std::uint16_t> as_uint16(const TensorData& t) {
  std::vector<std::uint16_t> v;
  v.reserve(t.values.size());
  for (const Bits b : t.values) v.push_back(static_cast<std::uint16_t>(b.raw));
  return v;
}

/// A kernel's 16-bit output patterns as a tensor of `format` (numfid::view, shape as a vector).
inline TensorData from_uint16(const std::vector<std::uint16_t>& bits, std::vector<std::int64_t> shape,
                              std::string_view format, std::string name = "kernel output") {
  return view(std::span<const std::uint16_t>(bits), std::move(shape), format, std::move(name));
}

}  // namespace numfid::testing
