// FormatSpec: every number format numfid knows, as one constexpr data row each
// (in the manner of LLVM APFloat's fltSemantics). Behaviour is derived from these rows
// by one piece of code; there is no class per format.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace numfid {

/// What kind of number a format stores.
enum class FormatKind : std::uint8_t {
  binary_float,  ///< sign (optional), biased exponent, trailing significand
  integer,       ///< two's complement or unsigned integer
};

/// Which non-finite values a float format has (APFloat's fltNonfiniteBehavior).
enum class NonFinite : std::uint8_t {
  ieee,         ///< ±inf and NaN (IEEE 754)
  nan_only,     ///< NaN but no infinity (OCP E4M3FN, the FNUZ formats, E8M0)
  finite_only,  ///< neither (OCP MX FP6/FP4)
};

/// How NaN is encoded (APFloat's fltNanEncoding).
enum class NanEncoding : std::uint8_t {
  ieee,           ///< exponent all ones, trailing significand non-zero
  all_ones,       ///< exponent and trailing significand all ones (E4M3FN: S.1111.111; E8M0: 0xFF)
  negative_zero,  ///< the pattern of -0 (1000...0) is the only NaN (FNUZ formats)
  none,           ///< no NaN (FP6, FP4)
};

/// One number format as data. Values of a format are `Bits` (see value.h) interpreted
/// through its spec.
///
/// Identity (STYLE.md rule 12): two specs are the same format iff every defining field is
/// equal — the name and every numeric field (kind, widths, precision, bias, sign, subnormals,
/// signed zero, non-finite behaviour, NaN encoding, integer signedness). Rows that agree in
/// their numerics but carry different names are different formats (a tensor labelled
/// `fp8_e4m3fnuz` is not one labelled otherwise, and each prints its own name). The
/// provenance text is commentary, not identity: rewording a citation does not make a new
/// format. Compare formats with `==`, never by address (a spec parsed or copied at run time
/// is not the table's object) or by name alone.
struct FormatSpec {
  std::string_view name;          ///< canonical numfid name
  FormatKind kind = FormatKind::binary_float;
  int bits = 0;                   ///< storage width in bits (tf32 = 19)
  // --- binary_float ---
  int exponent_bits = 0;          ///< width of the exponent field
  int precision = 0;              ///< significand bits including the hidden bit (p)
  int bias = 0;                   ///< exponent bias
  bool has_sign = false;          ///< false for E8M0 (unsigned scale)
  bool has_subnormals = false;    ///< false for E8M0 (exponent field 0 is 2^-127)
  bool signed_zero = false;       ///< false for FNUZ formats (-0 is the NaN)
  NonFinite non_finite = NonFinite::finite_only;
  NanEncoding nan = NanEncoding::none;
  // --- integer ---
  bool is_signed = false;         ///< integer formats: two's complement
  std::string_view provenance;    ///< where the definition comes from (not part of the identity)

  /// Same format: every defining field equal (see the identity rule above).
  friend constexpr bool operator==(const FormatSpec& a, const FormatSpec& b) {
    return a.name == b.name && a.kind == b.kind && a.bits == b.bits && a.exponent_bits == b.exponent_bits &&
           a.precision == b.precision && a.bias == b.bias && a.has_sign == b.has_sign &&
           a.has_subnormals == b.has_subnormals && a.signed_zero == b.signed_zero && a.non_finite == b.non_finite &&
           a.nan == b.nan && a.is_signed == b.is_signed;
  }
};

namespace detail {
constexpr std::int64_t pow2(int n) { return std::int64_t{1} << n; }
}  // namespace detail

/// Width of the trailing significand field.
constexpr int mantissa_bits(const FormatSpec& f) { return f.precision - 1; }

/// Largest unbiased exponent of a finite value.
constexpr int emax(const FormatSpec& f) {
  const int top_field = static_cast<int>(detail::pow2(f.exponent_bits)) - 1;
  // IEEE reserves the all-ones exponent for inf/NaN; the others use it for finite values,
  // except where the all-ones NaN pattern is the whole top exponent (E8M0 has no mantissa).
  const bool top_reserved = f.non_finite == NonFinite::ieee ||
                            (f.nan == NanEncoding::all_ones && f.precision == 1);
  return (top_reserved ? top_field - 1 : top_field) - f.bias;
}

/// Smallest unbiased exponent of a normal value (1 - bias; E8M0 has no subnormals and its
/// exponent field 0 is the normal value 2^-bias).
constexpr int emin(const FormatSpec& f) { return f.has_subnormals ? 1 - f.bias : -f.bias; }

