// OCP Microscaling (MX) v1.0 block formats: blocks of k values sharing one E8M0 power-of-two
// scale, elements in FP8/FP6/FP4 or INT8; quantisation (§6.3) and exact dequantisation (§5).
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "formats/rounding.h"

namespace numfid {

/// One concrete MX format (OCP MX v1.0 §5, Table 1) as data: the element data type, the
/// element's implicit scale and emax_elem, the exponent of its largest normal value.
struct MxFormat {
  std::string_view name;          ///< canonical name, e.g. "mxfp8_e4m3"
  const FormatSpec* element;      ///< element data type
  int element_scale_exp;          ///< an element code c stands for c * 2^element_scale_exp (MXINT8: -6)
  int emax_elem;                  ///< §6.3 Algorithm 1: exponent of the largest normal element value
  std::string_view provenance;    ///< where the definition comes from
};

// emax_elem of the float elements is the element format's emax (E4M3 448 = 1.75 * 2^8,
// E5M2 57344 = 1.75 * 2^15, E3M2 28 = 1.75 * 2^4, E2M3 7.5 = 1.875 * 2^2, E2M1 6 = 1.5 * 2^2);
// MXINT8 elements are 1.xxxxxx (two's complement with an implicit 2^-6): emax_elem = 0.
inline constexpr MxFormat mxfp8_e4m3{"mxfp8_e4m3", &fp8_e4m3, 0, 8, "OCP MX v1.0 §5 Table 1: MXFP8, FP8 E4M3 elements"};
inline constexpr MxFormat mxfp8_e5m2{"mxfp8_e5m2", &fp8_e5m2, 0, 15, "OCP MX v1.0 §5 Table 1: MXFP8, FP8 E5M2 elements"};
inline constexpr MxFormat mxfp6_e3m2{"mxfp6_e3m2", &fp6_e3m2, 0, 4, "OCP MX v1.0 §5 Table 1: MXFP6, FP6 E3M2 elements"};
inline constexpr MxFormat mxfp6_e2m3{"mxfp6_e2m3", &fp6_e2m3, 0, 2, "OCP MX v1.0 §5 Table 1: MXFP6, FP6 E2M3 elements"};
inline constexpr MxFormat mxfp4_e2m1{"mxfp4_e2m1", &fp4_e2m1, 0, 2, "OCP MX v1.0 §5 Table 1: MXFP4, FP4 E2M1 elements"};
inline constexpr MxFormat mxint8{"mxint8", &int8, -6, 0,
                                 "OCP MX v1.0 §5 Table 1 and §5.3.4: MXINT8, int8 elements with implicit scale 2^-6"};

static_assert(mxfp8_e4m3.emax_elem == emax(fp8_e4m3) && mxfp8_e5m2.emax_elem == emax(fp8_e5m2) &&
              mxfp6_e3m2.emax_elem == emax(fp6_e3m2) && mxfp6_e2m3.emax_elem == emax(fp6_e2m3) &&
              mxfp4_e2m1.emax_elem == emax(fp4_e2m1));

/// Every MX format, in the order of the spec's Table 1.
inline constexpr std::array<const MxFormat*, 6> all_mx_formats{&mxfp8_e5m2, &mxfp8_e4m3, &mxfp6_e3m2,
                                                               &mxfp6_e2m3, &mxfp4_e2m1, &mxint8};

/// Looks an MX format up by canonical name (case-insensitive); "mxfp4" is accepted for
/// mxfp4_e2m1, the only MXFP4. nullptr if unknown.
const MxFormat* find_mx_format(std::string_view name);

/// The block size of every concrete MX format (OCP MX v1.0 §5 Table 1: k = 32).
inline constexpr std::size_t mx_default_block_size = 32;

/// Exponent of the E8M0 scale 2^-127 ... 2^127 (OCP MX v1.0 §5.4.1); 0xFF is its NaN.
inline constexpr int mx_scale_min_exp = -127;
inline constexpr int mx_scale_max_exp = 127;
inline constexpr Bits mx_scale_nan{0xffu};

/// Many MX blocks as a struct of arrays: block b holds scales[b] and
/// elements[b * block_size, min((b + 1) * block_size, elements.size())) — the last block
/// may be short (the values are not padded).
struct MxArray {
  const MxFormat* format = &mxfp8_e4m3;
  std::size_t block_size = mx_default_block_size;
  std::vector<Bits> scales;    ///< one E8M0 pattern per block
  std::vector<Bits> elements;  ///< one element pattern per value
  Status status = status_ok;   ///< the flags raised while quantising (union over elements)

  /// Number of blocks: ceil(elements.size() / block_size).
  std::size_t block_count() const { return (elements.size() + block_size - 1) / block_size; }
  /// The elements of block `b`.
  std::span<const Bits> block(std::size_t b) const;
};

/// The shared scale of one block (OCP MX v1.0 §6.3 Algorithm 1, lines 1–2), as E8M0 bits:
///   shared_exp = floor(log2(max_i |V_i|)) - emax_elem,
/// clamped below to -127 (E8M0's smallest value; a block of zeros, where log2 0 = -inf,
/// gets 2^-127); above 127 it has no E8M0 encoding and becomes NaN (0xFF). A NaN or an
/// infinity anywhere in the block makes max |V_i| non-finite, hence the NaN scale.
/// `daz` reads subnormal values as zero (also for the maximum).
Bits mx_shared_scale(const MxFormat& f, std::span<const Bits> block, const FormatSpec& from, bool daz = false);

/// Quantises `values` (format `from`) into MX blocks of `block_size` (§6.3 Algorithm 1):
/// each block's scale X = 2^shared_exp from mx_shared_scale(), then each element
/// P_i = round(V_i / X) in the element format. V_i / X is exact (X is a power of two), so
/// P_i is one rounding, with `o.rounding` (rne by default; stochastic: stream o.stream + i
/// for value i); values beyond the element range are clamped to ±max (line 4, "clamping
/// normal numbers": overflow is always saturate, whatever `o.overflow` says). MXINT8
/// elements are clamped to ±127 (±(2 - 2^-6)), the symmetric range of the reference
/// implementation (microsoft/microxcaling mx/formats.py: max_norm = 127/64); -128 (-2.0) is
/// never produced but is decoded. `o.daz` reads subnormal inputs as zero, `o.ftz` flushes
/// subnormal elements. A block with a NaN scale stores +0 elements (they carry nothing:
/// every element of such a block decodes to NaN) and raises invalid.
/// Throws std::invalid_argument if block_size is 0.
MxArray quantize_mx(const MxFormat& f, std::span<const Bits> values, const FormatSpec& from,
                    std::size_t block_size = mx_default_block_size, const RoundOptions& o = {});

/// The value of one element, X * P (OCP MX v1.0 §5.2), correctly rounded into `to` in one
/// step. A NaN scale gives NaN whatever the element (§5.2: the whole block is NaN); an
/// element NaN or infinity (FP8 elements) gives NaN or round_infinity().
Result dequantize_mx_element(const MxFormat& f, Bits scale, Bits element, const FormatSpec& to,
                             const RoundOptions& o = {});

/// Dequantises every element into `out` (same size as mx.elements); element i rounds with
/// stream o.stream + i. Returns the union of the flags. Throws std::invalid_argument if the
/// sizes or the number of scales do not match.
Status dequantize_mx(const MxArray& mx, const FormatSpec& to, std::span<Bits> out, const RoundOptions& o = {});

/// Dequantises every element into a new vector.
std::vector<Bits> dequantize_mx(const MxArray& mx, const FormatSpec& to, const RoundOptions& o = {});

}  // namespace numfid
