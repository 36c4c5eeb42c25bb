// Exact long accumulator (Kulisch-style): sums of terms and of exact products of any numfid
// float format (fp32 and narrower), kept exactly in a fixed-point register and rounded once.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

#include "formats/format_spec.h"
#include "formats/rounding.h"
#include "formats/value.h"

namespace numfid {

/// An exact accumulator of terms x and products a*b (U. Kulisch, "Computer Arithmetic and
/// Validity", 2nd ed., de Gruyter 2013, ch. 8: the exact scalar product).
///
/// Every value of a numfid format of at most 32 bits, and every product of two of them, is
/// an exact IEEE double of exponent between 2^-298 (fp32 subnormal squared) and 2^256; the
/// register is indexed by the double's sign-and-exponent field, split into 32-bit digits
/// held in 64-bit limbs whose carries are propagated only every 1024 additions per limb
/// (R. M. Neal, "Fast exact summation using small and large superaccumulators",
/// arXiv:1505.05571, 2015). Positive and negative terms go to separate halves, so Σ|terms|
/// comes for free; four independent copies of the register take consecutive terms so that
/// the additions do not wait on each other. A term costs a decode, a multiply and two
/// additions, without a data-dependent branch; where the CPU has AVX2 and F16C, four terms
/// are decoded, multiplied and split at once (chosen at run time; results are identical).
/// The register covers 2^-1011 to 2^909, so a sum of up to 2^40 products of fp32 values
/// (< 2^296) cannot overflow it.
///
/// Special values follow IEEE 754: a NaN term or product (0*inf) makes the sum NaN, as does
/// +inf together with -inf; otherwise an infinite term makes it infinite. An exact zero sum is
/// +0 (-0 when rounding toward negative), except that a sum whose terms are all -0 is -0 and
/// one whose terms are all +0 is +0 (IEEE 754-2019 §6.3; MPFR's mpfr_sum rule). The empty
/// sum is +0.
///
/// Inputs from a FormatSpec that is not a row of numfid's table (format_spec.h) and integer
/// formats are accepted through a slower exact path; the register precondition (magnitudes
/// between 2^-1011 and 2^909) is checked there and violations throw std::out_of_range.
/// The adding and reading functions hold an FpEnvGuard (formats/platform.h): a caller's
/// flush-to-zero/denormals-are-zero modes or rounding direction do not change any result.
class LongAccumulator {
 public:
  /// Terms one register copy may take before its carries are propagated: each addition adds
  /// less than 2^53 to a limb, and 1024 * 2^53 + 2^32 < 2^64.
  static constexpr int kMaxPending = 1024;
  /// Independent register copies (lanes).
  static constexpr int kLanes = 4;
  /// 32-bit digits per register half: digit c weighs 2^(32c - 1075); data lies in 2..62.
  static constexpr int kHalf = 64;
  /// Limbs per lane: positive half, negative half, one spare limb for the carry out of the last.
  static constexpr int kLimbs = 2 * kHalf + 2;

  LongAccumulator() = default;

  /// Resets to the empty sum.
  void clear();

  /// Adds the value of `x` (format `f`). With `daz`, subnormal inputs count as signed zeros.
  void add(const FormatSpec& f, Bits x, bool daz = false);
  /// Adds the exact product a*b.
  void add_product(const FormatSpec& fa, Bits a, const FormatSpec& fb, Bits b, bool daz = false);
  /// Adds every element of `x`.
  void add_sum(const FormatSpec& f, std::span<const Bits> x, bool daz = false);
  /// Adds Σ a[k]*b[k] (the spans must have the same length; std::invalid_argument if not).
  void add_dot(const FormatSpec& fa, std::span<const Bits> a, const FormatSpec& fb, std::span<const Bits> b,
               bool daz = false);
  /// Adds Σ_{k<n} a[k*stride_a]*b[k*stride_b] (a matrix column has stride = its row length).
  void add_dot_strided(const FormatSpec& fa, const Bits* a, std::ptrdiff_t stride_a, const FormatSpec& fb,
                       const Bits* b, std::ptrdiff_t stride_b, std::size_t n, bool daz = false);
  /// Adds (-1)^negative * magnitude * 2^exponent exactly (0 < magnitude; the value must lie
  /// within the register: std::out_of_range otherwise).
  void add_exact(bool negative, uint128 magnitude, int exponent);
  /// Adds everything another accumulator holds (its terms, specials and zero counts).
  void merge(const LongAccumulator& other);

  /// Number of terms (products) added.
  std::uint64_t count() const { return terms_; }
  /// True if the sum is NaN (a NaN term, 0*inf, or +inf together with -inf).
  bool is_nan() const { return nan_input_ || invalid_ || (pos_inf_ && neg_inf_); }
  /// True if an invalid operation occurred (0*inf, or infinities of both signs), whether or
  /// not a NaN operand is also present.
  bool is_invalid() const { return invalid_ || (pos_inf_ && neg_inf_); }
  /// +1 / -1 if the sum is +inf / -inf, 0 otherwise.
  int infinity_sign() const;