/// Largest significand (integer, hidden bit included) at exponent emax: all ones, except
/// where the all-ones pattern is the NaN (E4M3FN: 1.110 at the top exponent).
constexpr std::uint64_t max_significand(const FormatSpec& f) {
  const std::uint64_t all = (std::uint64_t{1} << f.precision) - 1;
  return f.nan == NanEncoding::all_ones && f.precision > 1 ? all - 1 : all;
}

/// Largest finite value, as a double (exact for every format here).
constexpr double max_finite(const FormatSpec& f) {
  if (f.kind == FormatKind::integer)
    return f.is_signed ? static_cast<double>(detail::pow2(f.bits - 1) - 1)
                       : static_cast<double>(detail::pow2(f.bits) - 1);
  double v = static_cast<double>(max_significand(f));
  int e = emax(f) - (f.precision - 1);
  // At run time one scaling (exact: a power of two within double's range); the loop, over a
  // hundred dependent multiplications for fp32, cost more than the rest of a check's per-element
  // bound (docs/performance.md, "Huge pages, and a constant that was a loop").
  if (!std::is_constant_evaluated()) return std::ldexp(v, e);
  for (; e > 0; --e) v *= 2;
  for (; e < 0; ++e) v /= 2;
  return v;
}

/// Smallest positive normal value.
constexpr double min_normal(const FormatSpec& f) {
  if (!std::is_constant_evaluated()) return std::ldexp(1.0, emin(f));  // as max_finite
  double v = 1;
  for (int e = emin(f); e < 0; ++e) v /= 2;
  for (int e = emin(f); e > 0; --e) v *= 2;
  return v;
}

/// Smallest positive value (the least subnormal where the format has them).
constexpr double min_positive(const FormatSpec& f) {
  if (!std::is_constant_evaluated()) return std::ldexp(1.0, emin(f) - (f.has_subnormals ? f.precision - 1 : 0));
  double v = min_normal(f);
  if (f.has_subnormals)
    for (int i = 1; i < f.precision; ++i) v /= 2;
  return v;
}

/// Mask of the storage bits.
constexpr std::uint32_t storage_mask(const FormatSpec& f) {
  return f.bits >= 32 ? 0xffffffffu : static_cast<std::uint32_t>((std::uint64_t{1} << f.bits) - 1);
}

// ---------------------------------------------------------------------------------------
// The table. Provenance: IEEE 754-2019 (binary32, binary16); Google Brain bfloat16;
// NVIDIA TF32 (A100 whitepaper); OCP 8-bit FP (OFP8) v1.0 (E4M3 = E4M3FN, E5M2);
// Graphcore/AMD FNUZ (arXiv 2206.02915, LLVM APFloat Float8E4M3FNUZ/Float8E5M2FNUZ);
// OCP Microscaling (MX) v1.0 §5.3 (FP6 E3M2/E2M3, FP4 E2M1) and §5.4.1 (E8M0).

inline constexpr FormatSpec fp32{.name = "fp32", .kind = FormatKind::binary_float, .bits = 32,
                                 .exponent_bits = 8, .precision = 24, .bias = 127,
                                 .has_sign = true, .has_subnormals = true, .signed_zero = true,
                                 .non_finite = NonFinite::ieee, .nan = NanEncoding::ieee,
                                 .provenance = "IEEE 754-2019 binary32"};
inline constexpr FormatSpec fp16{.name = "fp16", .kind = FormatKind::binary_float, .bits = 16,
                                 .exponent_bits = 5, .precision = 11, .bias = 15,
                                 .has_sign = true, .has_subnormals = true, .signed_zero = true,
                                 .non_finite = NonFinite::ieee, .nan = NanEncoding::ieee,
                                 .provenance = "IEEE 754-2019 binary16"};
inline constexpr FormatSpec bf16{.name = "bf16", .kind = FormatKind::binary_float, .bits = 16,
                                 .exponent_bits = 8, .precision = 8, .bias = 127,
                                 .has_sign = true, .has_subnormals = true, .signed_zero = true,
                                 .non_finite = NonFinite::ieee, .nan = NanEncoding::ieee,
                                 .provenance = "bfloat16: the top 16 bits of binary32 (Google Brain)"};
inline constexpr FormatSpec tf32{.name = "tf32", .kind = FormatKind::binary_float, .bits = 19,
                                 .exponent_bits = 8, .precision = 11, .bias = 127,
                                 .has_sign = true, .has_subnormals = true, .signed_zero = true,
                                 .non_finite = NonFinite::ieee, .nan = NanEncoding::ieee,
                                 .provenance = "NVIDIA TensorFloat-32: 1+8+10 bits (A100 architecture whitepaper)"};
