// Internals of the check pipeline (not installed): a small exact fixed-point sum for the scaled
// GEMM check's elements (tolerances/scaled_check.cpp); tested against Boost.Multiprecision's
// integers in tests/wide_sum_test.cpp.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

#include "formats/rounding.h"

namespace numfid::detail {

/// An exact sum of a few values m·2^e (m below 2^128) and of a few absolute values, in fixed
/// point: 512-bit magnitudes of the positive and of the negative values and of the absolute
/// ones, with unit 2^base (base: a lower bound of every exponent added) — a scaled GEMM
/// element's sum of its scale blocks' partials (tolerances/scaled_check.cpp), without a long
/// accumulator to clear and read. add() is false, nothing added, where a value would not fit
/// below the top `carry_bits` bits (room for 2^carry_bits additions into each magnitude).
class WideSum {
 public:
  WideSum(int base, int carry_bits) : base_(base), limit_(kWords * 64 - carry_bits) {}
  bool add(bool negative, uint128 m, int e) { return m == 0 || put(negative ? neg_ : pos_, m, e); }
  bool add_abs(uint128 m, int e) { return m == 0 || put(abs_, m, e); }
  /// The sum in LongAccumulator::value()'s form; false (nothing set) where it is zero (its
  /// sign follows the zero-sign rules of the terms: the long accumulator's).
  bool value(Unrounded& v) const {
    int w = kWords - 1;
    while (w >= 0 && pos_[static_cast<std::size_t>(w)] == neg_[static_cast<std::size_t>(w)]) --w;
    if (w < 0) return false;
    const bool negative = neg_[static_cast<std::size_t>(w)] > pos_[static_cast<std::size_t>(w)];
    const Words& big = negative ? neg_ : pos_;
    const Words& small = negative ? pos_ : neg_;
    Words d{};
    unsigned borrow = 0;
    for (std::size_t i = 0; i < d.size(); ++i) {
      const std::uint64_t x = big[i] - small[i];
      d[i] = x - borrow;
      borrow = (big[i] < small[i] || x < borrow) ? 1 : 0;
    }
    v = extract(d, negative);
    return true;
  }
  /// Σ|terms| in LongAccumulator::value()'s form.
  Unrounded abs_value() const { return extract(abs_, false); }

 private:
  static constexpr int kWords = 8;
  using Words = std::array<std::uint64_t, kWords>;
  bool put(Words& x, uint128 m, int e) {
    const int s = e - base_;
    if (s < 0 || s + bit_length(m) > limit_) return false;
    const int q = s / 64, r = s % 64;
    const auto lo = static_cast<std::uint64_t>(m), hi = static_cast<std::uint64_t>(m >> 64);
    const std::uint64_t parts[3] = {lo << r, r == 0 ? hi : (hi << r) | (lo >> (64 - r)), r == 0 ? 0 : hi >> (64 - r)};
    std::uint64_t carry = 0;
    for (int i = q; i < kWords; ++i) {
      const std::uint64_t add = i - q < 3 ? parts[i - q] : 0;
      if (add == 0 && carry == 0) {
        if (i - q >= 2) break;
        continue;
      }
      const std::uint64_t t = x[static_cast<std::size_t>(i)] + add;
      const std::uint64_t c1 = t < add ? 1 : 0;
      x[static_cast<std::size_t>(i)] = t + carry;
      carry = c1 + (x[static_cast<std::size_t>(i)] < carry ? 1 : 0);
    }
    return true;
  }
  /// A magnitude's top 128 bits (its top bit at bit 127) and whether any bit below is set.
  Unrounded extract(const Words& d, bool negative) const {
    int w = kWords - 1;
    while (w >= 0 && d[static_cast<std::size_t>(w)] == 0) --w;
    if (w < 0) return {negative, 0, 0, false};
    const int t = 64 * w + 63 - std::countl_zero(d[static_cast<std::size_t>(w)]);  // the top bit
    const auto bit = [&d](int b) -> std::uint64_t {  // the 64 bits from bit b up (zeros outside)
      const int q = b >= 0 ? b / 64 : -((-b + 63) / 64), r = b - 64 * q;
      const auto word = [&d](int i) { return i >= 0 && i < kWords ? d[static_cast<std::size_t>(i)] : std::uint64_t{0}; };
      return r == 0 ? word(q) : (word(q) >> r) | (word(q + 1) << (64 - r));
    };
    const int low = t - 127;  // the lowest kept bit
    const uint128 sig = (uint128{bit(low + 64)} << 64) | bit(low);
    bool sticky = false;
    for (int i = 0; i < kWords && 64 * i < low && !sticky; ++i) {
      const std::uint64_t below = 64 * (i + 1) <= low ? d[static_cast<std::size_t>(i)]
                                                      : d[static_cast<std::size_t>(i)] & ((std::uint64_t{1} << (low - 64 * i)) - 1);
      sticky = below != 0;
    }
    return {negative, sig, base_ + low, sticky};
  }
  int base_, limit_;
  Words pos_{}, neg_{}, abs_{};
};

}  // namespace numfid::detail