  /// The exact finite part of the sum: the 128 most significant bits of its magnitude with a
  /// sticky bit for the rest (numfid::Unrounded), ready for numfid::round_to. For an exact
  /// zero, `negative` follows the zero-sign rule for every mode except rdn. Infinite and NaN
  /// terms are not included (see is_nan, infinity_sign).
  Unrounded value() const;
  /// The sum rounded once into format `f` under `o` (status flags as round_to gives them;
  /// `invalid` for a NaN that an invalid operation produced).
  Result round(const FormatSpec& f, const RoundOptions& o = {}) const;
  /// The sum rounded to the nearest double (ties to even); NaN/inf as such.
  double to_double() const;
  /// to_double() and the side of it the exact sum lies on, from one reading of the register.
  struct NearestDouble {
    double value = 0;  ///< to_double()
    int side = 0;      ///< sign of (exact sum − value): 0 where value is exact, NaN or infinite
  };
  NearestDouble nearest_double() const;

  /// Σ|terms| exactly (finite terms), as value() does for the sum.
  Unrounded abs_sum() const;
  /// Σ|terms| rounded up to a double (+inf if a term is infinite).
  double abs_sum_upper() const;
  /// max |term| (exact for float formats, whose products are doubles; rounded up otherwise);
  /// +inf if a term is infinite, 0 if none.
  double max_abs() const { return (pos_inf_ || neg_inf_) ? std::numeric_limits<double>::infinity() : max_abs_; }

 private:
  using Lane = std::array<std::uint64_t, kLimbs>;
  /// The register reduced to one positive and one negative half of 32-bit digits.
  struct Snapshot {
    std::array<std::uint64_t, kHalf> pos{};
    std::array<std::uint64_t, kHalf> neg{};
    std::uint64_t pos_zeros = 0;
    std::uint64_t neg_zeros = 0;
  };
  Snapshot snapshot() const;
  /// Sign of an exact zero sum (rounding toward negative or not).
  bool zero_negative(const Snapshot& s, bool rdn) const;
  /// Adds a non-zero exact value into lane 0 (range checked).
  void deposit_exact(bool negative, uint128 magnitude, int exponent);
  /// Propagates the carries of every lane (limbs < 2^32 afterwards) and harvests zero counts.
  void normalize();
  /// The hot loop: Σ da(a[k]) * db(b[k]) (or Σ da(a[k]) when `kProduct` is false).
  template <bool kProduct, class DA, class DB>
  void kernel(const Bits* a, std::ptrdiff_t sa, const Bits* b, std::ptrdiff_t sb, std::size_t n, DA da, DB db);
  /// Picks the decoders for the formats and runs kernel(); false if a format has no fast decoder.
  bool dispatch(const FormatSpec& fa, const Bits* a, std::ptrdiff_t sa, const FormatSpec* fb, const Bits* b,
                std::ptrdiff_t sb, std::size_t n, bool daz);
  /// Scalar exact path: any formats (integers included), with special-value checks.
  void add_product_exact(const FormatSpec& fa, Bits a, const FormatSpec* fb, Bits b, bool daz);
  /// Records the special values among the terms of a range whose register sentinels fired.
  void rescan_specials(const FormatSpec& fa, const Bits* a, std::ptrdiff_t sa, const FormatSpec* fb, const Bits* b,
                       std::ptrdiff_t sb, std::size_t n, bool daz);

  alignas(64) std::array<Lane, kLanes> lanes_{};
  int pending_ = 0;  ///< additions into any one lane since the last normalize()
  std::uint64_t terms_ = 0;
  std::uint64_t pos_zeros_ = 0;  ///< +0 terms already harvested from the register
  std::uint64_t neg_zeros_ = 0;  ///< -0 terms already harvested
  double max_abs_ = 0;
  bool nan_input_ = false;  ///< a NaN operand
  bool invalid_ = false;    ///< a 0*inf product
  bool pos_inf_ = false;
  bool neg_inf_ = false;
  bool specials_fired_ = false;  ///< the last kernel() run saw an infinite or NaN term
};

/// An exact value in LongAccumulator::value()'s form (its significand's top bit at bit 127,
/// the rest of the value in the sticky bit) as a double: to nearest, ties to even, or its
/// magnitude rounded up when `up`; `side` (if given) = sign of (the value − the result), 0
/// where it is exact. For non-zero values in double's normal range; zero gives a signed zero.
double to_double_rounded(const Unrounded& v, bool up, int* side = nullptr);

namespace detail {
/// Testing hook: true makes every LongAccumulator use the portable scalar loop even where
/// the AVX2 path is available (both must give identical results). Not thread-safe to toggle
/// while accumulators are in use.
void accumulator_force_scalar(bool on);
}  // namespace detail

}  // namespace numfid
