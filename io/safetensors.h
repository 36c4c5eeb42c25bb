// safetensors files: reading one named tensor (header checked whole) and writing several.
// Format (https://github.com/huggingface/safetensors, README "Format"): an 8-byte
// little-endian header length N, N bytes of UTF-8 JSON {name: {"dtype", "shape",
// "data_offsets": [begin, end]}, "__metadata__": {...}}, then the byte buffer; offsets are
// relative to the buffer's start.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/tensor.h"

namespace numfid {

/// Largest header accepted: the format's own limit (safetensors `MAX_HEADER_SIZE`, 100 MB).
inline constexpr std::uint64_t safetensors_max_header_bytes = 100'000'000;

/// Reads the tensor `name` of a safetensors file (memory-mapped; the tensor refers to the
/// mapping). With an empty `name` the file must hold exactly one tensor.
///
/// The whole header is checked first: JSON syntax (nlohmann-json), no duplicate keys, every
/// entry a {"dtype": string, "shape": [non-negative integers], "data_offsets": [begin, end]},
/// begin <= end <= buffer size, end - begin = product(shape) x dtype size (for every dtype
/// the format defines), and no two tensors' bytes overlapping. `__metadata__` is ignored.
/// Supported dtypes: F32, F16, BF16, F8_E4M3, F8_E5M2, I8, U8, I32, and also F64, I16, U16,
/// U32 (the other numpy containers); any other is an InputError naming it. A missing name,
/// or an empty one in a file with several tensors, is an InputError listing the names.
Tensor read_safetensors(const std::filesystem::path& path, std::string_view name = {});

/// Parses a safetensors image held in memory (the tensor's bytes are copied).
Tensor parse_safetensors(std::span<const std::byte> bytes, std::string_view name = {},
                         std::string_view source = "<memory>");

/// Names of the tensors in a safetensors file, in the order of their data (header checked
/// as by read_safetensors).
std::vector<std::string> safetensors_names(const std::filesystem::path& path);

/// The same for an image held in memory.
std::vector<std::string> safetensors_names(std::span<const std::byte> bytes, std::string_view source = "<memory>");

/// A tensor with the name it has (or will have) in a file.
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

/// The safetensors image of `tensors` (in the given order, data contiguous) with optional
/// string metadata; the header is padded with spaces to a multiple of 8 bytes, as the
/// reference writer does. Void containers cannot be written (no safetensors dtype says what
/// their bits are): InputError. Names must be unique and not `__metadata__`.
std::vector<std::byte> encode_safetensors(std::span<const NamedTensor> tensors,
                                          const std::map<std::string, std::string>& metadata = {});

/// Writes encode_safetensors(...) to `path` all or nothing (temporary file + rename).
void write_safetensors(const std::filesystem::path& path, std::span<const NamedTensor> tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace numfid
