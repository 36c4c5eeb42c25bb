// Seeded data generation shared by the conformance suites (internal; not installed).
#pragma once

#include <bit>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "formats/convert.h"
#include "io/tensor.h"

namespace numfid::testing::detail {

/// SplitMix64 (Steele, Lea & Flood, OOPSLA 2014): the same stream on every platform, unlike the
/// standard distributions, whose algorithms are implementation-defined.
struct Rng {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1) with 53 random bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1p-53; }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * unit(); }
  /// Uniform integer in [lo, hi] (int or std::int64_t, as the bounds are).
  template <class Int>
  Int integer(Int lo, Int hi) {
    return lo + static_cast<Int>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }
};

/// `x` rounded to nearest into `f` (through fp32, which holds every input the suites generate),
/// saturating: generated data never overflows by accident.
/// A TensorData of `values` (patterns of `f`) with `shape` and `name`: how the suites hand
/// generated operands to the pipeline.
inline TensorData tensor(const FormatSpec& f, std::vector<std::int64_t> shape, std::vector<Bits> values, std::string name) {
  TensorData t;
  t.format = &f;
  t.shape = std::move(shape);
  t.values = std::move(values);
  t.name = std::move(name);
  return t;
}

inline Bits to_format(const FormatSpec& f, double x) {
  RoundOptions o;
  o.overflow = Overflow::saturate;
  return convert(fp32, f, Bits{std::bit_cast<std::uint32_t>(static_cast<float>(x))}, o).bits;
}

}  // namespace numfid::testing::detail
