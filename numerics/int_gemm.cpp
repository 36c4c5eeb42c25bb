// Integer GEMM and requantisation (numerics/int_gemm.h).
#include "numerics/int_gemm.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace numfid {

std::int64_t integer_value(const FormatSpec& f, Bits b) {
  const std::uint32_t raw = b.raw & storage_mask(f);
  if (!f.is_signed || f.bits >= 64) return raw;
  const std::uint32_t sign = std::uint32_t{1} << (f.bits - 1);
  return static_cast<std::int64_t>(raw ^ sign) - static_cast<std::int64_t>(sign);  // sign extension
}

Bits integer_bits(const FormatSpec& f, std::int64_t v) {
  return Bits{static_cast<std::uint32_t>(static_cast<std::uint64_t>(v)) & storage_mask(f)};
}

std::int64_t integer_min(const FormatSpec& f) { return f.is_signed ? -(std::int64_t{1} << (f.bits - 1)) : 0; }
std::int64_t integer_max(const FormatSpec& f) {
  return f.is_signed ? (std::int64_t{1} << (f.bits - 1)) - 1 : (std::int64_t{1} << f.bits) - 1;
}

std::vector<std::int64_t> int_gemm_exact(const IntOperand& a, std::span<const Bits> A, const IntOperand& b,
                                         std::span<const Bits> B, const IntGemmShape& s,
                                         std::span<const std::int64_t> addend) {
  const auto M = static_cast<std::size_t>(s.m), K = static_cast<std::size_t>(s.k), N = static_cast<std::size_t>(s.n);
  // Decode once: values minus zero points, B transposed so that every dot reads contiguously.
  std::vector<std::int64_t> av(M * K), bt(s.rowwise ? M * K : N * K);
  for (std::size_t i = 0; i < M * K; ++i) av[i] = integer_value(*a.format, A[i]) - a.zero_point;
  if (s.rowwise) {
    for (std::size_t i = 0; i < M * K; ++i) bt[i] = integer_value(*b.format, B[i]) - b.zero_point;
  } else {
    for (std::size_t k = 0; k < K; ++k)
      for (std::size_t j = 0; j < N; ++j) bt[j * K + k] = integer_value(*b.format, B[k * N + j]) - b.zero_point;
  }
  std::vector<std::int64_t> out(s.rowwise ? M : M * N);
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = 0; j < (s.rowwise ? 1 : N); ++j) {
      const std::int64_t* x = av.data() + i * K;
      const std::int64_t* y = bt.data() + (s.rowwise ? i : j) * K;
      std::int64_t acc = 0;
      for (std::size_t k = 0; k < K; ++k) acc += x[k] * y[k];
      const std::size_t e = s.rowwise ? i : i * N + j;
      out[e] = acc + (addend.empty() ? 0 : addend[e]);
    }
  return out;
}

Int32OverflowK int32_overflow_k(const IntOperand& a, const IntOperand& b) {
  const std::int64_t a0 = integer_min(*a.format) - a.zero_point, a1 = integer_max(*a.format) - a.zero_point;
  const std::int64_t b0 = integer_min(*b.format) - b.zero_point, b1 = integer_max(*b.format) - b.zero_point;
  // A product of two intervals takes its extremes at the corners.
  const std::int64_t c[] = {a0 * b0, a0 * b1, a1 * b0, a1 * b1};
  Int32OverflowK r;
  r.min_term = *std::min_element(std::begin(c), std::end(c));
  r.max_term = *std::max_element(std::begin(c), std::end(c));
  constexpr std::int64_t hi = std::numeric_limits<std::int32_t>::max();
  constexpr std::int64_t lo = std::numeric_limits<std::int32_t>::min();
  std::int64_t k = std::numeric_limits<std::int64_t>::max();
  if (r.max_term > 0) k = std::min(k, hi / r.max_term + 1);
  if (r.min_term < 0) k = std::min(k, lo / r.min_term + 1);  // both negative: a positive quotient
  r.first_k = k;
  return r;
}

std::int32_t wrap_int32(std::int64_t v) { return static_cast<std::int32_t>(static_cast<std::uint32_t>(v)); }

// ------------------------------------------------------------------- gemmlowp / TFLite

