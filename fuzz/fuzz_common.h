// Shared checks of the io fuzz targets: an accepted tensor must be self-consistent, survive
// a write/read round trip bit for bit, and every accessor must either work or throw
// InputError (anything else escaping is a crash that libFuzzer reports).
#pragma once

#include <algorithm>
#include <cstdlib>
#include <span>

#include "io/error.h"
#include "io/tensor.h"

namespace numfid::fuzz {

/// Aborts (a finding) unless `ok`.
inline void require(bool ok) {
  if (!ok) std::abort();
}

/// True if both tensors have the same type, shape and bytes.
inline bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.type == b.type && a.shape == b.shape &&
         std::equal(a.data.begin(), a.data.end(), b.data.begin(), b.data.end());
}

/// Reads the tensor every way the library offers.
inline void exercise(const Tensor& t) {
  const std::int64_t n = t.element_count();
  require(n >= 0);
  require(static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(element_size(t.type)) == t.data.size());
  try {
    require(values_as_double(t).size() == static_cast<std::size_t>(n));
  } catch (const InputError&) {
  }
  for (const FormatSpec* f : {&fp32, &bf16, &fp16, &tf32, &fp8_e4m3, &fp8_e5m2fnuz, &fp4_e2m1, &e8m0, &int8, &int32}) {
    try {
      const std::vector<Bits> v = tensor_values(t, *f);
      require(v.size() == static_cast<std::size_t>(n));
      for (Bits b : v) require(fits(*f, b));
    } catch (const InputError&) {
    }
  }
}

}  // namespace numfid::fuzz