inline constexpr FormatSpec fp8_e4m3{.name = "fp8_e4m3", .kind = FormatKind::binary_float, .bits = 8,
                                     .exponent_bits = 4, .precision = 4, .bias = 7,
                                     .has_sign = true, .has_subnormals = true, .signed_zero = true,
                                     .non_finite = NonFinite::nan_only, .nan = NanEncoding::all_ones,
                                     .provenance = "OCP OFP8 v1.0 E4M3 (E4M3FN): no inf, NaN S.1111.111"};
inline constexpr FormatSpec fp8_e5m2{.name = "fp8_e5m2", .kind = FormatKind::binary_float, .bits = 8,
                                     .exponent_bits = 5, .precision = 3, .bias = 15,
                                     .has_sign = true, .has_subnormals = true, .signed_zero = true,
                                     .non_finite = NonFinite::ieee, .nan = NanEncoding::ieee,
                                     .provenance = "OCP OFP8 v1.0 E5M2 (IEEE-like)"};
inline constexpr FormatSpec fp8_e4m3fnuz{.name = "fp8_e4m3fnuz", .kind = FormatKind::binary_float, .bits = 8,
                                         .exponent_bits = 4, .precision = 4, .bias = 8,
                                         .has_sign = true, .has_subnormals = true, .signed_zero = false,
                                         .non_finite = NonFinite::nan_only, .nan = NanEncoding::negative_zero,
                                         .provenance = "FNUZ E4M3, bias 8, NaN 0x80 (arXiv 2206.02915; LLVM Float8E4M3FNUZ)"};
inline constexpr FormatSpec fp8_e5m2fnuz{.name = "fp8_e5m2fnuz", .kind = FormatKind::binary_float, .bits = 8,
                                         .exponent_bits = 5, .precision = 3, .bias = 16,
                                         .has_sign = true, .has_subnormals = true, .signed_zero = false,
                                         .non_finite = NonFinite::nan_only, .nan = NanEncoding::negative_zero,
                                         .provenance = "FNUZ E5M2, bias 16, NaN 0x80 (arXiv 2206.02915; LLVM Float8E5M2FNUZ)"};
inline constexpr FormatSpec fp6_e3m2{.name = "fp6_e3m2", .kind = FormatKind::binary_float, .bits = 6,
                                     .exponent_bits = 3, .precision = 3, .bias = 3,
                                     .has_sign = true, .has_subnormals = true, .signed_zero = true,
                                     .non_finite = NonFinite::finite_only, .nan = NanEncoding::none,
                                     .provenance = "OCP MX v1.0 §5.3.2 FP6 E3M2"};
inline constexpr FormatSpec fp6_e2m3{.name = "fp6_e2m3", .kind = FormatKind::binary_float, .bits = 6,
                                     .exponent_bits = 2, .precision = 4, .bias = 1,
                                     .has_sign = true, .has_subnormals = true, .signed_zero = true,
                                     .non_finite = NonFinite::finite_only, .nan = NanEncoding::none,
                                     .provenance = "OCP MX v1.0 §5.3.2 FP6 E2M3"};
inline constexpr FormatSpec fp4_e2m1{.name = "fp4_e2m1", .kind = FormatKind::binary_float, .bits = 4,
                                     .exponent_bits = 2, .precision = 2, .bias = 1,
                                     .has_sign = true, .has_subnormals = true, .signed_zero = true,
                                     .non_finite = NonFinite::finite_only, .nan = NanEncoding::none,
                                     .provenance = "OCP MX v1.0 §5.3.3 FP4 E2M1"};
inline constexpr FormatSpec e8m0{.name = "e8m0", .kind = FormatKind::binary_float, .bits = 8,
                                 .exponent_bits = 8, .precision = 1, .bias = 127,
                                 .has_sign = false, .has_subnormals = false, .signed_zero = false,
                                 .non_finite = NonFinite::nan_only, .nan = NanEncoding::all_ones,
                                 .provenance = "OCP MX v1.0 §5.4.1 E8M0 scale: 2^(E-127), NaN 0xFF, no zero, no sign"};
// Integers: the float fields keep their zero defaults.
inline constexpr FormatSpec int8{.name = "int8", .kind = FormatKind::integer, .bits = 8, .has_sign = true,
                                 .non_finite = NonFinite::finite_only, .nan = NanEncoding::none, .is_signed = true,
                                 .provenance = "two's complement 8-bit"};