namespace {

// gemmlowp fixedpoint/fixedpoint.h, SaturatingRoundingDoublingHighMul (scalar int32 version).
std::int32_t saturating_rounding_doubling_high_mul(std::int32_t a, std::int32_t b) {
  const bool overflow = a == b && a == std::numeric_limits<std::int32_t>::min();
  const std::int64_t ab = std::int64_t{a} * std::int64_t{b};
  const std::int32_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
  const auto high = static_cast<std::int32_t>((ab + nudge) / (std::int64_t{1} << 31));  // C++ division truncates
  return overflow ? std::numeric_limits<std::int32_t>::max() : high;
}

// gemmlowp fixedpoint/fixedpoint.h, RoundingDivideByPOT: x / 2^exponent rounded half away from zero.
std::int32_t rounding_divide_by_pot(std::int32_t x, int exponent) {
  const auto mask = static_cast<std::int32_t>((std::int64_t{1} << exponent) - 1);
  const std::int32_t remainder = x & mask;
  const std::int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

__extension__ typedef __int128 int128;

/// (-1)^neg · p · 2^s rounded to an integer under r (magnitudes beyond 2^120 saturate there:
/// every output range is far smaller).
int128 round_to_integer(bool neg, uint128 p, int s, Rounding r) {
  uint128 q = 0;
  int cmp = 0;  // the discarded fraction against one half: -1, 0, +1
  bool inexact = false;
  if (s >= 0) {
    q = bit_length(p) + s > 120 ? uint128{1} << 120 : p << s;
  } else if (-s >= 120) {  // p < 2^117: the value is below 2^-3
    inexact = p != 0;
    cmp = inexact ? -1 : 0;
  } else {
    const int sh = -s;
    q = p >> sh;
    const uint128 rem = p & ((uint128{1} << sh) - 1);
    const uint128 half = uint128{1} << (sh - 1);
    inexact = rem != 0;
    cmp = rem < half ? -1 : rem == half ? 0 : 1;
  }
  bool up = false;  // increment the magnitude
  if (inexact) switch (r) {
      case Rounding::rne: up = cmp > 0 || (cmp == 0 && (q & 1) != 0); break;
      case Rounding::rna: up = cmp >= 0; break;
      case Rounding::rtz: up = false; break;
      case Rounding::rup: up = !neg; break;
      case Rounding::rdn: up = neg; break;
      case Rounding::stochastic: throw std::invalid_argument("requantize: stochastic rounding is not a requantisation mode");
    }
  const auto m = static_cast<int128>(q + (up ? 1 : 0));
  return neg ? -m : m;
}

}  // namespace

FixedPointMultiplier quantize_multiplier(double real) {
  if (!(real > 0) || !std::isfinite(real))
    throw std::invalid_argument("quantize_multiplier: the real multiplier must be finite and > 0");
  int shift = 0;
  const double q = std::frexp(real, &shift);  // real = q · 2^shift, q in [0.5, 1)
  auto q_fixed = static_cast<std::int64_t>(std::round(q * 0x1p31));  // TfLiteRound = std::round
  if (q_fixed == (std::int64_t{1} << 31)) {
    q_fixed /= 2;
    ++shift;
  }
  if (shift < -31) {  // every bit would be shifted out: TFLite flushes to a zero multiplier
    shift = 0;
    q_fixed = 0;
  }
  return {static_cast<std::int32_t>(q_fixed), shift};
}

std::int32_t multiply_by_quantized_multiplier(std::int32_t x, FixedPointMultiplier m) {
  const int left = m.shift > 0 ? m.shift : 0;
  const int right = m.shift > 0 ? 0 : -m.shift;
  const auto shifted = static_cast<std::int32_t>(static_cast<std::uint32_t>(x) << left);  // int32 wraps
  return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(shifted, m.multiplier), right);
}

// ------------------------------------------------------------------- requantisation

RequantResult requantize(std::int64_t acc, double scale, const Requantization& r) {
  if (!std::isfinite(scale) || scale == 0) throw std::invalid_argument("requantize: the scale must be finite and non-zero");
  const FormatSpec& out = *r.out;
  if (out.kind != FormatKind::integer) {
    // acc × scale exactly: the scale's 53-bit significand times |acc| < 2^63 fits 128 bits.
    int e = 0;
    const double fr = std::frexp(std::fabs(scale), &e);
    const auto m = static_cast<std::uint64_t>(std::ldexp(fr, 53));
    const bool neg = (acc < 0) != (scale < 0);
    const uint128 p = uint128{acc < 0 ? 0 - static_cast<std::uint64_t>(acc) : static_cast<std::uint64_t>(acc)} * m;
    RoundOptions o;
    o.rounding = r.rounding;
    o.overflow = r.saturate ? Overflow::saturate : Overflow::ieee;
    // A float output's overflow is IEEE 754's (±inf under rne/rna, the largest finite toward
    // zero under rtz, NaN in a format without infinities such as E4M3; with --saturate the
    // largest finite): a value of the claim, as the plain matmul's output cast — not the
    // integer outputs' "no value", which --saturate alone gives one. (It was flagged as none:
    // emulate refused even under --saturate, and check called every such output a defect.)
    return {round_to(out, Unrounded{neg, p, e - 53, false}, o).bits, false};
  }
  const std::int64_t lo = integer_min(out), hi = integer_max(out);
  int128 y = 0;
  bool overflow = false;
  if (r.fixed_point) {
    if (acc < std::numeric_limits<std::int32_t>::min() || acc > std::numeric_limits<std::int32_t>::max()) {
      overflow = true;  // the int32 pipeline cannot hold the accumulator
      y = acc < 0 ? lo : hi;
    } else {
      y = int128{multiply_by_quantized_multiplier(static_cast<std::int32_t>(acc), quantize_multiplier(scale))} +
          r.zero_point;
    }
  } else {
    int e = 0;
    const double fr = std::frexp(std::fabs(scale), &e);
    const auto m = static_cast<std::uint64_t>(std::ldexp(fr, 53));
    const bool neg = (acc < 0) != (scale < 0);
    const uint128 p = uint128{acc < 0 ? 0 - static_cast<std::uint64_t>(acc) : static_cast<std::uint64_t>(acc)} * m;
    y = round_to_integer(neg, p, e - 53, r.rounding) + r.zero_point;  // round first, then the zero point (ONNX)
  }
  if (y < lo || y > hi) {
    overflow = overflow || !r.saturate;
    y = y < lo ? lo : hi;
  }
  return {integer_bits(out, static_cast<std::int64_t>(y)), overflow};
}

double requant_exact(std::int64_t acc, double scale, const Requantization& r) {
  const double v = static_cast<double>(acc) * scale;
  return r.out->kind == FormatKind::integer ? v + static_cast<double>(r.zero_point) : v;
}

}  // namespace numfid
