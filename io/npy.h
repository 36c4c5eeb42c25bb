// NumPy .npy files: reading format versions 1.0, 2.0 and 3.0 (C or Fortran order, any byte
// order) into a Tensor, and writing them. Format: numpy/lib/format.py and NEP 1
// (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

#include "io/tensor.h"

namespace numfid {

/// Largest header accepted, in bytes. numpy itself refuses headers over 10000 bytes unless
/// told otherwise (`max_header_size`, numpy 1.24+); 1 MiB admits any real shape and keeps a
/// hostile length field from costing more than a megabyte of parsing.
inline constexpr std::size_t npy_max_header_bytes = std::size_t{1} << 20;

/// Largest number of dimensions accepted (numpy 2's NPY_MAXDIMS).
inline constexpr std::size_t npy_max_rank = 64;

/// Reads a .npy file (memory-mapped; the tensor refers to the mapping when the file is
/// little-endian and C-ordered, otherwise to a normalised copy).
///
/// Accepted dtypes (`descr`): f2 f4 f8 i1 u1 i2 u2 i4 u4 in any byte order ('<' '>' '|' '='),
/// and the opaque 1- and 2-byte void types in which ml_dtypes arrays (bfloat16, float8_*)
/// are saved: 'V1', 'V2' with any byte-order character, or a one-field structured descr
/// such as [('', '|V2')] (its field may also be any of the numeric types). Void containers
/// are read as little-endian: the bytes of a value as ml_dtypes lays them out in memory on
/// every machine it supports. Anything else is an InputError naming the file and the
/// problem (missing file, bad magic, unsupported version, oversized or malformed header,
/// unsupported dtype, truncated or oversized data).
Tensor read_npy(const std::filesystem::path& path);

/// Parses a .npy image held in memory (copied into the tensor). `source` names it in
/// messages.
Tensor parse_npy(std::span<const std::byte> bytes, std::string_view source = "<memory>");

/// How the writer stores containers that numpy has no dtype for.
enum class NpyBits : std::uint8_t {
  unsigned_int,  ///< bfloat16 -> '<u2', float8_* -> '|u1' (plain numpy can load these)
  opaque_void,   ///< bfloat16 -> '|V2', float8_* -> '|V1' (as np.save writes ml_dtypes arrays)
};

/// Options of the .npy writer.
struct NpyWriteOptions {
  NpyBits bits = NpyBits::unsigned_int;
};

/// The .npy image of `t`: version 1.0, or 2.0 when the header does not fit 1.0's 16-bit
/// length; C order, little-endian; header padded so the data starts at a multiple of 64
/// bytes (as numpy writes it).
std::vector<std::byte> encode_npy(const Tensor& t, const NpyWriteOptions& o = {});

/// Writes encode_npy(t, o) to `path` all or nothing (temporary file + rename).
void write_npy(const std::filesystem::path& path, const Tensor& t, const NpyWriteOptions& o = {});

}  // namespace numfid