inline constexpr FormatSpec uint8{.name = "uint8", .kind = FormatKind::integer, .bits = 8, .has_sign = false,
                                  .non_finite = NonFinite::finite_only, .nan = NanEncoding::none, .is_signed = false,
                                  .provenance = "unsigned 8-bit"};
inline constexpr FormatSpec int32{.name = "int32", .kind = FormatKind::integer, .bits = 32, .has_sign = true,
                                  .non_finite = NonFinite::finite_only, .nan = NanEncoding::none, .is_signed = true,
                                  .provenance = "two's complement 32-bit"};

// The limits quoted by the specs, derived from the rows above.
static_assert(max_finite(fp32) == 0x1.fffffep127);
static_assert(max_finite(fp16) == 65504.0);
static_assert(max_finite(bf16) == 0x1.fep127);
static_assert(max_finite(tf32) == 0x1.ffcp127);
static_assert(max_finite(fp8_e4m3) == 448.0);
static_assert(max_finite(fp8_e5m2) == 57344.0);
static_assert(max_finite(fp8_e4m3fnuz) == 240.0);
static_assert(max_finite(fp8_e5m2fnuz) == 57344.0);
static_assert(max_finite(fp6_e3m2) == 28.0);
static_assert(max_finite(fp6_e2m3) == 7.5);
static_assert(max_finite(fp4_e2m1) == 6.0);
static_assert(max_finite(e8m0) == 0x1p127);
static_assert(min_positive(e8m0) == 0x1p-127);
static_assert(min_positive(fp8_e4m3) == 0x1p-9);
static_assert(min_positive(fp8_e5m2) == 0x1p-16);
static_assert(min_positive(fp8_e4m3fnuz) == 0x1p-10);
static_assert(min_positive(fp8_e5m2fnuz) == 0x1p-17);
static_assert(min_positive(fp16) == 0x1p-24);
static_assert(min_positive(fp32) == 0x1p-149);
static_assert(min_positive(fp4_e2m1) == 0x1p-1);
static_assert(min_normal(fp8_e4m3) == 0x1p-6);
static_assert(max_finite(int8) == 127 && max_finite(uint8) == 255 && max_finite(int32) == 2147483647.0);

/// Every format, in the order `numfid formats` lists them.
inline constexpr std::array<const FormatSpec*, 15> all_formats{
    &fp32, &fp16, &bf16, &tf32, &fp8_e4m3, &fp8_e5m2, &fp8_e4m3fnuz, &fp8_e5m2fnuz,
    &fp6_e3m2, &fp6_e2m3, &fp4_e2m1, &e8m0, &int8, &uint8, &int32};

namespace detail {
/// True if no two rows of the table are the same format.
constexpr bool rows_distinct() {
  for (std::size_t i = 0; i < all_formats.size(); ++i)
    for (std::size_t j = i + 1; j < all_formats.size(); ++j)
      if (*all_formats[i] == *all_formats[j]) return false;
  return true;
}
/// The rule: a copy is the same format; a changed defining field, name included, is not;
/// a reworded provenance is.
constexpr bool identity_rule_holds() {
  FormatSpec copy = fp8_e4m3;
  if (!(copy == fp8_e4m3)) return false;
  copy.provenance = "reworded";
  if (!(copy == fp8_e4m3)) return false;
  copy.name = "fp8_e4m3_renamed";
  if (copy == fp8_e4m3) return false;
  copy = fp8_e4m3;
  copy.bias = 8;
  return !(copy == fp8_e4m3);
}
}  // namespace detail
static_assert(detail::rows_distinct());
static_assert(detail::identity_rule_holds());

/// The aliases each format is known by elsewhere (ml_dtypes, PyTorch, NKI, numpy).
std::span<const std::string_view> format_aliases(const FormatSpec& f);

/// Looks a format up by canonical name or alias (case-insensitive; a `torch.`, `nl.`,
/// `np.`, `ml_dtypes.` or `jnp.` prefix is accepted). nullptr if unknown.
const FormatSpec* find_format(std::string_view name);

/// Comma-separated canonical names, for error messages.
std::string format_names();

/// True for binary floating-point formats.
constexpr bool is_float(const FormatSpec& f) { return f.kind == FormatKind::binary_float; }

/// True for formats that can hold a sum's partial results: signed binary floats. E8M0 (a scale
/// format: no sign, no zero) cannot hold 0 or a negative partial, so an accumulator in it
/// would make every sum NaN.
constexpr bool can_accumulate(const FormatSpec& f) { return is_float(f) && f.has_sign; }
static_assert(!can_accumulate(e8m0) && can_accumulate(fp32) && can_accumulate(bf16) && can_accumulate(fp4_e2m1));

}  // namespace numfid
