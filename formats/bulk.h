// Bulk conversion of arrays between fp32 and the narrow ML formats (bf16, fp16, fp8) on a
// vectorised path, bit-identical to the scalar numfid::convert for every input and option.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "formats/rounding.h"

namespace numfid {

/// The code path of a bulk conversion. `automatic` picks the best one the CPU supports
/// (AVX-512 → AVX2 → portable); the others force one, so that tests cover every path.
enum class BulkPath : std::uint8_t {
  automatic,
  portable,  ///< the branch-free kernels compiled for the baseline target (any CPU)
  avx2,      ///< the same kernels compiled for x86-64 AVX2 (8 lanes)
  avx512,    ///< the same kernels compiled for AVX-512 F/BW/VL (16 lanes)
};

/// True if `p` can run on this CPU (`automatic` and `portable` always can).
bool bulk_path_available(BulkPath p);

/// The path `automatic` resolves to on this CPU.
BulkPath bulk_best_path();

/// "automatic", "portable", "avx2" or "avx512".
std::string_view bulk_path_name(BulkPath p);

/// True if converting `from` → `to` under `o` runs on the vectorised kernels; otherwise the
/// bulk functions fall back to numfid::convert element by element (same results, slower).
/// Fast: fp32 ↔ {bf16, fp16, fp8_e4m3, fp8_e5m2, fp8_e4m3fnuz, fp8_e5m2fnuz}, rounding rne
/// or rtz (narrowing; widening is exact), either overflow mode, any FTZ/DAZ.
bool bulk_is_fast(const FormatSpec& from, const FormatSpec& to, const RoundOptions& o);

// All bulk functions: dst.size() must equal src.size() (else std::invalid_argument), as
// must the format fit the element width (to.bits <= 16 for uint16_t, <= 8 for uint8_t).
// Element i is exactly numfid::convert(from, to, Bits{src[i]}, o').bits with o' = o except
// o'.stream = o.stream + i: stochastic rounding uses the element index as its stream (the
// convention of RoundOptions), offset by o.stream so that a large array converted in chunks
// gives the same bits as in one call. Status flags are not computed (use convert for them).
// Forcing a path the CPU lacks throws std::invalid_argument.

/// fp32 (raw patterns) → a format of at most 16 bits (bf16, fp16).
void convert_from_fp32(const FormatSpec& to, std::span<const std::uint32_t> src, std::span<std::uint16_t> dst,
                       const RoundOptions& o = {}, BulkPath path = BulkPath::automatic);
/// fp32 (floats) → a format of at most 16 bits (bf16, fp16).
void convert_from_fp32(const FormatSpec& to, std::span<const float> src, std::span<std::uint16_t> dst,
                       const RoundOptions& o = {}, BulkPath path = BulkPath::automatic);
/// fp32 (raw patterns) → a format of at most 8 bits (fp8, also fp6/fp4/e8m0/int8 via convert).
void convert_from_fp32(const FormatSpec& to, std::span<const std::uint32_t> src, std::span<std::uint8_t> dst,
                       const RoundOptions& o = {}, BulkPath path = BulkPath::automatic);
/// fp32 (floats) → a format of at most 8 bits.
void convert_from_fp32(const FormatSpec& to, std::span<const float> src, std::span<std::uint8_t> dst,
                       const RoundOptions& o = {}, BulkPath path = BulkPath::automatic);

/// A format of at most 16 bits → fp32 (raw patterns). Exact; `o` matters for DAZ, FTZ
/// (bf16 subnormals are fp32 subnormals) and saturate (±inf → ±max finite, as convert).
void convert_to_fp32(const FormatSpec& from, std::span<const std::uint16_t> src, std::span<std::uint32_t> dst,
                     const RoundOptions& o = {}, BulkPath path = BulkPath::automatic);
/// A format of at most 16 bits → fp32 (floats).
void convert_to_fp32(const FormatSpec& from, std::span<const std::uint16_t> src, std::span<float> dst,
                     const RoundOptions& o = {}, BulkPath path = BulkPath::automatic);
/// A format of at most 8 bits → fp32 (raw patterns).
void convert_to_fp32(const FormatSpec& from, std::span<const std::uint8_t> src, std::span<std::uint32_t> dst,
                     const RoundOptions& o = {}, BulkPath path = BulkPath::automatic);
/// A format of at most 8 bits → fp32 (floats).
void convert_to_fp32(const FormatSpec& from, std::span<const std::uint8_t> src, std::span<float> dst,
                     const RoundOptions& o = {}, BulkPath path = BulkPath::automatic);

/// Any pair of formats, patterns right-aligned in 32-bit words (as Bits): element by
/// element through numfid::convert (scalar; the generic path for formats without a kernel).
void convert_bulk(const FormatSpec& from, const FormatSpec& to, std::span<const std::uint32_t> src,
                  std::span<std::uint32_t> dst, const RoundOptions& o = {});

}  // namespace numfid
