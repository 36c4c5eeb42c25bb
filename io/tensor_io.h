// One entry point for tensor files: read a .npy or safetensors file by its content, write
// by the output name's extension.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "formats/format_spec.h"
#include "io/npy.h"
#include "io/safetensors.h"
#include "io/tensor.h"

namespace numfid {

/// Reads a tensor from a .npy file (recognised by its magic \x93NUMPY) or a safetensors file
/// (anything else). `name` selects a tensor of a safetensors file (see read_safetensors);
/// for a .npy file it must be empty.
Tensor read_tensor(const std::filesystem::path& path, std::string_view name = {});

/// An operand as named on a command line or in a gate file: FILE (.npy or safetensors) or
/// FILE.safetensors:NAME (the tensor NAME of a safetensors file).
struct TensorSpec {
  std::filesystem::path path;
  std::string name;  ///< empty: the file's only tensor (or a .npy file)
};
/// Splits "FILE.safetensors:NAME" after the first ".safetensors": NAME is all the rest, ':'
/// included ("m.safetensors:blocks.0:w" is tensor "blocks.0:w"); any other text is a file name.
TensorSpec parse_tensor_spec(std::string_view spec);

/// `spec` (FILE or FILE.safetensors:NAME) with a relative FILE taken relative to `dir` (a gate
/// file's directory), lexically normalised; an absolute FILE or an empty `dir` leaves it as is.
std::string resolve_tensor_spec(std::string_view spec, const std::filesystem::path& dir);

/// The values of a scale tensor named like an operand (FILE or FILE.safetensors:NAME), in C
/// order: float32 values (a float64 container must hold float32 values exactly), or, in a
/// one-byte container (uint8), patterns of `byte_format`: E8M0 scales (OCP MX v1.0 §5.4.1,
/// what `numfid quantize` writes) as the powers of two they mean, or FP8 E4M3 block scales
/// (NVFP4) where the claim's scale format says so. The one reader of --scale-a/--scale-b/
/// --out-scale files (CLI, gates, Python: tolerances/scale_files.h). InputError naming the file
/// when it cannot be read, holds no values or a NaN (an E8M0 pattern 0xFF).
std::vector<double> read_scales(std::string_view spec, const FormatSpec& byte_format = e8m0);

/// Writes `t` as .npy (extension ".npy", options `o`) or safetensors (extension
/// ".safetensors", the tensor named `name`, "tensor" if empty); any other extension is an
/// InputError. All or nothing (temporary file + rename).
void write_tensor(const std::filesystem::path& path, const Tensor& t, std::string_view name = {},
                  const NpyWriteOptions& o = {});

}  // namespace numfid
